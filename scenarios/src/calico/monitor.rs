//! Invariants of the Calico election and master-only work (spec/calico.md, "Invariants"), checked on
//! every event, and the coverage points of the Calico scenarios.
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `election-key-single-holder` | safety | the election key never changes value while it exists (a campaign put succeeds only if the key was absent) |
//! | `master-only-work-legitimate` | safety | a host doing master-only work at true time t held the election key (with a live lease) at some time in `[t - bound, t]`, `bound` = `MASTER_TIMEOUT` 60 s + one poll 5 s + the watcher's 3.3 s wind-down + one refresh round trip (2 x the 5 s request timeout) = 78.3 s |
//! | `election-deletes-owned` | safety | a client deletes the election key only when it holds the value, or when the value names a dead process on its own host (dead-pid cleanup) |
//! | `master-elected` | liveness | once faults stop, a master exists (the key names a live process whose host's stamp is set) within TTL 60 s + watch timeout 20 s + retry jitter 2 s + 3 s of round trips = 85 s |
//! | `prompt-handover` | liveness | while no other fault is active, a master exists within 10 s of a graceful stop of the master's host services, or of the master's manager being respawned on the same host (dead-pid cleanup) |
//!
//! The headline number of a split brain, the overlap of two hosts' master-only work, is computed
//! from "acting" intervals (a host's consecutive master-only actions less than 8.3 s apart) and
//! quoted in the causal sentence.

use model::calico::{MASTER_CHECK_INTERVAL, MASTER_TIMEOUT, ROUND_TRIP_CHECK};
use sim::event::{DeleteCause, Event, ExitStatus, Record};
use sim::{Failure, FaultKind, Kind, Monitor, NodeIx};
use std::collections::{BTreeMap, BTreeSet};

const S: u64 = 1_000_000;
/// See the table above.
pub const LEGITIMACY_BOUND_US: u64 = MASTER_TIMEOUT.as_micros() as u64
    + MASTER_CHECK_INTERVAL.as_micros() as u64
    + ROUND_TRIP_CHECK.as_micros() as u64
    + 10 * S;
/// See the table above.
pub const ELECTION_BOUND_US: u64 = 85 * S;
/// See the table above.
pub const HANDOVER_BOUND_US: u64 = 10 * S;
/// Two actions of one host less than this apart belong to one acting interval.
const ACTING_GAP_US: u64 =
    MASTER_CHECK_INTERVAL.as_micros() as u64 + ROUND_TRIP_CHECK.as_micros() as u64;

/// Every coverage point the Calico monitor can report.
pub const ALL_POINTS: &[&str] = &[
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
}

fn secs(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

impl CalicoMonitor {
    /// A monitor for nodes `names` (hosts then etcd) and the election key `key`; `catalog` lists
    /// the coverage points the scenario declares.
    pub fn new(names: Vec<String>, key: String, catalog: &'static [&'static str]) -> Self {
        let n = names.len();
        CalicoMonitor {
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

    /// The node's recent faults (at most three, oldest first), as a clause.
    fn fault_note(&self, node: NodeIx) -> String {
        let faults = &self.last_faults[node as usize];
        if faults.is_empty() {
            return String::new();
        }
        let list: Vec<String> = faults
            .iter()
            .map(|(t, d)| format!("{d} at {}", secs(*t)))
            .collect();
        format!(
            "; recent faults on {}: {}",
            self.names[node as usize],
            list.join(", ")
        )
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
    ) -> Option<Failure> {
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
        let legit = last.is_some_and(|l| t.saturating_sub(l) <= LEGITIMACY_BOUND_US);
        if legit {
            return None;
        }
        let name = &self.names[node as usize];
        let held = match last {
            Some(l) => format!(
                "{name} last held the election key at {} ({} earlier; bound {})",
                secs(l),
                secs(t - l),
                secs(LEGITIMACY_BOUND_US)
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
        match fault {
            FaultKind::ServiceRestart { node }
                if master.is_some() && master == self.node_of(node) && self.faults.len() == 1 =>
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

impl Monitor for CalicoMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        self.now_us = t;
        let node = rec.node;
        let out = match &rec.event {
            Event::FaultStart { id, fault, dur_ms } => self.on_fault_start(*id, *dur_ms, fault, t),
            Event::FaultEnd { id } => {
                self.faults.remove(id);
                None
            }
            Event::LivenessPhase => {
                self.obligations.retain(|o| o.invariant != "prompt-handover");
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
                self.paused_since[node as usize] = None;
                self.alive.retain(|(n, _)| *n != node);
                self.stamps[node as usize] = 0;
                self.acting[node as usize] = None;
                None
            }
            Event::ProcessStart { pid, name } => {
                self.alive.insert((node, *pid));
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
                if name == "neutron-server/manager" && *status == (ExitStatus::Code { code: 1 }) {
                    self.reach("elector-exit-on-unexpected-error");
                }
                None
            }
            Event::CalicoStamp { stamp_us } => {
                self.stamps[node as usize] = *stamp_us;
                None
            }
            Event::CalicoStaleStamp { .. } => {
                self.reach("stale-stamp-observed");
                None
            }
            Event::CalicoDeadPidCleanup { .. } => {
                self.reach("dead-pid-cleanup");
                None
            }
            Event::CalicoStepDown { deleted: true, .. } => {
                self.reach("graceful-step-down");
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
            Event::EtcdPut { key, value, lease, .. } if *key == self.key => match &self.holder {
                Some(h) if h.value != *value => Some(Failure {
                    invariant: "election-key-single-holder",
                    kind: Kind::Safety,
                    node: self.parse_id(value).0,
                    explanation: format!("{value} overwrote the election key while it still named {} (held since {})", h.value, secs(h.since_us)),
                }),
                Some(_) => None,
                None => {
                    let (n, pid) = self.parse_id(value);
                    if !self.winners.is_empty() && !self.winners.contains(value) {
                        self.reach("handover");
                    }
                    self.winners.insert(value.clone());
                    self.holder = Some(Holder { value: value.clone(), node: n, pid, since_us: t, lease: *lease });
                    None
                }
            },
            Event::EtcdDelete { key, prev_value, cause, .. } if *key == self.key => {
                let failure = match cause {
                    DeleteCause::Client { client } | DeleteCause::LeaseRevoked { client, .. } if client != prev_value => {
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
            Event::CalicoMasterOnly { pid, worker, action } => {
                let (w, a, p) = (worker.clone(), action.clone(), *pid);
                self.on_master_only(rec, &w, &a, p)
            }
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
