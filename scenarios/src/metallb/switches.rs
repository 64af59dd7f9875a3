//! MetalLB's `--bug` switches: historic bugs, and mutants (deliberately broken models, one per
//! invariant at least, each caught by its scenario through the invariant it names).

use crate::scenario::{Switch, SwitchKind};

/// Every MetalLB switch.
pub static SWITCHES: &[Switch] = &[
    Switch {
        name: "metallb-join-once",
        kind: SwitchKind::Bug,
        trips: None,
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "before PR 662: speakers join the memberlist only at start; after a partition longer than suspicion plus dead-member retention the halves never merge and both announce the IP",
    },
    Switch {
        name: "metallb-rejoin-via-apiserver",
        kind: SwitchKind::Bug,
        trips: None,
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "PR 662's first draft: each rejoin lists the peer IPs from the API server instead of the cache, so no rejoin happens while the API server is down",
    },
    Switch {
        name: "metallb-garp-while-announced",
        kind: SwitchKind::Fix,
        trips: None,
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "the spam loop keeps sending a gratuitous ARP every 1.1 s for as long as the IP is announced (upstream: for 5 s after each SetBalancer), so the router follows the sole announcer within a tick of a rival's withdrawal",
    },
    Switch {
        name: "metallb-mutant-never-withdraws",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::SINGLE_ANNOUNCER),
        system: "metallb",
        scenario: "metallb-clock-skew",
        about: "a speaker that stops being first keeps announcing: two speakers announce one IP after the views converge",
    },
    Switch {
        name: "metallb-mutant-slow-suspicion",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::TAKEOVER_AFTER_CRASH),
        system: "metallb",
        scenario: "metallb-swarm",
        about: "memberlist's suspicion lasts ten times upstream's (40 s at least): a crashed speaker is dropped, and its IPs taken over, later than the takeover bound",
    },
    Switch {
        name: "metallb-mutant-cache-dropped",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::MEMBERSHIP_MERGES),
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "a failed refresh of the speaker IP cache empties it (upstream keeps the old list): no rejoin while the API server is down",
    },
    Switch {
        name: "metallb-mutant-wrong-order",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::ANNOUNCER_FIRST_IN_OWN_ORDER),
        system: "metallb",
        scenario: "metallb-swarm",
        about: "the last candidate by sha256(node#ip) announces instead of the first",
    },
    Switch {
        name: "metallb-mutant-ignore-exclusion",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::ANNOUNCER_ELIGIBLE),
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "candidates keep nodes labelled exclude-from-external-load-balancers or with NetworkUnavailable",
    },
    Switch {
        name: "metallb-mutant-no-garp",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::ARP_FOLLOWS_ANNOUNCER),
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "a new announcer sends no gratuitous ARP right away (\"spam right away\" dropped), only at the spam loop's next tick",
    },
    Switch {
        name: "metallb-mutant-no-spam-ticks",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::ROUTER_FOLLOWS_OWNER),
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "the spam loop's ticker sends no gratuitous ARP: only the one sent when an IP enters the loop, so a rival's later one keeps the router",
    },
    Switch {
        name: "metallb-mutant-answers-after-withdraw",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::ANNOUNCER_WITHDRAWS),
        system: "metallb",
        scenario: "metallb-silent-task-death",
        about: "a speaker keeps answering ARP requests for an IP it withdrew",
    },
    Switch {
        name: "metallb-mutant-keeps-deleted-service",
        kind: SwitchKind::Mutant,
        trips: Some(&super::invariants::SINGLE_ANNOUNCER),
        system: "metallb",
        scenario: "metallb-swarm",
        about: "the speaker's Service informer ignores deletions: a deleted Service stays announced",
    },
];
