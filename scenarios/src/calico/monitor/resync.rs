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
//! may have failed it. A resync reads etcd and, through the ML2 plugin, the Neutron DB (each
//! syncer reads etcd, then Neutron: syncer.py `ResourceSyncer.resync`, lines 109-339; the
//! plugin's getters retry database errors with backoff, the endpoint syncer's bulk side-data
//! read does not), so a disturbance is a fault that can fail or delay its requests to either
//! ([`disturbs_requests`]), in force between the deadline and `etcd_timeout` before the start
//! for etcd (a request etcd held may still be waiting out its timeout) or the start for the
//! Neutron DB; or a stall or silent death of the process's resync task. A worker process that
//! exits or whose node goes down owes nothing more.
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
/// The etcd node, which every syncer reads first.
const ETCD: &str = "etcd";
/// The Neutron database's node, which every syncer reads through the ML2 plugin.
const NEUTRON_DB: &str = "neutron-db";

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

/// Whether `fault` can fail or delay a request of a worker on `host` to the service on `peer`:
/// the host or the peer paused, cut off, slowed or lossy (its requests wait, time out or fail);
/// the peer's service down, restarted, unavailable, ambiguous or slow; a cut between the two; or,
/// where the service can answer garbled (`garbles`: etcd, not the Neutron DB), garbling. Not a
/// crash or restart of the host's own services (they end the worker process, and with it the
/// duty) nor clock steps or drift (a resync reads no clock for its work).
fn disturbs_requests(fault: &FaultKind, host: &str, peer: &str, garbles: bool) -> bool {
    match fault {
        FaultKind::Pause { node }
        | FaultKind::Isolate { node }
        | FaultKind::Latency { node, .. }
        | FaultKind::Loss { node, .. } => node == host || node == peer,
        FaultKind::Crash { node }
        | FaultKind::ServiceRestart { node }
        | FaultKind::ProcessCrash { node, .. }
        | FaultKind::ServiceUnavailable { node }
        | FaultKind::ServiceAmbiguous { node, .. }
        | FaultKind::ServiceSlow { node, .. } => node == peer,
        FaultKind::ServiceGarbled { node, .. } => garbles && node == peer,
        FaultKind::Partition { a, b } => cut_between(a, b, host, peer),
        FaultKind::Simplex { from, to } => cut_between(from, to, host, peer),
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
    /// delayed by something in force by `due`: a fault that can disturb its etcd requests from
    /// `etcd_timeout` before its start on (a request etcd held may still be waiting out its
    /// timeout), one that can disturb its Neutron DB reads from its start on (each read is sent
    /// after it, and a database fault acts only on the statements it serves meanwhile), or a
    /// stall or silent death of its resync task.
    fn resync_disturbed(&self, node: NodeIx, pid: u32, start: u64, due: u64) -> bool {
        let host = &self.names[node as usize];
        let etcd_from = start.saturating_sub(us(ETCD_TIMEOUT));
        let fault = self.fault_log.values().any(|f| {
            let etcd = f.overlaps(etcd_from, due) && disturbs_requests(&f.fault, host, ETCD, true);
            let db = f.overlaps(start, due) && disturbs_requests(&f.fault, host, NEUTRON_DB, false);
            etcd || db
        });
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
                    "the startup-resync worker {name}:{pid} started at {} and nothing disturbed it, its etcd requests from {} on or its Neutron DB reads from its start on, but by {} {what}{}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The Neutron DB's faults excuse a resync as the model reads it: an outage or a slow
    /// database delays or fails the plugin's reads, and a cut between the host and the database
    /// holds them up; the database never answers garbled, so a garbling fault on it excuses
    /// nothing, while one on etcd does.
    #[test]
    fn resync_excuses_the_neutron_db_faults_that_reach_its_reads() {
        let db = || NEUTRON_DB.to_string();
        let down = FaultKind::ServiceUnavailable { node: db() };
        let slow = FaultKind::ServiceSlow {
            node: db(),
            extra_ms: 500,
        };
        let cut = FaultKind::Partition {
            a: vec!["h1".into()],
            b: vec![db()],
        };
        for f in [&down, &slow, &cut] {
            assert!(disturbs_requests(f, "h1", NEUTRON_DB, false), "{f:?}");
            assert!(!disturbs_requests(f, "h1", ETCD, true), "{f:?}");
        }
        assert!(!disturbs_requests(&cut, "h2", NEUTRON_DB, false));
        let garbled = |node: &str| FaultKind::ServiceGarbled {
            node: node.into(),
            percent: 50,
        };
        assert!(!disturbs_requests(
            &garbled(NEUTRON_DB),
            "h1",
            NEUTRON_DB,
            false
        ));
        assert!(disturbs_requests(&garbled(ETCD), "h1", ETCD, true));
    }
}
