//! Calico's invariants (checked by `monitor`).

use crate::invariant::Invariant;

/// The election key never changes value while it exists.
pub const ELECTION_KEY_SINGLE_HOLDER: Invariant = Invariant::safety(
    "election-key-single-holder",
    "the election key never changes value while it exists",
);
/// Master-only work only from a host that recently held the key.
pub const MASTER_ONLY_WORK_LEGITIMATE: Invariant = Invariant::safety(
    "master-only-work-legitimate",
    "a host doing master-only work at t held the key with a live lease at some time in [t - bound, t]",
)
.bounded(
    "stamp lag of one `etcd_timeout` (60 s) + `MASTER_TIMEOUT` 60 s + one 5 s poll = 125 s for work from a watch; + 2 x 60 s for a snapshot whose reads were in flight when the watcher was stopped (245 s); compaction, recorded when it decides: 120 s",
);
/// Only the holder (or a same-host dead-pid cleanup) deletes the key.
pub const ELECTION_DELETES_OWNED: Invariant = Invariant::safety(
    "election-deletes-owned",
    "only the holder, or a same-host dead-pid cleanup, deletes the key",
);
/// A master exists after faults stop.
pub const MASTER_ELECTED: Invariant = Invariant::liveness(
    "master-elected",
    "TTL 60 + watch timeout 20 + jitter 2 + 3 s of round trips = 85 s",
    "a master (the key names a live process whose host's stamp is set) exists after faults stop",
);
/// A master soon after a graceful stop or a same-host respawn.
pub const PROMPT_HANDOVER: Invariant = Invariant::liveness(
    "prompt-handover",
    "10 s",
    "with no other fault active, a master exists soon after a graceful stop of the master's services (if its elector still runs) or a same-host respawn of a dead master",
);
/// No stale warning while a snapshot replays.
pub const STALE_WARNING_NOT_IN_SNAPSHOT: Invariant = Invariant::safety(
    "stale-warning-not-in-snapshot",
    "no stale-update warning while replaying a snapshot",
);
/// At most one warning per 300 s per watcher.
pub const STALE_WARNING_RATE_LIMITED: Invariant = Invariant::safety(
    "stale-warning-rate-limited",
    "at most one warning per 300 s per watcher instance (each new `StatusWatcher` has its own limiter, as upstream)",
)
.bounded("300 s");
/// No watcher dies on a timestamp.
pub const WATCHER_SURVIVES_TIMESTAMPS: Invariant = Invariant::safety(
    "watcher-survives-timestamps",
    "no watcher task dies on a malformed, naive or missing timestamp",
);
/// A stale report comes with a warning.
pub const STALE_REPORT_WARNED: Invariant = Invariant::safety(
    "stale-report-warned",
    "a report forwarded (outside a snapshot) with `time` more than 300 s behind the watcher's clock comes with a warning within the last 300 s",
)
.bounded("300 s");
/// No two compactions within a period.
pub const COMPACTION_ONCE_PER_PERIOD: Invariant = Invariant::safety(
    "compaction-once-per-period",
    "no two compactions within one compaction period (etcd refuses to go backwards)",
)
.bounded("the period");
/// The watchdog exits only for a task that died.
pub const WATCHDOG_RESTART_JUSTIFIED: Invariant = Invariant::safety(
    "watchdog-restart-justified",
    "the watchdog exits a process only for a task that died unexpectedly, not one that finished",
);
/// Neutron's view of the agents converges.
pub const AGENT_VIEW_CONVERGES: Invariant = Invariant::liveness(
    "agent-view-converges",
    "140 s: 85 s election + report interval + slack",
    "(status scenarios) after faults stop, Neutron has heard within `agent_down_time` from every compute host whose Felix runs",
);
/// Neutron's port statuses converge.
pub const PORT_STATUS_CONVERGES: Invariant = Invariant::liveness(
    "port-status-converges",
    "as `agent-view-converges`",
    "(status scenarios) after faults stop, every port whose Felix status has not changed for 30 s shows in Neutron as the spec maps it (up: ACTIVE, down: DOWN, else ERROR)",
);

/// Every Calico invariant.
pub static INVARIANTS: &[Invariant] = &[
    ELECTION_KEY_SINGLE_HOLDER,
    MASTER_ONLY_WORK_LEGITIMATE,
    ELECTION_DELETES_OWNED,
    MASTER_ELECTED,
    PROMPT_HANDOVER,
    STALE_WARNING_NOT_IN_SNAPSHOT,
    STALE_WARNING_RATE_LIMITED,
    WATCHER_SURVIVES_TIMESTAMPS,
    STALE_REPORT_WARNED,
    COMPACTION_ONCE_PER_PERIOD,
    WATCHDOG_RESTART_JUSTIFIED,
    AGENT_VIEW_CONVERGES,
    PORT_STATUS_CONVERGES,
];
