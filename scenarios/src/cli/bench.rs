//! `bench` and `measure`: speed per scenario, cost growth, and how fast each bug is found.

use super::exit::Exit;
use crate::bench::cores;
use crate::explore::BadInput;
use crate::explore::{explore, ExploreConfig};
use crate::system::{Registry, Scenario};
use serde_json::json;
use std::time::Instant;

pub(super) fn bench(
    reg: &'static Registry,
    names: &[String],
    seeds: u64,
    repeat: u32,
    profile: crate::faults::Profile,
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
        let row = crate::bench::bench_scenario_in(sc, seeds, jobs, repeat, profile);
        if !json {
            println!("{}", row.line());
        }
        scaling.push(row.jobs_speedup);
        rows.push(row.json());
    }
    let mean_scaling = scaling.iter().sum::<f64>() / scaling.len().max(1) as f64;
    println!(
        "{}",
        json!({"scenarios": rows, "jobs_scaling": mean_scaling, "jobs": jobs, "profile": profile})
    );
    Ok(Exit::Clean)
}

pub(super) fn measure(
    reg: &'static Registry,
    starts: u64,
    seeds: u64,
    profile: crate::faults::Profile,
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
                profile,
            };
            let t0 = Instant::now();
            let s = explore(&cfg, |_| {})?;
            let wall = t0.elapsed().as_secs_f64();
            if let Some(f) = s.failures.first() {
                found += 1;
                n_seeds.push((f.spec.seed - from + 1) as f64);
                secs.push(wall);
                sizes.push(
                    crate::shrink::shrink(reg, &f.spec, &f.outcome, cores()).after_faults as f64,
                );
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
        rows.push(json!({"bug": sw.name, "scenario": sc.name, "found": found, "starts": starts, "median_seeds": ms, "median_seconds": mw, "median_shrunk_faults": mz, "shrunk_at_most_5": small, "profile": profile}));
    }
    println!("{}", json!({ "bugs": rows }));
    Ok(Exit::Clean)
}
