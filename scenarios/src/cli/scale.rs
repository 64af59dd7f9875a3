//! `bench --scale`: how cost grows with the cluster and the simulated time. The first scenario of
//! each resizable system (`System::with_nodes`) runs with 3, 5 and 9 nodes of the kind that scales,
//! over 10 and 60 simulated minutes of fault window (the seeds' faults fall in the first 10), on
//! one core. It prints a table, writes `scale.json` and `scale.svg` (wall time per simulated event
//! against nodes) to the output directory, and reports each scenario's spread of time per event and
//! per unit of work (events + messages delivered + timers fired; largest / smallest: the target is
//! 1.3, cost linear in work).

use super::exit::Exit;
use crate::explore::BadInput;
use crate::system::{Registry, Scenario};
use crate::RunSpec;
use serde::Serialize;
use serde_json::json;
use std::path::Path;
use std::time::Instant;

const NODES: [u32; 3] = [3, 5, 9];
const MINUTES: [u64; 2] = [10, 60];

/// One measurement.
#[derive(Clone, Debug, Serialize)]
struct Row {
    scenario: &'static str,
    nodes: u32,
    minutes: u64,
    ms_per_seed: f64,
    events_per_seed: f64,
    us_per_event: f64,
    /// Work per seed: trace events + messages delivered + timers fired (the messages and timers
    /// that are not trace events: memberlist datagrams, ARP frames, watch round trips, sleeps).
    work_per_seed: f64,
    /// Wall microseconds per unit of work.
    us_per_work: f64,
    /// Wall microseconds per simulated second.
    us_per_sim_s: f64,
}

/// `faultline bench --scale`.
pub(super) fn scale(
    reg: &'static Registry,
    seeds: u64,
    out: &Path,
    json: bool,
) -> Result<Exit, BadInput> {
    std::fs::create_dir_all(out)
        .map_err(|e| BadInput(format!("cannot create {}: {e}", out.display())))?;
    let mut rows = Vec::new();
    for sc in scenarios(reg) {
        for nodes in NODES {
            for minutes in MINUTES {
                let r = measure(sc, seeds, nodes, minutes);
                if !json {
                    println!(
                        "{:<28} {nodes} nodes {minutes:>2} min: {:>8.2} ms/seed {:>9.0} events/seed {:>6.2} us/event {:>9.0} work/seed {:>6.2} us/work {:>7.1} us/sim-s",
                        r.scenario, r.ms_per_seed, r.events_per_seed, r.us_per_event, r.work_per_seed, r.us_per_work, r.us_per_sim_s
                    );
                }
                rows.push(r);
            }
        }
    }
    let per_event = spreads(&rows, |r| r.us_per_event);
    let per_work = spreads(&rows, |r| r.us_per_work);
    if !json {
        for ((sc, e), (_, w)) in per_event.iter().zip(&per_work) {
            println!("{sc}: time per event varies {e:.2}x across sizes, per unit of work {w:.2}x (target 1.3x)");
        }
    }
    let spread: Vec<_> = per_event
        .iter()
        .zip(&per_work)
        .map(|((sc, e), (_, w))| json!({"scenario": sc, "us_per_event_max_over_min": e, "us_per_work_max_over_min": w}))
        .collect();
    let doc = json!({ "scale": rows, "spread": spread });
    let (jpath, spath) = (out.join("scale.json"), out.join("scale.svg"));
    for (path, text) in [(&jpath, doc.to_string()), (&spath, svg(&rows))] {
        std::fs::write(path, text)
            .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
    }
    if !json {
        println!("wrote {} and {}", jpath.display(), spath.display());
    }
    println!("{doc}");
    Ok(Exit::Clean)
}

/// The first resizable scenario of each system.
fn scenarios(reg: &'static Registry) -> Vec<&'static Scenario> {
    reg.systems()
        .iter()
        .filter_map(|s| {
            let sc = reg.scenarios().iter().find(|sc| sc.system == s.name)?;
            sc.with_nodes(&sc.draw(0).0, 3).map(|_| sc)
        })
        .collect()
}

/// Seed `i` of `sc` resized to `nodes` nodes, its faults on nodes that no longer exist dropped,
/// with a fault window of `minutes`.
fn resized(sc: &'static Scenario, i: u64, nodes: u32, minutes: u64) -> RunSpec {
    let mut spec = RunSpec::from_seed(sc, 2_000_000 + i, &[], &[]);
    spec.options = sc
        .with_nodes(&spec.options, nodes)
        .expect("a resizable scenario");
    let names = sc.node_names(&spec.options);
    spec.schedule
        .retain(|f| f.kind.nodes().iter().all(|n| names.iter().any(|m| m == n)));
    spec.fault_window_ms = Some(minutes * 60_000);
    spec
}

/// `seeds` seeds of `sc` at one size, on one core.
fn measure(sc: &'static Scenario, seeds: u64, nodes: u32, minutes: u64) -> Row {
    let specs: Vec<RunSpec> = (0..seeds).map(|i| resized(sc, i, nodes, minutes)).collect();
    let (mut events, mut sim_ms, mut work) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    for spec in specs {
        let o = sim::runtime::on_fresh_thread(move || spec.run()).expect("a measured run");
        events += o.events;
        work += o.events + o.messages + o.timers;
        sim_ms += o.sim_time_ms;
    }
    let wall = t0.elapsed().as_secs_f64();
    Row {
        scenario: sc.name,
        nodes,
        minutes,
        ms_per_seed: wall * 1000.0 / seeds as f64,
        events_per_seed: events as f64 / seeds as f64,
        us_per_event: wall * 1e6 / events.max(1) as f64,
        work_per_seed: work as f64 / seeds as f64,
        us_per_work: wall * 1e6 / work.max(1) as f64,
        us_per_sim_s: wall * 1e6 / (sim_ms.max(1) as f64 / 1000.0),
    }
}

/// Each scenario's largest `cost` (time per event, or per unit of work) over its smallest.
fn spreads(rows: &[Row], cost: impl Fn(&Row) -> f64) -> Vec<(&'static str, f64)> {
    let mut out: Vec<(&'static str, f64)> = Vec::new();
    for r in rows {
        if out.iter().any(|(s, _)| *s == r.scenario) {
            continue;
        }
        let v: Vec<f64> = rows
            .iter()
            .filter(|q| q.scenario == r.scenario)
            .map(&cost)
            .collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        out.push((r.scenario, hi / lo.max(f64::MIN_POSITIVE)));
    }
    out
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// Time per event against nodes: one line per scenario and simulated duration.
fn svg(rows: &[Row]) -> String {
    let (w, h, left, bottom) = (640.0, 400.0, 60.0, 40.0);
    let ymax = rows
        .iter()
        .map(|r| r.us_per_event)
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.2;
    let x = |n: u32| left + (n as f64 - 2.0) / 8.0 * (w - left - 20.0);
    let y = |v: f64| h - bottom - v / ymax * (h - bottom - 30.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{left}\" y=\"18\">wall time per simulated event (us) against nodes, one core</text>\n\
         <line x1=\"{left}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{left}\" y1=\"30\" x2=\"{left}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"4\" y=\"34\">{ymax:.2}</text><text x=\"40\" y=\"{b}\">0</text>\n",
        b = h - bottom,
        r = w - 20.0
    );
    for n in NODES {
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{n} nodes</text>\n",
            x(n),
            h - bottom + 18.0
        );
    }
    let mut lines: Vec<(&str, u64)> = Vec::new();
    for r in rows {
        if !lines.contains(&(r.scenario, r.minutes)) {
            lines.push((r.scenario, r.minutes));
        }
    }
    for (k, (sc, min)) in lines.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let dash = if *min > 10 {
            " stroke-dasharray=\"5,3\""
        } else {
            ""
        };
        let pts: Vec<String> = rows
            .iter()
            .filter(|r| r.scenario == *sc && r.minutes == *min)
            .map(|r| format!("{:.1},{:.1}", x(r.nodes), y(r.us_per_event)))
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash} points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{c}\">{sc}, {min} min</text>\n",
            pts.join(" "),
            left + 10.0,
            48.0 + 16.0 * k as f64
        );
    }
    s + "</svg>\n"
}
