//! Metallb's `--bug` and `--fix` switches.

use crate::scenario::{Switch, SwitchKind};

/// Every Metallb switch.
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
];
