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
//!
//! The world's state is declared here and its methods live with their concern: `bus` (emitting
//! events: stamping, hashing, the monitor and the verdict), `processes` (nodes and processes;
//! [`Host`] and [`Proc`]), `tasks` (the processes' named tasks, stalls), `clocks` (reading and
//! changing the nodes' clocks) and `faults` (starting and ending faults, the network's fault
//! rules, the service fault modes).

use crate::event::NodeIx;
use crate::fault::FaultKind;
use crate::monitor::Monitor;
use crate::rng;
use crate::sync::Notify;
use madsim::time::Instant;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

mod bus;
mod clocks;
mod faults;
mod processes;
mod tasks;

use bus::Bus;
pub(crate) use bus::Finished;
use faults::Net;
pub(crate) use faults::PendingAction;
pub use faults::{ServiceFaults, TERMINATE_GRACE_US};
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

impl NodeSpec {
    /// Nodes named `names` whose wall clocks start at true time and never drift (tests and
    /// examples that fault the clocks, if at all, through the schedule).
    pub fn exact_all<S: ToString>(names: impl IntoIterator<Item = S>) -> Vec<NodeSpec> {
        names
            .into_iter()
            .map(|n| NodeSpec {
                name: n.to_string(),
                offset_us: 0,
                drift_ppm: 0,
            })
            .collect()
    }
}

/// Network parameters of a run.
#[derive(Clone, Debug)]
pub struct NetSpec {
    /// One-way latency lower bound (µs).
    pub latency_min_us: u64,
    /// One-way latency upper bound (µs).
    pub latency_max_us: u64,
}

impl NetSpec {
    /// A network whose every one-way latency is `us`.
    pub fn fixed(us: u64) -> NetSpec {
        NetSpec {
            latency_min_us: us,
            latency_max_us: us,
        }
    }
}

/// The state of a run, behind [`World`].
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
                loss: BTreeMap::new(),
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

    /// The instant at true time `t_us` (µs since the start of the run), for timers.
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
}
