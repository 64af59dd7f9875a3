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
    Switch::fix::<Metallb>(
        "metallb-garp-while-announced",
        "metallb-split-brain",
        "the spam loop keeps sending a gratuitous ARP every 1.1 s for as long as the IP is announced (upstream: for 5 s after each SetBalancer), so the router follows the sole announcer within a tick of a rival's withdrawal",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-never-withdraws",
        "metallb-clock-skew",
        &super::invariants::SINGLE_ANNOUNCER,
        "a speaker that stops being first keeps announcing: two speakers announce one IP after the views converge",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-slow-suspicion",
        "metallb-swarm",
        &super::invariants::TAKEOVER_AFTER_CRASH,
        "memberlist's suspicion lasts ten times upstream's (40 s at least): a crashed speaker is dropped, and its IPs taken over, later than the takeover bound",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-cache-dropped",
        "metallb-split-brain",
        &super::invariants::MEMBERSHIP_MERGES,
        "a failed refresh of the speaker IP cache empties it (upstream keeps the old list): no rejoin while the API server is down",
    ),
    Switch::mutant::<Metallb>(
        "metallb-mutant-wrong-order",
        "metallb-swarm",
        &super::invariants::ANNOUNCER_FIRST_IN_OWN_ORDER,
        "the last candidate by sha256(node#ip) announces instead of the first",
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
];
