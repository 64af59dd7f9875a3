//! Calico's invariants (checked by `monitor`): every promise networking-calico's OpenStack driver
//! makes about its election, its master-only work and its status path, each with its kind, its
//! bound (computed from the model's constants in `monitor`) and the upstream behaviour it stands for
//! (projectcalico/calico at 87c15906, folder networking-calico/networking_calico/; `election.py`,
//! `mech_calico.py` and `status.py` are under plugins/ml2/drivers/calico/). Each is tripped by a
//! `calico-mutant-*` switch (`switches.rs`).

use super::bounds::{
    AGENT_VIEW_BOUND_US, COMPACTION_SLACK_US, ELECTION_BOUND_US, HANDOVER_BOUND_US,
    MASTER_STABLE_WINDOW_US, REFRESH_BOUND_US, ROUND_TRIP_BOUND_US, SILENT_AGENT_BOUND_US,
    STALE_THRESHOLD_US, STALE_WARN_INTERVAL_US, STAMP_TRUST_BOUND_US, STARTUP_RESYNC_BOUND_US,
    WATCH_WORK_BOUND_US, WORK_STOPS_BOUND_US,
};
use crate::invariant::{Breach, Invariant};

/// The election key never changes value while it exists.
pub const ELECTION_KEY_SINGLE_HOLDER: Invariant = Invariant::safety(
    "election-key-single-holder",
    "the election key never changes value while it exists",
)
.upstream("one master at a time: the campaign's put is guarded by mod_revision == 0 and the refresh's by value == id (election.py Elector._become_master, lines 276-278, 306-312)")
.measure(Breach::Occurs, "how long the overwritten holder had held the key");
/// Master-only work only from a host that recently held the key.
pub const MASTER_ONLY_WORK_LEGITIMATE: Invariant = Invariant::safety(
    "master-only-work-legitimate",
    "a host doing master-only work at t held the key with a live lease at some time in [t - bound, t]",
)
.bounded(
    "stamp lag of one `etcd_timeout` (60 s) + `MASTER_TIMEOUT` 60 s + one 5 s poll = 125 s for work from a watch; + 2 x 60 s for a snapshot whose reads were in flight when the watcher was stopped (245 s); compaction, recorded when it decides: 120 s",
)
.bound_us(WATCH_WORK_BOUND_US)
.upstream("only the master does master-only work: every master-only loop asks is_master(), which trusts the elector's stamp for MASTER_TIMEOUT (mech_calico.py CalicoMechanismDriver.is_master, lines 580-601; watch_status_updates, 678-728; do_periodic_compaction, 1324-1351)")
.measure(Breach::Exceeds, "time from the host last holding the election key to its master-only work");
/// Only the holder (or a same-host dead-pid cleanup) deletes the key.
pub const ELECTION_DELETES_OWNED: Invariant = Invariant::safety(
    "election-deletes-owned",
    "only the holder, or a same-host dead-pid cleanup, deletes the key",
)
.upstream("deletes of the election key are guarded by the value the deleter expects: its own id on step-down, the dead process's id in the dead-pid cleanup (election.py Elector._attempt_step_down, lines 370-377; _check_master_process, 223-259)")
.measure(Breach::Occurs, "how long the deleted holder had held the key");
/// A master exists after faults stop.
pub const MASTER_ELECTED: Invariant = Invariant::liveness(
    "master-elected",
    "TTL 60 + watch timeout 20 + jitter 2 + 3 s of round trips = 85 s",
    "a master (the key names a live process whose host's stamp is set) exists after faults stop",
)
.bound_us(ELECTION_BOUND_US)
.upstream("a lost master is replaced: a DELETE (or lease expiry) on the watched key, or a watch timeout, sends every elector back to campaign (election.py Elector._run, lines 116-151; _vote, 153-221)")
.measure(Breach::Exceeds, "time without a master after faults stopped");
/// A master soon after a graceful stop or a same-host respawn.
pub const PROMPT_HANDOVER: Invariant = Invariant::liveness(
    "prompt-handover",
    "one refresh interval (10 s) of slack; the handover itself is a few round trips",
    "with no other fault active and etcd's node not crashed within etcd_timeout plus the retry jitter (requests it held wait out their timeout), a master exists soon after a graceful stop of the master's services (if its elector still runs) or a same-host respawn of a dead master",
)
.bound_us(HANDOVER_BOUND_US)
.upstream("stopping the elector deletes its key at once, and a respawned process deletes the key naming its dead predecessor, so the others campaign at once (election.py Elector.stop, lines 379-391, and _attempt_step_down, 370-377; _check_master_process, 223-259)")
.measure(Breach::Exceeds, "time without a master after the graceful stop or the respawn");
/// The master stays master while nothing disturbs it.
pub const MASTER_STABLE: Invariant = Invariant::safety(
    "master-stable",
    "the election key changes holder (is deleted) only when a fault that can end the holder's mastership touched the holder or etcd within the last bound: a pause, crash, isolation or cut between it and etcd, a graceful stop, a crash of its manager, a silent death or a stall of its elector, a watchdog exit of its process, or an etcd crash, unavailability, ambiguity, slowness or garbling",
)
.bounded("a fault's effect lingers at most one `etcd_timeout` (a request in flight, 60 s) + `MASTER_TIMEOUT` (the lease it last refreshed, 60 s) + one refresh interval (10 s) = 130 s after it ends")
.bound_us(MASTER_STABLE_WINDOW_US)
.upstream("a master keeps its key: it refreshes lease and key every interval (10 s) for a TTL of 60 s, and gives up only on an etcd error, a failed compare or a stop (election.py Elector._become_master, lines 296-335)")
.measure(Breach::Exceeds, "time from the end of the last fault that could end the holder's mastership (or the run's start) to the key's loss");
/// A host's belief that it is master lasts no longer than its stamp's true age allows.
pub const MASTER_ONLY_WORK_ON_FRESH_STAMP: Invariant = Invariant::safety(
    "master-only-work-on-fresh-stamp",
    "while another host is master (holds the key, its process alive, its stamp set), a host does master-only work only on an is_master() yes given within the bound of true time after its elector last wrote its stamp",
)
.bounded("`MASTER_TIMEOUT` (60 s) + 1 s for clock drift (at most 1,000 ppm: 60 ms)")
.bound_us(STAMP_TRUST_BOUND_US)
.upstream("is_master() trusts the elector's stamp, written after each successful refresh of the 60 s lease, for MASTER_TIMEOUT by time.time(), so no longer than the lease it confirmed (election.py Elector._become_master, lines 290, 317; mech_calico.py CalicoMechanismDriver.is_master, lines 580-601)")
.measure(Breach::Exceeds, "true age of the acting host's stamp when is_master() last answered yes");
/// A host stops master-only work soon after its own elector saw mastership end.
pub const MASTER_ONLY_WORK_STOPS: Invariant = Invariant::safety(
    "master-only-work-stops",
    "once a host's elector has evidence that its mastership ended (a refresh that failed, or whose compare found the key changed or gone), or has cleared its stamp (a step-down), no process of that host does master-only work more than one poll later, until the stamp is set again; a snapshot whose reads were in flight may finish; excused while the process's master-only loop was stalled or after it died",
)
.bounded("one `MASTER_CHECK_INTERVAL_SECS` poll (5 s) for work from a watch and compaction; + 2 x `etcd_timeout` (the status and range reads in flight) for a snapshot = 125 s")
.bound_us(WORK_STOPS_BOUND_US)
.upstream("any error or failed compare of the refresh ends the refresh loop, whose finally clears the stamp (election.py Elector._become_master, lines 303-334); a cleared stamp makes is_master() false at once, and watch_status_updates stops the watcher at its next poll; the watcher returns at the first event after stop() (mech_calico.py is_master, lines 586-588; watch_status_updates, 719-728; etcdutils.py EtcdWatcher.start, 336-344)")
.measure(Breach::Exceeds, "time from the host's elector learning its mastership ended (or clearing its stamp) to the master-only work");
/// No stale warning while a snapshot replays.
pub const STALE_WARNING_NOT_IN_SNAPSHOT: Invariant = Invariant::safety(
    "stale-warning-not-in-snapshot",
    "no stale-update warning while replaying a snapshot (the monitor tracks snapshots from the watcher's snapshot start and end)",
)
.upstream("the stale check is skipped while processing_snapshot is set (status.py StatusWatcher._check_for_stale_status, lines 140-145; _pre_snapshot_hook, 103-109)")
.measure(Breach::Occurs, "the warned report's age by the watcher's account");
/// At most one warning per 300 s per watcher.
pub const STALE_WARNING_RATE_LIMITED: Invariant = Invariant::safety(
    "stale-warning-rate-limited",
    "at most one warning per 300 s per watcher instance (each new `StatusWatcher` has its own limiter, as upstream)",
)
.bounded("`STALE_STATUS_WARN_INTERVAL_SECS` 300 s")
.bound_us(STALE_WARN_INTERVAL_US)
.upstream("one stale-status warning per STALE_STATUS_WARN_INTERVAL_SECS on the monotonic clock (status.py StatusWatcher._check_for_stale_status, lines 173-177)")
.measure(Breach::Within, "time between the watcher's two warnings");
/// No watcher dies on a timestamp.
pub const WATCHER_SURVIVES_TIMESTAMPS: Invariant = Invariant::safety(
    "watcher-survives-timestamps",
    "no watcher task dies on a malformed, naive or missing timestamp",
)
.upstream("a missing time is skipped, an unparsable one logged and skipped, a naive one taken as UTC (status.py StatusWatcher._check_for_stale_status, lines 147-167)")
.measure(Breach::Occurs, "how long the process had run when its task died");
/// A stale report comes with a warning.
pub const STALE_REPORT_WARNED: Invariant = Invariant::safety(
    "stale-report-warned",
    "a report forwarded (outside a snapshot) with `time` more than 300 s behind the watcher's clock comes with a warning within the last 300 s",
)
.bounded("`STALE_STATUS_WARN_SECS` 300 s")
.bound_us(STALE_THRESHOLD_US)
.upstream("a report more than STALE_STATUS_WARN_SECS old by the watcher's wall clock logs a warning (rate-limited) (status.py StatusWatcher._check_for_stale_status, lines 169-187; _on_status_set, 202-217)")
.measure(Breach::Exceeds, "how far the forwarded report's time is behind the watcher's clock");
/// A stale warning only for a stale report.
pub const STALE_WARNING_JUSTIFIED: Invariant = Invariant::safety(
    "stale-warning-justified",
    "every stale-update warning is for a report whose `time` (read by the monitor's own parser: `Z` or an offset, naive as UTC) is more than 300 s behind the watcher's wall clock at the warning",
)
.bounded("`STALE_STATUS_WARN_SECS` 300 s")
.bound_us(STALE_THRESHOLD_US)
.upstream("the warning fires only when lag > STALE_STATUS_WARN_SECS (status.py StatusWatcher._check_for_stale_status, lines 169-171)")
.measure(Breach::Within, "how far the warned report's time is behind the watcher's clock (0 if ahead)");
/// No two compactions within a period.
pub const COMPACTION_ONCE_PER_PERIOD: Invariant = Invariant::safety(
    "compaction-once-per-period",
    "no two compactions within one compaction period (etcd refuses to go backwards)",
)
.bounded("one `etcd_compaction_period_mins` (default 60 min; the status scenarios draw 1 to 10 min)")
.bound_us(model::calico::COMPACTION_PERIOD.as_micros() as u64)
.upstream("compaction at most once per period: the trigger key with a lease of one period, and a period's sleep after each check (mech_calico.py do_periodic_compaction, lines 1324-1351; check_request_etcd_compaction, 1413-1607)")
.measure(Breach::Within, "time between the two compactions");
/// Compaction keeps happening while a master exists (the lower bound).
pub const COMPACTION_PROGRESSES: Invariant = Invariant::liveness(
    "compaction-progresses",
    "two `etcd_compaction_period_mins` 2P (a check that reads the trigger key just before its one-period lease runs out skips a period) + one 5 s `is_master()` poll + 10 s of a check's round trips, from the last rewrite, the master's start, or the end of the last fault + `etcd_timeout`",
    "while a master exists and nothing disturbs it or etcd, a compaction check rewrites the trigger key (or compacts the store) at least once every two compaction periods plus slack",
)
.bound_us(2 * model::calico::COMPACTION_PERIOD.as_micros() as u64 + COMPACTION_SLACK_US)
.upstream("the master's compaction loop checks once per period and a check that finds the trigger key gone rewrites it, with a lease of one period (mech_calico.py do_periodic_compaction, lines 1324-1351; check_request_etcd_compaction, 1413-1607; write_compaction_keys, 1610-1624)")
.measure(Breach::Exceeds, "time since the last rewrite of the trigger key (or the master's start) with a master and no disturbance");
/// The master refreshes its key every refresh interval.
pub const ELECTION_REFRESH_PROGRESSES: Invariant = Invariant::liveness(
    "election-refresh-progresses",
    "the 10 s refresh interval + 5 s for a refresh's three round trips and the monotonic clock's rate = 15 s, from the last put of the key, the master's start, or the end of the last fault (or stall of its elector) + `etcd_timeout`",
    "while a master exists and nothing disturbs it or etcd, its elector re-puts the election key (refreshing lease and stamp) at least once per refresh interval plus slack",
)
.bound_us(REFRESH_BOUND_US)
.upstream("the master keeps the lease alive and re-puts the key (guarded by its value) every interval, setting the shared stamp after each (election.py Elector._become_master, lines 296-335; mech_calico.py is_master, 580-601)")
.measure(Breach::Exceeds, "time since the holder's last put of the election key (or the master's start) with a master and no disturbance");
/// The master's status watchers keep their watches alive with round trips.
pub const STATUS_WATCH_ROUND_TRIPS: Invariant = Invariant::liveness(
    "status-watch-round-trips",
    "one `WATCH_TIMEOUT_SECS / 3` write interval (3.3 s) + a 5 s retry after a connection failure + two 5 s polls (a raised watcher is forgotten, then replaced) + 10 s of a new watch's round trips = 28.3 s, from the last write, the master's or the process's start, or the end of the last fault + `etcd_timeout`",
    "while a master exists and nothing disturbs it or etcd, every status-watcher worker process (agent and endpoint status) on the master's host writes its round-trip key at least once per bound",
)
.bound_us(ROUND_TRIP_BOUND_US)
.upstream("the master's status watchers run a watch each, and each watch's canceller writes the round-trip key every WATCH_TIMEOUT_SECS / 3 so that a working watch sees an event (etcdutils.py EtcdWatcher.start._cancel_watch_if_broken, lines 288-323; status.py StatusWatcher.__init__, line 80; mech_calico.py watch_status_updates, 678-728)")
.measure(Breach::Exceeds, "time since the watcher process's last round-trip write (or the master's start) with a master and no disturbance");
/// Every startup-resync worker resyncs once, soon after it starts.
pub const STARTUP_RESYNC_COMPLETES: Invariant = Invariant::liveness(
    "startup-resync-completes",
    "10 s of a resync's etcd and Neutron DB round trips from the start of the startup-resync worker process",
    "a startup-resync worker process (on every host whose `startup_resync` is `always`, master or not) ends its one resync successfully within the bound of its start, unless a fault that can fail or delay its reads (its host paused, cut or slowed; etcd or the Neutron DB down, cut from it, unavailable, ambiguous or slow; etcd garbling; a stall or death of the resync task) was in force before the bound, from `etcd_timeout` before its start for etcd and from its start for the Neutron DB: upstream abandons a failed resync",
)
.bound_us(STARTUP_RESYNC_BOUND_US)
.upstream("each neutron-server with startup_resync = always forks a CalicoStartupResyncWorker whose post-fork hook runs one resync at once, on every such host, not gated on is_master(); a failure is logged and not retried (mech_calico.py get_workers, lines 478-531; post_fork_initialize, 533-578; _do_startup_resync, 1284-1322; resync/scope.py Scope.run, 130-192). Upstream 80d666fd13 replaced the periodic resync thread with it")
.measure(Breach::Exceeds, "time from the resync worker's start with no disturbance");
/// The watchdog exits only for a task that died.
pub const WATCHDOG_RESTART_JUSTIFIED: Invariant = Invariant::safety(
    "watchdog-restart-justified",
    "the watchdog exits a process only for a registered task that died unexpectedly (silently, or on an exception), not one that finished or never ran",
)
.upstream("PR 12456's mutual watchdog restarts a process whose long-running task died; a task meant to finish must not be registered")
.measure(Breach::Occurs, "how long the process had run when the watchdog exited it");
/// Neutron's view of the agents converges.
pub const AGENT_VIEW_CONVERGES: Invariant = Invariant::liveness(
    "agent-view-converges",
    "85 s election + one 5 s poll + one 30 s report interval + 20 s slack = 140 s",
    "(status scenarios) after faults stop, Neutron has heard within `agent_down_time` (75 s) from every compute host whose Felix runs (shown up), and from no host whose Felix does not run (shown down)",
)
.bound_us(AGENT_VIEW_BOUND_US)
.upstream("each new Felix report reaches Neutron as report_state, and Neutron marks an agent down after agent_down_time without one (status.py AgentStatusWatcher._on_status_set, lines 202-217; mech_calico.py on_felix_alive, 730-740)")
.measure(Breach::Exceeds, "time after faults stopped with Neutron's view of the agents still wrong");
/// A silent agent stops being reported alive.
pub const SILENT_AGENT_NOT_REPORTED: Invariant = Invariant::safety(
    "silent-agent-not-reported",
    "(status scenarios) no report of a compute host is forwarded to Neutron more than the bound after its Felix last wrote one, unless a fault on etcd, on the message broker or on the forwarding host (which delays the watcher's reads, blocks it on its RPC cast, or keeps the key alive) was in force since; so a dead agent is shown down within the bound + `agent_down_time`",
)
.bounded("Felix's report interval (30 s, a lease kept alive without a put) + its report lease (90 s) + 10 s of slack (etcd clock steps, round trips) = 130 s")
.bound_us(SILENT_AGENT_BOUND_US)
.upstream("Felix's status key has a 90 s lease, so a dead Felix's report disappears and is not forwarded again; Neutron then shows the agent down (status.py AgentStatusWatcher._on_status_del, lines 219-231)")
.measure(Breach::Exceeds, "time from Felix's last report write to the forward");
/// Neutron's port statuses converge.
pub const PORT_STATUS_CONVERGES: Invariant = Invariant::liveness(
    "port-status-converges",
    "as `agent-view-converges` (140 s)",
    "(status scenarios) after faults stop, every port whose Felix status has not changed for 30 s shows in Neutron as the spec maps it (up: ACTIVE, down: DOWN, else ERROR)",
)
.bound_us(AGENT_VIEW_BOUND_US)
.upstream("every change of an endpoint's status is queued and written to Neutron, a failed write retried after 5 s (mech_calico.py on_port_status_changed, lines 741-834; _try_to_update_port_status, 862-943; _retry_port_status_update, 945-952)")
.measure(Breach::Exceeds, "time after faults stopped with a port status still wrong");

/// Every Calico invariant.
pub static INVARIANTS: &[Invariant] = &[
    ELECTION_KEY_SINGLE_HOLDER,
    MASTER_ONLY_WORK_LEGITIMATE,
    ELECTION_DELETES_OWNED,
    MASTER_ELECTED,
    PROMPT_HANDOVER,
    MASTER_STABLE,
    MASTER_ONLY_WORK_ON_FRESH_STAMP,
    MASTER_ONLY_WORK_STOPS,
    STALE_WARNING_NOT_IN_SNAPSHOT,
    STALE_WARNING_RATE_LIMITED,
    WATCHER_SURVIVES_TIMESTAMPS,
    STALE_REPORT_WARNED,
    STALE_WARNING_JUSTIFIED,
    COMPACTION_ONCE_PER_PERIOD,
    COMPACTION_PROGRESSES,
    ELECTION_REFRESH_PROGRESSES,
    STATUS_WATCH_ROUND_TRIPS,
    STARTUP_RESYNC_COMPLETES,
    WATCHDOG_RESTART_JUSTIFIED,
    AGENT_VIEW_CONVERGES,
    SILENT_AGENT_NOT_REPORTED,
    PORT_STATUS_CONVERGES,
];
