//! Reports: what happened in a run and why, for people (`index.html`, `summary.md`) and tools
//! (`report.json`).
//!
//! A report is derived from a run's JSON-lines trace plus its replay information, so it works for
//! every scenario. The timeline has one row per node over true time: faults as bands (cut off the
//! network, paused, down, a task stalled), what the node believed as bands (Calico: believes it is
//! master, holds the election key; Cilium: IPs held in the release handshake; a standby operator
//! active), and instants as marks (task deaths, crashes, clock steps, releases, the violation).
//! Dense marks are aggregated into counted buckets. A second rendering places each node's row on its
//! own wall clock (the "local time" toggle). `--seeds N` reports the distribution of each family's
//! headline number: the overlap of two hosts doing master-only work (against the longest pause and
//! the largest clock skew) for Calico, the time from excess to release for Cilium, the longest
//! duplicate-announcer window (two or more speakers answering ARP for one IP) for MetalLB.
#![forbid(unsafe_code)]

mod render;

pub use render::{distribution_html, distribution_markdown, html, markdown};
use serde::Serialize;
use sim::event::{Event, TraceLine};
use sim::{Fault, FaultKind, Outcome, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// What a report needs to know about a run besides its trace.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub scenario: String,
    pub seed: u64,
    pub bugs: Vec<String>,
    pub fixes: Vec<String>,
    /// The run's swarm options (as JSON).
    pub options: serde_json::Value,
    pub schedule: Vec<Fault>,
    /// The command that replays it.
    pub replay: String,
    /// Length of the fault window (s).
    pub fault_window_s: f64,
}

/// A fault as the report lists it.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRow {
    pub at_s: f64,
    pub dur_s: f64,
    pub what: String,
}

/// A stretch of time on one node's row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Band {
    /// cut, paused, down, stalled, master, holder, handshake, active.
    pub kind: String,
    pub from_s: f64,
    pub to_s: f64,
    pub label: String,
}

/// An instant on one node's row (or a bucket of `count` instants).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Mark {
    /// task-death, crash, exit, step, release, warning, violation.
    pub kind: String,
    pub at_s: f64,
    pub label: String,
    pub count: u32,
}

/// One node's row.
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    pub name: String,
    pub bands: Vec<Band>,
    pub marks: Vec<Mark>,
    /// (true time s, wall clock offset s) at each change.
    pub offsets: Vec<(f64, f64)>,
    pub max_abs_offset_s: f64,
}

/// The violation as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ViolationRow {
    pub invariant: String,
    pub kind: String,
    pub at_s: f64,
    pub event_index: u64,
    pub node: Option<String>,
    pub explanation: String,
    pub replay: String,
}

/// The family's headline number for one run.
#[derive(Clone, Debug, Serialize)]
pub struct Headline {
    /// What it measures.
    pub name: String,
    /// Seconds (none: nothing to measure in this run).
    pub value_s: Option<f64>,
    /// The longest pause and the largest clock skew of the run (s), its context.
    pub longest_pause_s: f64,
    pub largest_skew_s: f64,
}

/// Everything a single-run report shows.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub bugs: Vec<String>,
    pub fixes: Vec<String>,
    pub options: serde_json::Value,
    pub faults: Vec<FaultRow>,
    pub outcome: String,
    pub violation: Option<ViolationRow>,
    pub coverage: Vec<(String, bool)>,
    pub events: u64,
    pub sim_time_s: f64,
    pub fault_window_s: f64,
    pub trace_hash: String,
    pub nodes: Vec<NodeRow>,
    pub headline: Headline,
    pub replay: String,
}

/// At most this many marks of one kind on a row before they are bucketed.
const MAX_MARKS: usize = 120;

fn s(us: u64) -> f64 {
    us as f64 / 1e6
}

struct RowBuilder {
    bands: Vec<Band>,
    open: BTreeMap<String, (f64, String)>,
    marks: Vec<Mark>,
    offsets: Vec<(f64, f64)>,
}

impl RowBuilder {
    fn new() -> Self {
        RowBuilder {
            bands: Vec::new(),
            open: BTreeMap::new(),
            marks: Vec::new(),
            offsets: Vec::new(),
        }
    }

    fn start(&mut self, key: &str, kind: &str, at: f64, label: &str) {
        self.open
            .entry(key.to_string())
            .or_insert((at, format!("{kind}\u{1f}{label}")));
    }

    fn end(&mut self, key: &str, at: f64) {
        if let Some((from, kl)) = self.open.remove(key) {
            let (kind, label) = kl.split_once('\u{1f}').unwrap();
            if at > from {
                self.bands.push(Band {
                    kind: kind.into(),
                    from_s: from,
                    to_s: at,
                    label: label.into(),
                });
            }
        }
    }

    fn end_prefix(&mut self, prefix: &str, at: f64) {
        let keys: Vec<String> = self
            .open
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        for k in keys {
            self.end(&k, at);
        }
    }

    fn mark(&mut self, kind: &str, at: f64, label: String) {
        self.marks.push(Mark {
            kind: kind.into(),
            at_s: at,
            label,
            count: 1,
        });
    }

    fn finish(mut self, name: String, end: f64) -> NodeRow {
        let keys: Vec<String> = self.open.keys().cloned().collect();
        for k in keys {
            self.end(&k, end);
        }
        self.bands.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
        let marks = bucket(self.marks, end);
        let max_abs_offset_s = self
            .offsets
            .iter()
            .map(|(_, o)| o.abs())
            .fold(0.0, f64::max);
        NodeRow {
            name,
            bands: self.bands,
            marks,
            offsets: self.offsets,
            max_abs_offset_s,
        }
    }
}

/// Aggregates dense marks of one kind into at most `MAX_MARKS` counted buckets.
fn bucket(marks: Vec<Mark>, end: f64) -> Vec<Mark> {
    let mut by_kind: BTreeMap<String, Vec<Mark>> = BTreeMap::new();
    for m in marks {
        by_kind.entry(m.kind.clone()).or_default().push(m);
    }
    let mut out = Vec::new();
    for (kind, ms) in by_kind {
        if ms.len() <= MAX_MARKS || kind == "violation" {
            out.extend(ms);
            continue;
        }
        let width = (end / MAX_MARKS as f64).max(1e-9);
        let mut buckets: BTreeMap<u64, (f64, u32, String)> = BTreeMap::new();
        for m in ms {
            let b = (m.at_s / width) as u64;
            let e = buckets.entry(b).or_insert((m.at_s, 0, m.label.clone()));
            e.1 += 1;
        }
        for (_, (at, count, label)) in buckets {
            let label = if count > 1 {
                format!("{count} x {kind}")
            } else {
                label
            };
            out.push(Mark {
                kind: kind.clone(),
                at_s: at,
                label,
                count,
            });
        }
    }
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    out
}

/// Builds a report from a run's information, outcome and JSON-lines trace.
pub fn build(info: &RunInfo, outcome: &Outcome, trace: &[u8]) -> Report {
    let lines: Vec<TraceLine> = std::str::from_utf8(trace)
        .unwrap_or("")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut names: Vec<String> = Vec::new();
    for l in &lines {
        if !names.contains(&l.node) {
            names.push(l.node.clone());
        }
    }
    names.sort_by_key(|n| sort_key(n));
    let mut rows: BTreeMap<String, RowBuilder> = names
        .iter()
        .map(|n| (n.clone(), RowBuilder::new()))
        .collect();
    let mut fault_nodes: BTreeMap<u32, (String, Vec<String>)> = BTreeMap::new();
    let mut election_holder: Option<String> = None;
    let mut handshake: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut acting: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut overlap = 0.0f64;
    let mut releases: Vec<f64> = Vec::new();
    // MetalLB: IP -> announcers, and the start of the current duplicate-announcer window.
    let mut announcers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dup_from: BTreeMap<String, f64> = BTreeMap::new();
    let mut longest_dup = 0.0f64;
    // Network faults in force (cuts, latency, pauses) and when the network last became whole: the
    // headline is the part of a duplicate window after the network healed (while it is split, two
    // announcers are expected).
    let mut net_faults: BTreeSet<u32> = BTreeSet::new();
    let mut whole_since: Option<f64> = Some(0.0);
    let after_heal = |t0: f64, t: f64, whole: Option<f64>| whole.map_or(0.0, |h| t - t0.max(h));
    let end = s(outcome.sim_time_ms * 1000);
    for l in &lines {
        let t = s(l.t_us);
        let row = rows.get_mut(&l.node).unwrap();
        let off = (l.local_us - l.t_us as i64) as f64 / 1e6;
        if row
            .offsets
            .last()
            .is_none_or(|(_, o)| (o - off).abs() > 0.5)
        {
            row.offsets.push((t, off));
        }
        match &l.ev {
            Event::FaultStart { id, fault, .. } => {
                let nodes: Vec<String> = fault.nodes().iter().map(|x| x.to_string()).collect();
                let (kind, label) = match fault {
                    FaultKind::Partition { .. }
                    | FaultKind::Isolate { .. }
                    | FaultKind::Simplex { .. } => ("cut", fault.describe()),
                    FaultKind::Latency { .. } | FaultKind::ServiceSlow { .. } => {
                        ("slow", fault.describe())
                    }
                    FaultKind::ServiceUnavailable { .. }
                    | FaultKind::ServiceAmbiguous { .. }
                    | FaultKind::ServiceGarbled { .. } => ("degraded", fault.describe()),
                    _ => ("", String::new()),
                };
                if !kind.is_empty() {
                    for n in &nodes {
                        if let Some(r) = rows.get_mut(n) {
                            r.start(&format!("fault{id}"), kind, t, &label);
                        }
                    }
                    fault_nodes.insert(*id, (kind.into(), nodes));
                }
            }
            Event::FaultEnd { id } => {
                if let Some((_, nodes)) = fault_nodes.remove(id) {
                    for n in nodes {
                        if let Some(r) = rows.get_mut(&n) {
                            r.end(&format!("fault{id}"), t);
                        }
                    }
                }
            }
            Event::NodePause => row.start("paused", "paused", t, "paused"),
            Event::NodeResume => row.end("paused", t),
            Event::NodeCrash => {
                row.end_prefix("", t);
                row.start("down", "down", t, "crashed");
                row.mark("crash", t, "node crashed".into());
            }
            Event::NodeBoot { boot } if *boot > 1 => row.end("down", t),
            Event::TaskStall { task, until_ms, .. } => {
                let key = format!("stall-{task}");
                row.start(&key, "stalled", t, &format!("{task} stalled"));
                let until = *until_ms as f64 / 1000.0;
                // Close it at its deadline (or earlier, at a fault end, below).
                row.end(&key, until.min(end));
            }
            Event::TaskDeath { task, pid } => row.mark(
                "task-death",
                t,
                format!("{task} of pid {pid} died silently"),
            ),
            Event::ProcessExit { name, pid, status } => {
                row.mark("exit", t, format!("{name} ({pid}) exited: {status:?}"));
                if name == "speaker" {
                    row.end_prefix("announce ", t);
                    for a in announcers.values_mut() {
                        a.remove(&l.node);
                    }
                }
            }
            Event::ClockStep { delta_ms } => {
                row.mark("step", t, format!("clock step {delta_ms:+} ms"))
            }
            Event::CalicoStamp { stamp_us } => {
                if *stamp_us != 0 {
                    row.start("master", "master", t, "believes it is master");
                } else {
                    row.end("master", t);
                }
            }
            Event::CalicoStaleWarning { host, lag_ms, .. } => row.mark(
                "warning",
                t,
                format!("stale report from {host}, {} s old", lag_ms / 1000),
            ),
            Event::CalicoMasterOnly { .. } => {
                let e = acting.entry(l.node.clone()).or_insert((t, t));
                if t - e.1 > 8.3 {
                    *e = (t, t);
                } else {
                    e.1 = t;
                }
                let (s0, _) = *e;
                for (other, (s1, l1)) in &acting {
                    if *other != l.node && t - l1 <= 8.3 {
                        overlap = overlap.max(t.min(*l1) - s0.max(*s1));
                    }
                }
            }
            Event::EtcdPut { key, value, .. } if key.ends_with("/neutron_election") => {
                let host = value.split(':').next().unwrap_or("").to_string();
                if election_holder.as_ref() != Some(&host) {
                    if let Some(h) = election_holder.take() {
                        if let Some(r) = rows.get_mut(&h) {
                            r.end("holder", t);
                        }
                    }
                    if let Some(r) = rows.get_mut(&host) {
                        r.start(
                            "holder",
                            "holder",
                            t,
                            &format!("holds the election key ({value})"),
                        );
                    }
                    election_holder = Some(host);
                }
            }
            Event::EtcdDelete { key, .. } if key.ends_with("/neutron_election") => {
                if let Some(h) = election_holder.take() {
                    if let Some(r) = rows.get_mut(&h) {
                        r.end("holder", t);
                    }
                }
            }
            Event::CiliumAgentState { ip, state, .. } => {
                let held = handshake.entry(l.node.clone()).or_default();
                match state.as_deref() {
                    Some("marked-for-release") | Some("ready-for-release") => {
                        held.insert(ip.to_string(), state.unwrap().to_string());
                    }
                    _ => {
                        held.remove(ip.as_str());
                    }
                }
                let row = rows.get_mut(&l.node).unwrap();
                row.end("handshake", t);
                if !held.is_empty() {
                    row.start(
                        "handshake",
                        "handshake",
                        t,
                        &format!("{} IP(s) in the release handshake", held.len()),
                    );
                }
            }
            Event::CloudUnassign { instance, ip, .. } => {
                if let Some(r) = rows.get_mut(instance.as_str()) {
                    r.mark("release", t, format!("{ip} unassigned"));
                }
            }
            Event::CiliumRelease { excess_for_ms, .. } => {
                releases.push(*excess_for_ms as f64 / 1000.0)
            }
            Event::L2Announce { ip, .. } => {
                row.start(
                    &format!("announce {ip}"),
                    "announcer",
                    t,
                    &format!("announces {ip}"),
                );
                announcers
                    .entry(ip.clone())
                    .or_default()
                    .insert(l.node.clone());
            }
            Event::L2Withdraw { ip, .. } => {
                row.end(&format!("announce {ip}"), t);
                announcers.entry(ip.clone()).or_default().remove(&l.node);
            }
            Event::ArpEntry { ip, node, via } => {
                let key = format!("arp {ip}");
                row.end(&key, t);
                row.start(&key, "arp", t, &format!("{ip} -> {node} (heard {via})"));
            }
            Event::MlMember { member, state, .. } if state == "forgotten" => {
                row.mark("forget", t, format!("forgot {member}"))
            }
            Event::MlJoin {
                addresses,
                joined,
                cause,
            } => row.mark(
                "join",
                t,
                format!("join ({cause}) {addresses:?}: {joined} answered"),
            ),
            _ => {}
        }
        match &l.ev {
            Event::FaultStart {
                id,
                fault:
                    FaultKind::Partition { .. }
                    | FaultKind::Simplex { .. }
                    | FaultKind::Isolate { .. }
                    | FaultKind::Latency { .. }
                    | FaultKind::Pause { .. },
                ..
            } => {
                net_faults.insert(*id);
                // Windows still open count up to here.
                for t0 in dup_from.values() {
                    longest_dup = longest_dup.max(after_heal(*t0, t, whole_since));
                }
                whole_since = None;
            }
            Event::FaultEnd { id } if net_faults.remove(id) && net_faults.is_empty() => {
                whole_since = Some(t);
            }
            _ => {}
        }
        if matches!(
            l.ev,
            Event::L2Announce { .. }
                | Event::L2Withdraw { .. }
                | Event::NodeCrash
                | Event::ProcessExit { .. }
        ) {
            if matches!(l.ev, Event::NodeCrash) {
                for a in announcers.values_mut() {
                    a.remove(&l.node);
                }
            }
            for (ip, a) in &announcers {
                if a.len() >= 2 {
                    if !dup_from.contains_key(ip) {
                        dup_from.insert(ip.clone(), t);
                        if let Some(r) = rows.get_mut("router") {
                            r.start(
                                &format!("duplicate {ip}"),
                                "duplicate",
                                t,
                                &format!("{ip} announced by {a:?}"),
                            );
                        }
                        for n in a {
                            if let Some(r) = rows.get_mut(n) {
                                r.mark("duplicate", t, format!("{ip} announced by {a:?}"));
                            }
                        }
                    }
                } else if let Some(t0) = dup_from.remove(ip) {
                    longest_dup = longest_dup.max(after_heal(t0, t, whole_since));
                    if let Some(r) = rows.get_mut("router") {
                        r.end(&format!("duplicate {ip}"), t);
                    }
                }
            }
        }
    }
    for t0 in dup_from.values() {
        longest_dup = longest_dup.max(after_heal(*t0, end, whole_since));
    }
    let violation = outcome
        .violation
        .as_ref()
        .map(|v: &Violation| ViolationRow {
            invariant: v.invariant.clone(),
            kind: v.kind.to_string(),
            at_s: v.sim_time_ms as f64 / 1000.0,
            event_index: v.event_index,
            node: v.node.clone(),
            explanation: v.explanation.clone(),
            replay: info.replay.clone(),
        });
    if let Some(v) = &violation {
        let target = v
            .node
            .clone()
            .or_else(|| names.first().cloned())
            .unwrap_or_default();
        if let Some(r) = rows.get_mut(&target) {
            r.mark(
                "violation",
                v.at_s,
                format!("{}: {}", v.invariant, v.explanation),
            );
        }
    }
    let nodes: Vec<NodeRow> = names
        .iter()
        .filter_map(|n| rows.remove(n).map(|r| r.finish(n.clone(), end)))
        .collect();
    let longest_pause_s = info
        .schedule
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::Pause { .. }))
        .map(|f| f.dur_ms as f64 / 1000.0)
        .fold(0.0, f64::max);
    let step_max = info
        .schedule
        .iter()
        .filter_map(|f| {
            if let FaultKind::ClockStep { delta_ms, .. } = f.kind {
                Some((delta_ms as f64 / 1000.0).abs())
            } else {
                None
            }
        })
        .fold(0.0, f64::max);
    let largest_skew_s = nodes
        .iter()
        .map(|n| n.max_abs_offset_s)
        .fold(step_max, f64::max);
    let system = info.scenario.split('-').next().unwrap_or("");
    let headline = Headline {
        name: match system {
            "cilium" => "median time from excess to release".into(),
            "metallb" => "longest duplicate-announcer window after the network healed".into(),
            _ => "longest overlap of two hosts doing master-only work".into(),
        },
        value_s: match system {
            "cilium" => median(&mut releases),
            "metallb" => Some(longest_dup),
            _ => Some(overlap),
        },
        longest_pause_s,
        largest_skew_s,
    };
    Report {
        scenario: info.scenario.clone(),
        seed: info.seed,
        bugs: info.bugs.clone(),
        fixes: info.fixes.clone(),
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
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

/// Orders nodes: hosts and nodes first (h1, h2, .., c1, .., n1, ..), then services.
fn sort_key(n: &str) -> (u8, String, u32) {
    let digits: String = n
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stem = n[..n.len() - digits.len()].to_string();
    let num = digits.parse().unwrap_or(0);
    let class = match stem.as_str() {
        "h" | "n" => 0,
        "c" => 1,
        _ => 2,
    };
    (class, stem, num)
}

/// One seed's line in a `--seeds` report.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRow {
    pub seed: u64,
    pub headline_s: Option<f64>,
    pub longest_pause_s: f64,
    pub largest_skew_s: f64,
    pub violation: Option<String>,
}

/// The `--seeds` report: the distribution of the headline number.
#[derive(Clone, Debug, Serialize)]
pub struct Distribution {
    pub scenario: String,
    pub bugs: Vec<String>,
    pub fixes: Vec<String>,
    pub headline: String,
    pub seeds: Vec<SeedRow>,
    /// Quantiles of the headline number over the seeds where it was measured (s).
    pub median_s: Option<f64>,
    pub p90_s: Option<f64>,
    pub max_s: Option<f64>,
    pub failures: usize,
}

/// Summarises seed rows.
pub fn distribution(
    scenario: &str,
    bugs: &[String],
    fixes: &[String],
    headline: &str,
    seeds: Vec<SeedRow>,
) -> Distribution {
    let mut v: Vec<f64> = seeds.iter().filter_map(|r| r.headline_s).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| (!v.is_empty()).then(|| v[((v.len() - 1) as f64 * p).round() as usize]);
    Distribution {
        scenario: scenario.into(),
        bugs: bugs.to_vec(),
        fixes: fixes.to_vec(),
        headline: headline.into(),
        median_s: q(0.5),
        p90_s: q(0.9),
        max_s: q(1.0),
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

    #[test]
    fn headline_names_everything() {
        let v = Violation {
            invariant: "x".into(),
            kind: Kind::Safety,
            event_index: 7,
            sim_time_ms: 1500,
            node: Some("h1".into()),
            explanation: "because".into(),
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
                kind: "release".into(),
                at_s: i as f64 * 0.5,
                label: "x".into(),
                count: 1,
            })
            .collect();
        let b = bucket(marks, 500.0);
        assert!(b.len() <= MAX_MARKS + 1, "{}", b.len());
        assert_eq!(b.iter().map(|m| m.count).sum::<u32>(), 1000);
    }

    #[test]
    fn nodes_sort_hosts_first() {
        let mut v = vec!["etcd", "h10", "c2", "h2", "neutron-db", "h1"];
        v.sort_by_key(|n| sort_key(n));
        assert_eq!(v, vec!["h1", "h2", "h10", "c2", "etcd", "neutron-db"]);
    }
}
