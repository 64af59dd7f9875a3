//! Nodes and processes: booting, crashing and pausing nodes, starting and ending processes, the
//! faults that act on them, and the handles code on a node gets: [`Host`] for the code starting
//! its services, [`Proc`] for a process (its named tasks are in `tasks`).

use super::tasks::TaskSlot;
use super::{NodeSpec, ServiceFaults, Services, World};
use crate::clock::NodeClock;
use crate::event::{Event, ExitStatus, NodeIx};
use crate::rng;
use crate::sync::Notify;
use madsim::time::Instant;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// A process, alive or ended (an ended one keeps its exit status for late waiters).
pub(crate) struct ProcState {
    name: String,
    pub(super) alive: bool,
    pub(super) tasks: BTreeMap<String, TaskSlot>,
    exited: Notify,
    exit_status: Option<ExitStatus>,
    terminate: Notify,
    terminate_requested: bool,
}

/// Where a node's graceful service restart is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Restart {
    /// No restart, or a boot (which starts the services itself) overtook it.
    None,
    /// The processes were asked to terminate; the restart's time is not up.
    Stopping,
    /// The restart's time is up: the services start as soon as the last process has exited.
    StartDue,
}

/// A node: its clock, whether it is up or paused, its processes and the function starting its
/// services.
pub(crate) struct NodeState {
    pub(crate) name: String,
    pub(super) msim: madsim::task::NodeId,
    pub(crate) clock: NodeClock,
    pub(crate) clock_changed: Notify,
    pub(crate) up: bool,
    paused: u32,
    crashed_by: Option<u32>,
    boots: u32,
    next_pid: u32,
    pub(super) procs: BTreeMap<u32, ProcState>,
    services: Option<Services>,
    /// Where a graceful service restart is (see [`World::restart_services`]); a boot ends it.
    restart: Restart,
}

impl NodeState {
    /// A node that has not booted yet, on madsim node `msim`.
    pub(super) fn new(spec: &NodeSpec, msim: madsim::task::NodeId) -> NodeState {
        NodeState {
            name: spec.name.clone(),
            msim,
            clock: NodeClock::new(spec.offset_us, spec.drift_ppm),
            clock_changed: Notify::new(),
            up: false,
            paused: 0,
            crashed_by: None,
            boots: 0,
            next_pid: 1000,
            procs: BTreeMap::new(),
            services: None,
            restart: Restart::None,
        }
    }
}

// Nodes.
impl World {
    /// Whether the node is up (booted and not crashed).
    pub fn node_up(&self, node: NodeIx) -> bool {
        self.0.nodes.borrow()[node as usize].up
    }

    /// How many times the node has booted (a TCP peer that rebooted resets old connections).
    pub fn boots(&self, node: NodeIx) -> u32 {
        self.0.nodes.borrow()[node as usize].boots
    }

    /// Whether the node is still up in the life it had at boot number `boots`: a process of it
    /// that ends now leaves a running kernel behind, which closes the process's connections (a
    /// FIN, or a reset where unread data is left) instead of going silent. False while the node's
    /// state is being changed (a crash in progress).
    pub fn same_life(&self, node: NodeIx, boots: u32) -> bool {
        self.0
            .nodes
            .try_borrow()
            .is_ok_and(|n| n[node as usize].up && n[node as usize].boots == boots)
    }

    /// Whether the node is up and not paused (its processes run).
    pub fn node_running(&self, node: NodeIx) -> bool {
        let n = &self.0.nodes.borrow()[node as usize];
        n.up && n.paused == 0
    }

    /// The function that starts the node's services, if one is registered (to wrap it).
    pub fn services(&self, node: NodeIx) -> Option<Services> {
        self.0.nodes.borrow()[node as usize].services.clone()
    }

    /// Registers the function that starts the node's services.
    pub fn set_services(&self, node: NodeIx, services: Services) {
        self.0.nodes.borrow_mut()[node as usize].services = Some(services);
    }

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
            n.restart = Restart::None;
            n.boots += 1;
            n.boots
        };
        self.emit(node, Event::NodeBoot { boot });
        self.start_services(node);
    }

    /// Runs the node's services function, if it has one.
    fn start_services(&self, node: NodeIx) {
        let services = self.0.nodes.borrow()[node as usize].services.clone();
        if let Some(s) = services {
            s(&Host {
                world: self.clone(),
                node,
            });
        }
    }

    /// The node goes down at once: madsim drops its tasks and its processes are forgotten (no exit
    /// events, no cleanup).
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

    /// Starts a `Pause` fault: the node stops running at the first pause in force (pauses nest),
    /// if it is up.
    pub(super) fn pause(&self, node: NodeIx) {
        let pause = {
            let mut nodes = self.0.nodes.borrow_mut();
            let st = &mut nodes[node as usize];
            st.paused += 1;
            st.up && st.paused == 1
        };
        if pause {
            self.0
                .handle
                .pause(self.0.nodes.borrow()[node as usize].msim);
            self.emit(node, Event::NodePause);
        }
    }

    /// Ends a `Pause` fault: the node runs again once no pause holds it, if it is up.
    pub(super) fn resume(&self, node: NodeIx) {
        let resume = {
            let mut nodes = self.0.nodes.borrow_mut();
            let st = &mut nodes[node as usize];
            let was = st.paused;
            st.paused = st.paused.saturating_sub(1);
            st.up && was == 1
        };
        if resume {
            self.0
                .handle
                .resume(self.0.nodes.borrow()[node as usize].msim);
            self.emit(node, Event::NodeResume);
        }
    }

    /// Starts `Crash` fault `id`: the node crashes if it is up.
    pub(super) fn crash_for_fault(&self, node: NodeIx, id: u32) {
        let up = self.0.nodes.borrow()[node as usize].up;
        if up {
            self.0.nodes.borrow_mut()[node as usize].crashed_by = Some(id);
            self.crash(node);
        }
    }

    /// Ends `Crash` fault `id`: the node boots again if that fault is what brought it down.
    pub(super) fn reboot_after_fault(&self, node: NodeIx, id: u32) {
        let mine = self.0.nodes.borrow()[node as usize].crashed_by == Some(id);
        if mine {
            self.0.nodes.borrow_mut()[node as usize].crashed_by = None;
            self.boot(node);
        }
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
}

// Processes.
impl World {
    /// Starts a process on the node.
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
    pub(super) fn end_process(&self, node: NodeIx, pid: u32, status: ExitStatus) {
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
        self.start_if_stopped(node);
    }

    /// Starts the node's services if a restart's start waits for its stop and the stop is over.
    fn start_if_stopped(&self, node: NodeIx) {
        let due = {
            let mut nodes = self.0.nodes.borrow_mut();
            let n = &mut nodes[node as usize];
            let due = n.restart == Restart::StartDue && !n.procs.values().any(|p| p.alive);
            if due {
                n.restart = Restart::None;
            }
            due
        };
        if due {
            self.start_services(node);
        }
    }

    /// The newest live process on the node that `pred` accepts.
    pub(super) fn find_process(
        &self,
        node: NodeIx,
        pred: impl Fn(&ProcState) -> bool,
    ) -> Option<u32> {
        let nodes = self.0.nodes.borrow();
        nodes[node as usize]
            .procs
            .iter()
            .rev()
            .find(|(_, p)| p.alive && pred(p))
            .map(|(pid, _)| *pid)
    }

    /// Asks a process to terminate (SIGTERM; see [`Proc::terminated`]).
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

    /// A `ProcessCrash` fault: the newest live process with this name on the node is killed.
    pub(super) fn kill_process_named(&self, node: NodeIx, name: &str) {
        if let Some(pid) = self.find_process(node, |p| p.name == name) {
            self.end_process(node, pid, ExitStatus::Killed);
        }
    }

    /// Starts a graceful service restart: every live process on the node is asked to terminate.
    /// Returns their pids (to kill those still alive once the grace period is over).
    pub(super) fn terminate_all(&self, node: NodeIx) -> Vec<u32> {
        let pids: Vec<u32> = {
            let nodes = self.0.nodes.borrow();
            nodes[node as usize]
                .procs
                .iter()
                .filter(|(_, p)| p.alive)
                .map(|(pid, _)| *pid)
                .collect()
        };
        self.0.nodes.borrow_mut()[node as usize].restart = Restart::Stopping;
        for pid in &pids {
            self.request_terminate(node, *pid);
        }
        pids
    }

    /// Ends a graceful service restart: the node's services start again once their stop is over.
    ///
    /// `systemctl restart` stops a unit, then starts it (systemctl(1), "restart"); the stop lasts
    /// until every process has exited, SIGKILL ending it `TimeoutStopSec=` after SIGTERM
    /// (systemd.service(5)). So processes still stopping when the restart's time is up delay the
    /// start until the last one exits ([`TERMINATE_GRACE_US`](super::TERMINATE_GRACE_US) at the
    /// latest). A reboot in the meantime starts the services itself and clears the wait.
    pub(super) fn restart_services(&self, node: NodeIx) {
        {
            let mut nodes = self.0.nodes.borrow_mut();
            let n = &mut nodes[node as usize];
            if n.restart == Restart::Stopping && n.up {
                n.restart = Restart::StartDue;
            }
        }
        self.start_if_stopped(node);
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
