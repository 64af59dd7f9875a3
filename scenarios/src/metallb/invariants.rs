//! MetalLB's invariants (checked by `monitor` and `arp`; the bounds are computed from the model's
//! constants in `expect`, at the scenarios' smallest cluster of 3 speakers).
//!
//! Upstream commits cited: metallb/metallb 7938d3f, hashicorp/memberlist v0.5.1 (the version metallb pins).

use super::expect::{merge_bound_us, takeover_bound_us, FRAME_US_MAX, SPEAKERS_MIN};
use crate::invariant::{Breach, Invariant};

/// One announcer per IP once views converge.
pub const SINGLE_ANNOUNCER: Invariant = Invariant::safety(
    "single-announcer",
    "once every live speaker and the router have been mutually reachable with no network fault, pause or latency spike in force for the convergence bound, every service IP with candidates has exactly one announcer, it is the first of the true candidates by sha256(node#ip), and the router's entry points at it; an IP without candidates (none eligible, or its Service deleted) has none",
)
.bounded("join period 60 s + a 10 s join timeout per speaker + maximum suspicion 24 s + a probe round + the 57 s the router's Linux neighbour entry may keep a node that stopped answering (45 s reachable_time, a 2 s packet gap, 5 s DELAY, 3 unicast probes, a 2 s packet gap) + 10 s: 184 s for 3 speakers, 228 s for 7")
.bound_us(merge_bound_us(SPEAKERS_MIN))
.upstream("every speaker computes the same candidates from its memberlist and Node views and only the first announces: metallb speaker/layer2_controller.go ShouldAnnounce (l. 88-133), internal/speakerlist/speakerlist.go UsableSpeakers (l. 303-320); a deleted Service is withdrawn: speaker/main.go SetBalancer (l. 401-403, reason serviceDeleted)")
.measure(Breach::Exceeds, "time since the change the segment must converge after (a heal, a join, a restart)");

/// The same, sooner, after a speaker is gone.
pub const TAKEOVER_AFTER_CRASH: Invariant = Invariant::safety(
    "takeover-after-crash",
    "after a speaker crash, exit or graceful leave (with nothing else pending), every live speaker has dropped it from its memberlist and every IP has exactly one announcer, the first of the true candidates, with the router pointing at it",
)
.bounded("a probe round + 1 s + maximum suspicion 24 s + 2 s of gossip + the 5 s ARP burst: 35 s for 3 speakers")
.bound_us(takeover_bound_us(SPEAKERS_MIN))
.upstream("memberlist declares an unanswering member dead after its suspicion timeout (memberlist util.go suspicionTimeout l. 71-76, state.go suspectNode l. 1227-1228) and the NodeLeave event forces a resync in which the next candidate announces (speakerlist.go memberlistWatchEvents l. 339-349)")
.measure(Breach::Exceeds, "time since the speaker's departure");

/// Memberships merge after heal.
pub const MEMBERSHIP_MERGES: Invariant = Invariant::liveness(
    "membership-merges",
    "as `single-announcer`: 184 s for 3 speakers",
    "every live speaker's memberlist lists exactly the live speakers, also while the API server is down (the IP cache exists for that)",
)
.bound_us(merge_bound_us(SPEAKERS_MIN))
.upstream("every minute each speaker joins the cached speaker IPs that are not members, and a failed refresh keeps the old cache: speakerlist.go joinMembers (l. 225-242), mlJoin (l. 258-287), updateSpeakerIPs (l. 181-200)")
.measure(Breach::Exceeds, "time since the change the segment must converge after (a heal, a join, a restart)");

/// A speaker announces only when first in its own ordering.
pub const ANNOUNCER_FIRST_IN_OWN_ORDER: Invariant = Invariant::safety(
    "announcer-first-in-own-order",
    "a speaker announces only if it is first in the sha256(node#ip) ordering (computed by the monitor) of the candidates it reports",
)
.upstream("candidates sorted by sha256(node + \"#\" + ip), compared as bytes; the first announces: speaker/layer2_controller.go sortL2Candidates (l. 187-197), ShouldAnnounce (l. 122-129)")
.measure(Breach::Occurs, "how long the speaker had been announcing the IP (0: it just started)");

/// Nothing is announced from an ineligible node.
pub const ANNOUNCER_ELIGIBLE: Invariant = Invariant::safety(
    "announcer-eligible",
    "nothing is announced from an excluded or NetworkUnavailable node, for a service without endpoints, or for a Local service from a node without one of its endpoints",
)
.upstream("speaker/layer2_controller.go speakersForAds skips NetworkUnavailable and exclude-from-external-load-balancers nodes (l. 320-328); ShouldAnnounce needs an active endpoint (l. 89-92) and, for traffic policy Local, one on the node (l. 111-113)")
.measure(Breach::Occurs, "how long the speaker had been announcing the IP (0: it just started)");

/// The router follows a new announcer by its gratuitous ARP.
pub const ARP_FOLLOWS_ANNOUNCER: Invariant = Invariant::safety(
    "arp-follows-announcer",
    "when a speaker starts announcing an IP with no network fault in force and the router has a neighbour entry for it (with arp_accept 0 a gratuitous ARP creates none), the router's entry points at it within one frame's flight (it heard the speaker's gratuitous ARP), not only once its ARP cache goes stale; within one 1.1 s tick more if the speaker withdrew the IP less than the 5 s burst and a tick before (its spam loop may still hold the IP, and then sends no gratuitous ARP at once)",
)
.bounded("the largest one-way latency a seed draws (5 ms) + the 1 ms minimum of a simulated sleep: 6 ms (+ the 1.1 s tick after a withdrawal less than 6.1 s before)")
.bound_us(FRAME_US_MAX)
.upstream("SetBalancer queues the IP for gratuitous ARPs and the spam loop sends the first one right away unless it still holds the IP, then one every 1.1 s until 5 s after the latest SetBalancer: internal/layer2/announcer.go SetBalancer (l. 257-260), spamLoop (l. 157-197: \"Spam right away\" l. 178-182 only for an IP not in its map)")
.measure(Breach::Exceeds, "time from the speaker starting to announce the IP with the router still not pointing at it");

/// A speaker stops answering for an IP as soon as it withdraws it.
pub const ANNOUNCER_WITHDRAWS: Invariant = Invariant::safety(
    "announcer-withdraws",
    "once a speaker withdraws an IP (its own decision) or its speaker is gone, the router never again switches to it for that IP later than a frame sent before could arrive",
)
.bounded("one frame's flight (6 ms) + any latency spike in force on its node when it withdrew or before")
.bound_us(FRAME_US_MAX)
.upstream("ShouldAnnounce's notOwner makes the speaker call DeleteBalancer, which drops the IP at once, and the ARP responder asks on every request whether to answer: speaker/main.go handleService (l. 474-476), internal/layer2/announcer.go DeleteBalancer (l. 291-299), shouldAnnounce (l. 237-255), arp.go processRequest (l. 100-107); gratuitous ARPs stop too (announcer.go gratuitous l. 208-212)")
.measure(Breach::Exceeds, "time from the speaker's withdrawal to the router switching to it");

/// The router sends a sole announcer's traffic to it.
pub const ROUTER_FOLLOWS_OWNER: Invariant = Invariant::safety(
    "router-follows-owner",
    "while exactly one speaker announces an IP and no network fault, pause or latency spike is in force, the router's neighbour entry sends the IP's traffic to that speaker within one gratuitous-ARP tick and a frame's flight of that situation arising",
)
.bounded("the spam loop's 1.1 s tick + one frame's flight (6 ms): 1.106 s")
.bound_us(super::owner::OWNER_BOUND_US)
.upstream("a speaker that announces an IP sends a gratuitous ARP at once (or at the spam loop's next tick if it still holds the IP) and every 1.1 s until 5 s after its latest SetBalancer: internal/layer2/announcer.go SetBalancer (l. 257-260), spamLoop (l. 157-197); a Linux router takes a gratuitous ARP into an existing entry whatever its locktime (net/ipv4/arp.c arp_process: override = ... || is_garp)")
.measure(Breach::Exceeds, "seconds of the IP's traffic sent elsewhere while the speaker alone announced it");

// The speaker's own view and the restart path (`withdraw`, `rejoin`).

/// A speaker withdraws as soon as its own views rank another node first.
pub const LOCAL_WITHDRAW: Invariant = Invariant::safety(
    "local-withdraw",
    "once a speaker's own views rank another eligible node (or none) first by sha256(node#ip) for an IP it announces, it withdraws the IP in the evaluation that change starts, within the bound; its views are its member list (its ml-member events: alive or suspect members), its Node informer's nodes (l2-node) and its Endpoints informer's ready nodes (l2-endpoints: none ready leaves no candidate, and a traffic-policy-Local IP's candidates are the nodes with a ready endpoint); a speaker that has left the cluster is exempt",
)
.bounded("the evaluation runs when a view changes, with no sleep or network call between: under the 1 ms any simulated sleep lasts (999 µs)")
.bound_us(super::withdraw::WITHDRAW_BOUND_US)
.upstream("a memberlist join or leave forces a resync of every Service, and an EndpointSlice change reconciles its Service; ShouldAnnounce reads the current members and ready endpoints and the loser calls DeleteBalancer at once: metallb internal/speakerlist/speakerlist.go memberlistWatchEvents (l. 339-349), UsableSpeakers (l. 303-320), internal/k8s/controllers/service_controller.go SetupWithManager (l. 118-137), speaker/layer2_controller.go ShouldAnnounce (l. 88-133), nodesWithEndpoint (l. 56-86), activeEndpointExists (l. 236-246), speaker/main.go handleService (l. 474-476), internal/layer2/announcer.go DeleteBalancer (l. 291-315)")
.measure(Breach::Exceeds, "time since the speaker's own views ranked another node first");

/// A restarted speaker is back in every member list soon.
pub const PROMPT_REJOIN: Invariant = Invariant::liveness(
    "prompt-rejoin",
    "a peer's next join-loop tick (60 s) + two joins' exchanges capped by TCPTimeout (2 x 10 s) + 1 s: 81 s",
    "while the network is whole and every speaker runs, a speaker that started and listed its peers' IPs is in every other running speaker's member list within the bound",
)
.bound_us(super::rejoin::REJOIN_BOUND_US)
.upstream("the speaker joins the non-member IPs as soon as its list arrives and each peer's join loop joins non-members every minute; a peer that ignored the restarted speaker's old incarnation learns its refutation by gossip or by that join: metallb internal/speakerlist/speakerlist.go joinMembers (l. 225-242), mlJoin (l. 258-287); memberlist v0.5.1 state.go aliveNode (l. 1077-1080), deadNode (l. 1280-1285), refute (l. 918-944)")
.measure(Breach::Exceeds, "time since the speaker listed its peers' IPs");
/// No speaker untouched by faults is declared dead.
pub const NO_FALSE_DEATH: Invariant = Invariant::safety(
    "no-false-death",
    "a speaker that no fault touched in the last 33 s (none in force on its node: cut, isolated, slowed, lossy, paused, crashed, clock changed, task or process killed or stalled, restarted) is never declared dead at its current incarnation (one it has not refuted) by the suspicion timer of another speaker so untouched",
)
.upstream("a suspected member hears the suspicion (gossip, and the suspect message a ping to a suspect carries: memberlist state.go probeNode l. 357-382) and refutes with a higher incarnation before the suspicion times out: state.go suspectNode l. 1194-1198, refute l. 918-942; the window is 8 awareness-scaled probe intervals (probeNode l. 312), the 24 s maximum suspicion and a probe interval")
.measure(Breach::Occurs, "time since either speaker was last touched by a fault (since the start if never)");

/// Every MetalLB invariant.
pub static INVARIANTS: &[Invariant] = &[
    SINGLE_ANNOUNCER,
    TAKEOVER_AFTER_CRASH,
    MEMBERSHIP_MERGES,
    ANNOUNCER_FIRST_IN_OWN_ORDER,
    ANNOUNCER_ELIGIBLE,
    ARP_FOLLOWS_ANNOUNCER,
    ANNOUNCER_WITHDRAWS,
    ROUTER_FOLLOWS_OWNER,
    LOCAL_WITHDRAW,
    PROMPT_REJOIN,
    NO_FALSE_DEATH,
];
