//! `explore` and `shrink`: many seeds, and the smallest story of a failure.

use super::args::*;
use super::count;
use super::exit::Exit;
use super::run::{check_writable, print_options, print_schedule, print_spec, print_violation};
use crate::bench::cores;
use crate::explore::{check_switches, BadInput};
use crate::explore::{
    explore, parse_seed, run_spec, unreached_coverage, ExploreConfig, ExploreSummary, Found,
    ReplayFile,
};
use crate::system::Registry;
use crate::RunSpec;
use serde_json::json;
use sim::Outcome;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// `faultline explore`.
pub(super) fn run_explore(reg: &'static Registry, a: ExploreArgs) -> Result<Exit, BadInput> {
    let ExploreArgs {
        scenario,
        seeds,
        from,
        switches: SwitchArgs { bugs, fixes },
        profile,
        jobs,
        keep_going,
        out,
        no_shrink,
        shard,
        shards,
        junit,
        json,
    } = a;
    let sc = reg.scenario(&scenario)?;
    let profile = crate::faults::Profile::parse(&profile.profile)?;
    let seeds = count(&seeds, "seed count")?;
    let from = parse_seed(&from)?;
    let fixes = check_switches(reg, sc, &bugs, &fixes)?;
    let jobs = jobs.unwrap_or_else(cores).max(1);
    let cfg = ExploreConfig {
        scenario: sc,
        from,
        seeds,
        bugs: bugs.clone(),
        fixes: fixes.clone(),
        jobs,
        keep_going,
        out_dir: Some(out.clone()),
        shard: shard
            .as_deref()
            .map(|s| super::shard::resolve(s, shards.as_deref(), &|v| std::env::var(v).ok()))
            .transpose()?,
        profile,
    };
    let bar = progress_bar(seeds, json);
    let b2 = bar.clone();
    let t0 = Instant::now();
    let summary = explore(&cfg, move |done| {
        if let Some(b) = &b2 {
            b.set_position(done);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let wall_ms = t0.elapsed().as_millis() as u64;
    for e in &summary.write_errors {
        eprintln!("faultline: {e}");
    }
    let wall_s = (wall_ms.max(1)) as f64 / 1000.0;
    let first = summary.failures.first();
    // The coverage points are budgeted for the adversarial draws, which alone reach every one
    // (some need a hypothetical fault, which the realistic profile never draws).
    let unreached = if profile.is_default() {
        unreached_coverage(sc, &summary)
    } else {
        Vec::new()
    };
    if !json {
        print_summary(reg, sc.name, from, &summary, wall_s);
        print_unreached(&unreached, summary.seeds_run);
    }
    // Shrink the first failure (deterministically) so the user gets the smallest story.
    let shrunk = match (first, no_shrink) {
        (Some(f), false) => Some(shrink_failure(reg, f, jobs, &out, json)?),
        _ => None,
    };
    if let Some(path) = &junit {
        write_junit(
            reg,
            path,
            sc.name,
            &summary,
            wall_s,
            shrunk.as_ref().map(|(p, _)| p),
            &unreached,
        )?;
    }
    println!(
        "{}",
        json!({
            "scenario": sc.name, "bugs": bugs, "fixes": fixes, "profile": profile,
            "seeds_run": summary.seeds_run,
            "failures": summary.failures.len(),
            "failing_seeds": summary.failures.iter().map(|f| f.spec.seed).collect::<Vec<_>>(),
            "first_failure": first.map(|f| { let v = f.outcome.violation.as_ref().unwrap(); json!({"seed": f.spec.seed, "invariant": v.invariant, "sim_time_ms": v.sim_time_ms}) }),
            "wall_ms": wall_ms,
            "seeds_per_sec": summary.seeds_run as f64 / wall_s,
            "sim_speedup": summary.sim_time_ms as f64 / 1000.0 / wall_s,
            "failure_file": first.and_then(|f| f.file.as_ref().map(|p| p.display().to_string())),
            "shrunk_file": shrunk.as_ref().map(|(p, _)| p.display().to_string()),
            "shard": cfg.shard.map(|(k, n)| format!("{k}/{n}")),
            "shrunk_faults": shrunk.as_ref().map(|(_, n)| *n),
            "coverage": summary.coverage.iter().map(|(p, n)| (p.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "unreached_coverage": unreached,
        })
    );
    Ok(Exit::failed_if(
        !summary.failures.is_empty() || !unreached.is_empty(),
    ))
}

/// Coverage points no seed reached, as failures of their own kind (after the summary).
fn print_unreached(unreached: &[&str], seeds: u64) {
    for p in unreached {
        println!(
            "\nFAILURE coverage-unreached: no seed of {seeds} reached coverage point {p}; \
             a change may have stopped what it marks from ever happening"
        );
    }
}

/// The progress bar, on a terminal and without `--json`.
fn progress_bar(seeds: u64, json: bool) -> Option<indicatif::ProgressBar> {
    (!json && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(seeds);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} seeds [{elapsed_precise}] {wide_bar} {per_sec} eta {eta}",
            )
            .unwrap(),
        );
        b
    })
}

/// What an exploration saw, for people: speed, coverage, and each failure with the command that
/// replays it.
fn print_summary(reg: &Registry, scenario: &str, from: u64, summary: &ExploreSummary, wall_s: f64) {
    println!(
        "{}: {} seeds from {} in {:.2} s ({:.0} seeds/s, {:.0}x real time), {} failure(s)",
        scenario,
        summary.seeds_run,
        from,
        wall_s,
        summary.seeds_run as f64 / wall_s,
        summary.sim_time_ms as f64 / 1000.0 / wall_s,
        summary.failures.len()
    );
    println!("coverage:");
    for (p, n) in &summary.coverage {
        println!("  {:<34} {} seeds", p, n);
    }
    for f in &summary.failures {
        let cmd = match &f.file {
            Some(p) => format!("{} replay {}", reg.command(), p.display()),
            None => f.spec.command(),
        };
        println!();
        print_options(&f.spec);
        print_violation(
            reg,
            f.spec.scenario.name,
            f.outcome.violation.as_ref().unwrap(),
            f.spec.seed,
            &cmd,
        );
    }
}

/// Shrinks failure `f` into `<out>/<scenario>-<seed>-shrunk.json` and, without `--json`, tells
/// its smaller story: the file written and how many faults it keeps.
fn shrink_failure(
    reg: &Registry,
    f: &Found,
    jobs: usize,
    out: &std::path::Path,
    json: bool,
) -> Result<(PathBuf, usize), BadInput> {
    let path = out.join(format!(
        "{}-{}-shrunk.json",
        f.spec.scenario.name, f.spec.seed
    ));
    let s = shrink_to_file(&f.spec, &f.outcome, jobs, &path)?;
    if !json {
        println!();
        println!(
            "shrunk seed {}: {} -> {} faults ({} runs):",
            f.spec.seed, s.before_faults, s.after_faults, s.runs
        );
        print_schedule(&s.spec);
        let v = s.outcome.violation.as_ref().unwrap();
        println!("  {}", v.explanation);
        if let Some(m) = crate::invariant::describe_measure(s.spec.scenario.invariants, v) {
            println!("  measure: {m}");
        }
        if let Some(f) = reg.finding_for(f.spec.scenario.name, v) {
            println!("  known finding: {}", f.id);
        }
        println!("  replay: {} replay {}", reg.command(), path.display());
    }
    Ok((path, s.after_faults))
}

/// `faultline shrink`.
pub(super) fn shrink(reg: &'static Registry, a: ShrinkArgs) -> Result<Exit, BadInput> {
    let ShrinkArgs {
        file,
        out,
        jobs,
        json,
    } = a;
    let replay = ReplayFile::load(&file)?;
    let spec = replay.spec(reg)?;
    let out = out.unwrap_or_else(|| shrunk_path(&file));
    check_writable(Some(&out))?;
    let outcome = run_spec(spec.clone());
    if outcome.violation.as_ref().map(|v| v.invariant.as_str())
        != Some(replay.violation.invariant.as_str())
    {
        eprintln!(
            "faultline: NONDETERMINISM: {} no longer violates {}; nothing to shrink",
            file.display(),
            replay.violation.invariant
        );
        return Ok(Exit::Nondeterminism);
    }
    let shrunk = shrink_to_file(&spec, &outcome, jobs.unwrap_or_else(cores), &out)?;
    if !json {
        print_spec(&shrunk.spec);
        let cmd = format!("{} replay {}", reg.command(), out.display());
        print_violation(
            reg,
            shrunk.spec.scenario.name,
            shrunk.outcome.violation.as_ref().unwrap(),
            shrunk.spec.seed,
            &cmd,
        );
        println!(
            "shrunk {}: {} -> {} faults in {} runs; wrote {}",
            replay.violation.invariant,
            shrunk.before_faults,
            shrunk.after_faults,
            shrunk.runs,
            out.display()
        );
    }
    println!(
        "{}",
        json!({"invariant": replay.violation.invariant, "before_faults": shrunk.before_faults, "after_faults": shrunk.after_faults, "file": out.display().to_string()})
    );
    Ok(Exit::Failed)
}

pub(super) fn shrunk_path(file: &std::path::Path) -> PathBuf {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("failure");
    file.with_file_name(format!("{stem}.shrunk.json"))
}

pub(super) fn shrink_to_file(
    spec: &RunSpec,
    outcome: &Outcome,
    jobs: usize,
    path: &std::path::Path,
) -> Result<crate::shrink::Shrunk, BadInput> {
    let s = crate::shrink::shrink(spec, outcome, jobs);
    let file = ReplayFile::new(&s.spec, &s.outcome).expect("a shrunk run still fails");
    file.write(path)
        .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
    Ok(s)
}

/// The exploration as JUnit XML: each failing seed with its causal sentence, its replay command
/// and its fault schedule (the first one's shrunk, if it was shrunk).
fn write_junit(
    reg: &'static Registry,
    path: &std::path::Path,
    name: &str,
    summary: &crate::explore::ExploreSummary,
    wall_s: f64,
    shrunk: Option<&PathBuf>,
    unreached: &[&str],
) -> Result<(), BadInput> {
    let mut suite = super::junit::explore_suite(name, summary, wall_s, &|f| match &f.file {
        Some(p) => format!("{} replay {}", reg.command(), p.display()),
        None => f.spec.command(),
    });
    if let (Some(file), Some(first)) = (shrunk, summary.failures.first()) {
        let r = ReplayFile::load(file)?;
        let spec = r.spec(reg)?;
        let outcome = sim::Outcome {
            violation: Some(r.violation.clone()),
            ..first.outcome.clone()
        };
        let replay = format!("{} replay {}", reg.command(), file.display());
        let mut case = super::junit::failing_case(&spec, &outcome, &replay);
        case.name = format!("seed {} (shrunk)", first.spec.seed);
        suite.cases[0] = case;
    }
    for p in unreached {
        suite
            .cases
            .push(super::junit::unreached_case(p, summary.seeds_run));
    }
    super::junit::write(path, &[suite])
}
