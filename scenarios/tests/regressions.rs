//! The regression files: `scenarios/regressions/` holds replay files of failures that were found
//! and then fixed, the way proptest keeps its regression files. Each file is a replay file
//! (`faultline replay FILE` runs it) with a `regression` entry naming its finding and the fixes
//! that remove it. Every `cargo test` re-runs them all: without those fixes the run must still
//! show its finding (its exact signature), and with them it must pass.
//!
//! The folder is generated from the findings catalog (every active finding with a fix, at each
//! of its pinned seeds) and from [`EXTRA`]: when a model change moves the pinned seeds, re-pin
//! them in the catalog, then regenerate with `just bless-regressions` (that is
//! `FAULTLINE_BLESS=1 cargo test -p scenarios --test regressions`) and review the diff.

use scenarios::explore::ReplayFile;
use scenarios::findings::Finding;
use scenarios::{builtin, RunSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Seeds named outside the catalog (found while reviewing other failures) that a fix removes:
/// (scenario, seed). Each becomes a file if its run shows an active finding that the finding's
/// fix removes; the blessing says which did not, so they are not silently dropped.
const EXTRA: &[(&str, u64)] = &[
    ("calico-swarm", 17250),
    ("calico-swarm", 19771),
    ("calico-swarm", 2003631),
    ("calico-swarm", 2005147),
    ("calico-swarm", 2007269),
    ("cilium-swarm", 16180864),
    ("cilium-swarm", 57722070),
    ("cilium-clock-skew", 3930),
];

/// What a regression file adds to a replay file.
#[derive(Serialize, Deserialize, Debug)]
struct Regression {
    /// The finding the failure is (its id in the catalog).
    finding: String,
    /// The fix switches that remove it (added to the file's own fixes).
    fixed_by: Vec<String>,
}

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

/// The finding `id` of the catalog.
fn finding(id: &str) -> &'static Finding {
    builtin()
        .findings()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no finding {id} in the catalog"))
}

/// Runs `spec` with `fixes` added.
fn run_with(spec: &RunSpec, fixes: &[String]) -> sim::Outcome {
    let mut spec = spec.clone();
    spec.fixes.extend(fixes.iter().cloned());
    scenarios::run_spec(spec)
}

/// Every regression file: still its finding without the fix, a pass with it.
#[test]
fn regressions_fail_without_their_fix_and_pass_with_it() {
    if std::env::var_os("FAULTLINE_BLESS").is_some() {
        bless();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder())
        .expect("scenarios/regressions/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut problems = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let r: Regression = serde_json::from_value(v["regression"].clone())
            .unwrap_or_else(|e| panic!("{}: no regression entry ({e})", path.display()));
        let file = ReplayFile::load(path).unwrap_or_else(|e| panic!("{e}"));
        let spec = file.spec(builtin()).unwrap_or_else(|e| panic!("{e}"));
        let f = finding(&r.finding);
        let without = scenarios::run_spec(spec.clone());
        if !without
            .violation
            .as_ref()
            .is_some_and(|v| f.signature.matches(v))
        {
            problems.push(format!(
                "{}: without {:?} it no longer shows {} ({:?})",
                path.display(),
                r.fixed_by,
                f.id,
                without.violation.map(|v| v.explanation)
            ));
        }
        let with = run_with(&spec, &r.fixed_by);
        if let Some(v) = with.violation {
            problems.push(format!(
                "{}: with {:?} it still violates {}: {}",
                path.display(),
                r.fixed_by,
                v.invariant,
                v.explanation
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n(a model change may have moved the seeds: re-pin the findings, then \
         `just bless-regressions`)",
        problems.join("\n")
    );
}

/// Every active finding with a fix has a regression file, so a new finding is not forgotten.
#[test]
fn regressions_cover_every_active_finding_with_a_fix() {
    if std::env::var_os("FAULTLINE_BLESS").is_some() {
        return; // the other test is rewriting the folder
    }
    let names: Vec<String> = std::fs::read_dir(folder())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // A finding with no pinned seed has no failure to save (its summary says why); every other
    // active finding with a fix has a regression file.
    for f in builtin().findings() {
        if f.is_active() && f.fix.is_some() && !f.seeds.is_empty() {
            assert!(
                names.iter().any(|n| n.starts_with(&format!("{}--", f.id))),
                "no regression file for finding {} (`just bless-regressions`)",
                f.id
            );
        }
    }
}

/// The regression file of a failing run of `spec` (of finding `expected`, if its signature
/// matches, else of the finding the violation is): fixed by the finding's fix, or if that leaves
/// another violation, by every fix of the system. An error says why there is none.
fn regression(
    spec: &RunSpec,
    expected: Option<&'static Finding>,
) -> Result<(String, serde_json::Value), String> {
    let outcome = scenarios::run_spec(spec.clone());
    let v = outcome.violation.as_ref().ok_or("passes without a fix")?;
    let f = expected
        .filter(|f| f.signature.matches(v))
        .or_else(|| builtin().finding_for(spec.scenario.name, v))
        .ok_or_else(|| format!("violates {}, no active finding", v.invariant))?;
    let fix = f.fix.ok_or(format!("finding {} has no fix", f.id))?;
    let all: Vec<String> = builtin()
        .switches()
        .filter(|s| s.kind == scenarios::scenario::SwitchKind::Fix && s.system == f.system)
        .map(|s| s.name.to_string())
        .collect();
    let fixed_by = [vec![fix.to_string()], all]
        .into_iter()
        .find(|fixes| run_with(spec, fixes).violation.is_none())
        .ok_or_else(|| {
            format!(
                "shows {}, but with every fix of {} still violates {}",
                f.id,
                f.system,
                run_with(spec, &[fix.to_string()])
                    .violation
                    .unwrap()
                    .invariant
            )
        })?;
    let mut json = serde_json::to_value(ReplayFile::new(spec, &outcome).unwrap()).unwrap();
    json["regression"] = serde_json::to_value(Regression {
        finding: f.id.into(),
        fixed_by,
    })
    .unwrap();
    let name = format!("{}--{}-{}.json", f.id, spec.scenario.name, spec.seed);
    Ok((name, json))
}

/// Regenerates the folder: every active finding with a fix at each pinned seed, and [`EXTRA`].
fn bless() {
    let dir = folder();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let reg = builtin();
    let mut left_out = Vec::new();
    let mut runs: Vec<(RunSpec, Option<&'static Finding>)> = Vec::new();
    for f in reg.findings().filter(|f| f.is_active() && f.fix.is_some()) {
        let sc = reg.scenario(f.scenario).unwrap();
        let with: Vec<String> = f.shown_with.iter().map(|s| s.to_string()).collect();
        for &seed in f.seeds {
            runs.push((RunSpec::from_seed(sc, seed, &[], &with), Some(f)));
        }
    }
    for &(name, seed) in EXTRA {
        let sc = reg.scenario(name).unwrap();
        runs.push((RunSpec::from_seed(sc, seed, &[], &[]), None));
    }
    for (spec, expected) in runs {
        match regression(&spec, expected) {
            Ok((name, json)) => {
                let text = serde_json::to_string_pretty(&json).unwrap() + "\n";
                std::fs::write(dir.join(name), text).unwrap();
            }
            Err(why) => left_out.push(format!("{} seed {}: {why}", spec.scenario.name, spec.seed)),
        }
    }
    for l in &left_out {
        eprintln!("not a regression file: {l}");
    }
}
