//! Calico's `--bug` and `--fix` switches.

use crate::scenario::{Switch, SwitchKind};

/// Every Calico switch.
pub static SWITCHES: &[Switch] = &[
    Switch {
        name: "calico-local-master-flag",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-silent-task-death",
        about: "is_master() reads a flag cleared only by the elector's cleanup: a silently dead elector leaves it set forever (split brain)",
    },
    Switch {
        name: "calico-no-step-down-on-stop",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-restart",
        about: "stopping the manager does not stop the elector: the key lingers a full TTL after a graceful restart",
    },
    Switch {
        name: "calico-no-dead-pid-cleanup",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-restart",
        about: "no same-host dead-pid check: after a master crash and respawn, no master until the TTL runs out",
    },
    Switch {
        name: "calico-watchdog-counts-oneshot",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-watchdog",
        about: "the watchdog registers the one-shot resync: it finishes, the watchdog sees it dead and exits the process, over and over",
    },
    Switch {
        name: "calico-stale-warn-zero-sentinel",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "the stale-warning limiter starts at 0.0: on a host up for less than 300 s the first warning is suppressed",
    },
    Switch {
        name: "calico-stale-warn-naive-crash",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "naive timestamps are not treated as UTC: naive minus aware raises and the agent-status task dies",
    },
    Switch {
        name: "calico-stale-warn-in-snapshot",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "the stale check also runs during snapshot replay: false warnings for old reports in the snapshot",
    },
    Switch {
        name: "calico-watchdog",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-silent-task-death",
        about: "run PR 12456's mutual watchdog in every worker: a worker whose registered task died exits and is respawned",
    },
    Switch {
        name: "calico-monotonic-stamp",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-clock-skew",
        about: "stamp mastership with the host's monotonic clock, so a backward wall-clock step cannot extend a stale stamp",
    },
    Switch {
        name: "calico-canceller-catches-all",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-swarm",
        about: "the status watcher's watch canceller catches every error of its round-trip write (upstream catches only ConnectionFailedError and dies on a timeout), so a watch broken later is still cancelled and restarted",
    },
    Switch {
        name: "calico-compaction-claims-period",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-swarm",
        about: "compaction claims its period by creating the trigger key in a transaction guarded by its absence before compacting, so two hosts that both believe they are master cannot both compact",
    },
    Switch {
        name: "calico-port-status-recheck",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "port-status writers ask is_master() before each write, and a watcher starting as master clears the port-status cache so its snapshot rewrites every port",
    },
];
