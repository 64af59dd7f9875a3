//! `bench` and `measure`: speed per scenario, cost growth, and how fast each bug is found.

use super::exit::Exit;
use crate::bench::cores;
use crate::explore::BadInput;
use crate::explore::{explore, ExploreConfig};
use crate::system::Registry;
use crate::system::Scenario;
use crate::RunSpec;
use serde_json::json;
use std::time::Instant;

pub(super) fn bench(
    reg: &'static Registry,
    names: &[String],
    seeds: u64,
    repeat: u32,
    json: bool,
) -> Result<Exit, BadInput> {
    let list: Vec<&'static Scenario> = if names.is_empty() {
        reg.scenarios().iter().collect()
    } else {
        names
            .iter()
            .map(|n| reg.scenario(n))
            .collect::<Result<_, _>>()?
    };
    let jobs = cores();
    let mut rows = Vec::new();
    let mut scaling = Vec::new();
    for sc in list {
        let row = crate::bench::bench_scenario(sc, seeds, jobs, repeat);
        if !json {
            println!("{}", row.line());
        }
        scaling.push(row.jobs_speedup);
        rows.push(row.json());
    }
    let mean_scaling = scaling.iter().sum::<f64>() / scaling.len().max(1) as f64;
    println!(
        "{}",
        json!({"scenarios": rows, "jobs_scaling": mean_scaling, "jobs": jobs})
    );
    Ok(Exit::Clean)
}

pub(super) fn measure(
    reg: &'static Registry,
    starts: u64,
    seeds: u64,
    json: bool,
) -> Result<Exit, BadInput> {
    let mut rows = Vec::new();
    if !json {
        println!(
            "{:<32} {:<26} {:>7} {:>9} {:>8} {:>7}",
            "bug", "scenario", "found", "seeds", "seconds", "shrunk"
        );
    }
    for sw in reg
        .switches()
        .filter(|s| s.kind == crate::scenario::SwitchKind::Bug)
    {
        let sc = reg.scenario(sw.scenario)?;
        let (mut n_seeds, mut secs, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        let mut found = 0;
        for k in 0..starts {
            let from = k * 1_000_003;
            let cfg = ExploreConfig {
                scenario: sc,
                from,
                seeds,
                bugs: vec![sw.name.into()],
                fixes: vec![],
                jobs: 1,
                keep_going: false,
                out_dir: None,
                shard: None,
            };
            let t0 = Instant::now();
            let s = explore(&cfg, |_| {})?;
            let wall = t0.elapsed().as_secs_f64();
            if let Some(f) = s.failures.first() {
                found += 1;
                n_seeds.push((f.spec.seed - from + 1) as f64);
                secs.push(wall);
                sizes.push(crate::shrink::shrink(&f.spec, &f.outcome, cores()).after_faults as f64);
            }
        }
        let m = |v: &[f64]| sim::units::median(v).unwrap_or(f64::NAN);
        let (ms, mw, mz) = (m(&n_seeds), m(&secs), m(&sizes));
        let small = sizes.iter().filter(|z| **z <= 5.0).count();
        if !json {
            println!(
                "{:<32} {:<26} {:>4}/{:<2} {:>9.1} {:>8.3} {:>7.1}",
                sw.name, sc.name, found, starts, ms, mw, mz
            );
        }
        rows.push(json!({"bug": sw.name, "scenario": sc.name, "found": found, "starts": starts, "median_seeds": ms, "median_seconds": mw, "median_shrunk_faults": mz, "shrunk_at_most_5": small}));
    }
    println!("{}", json!({ "bugs": rows }));
    Ok(Exit::Clean)
}

/// Cost against nodes and simulated time: the first scenario of each system that can be resized
/// (`System::with_nodes`), with 3, 5 and 9 nodes of the kind that scales, over 10 and 60 simulated
/// minutes of fault window (the seeds' faults fall in the first 10), one core.
pub(super) fn growth(reg: &'static Registry, seeds: u64, json: bool) -> Result<Exit, BadInput> {
    let mut rows = Vec::new();
    for sc in growth_scenarios(reg) {
        growth_of(sc, seeds, json, &mut rows);
    }
    println!("{}", json!({ "growth": rows }));
    Ok(Exit::Clean)
}

/// The first resizable scenario of each system.
fn growth_scenarios(reg: &'static Registry) -> Vec<&'static Scenario> {
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

fn growth_of(sc: &'static Scenario, seeds: u64, json: bool, rows: &mut Vec<serde_json::Value>) {
    for nodes in [3u32, 5, 9] {
        for minutes in [10u64, 60] {
            let specs: Vec<RunSpec> = (0..seeds).map(|i| resized(sc, i, nodes, minutes)).collect();
            let specs = std::sync::Arc::new(specs);
            let totals = std::sync::Arc::new(std::sync::Mutex::new((0u64, 0u64)));
            let (s2, t2) = (specs.clone(), totals.clone());
            let t0 = Instant::now();
            sim::runtime::pool(
                seeds as usize,
                1,
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
                move |i| s2[i].run(),
                move |_, r| {
                    if let Ok(o) = r {
                        let mut t = t2.lock().unwrap();
                        t.0 += o.events;
                        t.1 += o.sim_time_ms;
                    }
                },
            );
            let wall = t0.elapsed().as_secs_f64();
            let (events, sim_ms) = *totals.lock().unwrap();
            let ms_per_seed = wall * 1000.0 / seeds as f64;
            let us_per_event = wall * 1e6 / events.max(1) as f64;
            if !json {
                println!(
                    "{} {nodes} nodes, {minutes:>2} min: {ms_per_seed:>7.2} ms/seed {:>8.0} events/seed {us_per_event:>6.2} us/event {:>8.0}x real time",
                    sc.name,
                    events as f64 / seeds as f64,
                    sim_ms as f64 / 1000.0 / wall
                );
            }
            rows.push(json!({"scenario": sc.name, "nodes": nodes, "minutes": minutes, "ms_per_seed": ms_per_seed, "events_per_seed": events as f64 / seeds as f64, "us_per_event": us_per_event}));
        }
    }
}
