//! Cilium's `--bug` and `--fix` switches.

use crate::scenario::{Switch, SwitchKind};

/// Every Cilium switch.
pub static SWITCHES: &[Switch] = &[
    Switch {
        name: "cilium-no-handshake",
        kind: SwitchKind::Bug,
        trips: None,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "the operator releases excess IPs directly after the delay, judging use from a status that lags the agent by up to 15 s",
    },
    Switch {
        name: "cilium-adopt-release-ips",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "a new leader takes the release-ips it finds as its own handshake state instead of rebuilding the map from nothing, which wipes released entries (and agent answers) while the spec still lists the IPs",
    },
    Switch {
        name: "cilium-restore-before-ack",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-silent-task-death",
        about: "after a restart the agent answers the release handshake only once endpoint restore has finished, and restore keeps an IP that is only marked for release (its pod still uses it)",
    },
    Switch {
        name: "cilium-keep-released",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "the operator keeps its released state for an IP until the agent removes the entry, instead of dropping it when a stale interface list puts the IP back on (and then off) its release list; release-ips then never loses the entry before the spec loses the IP",
    },
    Switch {
        name: "cilium-hold-unknown-release",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "after an unassign with no answer, hold the IP's handshake state until a cloud describe that started later shows whether the cloud still holds the IP (gone: released), instead of dropping it once the IP leaves the release list",
    },
    Switch {
        name: "cilium-fence-cloud",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-split-brain",
        about: "every cloud call of the operator carries the Lease transition count it won with, and the cloud refuses a count older than one it has seen (real cloud APIs have no such fence)",
    },
    Switch {
        name: "cilium-exit-on-lost-lead",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-split-brain",
        about: "newer upstream (PR 42920): an operator that loses the lease exits at once instead of a graceful shutdown whose stop hooks keep its IPAM running",
    },
    Switch {
        name: "cilium-readd-released-ip",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "newer upstream (issue 39981): a released entry whose IP is in the CiliumNode's spec pool is dropped, so an IP the cloud gave back to the same node becomes usable again",
    },
    Switch {
        name: "cilium-readd-after-resync",
        kind: SwitchKind::Fix,
        trips: None,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "issue 39981's clean-up done safely: drop a released entry only when a cloud describe that started after the release lists the IP on the node again, not when the CiliumNode's spec pool (not yet rewritten) still lists it",
    },
];
