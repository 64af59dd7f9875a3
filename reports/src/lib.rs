//! Reports: what happened in a run and why, for people (`index.html`, `summary.md`) and tools
//! (`report.json`).
//!
//! A report is derived from a run's JSON-lines trace plus its replay information, so it works for
//! every scenario. The timeline has one row per node over true time: faults as bands (cut off the
//! network, paused, down, a task stalled), what the node believed as bands (Calico: believes it is
//! master, holds the election key; Cilium: IPs held in the release handshake), and instants as
//! marks (task deaths, crashes, clock steps, releases, the violation). The kinds of band and mark
//! are typed ([`BandKind`], [`MarkKind`]): the world's are constants here, a system declares its
//! own with its lens, and the legend is built from them. Dense marks are aggregated into counted
//! buckets. A second rendering places each node's row on its
//! own wall clock (the "local time" toggle). A violation's headline is the violated invariant's own
//! measure, as its monitor measured it, with the bound it was held to (the family's measure follows
//! as context). `--seeds N` reports the distribution of each family's
//! headline number: the overlap of two hosts doing master-only work (against the longest pause and
//! the largest clock skew) for Calico, the time from excess to release for Cilium, the longest
//! duplicate-announcer window (two or more speakers answering ARP for one IP) for MetalLB.

mod kinds;
mod render;
mod rows;
mod world;

pub use kinds::{BandKind, Lane, Legend, MarkKind, Measure, Unit};
pub use render::{distribution_html, distribution_markdown, html, markdown};
use rows::sort_key;
pub use rows::{Row, Rows};
use serde::Serialize;
pub use sim::units::{median, secs};
use sim::{Fault, FaultKind, Outcome, Record, Violation};

/// What a report needs to know about a run besides its trace.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The scenario's name (`calico`, `cilium`, ...).
    pub scenario: String,
    /// The seed that drew the run.
    pub seed: u64,
    /// The bug switches it ran with (`--bug`).
    pub bugs: Vec<String>,
    /// The fix switches it ran with (`--fix`).
    pub fixes: Vec<String>,
    /// The run's swarm options (as JSON).
    pub options: serde_json::Value,
    /// The fault schedule it ran.
    pub schedule: Vec<Fault>,
    /// The command that replays it.
    pub replay: String,
    /// The fault profile its seed drew with (`adversarial`, `realistic`).
    pub profile: String,
    /// Length of the fault window (s).
    pub fault_window_s: f64,
    /// Each invariant of the system (a report of a violation headlines the violated one's
    /// measure, with its bound).
    pub invariants: Vec<InvariantInfo>,
}

/// What a report needs to know about one invariant of the system.
#[derive(Clone, Debug)]
pub struct InvariantInfo {
    /// Its name, as violations carry it.
    pub name: String,
    /// Its headline measure (what the measured value is).
    pub measure: String,
    /// Its bound from the catalog (simulated microseconds), if it has one.
    pub bound_us: Option<u64>,
    /// How that bound is derived, in words.
    pub bound: String,
}

impl InvariantInfo {
    /// The bound a violation was held to (the monitor's `applied_us` where it gave one, else the
    /// catalog's), with the derivation.
    fn bound_text(&self, applied_us: Option<u64>) -> Option<String> {
        let number = applied_us.or(self.bound_us).map(sim::units::show_secs);
        match (number, self.bound.as_str()) {
            (Some(n), "") => Some(n),
            (Some(n), words) => Some(format!("{n}; {words}")),
            (None, "") => None,
            (None, words) => Some(words.to_string()),
        }
    }
}

/// A fault as the report lists it.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRow {
    /// When it starts (true time, s).
    pub at_s: f64,
    /// How long it lasts (s; 0 for an instantaneous fault).
    pub dur_s: f64,
    /// Its description ([`FaultKind::describe`]).
    pub what: String,
}

/// A stretch of time on one node's row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Band {
    /// What it stands for (the world's kinds, [`BandKind::WORLD`], or its system's own).
    pub kind: BandKind,
    /// Where it starts (true time, s).
    pub from_s: f64,
    /// Where it ends (true time, s; the end of the run if still open then).
    pub to_s: f64,
    /// The text shown when hovering over it.
    pub label: String,
}

/// An instant on one node's row (or a bucket of `count` instants).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Mark {
    /// What it stands for (the world's kinds, [`MarkKind::WORLD`], the violation, or its
    /// system's own).
    pub kind: MarkKind,
    /// When it happened (true time, s; a bucket's first instant).
    pub at_s: f64,
    /// The text shown when hovering over it (`N x kind` for a bucket).
    pub label: String,
    /// Instants it stands for (1 unless dense marks were bucketed).
    pub count: u32,
}

/// One node's row.
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    /// The node's name.
    pub name: String,
    /// Its bands, by start time.
    pub bands: Vec<Band>,
    /// Its marks, by time (dense kinds bucketed).
    pub marks: Vec<Mark>,
    /// (true time s, wall clock offset s) at each change.
    pub offsets: Vec<(f64, f64)>,
    /// The largest absolute wall clock offset in `offsets` (s).
    pub max_abs_offset_s: f64,
}

/// The violation as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ViolationRow {
    /// The invariant's name.
    pub invariant: String,
    /// `safety`, `liveness` or `crash`.
    pub kind: String,
    /// True time of detection (s).
    pub at_s: f64,
    /// Index of the event at which it was detected.
    pub event_index: u64,
    /// The node it is about, if any (its row gets the violation mark).
    pub node: Option<String>,
    /// The monitor's causal sentence.
    pub explanation: String,
    /// The command that replays the run.
    pub replay: String,
}

/// The headline number of one run: the violated invariant's own measure (in seconds, as its
/// monitor measured it), or (for a passing run, or a violation outside the catalog) the family's.
#[derive(Clone, Debug, Serialize)]
pub struct Headline {
    /// What it measures.
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// Its value in `unit` (none: nothing to measure in this run).
    pub value: Option<f64>,
    /// The violated invariant's bound, when the headline is that invariant's measure.
    pub bound: Option<String>,
    /// The family's measure, when the headline is the violated invariant's (context).
    pub family: Option<Measure>,
    /// The longest pause and the largest clock skew of the run (s), its context.
    pub longest_pause_s: f64,
    /// The largest clock step in the schedule or wall clock offset a row saw (s, absolute).
    pub largest_skew_s: f64,
}

impl Headline {
    /// The family's measure of the run (the headline itself unless it is a violated invariant's
    /// measure): what a `--seeds` distribution compares across seeds.
    pub fn family_measure(&self) -> Measure {
        self.family.clone().unwrap_or_else(|| Measure {
            name: self.name.clone(),
            unit: self.unit,
            value: self.value,
        })
    }
}

/// Everything a single-run report shows.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The bug switches the run had.
    pub bugs: Vec<String>,
    /// The fix switches the run had.
    pub fixes: Vec<String>,
    /// The fault profile its seed drew with.
    pub profile: String,
    /// The run's swarm options (as JSON).
    pub options: serde_json::Value,
    /// The fault schedule, in order.
    pub faults: Vec<FaultRow>,
    /// `pass` or `violation`.
    pub outcome: String,
    /// The violation, if the run had one.
    pub violation: Option<ViolationRow>,
    /// Coverage points and whether the run reached each.
    pub coverage: Vec<(String, bool)>,
    /// Events recorded.
    pub events: u64,
    /// Simulated time covered (s).
    pub sim_time_s: f64,
    /// Length of the fault window (s); the liveness phase follows it.
    pub fault_window_s: f64,
    /// The run's trace hash (hex).
    pub trace_hash: String,
    /// One row per node, hosts first.
    pub nodes: Vec<NodeRow>,
    /// The family's headline number and its context.
    pub headline: Headline,
    /// The command that replays the run.
    pub replay: String,
    /// The kinds its timeline's legend explains.
    #[serde(skip)]
    pub legend: Legend,
}

/// What a system adds to a report: bands and marks drawn from its own events, and its headline
/// measure. Each system has one (`System::lens` in the scenarios crate); the world's own events
/// (faults, pauses, crashes, stalls, task deaths, exits, clock steps, cloud releases, ARP entries)
/// are drawn for every system by [`build`]. The kinds of band and mark it draws are constants it
/// declares ([`BandKind::new`], [`MarkKind::new`]) and lists in [`ReportLens::bands`] and
/// [`ReportLens::marks`]: the legend is built from them.
pub trait ReportLens: Send {
    /// Sees one record of the run, in order: `node` is its node's name, `t` its true time (s).
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows);
    /// The headline measure, with its unit and, if this run measured it, its value, once the run
    /// has ended at `end` (s). A report of a violation headlines the violated invariant's own
    /// measure instead (the monitor measures it in time, [`sim::Measured`]).
    fn headline(&mut self, end: f64) -> Measure;
    /// The kinds of band it draws (for the legend).
    fn bands(&self) -> &'static [BandKind] {
        &[]
    }
    /// The kinds of mark it draws (for the legend).
    fn marks(&self) -> &'static [MarkKind] {
        &[]
    }
}

/// The lens of a system that adds nothing: the world's rows only, no headline measure.
pub struct NoLens;

impl ReportLens for NoLens {
    fn observe(&mut self, _: &Record, _: &str, _: f64, _: &mut Rows) {}
    fn headline(&mut self, _: f64) -> Measure {
        Measure::none()
    }
}

/// Builds a report from a run's information, its outcome (run with its trace kept, so that it
/// holds the typed records) and its system's lens.
pub fn build(info: &RunInfo, outcome: &Outcome, lens: &mut dyn ReportLens) -> Report {
    let empty = sim::event::Recording {
        nodes: Vec::new(),
        records: Vec::new(),
    };
    let recording = outcome.records.as_ref().unwrap_or(&empty);
    let mut names = recording.nodes.clone();
    names.sort_by_key(|n| sort_key(n));
    let mut rows = Rows(names.iter().map(|n| (n.clone(), Row::new())).collect());
    let end = secs(outcome.sim_time_ms * 1000);
    let mut world = world::WorldLens::default();
    for rec in &recording.records {
        let node = recording.nodes[rec.node as usize].as_str();
        let t = secs(rec.t_us);
        world.observe(rec, node, t, end, &mut rows);
        lens.observe(rec, node, t, &mut rows);
    }
    let violation = outcome.violation.as_ref().map(|v| violation_row(v, info));
    if let Some(v) = &violation {
        let target = v
            .node
            .clone()
            .or_else(|| names.first().cloned())
            .unwrap_or_default();
        if let Some(r) = rows.get(&target) {
            r.mark(
                MarkKind::VIOLATION,
                v.at_s,
                format!("{}: {}", v.invariant, v.explanation),
            );
        }
    }
    let nodes: Vec<NodeRow> = names
        .iter()
        .filter_map(|n| rows.0.remove(n).map(|r| r.finish(n.clone(), end)))
        .collect();
    let own = outcome
        .violation
        .as_ref()
        .and_then(|v| Some((info.invariants.iter().find(|i| i.name == v.invariant)?, v)));
    let family = lens.headline(end);
    let (own, bound, family) = match own {
        Some((i, v)) => (
            Measure::seconds(i.measure.clone(), v.measured.map(|m| secs(m.value_us))),
            i.bound_text(v.measured.and_then(|m| m.bound_us)),
            Some(family),
        ),
        None => (family, None, None),
    };
    let drawn: Vec<BandKind> = nodes
        .iter()
        .flat_map(|n| n.bands.iter().map(|b| b.kind))
        .collect();
    let marked: Vec<MarkKind> = nodes
        .iter()
        .flat_map(|n| n.marks.iter().map(|m| m.kind))
        .collect();
    let legend = Legend::new(&drawn, &marked, lens.bands(), lens.marks());
    let headline = Headline {
        name: own.name,
        unit: own.unit,
        value: own.value,
        bound,
        family,
        longest_pause_s: longest_pause_s(&info.schedule),
        largest_skew_s: largest_skew_s(&info.schedule, &nodes),
    };
    Report {
        scenario: info.scenario.clone(),
        seed: info.seed,
        bugs: info.bugs.clone(),
        fixes: info.fixes.clone(),
        profile: info.profile.clone(),
        options: info.options.clone(),
        faults: info
            .schedule
            .iter()
            .map(|f| FaultRow {
                at_s: f.at_ms as f64 / 1000.0,
                dur_s: f.dur_ms as f64 / 1000.0,
                what: f.kind.describe(),
            })
            .collect(),
        outcome: if outcome.violation.is_some() {
            "violation".into()
        } else {
            "pass".into()
        },
        violation,
        coverage: outcome
            .coverage
            .iter()
            .map(|(p, r)| (p.to_string(), *r))
            .collect(),
        events: outcome.events,
        sim_time_s: end,
        fault_window_s: info.fault_window_s,
        trace_hash: outcome.trace_hash.clone(),
        nodes,
        headline,
        replay: info.replay.clone(),
        legend,
    }
}

fn violation_row(v: &Violation, info: &RunInfo) -> ViolationRow {
    ViolationRow {
        invariant: v.invariant.clone(),
        kind: v.kind.to_string(),
        at_s: v.sim_time_ms as f64 / 1000.0,
        event_index: v.event_index,
        node: v.node.clone(),
        explanation: v.explanation.clone(),
        replay: info.replay.clone(),
    }
}

/// The longest pause in the schedule (s).
fn longest_pause_s(schedule: &[Fault]) -> f64 {
    schedule
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::Pause { .. }))
        .map(|f| f.dur_ms as f64 / 1000.0)
        .fold(0.0, f64::max)
}

/// The largest clock skew (s): a step in the schedule, or an offset a row saw.
fn largest_skew_s(schedule: &[Fault], nodes: &[NodeRow]) -> f64 {
    let step_max = schedule
        .iter()
        .filter_map(|f| match f.kind {
            FaultKind::ClockStep { delta_ms, .. } => Some((delta_ms as f64 / 1000.0).abs()),
            _ => None,
        })
        .fold(0.0, f64::max);
    nodes
        .iter()
        .map(|n| n.max_abs_offset_s)
        .fold(step_max, f64::max)
}

/// One seed's line in a `--seeds` report.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRow {
    /// The seed.
    pub seed: u64,
    /// Its headline number (in the distribution's unit), if the run measured one.
    pub headline: Option<f64>,
    /// Its longest pause (s).
    pub longest_pause_s: f64,
    /// Its largest clock skew (s).
    pub largest_skew_s: f64,
    /// The invariant it violated, if any.
    pub violation: Option<String>,
}

/// The `--seeds` report: the distribution of the headline number.
#[derive(Clone, Debug, Serialize)]
pub struct Distribution {
    /// The scenario's name.
    pub scenario: String,
    /// The bug switches every seed ran with.
    pub bugs: Vec<String>,
    /// The fix switches every seed ran with.
    pub fixes: Vec<String>,
    /// The fault profile the seeds drew with (`adversarial` unless set).
    pub profile: String,
    /// What the headline number measures.
    pub headline: String,
    /// Its unit.
    pub unit: Unit,
    /// One row per seed, by seed.
    pub seeds: Vec<SeedRow>,
    /// Quantiles of the headline number over the seeds where it was measured (in `unit`).
    pub median: Option<f64>,
    /// The 90th percentile: the sorted value at index `round(0.9 * (n - 1))`, as `median`.
    pub p90: Option<f64>,
    /// The largest value, as `median`.
    pub max: Option<f64>,
    /// Seeds whose run had a violation.
    pub failures: usize,
}

/// Summarises seed rows whose headline is `headline` in `unit`.
pub fn distribution(
    scenario: &str,
    bugs: &[String],
    fixes: &[String],
    (headline, unit): (&str, Unit),
    seeds: Vec<SeedRow>,
) -> Distribution {
    let mut v: Vec<f64> = seeds.iter().filter_map(|r| r.headline).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| (!v.is_empty()).then(|| v[((v.len() - 1) as f64 * p).round() as usize]);
    Distribution {
        scenario: scenario.into(),
        bugs: bugs.to_vec(),
        fixes: fixes.to_vec(),
        profile: "adversarial".into(),
        headline: headline.into(),
        unit,
        median: q(0.5),
        p90: q(0.9),
        max: q(1.0),
        failures: seeds.iter().filter(|r| r.violation.is_some()).count(),
        seeds,
    }
}

/// One line per fact: the verdict, the violation (invariant, kind, event, time, node), the causal
/// sentence, and the trace hash.
pub fn summary(scenario: &str, seed: u64, outcome: &Outcome) -> String {
    match &outcome.violation {
        None => format!(
            "{scenario} seed {seed}: PASS ({} events, {} ms simulated, trace {})",
            outcome.events, outcome.sim_time_ms, outcome.trace_hash
        ),
        Some(v) => format!(
            "{scenario} seed {seed}: {}\n  {}\n  trace {}",
            headline(v),
            v.explanation,
            outcome.trace_hash
        ),
    }
}

/// `VIOLATION invariant (kind) at event #i, t s true time, node n`.
pub fn headline(v: &Violation) -> String {
    format!(
        "VIOLATION {} ({}) at event #{}, {:.3} s true time{}",
        v.invariant,
        v.kind,
        v.event_index,
        v.sim_time_ms as f64 / 1000.0,
        v.node
            .as_ref()
            .map(|n| format!(", node {n}"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::Kind;

    /// A violation is held to the bound its monitor applied (a snapshot's 245 s rather than the
    /// catalog's 125 s), shown with the catalog's derivation; without one, the catalog's.
    #[test]
    fn the_bound_shown_is_the_one_applied() {
        let i = InvariantInfo {
            name: "x".into(),
            measure: "m".into(),
            bound_us: Some(125_000_000),
            bound: "why".into(),
        };
        assert_eq!(i.bound_text(Some(245_000_000)).unwrap(), "245.000 s; why");
        assert_eq!(i.bound_text(None).unwrap(), "125.000 s; why");
        let unbounded = InvariantInfo {
            bound_us: None,
            bound: String::new(),
            ..i
        };
        assert_eq!(unbounded.bound_text(None), None);
    }

    #[test]
    fn headline_names_everything() {
        let v = Violation {
            invariant: "x".into(),
            kind: Kind::Safety,
            event_index: 7,
            sim_time_ms: 1500,
            node: Some("h1".into()),
            explanation: "because".into(),
            measured: None,
        };
        assert_eq!(
            headline(&v),
            "VIOLATION x (safety) at event #7, 1.500 s true time, node h1"
        );
        let o = Outcome {
            violation: Some(v),
            events: 8,
            sim_time_ms: 1500,
            trace_hash: "ab".into(),
            trace: None,
            records: None,
            coverage: vec![],
            timers: 0,
            messages: 0,
            nodes: 0,
        };
        assert!(summary("s", 3, &o).contains("because"));
    }

    #[test]
    fn dense_marks_are_bucketed() {
        let marks: Vec<Mark> = (0..1000)
            .map(|i| Mark {
                kind: MarkKind::RELEASE,
                at_s: i as f64 * 0.5,
                label: "x".into(),
                count: 1,
            })
            .collect();
        let b = rows::bucket(marks, 500.0);
        assert!(b.len() <= rows::MAX_MARKS + 1, "{}", b.len());
        assert_eq!(b.iter().map(|m| m.count).sum::<u32>(), 1000);
    }

    #[test]
    fn nodes_sort_hosts_first() {
        let mut v = vec!["etcd", "h10", "c2", "h2", "neutron-db", "h1"];
        v.sort_by_key(|n| sort_key(n));
        assert_eq!(v, vec!["h1", "h2", "h10", "c2", "etcd", "neutron-db"]);
    }
}
