//! The bounds of Calico's invariants, derived from the model's constants (the table in
//! `monitor`'s documentation explains each): what `invariants` declares and `monitor` applies.

use model::calico::felix::{REPORT_INTERVAL, REPORT_TTL_S};
use model::calico::watchers::ROUND_TRIP_INTERVAL;
use model::calico::{
    ETCD_TIMEOUT, MASTER_CHECK_INTERVAL, MASTER_TIMEOUT, REFRESH_INTERVAL, RETRY_MAX,
};

pub(crate) const S: u64 = 1_000_000;
pub(crate) const fn us(d: std::time::Duration) -> u64 {
    d.as_micros() as u64
}
/// Work dispatched from a watch (see the table above): stamp lag T + `MASTER_TIMEOUT` + one poll.
pub const WATCH_WORK_BOUND_US: u64 =
    us(ETCD_TIMEOUT) + us(MASTER_TIMEOUT) + us(MASTER_CHECK_INTERVAL);
/// Work dispatched from a snapshot: the watch bound + the status and range reads in flight.
pub const SNAPSHOT_WORK_BOUND_US: u64 = WATCH_WORK_BOUND_US + 2 * us(ETCD_TIMEOUT);
/// Compaction decides right after its `is_master()`: stamp lag T + `MASTER_TIMEOUT`.
pub const COMPACTION_WORK_BOUND_US: u64 = us(ETCD_TIMEOUT) + us(MASTER_TIMEOUT);

/// The legitimacy bound of one kind of master-only work.
pub fn work_bound_us(worker: &str, in_snapshot: bool) -> u64 {
    match (worker, in_snapshot) {
        ("manager", _) => COMPACTION_WORK_BOUND_US,
        (_, true) => SNAPSHOT_WORK_BOUND_US,
        (_, false) => WATCH_WORK_BOUND_US,
    }
}
/// See the table above: a dead master's lease runs out (TTL), a candidate's watch times out
/// (2 x the refresh interval), it retries after the jitter, plus 3 s of round trips.
pub const ELECTION_BOUND_US: u64 =
    us(MASTER_TIMEOUT) + 2 * us(REFRESH_INTERVAL) + us(RETRY_MAX) + 3 * S;
/// See the table above: one refresh interval of slack for a handover of a few round trips.
pub const HANDOVER_BOUND_US: u64 = us(REFRESH_INTERVAL);
/// `prompt-handover` owes nothing this soon after etcd's node crashed: a request it held waits
/// out `etcd_timeout`, then the elector retries after its jitter.
pub const ETCD_CRASH_SETTLE_US: u64 = us(ETCD_TIMEOUT) + us(RETRY_MAX);

/// When the world is quiet again for `prompt-handover` after etcd's node crashed at `start_us`
/// for `dur_us`: requests it held have timed out ([`ETCD_CRASH_SETTLE_US`]), and a connection
/// retransmitting its handshake or a segment through the outage (an untimed watch creation has
/// no other way out) reaches the rebooted host at its next retransmission. Linux doubles that
/// timeout from 1 s for a handshake (`TCP_TIMEOUT_INIT`) up to `TCP_RTO_MAX` (120 s), so after an
/// outage of `dur_us` the next one comes within `min(dur_us + 1 s, 120 s)` of the reboot; the
/// elector then retries after its jitter.
pub fn etcd_crash_settles_us(start_us: u64, dur_us: u64) -> u64 {
    let retransmit = (dur_us + us(sim::net::SYN_RTO_INIT)).min(us(sim::net::RTO_MAX));
    (start_us + ETCD_CRASH_SETTLE_US).max(start_us + dur_us + retransmit + us(RETRY_MAX))
}
/// `master-stable`: how long a fault's effect on a mastership lingers after the fault ends: a
/// request in flight answers or times out within `etcd_timeout`, the lease it last refreshed runs
/// out `MASTER_TIMEOUT` later, plus one refresh interval.
pub const MASTER_STABLE_WINDOW_US: u64 =
    us(ETCD_TIMEOUT) + us(MASTER_TIMEOUT) + us(REFRESH_INTERVAL);
/// `master-only-work-on-fresh-stamp`: `is_master()` trusts a stamp for `MASTER_TIMEOUT` by the
/// host's clock, which runs at most 1,000 ppm off true time (a drawn drift of up to 500 ppm and a
/// drift change of up to 500 ppm): 60 ms over the window, 1 s allowed.
pub const STAMP_TRUST_BOUND_US: u64 = us(MASTER_TIMEOUT) + S;
/// Timer granularity: the master-only loop's 5 s sleep ends on the scheduler's next step.
pub(crate) const TIMER_SLACK_US: u64 = 10_000;
/// `master-only-work-stops`: one poll of `is_master()` after the stamp was cleared.
pub const WORK_STOPS_BOUND_US: u64 = us(MASTER_CHECK_INTERVAL) + TIMER_SLACK_US;
/// `master-only-work-stops` for work dispatched from a snapshot: + the status and range reads
/// that were in flight when the watcher was stopped.
pub const WORK_STOPS_SNAPSHOT_BOUND_US: u64 = WORK_STOPS_BOUND_US + 2 * us(ETCD_TIMEOUT);
/// `silent-agent-not-reported`: Felix keeps its lease alive once more without a put (one report
/// interval), the lease then lasts its TTL, plus 10 s for etcd clock steps and round trips.
pub const SILENT_AGENT_BOUND_US: u64 = us(REPORT_INTERVAL) + REPORT_TTL_S as u64 * S + 10 * S;
/// The stale threshold (`STALE_STATUS_WARN_SECS`).
pub const STALE_THRESHOLD_US: u64 = model::calico::status::STALE_THRESHOLD_US as u64;
/// The stale warning's rate limit (`STALE_STATUS_WARN_INTERVAL_SECS`).
pub const STALE_WARN_INTERVAL_US: u64 = model::calico::status::STALE_WARN_INTERVAL_US;
/// Two actions of one host less than this apart belong to one acting interval.
pub(crate) const ACTING_GAP_US: u64 = us(MASTER_CHECK_INTERVAL) + us(ROUND_TRIP_INTERVAL);

/// When the agent view must have converged after faults stop.
/// A master, then its watcher at the next poll, one Felix report interval, and 20 s of slack.
pub const AGENT_VIEW_BOUND_US: u64 =
    ELECTION_BOUND_US + us(MASTER_CHECK_INTERVAL) + us(REPORT_INTERVAL) + 20 * S;
/// Slack of `compaction-progresses` beyond the period: a master that has just become one polls
/// `is_master()` every `MASTER_CHECK_INTERVAL_SECS` (5 s) before its first check
/// (mech_calico.py `do_periodic_compaction`, lines 1345-1351 at 87c15906), and a check makes at
/// most eight etcd requests (trigger read, lease TTL, last-key read, status, compact, last-key put,
/// lease grant and trigger put: `check_request_etcd_compaction` and `write_compaction_keys`,
/// lines 1413-1624), each a round trip of milliseconds while no fault is in force: 10 s for them.
pub const COMPACTION_SLACK_US: u64 = us(MASTER_CHECK_INTERVAL) + 10 * S + TIMER_SLACK_US;
/// `status-watch-round-trips`: the longest quiet time of a status watcher's round-trip key while
/// its host is master and nothing disturbs it or etcd. The canceller writes it every
/// `WATCH_TIMEOUT_SECS / 3` (etcdutils.py `_cancel_watch_if_broken`, lines 288-323 at
/// 87c15906). A watcher that caught a connection failure sleeps 5 s before starting over
/// (lines 181, 208); one that raised is forgotten at the master-only loop's next poll and replaced
/// at the poll after (mech_calico.py `watch_status_updates`, lines 704-728: two 5 s polls); then
/// its status read, snapshot read, watch creation and first write: 10 s for those round trips.
pub const ROUND_TRIP_BOUND_US: u64 = us(ROUND_TRIP_INTERVAL)
    + us(model::calico::watchers::RETRY)
    + 2 * us(MASTER_CHECK_INTERVAL)
    + 10 * S
    + TIMER_SLACK_US;
/// `startup-resync-completes`: the longest time from a startup-resync worker's start to the end
/// of its one resync while nothing disturbs it, etcd or the Neutron DB. The worker resyncs as soon
/// as it starts (mech_calico.py `post_fork_initialize` and `_do_startup_resync`, lines 533-578 and
/// 1284-1322 at 87c15906), and a resync is a handful of etcd and Neutron DB round trips per
/// resource kind (syncer.py `ResourceSyncer.resync`, lines 109-339), milliseconds each while no
/// fault is in force with the scenarios' few ports and subnets: 10 s for them.
pub const STARTUP_RESYNC_BOUND_US: u64 = 10 * S + TIMER_SLACK_US;
/// Slack of `election-refresh-progresses` beyond the refresh interval: a refresh is a lease
/// keep-alive, the guarded put and the legacy key's put (election.py `_become_master`, lines
/// 296-335 at 87c15906), round trips of milliseconds while no fault is in force, and the
/// elector's sleep runs on the host's monotonic clock, whose rate the scenarios move by at most
/// a few hundred ppm: 5 s for both.
pub const REFRESH_SLACK_US: u64 = 5 * S + TIMER_SLACK_US;
/// `election-refresh-progresses`: the longest time between two puts of the election key by its
/// holder while nothing disturbs it or etcd.
pub const REFRESH_BOUND_US: u64 = us(REFRESH_INTERVAL) + REFRESH_SLACK_US;
