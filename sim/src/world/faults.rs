//! Applying scheduled faults: each fault's start and end (the network's fault rules here, node,
//! process, task and clock faults through the methods that own that state), the follow-up actions
//! a fault schedules, and the per-service fault modes recomputed from the faults in force.

use super::{NetSpec, World};
use crate::event::{Event, ExitStatus, NodeIx};
use crate::fault::{Fault, FaultKind};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Per-service fault modes, recomputed from the active faults.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServiceFaults {
    /// Refuse every request.
    pub unavailable: bool,
    /// Percentage of requests that time out ambiguously.
    pub ambiguous_percent: u32,
    /// Extra service time per request (µs).
    pub slow_us: u64,
    /// Percentage of replies that arrive garbled.
    pub garbled_percent: u32,
    /// The oldest a read's view may be (µs; 0: reads see the present).
    pub stale_lag_us: u64,
    /// The share (0-100) of the request rate other clients take (0: none).
    pub throttle_percent: u32,
}

/// A network fault rule: messages from `from` to `to` (and back, if `both_ways`) are dropped.
pub(crate) struct NetRule {
    pub(crate) from: Vec<NodeIx>,
    pub(crate) to: Vec<NodeIx>,
    pub(crate) both_ways: bool,
}

/// The network's state: its parameters, the fault rules and extra latencies in force (by fault
/// id), and the latency draws (see `crate::net`).
pub(crate) struct Net {
    pub(crate) spec: NetSpec,
    pub(crate) rules: BTreeMap<u32, NetRule>,
    pub(crate) extra_us: BTreeMap<u32, (NodeIx, u64)>,
    /// Lossy links in force, by fault id.
    pub(crate) loss: BTreeMap<u32, crate::net::LossyLink>,
    pub(crate) rng: ChaCha8Rng,
}

impl World {
    /// Current fault modes of the service on `node`.
    pub fn service_faults(&self, node: NodeIx) -> ServiceFaults {
        self.0.services.borrow()[node as usize]
    }

    /// Applies the start of scheduled fault `id`; returns the follow-up actions it schedules, with
    /// the true time (µs) at which each is due.
    pub(crate) fn start_fault(&self, id: u32, fault: &Fault) -> Vec<(u64, PendingAction)> {
        let mut later = Vec::new();
        let kind = &fault.kind;
        let first = kind.nodes().first().and_then(|n| self.node(n)).unwrap_or(0);
        self.emit(
            first,
            Event::FaultStart {
                id,
                dur_ms: fault.dur_ms,
                fault: kind.clone(),
            },
        );
        let now = self.now_us();
        use FaultKind::*;
        match kind {
            Partition { .. } | Simplex { .. } | Isolate { .. } | Latency { .. } | Loss { .. } => {
                self.start_network_fault(id, kind)
            }
            Pause { node } => {
                if let Some(n) = self.node(node) {
                    self.pause(n);
                }
            }
            Crash { node } => {
                if let Some(n) = self.node(node) {
                    self.crash_for_fault(n, id);
                }
            }
            ClockStep { node, delta_ms } => {
                if let Some(n) = self.node(node) {
                    self.step_clock(n, now, *delta_ms);
                }
            }
            Drift { node, ppm } => {
                if let Some(n) = self.node(node) {
                    self.set_drift(n, now, *ppm);
                }
            }
            ClockRate { node, ppm } => {
                if let Some(n) = self.node(node) {
                    self.set_mono_rate(n, now, *ppm);
                }
            }
            TaskDeath { node, task } => {
                if let Some(n) = self.node(node) {
                    self.kill_task(n, task);
                }
            }
            TaskStall { node, task } => {
                if let Some(n) = self.node(node) {
                    self.stall_task(n, task, now, fault.dur_ms);
                }
            }
            ProcessCrash { node, process } => {
                if let Some(n) = self.node(node) {
                    self.kill_process_named(n, process);
                }
            }
            ServiceRestart { node } => {
                if let Some(n) = self.node(node) {
                    // Ask every live process to terminate; kill whatever is left after a grace period.
                    let pids = self.terminate_all(n);
                    later.push((
                        now + TERMINATE_GRACE_US,
                        PendingAction::KillIfAlive(n, pids),
                    ));
                }
            }
            ServiceUnavailable { .. }
            | ServiceAmbiguous { .. }
            | ServiceSlow { .. }
            | ServiceGarbled { .. }
            | StaleReads { .. }
            | Throttling { .. } => {}
        }
        if fault.dur_ms > 0 {
            self.0.active.borrow_mut().insert(id, kind.clone());
            self.recompute_services();
        }
        later
    }

    /// Starts a fault of the network: a cut (partition, simplex, isolation), extra latency or a
    /// lossy link, kept as rule `id` until the fault ends.
    fn start_network_fault(&self, id: u32, kind: &FaultKind) {
        let resolve = |names: &[String]| {
            names
                .iter()
                .filter_map(|n| self.node(n))
                .collect::<Vec<_>>()
        };
        use FaultKind::*;
        match kind {
            Partition { a, b } => {
                let rule = NetRule {
                    from: resolve(a),
                    to: resolve(b),
                    both_ways: true,
                };
                self.0.net.borrow_mut().rules.insert(id, rule);
            }
            Simplex { from, to } => {
                let rule = NetRule {
                    from: resolve(from),
                    to: resolve(to),
                    both_ways: false,
                };
                self.0.net.borrow_mut().rules.insert(id, rule);
            }
            Isolate { node } => {
                if let Some(n) = self.node(node) {
                    let others = (0..self.node_count() as NodeIx)
                        .filter(|&o| o != n)
                        .collect();
                    self.0.net.borrow_mut().rules.insert(
                        id,
                        NetRule {
                            from: vec![n],
                            to: others,
                            both_ways: true,
                        },
                    );
                }
            }
            Latency { node, extra_ms } => {
                if let Some(n) = self.node(node) {
                    self.0
                        .net
                        .borrow_mut()
                        .extra_us
                        .insert(id, (n, extra_ms * 1000));
                }
            }
            Loss {
                node,
                permille,
                burst,
            } => {
                if let Some(n) = self.node(node) {
                    let link = crate::net::LossyLink::new(n, *permille, *burst);
                    self.0.net.borrow_mut().loss.insert(id, link);
                }
            }
            _ => {}
        }
    }

    /// Applies the end of fault `id` (its duration elapsed, or the liveness phase heals it).
    pub(crate) fn end_fault(&self, id: u32) {
        let Some(kind) = self.0.active.borrow_mut().remove(&id) else {
            return;
        };
        let first = kind.nodes().first().and_then(|n| self.node(n)).unwrap_or(0);
        let now = self.now_us();
        // The end is announced before its effects (a reboot, a resume), which follow as their own events.
        self.emit(first, Event::FaultEnd { id });
        use FaultKind::*;
        match &kind {
            Partition { .. } | Simplex { .. } | Isolate { .. } => {
                self.0.net.borrow_mut().rules.remove(&id);
            }
            Latency { .. } => {
                self.0.net.borrow_mut().extra_us.remove(&id);
            }
            Loss { .. } => {
                self.0.net.borrow_mut().loss.remove(&id);
            }
            Pause { node } => {
                if let Some(n) = self.node(node) {
                    self.resume(n);
                }
            }
            Crash { node } => {
                if let Some(n) = self.node(node) {
                    self.reboot_after_fault(n, id);
                }
            }
            Drift { node, .. } => {
                if let Some(n) = self.node(node) {
                    self.set_drift(n, now, 0);
                }
            }
            ClockRate { node, .. } => {
                if let Some(n) = self.node(node) {
                    self.set_mono_rate(n, now, 0);
                }
            }
            TaskStall { node, task } => {
                if let Some(n) = self.node(node) {
                    self.end_stall(n, task, now);
                }
            }
            ServiceRestart { node } => {
                if let Some(n) = self.node(node) {
                    self.restart_services(n);
                }
            }
            ClockStep { .. } | TaskDeath { .. } | ProcessCrash { .. } => {}
            ServiceUnavailable { .. }
            | ServiceAmbiguous { .. }
            | ServiceSlow { .. }
            | ServiceGarbled { .. }
            | StaleReads { .. }
            | Throttling { .. } => {}
        }
        self.recompute_services();
    }

    /// Ids of the faults in force.
    pub(crate) fn active_faults(&self) -> Vec<u32> {
        self.0.active.borrow().keys().copied().collect()
    }

    /// Carries out a follow-up action a fault scheduled (see [`World::start_fault`]).
    pub(crate) fn apply_pending(&self, action: PendingAction) {
        match action {
            PendingAction::KillIfAlive(node, pids) => {
                for pid in pids {
                    self.end_process(node, pid, ExitStatus::Killed);
                }
            }
        }
    }

    /// Recomputes every node's service fault modes from the faults in force.
    fn recompute_services(&self) {
        let mut s = vec![ServiceFaults::default(); self.node_count()];
        for kind in self.0.active.borrow().values() {
            use FaultKind::*;
            let (node, f): (&str, fn(&mut ServiceFaults, &FaultKind)) = match kind {
                ServiceUnavailable { node } => (node, |s, _| s.unavailable = true),
                ServiceAmbiguous { node, .. } => (node, |s, k| {
                    if let ServiceAmbiguous { percent, .. } = k {
                        s.ambiguous_percent = s.ambiguous_percent.max(*percent).min(100)
                    }
                }),
                ServiceSlow { node, .. } => (node, |s, k| {
                    if let ServiceSlow { extra_ms, .. } = k {
                        s.slow_us += extra_ms * 1000
                    }
                }),
                ServiceGarbled { node, .. } => (node, |s, k| {
                    if let ServiceGarbled { percent, .. } = k {
                        s.garbled_percent = s.garbled_percent.max(*percent).min(100)
                    }
                }),
                StaleReads { node, .. } => (node, |s, k| {
                    if let StaleReads { lag_ms, .. } = k {
                        s.stale_lag_us = s.stale_lag_us.max(lag_ms * 1000)
                    }
                }),
                Throttling { node, .. } => (node, |s, k| {
                    if let Throttling { percent, .. } = k {
                        s.throttle_percent = s.throttle_percent.max(*percent).min(100)
                    }
                }),
                _ => continue,
            };
            if let Some(n) = self.node(node) {
                f(&mut s[n as usize], kind);
            }
        }
        *self.0.services.borrow_mut() = s;
    }
}

/// How long a process asked to terminate may take before it is killed.
pub const TERMINATE_GRACE_US: u64 = 10_000_000;

/// Follow-up actions a fault schedules for itself.
pub(crate) enum PendingAction {
    /// Kill these processes if they are still alive (terminate grace period over).
    KillIfAlive(NodeIx, Vec<u32>),
}
