//! The faults that can end a mastership or delay a watcher, and the three checks that need them:
//! `master-stable` (a holder loses the key only to a fault), `master-only-work-stops` (a host stops
//! master-only work one poll after its own elector learnt that its mastership ended) and
//! `silent-agent-not-reported` (a silent Felix's report is not forwarded long after it wrote it).
//!
//! Reads (observations only): the schedule's faults as they start and end (`FaultStart`,
//! `FaultEnd`), the world's `TaskDeath` and `TaskStall` events (which process and task), the
//! election key's deletes and Felix's status puts in etcd (recorded in `mod.rs`), the electors'
//! `CalicoStamp` and `CalicoLost` events and the `CalicoMasterOnly` and `CalicoAgentForward` events of the model.
//! Which fault can do what is derived here from upstream's elector and watcher (see each
//! function); it calls no model function.

use super::{secs, CalicoMonitor, FaultSpan, TaskFault};
use super::{MASTER_STABLE_WINDOW_US, SILENT_AGENT_BOUND_US};
use super::{WORK_STOPS_BOUND_US, WORK_STOPS_SNAPSHOT_BOUND_US};
use sim::event::DeleteCause;
use sim::{Failure, FaultKind, Kind, Measured, NodeIx};

/// Whether `a` and `b` are on different sides of a cut between groups `x` and `y`.
pub(super) fn cut_between(x: &[String], y: &[String], a: &str, b: &str) -> bool {
    let has = |g: &[String], n: &str| g.iter().any(|m| m == n);
    (has(x, a) && has(y, b)) || (has(x, b) && has(y, a))
}

/// Whether `fault` can end the mastership of an elector on host `host` (upstream's
/// `Elector._become_master`: it keeps the key while every 10 s refresh, a lease keep-alive and a
/// guarded put, succeeds; election.py lines 296-335 at 87c15906): by stopping the host or its
/// services, by cutting it from etcd, or by making etcd fail, time out or garble its answers. Not
/// latency (at most 3 s a hop against a 60 s TTL and a 60 s request timeout), clock steps or drift
/// (the elector sleeps on the monotonic clock; etcd's steps are at most 5 s). Faults on single
/// tasks are read from the world's task events instead (they name the process).
fn can_end_mastership(fault: &FaultKind, host: &str) -> bool {
    let etcd = "etcd";
    match fault {
        FaultKind::Pause { node }
        | FaultKind::Crash { node }
        | FaultKind::Isolate { node }
        | FaultKind::ServiceRestart { node }
        | FaultKind::ProcessCrash { node, .. } => node == host || node == etcd,
        FaultKind::Partition { a, b } => cut_between(a, b, host, etcd),
        FaultKind::Simplex { from, to } => cut_between(from, to, host, etcd),
        FaultKind::ServiceUnavailable { node }
        | FaultKind::ServiceAmbiguous { node, .. }
        | FaultKind::ServiceSlow { node, .. }
        | FaultKind::ServiceGarbled { node, .. } => node == etcd,
        _ => false,
    }
}

/// Whether `fault` can make the agent-status watcher on `host` forward a report late, or keep an
/// old report's key alive: etcd down, unavailable, ambiguous, slow, garbling or with added latency
/// (a lease reset at recovery, after a crash of its host or a restart of its process; answers
/// later than the client's timeout, so a Felix keep-alive renews the report's lease while Felix,
/// seeing it fail, skips the put; reads answered late), the host paused, slowed or cut from etcd
/// (events held up), or the message broker down, paused, slow or cut from the host: the
/// watcher's greenlet blocks on its RPC cast, retried for ever (`model::calico::broker`), until
/// the broker takes it, up to 32 s after the broker is back (kombu's last interval and oslo's
/// reconnect delay), and handles the events held up meanwhile only then.
fn can_delay_forwarding(fault: &FaultKind, host: &str) -> bool {
    let etcd = "etcd";
    let broker = crate::calico::schedule::BROKER;
    let on_path = |node: &str| node == etcd || node == broker;
    match fault {
        FaultKind::Pause { node }
        | FaultKind::Latency { node, .. }
        | FaultKind::Isolate { node } => node == host || on_path(node),
        FaultKind::Crash { node }
        | FaultKind::ServiceRestart { node }
        | FaultKind::ServiceUnavailable { node }
        | FaultKind::ServiceAmbiguous { node, .. }
        | FaultKind::ServiceSlow { node, .. }
        | FaultKind::ServiceGarbled { node, .. } => on_path(node),
        FaultKind::Partition { a, b } => {
            cut_between(a, b, host, etcd) || cut_between(a, b, host, broker)
        }
        FaultKind::Simplex { from, to } => {
            cut_between(from, to, host, etcd) || cut_between(from, to, host, broker)
        }
        _ => false,
    }
}

/// The task name under which a watchdog exit is logged with the task faults.
pub(super) const WATCHDOG_EXIT: &str = "(watchdog exit)";

impl FaultSpan {
    /// Whether it was in force at some time in `[from, to]`.
    pub(super) fn overlaps(&self, from: u64, to: u64) -> bool {
        self.start_us <= to && self.end_us.is_none_or(|e| e >= from)
    }
}

impl CalicoMonitor {
    /// A fault starts (every kind is logged; the checks pick what they need).
    pub(super) fn log_fault(&mut self, id: u32, fault: &FaultKind, dur_ms: u64, t: u64) {
        let end_us = (dur_ms == 0).then_some(t);
        self.fault_log.insert(
            id,
            FaultSpan {
                start_us: t,
                end_us,
                fault: fault.clone(),
            },
        );
    }

    /// A task died silently (`end_us` = `u64::MAX`) or was stalled until `end_us`.
    pub(super) fn on_task_fault(&mut self, node: NodeIx, pid: u32, task: &str, t: u64, end: u64) {
        if end == u64::MAX {
            self.died.insert((node, pid, task.to_string()));
        }
        self.task_faults.push(TaskFault {
            node,
            pid,
            task: task.to_string(),
            start_us: t,
            end_us: end,
        });
    }

    /// The elector of `node` set (`stamp_us` > 0) or cleared its stamp.
    pub(super) fn on_stamp(&mut self, node: NodeIx, stamp_us: i64, t: u64) {
        self.stamp_cleared_us[node as usize] = (stamp_us == 0).then_some(t);
        if stamp_us != 0 {
            self.loss_evidence_us[node as usize] = None;
        }
    }

    /// The elector of `node` got an answer to its refresh that ends its mastership (an error, or
    /// the guarded put's compare failing: election.py `_become_master`, lines 303-326 at
    /// 87c15906): the host has known since `t`, whatever its elector does about it.
    pub(super) fn on_loss_evidence(&mut self, node: NodeIx, t: u64) {
        self.loss_evidence_us[node as usize].get_or_insert(t);
    }

    /// Since when `node` has known that its mastership ended: the first answer that ended it, or
    /// its elector clearing the stamp (a step-down), whichever came first.
    fn known_lost_since(&self, node: NodeIx) -> Option<u64> {
        let (e, c) = (
            self.loss_evidence_us[node as usize],
            self.stamp_cleared_us[node as usize],
        );
        e.into_iter().chain(c).min()
    }

    /// Task faults of process `pid` on `node` (of `task`, if given) in force in `[from, to]`.
    fn task_fault_in(
        &self,
        node: NodeIx,
        pid: u32,
        task: Option<&str>,
        from: u64,
        to: u64,
    ) -> Option<&TaskFault> {
        self.task_faults.iter().find(|f| {
            f.node == node
                && f.pid == pid
                && task.is_none_or(|t| f.task == t)
                && f.start_us <= to
                && f.end_us >= from
        })
    }

    /// `master-stable`: the key named `holder` is deleted at `t` (`cause`). Explained by a fault
    /// that can end the holder's mastership in force within the last [`MASTER_STABLE_WINDOW_US`],
    /// a silent death or a stall of its elector in that window, or a watchdog exit of its process
    /// in that window (the watchdog found a task dead: `watchdog-restart-justified` checks that).
    pub(super) fn check_master_stable(
        &self,
        holder: &super::Holder,
        cause: &DeleteCause,
        t: u64,
    ) -> Option<Failure> {
        let n = holder.node?;
        let host = self.names[n as usize].as_str();
        let last = self.last_disturbance(n, holder.pid, t);
        if last.is_some_and(|e| e + MASTER_STABLE_WINDOW_US >= t) {
            return None;
        }
        let how = match cause {
            DeleteCause::LeaseExpired { lease } => format!("its lease {lease} expired"),
            DeleteCause::Client { client } => format!("{client} deleted it"),
            DeleteCause::LeaseRevoked { client, .. } => format!("{client} revoked its lease"),
        };
        Some(Failure {
            invariant: crate::calico::invariants::MASTER_STABLE.name,
            kind: Kind::Safety,
            node: Some(n),
            explanation: format!(
                "the election key named {} (since {}) until {} at {}, but no fault that can end a mastership touched {host} or etcd in the last {}{}",
                holder.value,
                secs(holder.since_us),
                how,
                secs(t),
                secs(MASTER_STABLE_WINDOW_US),
                self.fault_note(n)
            ),
            // With no such fault ever, the window is not what broke: nothing disturbed it at all.
            measured: Some(Measured {
                value_us: t - last.unwrap_or(0),
                bound_us: last.map(|_| MASTER_STABLE_WINDOW_US),
            }),
        })
    }

    /// When the last disturbance of the mastership of `node`:`pid` before `t` ended (`t` if one is
    /// in force): a fault that can end it, a silent death or a stall of its elector, or a watchdog
    /// exit of its process.
    fn last_disturbance(&self, n: NodeIx, pid: u32, t: u64) -> Option<u64> {
        let host = self.names[n as usize].as_str();
        let faults = self
            .fault_log
            .values()
            .filter(|f| f.start_us <= t && can_end_mastership(&f.fault, host))
            .map(|f| f.end_us.unwrap_or(t));
        let tasks = self
            .task_faults
            .iter()
            .filter(|f| f.node == n && f.pid == pid && f.start_us <= t)
            .filter(|f| f.task == "elector" || f.task == WATCHDOG_EXIT)
            .map(|f| f.end_us);
        faults.chain(tasks).map(|e| e.min(t)).max()
    }

    /// `master-only-work-stops`: `worker` of `node`:`pid` did master-only work at `t` while the
    /// node has known since `c` that its mastership ended (its elector's refresh got an answer
    /// that ends it, or the elector cleared the stamp): the clock does not start at the model's own
    /// reaction, so an elector that forgets to clear the stamp is caught.
    pub(super) fn check_work_stops(
        &self,
        node: NodeIx,
        pid: u32,
        worker: &str,
        in_snapshot: bool,
        t: u64,
    ) -> Option<Failure> {
        let late = self.work_after_known_loss(node, pid, worker, in_snapshot, t)?;
        let name = &self.names[node as usize];
        Some(Failure {
            invariant: crate::calico::invariants::MASTER_ONLY_WORK_STOPS.name,
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} ({worker}) did master-only work{} at {}, {}{}",
                if in_snapshot { " from a snapshot" } else { "" },
                secs(t),
                late.describe(name),
                self.fault_note(node)
            ),
            measured: Measured::bounded(late.after_us, late.bound_us),
        })
    }

    /// Master-only work by `worker` of `node`:`pid` at `t` later than `master-only-work-stops`
    /// allows after the node knew its mastership had ended (none while its master-only loop was
    /// stalled or dead: it could not stop its watcher).
    pub(super) fn work_after_known_loss(
        &self,
        node: NodeIx,
        pid: u32,
        worker: &str,
        in_snapshot: bool,
        t: u64,
    ) -> Option<LateWork> {
        let c = self.known_lost_since(node)?;
        let bound = match (worker, in_snapshot) {
            ("manager", _) => 0,
            (_, true) => WORK_STOPS_SNAPSHOT_BOUND_US,
            (_, false) => WORK_STOPS_BOUND_US,
        };
        if t - c <= bound {
            return None;
        }
        // The loop that polls is_master() (compaction polls it itself): stalled or dead, it
        // cannot stop its watcher.
        let poller = if worker == "manager" {
            "compaction"
        } else {
            worker
        };
        if self.task_fault_in(node, pid, Some(poller), c, t).is_some() {
            return None;
        }
        Some(LateWork {
            known_us: c,
            after_us: t - c,
            bound_us: bound,
        })
    }

    /// `silent-agent-not-reported`: the agent-status watcher on `node` forwards `host`'s report at
    /// `t`; Felix on `host` last wrote one at `p`.
    pub(super) fn check_silent_agent(&self, node: NodeIx, host: &str, t: u64) -> Option<Failure> {
        if self.computes.is_empty() {
            return None;
        }
        let p = *self.report_put_us.get(host)?;
        if t - p <= SILENT_AGENT_BOUND_US {
            return None;
        }
        let me = self.names[node as usize].as_str();
        let delayed = self
            .fault_log
            .values()
            .any(|f| f.overlaps(p, t) && can_delay_forwarding(&f.fault, me));
        let pid = self.forwarder_pid(node);
        let stalled = self
            .task_fault_in(node, pid, Some("agent-status-watcher"), p, t)
            .is_some();
        if delayed || stalled {
            return None;
        }
        Some(Failure {
            invariant: crate::calico::invariants::SILENT_AGENT_NOT_REPORTED.name,
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{me}:{pid} forwarded a report of {host} to Neutron at {}, but Felix on {host} last wrote one at {} ({} earlier; bound {}), and no fault on etcd, the message broker or {me} was in force since{}",
                secs(t),
                secs(p),
                secs(t - p),
                secs(SILENT_AGENT_BOUND_US),
                self.fault_note(node)
            ),
            measured: Measured::bounded(t - p, SILENT_AGENT_BOUND_US),
        })
    }
}

/// What both master-only invariants say of work done long after its host knew its mastership had
/// ended: a stopped watcher still dispatching (a stale stamp cannot explain it, since knowing
/// clears the stamp). The stopped-watcher finding's signature claims such work, and the
/// wall-clock finding's leaves it alone.
pub(crate) const KNEW_LOST: &str = "elector knew its mastership had ended";

/// Master-only work done later than `master-only-work-stops` allows after its host knew its
/// mastership had ended.
pub(super) struct LateWork {
    /// When the host knew (true time, µs).
    known_us: u64,
    /// How long after that the work came (µs).
    after_us: u64,
    /// The bound it broke (µs).
    bound_us: u64,
}

impl LateWork {
    /// "D after NAME's elector knew its mastership had ended at C (bound B)".
    pub(super) fn describe(&self, name: &str) -> String {
        format!(
            "{} after {name}'s {KNEW_LOST} at {} (bound {})",
            secs(self.after_us),
            secs(self.known_us),
            secs(self.bound_us)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_between_the_host_and_the_broker_can_delay_forwarding() {
        let names = |v: &[&str]| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let broker = crate::calico::schedule::BROKER;
        let cut = FaultKind::Partition {
            a: names(&["h1"]),
            b: names(&[broker]),
        };
        assert!(can_delay_forwarding(&cut, "h1"));
        assert!(
            !can_delay_forwarding(&cut, "h2"),
            "h2 still reaches the broker"
        );
        let one_way = FaultKind::Simplex {
            from: names(&[broker]),
            to: names(&["h1"]),
        };
        assert!(can_delay_forwarding(&one_way, "h1"));
    }
}
