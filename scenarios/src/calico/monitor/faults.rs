//! Faults and the liveness obligations they open: checks `watchdog-restart-justified` as it
//! happens, and `master-elected` and `prompt-handover` at their deadlines. Every failure's
//! explanation ends with the node's fault note from here.
//!
//! Reads (observations only): faults starting (and, in `mod.rs`, ending), the liveness phase,
//! node pauses, crashes and boots, processes starting and exiting, silently dead and finished
//! tasks (the world's events), and the model's `CalicoWatcherRaised` and `CalicoWatchdogExit`
//! events, and its `CalicoWatcher` stops (a stopped watcher's ended canceller leaves the note). A watchdog exit is justified only by a death the monitor saw (a `TaskDeath`, or an
//! exception the task raised). Calls no model function.

use super::{secs, CalicoMonitor, Obligation};
use super::{AGENT_VIEW_BOUND_US, ELECTION_BOUND_US, HANDOVER_BOUND_US};
use crate::calico::bounds::etcd_crash_settles_us;
use model::calico::CalicoEvent;
use sim::event::{ExitStatus, Record};
use sim::{Failure, FaultKind, Kind, Measured, NodeIx};

impl CalicoMonitor {
    /// The node's silently dead tasks and recent faults (at most three, oldest first), as clauses.
    pub(super) fn fault_note(&self, node: NodeIx) -> String {
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

    /// A master exists again: the pending liveness obligations are met.
    pub(super) fn check_obligations_met(&mut self) {
        // (Runs after every event: skip the master check when there is nothing to discharge.)
        if self.obligations.is_empty() && self.liveness_deadline.is_none() {
            return;
        }
        if self.master_exists() {
            self.obligations.clear();
            self.liveness_deadline = None;
        }
    }

    pub(super) fn on_fault_start(
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
        self.log_fault(id, fault, dur_ms, t);
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
        self.obligations.retain(|o| {
            o.invariant != crate::calico::invariants::PROMPT_HANDOVER.name || o.cause == Some(id)
        });
        let master = self.holder.as_ref().and_then(|h| h.node);
        // A graceful stop steps down only an elector that still runs: when the key names a
        // process that already died (a crash not yet respawned), it lingers for its lease.
        let holder_alive = self
            .holder
            .as_ref()
            .is_some_and(|h| h.node.is_some_and(|n| self.alive.contains_key(&(n, h.pid))));
        if let FaultKind::Crash { node } = fault {
            if node == "etcd" {
                self.etcd_settles_us = Some(etcd_crash_settles_us(t, dur_ms * 1000));
            }
        }
        let etcd_quiet = self.etcd_settled(t);
        match fault {
            FaultKind::ServiceRestart { node }
                if holder_alive
                    && etcd_quiet
                    && master == self.node_of(node)
                    && self.faults.len() == 1 =>
            {
                self.obligations.push(Obligation {
                    deadline_us: t + HANDOVER_BOUND_US,
                    invariant: crate::calico::invariants::PROMPT_HANDOVER.name,
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

    /// Whether requests etcd's node held when it last crashed have all ended by `t`: with no TCP
    /// keepalive (urllib3 sets none) their callers learn nothing until etcd3gw's read timeout,
    /// `etcd_timeout`, or, for a connection retransmitting through the outage, its next
    /// retransmission after the reboot; the elector retries 1-2 s later. Until then the world is
    /// not quiet for a handover ([`etcd_crash_settles_us`]).
    fn etcd_settled(&self, t: u64) -> bool {
        self.etcd_settles_us.is_none_or(|s| t >= s)
    }

    /// Faults stop (the liveness phase): pending prompt-handover obligations are dropped, the
    /// status deadline is set, and, without a master, the election deadline.
    pub(super) fn on_liveness_phase(&mut self, t: u64) {
        self.obligations
            .retain(|o| o.invariant != crate::calico::invariants::PROMPT_HANDOVER.name);
        if !self.computes.is_empty() {
            self.agent_view_deadline = Some(t + AGENT_VIEW_BOUND_US);
        }
        if !self.master_exists() {
            self.liveness_deadline = Some(t + ELECTION_BOUND_US);
        }
    }

    /// A node crashed or booted: its processes, tasks, stamp and acting interval are gone.
    pub(super) fn on_node_reset(&mut self, node: NodeIx, t: u64) {
        self.dead_tasks[node as usize].clear();
        self.raised[node as usize].clear();
        self.paused_since[node as usize] = None;
        self.felix_alive[node as usize] = false;
        self.boot_us[node as usize] = t;
        self.alive.retain(|(n, _), _| *n != node);
        self.stamps[node as usize] = 0;
        self.stamp_cleared_us[node as usize] = None;
        self.agent_snapshot.retain(|(n, _)| *n != node);
        self.acting[node as usize] = None;
    }

    /// A process started; a manager respawned on the host whose dead process the key still names
    /// owes a prompt handover (dead-pid cleanup) when nothing else is in force.
    pub(super) fn on_process_start(&mut self, node: NodeIx, pid: u32, name: &str, t: u64) {
        self.alive.insert((node, pid), t);
        if name == "felix" {
            self.felix_alive[node as usize] = true;
        }
        if name == "neutron-server/agent-status" {
            self.agent_watchers.insert(node, pid);
        }
        if name == "neutron-server/manager" {
            let stale = self
                .holder
                .as_ref()
                .is_some_and(|h| h.node == Some(node) && !self.alive.contains_key(&(node, h.pid)));
            if stale && self.faults.is_empty() && self.etcd_settled(t) {
                let value = self.holder.as_ref().unwrap().value.clone();
                self.obligations.push(Obligation {
                    deadline_us: t + HANDOVER_BOUND_US,
                    invariant: crate::calico::invariants::PROMPT_HANDOVER.name,
                    what: format!("manager respawned on {} at {} while the key still named its dead predecessor {value}", self.names[node as usize], secs(t)),
                    cause: None,
                });
            }
        }
    }

    /// A process exited; a manager exiting with status 1 is the elector's exit on an unexpected
    /// error.
    pub(super) fn on_process_exit(
        &mut self,
        node: NodeIx,
        pid: u32,
        status: &ExitStatus,
        name: &str,
    ) {
        self.alive.remove(&(node, pid));
        self.dead_tasks[node as usize].retain(|(_, p, _)| *p != pid);
        self.raised[node as usize].retain(|(_, p, _, _)| *p != pid);
        if name == "felix" {
            self.felix_alive[node as usize] = false;
        }
        if name == "neutron-server/agent-status" {
            self.agent_snapshot.retain(|(n, _)| *n != node);
        }
        if name == "neutron-server/manager" && *status == (ExitStatus::Code { code: 1 }) {
            self.reach("elector-exit-on-unexpected-error");
        }
    }

    /// `worker`'s status watcher on `node` was stopped (its host no longer master, or it died):
    /// the end of its watch canceller holds nothing up any more (the next watcher has its own),
    /// so the fault note stops naming it.
    pub(super) fn forget_canceller(&mut self, node: NodeIx, worker: &str) {
        self.raised[node as usize]
            .retain(|(_, _, task, _)| task.strip_suffix("-watch-canceller") != Some(worker));
    }

    /// Greenlets ending on an exception (for the fault note) and the watchdog's restarts
    /// (`watchdog-restart-justified`).
    pub(super) fn on_task_event(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        let (t, node) = (rec.t_us, rec.node);
        match e {
            CalicoEvent::CalicoWatcherRaised {
                pid,
                task,
                error,
                watcher,
            } => {
                self.raised[node as usize].push((t, *pid, task.clone(), error.clone()));
                self.died.insert((node, *pid, task.clone()));
                // Only this agent-status watcher's end ends its replay (the endpoint-status
                // watcher runs in another process; another instance may be replaying its own).
                if task == "agent-status-watcher" {
                    self.agent_snapshot.remove(&(node, *watcher));
                }
                None
            }
            CalicoEvent::CalicoWatchdogExit { pid, task } => {
                self.reach("watchdog-restart");
                self.on_task_fault(node, *pid, super::stability::WATCHDOG_EXIT, t, t);
                let k = (node, *pid, task.clone());
                if self.died.contains(&k) {
                    return None;
                }
                let why = if self.ended.contains(&k) {
                    "had finished normally (a task meant to finish must not be registered)"
                } else {
                    "had neither died nor raised (it never ran in this process, or still ran)"
                };
                Some(Failure {
                    invariant: crate::calico::invariants::WATCHDOG_RESTART_JUSTIFIED.name,
                    kind: Kind::Safety,
                    node: Some(node),
                    explanation: format!(
                        "the watchdog of {}:{pid} exited the process because task '{task}' was dead, but that task {why}",
                        self.names[node as usize]
                    ),
                    measured: self.alive.get(&(node, *pid)).and_then(|s| Measured::unbounded(t - s)),
                })
            }
            _ => None,
        }
    }

    /// `master-elected`: the election deadline passed without a master.
    pub(super) fn master_elected_overdue(&mut self, now_us: u64) -> Option<Failure> {
        if let Some(d) = self.liveness_deadline {
            if now_us >= d {
                self.liveness_deadline = None;
                return Some(Failure {
                    invariant: crate::calico::invariants::MASTER_ELECTED.name,
                    kind: Kind::Liveness,
                    node: self.holder.as_ref().and_then(|h| h.node),
                    explanation: format!(
                        "no master {} after faults stopped (bound {}): {}",
                        secs(ELECTION_BOUND_US),
                        secs(ELECTION_BOUND_US),
                        self.describe_master_state()
                    ),
                    measured: Measured::bounded(now_us - d + ELECTION_BOUND_US, ELECTION_BOUND_US),
                });
            }
        }
        None
    }

    /// `prompt-handover`: the first obligation whose deadline passed without a master.
    pub(super) fn handover_overdue(&mut self, now_us: u64) -> Option<Failure> {
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
                measured: Measured::bounded(
                    now_us - o.deadline_us + HANDOVER_BOUND_US,
                    HANDOVER_BOUND_US,
                ),
            });
        }
        None
    }
}
