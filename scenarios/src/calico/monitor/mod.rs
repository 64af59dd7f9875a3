//! Invariants of the Calico election and master-only work (the catalog in `invariants.rs`), checked
//! on every event, and the coverage points of the Calico scenarios.
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `election-key-single-holder` | safety | the election key never changes value while it exists (a campaign put succeeds only if the key was absent) |
//! | `master-only-work-legitimate` | safety | a host doing master-only work at true time t held the election key (with a live lease) at some time in `[t - bound, t]`. The bound is what upstream's code allows, from the model's constants (`etcd_timeout` T = 60 s): the stamp is taken when the refresh's put answers, at most T after the put was applied; `is_master()` trusts it for `MASTER_TIMEOUT` (60 s); a watcher acts on an answer up to one poll (5 s) old: 125 s for work dispatched from a watch. A stopped watcher still finishes a snapshot whose status and range reads (2 T) were in flight: 245 s. Compaction is recorded when it decides, right after its `is_master()`: 120 s |
//! | `election-deletes-owned` | safety | a client deletes the election key only when it holds the value, or when the value names a dead process on its own host (dead-pid cleanup) |
//! | `master-stable` | safety | the election key changes holder (is deleted) only when a fault that can end the holder's mastership touched the holder or etcd within the last 130 s (`etcd_timeout` + `MASTER_TIMEOUT` + one refresh interval): a pause, crash, isolation or cut between the holder and etcd, a graceful stop, a crash of its manager, a silent death or a stall of its elector, a watchdog exit of its process; an etcd crash, unavailability, ambiguity, slowness or garbling |
//! | `master-only-work-on-fresh-stamp` | safety | while another host is master (holds the key, its process alive and its stamp set), a host does master-only work only on an `is_master()` yes given within `MASTER_TIMEOUT` (60 s) + 1 s (clock drift) of true time after its elector last wrote its stamp: `is_master()` trusts a stamp for 60 s by `time.time()`, which only a clock step can stretch beyond the lease the stamp confirmed |
//! | `master-only-work-stops` | safety | once a host's elector had evidence that its mastership ended (a refresh that failed, or whose compare found the key changed or gone), or cleared its stamp, no process of that host does master-only work more than one poll (5 s) later until the stamp is set again (a snapshot whose reads were in flight: + 2 `etcd_timeout`); excused while the process's master-only loop was stalled or after it died |
//! | `master-elected` | liveness | once faults stop, a master exists (the key names a live process whose host's stamp is set) within TTL 60 s + watch timeout 20 s + retry jitter 2 s + 3 s of round trips = 85 s |
//! | `prompt-handover` | liveness | while no other fault is active, a master exists within 10 s of a graceful stop of the master's host services (when the master's elector process still runs: a dead one cannot step down, and when etcd's node has not crashed within `etcd_timeout` plus the retry jitter before: requests it held wait out their timeout), or of the master's manager being respawned on the same host (dead-pid cleanup) |
//! | `stale-warning-not-in-snapshot` | safety | no stale-update warning while a watcher replays a snapshot |
//! | `stale-warning-rate-limited` | safety | at most one stale-update warning per 300 s per watcher instance (each `StatusWatcher` the master-only loop makes has a fresh limiter, status.py line 101 at 87c15906) |
//! | `watcher-survives-timestamps` | safety | no watcher task dies on a malformed, naive or missing timestamp |
//! | `stale-report-warned` | safety | a watcher that forwards (outside a snapshot) a report whose `time` is more than 300 s behind its own wall clock has logged a stale warning within the last 300 s |
//! | `stale-warning-justified` | safety | every stale warning is for a report whose `time` is more than 300 s behind the watcher's wall clock at the warning (the report is the one the same dispatch forwards, or, de-duplicated, the one this watcher forwarded last for that host) |
//! | `compaction-once-per-period` | safety | compaction never runs twice within one compaction period (etcd itself refuses to go backwards) |
//! | `compaction-progresses` | liveness | while a master exists, a compaction check rewrites the trigger key (or compacts) at least once every two compaction periods 2P plus slack (one 5 s `is_master()` poll + 10 s of a check's round trips): by the latest of the last rewrite, the master's start and the end of the last fault (or stall or death of the master's compaction task or elector) + `etcd_timeout`, plus 2P + slack (a check that reads the trigger key a few ms before its lease of one period runs out skips a period) |
//! | `election-refresh-progresses` | liveness | while a master exists, its elector re-puts the election key at least once per 15 s (the 10 s refresh interval + 5 s for the refresh's round trips and the monotonic clock's rate), from the latest of the last put, the master's start and the end of the last fault (or stall or death of the master host's elector) + `etcd_timeout` |
//! | `status-watch-round-trips` | liveness | while a master exists, every status-watcher worker process of its host writes its round-trip key at least once per 28.3 s (the 3.3 s write interval + a 5 s retry + two 5 s polls + 10 s of round trips), from the latest of its last write, the master's or the process's start and the end of the last fault (or stall or death of a task of the watchers or the elector on the master's host) + `etcd_timeout` |
//! | `startup-resync-completes` | liveness | every startup-resync worker process (on each host whose `startup_resync` is `always`, master or not) ends its one resync successfully within 10 s of its start, unless a fault that can fail or delay its reads (its host paused, cut or slowed; etcd or the Neutron DB down, cut, failing or slow; a stall or death of its resync task) was in force before then, from `etcd_timeout` before its start for etcd and from its start for the Neutron DB: upstream abandons a failed resync |
//! | `watchdog-restart-justified` | safety | the watchdog exits a process only if the dead registered task died unexpectedly (not by finishing) |
//! | `port-status-converges` (status scenarios) | liveness | 140 s after faults stop, every port whose Felix status has not changed for 30 s shows in Neutron as the spec maps it (up: ACTIVE, down: DOWN, anything else: ERROR) |
//! | `agent-view-converges` | liveness | 140 s after faults stop (a master within 85 s, then one report interval and slack), Neutron has heard within `agent_down_time` (75 s) from every compute host whose Felix runs, and from no host whose Felix does not run |
//! | `silent-agent-not-reported` (status scenarios) | safety | no report of a compute host is forwarded more than 130 s (report interval + report lease + 10 s) after its Felix last wrote one, unless etcd, or the forwarding host's link to it, or the forwarding host itself (pause, stall of its watcher) had a fault in force since |
//!
//! The headline number of a split brain, the overlap of two hosts' master-only work, is computed
//! from "acting" intervals (a host's consecutive master-only actions less than 8.3 s apart) and
//! quoted in the causal sentence.
//!
//! The checks live by concern, each file's header saying what it reads: `election` (the election
//! key in etcd, the electors' stamps, master-only work and compaction), `stability` (the faults
//! that can end a mastership or delay a watcher: `master-stable`, `master-only-work-stops`,
//! `silent-agent-not-reported`), `status` (the status path: Felix's reports through the
//! agent-status watcher to Neutron, stale-update warnings, port statuses), `felix_time` (the
//! monitor's own reading of a report's timestamp) and `faults` (faults in force, nodes, processes
//! and tasks, and the liveness obligations they open). The bounds are in `calico::bounds`
//! (re-exported here); this file holds the monitor's state and the dispatch of each event to its
//! concern.
//!
//! Independence: the monitor reads the model's events (`model::calico::CalicoEvent`, observations
//! only) and the world's, and the model's constants (`MASTER_TIMEOUT`, `REFRESH_INTERVAL`,
//! `ETCD_TIMEOUT`, `MASTER_CHECK_INTERVAL`, `RETRY_MAX`, `REPORT_INTERVAL`, `REPORT_TTL_S`,
//! `ROUND_TRIP_INTERVAL`, `AGENT_DOWN_TIME`, the stale threshold and interval, `COMPACTION_PERIOD`)
//! to derive bounds; it calls no model function. The key names are built here from the region as
//! the spec gives them.

use model::calico::neutron::AGENT_DOWN_TIME;
use model::calico::CalicoEvent;
use sim::event::{Event, Record};
pub(crate) use sim::units::show_secs as secs;
use sim::{Failure, FaultKind, Monitor, NodeIx};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) use stability::KNEW_LOST;
pub(crate) use status::{AGENT_VIEW_WRONG, PORTS_WRONG};

mod duties;
mod election;
mod faults;
mod felix_time;
mod periodic;
mod resync;
mod stability;
mod stamp_age;
mod status;

pub use super::bounds::*;

/// Invariant names of the status path.
pub const AGENT_VIEW_CONVERGES: &str = crate::calico::invariants::AGENT_VIEW_CONVERGES.name;
/// See the table above.
pub const PORT_STATUS_CONVERGES: &str = crate::calico::invariants::PORT_STATUS_CONVERGES.name;
/// Neutron's `agent_down_time`.
const AGENT_DOWN_US: u64 = us(AGENT_DOWN_TIME);

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

/// A fault of the schedule as the stability checks read it: when it was in force.
struct FaultSpan {
    start_us: u64,
    /// When it ended (`None`: still in force); an instantaneous fault ends as it starts.
    end_us: Option<u64>,
    fault: FaultKind,
}

/// A silent death (`end_us` = `u64::MAX`: for good) or a stall of one task of one process.
struct TaskFault {
    node: NodeIx,
    pid: u32,
    task: String,
    start_us: u64,
    end_us: u64,
}

/// A stale-update warning waiting for the report it was about: the forward that the same dispatch
/// emits next, or, if the report was de-duplicated, the last one this watcher forwarded.
struct PendingWarning {
    node: NodeIx,
    pid: u32,
    host: String,
    local_us: i64,
    t_us: u64,
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
    /// Live processes and when each started.
    alive: BTreeMap<(NodeIx, u32), u64>,
    stamps: Vec<i64>,
    faults: BTreeMap<u32, FaultKind>,
    last_faults: Vec<Vec<(u64, String)>>,
    /// True time by which everything etcd's node held or missed in its last crash has ended
    /// (timed out, or retransmitted to the rebooted host; see `faults.rs`).
    etcd_settles_us: Option<u64>,
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
    compaction_period_us: u64,
    last_compaction_us: Option<u64>,
    compaction_progress: duties::CompactionProgress,
    periodic: periodic::Periodic,
    startup_resyncs: resync::StartupResyncs,
    /// Neutron's last receipt of a report, per agent host name (true time).
    heard_us: BTreeMap<String, u64>,
    /// Per Felix host name: true time of its last status put in etcd.
    report_put_us: BTreeMap<String, u64>,
    /// Agent-status watcher instances (node, instance in its process) replaying a snapshot
    /// (between its start and its end or drop).
    agent_snapshot: BTreeSet<(NodeIx, u32)>,
    pending_warning: Option<PendingWarning>,
    /// Per agent-status watcher instance (node, pid) and host: the `time` it forwarded last.
    forwarded_time: BTreeMap<(NodeIx, u32, String), String>,
    /// Stamp writes and `is_master()`'s answers on true time (`stamp_age.rs`).
    stamp_trust: stamp_age::StampTrust,
    /// Per node: when its elector last cleared the stamp (None: set, or never cleared).
    stamp_cleared_us: Vec<Option<u64>>,
    /// Per node: when its elector's refresh first got an answer that ends the mastership (a
    /// failure, or a failed compare) since the stamp was last set (None: no such answer).
    loss_evidence_us: Vec<Option<u64>>,
    fault_log: BTreeMap<u32, FaultSpan>,
    task_faults: Vec<TaskFault>,
    /// Tasks that died unexpectedly: silently, or on an exception (node, pid, task).
    died: BTreeSet<(NodeIx, u32, String)>,
    felix_alive: Vec<bool>,
    agent_view_deadline: Option<u64>,
    ports: crate::calico::ports::PortView,
    agent_watchers: BTreeMap<NodeIx, u32>,
    /// Per node: silently dead tasks (true time, task) of processes still alive.
    dead_tasks: Vec<Vec<(u64, u32, String)>>,
    /// Per node: greenlets of live processes that ended on an exception (true time, pid, task,
    /// error).
    raised: Vec<Vec<(u64, u32, String, String)>>,
}

impl CalicoMonitor {
    /// A monitor for nodes `names` (hosts, computes, etcd, the Neutron DB) of a deployment in
    /// `region` (the election key and Felix's status prefix are built from it as the spec names
    /// them); `catalog` lists the coverage points the scenario declares.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        names: Vec<String>,
        region: &str,
        hosts: usize,
        computes: usize,
        compaction_period: std::time::Duration,
        check_agent_view: bool,
        catalog: &'static [&'static str],
    ) -> Self {
        let n = names.len();
        CalicoMonitor {
            felix_prefix: format!("/calico/felix/v2/{region}/host/"),
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
            compaction_period_us: compaction_period.as_micros() as u64,
            last_compaction_us: None,
            compaction_progress: Default::default(),
            periodic: Default::default(),
            startup_resyncs: Default::default(),
            heard_us: BTreeMap::new(),
            report_put_us: BTreeMap::new(),
            agent_snapshot: BTreeSet::new(),
            pending_warning: None,
            forwarded_time: BTreeMap::new(),
            stamp_trust: Default::default(),
            stamp_cleared_us: vec![None; n],
            loss_evidence_us: vec![None; n],
            fault_log: BTreeMap::new(),
            task_faults: Vec::new(),
            died: BTreeSet::new(),
            felix_alive: vec![false; n],
            agent_view_deadline: None,
            ports: Default::default(),
            agent_watchers: BTreeMap::new(),
            dead_tasks: vec![Vec::new(); n],
            raised: vec![Vec::new(); n],
            names,
            key: format!("/calico/openstack/v2/{region}/neutron_election"),
            holder: None,
            last_held_us: BTreeMap::new(),
            winners: BTreeSet::new(),
            alive: BTreeMap::new(),
            stamps: vec![0; n],
            faults: BTreeMap::new(),
            last_faults: vec![Vec::new(); n],
            etcd_settles_us: None,
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

    pub(super) fn node_of(&self, name: &str) -> Option<NodeIx> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| i as NodeIx)
    }

    pub(super) fn parse_id(&self, id: &str) -> (Option<NodeIx>, u32) {
        match id.split_once(':') {
            Some((h, p)) => (self.node_of(h), p.parse().unwrap_or(0)),
            None => (None, 0),
        }
    }

    pub(super) fn reach(&mut self, point: &'static str) {
        self.reached.insert(point);
    }
}

impl CalicoMonitor {
    /// The Calico model's own events, each to its concern.
    fn on_calico(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        match e {
            CalicoEvent::CalicoStamp { .. }
            | CalicoEvent::CalicoLost { .. }
            | CalicoEvent::CalicoStaleStamp { .. }
            | CalicoEvent::CalicoIsMaster { .. }
            | CalicoEvent::CalicoDeadPidCleanup { .. }
            | CalicoEvent::CalicoStepDown { .. }
            | CalicoEvent::CalicoMasterOnly { .. } => self.on_election_event(rec, e),
            CalicoEvent::CalicoWatcherRaised { .. } | CalicoEvent::CalicoWatchdogExit { .. } => {
                self.on_task_event(rec, e)
            }
            _ => self.on_status_event(rec, e),
        }
    }
}

impl Monitor for CalicoMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        self.now_us = t;
        if !self.computes.is_empty() {
            self.ports.observe(&self.felix_prefix, t, &rec.event);
        }
        if let Some(f) = self.resolve_pending_warning(Some(rec)) {
            return Some(f);
        }
        let out = match &rec.event {
            // Faults, nodes, processes and tasks (faults.rs).
            Event::FaultStart { .. }
            | Event::FaultEnd { .. }
            | Event::LivenessPhase
            | Event::NodePause
            | Event::NodeResume
            | Event::NodeCrash
            | Event::NodeBoot { .. }
            | Event::ProcessStart { .. }
            | Event::ProcessExit { .. }
            | Event::TaskDeath { .. }
            | Event::TaskStall { .. }
            | Event::TaskEnd { .. } => self.on_lifecycle(rec),
            // etcd and the election key (election.rs).
            Event::EtcdAmbiguous { applied, .. } => {
                self.reach(if *applied {
                    "etcd-ambiguous-applied"
                } else {
                    "etcd-ambiguous-lost"
                });
                None
            }
            Event::EtcdLeaseExpire { lease } => {
                if self.holder.as_ref().is_some_and(|h| h.lease == *lease) {
                    self.reach("election-lease-expired");
                }
                None
            }
            Event::EtcdPut {
                key, value, lease, ..
            } if **key == *self.key => {
                self.on_election_put(t);
                self.on_key_put(value, *lease, t)
            }
            Event::EtcdDelete {
                key,
                prev_value,
                cause,
                ..
            } if **key == *self.key => self.on_key_delete(prev_value, cause, t),
            // A Felix status report lands in etcd (status.rs: how old it is when forwarded).
            Event::EtcdPut { key, rev, .. }
                if key.starts_with(&self.felix_prefix) && key.ends_with("/status") =>
            {
                self.status_put_us.insert(*rev, t);
                let host = key[self.felix_prefix.len()..key.len() - "/status".len()].to_string();
                self.report_put_us.insert(host, t);
                None
            }
            Event::EtcdPut { key, client, .. }
                if key.strip_prefix(self.felix_prefix.as_str()) == Some("round-trip-check") =>
            {
                self.on_round_trip(client, t);
                None
            }
            Event::EtcdPut { key, .. } if **key == *model::calico::COMPACTION_TRIGGER_KEY => {
                self.on_compaction_progress(Some(key), t);
                None
            }
            Event::EtcdCompact { client, .. } => {
                self.on_compaction_progress(None, t);
                self.on_compact(client, t)
            }
            Event::System(_) => rec
                .event
                .system::<CalicoEvent>()
                .and_then(|e| self.on_calico(rec, e)),
            _ => None,
        };
        if out.is_none() {
            self.check_obligations_met();
        }
        self.track_master_stretch(t);
        out
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        self.now_us = now_us;
        if let Some(f) = self.resolve_pending_warning(None) {
            return Some(f);
        }
        self.check_obligations_met();
        if let Some(f) = self.master_elected_overdue(now_us) {
            return Some(f);
        }
        if let Some(f) = self.compaction_overdue(now_us) {
            return Some(f);
        }
        if let Some(f) = self.refresh_overdue(now_us) {
            return Some(f);
        }
        if let Some(f) = self.round_trips_overdue(now_us) {
            return Some(f);
        }
        if let Some(f) = self.startup_resync_overdue(now_us) {
            return Some(f);
        }
        if let Some(d) = self.agent_view_deadline.filter(|&d| now_us >= d) {
            self.agent_view_deadline = None;
            let since_stop = now_us - d + AGENT_VIEW_BOUND_US;
            if let Some(f) = self.status_converged(now_us, since_stop) {
                return Some(f);
            }
        }
        self.handover_overdue(now_us)
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        self.catalog
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}

impl CalicoMonitor {
    /// Faults, nodes, processes and tasks: the world's own events.
    fn on_lifecycle(&mut self, rec: &Record) -> Option<Failure> {
        let (t, node) = (rec.t_us, rec.node);
        match &rec.event {
            Event::FaultStart { id, fault, dur_ms } => self.on_fault_start(*id, *dur_ms, fault, t),
            Event::FaultEnd { id } => {
                self.faults.remove(id);
                if let Some(span) = self.fault_log.get_mut(id) {
                    span.end_us = Some(t);
                }
                None
            }
            Event::LivenessPhase => {
                self.on_liveness_phase(t);
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
                self.on_node_reset(node, t);
                self.periodic_process_gone(node, None);
                self.resync_worker_gone(node, None);
                None
            }
            Event::ProcessStart { pid, name } => {
                self.on_process_start(node, *pid, name, t);
                self.periodic_process_start(node, *pid, name, t);
                self.resync_worker_start(node, *pid, name, t);
                None
            }
            Event::ProcessExit { pid, status, name } => {
                self.on_process_exit(node, *pid, status, name);
                self.periodic_process_gone(node, Some(*pid));
                self.resync_worker_gone(node, Some(*pid));
                None
            }
            Event::TaskDeath { pid, task } => {
                self.dead_tasks[node as usize].push((t, *pid, task.clone()));
                self.on_task_fault(node, *pid, task, t, u64::MAX);
                None
            }
            Event::TaskStall {
                pid,
                task,
                until_ms,
            } => {
                self.on_task_fault(node, *pid, task, t, until_ms * 1000);
                None
            }
            Event::TaskEnd { pid, task } => {
                if task == "resync" {
                    self.reach("oneshot-resync-finished");
                }
                self.ended.insert((node, *pid, task.clone()));
                None
            }
            _ => None,
        }
    }
}
