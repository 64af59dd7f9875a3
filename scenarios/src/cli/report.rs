//! `report`: one seed, many seeds, or a replay file, as HTML, Markdown and JSON.

use super::args::*;
use super::exit::Exit;
use super::output::prepare_dir;
use crate::bench::cores;
use crate::explore::{check_switches, BadInput};
use crate::explore::{parse_seed, run_spec, write_atomic, ReplayFile};
use crate::faults::Profile;
use crate::system::{Registry, Scenario};
use crate::RunSpec;
use serde_json::json;
use std::path::PathBuf;

/// Runs a spec with its trace (on a fresh thread: a panic becomes a `no-panic` violation) and
/// builds its report.
pub(super) fn report_of(spec: &RunSpec, replay: String) -> reports::Report {
    let mut spec = spec.clone();
    spec.keep_trace = true;
    let outcome = run_spec(spec.clone());
    report_from(&spec, &outcome, replay)
}

/// The report of a run of `spec` (run with its trace kept).
fn report_from(spec: &RunSpec, outcome: &sim::Outcome, replay: String) -> reports::Report {
    let sc = spec.scenario;
    let info = reports::RunInfo {
        scenario: sc.name.into(),
        seed: spec.seed,
        bugs: spec.bugs.clone(),
        fixes: spec.fixes.clone(),
        options: serde_json::to_value(&spec.options).unwrap_or_default(),
        schedule: spec.schedule.clone(),
        replay,
        profile: spec.profile.name().into(),
        fault_window_s: sc.fault_window_ms as f64 / 1000.0,
        invariants: sc
            .invariants
            .iter()
            .map(|i| reports::InvariantInfo {
                name: i.name.into(),
                measure: i.measure.into(),
                bound_us: i.bound_us,
                bound: i.bound.into(),
            })
            .collect(),
    };
    reports::build(&info, outcome, &mut *sc.lens())
}

pub(super) fn write_files(
    dir: &std::path::Path,
    files: &[(&str, String)],
) -> Result<Vec<String>, BadInput> {
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

/// The files of a one-seed report: the HTML page, the Markdown summary and the JSON.
fn report_files(rep: &reports::Report) -> Vec<(&'static str, String)> {
    vec![
        ("index.html", reports::html(rep)),
        ("summary.md", reports::markdown(rep)),
        ("report.json", serde_json::to_string_pretty(rep).unwrap()),
    ]
}

/// Runs seeds `from..from + n` of `sc` on every core and returns the files of their
/// distribution report (its page details the first failing seed, else the first seed).
fn seeds_report(
    sc: &'static Scenario,
    from: u64,
    n: u64,
    bugs: &[String],
    fixes: &[String],
    profile: Profile,
) -> Vec<(&'static str, String)> {
    let rows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (r2, b2, f2) = (rows.clone(), bugs.to_vec(), fixes.to_vec());
    sim::runtime::pool(
        n as usize,
        cores(),
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        move |i| {
            let mut spec = RunSpec::from_seed_in(sc, from + i as u64, &b2, &f2, profile);
            spec.keep_trace = true;
            let outcome = spec.run();
            report_from(&spec, &outcome, spec.command())
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
    // The family's measure: a failing seed headlines its violated invariant's measure, which
    // other seeds do not share.
    let family = reps
        .first()
        .map(|r| r.headline.family_measure())
        .unwrap_or_else(reports::Measure::none);
    let seed_rows = reps
        .iter()
        .map(|r| reports::SeedRow {
            seed: r.seed,
            headline: r.headline.family_measure().value,
            longest_pause_s: r.headline.longest_pause_s,
            largest_skew_s: r.headline.largest_skew_s,
            violation: r.violation.as_ref().map(|v| v.invariant.clone()),
        })
        .collect();
    let mut d = reports::distribution(sc.name, bugs, fixes, (&family.name, family.unit), seed_rows);
    d.profile = profile.name().into();
    let detail = reps.iter().find(|r| r.violation.is_some()).or(reps.first());
    vec![
        ("index.html", reports::distribution_html(&d, detail)),
        ("summary.md", reports::distribution_markdown(&d)),
        ("report.json", serde_json::to_string_pretty(&d).unwrap()),
    ]
}

/// `faultline report`.
pub(super) fn report(reg: &'static Registry, a: ReportArgs) -> Result<Exit, BadInput> {
    let ReportArgs {
        scenario,
        seed,
        seeds,
        from,
        switches: SwitchArgs { bugs, fixes },
        profile,
        replay,
        out,
        json,
    } = a;
    let profile = Profile::parse(&profile.profile)?;
    // One folder per report: reports of different seeds do not overwrite each other.
    let default_dir = |name: &str, what: String| {
        PathBuf::from("target/faultline-reports")
            .join(name)
            .join(what)
    };
    let (dir, files, label) = if let Some(file) = replay {
        if seed.is_some() || seeds.is_some() || !bugs.is_empty() || !fixes.is_empty() {
            return Err(BadInput(
                "--replay FILE reports the file's own run: no --seed, --seeds, --bug or --fix"
                    .into(),
            ));
        }
        let r = ReplayFile::load(&file)?;
        let spec = r.spec(reg)?;
        if let Some(name) = &scenario {
            let sc = reg.scenario(name)?;
            if sc.name != spec.scenario.name {
                return Err(BadInput(format!(
                    "{} is a failure of {}, not of {}",
                    file.display(),
                    spec.scenario.name,
                    sc.name
                )));
            }
        }
        let dir =
            out.unwrap_or_else(|| default_dir(spec.scenario.name, format!("seed-{}", spec.seed)));
        prepare_dir(&dir, "report folder")?;
        let rep = report_of(
            &spec,
            format!("{} replay {}", reg.command(), file.display()),
        );
        (dir, report_files(&rep), format!("seed {}", spec.seed))
    } else {
        let name = scenario.ok_or_else(|| BadInput("give a scenario, or --replay FILE".into()))?;
        let sc = reg.scenario(&name)?;
        let fixes = check_switches(reg, sc, &bugs, &fixes)?;
        match (seed, seeds) {
            (Some(seed), None) => {
                let spec = RunSpec::from_seed_in(sc, parse_seed(&seed)?, &bugs, &fixes, profile);
                let dir =
                    out.unwrap_or_else(|| default_dir(sc.name, format!("seed-{}", spec.seed)));
                prepare_dir(&dir, "report folder")?;
                let rep = report_of(&spec, spec.command());
                (dir, report_files(&rep), format!("seed {}", spec.seed))
            }
            (None, Some(n)) => {
                let n = super::count(&n, "seed count")?;
                let from = parse_seed(&from)?;
                if from.checked_add(n - 1).is_none() {
                    return Err(BadInput(format!(
                        "seed range {from}..+{n} overflows 64 bits"
                    )));
                }
                let dir = out.unwrap_or_else(|| default_dir(sc.name, format!("seeds-{from}-{n}")));
                prepare_dir(&dir, "report folder")?;
                let files = seeds_report(sc, from, n, &bugs, &fixes, profile);
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
    Ok(Exit::Clean)
}
