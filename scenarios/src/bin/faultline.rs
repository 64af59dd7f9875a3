//! `faultline`: list scenarios and switches, run a seed, explore many seeds, replay a failure,
//! check determinism, and benchmark. Exit status: 0 no violation, 1 violation found, 2 bad usage or
//! bad input (one line on stderr), 3 nondeterminism detected. With `--json` the last line of
//! standard output is one JSON object (shared/design.md, "Command line").
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use scenarios::bench::cores;

/// mimalloc: runs allocate and free many small objects (events, messages, futures).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use scenarios::explore::{
    check_switches, find_scenario, hashes, write_atomic, BadInput, ExploreConfig, ReplayFile,
};
use scenarios::{explore, parse_seed, run_spec, RunSpec, Scenario, SCENARIOS, SWITCHES};
use serde_json::json;
use sim::{Outcome, Violation};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "faultline",
    version,
    about = "Deterministic simulation testing of cluster-coordination logic"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the scenarios, one a line.
    List {
        #[arg(long)]
        json: bool,
    },
    /// List the bug and fix switches, with the scenario that finds each.
    Bugs {
        #[arg(long)]
        json: bool,
    },
    /// List the findings (violations of upstream logic), active and retired, with the upstream code
    /// that produces each.
    Findings {
        #[arg(long)]
        json: bool,
        /// Print docs/findings.md's findings section (generated from the catalog).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
    },
    /// Run one seed of a scenario.
    Run {
        scenario: String,
        /// Seed (decimal or 0x-hex).
        #[arg(long)]
        seed: String,
        /// Restore a historic bug (repeatable).
        #[arg(long = "bug")]
        bugs: Vec<String>,
        /// Apply a fix (repeatable).
        #[arg(long = "fix")]
        fixes: Vec<String>,
        /// Write the JSON-lines trace to this file.
        #[arg(long)]
        trace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Run many seeds in parallel; stop at the first failure unless --keep-going.
    Explore {
        scenario: String,
        /// How many seeds.
        #[arg(long, default_value = "1000")]
        seeds: String,
        /// First seed.
        #[arg(long, default_value = "0")]
        from: String,
        #[arg(long = "bug")]
        bugs: Vec<String>,
        #[arg(long = "fix")]
        fixes: Vec<String>,
        /// Worker threads (default: the number of cores).
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        #[arg(long)]
        keep_going: bool,
        /// Where failure (replay) files are written.
        #[arg(long, default_value = "target/faultline-failures")]
        out: PathBuf,
        /// Do not shrink the first failure.
        #[arg(long)]
        no_shrink: bool,
        /// Explore only shard K of N (e.g. 2/8): N machines cover the seeds with disjoint shards;
        /// merge their `--json` outputs with `faultline merge`.
        #[arg(long)]
        shard: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Merge the `--json` outputs of sharded explorations (files holding each one's output).
    Merge { files: Vec<PathBuf> },
    /// Print the trace hash of a trace file written by `run --trace` or `replay --trace`.
    HashTrace { file: PathBuf },
    /// Shrink a failure file to a smaller schedule that still violates the same invariant.
    Shrink {
        file: PathBuf,
        /// Where to write the shrunk replay file (default: FILE with `.shrunk.json`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: the number of cores); the result does not depend on it.
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Re-run a failure file; it must reproduce the same violation at the same event with the same trace hash.
    Replay {
        file: PathBuf,
        #[arg(long)]
        trace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Run seeds twice (one thread, then all cores) and compare trace hashes.
    CheckDeterminism {
        scenario: String,
        #[arg(long, default_value = "20")]
        seeds: String,
        #[arg(long, default_value = "0")]
        from: String,
        #[arg(long = "bug")]
        bugs: Vec<String>,
        #[arg(long = "fix")]
        fixes: Vec<String>,
        /// Accepted for the one CLI contract: the output always ends with one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write a report (index.html, summary.md, report.json) of one seed, many seeds, or a replay file.
    Report {
        /// The scenario (not with --replay).
        scenario: Option<String>,
        /// Report this seed.
        #[arg(long)]
        seed: Option<String>,
        /// Report the distribution over this many seeds (from --from).
        #[arg(long)]
        seeds: Option<String>,
        #[arg(long, default_value = "0")]
        from: String,
        #[arg(long = "bug")]
        bugs: Vec<String>,
        #[arg(long = "fix")]
        fixes: Vec<String>,
        /// Report the run of a replay file.
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Output directory (default: target/faultline-reports/<scenario>/).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// For every bug switch: seeds and wall time to the first failure (one core) over several
    /// starting seeds, and the size of the shrunk schedule; medians in a table.
    Measure {
        /// How many starting seeds per bug.
        #[arg(long, default_value = "10")]
        starts: String,
        /// Seed budget per start.
        #[arg(long, default_value = "1000")]
        seeds: String,
        #[arg(long)]
        json: bool,
    },
    /// Measure each scenario's speed, memory and cost against raw madsim.
    ///
    /// Seeds per second per core, simulated-time speedup, events per second, peak memory, `--jobs`
    /// scaling, and the time ratio to two raw-madsim programs with the run's nodes, timers and
    /// messages: `baseline_ratio` (messages handed over in memory) and `baseline_net_ratio`
    /// (messages sent over madsim's network).
    Bench {
        scenarios: Vec<String>,
        /// Seeds per measurement.
        #[arg(long, default_value = "200")]
        seeds: String,
        /// Take each measurement this many times (interleaved) and keep the fastest.
        #[arg(long, default_value = "1")]
        repeat: String,
        /// Instead: how cost grows with nodes (3, 5, 9 hosts) and time (10, 60 simulated minutes)
        /// on calico-split-brain.
        #[arg(long)]
        growth: bool,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // Like any Unix filter: when the reader goes away (`faultline ... | head`), stop quietly.
    // Rust ignores SIGPIPE, so a print to a closed pipe panics with "Broken pipe": that panic
    // ends the process with success and no message (no signal handler needed).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad usage");
            eprintln!(
                "faultline: {} (see --help)",
                first.trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
    };
    match dispatch(cli.cmd) {
        Ok(code) => ExitCode::from(code),
        Err(BadInput(msg)) => {
            eprintln!("faultline: {msg}");
            ExitCode::from(2)
        }
    }
}

fn count(s: &str, what: &str) -> Result<u64, BadInput> {
    let n = parse_seed(s)
        .map_err(|_| BadInput(format!("malformed {what} '{s}': give a whole number")))?;
    if n == 0 {
        return Err(BadInput(format!("{what} must be at least 1")));
    }
    Ok(n)
}

fn dispatch(cmd: Cmd) -> Result<u8, BadInput> {
    match cmd {
        Cmd::List { json } => {
            if json {
                let list: Vec<_> = SCENARIOS.iter().map(|s| json!({"name": s.name, "system": s.system, "about": s.about, "ci_seeds": s.ci_seeds, "coverage": s.coverage})).collect();
                println!("{}", json!({ "scenarios": list }));
            } else {
                for s in SCENARIOS {
                    println!("{:<28} {}", s.name, s.about);
                }
            }
            Ok(0)
        }
        Cmd::Bugs { json } => {
            if json {
                println!("{}", json!({ "switches": SWITCHES }));
            } else {
                for s in SWITCHES {
                    println!(
                        "{:<30} {:<4} found by {:<26} {}",
                        s.name,
                        format!("{:?}", s.kind).to_lowercase(),
                        s.scenario,
                        s.about
                    );
                }
            }
            Ok(0)
        }
        Cmd::Findings { json, markdown } => {
            if json {
                println!("{}", json!({ "findings": scenarios::FINDINGS }));
            } else if markdown {
                print!("{}", scenarios::findings::markdown());
            } else {
                for f in scenarios::FINDINGS {
                    let status = if f.is_active() { "active" } else { "retired" };
                    let seeds: Vec<String> = f.seeds.iter().map(u64::to_string).collect();
                    println!(
                        "{:<40} {:<7} {} seed {:<10} {}",
                        f.id,
                        status,
                        f.scenario,
                        seeds.join(","),
                        f.title
                    );
                }
            }
            Ok(0)
        }
        Cmd::Run {
            scenario,
            seed,
            bugs,
            fixes,
            trace,
            json,
        } => {
            let sc = find_scenario(&scenario)?;
            let seed = parse_seed(&seed)?;
            check_switches(sc, &bugs, &fixes)?;
            let mut spec = RunSpec::from_seed(sc, seed, &bugs, &fixes);
            spec.keep_trace = trace.is_some();
            check_writable(trace.as_ref())?;
            if !json {
                print_spec(&spec);
            }
            let cmd = spec.command();
            let t0 = Instant::now();
            let outcome = run_spec(spec.clone());
            let wall_ms = t0.elapsed().as_millis() as u64;
            write_trace(trace.as_ref(), &outcome)?;
            report_run(&spec, &outcome, wall_ms, json, &cmd, None);
            Ok(if outcome.violation.is_some() { 1 } else { 0 })
        }
        Cmd::Replay { file, trace, json } => {
            let replay = ReplayFile::load(&file)?;
            let mut spec = replay.spec()?;
            spec.keep_trace = trace.is_some();
            check_writable(trace.as_ref())?;
            if !json {
                print_spec(&spec);
            }
            let t0 = Instant::now();
            let outcome = run_spec(spec.clone());
            let wall_ms = t0.elapsed().as_millis() as u64;
            write_trace(trace.as_ref(), &outcome)?;
            let same = outcome.violation.as_ref().is_some_and(|v| {
                v.invariant == replay.violation.invariant
                    && v.event_index == replay.violation.event_index
            }) && outcome.trace_hash == replay.trace_hash;
            let cmd = format!(
                "cargo run --release --bin faultline -- replay {}",
                file.display()
            );
            report_run(&spec, &outcome, wall_ms, json, &cmd, Some(same));
            if !same {
                eprintln!(
                    "faultline: NONDETERMINISM: {} recorded {} at event #{} with trace {}; this run gave {} with trace {}",
                    file.display(),
                    replay.violation.invariant,
                    replay.violation.event_index,
                    replay.trace_hash,
                    outcome.violation.as_ref().map_or("no violation".to_string(), |v| format!("{} at event #{}", v.invariant, v.event_index)),
                    outcome.trace_hash
                );
                return Ok(3);
            }
            Ok(1)
        }
        Cmd::Shrink {
            file,
            out,
            jobs,
            json,
        } => {
            let replay = ReplayFile::load(&file)?;
            let spec = replay.spec()?;
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
                return Ok(3);
            }
            let shrunk = shrink_to_file(&spec, &outcome, jobs.unwrap_or_else(cores), &out)?;
            if !json {
                print_spec(&shrunk.spec);
                let cmd = format!(
                    "cargo run --release --bin faultline -- replay {}",
                    out.display()
                );
                print_violation(
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
            Ok(1)
        }
        Cmd::Explore {
            scenario,
            seeds,
            from,
            bugs,
            fixes,
            jobs,
            keep_going,
            out,
            no_shrink,
            shard,
            json,
        } => {
            let sc = find_scenario(&scenario)?;
            let seeds = count(&seeds, "seed count")?;
            let from = parse_seed(&from)?;
            check_switches(sc, &bugs, &fixes)?;
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
                shard: shard.as_deref().map(parse_shard).transpose()?,
            };
            let bar = (!json && std::io::stderr().is_terminal()).then(|| {
                let b = indicatif::ProgressBar::new(seeds);
                b.set_style(indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} seeds [{elapsed_precise}] {wide_bar} {per_sec} eta {eta}").unwrap());
                b
            });
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
            if !json {
                println!(
                    "{}: {} seeds from {} in {:.2} s ({:.0} seeds/s, {:.0}x real time), {} failure(s)",
                    sc.name,
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
                        Some(p) => format!(
                            "cargo run --release --bin faultline -- replay {}",
                            p.display()
                        ),
                        None => f.spec.command(),
                    };
                    println!();
                    print_options(&f.spec);
                    print_violation(
                        f.spec.scenario.name,
                        f.outcome.violation.as_ref().unwrap(),
                        f.spec.seed,
                        &cmd,
                    );
                }
            }
            // Shrink the first failure (deterministically) so the user gets the smallest story.
            let shrunk = match (first, no_shrink) {
                (Some(f), false) => {
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
                        if let Some(f) = scenarios::findings::finding_for(f.spec.scenario.name, v) {
                            println!("  known finding: {}", f.id);
                        }
                        println!(
                            "  replay: cargo run --release --bin faultline -- replay {}",
                            path.display()
                        );
                    }
                    Some((path, s.after_faults))
                }
                _ => None,
            };
            println!(
                "{}",
                json!({
                    "scenario": sc.name, "bugs": bugs, "fixes": fixes,
                    "seeds_run": summary.seeds_run,
                    "failures": summary.failures.len(),
                    "first_failure": first.map(|f| { let v = f.outcome.violation.as_ref().unwrap(); json!({"seed": f.spec.seed, "invariant": v.invariant, "sim_time_ms": v.sim_time_ms}) }),
                    "wall_ms": wall_ms,
                    "seeds_per_sec": summary.seeds_run as f64 / wall_s,
                    "sim_speedup": summary.sim_time_ms as f64 / 1000.0 / wall_s,
                    "failure_file": first.and_then(|f| f.file.as_ref().map(|p| p.display().to_string())),
                    "shrunk_file": shrunk.as_ref().map(|(p, _)| p.display().to_string()),
                    "shard": cfg.shard.map(|(k, n)| format!("{k}/{n}")),
                    "shrunk_faults": shrunk.as_ref().map(|(_, n)| *n),
                })
            );
            Ok(if summary.failures.is_empty() { 0 } else { 1 })
        }
        Cmd::CheckDeterminism {
            scenario,
            seeds,
            from,
            bugs,
            fixes,
            json: _,
        } => {
            let sc = find_scenario(&scenario)?;
            let seeds = count(&seeds, "seed count")?;
            let from = parse_seed(&from)?;
            check_switches(sc, &bugs, &fixes)?;
            let one = hashes(sc, from, seeds, &bugs, &fixes, 1);
            let many = hashes(sc, from, seeds, &bugs, &fixes, cores().max(2));
            let mismatches: Vec<u64> = (0..seeds)
                .filter(|&i| one[i as usize] != many[i as usize])
                .map(|i| from + i)
                .collect();
            for s in &mismatches {
                let i = (s - from) as usize;
                eprintln!(
                    "faultline: seed {s}: trace {} with one thread, {} with several",
                    one[i], many[i]
                );
            }
            println!(
                "{}",
                json!({"scenario": sc.name, "seeds": seeds, "mismatches": mismatches.len()})
            );
            Ok(if mismatches.is_empty() { 0 } else { 3 })
        }
        Cmd::Measure {
            starts,
            seeds,
            json,
        } => measure(
            count(&starts, "start count")?,
            count(&seeds, "seed count")?,
            json,
        ),
        Cmd::Report {
            scenario,
            seed,
            seeds,
            from,
            bugs,
            fixes,
            replay,
            out,
            json,
        } => report(scenario, seed, seeds, from, bugs, fixes, replay, out, json),
        Cmd::Merge { files } => merge(&files),
        Cmd::HashTrace { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| BadInput(format!("cannot read {}: {e}", file.display())))?;
            let hash = sim::event::hash_json_trace(&text).map_err(|e| {
                BadInput(format!("{} is not a faultline trace ({e})", file.display()))
            })?;
            println!("{hash}");
            Ok(0)
        }
        Cmd::Bench {
            scenarios: _,
            seeds,
            growth: true,
            json,
            ..
        } => growth(count(&seeds, "seed count")?, json),
        Cmd::Bench {
            scenarios,
            seeds,
            repeat,
            json,
            ..
        } => bench(
            &scenarios,
            count(&seeds, "seed count")?,
            count(&repeat, "repeat count")? as u32,
            json,
        ),
    }
}

fn check_writable(path: Option<&PathBuf>) -> Result<(), BadInput> {
    if let Some(p) = path {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(|e| BadInput(format!("cannot write trace file {}: {e}", p.display())))?;
    }
    Ok(())
}

fn write_trace(path: Option<&PathBuf>, outcome: &Outcome) -> Result<(), BadInput> {
    if let (Some(p), Some(t)) = (path, &outcome.trace) {
        write_atomic(p, t)
            .map_err(|e| BadInput(format!("cannot write trace file {}: {e}", p.display())))?;
    }
    Ok(())
}

fn print_options(spec: &RunSpec) {
    println!(
        "{} seed {} (0x{:x})",
        spec.scenario.name, spec.seed, spec.seed
    );
    println!("options: {}", serde_json::to_string(&spec.options).unwrap());
}

fn shrunk_path(file: &std::path::Path) -> PathBuf {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("failure");
    file.with_file_name(format!("{stem}.shrunk.json"))
}

fn shrink_to_file(
    spec: &RunSpec,
    outcome: &Outcome,
    jobs: usize,
    path: &std::path::Path,
) -> Result<scenarios::shrink::Shrunk, BadInput> {
    let s = scenarios::shrink::shrink(spec, outcome, jobs);
    let file = ReplayFile::new(&s.spec, &s.outcome).expect("a shrunk run still fails");
    file.write(path)
        .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
    Ok(s)
}

fn print_spec(spec: &RunSpec) {
    print_options(spec);
    print_schedule(spec);
}

fn print_schedule(spec: &RunSpec) {
    println!("faults ({}):", spec.schedule.len());
    for f in &spec.schedule {
        let dur = if f.dur_ms > 0 {
            format!("for {:.3} s", f.dur_ms as f64 / 1000.0)
        } else {
            String::new()
        };
        println!(
            "  {:>9.3} s  {:<16} {}",
            f.at_ms as f64 / 1000.0,
            dur,
            f.kind.describe()
        );
    }
}

fn print_violation(scenario: &str, v: &Violation, seed: u64, replay: &str) {
    println!("{} (seed {seed})", reports::headline(v));
    println!("  {}", v.explanation);
    if let Some(f) = scenarios::findings::finding_for(scenario, v) {
        let fix = f
            .fix
            .map(|x| format!(", remedy --fix {x}"))
            .unwrap_or_default();
        println!("  known finding: {} ({}{fix})", f.id, f.title);
    }
    println!("  replay: {replay}");
}

fn report_run(
    spec: &RunSpec,
    o: &Outcome,
    wall_ms: u64,
    json: bool,
    replay: &str,
    reproduced: Option<bool>,
) {
    if !json {
        match &o.violation {
            Some(v) => print_violation(spec.scenario.name, v, spec.seed, replay),
            None => println!("PASS"),
        }
        println!(
            "events {}  simulated {:.3} s  wall {} ms  trace {}",
            o.events,
            o.sim_time_ms as f64 / 1000.0,
            wall_ms,
            o.trace_hash
        );
        if let Some(r) = reproduced {
            println!(
                "{}",
                if r {
                    "reproduced: same invariant, event index and trace hash"
                } else {
                    "NOT reproduced"
                }
            );
        }
    }
    let mut j = json!({
        "scenario": spec.scenario.name, "seed": spec.seed, "bugs": spec.bugs, "fixes": spec.fixes,
        "outcome": if o.violation.is_some() { "violation" } else { "pass" },
        "violation": o.violation,
        "finding": o.violation.as_ref().and_then(|v| scenarios::findings::finding_for(spec.scenario.name, v)).map(|f| f.id),
        "events": o.events, "sim_time_ms": o.sim_time_ms, "wall_ms": wall_ms, "trace_hash": o.trace_hash,
    });
    if let Some(r) = reproduced {
        j["reproduced"] = json!(r);
    }
    println!("{j}");
}

fn bench(names: &[String], seeds: u64, repeat: u32, json: bool) -> Result<u8, BadInput> {
    let list: Vec<&'static Scenario> = if names.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| find_scenario(n))
            .collect::<Result<_, _>>()?
    };
    let jobs = cores();
    let mut rows = Vec::new();
    let mut scaling = Vec::new();
    for sc in list {
        let row = scenarios::bench::bench_scenario(sc, seeds, jobs, repeat);
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
    Ok(0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn measure(starts: u64, seeds: u64, json: bool) -> Result<u8, BadInput> {
    let mut rows = Vec::new();
    if !json {
        println!(
            "{:<32} {:<26} {:>7} {:>9} {:>8} {:>7}",
            "bug", "scenario", "found", "seeds", "seconds", "shrunk"
        );
    }
    for sw in SWITCHES
        .iter()
        .filter(|s| s.kind == scenarios::scenario::SwitchKind::Bug)
    {
        let sc = find_scenario(sw.scenario)?;
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
                sizes.push(
                    scenarios::shrink::shrink(&f.spec, &f.outcome, cores()).after_faults as f64,
                );
            }
        }
        let (ms, mw, mz) = (median(&mut n_seeds), median(&mut secs), median(&mut sizes));
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
    Ok(0)
}

fn fault_window_s(sc: &Scenario) -> f64 {
    match sc.system {
        "cilium" => scenarios::cilium::FAULT_WINDOW_MS as f64 / 1000.0,
        _ => scenarios::calico::FAULT_WINDOW_MS as f64 / 1000.0,
    }
}

/// Runs a spec with its trace and builds its report.
fn report_of(spec: &RunSpec, replay: String) -> reports::Report {
    let mut spec = spec.clone();
    spec.keep_trace = true;
    let outcome = run_spec(spec.clone());
    let info = reports::RunInfo {
        scenario: spec.scenario.name.into(),
        seed: spec.seed,
        bugs: spec.bugs.clone(),
        fixes: spec.fixes.clone(),
        options: serde_json::to_value(&spec.options).unwrap_or_default(),
        schedule: spec.schedule.clone(),
        replay,
        fault_window_s: fault_window_s(spec.scenario),
    };
    reports::build(
        &info,
        &outcome,
        outcome.trace.as_deref().unwrap_or_default(),
    )
}

fn write_files(dir: &std::path::Path, files: &[(&str, String)]) -> Result<Vec<String>, BadInput> {
    std::fs::create_dir_all(dir).map_err(|e| {
        BadInput(format!(
            "cannot create output directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        write_atomic(&path, text.as_bytes())
            .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[allow(clippy::too_many_arguments)]
fn report(
    scenario: Option<String>,
    seed: Option<String>,
    seeds: Option<String>,
    from: String,
    bugs: Vec<String>,
    fixes: Vec<String>,
    replay: Option<PathBuf>,
    out: Option<PathBuf>,
    json: bool,
) -> Result<u8, BadInput> {
    let default_dir = |name: &str| PathBuf::from("target/faultline-reports").join(name);
    let (dir, files, label) = if let Some(file) = replay {
        let r = ReplayFile::load(&file)?;
        let spec = r.spec()?;
        let rep = report_of(
            &spec,
            format!(
                "cargo run --release --bin faultline -- replay {}",
                file.display()
            ),
        );
        let dir = out.unwrap_or_else(|| default_dir(spec.scenario.name));
        (
            dir,
            vec![
                ("index.html", reports::html(&rep)),
                ("summary.md", reports::markdown(&rep)),
                ("report.json", serde_json::to_string_pretty(&rep).unwrap()),
            ],
            format!("seed {}", spec.seed),
        )
    } else {
        let name = scenario.ok_or_else(|| BadInput("give a scenario, or --replay FILE".into()))?;
        let sc = find_scenario(&name)?;
        check_switches(sc, &bugs, &fixes)?;
        let dir = out.unwrap_or_else(|| default_dir(sc.name));
        match (seed, seeds) {
            (Some(seed), None) => {
                let spec = RunSpec::from_seed(sc, parse_seed(&seed)?, &bugs, &fixes);
                let rep = report_of(&spec, spec.command());
                (
                    dir,
                    vec![
                        ("index.html", reports::html(&rep)),
                        ("summary.md", reports::markdown(&rep)),
                        ("report.json", serde_json::to_string_pretty(&rep).unwrap()),
                    ],
                    format!("seed {}", spec.seed),
                )
            }
            (None, Some(n)) => {
                let n = count(&n, "seed count")?;
                let from = parse_seed(&from)?;
                if from.checked_add(n - 1).is_none() {
                    return Err(BadInput(format!(
                        "seed range {from}..+{n} overflows 64 bits"
                    )));
                }
                let rows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
                let (r2, b2, f2) = (rows.clone(), bugs.clone(), fixes.clone());
                sim::runtime::pool(
                    n as usize,
                    cores(),
                    std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
                    move |i| {
                        let spec = RunSpec::from_seed(sc, from + i as u64, &b2, &f2);
                        let mut spec2 = spec.clone();
                        spec2.keep_trace = true;
                        let outcome = spec2.run();
                        let info = reports::RunInfo {
                            scenario: sc.name.into(),
                            seed: spec.seed,
                            bugs: spec.bugs.clone(),
                            fixes: spec.fixes.clone(),
                            options: serde_json::to_value(&spec.options).unwrap_or_default(),
                            schedule: spec.schedule.clone(),
                            replay: spec.command(),
                            fault_window_s: fault_window_s(sc),
                        };
                        reports::build(
                            &info,
                            &outcome,
                            outcome.trace.as_deref().unwrap_or_default(),
                        )
                    },
                    move |_, r| {
                        if let Ok(rep) = r {
                            r2.lock().unwrap().push(rep);
                        }
                    },
                );
                let mut reps = std::sync::Arc::try_unwrap(rows)
                    .unwrap()
                    .into_inner()
                    .unwrap();
                reps.sort_by_key(|r| r.seed);
                let headline = reps
                    .first()
                    .map(|r| r.headline.name.clone())
                    .unwrap_or_default();
                let seed_rows = reps
                    .iter()
                    .map(|r| reports::SeedRow {
                        seed: r.seed,
                        headline_s: r.headline.value_s,
                        longest_pause_s: r.headline.longest_pause_s,
                        largest_skew_s: r.headline.largest_skew_s,
                        violation: r.violation.as_ref().map(|v| v.invariant.clone()),
                    })
                    .collect();
                let d = reports::distribution(sc.name, &bugs, &fixes, &headline, seed_rows);
                let detail = reps.iter().find(|r| r.violation.is_some()).or(reps.first());
                let files = vec![
                    ("index.html", reports::distribution_html(&d, detail)),
                    ("summary.md", reports::distribution_markdown(&d)),
                    ("report.json", serde_json::to_string_pretty(&d).unwrap()),
                ];
                (dir, files, format!("{n} seeds"))
            }
            _ => return Err(BadInput("give exactly one of --seed N or --seeds N".into())),
        }
    };
    let written = write_files(&dir, &files)?;
    if !json {
        for w in &written {
            println!("wrote {w}");
        }
    }
    println!(
        "{}",
        json!({"report": label, "dir": dir.display().to_string(), "files": written})
    );
    Ok(0)
}

fn parse_shard(s: &str) -> Result<(u64, u64), BadInput> {
    let bad = || BadInput(format!("malformed shard '{s}': give K/N with 1 <= K <= N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n) = (
        k.trim().parse::<u64>().map_err(|_| bad())?,
        n.trim().parse::<u64>().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Merges sharded explore outputs: totals, the lowest failing seed, the slowest shard's wall time.
fn merge(files: &[PathBuf]) -> Result<u8, BadInput> {
    if files.is_empty() {
        return Err(BadInput(
            "give the files holding each shard's `explore --json` output".into(),
        ));
    }
    let mut parts = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| BadInput(format!("cannot read {}: {e}", f.display())))?;
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(last).map_err(|_| {
            BadInput(format!(
                "{} does not end with an explore --json line",
                f.display()
            ))
        })?;
        if v.get("seeds_run").is_none() {
            return Err(BadInput(format!(
                "{} does not end with an explore --json line",
                f.display()
            )));
        }
        parts.push(v);
    }
    let scenario = parts[0]["scenario"].clone();
    if parts.iter().any(|p| {
        p["scenario"] != scenario
            || p["bugs"] != parts[0]["bugs"]
            || p["fixes"] != parts[0]["fixes"]
    }) {
        return Err(BadInput(
            "the files come from explorations of different scenarios or switches".into(),
        ));
    }
    let sum = |k: &str| {
        parts
            .iter()
            .map(|p| p[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let first = parts
        .iter()
        .filter(|p| !p["first_failure"].is_null())
        .min_by_key(|p| p["first_failure"]["seed"].as_u64().unwrap_or(u64::MAX));
    let wall_ms = parts
        .iter()
        .map(|p| p["wall_ms"].as_u64().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let seeds_per_sec: f64 = parts
        .iter()
        .map(|p| p["seeds_per_sec"].as_f64().unwrap_or(0.0))
        .sum();
    let sim_speedup: f64 = parts
        .iter()
        .map(|p| p["sim_speedup"].as_f64().unwrap_or(0.0))
        .sum();
    let failures = sum("failures");
    println!(
        "{}",
        json!({
            "scenario": scenario, "bugs": parts[0]["bugs"], "fixes": parts[0]["fixes"],
            "seeds_run": sum("seeds_run"), "failures": failures,
            "first_failure": first.map(|p| p["first_failure"].clone()),
            "wall_ms": wall_ms, "seeds_per_sec": seeds_per_sec, "sim_speedup": sim_speedup,
            "failure_file": first.map(|p| p["failure_file"].clone()),
            "shards": parts.len(),
        })
    );
    Ok(if failures == 0 { 0 } else { 1 })
}

/// Cost against nodes and simulated time: calico-split-brain with 3, 5 and 9 hosts, over 10 and 60
/// simulated minutes of fault window (the seeds' faults fall in the first 10), one core.
fn growth(seeds: u64, json: bool) -> Result<u8, BadInput> {
    let sc = find_scenario("calico-split-brain")?;
    let mut rows = Vec::new();
    for hosts in [3u32, 5, 9] {
        for minutes in [10u64, 60] {
            let specs: Vec<RunSpec> = (0..seeds)
                .map(|i| {
                    let mut spec = RunSpec::from_seed(sc, 2_000_000 + i, &[], &[]);
                    let scenarios::scenario::Options::Calico(o) = &spec.options else {
                        unreachable!()
                    };
                    spec.options = scenarios::scenario::Options::Calico(o.with_hosts(hosts));
                    spec.schedule.retain(|f| {
                        f.kind.nodes().iter().all(|n| {
                            !n.starts_with('h') || n[1..].parse::<u32>().is_ok_and(|k| k <= hosts)
                        })
                    });
                    spec.fault_window_ms = Some(minutes * 60_000);
                    spec
                })
                .collect();
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
                    "{hosts} hosts, {minutes:>2} min: {ms_per_seed:>7.2} ms/seed {:>8.0} events/seed {us_per_event:>6.2} us/event {:>8.0}x real time",
                    events as f64 / seeds as f64,
                    sim_ms as f64 / 1000.0 / wall
                );
            }
            rows.push(json!({"hosts": hosts, "minutes": minutes, "ms_per_seed": ms_per_seed, "events_per_seed": events as f64 / seeds as f64, "us_per_event": us_per_event}));
        }
    }
    println!("{}", json!({ "growth": rows }));
    Ok(0)
}

/// `--jobs`: a whole number of at least 1.
fn at_least_one(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{v}' is not a number of worker threads (1 or more)"
        )),
    }
}
