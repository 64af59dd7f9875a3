//! `startup-resync-completes`: every startup-resync worker process ends its one resync
//! successfully within [`STARTUP_RESYNC_BOUND_US`] of its start, unless something that can fail
//! or delay it was in force meanwhile.
//!
//! Upstream (projectcalico/calico 87c15906) forks a `CalicoStartupResyncWorker` in every
//! neutron-server whose `[calico] startup_resync` is `always`, the default; its post-fork hook
//! runs one resync at once, whether or not its host is master, and a resync that fails is logged
//! and abandoned, not retried (mech_calico.py `get_workers`, lines 478-531, `post_fork_initialize`,
//! 533-578, `_do_startup_resync`, 1284-1322; resync/scope.py `Scope.run`, 130-192). So the duty is
//! one resync per worker process, timed from the process's start, and void once a disturbance
//! may have failed it: a fault in force between `etcd_timeout` before the start (a request etcd
//! held may still be waiting out its timeout) and the deadline that can fail or delay the
//! resync's requests ([`can_disturb_resync`]), or a stall or silent death of the process's
//! resync task. A worker process that exits or whose node goes down owes nothing more.
//!
//! There is no periodic duty to check: upstream 80d666fd13 removed the periodic resync thread
//! (mech_calico.py `periodic_resync_thread`, lines 1251-1308 at its parent 5acc5f9806), and
//! `resync_interval_secs` has no effect at 87c15906 (lines 142-152).
//!
//! Reads (observations only): which processes start and stop (`ProcessStart` with the worker
//! name upstream's `get_workers` gives, `ProcessExit`, `NodeCrash`, `NodeBoot`), the model's
//! `CalicoResync` events (which process, whether it succeeded), the schedule's faults and the
//! world's task faults. Calls no model function.

use super::stability::cut_between;
use super::{secs, CalicoMonitor, STARTUP_RESYNC_BOUND_US};
use crate::calico::bounds::us;
use crate::calico::invariants::STARTUP_RESYNC_COMPLETES;
use model::calico::ETCD_TIMEOUT;
use sim::{Failure, FaultKind, Kind, Measured, NodeIx};
use std::collections::BTreeMap;

/// The startup-resync worker's process name.
const RESYNC_WORKER: &str = "neutron-server/resync";
/// The resync task of that process.
const RESYNC_TASK: &str = "resync";
/// The nodes a resync talks to besides its own host.
const PEERS: [&str; 2] = ["etcd", "neutron-db"];

/// A resync still owed by one worker process.
#[derive(Clone, Copy)]
struct Owed {
    /// The process's start.
    start_us: u64,
    /// When its resync failed (None: not yet ended).
    failed_us: Option<u64>,
}

/// Startup resyncs still owed, per worker process (node, pid).
#[derive(Default)]
pub(super) struct StartupResyncs {
    owed: BTreeMap<(NodeIx, u32), Owed>,
}

/// Whether `fault` can fail or delay the resync of a worker on `host`, which sends requests to
/// etcd and the Neutron DB: the host paused, cut off or slowed (its requests wait, time out or
/// fail); etcd or the Neutron DB down, paused, cut off, slowed, restarted, unavailable, ambiguous,
/// slow or garbling; a cut between the host and either. Not a crash or restart of the host's own
/// services (they end the worker process, and with it the duty) nor clock steps or drift (a
/// resync reads no clock for its work).
fn can_disturb_resync(fault: &FaultKind, host: &str) -> bool {
    let peer = |n: &str| PEERS.contains(&n);
    match fault {
        FaultKind::Pause { node }
        | FaultKind::Isolate { node }
        | FaultKind::Latency { node, .. }
        | FaultKind::Loss { node, .. } => node == host || peer(node),
        FaultKind::Crash { node }
        | FaultKind::ServiceRestart { node }
        | FaultKind::ProcessCrash { node, .. }
        | FaultKind::ServiceUnavailable { node }
        | FaultKind::ServiceAmbiguous { node, .. }
        | FaultKind::ServiceSlow { node, .. }
        | FaultKind::ServiceGarbled { node, .. } => peer(node),
        FaultKind::Partition { a, b } => PEERS.iter().any(|p| cut_between(a, b, host, p)),
        FaultKind::Simplex { from, to } => PEERS.iter().any(|p| cut_between(from, to, host, p)),
        _ => false,
    }
}

impl CalicoMonitor {
    /// A process started: a startup-resync worker owes one resync.
    pub(super) fn resync_worker_start(&mut self, node: NodeIx, pid: u32, name: &str, t: u64) {
        if name == RESYNC_WORKER {
            let owed = Owed {
                start_us: t,
                failed_us: None,
            };
            self.startup_resyncs.owed.insert((node, pid), owed);
        }
    }

    /// A process exited (or its node went down: `pid` None): it owes nothing more.
    pub(super) fn resync_worker_gone(&mut self, node: NodeIx, pid: Option<u32>) {
        self.startup_resyncs
            .owed
            .retain(|&(n, p), _| n != node || pid.is_some_and(|pid| pid != p));
    }

    /// The resync of worker `pid` on `node` ended at `t` (`ok` false: it failed).
    pub(super) fn on_resync(&mut self, node: NodeIx, pid: u32, ok: bool, t: u64) {
        if ok {
            self.startup_resyncs.owed.remove(&(node, pid));
        } else if let Some(owed) = self.startup_resyncs.owed.get_mut(&(node, pid)) {
            owed.failed_us = Some(t);
        }
    }

    /// Whether the resync of worker `pid` on `node`, started at `start`, may have been failed or
    /// delayed by something in force by `due`.
    fn resync_disturbed(&self, node: NodeIx, pid: u32, start: u64, due: u64) -> bool {
        let host = &self.names[node as usize];
        let from = start.saturating_sub(us(ETCD_TIMEOUT));
        let fault = self
            .fault_log
            .values()
            .any(|f| f.overlaps(from, due) && can_disturb_resync(&f.fault, host));
        let task = self
            .task_faults
            .iter()
            .any(|f| (f.node, f.pid) == (node, pid) && f.task == RESYNC_TASK && f.start_us <= due);
        fault || task
    }

    /// `startup-resync-completes`, checked every simulated second: the first worker past its
    /// deadline whose resync was not disturbed fails it; a disturbed one owes nothing more.
    pub(super) fn startup_resync_overdue(&mut self, now: u64) -> Option<Failure> {
        let late: Vec<((NodeIx, u32), Owed)> = self
            .startup_resyncs
            .owed
            .iter()
            .filter(|(_, o)| now > o.start_us + STARTUP_RESYNC_BOUND_US)
            .map(|(&k, &o)| (k, o))
            .collect();
        for ((node, pid), o) in late {
            let (start, failed) = (o.start_us, o.failed_us);
            self.startup_resyncs.owed.remove(&(node, pid));
            let due = start + STARTUP_RESYNC_BOUND_US;
            if self.resync_disturbed(node, pid, start, due) {
                continue;
            }
            let what = match failed {
                Some(t) => format!("its resync failed at {} and is abandoned", secs(t)),
                None => "it has not ended its resync".to_string(),
            };
            let name = self.names[node as usize].clone();
            return Some(Failure {
                invariant: STARTUP_RESYNC_COMPLETES.name,
                kind: Kind::Liveness,
                node: Some(node),
                explanation: format!(
                    "the startup-resync worker {name}:{pid} started at {} and nothing disturbed it, etcd or the Neutron DB from {} on, but by {} {what}{}",
                    secs(start),
                    secs(start.saturating_sub(us(ETCD_TIMEOUT))),
                    secs(due),
                    self.fault_note(node)
                ),
                measured: Measured::bounded(now - start, STARTUP_RESYNC_BOUND_US),
            });
        }
        None
    }
}
