//! `faultline hunt FINDING`: the seeds it prints are exactly those whose `run --json` names the
//! finding (with the finding's switches), whatever the thread count; each is streamed as a line
//! before the summary; bad input is one line and exit 2. The findings and seeds come from the
//! catalog, so the tests hold when a model change moves the pinned seeds.

use serde_json::Value;
use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

fn last_json(o: &Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().expect("output")).expect("a JSON line")
}

/// The first active finding with a pinned seed: (id, scenario, switches, seed).
fn pinned() -> (String, String, Vec<String>, u64) {
    let f = scenarios::builtin()
        .findings()
        .find(|f| f.is_active() && !f.seeds.is_empty())
        .expect("an active finding with a pinned seed");
    let with = f.shown_with.iter().map(|s| s.to_string()).collect();
    (f.id.into(), f.scenario.into(), with, f.seeds[0])
}

#[test]
fn hunt_prints_exactly_the_seeds_run_names_as_the_finding() {
    let (id, scenario, with, seed) = pinned();
    let first = seed.saturating_sub(3);
    let (first_s, seeds) = (first.to_string(), "6");
    let mut expected = vec![];
    for s in first..first + 6 {
        let s_str = s.to_string();
        let mut args = vec!["run", &scenario, "--seed", &s_str, "--json"];
        for w in &with {
            args.extend(["--fix", w]);
        }
        if last_json(&faultline(&args))["finding"] == id.as_str() {
            expected.push(s);
        }
    }
    assert!(expected.contains(&seed), "pinned seed {seed} of {id}");
    for jobs in ["1", "2"] {
        let o = faultline(&[
            "hunt",
            &id,
            "--seeds",
            seeds,
            "--first-seed",
            &first_s,
            "--jobs",
            jobs,
        ]);
        assert_eq!(o.status.code(), Some(1), "a seed shows it: exit 1");
        let v = last_json(&o);
        let found: Vec<u64> = v["matching_seeds"]
            .as_array()
            .expect("matching_seeds")
            .iter()
            .map(|s| s.as_u64().expect("a seed"))
            .collect();
        assert_eq!(found, expected, "--jobs {jobs}");
        assert_eq!(v["scenario"], scenario.as_str());
        assert_eq!(v["with"], serde_json::json!(with));
        // Each matching seed was streamed as its own line, with the command that runs it,
        // before the summary.
        let text = String::from_utf8_lossy(&o.stdout);
        let summary = text.find(&format!("{id}: ")).expect("a summary line");
        for s in &expected {
            let line = text
                .find(&format!("seed {s}: "))
                .unwrap_or_else(|| panic!("no line for seed {s}:\n{text}"));
            assert!(line < summary, "{text}");
        }
    }
}

#[test]
fn hunt_json_is_one_line_and_no_match_is_exit_0() {
    let (id, _, _, seed) = pinned();
    // One seed past the pinned one that does not show the finding (or none of a few).
    let first = (seed + 1).to_string();
    let o = faultline(&[
        "hunt",
        &id,
        "--seeds",
        "1",
        "--first-seed",
        &first,
        "--json",
    ]);
    let v = last_json(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    let found = v["matching_seeds"].as_array().expect("matching_seeds");
    assert_eq!(o.status.code(), Some(if found.is_empty() { 0 } else { 1 }));
    // Exactly the fields docs/json.md lists for `hunt`.
    let mut got: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    got.sort();
    let mut documented: Vec<String> = scenarios::cli::fields::of("hunt")
        .iter()
        .map(|s| s.to_string())
        .collect();
    documented.sort();
    assert_eq!(got, documented, "hunt: its JSON fields and docs/json.md's");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let retired = scenarios::builtin()
        .findings()
        .find(|f| !f.is_active())
        .expect("a retired finding")
        .id;
    let (id, ..) = pinned();
    for (args, says) in [
        (vec!["hunt", "no-such-finding"], "unknown finding"),
        (vec!["hunt", retired], "is retired"),
        (vec!["hunt", &id, "--profile", "gentle"], "unknown profile"),
        (vec!["hunt", &id, "--seeds", "0"], "at least 1"),
        (vec!["hunt", &id, "--seeds", "many"], "malformed seed count"),
        (
            vec![
                "hunt",
                &id,
                "--first-seed",
                "18446744073709551615",
                "--seeds",
                "2",
            ],
            "past the last seed",
        ),
        (vec!["hunt", &id, "--jobs", "0"], "worker threads"),
    ] {
        let o = faultline(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

/// `--schedule` runs a hand-written schedule at each seed: a finding's stored replay, written as a
/// schedule file, shows the finding at its own seed; `--save` writes that run as a replay file
/// marked constructed, which `faultline replay` reproduces.
#[test]
fn hunt_runs_a_schedule_file_and_saves_constructed_replays() {
    let reg = scenarios::builtin();
    let (f, r) = reg
        .findings()
        .filter(|f| f.is_active())
        .find_map(|f| scenarios::finding_report::replay(f).map(|r| (f, r)))
        .expect("a finding with a stored replay");
    let dir = std::env::temp_dir().join(format!("faultline-hunt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let schedule = dir.join("schedule.json");
    let file = serde_json::json!({
        "scenario": r.scenario, "seed": 0, "fixes": r.fixes, "options": r.options,
        "schedule": r.schedule,
    });
    std::fs::write(&schedule, file.to_string()).expect("written");
    let saved = dir.join("saved");
    let seed = r.seed.to_string();
    let o = faultline(&[
        "hunt",
        f.id,
        "--schedule",
        schedule.to_str().unwrap(),
        "--first-seed",
        &seed,
        "--seeds",
        "1",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = last_json(&o);
    assert_eq!(v["matching_seeds"], serde_json::json!([r.seed]));
    assert_eq!(v["schedule"], true);
    let path = saved.join(format!("{}-{seed}.json", f.id));
    let text = std::fs::read_to_string(&path).expect("the saved replay file");
    let saved_file: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(saved_file["constructed"], true);
    let replay = faultline(&["replay", path.to_str().unwrap()]);
    assert_eq!(replay.status.code(), Some(1), "it reproduces its violation");
    // A schedule of another system's scenario cannot show this finding.
    let other = reg
        .scenarios()
        .iter()
        .find(|s| s.system != f.system)
        .expect("another system");
    std::fs::write(
        &schedule,
        serde_json::json!({"scenario": other.name, "seed": 0, "schedule": []}).to_string(),
    )
    .expect("written");
    let o = faultline(&["hunt", f.id, "--schedule", schedule.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
