//! faultline's simulated world.
//!
//! * [`runtime`]: one madsim runtime per seed on a fresh thread, a pool for many seeds, and the
//!   driver that applies the fault schedule and runs the liveness phase;
//! * [`world`]: nodes, processes and named tasks, the event bus, fault application;
//! * [`clock`]: per-node monotonic and wall clocks;
//! * [`net`]: latency, partitions, calls and server-push streams;
//! * [`etcd`]: a simulated etcd v3 server and its client;
//! * [`kube`]: a simulated Kubernetes API server (resourceVersion CAS, status/spec, informers);
//! * [`l2`]: a layer-2 segment whose router keeps a Linux neighbour cache ([`neigh`]) and sends
//!   client traffic to service IPs;
//! * [`cloud`]: a simulated ENI-style cloud IP API (ground truth of assigned IPs);
//! * [`short`]: inline short strings ordered as their text (IP addresses, interface names);
//! * [`event`], [`fault`], [`monitor`]: the typed vocabulary shared with models, scenarios and reports.

pub mod catalog;
pub mod clock;
pub mod cloud;
pub mod etcd;
pub mod event;
pub mod fault;
pub mod kube;
pub mod l2;
pub mod leaderelection;
pub mod monitor;
pub mod neigh;
pub mod net;
pub mod rng;
pub mod runtime;
pub mod short;
pub mod sync;
pub mod time;
pub mod units;
pub mod world;

pub use event::{Event, NodeIx, Record};
pub use fault::{Fault, FaultKind, Schedule};
pub use monitor::{Failure, Kind, Measured, Monitor, Violation};
pub use runtime::{Outcome, SimConfig};
pub use short::Short;
pub use world::{Host, NetSpec, NodeSpec, Proc, World};
