//! `explore` and `shrink`: many seeds, and the smallest story of a failure.

use super::args::DEFAULT_OUT;
use super::args::*;
use super::count;
use super::exit::Exit;
use super::output::{prepare_dir, prepare_opt};
use super::run::{print_options, print_schedule, print_spec, print_violation};
use super::steer::{group_line, groups, groups_json, on_interrupt, seeds_done, Group, Resume};
use crate::bench::cores;
use crate::explore::{check_switches, BadInput};
use crate::explore::{
    explore_until, failure_file_name, parse_seed, run_spec, shrunk_file_name, unreached_coverage,
    ExploreConfig, ExploreSummary, Found, ReplayFile, Stopped,
};
use crate::system::Registry;
use crate::RunSpec;
use serde_json::json;
use sim::Outcome;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// Seeds an exploration runs without `--seeds` or `--duration`.
pub const DEFAULT_SEEDS: u64 = 1000;

/// `faultline explore`.
pub(super) fn run_explore(reg: &'static Registry, a: ExploreArgs) -> Result<Exit, BadInput> {
    let sc = reg.scenario(&a.scenario)?;
    let from = parse_seed(&a.from)?;
    let duration = a
        .duration
        .as_deref()
        .map(|d| {
            humantime::parse_duration(d).map_err(|e| {
                BadInput(format!(
                    "malformed --duration '{d}': {e} (e.g. 90s, 10m, 2h)"
                ))
            })
        })
        .transpose()?;
    let seeds = match (&a.seeds, duration) {
        (Some(n), _) => count(n, "seed count")?,
        // Until the time runs out: every seed from `from` on.
        (None, Some(_)) => (u64::MAX - from).saturating_add(1),
        (None, None) => DEFAULT_SEEDS,
    };
    let profile = crate::faults::Profile::parse(&a.profile.profile)?;
    let fixes = check_switches(reg, sc, &a.switches.bugs, &a.switches.fixes)?;
    let jobs = a.jobs.unwrap_or_else(cores).max(1);
    let cfg = ExploreConfig {
        scenario: sc,
        from,
        seeds,
        bugs: a.switches.bugs.clone(),
        fixes: fixes.clone(),
        jobs,
        keep_going: a.keep_going,
        out_dir: Some(a.out.clone()),
        shard: a
            .shard
            .as_deref()
            .map(|s| super::shard::resolve(s, a.shards.as_deref(), &|v| std::env::var(v).ok()))
            .transpose()?,
        profile,
    };
    prepare_dir(&a.out, "--out folder")?;
    prepare_opt(a.junit.as_deref(), "--junit file")?;
    let resume = resume_of(reg, &a);
    let cfg2 = cfg.clone();
    let (mut stop, prefix) = on_interrupt(move |p| resume.command(&cfg2, p));
    stop.deadline = duration.map(|d| Instant::now() + d);
    let bar = (!a.json)
        .then(|| progress_bar(&cfg, duration.is_some() && a.seeds.is_none()))
        .flatten();
    let b2 = bar.clone();
    let t0 = Instant::now();
    let summary = explore_until(&cfg, &stop, move |p| {
        prefix.store(p.prefix, std::sync::atomic::Ordering::SeqCst);
        if let Some(b) = &b2 {
            b.set_position(p.done);
            if p.failures > 0 {
                b.set_message(format!("{} failure(s)", p.failures));
            }
        }
    })?;
    seeds_done();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let wall_s = (t0.elapsed().as_millis().max(1)) as f64 / 1000.0;
    finish(reg, &a, &cfg, &summary, wall_s)
}

/// What a resumed exploration repeats of `a`.
fn resume_of(reg: &'static Registry, a: &ExploreArgs) -> Resume {
    Resume {
        command: reg.command(),
        scenario: reg.scenario(&a.scenario).map_or("", |sc| sc.name),
        bugs: a.switches.bugs.clone(),
        fixes: a.switches.fixes.clone(),
        keep_going: a.keep_going,
        no_shrink: a.no_shrink,
        out: (a.out != std::path::Path::new(DEFAULT_OUT)).then(|| a.out.display().to_string()),
        jobs: a.jobs,
        duration: a.duration.clone(),
        seeds_given: a.seeds.is_some(),
    }
}

/// Seeds per second, rounded for people and for the JSON alike.
fn rate(n: u64, wall_s: f64) -> f64 {
    (n as f64 / wall_s * 10.0).round() / 10.0
}

/// After the seeds ran: the summary, the first failure shrunk, JUnit, the JSON line and the
/// exit status.
fn finish(
    reg: &'static Registry,
    a: &ExploreArgs,
    cfg: &ExploreConfig,
    summary: &ExploreSummary,
    wall_s: f64,
) -> Result<Exit, BadInput> {
    let sc = cfg.scenario;
    for e in &summary.write_errors {
        eprintln!("faultline: {e}");
    }
    let first = summary.failures.first();
    // The coverage points are budgeted for the adversarial draws, which alone reach every one
    // (some need a hypothetical fault, which the realistic profile never draws).
    let unreached = if cfg.profile.is_default() {
        unreached_coverage(sc, summary)
    } else {
        Vec::new()
    };
    let groups = groups(reg, &summary.failures);
    let resume = resume_of(reg, a);
    // A failure that ends the exploration is no place to resume from: it is the result.
    let resume = match summary.stopped {
        Some(Stopped::Interrupt | Stopped::Deadline) => resume.command(cfg, summary.seeds_run),
        _ => None,
    };
    if !a.json {
        print_summary(cfg, summary, wall_s);
        print_unreached(&unreached, summary.seeds_run);
        print_groups(reg, &groups);
    }
    // Shrink the first failure (deterministically) so the user gets the smallest story.
    let shrunk = match (first, a.no_shrink) {
        (Some(f), false) => Some(shrink_failure(reg, f, cfg.jobs, &a.out, a.json)?),
        _ => None,
    };
    if let Some(path) = &a.junit {
        write_junit(
            reg,
            path,
            sc.name,
            summary,
            wall_s,
            shrunk.as_ref().map(|(p, _)| p),
            &unreached,
        )?;
    }
    if let (false, Some(stopped), Some(cmd)) = (a.json, summary.stopped, &resume) {
        let why = match stopped {
            Stopped::Interrupt => "interrupted",
            _ => "out of time",
        };
        println!(
            "\n{why} after {} seed(s), {} failure(s) so far; resume: {cmd}",
            summary.seeds_run,
            summary.failures.len()
        );
    }
    let ran = (summary.seeds_run > 0).then(|| {
        json!({"first": cfg.seed_at(0), "last": cfg.seed_at(summary.seeds_run - 1),
               "step": cfg.shard.map_or(1, |(_, n)| n)})
    });
    println!(
        "{}",
        json!({
            "scenario": sc.name, "bugs": cfg.bugs, "fixes": cfg.fixes, "profile": cfg.profile,
            "from": cfg.from, "seeds": (a.seeds.is_some() || a.duration.is_none()).then_some(cfg.seeds),
            "seeds_run": summary.seeds_run,
            "seeds_ran": ran,
            "stopped": summary.stopped,
            "resume_command": resume,
            "failures": summary.failures.len(),
            "failing_seeds": summary.failures.iter().map(|f| f.spec.seed).collect::<Vec<_>>(),
            "failure_groups": groups_json(&groups),
            "first_failure": first.map(|f| { let v = f.outcome.violation.as_ref().unwrap(); json!({"seed": f.spec.seed, "invariant": v.invariant, "sim_time_ms": v.sim_time_ms}) }),
            "wall_ms": (wall_s * 1000.0) as u64,
            "seeds_per_sec": rate(summary.seeds_run, wall_s),
            "sim_speedup": rate(summary.sim_time_ms / 1000, wall_s),
            "failure_file": first.and_then(|f| f.file.as_ref().map(|p| p.display().to_string())),
            "shrunk_file": shrunk.as_ref().map(|(p, _)| p.display().to_string()),
            "shard": cfg.shard.map(|(k, n)| format!("{k}/{n}")),
            "shrunk_faults": shrunk.as_ref().map(|(_, n)| *n),
            "coverage": summary.coverage.iter().map(|(p, n)| (p.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "unreached_coverage": unreached,
        })
    );
    Ok(if !summary.failures.is_empty() || !unreached.is_empty() {
        Exit::Failed
    } else if summary.stopped == Some(Stopped::Interrupt) {
        Exit::Interrupted
    } else {
        Exit::Clean
    })
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

/// The progress bar, on a terminal and without `--json`: seeds done, the rate, and failures so
/// far. `open`: a time-limited run with no seed count (no bar to fill, a spinner).
fn progress_bar(cfg: &ExploreConfig, open: bool) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let (b, template) = if open {
            (
                indicatif::ProgressBar::no_length(),
                "{spinner} {pos} seeds [{elapsed_precise}] {rate} {msg}",
            )
        } else {
            (
                indicatif::ProgressBar::new(cfg.len()),
                "{spinner} {pos}/{len} seeds [{elapsed_precise}] {wide_bar} {rate} {msg} eta {eta}",
            )
        };
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap()
                .with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", s.per_sec());
                    },
                ),
        );
        b
    })
}

/// What an exploration saw, for people: speed and coverage.
fn print_summary(cfg: &ExploreConfig, summary: &ExploreSummary, wall_s: f64) {
    println!(
        "{}: {} seeds from {} in {:.2} s ({:.0} seeds/s, {:.0}x real time), {} failure(s)",
        cfg.scenario.name,
        summary.seeds_run,
        cfg.from,
        wall_s,
        summary.seeds_run as f64 / wall_s,
        summary.sim_time_ms as f64 / 1000.0 / wall_s,
        summary.failures.len()
    );
    println!("coverage:");
    for (p, n) in &summary.coverage {
        println!("  {:<34} {} seeds", p, n);
    }
}

/// One block per failure signature: its first seed's options and violation with the command
/// that replays it, then how many seeds fail the same way.
fn print_groups(reg: &Registry, groups: &[Group]) {
    for g in groups {
        let f = g.failures[0];
        let cmd = match &f.file {
            Some(p) => format!("{} replay {}", reg.command(), p.display()),
            None => f.spec.command(),
        };
        println!();
        print_options(&f.spec);
        print_violation(reg, &f.spec, f.outcome.violation.as_ref().unwrap(), &cmd);
        if g.failures.len() > 1 {
            println!("{}", group_line(g));
        }
    }
}

/// Shrinks failure `f` into `<out>/<scenario>-<seed>.shrunk.json` (the name `shrink` gives too) and, without `--json`, tells
/// its smaller story: the file written and how many faults it keeps.
fn shrink_failure(
    reg: &Registry,
    f: &Found,
    jobs: usize,
    out: &std::path::Path,
    json: bool,
) -> Result<(PathBuf, usize), BadInput> {
    let path = shrunk_file_name(&out.join(failure_file_name(f.spec.scenario.name, f.spec.seed)));
    let s = shrink_to_file(reg, &f.spec, &f.outcome, jobs, &path)?;
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
        if let Some(f) = reg.finding_in(&f.spec, v) {
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
    let out = out.unwrap_or_else(|| shrunk_file_name(&file));
    prepare_opt(Some(&out), "shrunk file")?;
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
    let shrunk = shrink_to_file(reg, &spec, &outcome, jobs.unwrap_or_else(cores), &out)?;
    if replay.constructed {
        // A shrunk hand-written schedule is still hand-written, not drawn.
        let file = ReplayFile {
            constructed: true,
            ..ReplayFile::load(&out)?
        };
        file.write(&out)
            .map_err(|e| BadInput(format!("cannot write {}: {e}", out.display())))?;
    }
    if !json {
        print_spec(&shrunk.spec);
        let cmd = format!("{} replay {}", reg.command(), out.display());
        print_violation(
            reg,
            &shrunk.spec,
            shrunk.outcome.violation.as_ref().unwrap(),
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

pub(super) fn shrink_to_file(
    reg: &Registry,
    spec: &RunSpec,
    outcome: &Outcome,
    jobs: usize,
    path: &std::path::Path,
) -> Result<crate::shrink::Shrunk, BadInput> {
    let s = crate::shrink::shrink(reg, spec, outcome, jobs);
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
