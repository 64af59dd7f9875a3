//! A fifth system, written only against faultline's public API: replicas elect a leader with
//! Kubernetes leader election (`sim::leaderelection` on the simulated API server, `sim::kube`)
//! and the leader appends to a log kept in an API object. The buggy variant
//! (`--bug unfenced`) appends whenever its elector says it leads; the default also refuses to
//! append after an entry of a newer leadership term.
//!
//! ```text
//! cargo run --release --example lease_log -- explore lease-log-pauses --seeds 2000 --bug unfenced
//! cargo run --release --example lease_log -- replay target/faultline-failures/<file>.json
//! cargo run --release --example lease_log -- explore lease-log-pauses --seeds 2000
//! ```
//!
//! The model is `model.rs`, its oracle `monitor.rs` (ground truth from the API server's write
//! events), and here the [`System`]. docs/writing-a-system.md walks through `fenced_lock` and
//! then this one.

mod model;
mod monitor;

use model::LogEvent;
use rand::Rng;
use reports::{BandKind, Lane, MarkKind, Measure, ReportLens, Rows};
use scenarios::scenario::Switch;
use scenarios::system::{Registry, ScenarioDef, System};
use scenarios::RunSpec;
use serde::{Deserialize, Serialize};
use sim::event::{Event, Record};
use sim::kube::Kube;
use sim::leaderelection::LEASE_KIND;
use sim::{Fault, FaultKind, NodeSpec, Outcome, Schedule};

/// Faults fall in the first two minutes; then a minute to show that appends resume.
const FAULT_WINDOW_MS: u64 = 120_000;
const LIVENESS_MS: u64 = 60_000;

/// What a seed draws besides its faults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogOptions {
    /// Replicas (`r1`, `r2`, ...).
    pub replicas: u32,
    /// One-way network latency range (µs).
    pub latency_us: (u64, u64),
}

impl LogOptions {
    fn node_names(&self) -> Vec<String> {
        let mut names = vec!["api".to_string()];
        names.extend((1..=self.replicas).map(|i| format!("r{i}")));
        names
    }
}

/// The one scenario family: replicas paused or cut off from the API server.
#[derive(Clone, Copy, Debug)]
pub struct Pauses;

/// The lease-log system, for faultline's registry.
pub struct LeaseLog;

static SWITCHES: &[Switch] = &[Switch::bug::<LeaseLog>(
    "unfenced",
    "lease-log-pauses",
    "leaders append without comparing terms: a paused leader still leading appends after its successor",
)];

impl System for LeaseLog {
    const NAME: &'static str = "lease-log";
    const ABOUT: &'static str =
        "replicas elect a leader through a Lease and append to a log in the API server";
    const FAULT_WINDOW_MS: u64 = FAULT_WINDOW_MS;
    type Options = LogOptions;
    type Family = Pauses;

    fn scenarios() -> Vec<ScenarioDef<Pauses>> {
        vec![ScenarioDef {
            name: "lease-log-pauses",
            about: "replicas paused or cut off from the API server while they lead",
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

    fn draw(_: Pauses, seed: u64) -> (LogOptions, Schedule) {
        let mut rng = sim::rng::rng_for(seed, "lease-log/options");
        let o = LogOptions {
            replicas: rng.random_range(2..=3),
            latency_us: (200, rng.random_range(500..=5_000)),
        };
        let schedule = draw_faults(&mut rng, o.replicas);
        (o, schedule)
    }

    fn node_names(o: &LogOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(_: Pauses, spec: &RunSpec, o: &LogOptions, _: &'static [&'static str]) -> Outcome {
        let nodes = o
            .node_names()
            .into_iter()
            .map(|name| NodeSpec {
                name,
                offset_us: 0,
                drift_ppm: 0,
            })
            .collect();
        let cfg = spec.sim_config(nodes, o.latency_us, FAULT_WINDOW_MS, LIVENESS_MS);
        let fenced = !spec.bugs.iter().any(|b| b == "unfenced");
        let replicas = o.replicas as sim::NodeIx;
        let monitor = Box::new(monitor::LogMonitor::default());
        sim::runtime::simulate(cfg, monitor, move |world| {
            let kube = Kube::install(world, 0);
            // The monitor follows the Lease's holder from the write events.
            kube.record_objects(LEASE_KIND);
            model::seed_log(&kube);
            for r in 1..=replicas {
                model::install_replica(world, r, &kube, fenced);
            }
        })
    }

    /// One replica fewer, if the schedule does not name the last.
    fn smaller_options(o: &LogOptions, schedule: &Schedule) -> Vec<LogOptions> {
        let last = format!("r{}", o.replicas);
        let named = schedule
            .iter()
            .any(|f| f.kind.nodes().contains(&last.as_str()));
        if o.replicas <= 2 || named {
            return Vec::new();
        }
        vec![LogOptions {
            replicas: o.replicas - 1,
            ..o.clone()
        }]
    }

    fn decode_event(v: &serde_json::Value) -> Option<sim::Event> {
        sim::event::decode::<LogEvent>(v)
    }

    fn lens() -> Box<dyn ReportLens> {
        Box::new(LeaderLens::default())
    }
}

/// One to four faults on the replicas: pauses (a GC stall, a VM freeze) and cuts from the API
/// server, up to 30 s: twice the lease duration.
fn draw_faults(rng: &mut rand_chacha::ChaCha8Rng, replicas: u32) -> Schedule {
    let mut out: Schedule = (0..rng.random_range(1..=4))
        .map(|_| {
            let node = format!("r{}", rng.random_range(1..=replicas));
            let kind = if rng.random_bool(0.5) {
                FaultKind::Pause { node }
            } else {
                FaultKind::Partition {
                    a: vec![node],
                    b: vec!["api".into()],
                }
            };
            Fault {
                at_ms: rng.random_range(5_000..FAULT_WINDOW_MS - 30_000),
                dur_ms: rng.random_range(2_000..=30_000),
                kind,
            }
        })
        .collect();
    out.sort_by_key(|f| f.at_ms);
    out
}

/// A replica leads, as its elector says (the report's band).
const LEADS: BandKind = BandKind::new("leads", "leads (its elector says)", "#43a047", Lane::Belief);
/// The log refused an append from an older term (the report's mark).
const REFUSED: MarkKind = MarkKind::new("refused", "append refused", "#b8860b");

/// The report's view: a band while a replica leads (the elector's own events), a mark for each
/// refused append, and the headline, the longest time two replicas led at once.
#[derive(Default)]
struct LeaderLens {
    /// Replica -> since when it leads (s).
    leading: std::collections::BTreeMap<String, f64>,
    longest_overlap: f64,
}

impl ReportLens for LeaderLens {
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows) {
        match &rec.event {
            Event::LeaderStarted { .. } => {
                self.leading.insert(node.to_string(), t);
                if let Some(row) = rows.get(node) {
                    row.start("leader", LEADS, t, "leads");
                }
            }
            Event::LeaderStopped { .. } => {
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
            _ => {
                if let Some(LogEvent::AppendRefused { term, newer }) = rec.event.system() {
                    if let Some(row) = rows.get(node) {
                        let why = format!("append refused: term {term} after term {newer}");
                        row.mark(REFUSED, t, why);
                    }
                }
            }
        }
    }

    fn headline(&mut self, _end: f64) -> Measure {
        Measure::seconds(
            "longest time two replicas led at once",
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
        .with::<LeaseLog>()
        .invoked_as("cargo run --release --example lease_log --")
        .leak();
    scenarios::cli::main(registry)
}
