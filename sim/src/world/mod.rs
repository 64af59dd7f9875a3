//! The world: the one owner of all simulated state in a run.
//!
//! A [`World`] holds the nodes (with their clocks, processes and named tasks), the network's fault
//! rules, the per-service fault modes and the event bus (monitor + trace hash). Everything is
//! single-threaded (`Rc`/`RefCell`): a run lives on one OS thread, inside one madsim runtime.
//! Collections are `Vec`s indexed by node and `BTreeMap`s, so iteration order never depends on
//! hashing.
//!
//! Model code never touches the world directly: it gets a [`Proc`] (its process) and the clients of
//! the simulated services, exactly as real code sees its environment.

use crate::event::{Event, ExitStatus, NodeIx};
use crate::fault::{Fault, FaultKind};
use crate::monitor::Monitor;
use crate::rng;
use crate::sync::Notify;
use madsim::time::Instant;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

mod bus;
mod clocks;
mod processes;

use bus::Bus;
pub(crate) use bus::Finished;
use processes::NodeState;
pub use processes::{Host, Proc};

/// Starts a node's services (at every boot and after a graceful service restart).
pub type Services = Rc<dyn Fn(&Host)>;

/// Static description of a node.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Unique name (`h1`, `etcd`, ...).
    pub name: String,
    /// Wall clock offset at true time 0 (µs).
    pub offset_us: i64,
    /// Initial wall clock drift (ppm).
    pub drift_ppm: i64,
}

/// Network parameters of a run.
#[derive(Clone, Debug)]
pub struct NetSpec {
    /// One-way latency lower bound (µs).
    pub latency_min_us: u64,
    /// One-way latency upper bound (µs).
    pub latency_max_us: u64,
}

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
}

pub(crate) struct NetRule {
    pub(crate) from: Vec<NodeIx>,
    pub(crate) to: Vec<NodeIx>,
    pub(crate) both_ways: bool,
}

pub(crate) struct Net {
    pub(crate) spec: NetSpec,
    pub(crate) rules: BTreeMap<u32, NetRule>,
    pub(crate) extra_us: BTreeMap<u32, (NodeIx, u64)>,
    pub(crate) rng: ChaCha8Rng,
}

pub(crate) struct Inner {
    pub(crate) seed: u64,
    start: Instant,
    /// madsim's elapsed time at `start` (now = elapsed - this: no `Instant` arithmetic).
    start_elapsed: Duration,
    /// The runtime's clock, held so that reading true time skips the `clock_gettime` hook.
    time: madsim::time::TimeHandle,
    handle: madsim::runtime::Handle,
    pub(crate) nodes: RefCell<Vec<NodeState>>,
    pub(crate) net: RefCell<Net>,
    services: RefCell<Vec<ServiceFaults>>,
    active: RefCell<BTreeMap<u32, FaultKind>>,
    bus: RefCell<Bus>,
    pub(crate) stopped: Notify,
    /// Messages carried (for the raw-madsim baseline; the timers are counted by `crate::time`).
    pub(crate) messages: Cell<u64>,
}

/// Handle to the world of the current run (cheap to clone).
#[derive(Clone)]
pub struct World(pub(crate) Rc<Inner>);

impl World {
    /// Creates the world and its madsim nodes. Must be called inside the run's runtime, by
    /// [`crate::runtime::simulate`], whose polls (like those of the world's tasks) mark where true
    /// time may have moved (see `now_us`).
    pub(crate) fn new(
        seed: u64,
        nodes: &[NodeSpec],
        net: NetSpec,
        monitor: Box<dyn Monitor>,
        trace: bool,
    ) -> World {
        let handle = madsim::runtime::Handle::current();
        let time = madsim::time::TimeHandle::current();
        let states = nodes
            .iter()
            .map(|n| NodeState::new(n, handle.create_node().name(n.name.clone()).build().id()))
            .collect::<Vec<_>>();
        let n = states.len();
        World(Rc::new(Inner {
            seed,
            start: time.now_instant(),
            start_elapsed: time.elapsed(),
            time,
            handle,
            nodes: RefCell::new(states),
            net: RefCell::new(Net {
                spec: net,
                rules: BTreeMap::new(),
                extra_us: BTreeMap::new(),
                rng: rng::rng_for(seed, "net"),
            }),
            services: RefCell::new(vec![ServiceFaults::default(); n]),
            active: RefCell::new(BTreeMap::new()),
            bus: RefCell::new(Bus::new(monitor, trace)),
            stopped: Notify::new(),
            messages: Cell::new(0),
        }))
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.0.seed
    }

    /// True time since the start of the run (µs).
    pub fn now_us(&self) -> u64 {
        (self.0.time.elapsed() - self.0.start_elapsed).as_micros() as u64
    }

    pub fn instant_at(&self, t_us: u64) -> Instant {
        self.0.start + Duration::from_micros(t_us)
    }

    /// Messages carried so far (with the timers the run registered: the load a raw-madsim
    /// baseline reproduces).
    pub fn messages(&self) -> u64 {
        self.0.messages.get()
    }

    /// Index of the node with this name.
    pub fn node(&self, name: &str) -> Option<NodeIx> {
        self.0
            .nodes
            .borrow()
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as NodeIx)
    }

    /// Name of a node.
    pub fn node_name(&self, node: NodeIx) -> String {
        self.0.nodes.borrow()[node as usize].name.clone()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.0.nodes.borrow().len()
    }

    /// Current fault modes of the service on `node`.
    pub fn service_faults(&self, node: NodeIx) -> ServiceFaults {
        self.0.services.borrow()[node as usize]
    }

    /// Applies the start of scheduled fault `id`.
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
            | ServiceGarbled { .. } => {}
        }
        if fault.dur_ms > 0 {
            self.0.active.borrow_mut().insert(id, kind.clone());
            self.recompute_services();
        }
        later
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
            | ServiceGarbled { .. } => {}
        }
        self.recompute_services();
    }

    /// Ids of the faults in force.
    pub(crate) fn active_faults(&self) -> Vec<u32> {
        self.0.active.borrow().keys().copied().collect()
    }

    pub(crate) fn apply_pending(&self, action: PendingAction) {
        match action {
            PendingAction::KillIfAlive(node, pids) => {
                for pid in pids {
                    self.end_process(node, pid, ExitStatus::Killed);
                }
            }
        }
    }

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
