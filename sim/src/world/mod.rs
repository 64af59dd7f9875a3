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

use crate::clock::NodeClock;
use crate::event::{Event, ExitStatus, NodeIx};
use crate::fault::{Fault, FaultKind};
use crate::monitor::Monitor;
use crate::rng;
use crate::sync::{Local, Notify};
use madsim::time::Instant;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

mod bus;

use bus::Bus;
pub(crate) use bus::Finished;

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

pub(crate) struct TaskSlot {
    abort: madsim::task::AbortHandle,
    stall_until_us: Rc<Cell<u64>>,
    /// The task's waker while it is held back by a stall (ending the stall early wakes it).
    stall_waker: Rc<RefCell<Option<std::task::Waker>>>,
}

pub(crate) struct ProcState {
    name: String,
    alive: bool,
    tasks: BTreeMap<String, TaskSlot>,
    exited: Notify,
    exit_status: Option<ExitStatus>,
    terminate: Notify,
    terminate_requested: bool,
}

pub(crate) struct NodeState {
    pub(crate) name: String,
    msim: madsim::task::NodeId,
    pub(crate) clock: NodeClock,
    pub(crate) clock_changed: Notify,
    pub(crate) up: bool,
    paused: u32,
    crashed_by: Option<u32>,
    boots: u32,
    next_pid: u32,
    procs: BTreeMap<u32, ProcState>,
    services: Option<Services>,
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
            .map(|n| NodeState {
                name: n.name.clone(),
                msim: handle.create_node().name(n.name.clone()).build().id(),
                clock: NodeClock::new(n.offset_us, n.drift_ppm),
                clock_changed: Notify::new(),
                up: false,
                paused: 0,
                crashed_by: None,
                boots: 0,
                next_pid: 1000,
                procs: BTreeMap::new(),
                services: None,
            })
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

    /// Whether the node is up (booted and not crashed).
    pub fn node_up(&self, node: NodeIx) -> bool {
        self.0.nodes.borrow()[node as usize].up
    }

    /// How many times the node has booted (a TCP peer that rebooted resets old connections).
    pub fn boots(&self, node: NodeIx) -> u32 {
        self.0.nodes.borrow()[node as usize].boots
    }

    /// Whether the node is up and not paused (its processes run).
    pub fn node_running(&self, node: NodeIx) -> bool {
        let n = &self.0.nodes.borrow()[node as usize];
        n.up && n.paused == 0
    }

    /// The node's wall clock now (µs, see `clock`).
    pub fn wall_us(&self, node: NodeIx) -> i64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize].clock.wall_at(now)
    }

    /// The node's monotonic clock now (µs since boot, at the node's monotonic rate).
    pub fn mono_us(&self, node: NodeIx) -> u64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize].clock.mono_at(now)
    }

    /// The earliest true time at which the node's monotonic clock reads `mono_us`, assuming its
    /// current rate holds (see `NodeClock::true_time_for_mono`).
    pub fn true_time_for_mono(&self, node: NodeIx, mono_us: u64) -> u64 {
        self.0.nodes.borrow()[node as usize]
            .clock
            .true_time_for_mono(mono_us)
    }

    /// The node's current monotonic rate (ppm; 0: the true rate).
    pub fn mono_rate_ppm(&self, node: NodeIx) -> i64 {
        self.0.nodes.borrow()[node as usize].clock.mono_rate_ppm()
    }

    /// A copy of the node's clock (for reports and local-time conversions).
    pub fn clock(&self, node: NodeIx) -> NodeClock {
        self.0.nodes.borrow()[node as usize].clock.clone()
    }

    /// Signal notified whenever the node's wall clock is stepped or changes rate.
    pub fn clock_notify(&self, node: NodeIx) -> Notify {
        self.0.nodes.borrow()[node as usize].clock_changed.clone()
    }

    /// The earliest true time at which the node's wall clock reads `wall_us` (now if it already
    /// does), assuming no further clock changes.
    pub fn true_time_for_wall(&self, node: NodeIx, wall_us: i64) -> u64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize]
            .clock
            .true_time_for_wall(wall_us, now)
    }

    /// Current fault modes of the service on `node`.
    pub fn service_faults(&self, node: NodeIx) -> ServiceFaults {
        self.0.services.borrow()[node as usize]
    }

    /// Registers the function that starts the node's services.
    pub fn set_services(&self, node: NodeIx, services: Services) {
        self.0.nodes.borrow_mut()[node as usize].services = Some(services);
    }

    /// Ends the run: kills every node (madsim wakes their tasks so the executor drops them) and
    /// drops the service closures. Without this, a task parked on a channel that the world itself
    /// reaches keeps the whole world alive: a leak per run.
    pub(crate) fn shutdown(&self) {
        let mut nodes = self.0.nodes.borrow_mut();
        for n in nodes.iter_mut() {
            self.0.handle.kill(n.msim);
            n.services = None;
            n.procs.clear();
        }
    }

    // ---------------------------------------------------------------- nodes and processes

    /// Boots a node: it comes up, its monotonic clock restarts, and its services start.
    pub fn boot(&self, node: NodeIx) {
        let now = self.now_us();
        let boot = {
            let mut nodes = self.0.nodes.borrow_mut();
            let n = &mut nodes[node as usize];
            if n.boots > 0 {
                self.0.handle.restart(n.msim);
                n.clock.reboot(now);
            }
            n.up = true;
            n.paused = 0;
            n.boots += 1;
            n.boots
        };
        self.emit(node, Event::NodeBoot { boot });
        self.start_services(node);
    }

    fn start_services(&self, node: NodeIx) {
        let services = self.0.nodes.borrow()[node as usize].services.clone();
        if let Some(s) = services {
            s(&Host {
                world: self.clone(),
                node,
            });
        }
    }

    fn crash(&self, node: NodeIx) {
        {
            let mut nodes = self.0.nodes.borrow_mut();
            let n = &mut nodes[node as usize];
            self.0.handle.kill(n.msim);
            n.up = false;
            n.paused = 0;
            n.procs.clear();
        }
        self.emit(node, Event::NodeCrash);
    }

    fn new_process(&self, node: NodeIx, name: &str) -> Proc {
        let pid = {
            let mut nodes = self.0.nodes.borrow_mut();
            let n = &mut nodes[node as usize];
            let pid = n.next_pid;
            n.next_pid += 1;
            n.procs.insert(
                pid,
                ProcState {
                    name: name.to_string(),
                    alive: true,
                    tasks: BTreeMap::new(),
                    exited: Notify::new(),
                    exit_status: None,
                    terminate: Notify::new(),
                    terminate_requested: false,
                },
            );
            pid
        };
        self.emit(
            node,
            Event::ProcessStart {
                pid,
                name: name.to_string(),
            },
        );
        let ident = format!("{}:{pid}", self.0.nodes.borrow()[node as usize].name).into();
        Proc {
            world: self.clone(),
            node,
            pid,
            ident,
        }
    }

    /// Ends a process: its tasks are dropped (no cleanup runs) and waiters learn its status.
    fn end_process(&self, node: NodeIx, pid: u32, status: ExitStatus) {
        let (name, tasks, exited) = {
            let mut nodes = self.0.nodes.borrow_mut();
            let Some(p) = nodes[node as usize].procs.get_mut(&pid) else {
                return;
            };
            if !p.alive {
                return;
            }
            p.alive = false;
            p.exit_status = Some(status.clone());
            (
                p.name.clone(),
                std::mem::take(&mut p.tasks),
                p.exited.clone(),
            )
        };
        for slot in tasks.values() {
            slot.abort.abort();
        }
        self.emit(node, Event::ProcessExit { pid, name, status });
        exited.notify();
    }

    fn find_process(&self, node: NodeIx, pred: impl Fn(&ProcState) -> bool) -> Option<u32> {
        let nodes = self.0.nodes.borrow();
        nodes[node as usize]
            .procs
            .iter()
            .rev()
            .find(|(_, p)| p.alive && pred(p))
            .map(|(pid, _)| *pid)
    }

    fn spawn_task(
        &self,
        node: NodeIx,
        pid: u32,
        name: &str,
        fut: Pin<Box<dyn Future<Output = ()>>>,
    ) {
        let stall = Rc::new(Cell::new(0u64));
        let stall_id = stall.clone();
        let stall_waker: Rc<RefCell<Option<std::task::Waker>>> = Rc::default();
        let world = self.clone();
        let task_name = name.to_string();
        let wrapped = Stallable {
            world: self.clone(),
            until_us: stall.clone(),
            waker: stall_waker.clone(),
            sleep: None,
            inner: fut,
        };
        let body = async move {
            wrapped.await;
            // Finished normally: forget the slot so that later faults do not target it, unless a
            // newer task of the same name holds it now (a loop that spawned a successor while
            // this one was still winding down).
            let removed = {
                let mut nodes = world.0.nodes.borrow_mut();
                match nodes[node as usize].procs.get_mut(&pid) {
                    Some(p) if p.alive => {
                        let own = p
                            .tasks
                            .get(&task_name)
                            .is_some_and(|slot| Rc::ptr_eq(&slot.stall_until_us, &stall_id));
                        own && p.tasks.remove(&task_name).is_some()
                    }
                    _ => false,
                }
            };
            if removed {
                world.emit(
                    node,
                    Event::TaskEnd {
                        pid,
                        task: task_name,
                    },
                );
            }
        };
        let msim = self.0.nodes.borrow()[node as usize].msim;
        let spawner = self.0.handle.get_node(msim).expect("node exists");
        let jh = spawner.spawn(Local::new(body));
        let mut nodes = self.0.nodes.borrow_mut();
        if let Some(p) = nodes[node as usize].procs.get_mut(&pid) {
            if p.alive {
                p.tasks.insert(
                    name.to_string(),
                    TaskSlot {
                        abort: jh.abort_handle(),
                        stall_until_us: stall,
                        stall_waker,
                    },
                );
                return;
            }
        }
        jh.abort();
    }

    // ---------------------------------------------------------------- faults

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
                    let pause = {
                        let mut nodes = self.0.nodes.borrow_mut();
                        let st = &mut nodes[n as usize];
                        st.paused += 1;
                        st.up && st.paused == 1
                    };
                    if pause {
                        self.0.handle.pause(self.0.nodes.borrow()[n as usize].msim);
                        self.emit(n, Event::NodePause);
                    }
                }
            }
            Crash { node } => {
                if let Some(n) = self.node(node) {
                    let up = self.0.nodes.borrow()[n as usize].up;
                    if up {
                        self.0.nodes.borrow_mut()[n as usize].crashed_by = Some(id);
                        self.crash(n);
                    }
                }
            }
            ClockStep { node, delta_ms } => {
                if let Some(n) = self.node(node) {
                    self.change_clock(n, |c| c.step(now, delta_ms * 1000));
                    self.emit(
                        n,
                        Event::ClockStep {
                            delta_ms: *delta_ms,
                        },
                    );
                }
            }
            Drift { node, ppm } => {
                if let Some(n) = self.node(node) {
                    self.change_clock(n, |c| c.set_drift(now, *ppm));
                    self.emit(n, Event::ClockDrift { ppm: *ppm });
                }
            }
            ClockRate { node, ppm } => {
                if let Some(n) = self.node(node) {
                    self.set_mono_rate(n, now, *ppm);
                }
            }
            TaskDeath { node, task } => {
                if let Some(n) = self.node(node) {
                    if let Some(pid) = self.find_process(n, |p| p.tasks.contains_key(task)) {
                        let slot = self.0.nodes.borrow_mut()[n as usize]
                            .procs
                            .get_mut(&pid)
                            .unwrap()
                            .tasks
                            .remove(task);
                        if let Some(slot) = slot {
                            slot.abort.abort();
                            self.emit(
                                n,
                                Event::TaskDeath {
                                    pid,
                                    task: task.clone(),
                                },
                            );
                        }
                    }
                }
            }
            TaskStall { node, task } => {
                if let Some(n) = self.node(node) {
                    if let Some(pid) = self.find_process(n, |p| p.tasks.contains_key(task)) {
                        let until = now + fault.dur_ms * 1000;
                        let nodes = self.0.nodes.borrow();
                        nodes[n as usize].procs[&pid].tasks[task]
                            .stall_until_us
                            .set(until);
                        drop(nodes);
                        self.emit(
                            n,
                            Event::TaskStall {
                                pid,
                                task: task.clone(),
                                until_ms: until / 1000,
                            },
                        );
                    }
                }
            }
            ProcessCrash { node, process } => {
                if let Some(n) = self.node(node) {
                    if let Some(pid) = self.find_process(n, |p| &p.name == process) {
                        self.end_process(n, pid, ExitStatus::Killed);
                    }
                }
            }
            ServiceRestart { node } => {
                if let Some(n) = self.node(node) {
                    // Ask every live process to terminate; kill whatever is left after a grace period.
                    let pids: Vec<u32> = {
                        let nodes = self.0.nodes.borrow();
                        nodes[n as usize]
                            .procs
                            .iter()
                            .filter(|(_, p)| p.alive)
                            .map(|(pid, _)| *pid)
                            .collect()
                    };
                    for pid in &pids {
                        self.request_terminate(n, *pid);
                    }
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
                    let resume = {
                        let mut nodes = self.0.nodes.borrow_mut();
                        let st = &mut nodes[n as usize];
                        let was = st.paused;
                        st.paused = st.paused.saturating_sub(1);
                        st.up && was == 1
                    };
                    if resume {
                        self.0.handle.resume(self.0.nodes.borrow()[n as usize].msim);
                        self.emit(n, Event::NodeResume);
                    }
                }
            }
            Crash { node } => {
                if let Some(n) = self.node(node) {
                    let mine = self.0.nodes.borrow()[n as usize].crashed_by == Some(id);
                    if mine {
                        self.0.nodes.borrow_mut()[n as usize].crashed_by = None;
                        self.boot(n);
                    }
                }
            }
            Drift { node, .. } => {
                if let Some(n) = self.node(node) {
                    self.change_clock(n, |c| c.set_drift(now, 0));
                    self.emit(n, Event::ClockDrift { ppm: 0 });
                }
            }
            ClockRate { node, .. } => {
                if let Some(n) = self.node(node) {
                    self.set_mono_rate(n, now, 0);
                }
            }
            TaskStall { node, task } => {
                if let Some(n) = self.node(node) {
                    let nodes = self.0.nodes.borrow();
                    for p in nodes[n as usize].procs.values() {
                        if let Some(slot) = p.tasks.get(task) {
                            slot.stall_until_us.set(slot.stall_until_us.get().min(now));
                            if let Some(w) = slot.stall_waker.borrow_mut().take() {
                                w.wake();
                            }
                        }
                    }
                }
            }
            ServiceRestart { node } => {
                if let Some(n) = self.node(node) {
                    // Start the services again unless a reboot in the meantime already did.
                    let running = self.0.nodes.borrow()[n as usize]
                        .procs
                        .values()
                        .any(|p| p.alive);
                    if self.node_up(n) && !running {
                        self.start_services(n);
                    }
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

    /// Sets the node's monotonic rate. Sleeps already armed keep their deadlines (see
    /// [`Proc::sleep`]), so nobody is notified: [`World::clock_notify`] is about the wall clock.
    fn set_mono_rate(&self, node: NodeIx, now: u64, ppm: i64) {
        self.0.nodes.borrow_mut()[node as usize]
            .clock
            .set_mono_rate(now, ppm);
        let ppm = self.0.nodes.borrow()[node as usize].clock.mono_rate_ppm();
        self.emit(node, Event::MonoRate { ppm });
    }

    fn change_clock(&self, node: NodeIx, f: impl FnOnce(&mut NodeClock)) {
        let notify = {
            let mut nodes = self.0.nodes.borrow_mut();
            f(&mut nodes[node as usize].clock);
            nodes[node as usize].clock_changed.clone()
        };
        notify.notify();
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

    fn request_terminate(&self, node: NodeIx, pid: u32) {
        let notify = {
            let mut nodes = self.0.nodes.borrow_mut();
            let Some(p) = nodes[node as usize].procs.get_mut(&pid) else {
                return;
            };
            p.terminate_requested = true;
            p.terminate.clone()
        };
        notify.notify();
    }
}

/// How long a process asked to terminate may take before it is killed.
pub const TERMINATE_GRACE_US: u64 = 10_000_000;

/// Follow-up actions a fault schedules for itself.
pub(crate) enum PendingAction {
    /// Kill these processes if they are still alive (terminate grace period over).
    KillIfAlive(NodeIx, Vec<u32>),
}

/// A task wrapper that withholds polls while the task is stalled.
struct Stallable {
    world: World,
    until_us: Rc<Cell<u64>>,
    waker: Rc<RefCell<Option<std::task::Waker>>>,
    sleep: Option<crate::time::Sleep>,
    inner: Pin<Box<dyn Future<Output = ()>>>,
}

impl Future for Stallable {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let until = self.until_us.get();
        // Zero: not stalled (the common case, decided without reading the clock).
        if until != 0 && until > self.world.now_us() {
            let at = self.world.instant_at(until);
            let sleep = self
                .sleep
                .get_or_insert_with(|| crate::time::sleep_until(at));
            sleep.reset(at);
            if Pin::new(sleep).poll(cx).is_pending() {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        if until != 0 {
            // The stall is over (or was cut short).
            self.until_us.set(0);
            self.sleep = None;
        }
        self.inner.as_mut().poll(cx)
    }
}

/// A booted node, as seen by the code that starts its services.
#[derive(Clone)]
pub struct Host {
    pub(crate) world: World,
    pub(crate) node: NodeIx,
}

impl Host {
    /// Starts a top-level process.
    pub fn spawn_process(&self, name: &str) -> Proc {
        self.world.new_process(self.node, name)
    }

    /// The node's index.
    pub fn node(&self) -> NodeIx {
        self.node
    }

    /// The node's name.
    pub fn name(&self) -> String {
        self.world.node_name(self.node)
    }

    /// The world (for simulated services living on this node).
    pub fn world(&self) -> &World {
        &self.world
    }
}

/// A process on a node: what model code sees of its environment (clocks, sleeping, randomness,
/// events, child processes and named tasks).
#[derive(Clone)]
pub struct Proc {
    world: World,
    node: NodeIx,
    pid: u32,
    /// `host:pid`, made once (every request a process sends carries it).
    ident: Rc<str>,
}

impl Proc {
    /// Process id (unique per node; a respawned process gets a new one).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The node's index.
    pub fn node(&self) -> NodeIx {
        self.node
    }

    /// The node's name (its hostname).
    pub fn host_name(&self) -> String {
        self.world.node_name(self.node)
    }

    /// `host:pid`, the identity used in traces.
    pub fn ident(&self) -> Rc<str> {
        self.ident.clone()
    }

    pub(crate) fn world(&self) -> &World {
        &self.world
    }

    /// Spawns a named task belonging to this process (a target for task faults).
    pub fn spawn(&self, task: &str, fut: impl Future<Output = ()> + 'static) {
        self.world
            .spawn_task(self.node, self.pid, task, Box::pin(fut));
    }

    /// Starts a child process on the same node.
    pub fn spawn_child(&self, name: &str) -> Proc {
        self.world.new_process(self.node, name)
    }

    /// Ends this process with `code`. Every task of the process (the caller's included) is dropped
    /// at its next await; the caller should return right after.
    pub fn exit(&self, code: i32) {
        self.world
            .end_process(self.node, self.pid, ExitStatus::Code { code });
    }

    /// Whether this process is still running.
    pub fn is_alive(&self) -> bool {
        self.pid_alive(self.pid)
    }

    /// Whether a process with this pid is running on this node (a `/proc/<pid>` check).
    pub fn pid_alive(&self, pid: u32) -> bool {
        let nodes = self.world.0.nodes.borrow();
        nodes[self.node as usize]
            .procs
            .get(&pid)
            .is_some_and(|p| p.alive)
    }

    /// Waits until this process has ended and returns how.
    pub async fn wait_exit(&self) -> ExitStatus {
        loop {
            let (status, notify) = {
                let nodes = self.world.0.nodes.borrow();
                match nodes[self.node as usize].procs.get(&self.pid) {
                    None => return ExitStatus::Killed,
                    Some(p) => (p.exit_status.clone(), p.exited.clone()),
                }
            };
            if let Some(s) = status {
                return s;
            }
            let g = notify.generation();
            notify.changed_since(g).await;
        }
    }

    /// Resolves once someone asked this process to terminate (SIGTERM).
    pub async fn terminated(&self) {
        loop {
            let notify = {
                let nodes = self.world.0.nodes.borrow();
                match nodes[self.node as usize].procs.get(&self.pid) {
                    None => return,
                    Some(p) if p.terminate_requested => return,
                    Some(p) => p.terminate.clone(),
                }
            };
            let g = notify.generation();
            notify.changed_since(g).await;
        }
    }

    /// Asks a child (or any process on this node) to terminate.
    pub fn terminate(&self, pid: u32) {
        self.world.request_terminate(self.node, pid);
    }

    /// Wall clock now (µs relative to `clock::EPOCH_UNIX_US`), like `time.time()`.
    pub fn wall_us(&self) -> i64 {
        self.world.wall_us(self.node)
    }

    /// Monotonic clock now (µs since the node booted), like `time.monotonic()`.
    pub fn mono_us(&self) -> u64 {
        self.world.mono_us(self.node)
    }

    /// A sleep until this node's monotonic clock reads `mono_us` (at least 1 ms from now); a loop
    /// that keeps it moves it with [`Proc::mono_instant`] and `reset`.
    pub fn sleep_until_mono(&self, mono_us: u64) -> crate::time::Sleep {
        crate::time::sleep_until(self.mono_instant(mono_us))
    }

    /// The instant at which this node's monotonic clock reads `mono_us`, at its current rate (at
    /// the true rate: boot time + `mono_us`). A rate change after this is asked keeps the instant
    /// it gave (the approximation `World::true_time_for_wall` makes for the wall clock).
    pub fn mono_instant(&self, mono_us: u64) -> Instant {
        self.world
            .instant_at(self.world.true_time_for_mono(self.node, mono_us))
    }

    /// Sleeps for `d` of this node's monotonic time: `d` of true time at the true rate, `d / 2`
    /// when the clock runs at +100 %. The deadline is fixed when the sleep starts: a rate change
    /// during it does not move it. (Network request timeouts, [`Proc::call`], stay in true time:
    /// they stand for the peer's and the network's behaviour as much as for the caller's clock.)
    pub async fn sleep(&self, d: Duration) {
        if self.world.mono_rate_ppm(self.node) == 0 {
            // The true rate: the plain timer (the path every run without a rate fault takes).
            crate::time::sleep(d).await;
            return;
        }
        let target = self.mono_us().saturating_add(d.as_micros() as u64);
        self.sleep_until_mono(target).await;
    }

    /// A random generator private to this process and purpose, derived from the run's seed.
    pub fn rng(&self, purpose: &str) -> ChaCha8Rng {
        let label = format!("{}/{}/{}", self.host_name(), self.pid, purpose);
        rng::rng_for(self.world.seed(), &label)
    }

    /// Emits an event on this node.
    pub fn emit(&self, event: impl Into<Event>) {
        self.world.emit(self.node, event);
    }

    /// Whether a task of this process with this name is running (not finished, not dead).
    pub fn task_alive(&self, task: &str) -> bool {
        let nodes = self.world.0.nodes.borrow();
        nodes[self.node as usize]
            .procs
            .get(&self.pid)
            .is_some_and(|p| p.alive && p.tasks.contains_key(task))
    }

    /// Sends a request to a service and waits up to `timeout` for its response.
    pub async fn call<Req, Resp>(
        &self,
        endpoint: &crate::net::Endpoint<Req, Resp>,
        req: Req,
        timeout: Duration,
    ) -> Result<Resp, crate::net::RpcError> {
        endpoint
            .call(&self.world, self.node, self.ident(), req, timeout)
            .await
    }

    /// Fault modes currently applied to the service on this process's node.
    pub fn service_faults(&self) -> ServiceFaults {
        self.world.service_faults(self.node)
    }
}
