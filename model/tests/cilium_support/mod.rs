//! Test support for `upstream_cilium/`: one Cilium operator (the model's
//! `model::cilium::operator`) maintaining one CiliumNode, `n1`, against the simulated API server
//! and cloud, with a scripted test driver in place of the agent (upstream's node manager tests
//! drive `NodeManager` with `Upsert(updateCiliumNode(..))` and `FakeAcknowledgeReleaseIps`; here
//! the driver writes the CiliumNode status through the API server, as an agent does).
//!
//! The driver's script runs on `n1` and takes [`Snapshot`]s of the CiliumNode as the API server
//! holds it (what the operator published: `spec.pool`, and the status it and the driver wrote);
//! the test asserts on them after the run, together with the operator's and the cloud's events.

use model::cilium::decide::Limits;
use model::cilium::operator::shutdown::StopSequence;
use model::cilium::operator::OperatorConfig;
use model::cilium::CiliumEvent;
use model::cilium::{spec_of, status_of, Status, Switches, KIND, MARKED, READY, RELEASED};
use sim::cloud::{eni_name, Cloud};
use sim::kube::{Body, Kube, KubeClient, Part};
use sim::monitor::{Failure, Monitor};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Event, Fault, NetSpec, NodeSpec, Proc, Record, Short, World};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// The CiliumNode (and the cloud instance, and the driver's host).
pub const NODE: &str = "n1";

/// The world: the node, the API server, the cloud and the operator.
const NODES: [&str; 4] = [NODE, "apiserver", "cloud", "operator"];

/// One run's parameters.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The operator's IPAM limits (upstream's per-CiliumNode `spec.ipam`).
    pub limits: Limits,
    /// The operator's bug and fix switches.
    pub switches: Switches,
    /// Interfaces of the instance, and each one's capacity of secondary IPs.
    pub enis: u32,
    pub eni_capacity: u32,
    /// IPs the cloud holds on each interface (by index) before the run; the CiliumNode's initial
    /// pool is exactly these.
    pub seeded: Vec<u32>,
    /// `release-ips` entries of the initial CiliumNode: (index of the IP in the seeded pool, in
    /// address order; its state).
    pub seeded_release: Vec<(usize, &'static str)>,
    /// Simulated seconds the run lasts.
    pub run_for_s: u64,
}

/// The CiliumNode as the API server held it at one point of the script.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub label: String,
    /// True time (µs since the start of the run).
    pub t_us: u64,
    /// `spec.pool`: IP -> interface.
    pub pool: BTreeMap<Short, Short>,
    /// `status.used`'s IPs.
    pub used: BTreeSet<Short>,
    /// `status.release-ips`.
    pub release_ips: BTreeMap<Short, Short>,
}

impl Snapshot {
    /// Upstream's `Stats().IPv4.AvailableIPs` (the operator's pool).
    pub fn available(&self) -> usize {
        self.pool.len()
    }

    /// Upstream's `Stats().IPv4.UsedIPs` (`len(status.ipam.used)`).
    pub fn used_count(&self) -> usize {
        self.used.len()
    }

    /// The IPs whose `release-ips` state is `state`.
    pub fn in_state(&self, state: &str) -> BTreeSet<Short> {
        self.release_ips
            .iter()
            .filter(|(_, s)| s.as_str() == state)
            .map(|(ip, _)| *ip)
            .collect()
    }

    /// IPs of the pool on interface `eni`.
    pub fn on(&self, eni: &str) -> usize {
        self.pool.values().filter(|e| e.as_str() == eni).count()
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Run {
    pub snapshots: Vec<Snapshot>,
    /// The operator's and the cloud's events, with their true times (µs).
    pub events: Vec<(u64, Event)>,
    /// Times (µs) of the driver's acknowledgements and the IPs each flipped.
    pub acks: Vec<(u64, BTreeSet<Short>)>,
    /// Whether the script ran to its end within the run.
    pub finished: bool,
}

impl Run {
    /// The snapshot labelled `label`.
    pub fn at(&self, label: &str) -> &Snapshot {
        self.snapshots
            .iter()
            .find(|s| s.label == label)
            .unwrap_or_else(|| panic!("no snapshot {label:?} in {:#?}", self.snapshots))
    }

    /// `CiliumMark` events: (time, IP).
    pub fn marks(&self) -> Vec<(u64, Short)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e.system::<CiliumEvent>()? {
                CiliumEvent::CiliumMark { ip, .. } => Some((*t, short(ip))),
                _ => None,
            })
            .collect()
    }

    /// `CiliumAbort` events: (time, IP).
    pub fn aborts(&self) -> Vec<(u64, Short)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e.system::<CiliumEvent>()? {
                CiliumEvent::CiliumAbort { ip, .. } => Some((*t, short(ip))),
                _ => None,
            })
            .collect()
    }

    /// `CiliumRelease` events (the operator's decisions to unassign): (time, IP, state seen).
    pub fn releases(&self) -> Vec<(u64, Short, String)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e.system::<CiliumEvent>()? {
                CiliumEvent::CiliumRelease { ip, state_seen, .. } => {
                    Some((*t, short(ip), state_seen.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// `CloudUnassign` events: (time, interface, IP).
    pub fn unassigns(&self) -> Vec<(u64, Short, Short)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                Event::CloudUnassign { eni, ip, .. } => Some((*t, *eni, *ip)),
                _ => None,
            })
            .collect()
    }

    /// `CloudAssign` events after the start (the seeded IPs are assigned before the run):
    /// (time, interface, IP).
    pub fn assigns(&self) -> Vec<(u64, Short, Short)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                Event::CloudAssign { eni, ip, .. } => Some((*t, *eni, *ip)),
                _ => None,
            })
            .collect()
    }
}

/// A name or address as the model keeps it.
pub fn short(s: &str) -> Short {
    Short::new(s).expect("fits a Short")
}

/// The driver's acknowledgements: (time µs, the IPs each flipped).
type Acks = Rc<RefCell<Vec<(u64, BTreeSet<Short>)>>>;

/// The test driver: the script's handle on the world.
pub struct Driver {
    world: World,
    proc: Proc,
    kube: Kube,
    client: KubeClient,
    cloud: Cloud,
    snapshots: Rc<RefCell<Vec<Snapshot>>>,
    acks: Acks,
}

/// The order in which the driver hands out IPs to its pods: by interface, then by address
/// (upstream's `updateCiliumNode` takes any `used` IPs; a fixed order keeps runs reproducible).
fn use_order(ip: &Short, eni: &Short) -> (Short, std::net::Ipv4Addr) {
    (*eni, ip.as_str().parse().expect("a dotted address"))
}

impl Driver {
    /// True time (µs since the start of the run).
    pub fn now_us(&self) -> u64 {
        self.world.now_us()
    }

    pub async fn sleep_s(&self, s: f64) {
        self.proc.sleep(Duration::from_secs_f64(s)).await;
    }

    /// The CiliumNode as the API server holds it now.
    pub fn peek(&self, label: &str) -> Snapshot {
        let obj = self.kube.peek(KIND, NODE).expect("the CiliumNode exists");
        let (spec, status) = (spec_of(&obj), status_of(&obj));
        Snapshot {
            label: label.into(),
            t_us: self.now_us(),
            pool: spec.pool.clone(),
            used: status.used.keys().copied().collect(),
            release_ips: status.release_ips.clone(),
        }
    }

    /// Records a snapshot under `label`.
    pub fn snapshot(&self, label: &str) -> Snapshot {
        let s = self.peek(label);
        self.snapshots.borrow_mut().push(s.clone());
        s
    }

    /// Polls (every 100 ms) until `pred` holds of the CiliumNode, for at most `timeout_s`; whether
    /// it came to hold (upstream's `testutils.WaitUntil`).
    pub async fn wait_until(&self, timeout_s: f64, pred: impl Fn(&Snapshot) -> bool) -> bool {
        let deadline = self.now_us() + (timeout_s * 1e6) as u64;
        loop {
            if pred(&self.peek("")) {
                return true;
            }
            if self.now_us() >= deadline {
                return false;
            }
            self.sleep_s(0.1).await;
        }
    }

    /// Rewrites the status (compare-and-swap on a fresh read, retried on conflict) with `f`.
    async fn write_status(&self, f: impl Fn(&mut Status)) {
        for _ in 0..20 {
            let Ok(fresh) = self.client.get(KIND, NODE).await else {
                continue;
            };
            let mut status = (*status_of(&fresh)).clone();
            f(&mut status);
            let body = Body::of(Rc::new(status));
            if self
                .client
                .update(KIND, NODE, fresh.rv, Part::Status, body)
                .await
                .is_ok()
            {
                return;
            }
        }
        panic!("the driver could not write the CiliumNode status");
    }

    /// Upstream's `Upsert(updateCiliumNode(cn, n))` (`updateCiliumNode`:
    /// pkg/ipam/node_manager_test.go:296-311, pkg/aws/eni/node_manager_test.go:1040-1055):
    /// `status.used` becomes `n` IPs "1.1.1.1" .. "1.1.1.n", which are NOT in the operator's pool
    /// (upstream's used count is `len(status.ipam.used)`, pkg/ipam/node.go:476, and so is the
    /// model's).
    pub async fn set_used(&self, n: usize) {
        self.write_status(|status| {
            status.used = (1..=n)
                .map(|i| {
                    (
                        Short::from_fmt(format_args!("1.1.1.{i}")).unwrap(),
                        Short::from_fmt(format_args!("pod-{i}")).unwrap(),
                    )
                })
                .collect();
        })
        .await;
    }

    /// Adds `ip` (on interface `eni`) to `spec.pool` through the API server, as upstream's
    /// `TestNodeManagerAbortReleaseIPReassignment` does to the operator's copy
    /// (`node.resource.Spec.IPAM.Pool[releasedIP] = ..`).
    pub async fn add_to_pool(&self, ip: Short, eni: Short) {
        for _ in 0..20 {
            let Ok(fresh) = self.client.get(KIND, NODE).await else {
                continue;
            };
            let mut spec = (*spec_of(&fresh)).clone();
            spec.pool.insert(ip, eni);
            let body = Body::of(Rc::new(spec));
            if self
                .client
                .update(KIND, NODE, fresh.rv, Part::Spec, body)
                .await
                .is_ok()
            {
                return;
            }
        }
        panic!("the driver could not write the CiliumNode spec");
    }

    /// Assigns `count` new IPs to interface `eni` in the cloud directly, not through the operator
    /// (upstream's test calling `node.ops.AllocateIPs`); returns them.
    pub fn cloud_assign(&self, eni: &str, count: u32) -> Vec<Short> {
        self.cloud.seed_assign(NODE, &short(eni), count)
    }

    /// Sets `status.used` to `n` IPs of the pool, as a real agent whose pods hold `n` IPs reports
    /// it: when shrinking it keeps the first `n` of those in use;
    /// when growing it adds pool IPs that are neither used nor in `marked-for-release`,
    /// `ready-for-release` or `released` (what the agent may hand out), in [`use_order`]. If the
    /// pool has too few such IPs, fewer than `n` are used (the snapshot shows how many).
    #[allow(dead_code)]
    pub async fn set_used_from_pool(&self, n: usize) {
        self.write_status(|status| {
            let obj = self.kube.peek(KIND, NODE).expect("the CiliumNode exists");
            let pool = spec_of(&obj).pool.clone();
            // (An IP no longer in the pool sorts after every pool IP.)
            let key = |ip: &Short| use_order(ip, &pool.get(ip).copied().unwrap_or(short("~")));
            let mut keep: Vec<Short> = status.used.keys().copied().collect();
            keep.sort_by_key(key);
            keep.truncate(n);
            let mut free: Vec<Short> = pool
                .keys()
                .filter(|ip| !keep.contains(ip))
                .filter(|ip| {
                    status
                        .release_ips
                        .get(*ip)
                        .is_none_or(|s| ![MARKED, READY, RELEASED].contains(&s.as_str()))
                })
                .copied()
                .collect();
            free.sort_by_key(key);
            let more = n.saturating_sub(keep.len());
            keep.extend(free.into_iter().take(more));
            status.used = keep
                .iter()
                .enumerate()
                .map(|(i, ip)| (*ip, Short::from_fmt(format_args!("pod-{i}")).unwrap()))
                .collect();
        })
        .await;
    }

    /// Upstream's `FakeAcknowledgeReleaseIps` (pkg/testutils/ipam/ipam.go): every
    /// `marked-for-release` entry becomes `ready-for-release`. Returns the IPs it flipped.
    pub async fn ack(&self) -> BTreeSet<Short> {
        let flipped: RefCell<BTreeSet<Short>> = RefCell::default();
        self.write_status(|status| {
            let mut f = flipped.borrow_mut();
            f.clear();
            for (ip, s) in status.release_ips.iter_mut() {
                if s.as_str() == MARKED {
                    *s = short(READY);
                    f.insert(*ip);
                }
            }
        })
        .await;
        let flipped = flipped.into_inner();
        self.acks
            .borrow_mut()
            .push((self.now_us(), flipped.clone()));
        flipped
    }
}

/// A script: what the driver does, given its handle.
pub type Script = Box<dyn FnOnce(Rc<Driver>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

struct Recorder(Rc<RefCell<Vec<(u64, Event)>>>);

impl Monitor for Recorder {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let handshake = matches!(
            rec.event.system::<CiliumEvent>(),
            Some(
                CiliumEvent::CiliumMark { .. }
                    | CiliumEvent::CiliumAbort { .. }
                    | CiliumEvent::CiliumRelease { .. }
            )
        );
        if handshake
            || matches!(
                rec.event,
                Event::CloudAssign { .. } | Event::CloudUnassign { .. }
            )
        {
            self.0.borrow_mut().push((rec.t_us, rec.event.clone()));
        }
        None
    }
    fn on_tick(&mut self, _: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// Runs the operator on `setup` with the driver running `script`.
pub fn run(setup: Setup, script: Script) -> Run {
    run_with(setup, Lifecycle::default(), script)
}

/// What a run does to the operator itself: faults on the world's nodes (`operator`,
/// `apiserver`, `cloud`, `n1`) and the graceful shutdown it goes through when it loses the Lease.
#[derive(Clone, Debug, Default)]
pub struct Lifecycle {
    pub schedule: Vec<Fault>,
    pub shutdown: StopSequence,
}

/// [`run`] with the operator's faults and shutdown of `life`.
pub fn run_with(setup: Setup, life: Lifecycle, script: Script) -> Run {
    on_fresh_thread(move || run_here(setup, life, script)).expect("the simulation ran")
}

fn run_here(setup: Setup, life: Lifecycle, script: Script) -> Run {
    let cfg = SimConfig {
        seed: 1,
        nodes: NodeSpec::exact_all(NODES),
        net: NetSpec::fixed(1_000),
        schedule: life.schedule,
        fault_window_ms: setup.run_for_s * 1000,
        liveness_ms: 0,
        keep_trace: false,
    };
    let events: Rc<RefCell<Vec<(u64, Event)>>> = Rc::default();
    let snapshots: Rc<RefCell<Vec<Snapshot>>> = Rc::default();
    let acks: Acks = Rc::default();
    let finished: Rc<RefCell<bool>> = Rc::default();
    let (snaps, ack_log, done) = (snapshots.clone(), acks.clone(), finished.clone());
    let script = RefCell::new(Some(script));
    simulate(cfg, Box::new(Recorder(events.clone())), move |world| {
        let kube = Kube::install(world, 1);
        let cloud = Cloud::install(world, 2, setup.eni_capacity);
        cloud.add_instance(NODE, setup.enis);
        let mut pool = BTreeMap::new();
        for (i, count) in setup.seeded.iter().enumerate() {
            let eni = eni_name(i as u32);
            for ip in cloud.seed_assign(NODE, &eni, *count) {
                pool.insert(ip, eni);
            }
        }
        let ips: Vec<Short> = pool.keys().copied().collect();
        let release: BTreeMap<Short, &str> = setup
            .seeded_release
            .iter()
            .map(|(i, state)| (ips[*i], *state))
            .collect();
        kube.seed_object(
            KIND,
            NODE,
            serde_json::json!({ "pool": pool }),
            serde_json::json!({ "release_ips": release }),
        );
        let op = OperatorConfig {
            nodes: vec![NODE.to_string()],
            limits: setup.limits,
            release_excess: true,
            enis: setup.enis,
            eni_capacity: setup.eni_capacity,
            shutdown: life.shutdown,
            switches: setup.switches.clone(),
            pods: Default::default(),
        };
        model::cilium::operator::install(world, 3, &kube, &cloud, op);
        let w = world.clone();
        let cloud = cloud.clone();
        let (snaps, ack_log, done) = (snaps.clone(), ack_log.clone(), done.clone());
        world.set_services(
            0,
            Rc::new(move |host: &Host| {
                let script = script.borrow_mut().take().expect("the node boots once");
                let proc = host.spawn_process("test-driver");
                let driver = Rc::new(Driver {
                    world: w.clone(),
                    client: kube.client(&proc),
                    kube: kube.clone(),
                    cloud: cloud.clone(),
                    proc: proc.clone(),
                    snapshots: snaps.clone(),
                    acks: ack_log.clone(),
                });
                let done = done.clone();
                proc.spawn("script", async move {
                    script(driver).await;
                    *done.borrow_mut() = true;
                });
            }),
        );
    });
    let run = Run {
        snapshots: snapshots.borrow().clone(),
        events: events.borrow().clone(),
        acks: acks.borrow().clone(),
        finished: *finished.borrow(),
    };
    run
}
