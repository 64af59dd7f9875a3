//! MetalLB's `--bug` switches: historic bugs, and mutants (deliberately broken models, one per
//! invariant at least, each caught by its scenario through the invariant it names).

use super::Metallb;
use crate::scenario::Switch;

/// Every MetalLB switch.
pub static SWITCHES: &[Switch] = &[
    Switch::bug::<Metallb>(
        "metallb-join-once",
        "metallb-split-brain",
        "before PR 662: speakers join the memberlist only at start; after a partition longer than suspicion plus dead-member retention the halves never merge and both announce the IP",
    ),
    Switch::bug::<Metallb>(
        "metallb-rejoin-via-apiserver",
        "metallb-split-brain",
        "PR 662's first draft: each rejoin lists the peer IPs from the API server instead of the cache, so no rejoin happens while the API server is down",
    ),
    Switch::bug::<Metallb>(
        "metallb-garp-first-only",
        "metallb-split-brain",
        "before metallb 0c1ae8cc3 (the fix of #584): only the first SetBalancer of a service starts its 5 s of gratuitous ARPs; after a split brain the owner, which never stopped announcing, sends none, and the router stays on the rival that announced during the split",
    ),
    Switch::fix::<Metallb>(
        "metallb-garp-while-announced",
        "metallb-split-brain",
        "the spam loop keeps sending a gratuitous ARP every 1.1 s for as long as the IP is announced (upstream: for 5 s after each SetBalancer), so the router follows the sole announcer within a tick of a rival's withdrawal; a change to the current spam loop (upstream's unmerged PR 2981 proposes a periodic loop at a configured interval), so it does not apply to the announcer of bug metallb-garp-first-only",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-never-withdraws",
        "metallb-clock-skew",
        &super::invariants::LOCAL_WITHDRAW,
        "a speaker that stops being first keeps announcing: its own member list already ranks another node first (and two speakers announce one IP after the views converge)",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-slow-suspicion",
        "metallb-swarm",
        &super::invariants::TAKEOVER_AFTER_CRASH,
        "memberlist's suspicion lasts ten times upstream's (40 s at least): a crashed speaker is dropped, and its IPs taken over, later than the takeover bound",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-no-refute",
        "metallb-clock-skew",
        &super::invariants::NO_FALSE_DEATH,
        "a speaker never refutes a suspicion of itself: a healthy speaker suspected by a slow or paused one is declared dead by the others",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-cache-dropped",
        "metallb-split-brain",
        &super::invariants::MEMBERSHIP_MERGES,
        "a failed refresh of the speaker IP cache empties it (upstream keeps the old list): no rejoin while the API server is down",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-wrong-order",
        "metallb-clock-skew",
        &super::invariants::ANNOUNCER_FIRST_IN_OWN_ORDER,
        "a speaker not announcing an IP takes the last candidate by sha256(node#ip) for its announcer instead of the first",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-ignore-exclusion",
        "metallb-split-brain",
        &super::invariants::ANNOUNCER_ELIGIBLE,
        "candidates keep nodes labelled exclude-from-external-load-balancers or with NetworkUnavailable",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-no-garp",
        "metallb-split-brain",
        &super::invariants::ARP_FOLLOWS_ANNOUNCER,
        "a new announcer sends no gratuitous ARP right away (\"spam right away\" dropped), only at the spam loop's next tick",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-no-spam-ticks",
        "metallb-split-brain",
        &super::invariants::ROUTER_FOLLOWS_OWNER,
        "the spam loop's ticker sends no gratuitous ARP: only the one sent when an IP enters the loop, so a rival's later one keeps the router",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-answers-after-withdraw",
        "metallb-silent-task-death",
        &super::invariants::ANNOUNCER_WITHDRAWS,
        "a speaker keeps answering ARP requests for an IP it withdrew",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-keeps-deleted-service",
        "metallb-swarm",
        &super::invariants::SINGLE_ANNOUNCER,
        "the speaker's Service informer ignores deletions: a deleted Service stays announced",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-lazy-withdraw",
        "metallb-split-brain",
        &super::invariants::LOCAL_WITHDRAW,
        "an evaluation started by a member-list change alone withdraws nothing: a speaker that stops being first in its own view keeps the IP until an informer event",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-lazy-join",
        "metallb-clock-skew",
        &super::invariants::PROMPT_REJOIN,
        "the join loop ignores join requests (the first IP list, the speaker's own Node changing) and ticks every 5 minutes instead of every minute: a started speaker joins late",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-local-ignores-readiness",
        "metallb-clock-skew",
        &super::invariants::LOCAL_WITHDRAW,
        "a speaker announcing a traffic-policy-Local IP keeps its own node a candidate when its Endpoints view no longer has a ready endpoint there: it keeps the IP after its node's endpoint turns NotReady",
    ),
];
