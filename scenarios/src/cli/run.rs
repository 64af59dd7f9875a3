//! `run`, `replay`, `hash-trace` and `check-determinism`: one seed at a time, and the printing they share.

use super::args::*;
use super::count;
use super::exit::Exit;
use super::output::prepare_opt;
use crate::bench::cores;
use crate::explore::{check_switches, BadInput};
use crate::explore::{hashes_in, parse_seed, run_spec, write_atomic, ReplayFile, ScheduleFile};
use crate::system::Registry;
use crate::RunSpec;
use serde_json::json;
use sim::{Outcome, Violation};
use std::path::PathBuf;
use std::time::Instant;

/// `faultline run`.
pub(super) fn run(reg: &'static Registry, a: RunArgs) -> Result<Exit, BadInput> {
    let RunArgs {
        scenario,
        seed,
        schedule,
        switches: SwitchArgs { bugs, fixes },
        profile,
        trace,
        json,
    } = a;
    let profile = crate::faults::Profile::parse(&profile.profile)?;
    let (mut spec, cmd) = match (&schedule, seed) {
        (Some(file), _) => {
            let f = ScheduleFile::load(file)?;
            if let Some(name) = &scenario {
                let sc = reg.scenario(name)?;
                if sc.name != f.scenario {
                    return Err(BadInput(format!(
                        "{} is a schedule of {}, not of {}",
                        file.display(),
                        f.scenario,
                        sc.name
                    )));
                }
            }
            let spec = f.spec(reg, &bugs, &fixes)?;
            let mut cmd = format!("{} run --schedule {}", reg.command(), file.display());
            for b in &bugs {
                cmd += &format!(" --bug {b}");
            }
            for x in &fixes {
                cmd += &format!(" --fix {x}");
            }
            (spec, cmd)
        }
        (None, seed) => {
            let name = scenario.ok_or_else(|| BadInput("give a scenario".into()))?;
            let sc = reg.scenario(&name)?;
            let seed = parse_seed(&seed.ok_or_else(|| BadInput("give --seed".into()))?)?;
            let fixes = check_switches(reg, sc, &bugs, &fixes)?;
            let spec = RunSpec::from_seed_in(sc, seed, &bugs, &fixes, profile);
            let cmd = spec.command();
            (spec, cmd)
        }
    };
    spec.keep_trace = trace.is_some();
    prepare_opt(trace.as_deref(), "trace file")?;
    if !json {
        print_spec(&spec);
    }
    let t0 = Instant::now();
    let outcome = run_spec(spec.clone());
    let wall_ms = t0.elapsed().as_millis() as u64;
    write_trace(trace.as_ref(), &outcome)?;
    report_run(reg, &spec, &outcome, wall_ms, json, &cmd, None);
    Ok(Exit::failed_if(outcome.violation.is_some()))
}

/// `faultline replay FILE --fix X`: the failure re-run with fixes on; says whether its violation
/// is gone. Exit 0 if the run passes, 1 if anything is still violated.
fn replay_with_fixes(
    reg: &'static Registry,
    file: &std::path::Path,
    replay: &ReplayFile,
    extra: &[String],
    json: bool,
) -> Result<Exit, BadInput> {
    let mut spec = replay.spec(reg)?;
    for f in check_switches(reg, spec.scenario, &[], extra)? {
        if !spec.fixes.contains(&f) {
            spec.fixes.push(f);
        }
    }
    if !json {
        print_spec(&spec);
    }
    let t0 = Instant::now();
    let outcome = run_spec(spec.clone());
    let wall_ms = t0.elapsed().as_millis() as u64;
    let was = &replay.violation.invariant;
    let gone = outcome
        .violation
        .as_ref()
        .is_none_or(|v| &v.invariant != was);
    let mut cmd = format!("{} replay {}", reg.command(), file.display());
    for x in extra {
        cmd += &format!(" --fix {x}");
    }
    let line = format!(
        "with --fix {}: {}",
        extra.join(" --fix "),
        match (&outcome.violation, gone) {
            (None, _) => format!("the violation of {was} is gone, and the run passes"),
            (Some(v), true) => format!(
                "the violation of {was} is gone, but the run violates {}",
                v.invariant
            ),
            (Some(_), false) => format!("{was} is still violated"),
        }
    );
    let note = Note {
        line,
        field: "violation_gone",
        value: gone,
    };
    report_run(reg, &spec, &outcome, wall_ms, json, &cmd, Some(note));
    Ok(Exit::failed_if(outcome.violation.is_some()))
}

/// `faultline replay`.
pub(super) fn replay(reg: &'static Registry, a: ReplayArgs) -> Result<Exit, BadInput> {
    let ReplayArgs {
        file,
        fixes,
        trace,
        junit,
        json,
    } = a;
    let replay = ReplayFile::load(&file)?;
    if !fixes.is_empty() {
        if trace.is_some() || junit.is_some() {
            return Err(BadInput(
                "replay --fix checks a fix; --trace and --junit go with a plain replay".into(),
            ));
        }
        return replay_with_fixes(reg, &file, &replay, &fixes, json);
    }
    let mut spec = replay.spec(reg)?;
    spec.keep_trace = trace.is_some();
    prepare_opt(trace.as_deref(), "trace file")?;
    prepare_opt(junit.as_deref(), "--junit file")?;
    if !json {
        print_spec(&spec);
    }
    let t0 = Instant::now();
    let outcome = run_spec(spec.clone());
    let wall_ms = t0.elapsed().as_millis() as u64;
    write_trace(trace.as_ref(), &outcome)?;
    let same = outcome.violation.as_ref().is_some_and(|v| {
        v.invariant == replay.violation.invariant && v.event_index == replay.violation.event_index
    }) && outcome.trace_hash == replay.trace_hash;
    let cmd = format!("{} replay {}", reg.command(), file.display());
    let line = match same {
        true => "reproduced: same invariant, event index and trace hash",
        false => "NOT reproduced",
    };
    let note = Note {
        line: line.into(),
        field: "reproduced",
        value: same,
    };
    report_run(reg, &spec, &outcome, wall_ms, json, &cmd, Some(note));
    if let Some(path) = &junit {
        let case = match outcome.violation {
            Some(_) => super::junit::failing_case(&spec, &outcome, &cmd),
            None => super::junit::Case {
                name: format!("seed {}", spec.seed),
                time_s: wall_ms as f64 / 1000.0,
                failure: Some((
                    format!("{} did not reproduce: no violation", file.display()),
                    "nondeterminism".into(),
                    format!("replay: {cmd}\n"),
                )),
            },
        };
        let suite = super::junit::Suite {
            name: spec.scenario.name.into(),
            time_s: wall_ms as f64 / 1000.0,
            cases: vec![case],
        };
        super::junit::write(path, &[suite])?;
    }
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
        return Ok(Exit::Nondeterminism);
    }
    Ok(Exit::Failed)
}

/// `faultline hash-trace`.
pub(super) fn hash_trace(reg: &'static Registry, a: HashTraceArgs) -> Result<Exit, BadInput> {
    let HashTraceArgs { file, json } = a;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| BadInput(format!("cannot read {}: {e}", file.display())))?;
    let hash = sim::event::hash_json_trace(&text, &|v| reg.decode_event(v))
        .map_err(|e| BadInput(format!("{} is not a faultline trace ({e})", file.display())))?;
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "trace_hash": hash})
        );
    } else {
        println!("{hash}");
    }
    Ok(Exit::Clean)
}

/// `faultline check-determinism`.
pub(super) fn check_determinism(
    reg: &'static Registry,
    a: CheckDeterminismArgs,
) -> Result<Exit, BadInput> {
    let CheckDeterminismArgs {
        scenario,
        seeds,
        from,
        switches: SwitchArgs { bugs, fixes },
        profile,
        junit,
        json,
    } = a;
    let sc = reg.scenario(&scenario)?;
    let seeds = count(&seeds, "seed count")?;
    let from = parse_seed(&from)?;
    let profile = crate::faults::Profile::parse(&profile.profile)?;
    let fixes = check_switches(reg, sc, &bugs, &fixes)?;
    prepare_opt(junit.as_deref(), "--junit file")?;
    let one = hashes_in(sc, from, seeds, &bugs, &fixes, 1, profile);
    let many = hashes_in(sc, from, seeds, &bugs, &fixes, cores().max(2), profile);
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
    if let Some(path) = &junit {
        let mut cases: Vec<super::junit::Case> = mismatches
            .iter()
            .map(|s| {
                let i = (s - from) as usize;
                super::junit::Case {
                    name: format!("seed {s}"),
                    time_s: 0.0,
                    failure: Some((
                        format!("trace {} with one thread, {} with several", one[i], many[i]),
                        "nondeterminism".into(),
                        format!(
                            "{}\n",
                            RunSpec::from_seed_in(sc, *s, &bugs, &fixes, profile).command()
                        ),
                    )),
                }
            })
            .collect();
        cases.push(super::junit::Case {
            name: format!(
                "{} seeds with equal traces",
                seeds - mismatches.len() as u64
            ),
            time_s: 0.0,
            failure: None,
        });
        let suite = super::junit::Suite {
            name: sc.name.into(),
            time_s: 0.0,
            cases,
        };
        super::junit::write(path, &[suite])?;
    }
    if !json {
        println!(
            "{}: {} of {seeds} seeds from {from} ({} profile) give equal trace hashes on 1 and {} threads",
            sc.name,
            seeds - mismatches.len() as u64,
            profile.name(),
            cores().max(2)
        );
    }
    println!(
        "{}",
        json!({"scenario": sc.name, "seeds": seeds, "profile": profile, "mismatches": mismatches.len()})
    );
    Ok(if mismatches.is_empty() {
        Exit::Clean
    } else {
        Exit::Nondeterminism
    })
}

pub(super) fn write_trace(path: Option<&PathBuf>, outcome: &Outcome) -> Result<(), BadInput> {
    if let (Some(p), Some(t)) = (path, &outcome.trace) {
        write_atomic(p, t)
            .map_err(|e| BadInput(format!("cannot write trace file {}: {e}", p.display())))?;
    }
    Ok(())
}

pub(super) fn print_options(spec: &RunSpec) {
    println!(
        "{} seed {} (0x{:x})",
        spec.scenario.name, spec.seed, spec.seed
    );
    println!("options: {}", serde_json::to_string(&spec.options).unwrap());
}

pub(super) fn print_spec(spec: &RunSpec) {
    print_options(spec);
    print_schedule(spec);
}

pub(super) fn print_schedule(spec: &RunSpec) {
    println!(
        "faults ({}, {} profile):",
        spec.schedule.len(),
        spec.profile.name()
    );
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

pub(super) fn print_violation(reg: &Registry, spec: &RunSpec, v: &Violation, replay: &str) {
    let (scenario, seed) = (spec.scenario.name, spec.seed);
    println!("{} (seed {seed})", reports::headline(v));
    println!("  {}", v.explanation);
    let measure = reg
        .scenario(scenario)
        .ok()
        .and_then(|sc| crate::invariant::describe_measure(sc.invariants, v));
    if let Some(m) = measure {
        println!("  measure: {m}");
    }
    if let Some(f) = reg.finding_in(spec, v) {
        let fix = f
            .fix
            .map(|x| format!(", remedy --fix {x}"))
            .unwrap_or_default();
        println!("  known finding: {} ({}{fix})", f.id, f.title);
    }
    println!("  replay: {replay}");
}

/// A run's result: for people (without `--json`) the violation or PASS, its figures and `note`'s
/// line; then the JSON line, with `note`'s field.
pub(super) fn report_run(
    reg: &Registry,
    spec: &RunSpec,
    o: &Outcome,
    wall_ms: u64,
    json: bool,
    replay: &str,
    note: Option<Note>,
) {
    if !json {
        match &o.violation {
            Some(v) => print_violation(reg, spec, v, replay),
            None => println!("PASS"),
        }
        println!(
            "events {}  simulated {:.3} s  wall {} ms  trace {}",
            o.events,
            o.sim_time_ms as f64 / 1000.0,
            wall_ms,
            o.trace_hash
        );
        if let Some(n) = &note {
            println!("{}", n.line);
        }
    }
    let mut j = json!({
        "scenario": spec.scenario.name, "seed": spec.seed, "bugs": spec.bugs, "fixes": spec.fixes,
        "outcome": if o.violation.is_some() { "violation" } else { "pass" },
        "violation": o.violation,
        "finding": o.violation.as_ref().and_then(|v| reg.finding_in(spec, v)).map(|f| f.id),
        "events": o.events, "sim_time_ms": o.sim_time_ms, "wall_ms": wall_ms, "trace_hash": o.trace_hash,
    });
    if let Some(n) = note {
        j[n.field] = json!(n.value);
    }
    println!("{j}");
}

/// A verdict a command adds to a run's result: a line for people, a boolean JSON field.
pub(super) struct Note {
    pub line: String,
    pub field: &'static str,
    pub value: bool,
}
