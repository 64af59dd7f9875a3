//! A fourth system, written only against faultline's public API, as a user writes theirs:
//! replicas elect a leader through the simulated etcd's leases and write to a storage service.
//! The buggy variant (`--bug unfenced`) writes without a fencing token; the default passes the
//! lock's revision as a token that the storage checks.
//!
//! ```text
//! cargo run --release --example fenced_lock -- explore fenced-lock-pauses --seeds 2000 --bug unfenced
//! cargo run --release --example fenced_lock -- replay target/faultline-failures/<file>.json
//! cargo run --release --example fenced_lock -- report --replay target/faultline-failures/<file>.json
//! cargo run --release --example fenced_lock -- explore fenced-lock-pauses --seeds 2000
//! ```
//!
//! Three files: the model (`model.rs`), its oracle (`monitor.rs`), and here the [`System`]: the
//! options a seed draws, the fault schedule, the deployment, the switch, the report lens, and a
//! `main` that hands a registry with this one system to faultline's command line. docs/
//! writing-a-system.md walks through it.

mod model;
mod monitor;

use model::LockEvent;
use rand::Rng;
use reports::{BandKind, Lane, MarkKind, Measure, ReportLens, Rows};
use scenarios::scenario::Switch;
use scenarios::system::{Registry, ScenarioDef, System};
use scenarios::RunSpec;
use serde::{Deserialize, Serialize};
use sim::etcd::{Etcd, EtcdConfig};
use sim::event::Record;
use sim::{Fault, FaultKind, NodeSpec, Outcome, Schedule};

/// Faults fall in the first two minutes; then 40 s to show that writes resume.
const FAULT_WINDOW_MS: u64 = 120_000;
const LIVENESS_MS: u64 = 40_000;

/// What a seed draws besides its faults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FencedOptions {
    /// Replicas (`r1`, `r2`, ...).
    pub replicas: u32,
    /// One-way network latency range (µs).
    pub latency_us: (u64, u64),
}

impl FencedOptions {
    fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = (1..=self.replicas).map(|i| format!("r{i}")).collect();
        names.extend(["etcd".to_string(), "storage".to_string()]);
        names
    }
}

/// The one scenario family: replicas paused, cut off from etcd, or slowed.
#[derive(Clone, Copy, Debug)]
pub struct Pauses;

/// The fenced-lock system: its switch, scenario family and deployment, for faultline's registry.
pub struct FencedLock;

static SWITCHES: &[Switch] = &[Switch::bug::<FencedLock>(
    "unfenced",
    "fenced-lock-pauses",
    "replicas write without a fencing token: a paused leader's late write lands after its successor's",
)];

impl System for FencedLock {
    const NAME: &'static str = "fenced-lock";
    const ABOUT: &'static str =
        "replicas elect a leader through etcd leases and write to a storage";
    const FAULT_WINDOW_MS: u64 = FAULT_WINDOW_MS;
    type Options = FencedOptions;
    type Family = Pauses;

    fn scenarios() -> Vec<ScenarioDef<Pauses>> {
        vec![ScenarioDef {
            name: "fenced-lock-pauses",
            about: "replicas paused, cut off from etcd or slowed while they hold the lock",
            ci_seeds: 200,
            coverage: monitor::COVERAGE,
            family: Pauses,
        }]
    }

    fn invariants() -> &'static [scenarios::invariant::Invariant] {
        monitor::INVARIANTS
    }

    fn switches() -> &'static [Switch] {
        SWITCHES
    }

    fn draw(_: Pauses, seed: u64) -> (FencedOptions, Schedule) {
        let mut rng = sim::rng::rng_for(seed, "fenced-lock/options");
        let o = FencedOptions {
            replicas: rng.random_range(2..=4),
            latency_us: (200, rng.random_range(500..=5_000)),
        };
        let schedule = draw_faults(&mut rng, o.replicas);
        (o, schedule)
    }

    fn node_names(o: &FencedOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(
        _: Pauses,
        spec: &RunSpec,
        o: &FencedOptions,
        coverage: &'static [&'static str],
    ) -> Outcome {
        let _ = coverage; // the monitor declares the same points
        let names = o.node_names();
        let nodes = names
            .iter()
            .map(|name| NodeSpec {
                name: name.clone(),
                offset_us: 0,
                drift_ppm: 0,
            })
            .collect();
        let cfg = spec.sim_config(nodes, o.latency_us, FAULT_WINDOW_MS, LIVENESS_MS);
        let fenced = !spec.bugs.iter().any(|b| b == "unfenced");
        let replicas = o.replicas as sim::NodeIx;
        let monitor = Box::new(monitor::FencedMonitor::new(names.clone()));
        sim::runtime::simulate(cfg, monitor, move |world| {
            let etcd = Etcd::install(world, replicas, EtcdConfig::default());
            let storage = model::install_storage(world, replicas + 1);
            for r in 0..replicas {
                model::install_replica(world, r, &etcd, &storage, fenced);
            }
        })
    }

    /// One replica fewer, if the schedule does not name the last.
    fn smaller_options(o: &FencedOptions, schedule: &Schedule) -> Vec<FencedOptions> {
        let last = format!("r{}", o.replicas);
        let named = schedule
            .iter()
            .any(|f| f.kind.nodes().contains(&last.as_str()));
        if o.replicas <= 2 || named {
            return Vec::new();
        }
        vec![FencedOptions {
            replicas: o.replicas - 1,
            ..o.clone()
        }]
    }

    fn decode_event(v: &serde_json::Value) -> Option<sim::Event> {
        sim::event::decode::<LockEvent>(v)
    }

    fn lens() -> Box<dyn ReportLens> {
        Box::new(LeaderLens::default())
    }
}

/// One to six faults on the replicas: pauses (a GC stall), cuts from etcd, latency.
fn draw_faults(rng: &mut rand_chacha::ChaCha8Rng, replicas: u32) -> Schedule {
    let mut out: Schedule = (0..rng.random_range(1..=6))
        .map(|_| {
            let node = format!("r{}", rng.random_range(1..=replicas));
            let kind = match rng.random_range(0..3) {
                0 => FaultKind::Pause { node },
                1 => FaultKind::Partition {
                    a: vec![node],
                    b: vec!["etcd".into()],
                },
                _ => FaultKind::Latency {
                    node,
                    extra_ms: rng.random_range(100..=3_000),
                },
            };
            Fault {
                at_ms: rng.random_range(5_000..FAULT_WINDOW_MS - 20_000),
                dur_ms: rng.random_range(2_000..=15_000),
                kind,
            }
        })
        .collect();
    out.sort_by_key(|f| f.at_ms);
    out
}

/// A replica believes it leads (the report's band).
const LEADS: BandKind = BandKind::new("leads", "believes it leads", "#43a047", Lane::Belief);
/// The storage refused a write with a stale token (the report's mark).
const REFUSED: MarkKind = MarkKind::new("refused", "write refused: stale token", "#b8860b");

/// The report's view: a band while a replica believes it leads, a mark for each refused write,
/// and the headline, the longest time two replicas believed they led at once.
#[derive(Default)]
struct LeaderLens {
    /// Replica -> since when it believes it leads (s).
    leading: std::collections::BTreeMap<String, f64>,
    longest_overlap: f64,
}

impl ReportLens for LeaderLens {
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows) {
        let Some(e) = rec.event.system::<LockEvent>() else {
            return;
        };
        match e {
            LockEvent::LockWon { token } => {
                self.leading.insert(node.to_string(), t);
                if let Some(row) = rows.get(node) {
                    row.start(
                        "leader",
                        LEADS,
                        t,
                        &format!("believes it leads (token {token})"),
                    );
                }
            }
            LockEvent::LockLost { .. } => {
                let Some(since) = self.leading.remove(node) else {
                    return;
                };
                for other in self.leading.values() {
                    self.longest_overlap = self.longest_overlap.max(t - since.max(*other));
                }
                if let Some(row) = rows.get(node) {
                    row.end("leader", t);
                }
            }
            LockEvent::StorageWrite {
                writer,
                accepted: false,
                ..
            } => {
                if let Some(row) = rows.get(writer) {
                    row.mark(REFUSED, t, "write refused: stale token".into());
                }
            }
            _ => {}
        }
    }

    fn headline(&mut self, end: f64) -> Measure {
        // Beliefs still held when the run ended count up to its end.
        let open: Vec<f64> = self.leading.values().copied().collect();
        for (i, a) in open.iter().enumerate() {
            for b in &open[i + 1..] {
                self.longest_overlap = self.longest_overlap.max(end - a.max(*b));
            }
        }
        Measure::seconds(
            "longest time two replicas believed they led",
            Some(self.longest_overlap),
        )
    }

    fn bands(&self) -> &'static [BandKind] {
        &[LEADS]
    }

    fn marks(&self) -> &'static [MarkKind] {
        &[REFUSED]
    }
}

#[cfg(test)]
mod tests;

#[cfg_attr(test, allow(dead_code))] // the test harness has its own
fn main() -> std::process::ExitCode {
    let registry = Registry::new()
        .with::<FencedLock>()
        .invoked_as("cargo run --release --example fenced_lock --")
        .leak();
    scenarios::cli::main(registry)
}
