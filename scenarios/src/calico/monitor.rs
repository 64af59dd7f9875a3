//! Invariants of the Calico election and master-only work (spec/calico.md, "Invariants"), checked on
//! every event, and the coverage points of the Calico scenarios.
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `election-key-single-holder` | safety | the election key never changes value while it exists (a campaign put succeeds only if the key was absent) |
//! | `master-only-work-legitimate` | safety | a host doing master-only work at true time t held the election key (with a live lease) at some time in `[t - bound, t]`. The bound is what upstream's code allows, from the model's constants (`etcd_timeout` T = 60 s): the stamp is taken when the refresh's put answers, at most T after the put was applied; `is_master()` trusts it for `MASTER_TIMEOUT` (60 s); a watcher acts on an answer up to one poll (5 s) old: 125 s for work dispatched from a watch. A stopped watcher still finishes a snapshot whose status and range reads (2 T) were in flight: 245 s. Compaction is recorded when it decides, right after its `is_master()`: 120 s |
//! | `election-deletes-owned` | safety | a client deletes the election key only when it holds the value, or when the value names a dead process on its own host (dead-pid cleanup) |
//! | `master-elected` | liveness | once faults stop, a master exists (the key names a live process whose host's stamp is set) within TTL 60 s + watch timeout 20 s + retry jitter 2 s + 3 s of round trips = 85 s |
//! | `prompt-handover` | liveness | while no other fault is active, a master exists within 10 s of a graceful stop of the master's host services (when the master's elector process still runs: a dead one cannot step down), or of the master's manager being respawned on the same host (dead-pid cleanup) |
//! | `stale-warning-not-in-snapshot` | safety | no stale-update warning while a watcher replays a snapshot |
//! | `stale-warning-rate-limited` | safety | at most one stale-update warning per 300 s per watcher instance (each `StatusWatcher` the master-only loop makes has a fresh limiter, status.py line 101 at 87c15906) |
//! | `watcher-survives-timestamps` | safety | no watcher task dies on a malformed, naive or missing timestamp |
//! | `stale-report-warned` | safety | a watcher that forwards (outside a snapshot) a report whose `time` is more than 300 s behind its own wall clock has logged a stale warning within the last 300 s |
//! | `compaction-once-per-period` | safety | compaction never runs twice within one compaction period (etcd itself refuses to go backwards) |
//! | `watchdog-restart-justified` | safety | the watchdog exits a process only if the dead registered task died unexpectedly (not by finishing) |
//! | `port-status-converges` (status scenarios) | liveness | 140 s after faults stop, every port whose Felix status has not changed for 30 s shows in Neutron as the spec maps it (up: ACTIVE, down: DOWN, anything else: ERROR) |
//! | `agent-view-converges` | liveness | 140 s after faults stop (a master within 85 s, then one report interval and slack), Neutron has heard within `agent_down_time` (75 s) from every compute host whose Felix runs |
//!
//! The headline number of a split brain, the overlap of two hosts' master-only work, is computed
//! from "acting" intervals (a host's consecutive master-only actions less than 8.3 s apart) and
//! quoted in the causal sentence.

use model::calico::felix::REPORT_INTERVAL;
use model::calico::status::{parse_time, Parsed, STALE_THRESHOLD_US, STALE_WARN_INTERVAL_US};
use model::calico::watchers::ROUND_TRIP_INTERVAL;
use model::calico::CalicoEvent;
use model::calico::{
    ETCD_TIMEOUT, MASTER_CHECK_INTERVAL, MASTER_TIMEOUT, REFRESH_INTERVAL, RETRY_MAX,
};
use sim::event::{DeleteCause, Event, ExitStatus, Record};
use sim::{Failure, FaultKind, Kind, Monitor, NodeIx};
use std::collections::{BTreeMap, BTreeSet};

const S: u64 = 1_000_000;
const fn us(d: std::time::Duration) -> u64 {
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
/// See the table above.
pub const HANDOVER_BOUND_US: u64 = 10 * S;
/// Two actions of one host less than this apart belong to one acting interval.
pub(crate) const ACTING_GAP_US: u64 = us(MASTER_CHECK_INTERVAL) + us(ROUND_TRIP_INTERVAL);

/// When the agent view must have converged after faults stop.
/// A master, then its watcher at the next poll, one Felix report interval, and 20 s of slack.
pub const AGENT_VIEW_BOUND_US: u64 =
    ELECTION_BOUND_US + us(MASTER_CHECK_INTERVAL) + us(REPORT_INTERVAL) + 20 * S;
/// Invariant names of the status path.
pub const AGENT_VIEW_CONVERGES: &str = "agent-view-converges";
/// See the table above.
pub const PORT_STATUS_CONVERGES: &str = "port-status-converges";
/// Neutron's `agent_down_time`.
const AGENT_DOWN_US: u64 = 75 * S;

/// Every coverage point the Calico monitor can report.
pub const ALL_POINTS: &[&str] = &[
    "backlog-over-300s",
    "warning-on-young-host",
    "naive-timestamp-processed",
    "snapshot-replayed",
    "compaction-under-mastership-change",
    "unparsable-time-skipped",
    "watchdog-restart",
    "oneshot-resync-finished",
    "periodic-resync",
    "port-write-failed",
    "handover",
    "elector-died-while-master",
    "stale-stamp-observed",
    "election-lease-expired",
    "dead-pid-cleanup",
    "graceful-step-down",
    "two-hosts-acting-as-master",
    "backward-step-on-master",
    "etcd-ambiguous-applied",
    "etcd-ambiguous-lost",
    "elector-exit-on-unexpected-error",
    "master-paused",
    "master-cut-from-etcd",
];

#[derive(Clone, Debug)]
struct Holder {
    value: String,
    node: Option<NodeIx>,
    pid: u32,
    since_us: u64,
    lease: i64,
}

struct Obligation {
    deadline_us: u64,
    invariant: &'static str,
    what: String,
    /// The fault that created it (other faults starting void it).
    cause: Option<u32>,
}

/// The monitor. See the module documentation.
pub struct CalicoMonitor {
    names: Vec<String>,
    key: String,
    holder: Option<Holder>,
    last_held_us: BTreeMap<NodeIx, u64>,
    winners: BTreeSet<String>,
    alive: BTreeSet<(NodeIx, u32)>,
    stamps: Vec<i64>,
    faults: BTreeMap<u32, FaultKind>,
    last_faults: Vec<Vec<(u64, String)>>,
    acting: Vec<Option<(u64, u64)>>,
    /// Per node: when the current pause began, and the last completed pause.
    paused_since: Vec<Option<u64>>,
    last_pause: Vec<Option<(u64, u64)>>,
    max_overlap_us: u64,
    obligations: Vec<Obligation>,
    liveness_deadline: Option<u64>,
    reached: BTreeSet<&'static str>,
    catalog: &'static [&'static str],
    now_us: u64,
    // Status path.
    felix_prefix: String,
    computes: std::ops::Range<usize>,
    boot_us: Vec<u64>,
    status_put_us: BTreeMap<i64, u64>,
    last_warning: BTreeMap<(NodeIx, u32), u64>,
    snapshots: BTreeSet<(NodeIx, u32)>,
    ended: BTreeSet<(NodeIx, u32, String)>,
    crashed: BTreeSet<(NodeIx, u32, String)>,
    resyncs: BTreeSet<(NodeIx, u32)>,
    compaction_period_us: u64,
    last_compaction_us: Option<u64>,
    heard_us: Vec<Option<u64>>,
    felix_alive: Vec<bool>,
    agent_view_deadline: Option<u64>,
    ports: super::ports::PortView,
    agent_watchers: BTreeMap<NodeIx, u32>,
    /// Per node: silently dead tasks (true time, task) of processes still alive.
    dead_tasks: Vec<Vec<(u64, u32, String)>>,
    /// Per node: greenlets of live processes that ended on an exception (true time, pid, task,
    /// error).
    raised: Vec<Vec<(u64, u32, String, String)>>,
}

fn secs(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

impl CalicoMonitor {
    /// A monitor for nodes `names` (hosts then etcd) and the election key `key`; `catalog` lists
    /// the coverage points the scenario declares.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        names: Vec<String>,
        key: String,
        felix_prefix: String,
        hosts: usize,
        computes: usize,
        compaction_period: std::time::Duration,
        check_agent_view: bool,
        catalog: &'static [&'static str],
    ) -> Self {
        let n = names.len();
        CalicoMonitor {
            felix_prefix,
            computes: if check_agent_view {
                hosts..hosts + computes
            } else {
                hosts..hosts
            },
            boot_us: vec![0; n],
            status_put_us: BTreeMap::new(),
            last_warning: BTreeMap::new(),
            snapshots: BTreeSet::new(),
            ended: BTreeSet::new(),
            crashed: BTreeSet::new(),
            resyncs: BTreeSet::new(),
            compaction_period_us: compaction_period.as_micros() as u64,
            last_compaction_us: None,
            heard_us: vec![None; n],
            felix_alive: vec![false; n],
            agent_view_deadline: None,
            ports: Default::default(),
            agent_watchers: BTreeMap::new(),
            dead_tasks: vec![Vec::new(); n],
            raised: vec![Vec::new(); n],
            names,
            key,
            holder: None,
            last_held_us: BTreeMap::new(),
            winners: BTreeSet::new(),
            alive: BTreeSet::new(),
            stamps: vec![0; n],
            faults: BTreeMap::new(),
            last_faults: vec![Vec::new(); n],
            acting: vec![None; n],
            paused_since: vec![None; n],
            last_pause: vec![None; n],
            max_overlap_us: 0,
            obligations: Vec::new(),
            liveness_deadline: None,
            reached: BTreeSet::new(),
            catalog,
            now_us: 0,
        }
    }

    fn node_of(&self, name: &str) -> Option<NodeIx> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| i as NodeIx)
    }

    fn parse_id(&self, id: &str) -> (Option<NodeIx>, u32) {
        match id.split_once(':') {
            Some((h, p)) => (self.node_of(h), p.parse().unwrap_or(0)),
            None => (None, 0),
        }
    }

    fn reach(&mut self, point: &'static str) {
        self.reached.insert(point);
    }

    /// A master exists: the key names a live process and that host's stamp is set.
    fn master_exists(&self) -> bool {
        match &self.holder {
            Some(h) => h
                .node
                .is_some_and(|n| self.alive.contains(&(n, h.pid)) && self.stamps[n as usize] > 0),
            None => false,
        }
    }

    fn describe_master_state(&self) -> String {
        match &self.holder {
            None => "the election key is absent".to_string(),
            Some(h) => {
                let alive = h.node.is_some_and(|n| self.alive.contains(&(n, h.pid)));
                let stamp = h.node.is_some_and(|n| self.stamps[n as usize] > 0);
                format!(
                    "the election key names {} ({}, stamp {}) since {}",
                    h.value,
                    if alive { "alive" } else { "a dead process" },
                    if stamp { "set" } else { "clear" },
                    secs(h.since_us)
                )
            }
        }
    }

    /// The node's silently dead tasks and recent faults (at most three, oldest first), as clauses.
    fn fault_note(&self, node: NodeIx) -> String {
        let name = &self.names[node as usize];
        let mut out = String::new();
        let dead = &self.dead_tasks[node as usize];
        if !dead.is_empty() {
            let list: Vec<String> = dead
                .iter()
                .map(|(t, pid, task)| format!("{task} of {name}:{pid} (since {})", secs(*t)))
                .collect();
            out += &format!("; silently dead tasks on {name}: {}", list.join(", "));
        }
        let raised = &self.raised[node as usize];
        if !raised.is_empty() {
            let list: Vec<String> = raised
                .iter()
                .map(|(t, pid, task, e)| format!("{task} of {name}:{pid} at {} ({e})", secs(*t)))
                .collect();
            out += &format!(
                "; greenlets ended by an exception on {name}: {}",
                list.join(", ")
            );
        }
        let faults = &self.last_faults[node as usize];
        if !faults.is_empty() {
            let list: Vec<String> = faults
                .iter()
                .map(|(t, d)| format!("{d} at {}", secs(*t)))
                .collect();
            out += &format!("; recent faults on {name}: {}", list.join(", "));
        }
        out
    }

    fn holds(&self, node: NodeIx) -> bool {
        self.holder.as_ref().is_some_and(|h| h.node == Some(node))
    }

    fn release(&mut self, now: u64) {
        if let Some(h) = self.holder.take() {
            if let Some(n) = h.node {
                self.last_held_us.insert(n, now);
            }
        }
    }

    fn check_obligations_met(&mut self) {
        // (Runs after every event: skip the master check when there is nothing to discharge.)
        if self.obligations.is_empty() && self.liveness_deadline.is_none() {
            return;
        }
        if self.master_exists() {
            self.obligations.clear();
            self.liveness_deadline = None;
        }
    }

    fn on_master_only(
        &mut self,
        rec: &Record,
        worker: &str,
        action: &str,
        pid: u32,
        in_snapshot: bool,
    ) -> Option<Failure> {
        let bound_us = work_bound_us(worker, in_snapshot);
        let node = rec.node;
        let t = rec.t_us;
        // Acting intervals and the overlap headline.
        let slot = &mut self.acting[node as usize];
        *slot = match *slot {
            Some((start, last)) if t - last <= ACTING_GAP_US => Some((start, t)),
            _ => Some((t, t)),
        };
        let (s0, _) = slot.unwrap();
        let mut both = false;
        for (other, iv) in self.acting.iter().enumerate() {
            if other == node as usize {
                continue;
            }
            if let Some((s1, l1)) = iv {
                if t - l1 <= ACTING_GAP_US {
                    let overlap = t.min(*l1).saturating_sub(s0.max(*s1));
                    self.max_overlap_us = self.max_overlap_us.max(overlap);
                    both = true;
                }
            }
        }
        if both {
            self.reach("two-hosts-acting-as-master");
        }
        if self.holds(node) {
            return None;
        }
        let last = self.last_held_us.get(&node).copied();
        let legit = last.is_some_and(|l| t.saturating_sub(l) <= bound_us);
        if legit {
            return None;
        }
        let name = &self.names[node as usize];
        let held = match last {
            Some(l) => format!(
                "{name} last held the election key at {} ({} earlier; bound {})",
                secs(l),
                secs(t - l),
                secs(bound_us)
            ),
            None => format!("{name} never held the election key"),
        };
        let other = match &self.holder {
            Some(h) => format!("{} has held it since {}", h.value, secs(h.since_us)),
            None => "nobody holds it now".to_string(),
        };
        let pause = match self.last_pause[node as usize] {
            Some((a, b)) if last.is_none_or(|l| b >= l) => {
                format!("; {name} was paused from {} to {} and acted on what is_master() told it before the pause", secs(a), secs(b))
            }
            _ => String::new(),
        };
        let overlap = if self.max_overlap_us > 0 {
            format!(
                "; two hosts did master-only work at the same time for {}",
                secs(self.max_overlap_us)
            )
        } else {
            String::new()
        };
        Some(Failure {
            invariant: "master-only-work-legitimate",
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} ({worker}) did '{action}' at {} true ({} on its clock) believing it was master, but {held}; {other}{pause}{overlap}{}",
                secs(t),
                sim::clock::format_rfc3339(rec.local_us),
                self.fault_note(node)
            ),
        })
    }

    fn describe_divergence(&self, d: &super::ports::Divergence) -> String {
        let writer = match d.writer.as_deref().map(|w| (w, self.parse_id(w).0)) {
            Some((w, Some(n))) if self.holds(n) => format!(", written last by the master, {w}"),
            Some((w, _)) => format!(", written last by a host that is not the master, {w}"),
            None => String::new(),
        };
        format!(
            "{}: Felix says {} since {}, Neutron shows {}{writer}",
            d.port,
            d.felix.as_deref().unwrap_or("nothing"),
            secs(d.since_us),
            d.neutron.as_deref().unwrap_or("nothing")
        )
    }

    fn on_stale_warning(
        &mut self,
        rec: &Record,
        host: &str,
        lag_ms: i64,
        in_snapshot: bool,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        if t - self.boot_us[node as usize] < STALE_WARN_INTERVAL_US {
            self.reach("warning-on-young-host");
        }
        let name = &self.names[node as usize];
        if in_snapshot {
            return Some(Failure {
                invariant: "stale-warning-not-in-snapshot",
                kind: Kind::Safety,
                node: Some(node),
                explanation: format!(
                    "{name} logged a stale-update warning for {host} ({} old) while replaying a snapshot, where old timestamps are expected",
                    secs(lag_ms.max(0) as u64 * 1000)
                ),
            });
        }
        let pid = self.forwarder_pid(node);
        let prev = self.last_warning.insert((node, pid), t);
        match prev {
            Some(p) if t - p < STALE_WARN_INTERVAL_US => Some(Failure {
                invariant: "stale-warning-rate-limited",
                kind: Kind::Safety,
                node: Some(node),
                explanation: format!(
                    "{name}:{pid} logged stale-update warnings at {} and {}, {} apart (limit: one per {})",
                    secs(p),
                    secs(t),
                    secs(t - p),
                    secs(STALE_WARN_INTERVAL_US)
                ),
            }),
            _ => None,
        }
    }

    /// The live agent-status watcher process on a node (warnings carry no pid).
    fn forwarder_pid(&self, node: NodeIx) -> u32 {
        self.agent_watchers.get(&node).copied().unwrap_or(0)
    }

    fn on_forward(
        &mut self,
        rec: &Record,
        host: &str,
        rev: i64,
        in_snapshot: bool,
        time: &str,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        if let Some(put) = self.status_put_us.get(&rev) {
            if !in_snapshot && t - put > STALE_THRESHOLD_US as u64 {
                self.reach("backlog-over-300s");
            }
        }
        if in_snapshot {
            return None;
        }
        let then = match parse_time(time) {
            Parsed::Aware(x) => x,
            Parsed::Naive(x) => {
                self.reach("naive-timestamp-processed");
                x
            }
            Parsed::Invalid => return None,
        };
        let lag = sim::clock::EPOCH_UNIX_US + rec.local_us - then;
        if lag <= STALE_THRESHOLD_US {
            return None;
        }
        let pid = self.forwarder_pid(node);
        let warned = self
            .last_warning
            .get(&(node, pid))
            .is_some_and(|w| t - w <= STALE_WARN_INTERVAL_US);
        if warned {
            return None;
        }
        let name = &self.names[node as usize];
        Some(Failure {
            invariant: "stale-report-warned",
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} forwarded {host}'s report stamped {time}, {} behind its own clock, without any stale-update warning in the last {} ({name} booted {} ago)",
                secs(lag as u64),
                secs(STALE_WARN_INTERVAL_US),
                secs(t - self.boot_us[node as usize])
            ),
        })
    }

    fn on_fault_start(
        &mut self,
        id: u32,
        dur_ms: u64,
        fault: &FaultKind,
        t: u64,
    ) -> Option<Failure> {
        // Only faults with a duration are "in force"; instantaneous ones never end.
        if dur_ms > 0 {
            self.faults.insert(id, fault.clone());
        }
        let desc = fault.describe();
        for n in fault.nodes() {
            if let Some(ix) = self.node_of(n) {
                let list = &mut self.last_faults[ix as usize];
                if list.len() == 3 {
                    list.remove(0);
                }
                list.push((t, desc.clone()));
            }
        }
        // Any other fault voids the prompt-handover obligations (they assume a quiet world).
        self.obligations
            .retain(|o| o.invariant != "prompt-handover" || o.cause == Some(id));
        let master = self.holder.as_ref().and_then(|h| h.node);
        // A graceful stop steps down only an elector that still runs: when the key names a
        // process that already died (a crash not yet respawned), it lingers for its lease.
        let holder_alive = self
            .holder
            .as_ref()
            .is_some_and(|h| h.node.is_some_and(|n| self.alive.contains(&(n, h.pid))));
        match fault {
            FaultKind::ServiceRestart { node }
                if holder_alive && master == self.node_of(node) && self.faults.len() == 1 =>
            {
                self.obligations.push(Obligation {
                    deadline_us: t + HANDOVER_BOUND_US,
                    invariant: "prompt-handover",
                    what: format!(
                        "graceful stop of the services on master host {node} at {}",
                        secs(t)
                    ),
                    cause: Some(id),
                });
            }
            FaultKind::TaskDeath { node, task }
                if task == "elector" && master == self.node_of(node) =>
            {
                self.reach("elector-died-while-master");
            }
            FaultKind::ClockStep { node, delta_ms }
                if *delta_ms < 0 && master.is_some() && master == self.node_of(node) =>
            {
                self.reach("backward-step-on-master");
            }
            FaultKind::Pause { node } if master.is_some() && master == self.node_of(node) => {
                self.reach("master-paused")
            }
            FaultKind::Partition { .. } | FaultKind::Isolate { .. } | FaultKind::Simplex { .. } => {
                if let Some(m) = master {
                    let names = fault.nodes();
                    let mname = self.names[m as usize].as_str();
                    if names.contains(&mname)
                        && (names.contains(&"etcd") || matches!(fault, FaultKind::Isolate { .. }))
                    {
                        self.reach("master-cut-from-etcd");
                    }
                }
            }
            _ => {}
        }
        None
    }
}

impl CalicoMonitor {
    /// The Calico model's own events.
    fn on_calico(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        let (t, node) = (rec.t_us, rec.node);
        match e {
            CalicoEvent::CalicoStamp { stamp_us } => {
                self.stamps[node as usize] = *stamp_us;
                None
            }
            CalicoEvent::CalicoStaleStamp { .. } => {
                self.reach("stale-stamp-observed");
                None
            }
            CalicoEvent::CalicoDeadPidCleanup { .. } => {
                self.reach("dead-pid-cleanup");
                None
            }
            CalicoEvent::CalicoStepDown { deleted: true, .. } => {
                self.reach("graceful-step-down");
                None
            }
            CalicoEvent::CalicoSnapshot {
                done: false,
                worker,
                ..
            } if worker == "agent-status" => {
                let pid = self.forwarder_pid(node);
                if !self.snapshots.insert((node, pid)) {
                    self.reach("snapshot-replayed");
                }
                None
            }
            // Each StatusWatcher instance has its own limiter (status.py line 101 at 87c15906).
            CalicoEvent::CalicoWatcher {
                worker,
                running: true,
            } if worker == "agent-status" => {
                let pid = self.forwarder_pid(node);
                self.last_warning.remove(&(node, pid));
                None
            }
            CalicoEvent::CalicoStaleWarning {
                host,
                lag_ms,
                in_snapshot,
            } => self.on_stale_warning(rec, host, *lag_ms, *in_snapshot),
            CalicoEvent::CalicoUnparsableTime { .. } => {
                self.reach("unparsable-time-skipped");
                None
            }
            CalicoEvent::CalicoTaskCrash { pid, task, error } => {
                self.crashed.insert((node, *pid, task.clone()));
                Some(Failure {
                    invariant: "watcher-survives-timestamps",
                    kind: Kind::Safety,
                    node: Some(node),
                    explanation: format!(
                        "the {task} task of {}:{pid} died on a status report: {error}{}",
                        self.names[node as usize],
                        self.fault_note(node)
                    ),
                })
            }
            CalicoEvent::CalicoAgentForward {
                host,
                rev,
                in_snapshot,
                time,
            } => self.on_forward(rec, host, *rev, *in_snapshot, time),
            CalicoEvent::CalicoWatcherRaised { pid, task, error } => {
                self.raised[node as usize].push((t, *pid, task.clone(), error.clone()));
                None
            }
            CalicoEvent::CalicoResync { pid, .. } => {
                if !self.resyncs.insert((node, *pid)) {
                    self.reach("periodic-resync");
                }
                None
            }
            CalicoEvent::CalicoPortWrite { ok: false, .. } => {
                self.reach("port-write-failed");
                None
            }
            CalicoEvent::CalicoWatchdogExit { pid, task } => {
                self.reach("watchdog-restart");
                let k = (node, *pid, task.clone());
                (self.ended.contains(&k) && !self.crashed.contains(&k)).then(|| Failure {
                    invariant: "watchdog-restart-justified",
                    kind: Kind::Safety,
                    node: Some(node),
                    explanation: format!(
                        "the watchdog of {}:{pid} exited the process because task '{task}' was dead, but that task had finished normally (a task meant to finish must not be registered)",
                        self.names[node as usize]
                    ),
                })
            }
            CalicoEvent::NeutronAgentHeard { host } => {
                if let Some(n) = self.node_of(host) {
                    self.heard_us[n as usize] = Some(t);
                }
                None
            }
            CalicoEvent::CalicoMasterOnly {
                pid,
                worker,
                action,
                in_snapshot,
            } => self.on_master_only(rec, worker, action, *pid, *in_snapshot),
            _ => None,
        }
    }
}

impl Monitor for CalicoMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        self.now_us = t;
        let node = rec.node;
        if !self.computes.is_empty() {
            self.ports.observe(&self.felix_prefix, t, &rec.event);
        }
        let out = match &rec.event {
            Event::FaultStart { id, fault, dur_ms } => self.on_fault_start(*id, *dur_ms, fault, t),
            Event::FaultEnd { id } => {
                self.faults.remove(id);
                None
            }
            Event::LivenessPhase => {
                self.obligations.retain(|o| o.invariant != "prompt-handover");
                if !self.computes.is_empty() {
                    self.agent_view_deadline = Some(t + AGENT_VIEW_BOUND_US);
                }
                if !self.master_exists() {
                    self.liveness_deadline = Some(t + ELECTION_BOUND_US);
                }
                None
            }
            Event::NodePause => {
                self.paused_since[node as usize] = Some(t);
                None
            }
            Event::NodeResume => {
                if let Some(a) = self.paused_since[node as usize].take() {
                    self.last_pause[node as usize] = Some((a, t));
                }
                None
            }
            Event::NodeCrash | Event::NodeBoot { .. } => {
                self.dead_tasks[node as usize].clear();
                self.raised[node as usize].clear();
                self.paused_since[node as usize] = None;
                self.felix_alive[node as usize] = false;
                self.boot_us[node as usize] = t;
                self.alive.retain(|(n, _)| *n != node);
                self.stamps[node as usize] = 0;
                self.acting[node as usize] = None;
                None
            }
            Event::ProcessStart { pid, name } => {
                self.alive.insert((node, *pid));
                if name == "felix" {
                    self.felix_alive[node as usize] = true;
                }
                if name == "neutron-server/agent-status" {
                    self.agent_watchers.insert(node, *pid);
                }
                if name == "neutron-server/manager" {
                    let stale = self.holder.as_ref().is_some_and(|h| h.node == Some(node) && !self.alive.contains(&(node, h.pid)));
                    if stale && self.faults.is_empty() {
                        let value = self.holder.as_ref().unwrap().value.clone();
                        self.obligations.push(Obligation {
                            deadline_us: t + HANDOVER_BOUND_US,
                            invariant: "prompt-handover",
                            what: format!("manager respawned on {} at {} while the key still named its dead predecessor {value}", self.names[node as usize], secs(t)),
                            cause: None,
                        });
                    }
                }
                None
            }
            Event::ProcessExit { pid, status, name } => {
                self.alive.remove(&(node, *pid));
                self.dead_tasks[node as usize].retain(|(_, p, _)| p != pid);
                self.raised[node as usize].retain(|(_, p, _, _)| p != pid);
                if name == "felix" {
                    self.felix_alive[node as usize] = false;
                }
                if name == "neutron-server/manager" && *status == (ExitStatus::Code { code: 1 }) {
                    self.reach("elector-exit-on-unexpected-error");
                }
                None
            }
            Event::EtcdAmbiguous { applied, .. } => {
                self.reach(if *applied { "etcd-ambiguous-applied" } else { "etcd-ambiguous-lost" });
                None
            }
            Event::EtcdLeaseExpire { lease } => {
                if self.holder.as_ref().is_some_and(|h| h.lease == *lease) {
                    self.reach("election-lease-expired");
                }
                None
            }
            Event::EtcdPut { key, value, lease, .. } if **key == *self.key => match &self.holder {
                Some(h) if *h.value != **value => Some(Failure {
                    invariant: "election-key-single-holder",
                    kind: Kind::Safety,
                    node: self.parse_id(value).0,
                    explanation: format!("{value} overwrote the election key while it still named {} (held since {})", h.value, secs(h.since_us)),
                }),
                Some(_) => None,
                None => {
                    let (n, pid) = self.parse_id(value);
                    if !self.winners.is_empty() && !self.winners.contains(&**value) {
                        self.reach("handover");
                    }
                    self.winners.insert(value.to_string());
                    self.holder = Some(Holder { value: value.to_string(), node: n, pid, since_us: t, lease: *lease });
                    None
                }
            },
            Event::EtcdDelete { key, prev_value, cause, .. } if **key == *self.key => {
                let failure = match cause {
                    DeleteCause::Client { client } | DeleteCause::LeaseRevoked { client, .. } if **client != **prev_value => {
                        let (cn, _) = self.parse_id(client);
                        let (vn, vpid) = self.parse_id(prev_value);
                        let dead_pid_cleanup = cn.is_some() && cn == vn && !self.alive.contains(&(vn.unwrap(), vpid));
                        (!dead_pid_cleanup).then(|| Failure {
                            invariant: "election-deletes-owned",
                            kind: Kind::Safety,
                            node: cn,
                            explanation: format!("{client} deleted the election key although it named {prev_value}, which is neither itself nor a dead process on its host"),
                        })
                    }
                    _ => None,
                };
                self.release(t);
                failure
            }
            Event::EtcdPut { key, rev, .. } if key.starts_with(&self.felix_prefix) && key.ends_with("/status") => {
                self.status_put_us.insert(*rev, t);
                None
            }
            Event::TaskDeath { pid, task } => {
                self.dead_tasks[node as usize].push((t, *pid, task.clone()));
                None
            }
            Event::TaskEnd { pid, task } => {
                if task == "resync" {
                    self.reach("oneshot-resync-finished");
                }
                self.ended.insert((node, *pid, task.clone()));
                None
            }
            Event::EtcdCompact { client, .. } => {
                if self.winners.len() > 1 {
                    self.reach("compaction-under-mastership-change");
                }
                let prev = self.last_compaction_us.replace(t);
                match prev {
                    Some(p) if t - p < self.compaction_period_us => Some(Failure {
                        invariant: "compaction-once-per-period",
                        kind: Kind::Safety,
                        node: self.parse_id(client).0,
                        explanation: format!("{client} compacted at {}, only {} after the previous compaction at {} (period {})", secs(t), secs(t - p), secs(p), secs(self.compaction_period_us)),
                    }),
                    _ => None,
                }
            }
            Event::System(_) => rec.event.system::<CalicoEvent>().and_then(|e| self.on_calico(rec, e)),
            _ => None,
        };
        if out.is_none() {
            self.check_obligations_met();
        }
        out
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        self.now_us = now_us;
        self.check_obligations_met();
        if let Some(d) = self.liveness_deadline {
            if now_us >= d {
                self.liveness_deadline = None;
                return Some(Failure {
                    invariant: "master-elected",
                    kind: Kind::Liveness,
                    node: self.holder.as_ref().and_then(|h| h.node),
                    explanation: format!(
                        "no master {} after faults stopped (bound {}): {}",
                        secs(ELECTION_BOUND_US),
                        secs(ELECTION_BOUND_US),
                        self.describe_master_state()
                    ),
                });
            }
        }
        if self.agent_view_deadline.is_some_and(|d| now_us >= d) {
            self.agent_view_deadline = None;
            let down: Vec<String> = self
                .computes
                .clone()
                .filter(|&c| {
                    self.felix_alive[c]
                        && self.heard_us[c].is_none_or(|h| now_us - h >= AGENT_DOWN_US)
                })
                .map(|c| match self.heard_us[c] {
                    Some(h) => format!("{} (last heard {} ago)", self.names[c], secs(now_us - h)),
                    None => format!("{} (never heard)", self.names[c]),
                })
                .collect();
            if !down.is_empty() {
                let node = self.holder.as_ref().and_then(|h| h.node);
                let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
                return Some(Failure {
                    invariant: AGENT_VIEW_CONVERGES,
                    kind: Kind::Liveness,
                    node,
                    explanation: format!(
                        "{} after faults stopped, Neutron still shows running agents as down: {}; {}{}",
                        secs(AGENT_VIEW_BOUND_US),
                        down.join(", "),
                        self.describe_master_state(),
                        note
                    ),
                });
            }
            let diverged: Vec<String> = self
                .ports
                .diverged(now_us)
                .iter()
                .map(|d| self.describe_divergence(d))
                .collect();
            if !diverged.is_empty() {
                let node = self.holder.as_ref().and_then(|h| h.node);
                let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
                return Some(Failure {
                    invariant: PORT_STATUS_CONVERGES,
                    kind: Kind::Liveness,
                    node,
                    explanation: format!(
                        "{} after faults stopped, Neutron shows {} port(s) with a status other than Felix's settled one: {}; {}{}",
                        secs(AGENT_VIEW_BOUND_US),
                        diverged.len(),
                        diverged.join("; "),
                        self.describe_master_state(),
                        note
                    ),
                });
            }
        }
        if let Some(i) = self
            .obligations
            .iter()
            .position(|o| now_us >= o.deadline_us)
        {
            let o = self.obligations.remove(i);
            let node = self.holder.as_ref().and_then(|h| h.node);
            let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
            return Some(Failure {
                invariant: o.invariant,
                kind: Kind::Liveness,
                node,
                explanation: format!(
                    "no master {} after the {} (bound {}): {}{}",
                    secs(HANDOVER_BOUND_US),
                    o.what,
                    secs(HANDOVER_BOUND_US),
                    self.describe_master_state(),
                    note
                ),
            });
        }
        None
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        self.catalog
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}
