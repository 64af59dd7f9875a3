//! The harness the SDK tests share: a cloud of one instance (one interface of 10 addresses) and a
//! client process whose body a test writes, with the run's trace kept.

use sim::cloud::sdk::RateLimit;
use sim::cloud::{Cloud, CloudClient, CloudConfig};
use sim::event::TraceLine;
use sim::monitor::NullMonitor;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Fault, FaultKind, NetSpec, NodeSpec, Proc};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// What a test body records: `(true time ms, what happened)`.
pub type Log = Rc<RefCell<Vec<(u64, String)>>>;
/// A test body: the client, its process and the log.
pub type Body = Rc<dyn Fn(CloudClient, Proc, Log) -> Pin<Box<dyn Future<Output = ()>>>>;

/// One run's setup.
pub struct Setup {
    /// The run's seed.
    pub seed: u64,
    /// A fault at the cloud from 1 s, lasting the given milliseconds.
    pub fault: Option<(FaultKind, u64)>,
    /// The subnet's size.
    pub subnet: u32,
    /// Requests in a thousand answered with a transient server error.
    pub internal_errors_per_mille: u32,
    /// Whether the client goes through the SDK (cilium's default limits: 4 qps, a burst of 20).
    pub sdk: bool,
}

fn node(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm: 0,
    }
}

/// Runs the body `make` builds as set up; returns its log and the run's trace.
pub fn run(setup: Setup, make: fn() -> Body) -> (Vec<(u64, String)>, Vec<TraceLine>) {
    on_fresh_thread(move || {
        let body = make();
        let log: Log = Rc::new(RefCell::new(Vec::new()));
        let l2 = log.clone();
        let schedule = setup
            .fault
            .into_iter()
            .map(|(kind, dur_ms)| Fault {
                at_ms: 1_000,
                dur_ms,
                kind,
            })
            .collect();
        let cfg = SimConfig {
            seed: setup.seed,
            nodes: vec![node("cloud"), node("client")],
            net: NetSpec::fixed(1_000),
            schedule,
            fault_window_ms: 120_000,
            liveness_ms: 1_000,
            keep_trace: true,
        };
        let out = simulate(cfg, Box::new(NullMonitor), move |world| {
            let cfg = CloudConfig {
                capacity: 10,
                subnet_size: setup.subnet,
                internal_errors_per_mille: setup.internal_errors_per_mille,
            };
            let cloud = Cloud::install_with(world, 0, cfg);
            cloud.add_instance("i1", 1);
            let (log, body) = (l2.clone(), body.clone());
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("test");
                    let mut c = cloud.client(&p);
                    if setup.sdk {
                        c = c.with_sdk(RateLimit {
                            milli_qps: 4_000,
                            burst: 20,
                        });
                    }
                    p.spawn("body", body(c, p.clone(), log.clone()));
                }),
            );
        });
        let trace = String::from_utf8(out.trace.expect("kept")).unwrap();
        let lines = trace
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let log = log.borrow().clone();
        (log, lines)
    })
    .expect("run")
}
