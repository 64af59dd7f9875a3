//! The `faultline` command line: exit statuses, `--json` last lines, and bad input (one clear line
//! on stderr, exit 2, never a panic).

#[path = "support/cli.rs"]
mod cli_support;
use cli_support::*;

#[test]
fn bad_input_gets_one_line_and_status_2() {
    for cmd in ["explore", "shrink"] {
        let target = if cmd == "explore" {
            "calico-restart"
        } else {
            "x.json"
        };
        assert_bad_input(&[cmd, target, "--jobs", "0"], "worker threads (1 or more)");
    }
    assert_bad_input(
        &["run", "no-such-scenario", "--seed", "1"],
        "unknown scenario 'no-such-scenario'",
    );
    assert_bad_input(
        &["run", "calico-restart", "--seed", "12x"],
        "malformed seed '12x'",
    );
    assert_bad_input(
        &["run", "calico-restart", "--seed", "18446744073709551616"],
        "malformed seed",
    );
    assert_bad_input(
        &["run", "calico-restart", "--seed", "0x1ffffffffffffffff"],
        "malformed seed",
    );
    assert_bad_input(
        &["run", "calico-restart", "--seed", "1", "--bug", "nope"],
        "unknown --bug switch 'nope'",
    );
    assert_bad_input(
        &[
            "run",
            "calico-restart",
            "--seed",
            "1",
            "--fix",
            "calico-local-master-flag",
        ],
        "unknown --fix switch",
    );
    assert_bad_input(&["explore", "calico-restart", "--seeds", "0"], "at least 1");
    assert_bad_input(
        &[
            "explore",
            "calico-restart",
            "--from",
            "18446744073709551615",
            "--seeds",
            "2",
        ],
        "overflows",
    );
    assert_bad_input(&["frobnicate"], "unrecognized subcommand");
    assert_bad_input(
        &["replay", "/nonexistent/file.json"],
        "cannot read replay file",
    );
    let truncated = tmp("truncated.json");
    std::fs::write(&truncated, "{\"format\": \"faultline-replay\", \"vers").unwrap();
    assert_bad_input(
        &["replay", truncated.to_str().unwrap()],
        "corrupt or truncated",
    );
    let other = tmp("other.json");
    std::fs::write(&other, "{\"hello\": 1}").unwrap();
    assert_bad_input(
        &["replay", other.to_str().unwrap()],
        "not a faultline replay file",
    );
    assert_bad_input(
        &["hash-trace", other.to_str().unwrap()],
        "is not a faultline trace (line 1:",
    );
    let future = tmp("future.json");
    std::fs::write(
        &future,
        "{\"format\": \"faultline-replay\", \"version\": 99}",
    )
    .unwrap();
    assert_bad_input(&["replay", future.to_str().unwrap()], "version 99");
    let old = tmp("old.json");
    std::fs::write(&old, "{\"format\": \"faultline-replay\", \"version\": 1}").unwrap();
    assert_bad_input(&["replay", old.to_str().unwrap()], "older faultline");
    let fields = tmp("fields.json");
    std::fs::write(
        &fields,
        "{\"format\": \"faultline-replay\", \"version\": 3, \"seed\": \"x\"}",
    )
    .unwrap();
    assert_bad_input(&["replay", fields.to_str().unwrap()], "corrupt replay file");
    // An output directory that cannot be created (its parent is a file).
    let file = tmp("plain-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("sub");
    assert_bad_input(
        &[
            "explore",
            "calico-restart",
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        "cannot write --out folder",
    );
    assert_bad_input(
        &[
            "run",
            "calico-restart",
            "--seed",
            "1",
            "--trace",
            out.to_str().unwrap(),
        ],
        "cannot write trace file",
    );
}

#[test]
fn run_json_and_exit_status() {
    let o = faultline(&["run", "calico-split-brain", "--seed", "0x2b", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let j = last_json(&o);
    for k in [
        "scenario",
        "seed",
        "bugs",
        "fixes",
        "outcome",
        "violation",
        "events",
        "sim_time_ms",
        "wall_ms",
        "trace_hash",
    ] {
        assert!(j.get(k).is_some(), "missing {k} in {j}");
    }
    assert_eq!(j["seed"], 43);
    assert_eq!(j["outcome"], "pass");
    // The trace file it writes hashes back to the same trace hash.
    let trace = tmp("run-43.jsonl");
    let o = faultline(&[
        "run",
        "calico-split-brain",
        "--seed",
        "0x2b",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(last_json(&o)["trace_hash"], j["trace_hash"]);
    let h = faultline(&["hash-trace", trace.to_str().unwrap()]);
    assert_eq!(h.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&h.stdout).trim(),
        j["trace_hash"].as_str().unwrap()
    );
    let hj = faultline(&["hash-trace", trace.to_str().unwrap(), "--json"]);
    assert_eq!(last_json(&hj)["trace_hash"], j["trace_hash"]);
}

/// Every command accepts `--json` (the one CLI contract), and `--jobs 0` is bad input.
#[test]
fn every_command_accepts_json() {
    let help = String::from_utf8_lossy(&faultline(&["--help"]).stdout).to_string();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 14, "{commands:?}");
    for c in commands {
        let h = String::from_utf8_lossy(&faultline(&[c, "--help"]).stdout).to_string();
        assert!(h.contains("--json"), "{c} does not accept --json:\n{h}");
    }
    assert_bad_input(
        &["explore", "calico-restart", "--jobs", "0"],
        "not a number of worker threads",
    );
}

#[test]
fn explore_finds_writes_and_replays_a_failure() {
    let dir = tmp("failures");
    let o = faultline(&[
        "explore",
        "calico-restart",
        "--bug",
        "calico-no-dead-pid-cleanup",
        "--seeds",
        "200",
        "--jobs",
        "2",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let j = json_with_status(&o, 1);
    for k in [
        "scenario",
        "bugs",
        "fixes",
        "seeds_run",
        "failures",
        "first_failure",
        "wall_ms",
        "seeds_per_sec",
        "sim_speedup",
        "failure_file",
    ] {
        assert!(j.get(k).is_some(), "missing {k} in {j}");
    }
    let file = j["failure_file"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(&file).exists());
    let r = faultline(&["replay", &file, "--json"]);
    let rj = json_with_status(&r, 1);
    assert_eq!(rj["reproduced"], true);
    assert_eq!(
        rj["violation"]["invariant"],
        j["first_failure"]["invariant"]
    );
    // Plain output names the invariant, the causal sentence and the replay command.
    let p = faultline(&["replay", &file]);
    let text = String::from_utf8_lossy(&p.stdout);
    assert!(
        text.contains("VIOLATION prompt-handover")
            && text.contains("replay: cargo run --release --bin faultline -- replay"),
        "{text}"
    );
    // And the invariant's own measure against its bound (10 s for a handover).
    assert!(
        text.contains("measure: time without a master after the graceful stop or the respawn: ")
            && text.contains("(bound 10.000 s)"),
        "{text}"
    );
}

/// Each exit status the CLI documents (`scenarios::cli::Exit`, listed by `--help` and docs/ci.md)
/// is produced by a command; the match is exhaustive, so a new status needs a case here.
#[test]
fn every_documented_exit_status_is_produced() {
    use scenarios::cli::Exit;
    let help = String::from_utf8_lossy(&faultline(&["--help"]).stdout).to_string();
    let dir = tmp("exit-statuses");
    let out = dir.to_str().unwrap();
    for e in Exit::ALL {
        assert!(
            help.contains(&format!("  {}  {}", e.code(), e.meaning())),
            "{help}"
        );
        let o = match e {
            Exit::Clean => faultline(&["run", "calico-restart", "--seed", "2"]),
            Exit::Failed => faultline(&[
                "explore",
                "calico-restart",
                "--bug",
                "calico-no-dead-pid-cleanup",
                "--seeds",
                "200",
                "--no-shrink",
                "--out",
                out,
            ]),
            Exit::BadInput => faultline(&["run", "no-such-scenario"]),
            Exit::Nondeterminism => {
                let j = last_json(&faultline(&[
                    "explore",
                    "calico-restart",
                    "--bug",
                    "calico-no-dead-pid-cleanup",
                    "--seeds",
                    "200",
                    "--no-shrink",
                    "--out",
                    out,
                    "--json",
                ]));
                let file = j["failure_file"].as_str().unwrap().to_string();
                let mut v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
                v["trace_hash"] = serde_json::json!("0000000000000000");
                std::fs::write(&file, v.to_string()).unwrap();
                faultline(&["replay", &file])
            }
            Exit::Interrupted => interrupted(
                &[
                    "explore",
                    "calico-restart",
                    "--seeds",
                    "1000000",
                    "--fix",
                    "all",
                    "--out",
                    out,
                ],
                std::time::Duration::from_millis(1500),
            ),
        };
        assert_eq!(o.status.code(), Some(e.code().into()), "{e:?}");
    }
}

#[test]
fn tampered_replay_is_nondeterminism() {
    let dir = tmp("tamper");
    let o = faultline(&[
        "explore",
        "calico-restart",
        "--bug",
        "calico-no-dead-pid-cleanup",
        "--seeds",
        "200",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let file = last_json(&o)["failure_file"].as_str().unwrap().to_string();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["trace_hash"] = serde_json::json!("0000000000000000");
    std::fs::write(&file, v.to_string()).unwrap();
    assert_eq!(faultline(&["replay", &file]).status.code(), Some(3));
    // A schedule naming a node the run does not have is refused at load, not ignored.
    v["schedule"] =
        serde_json::json!([{"at_ms": 1000, "dur_ms": 5000, "kind": "pause", "node": "h9"}]);
    std::fs::write(&file, v.to_string()).unwrap();
    for cmd in ["replay", "shrink"] {
        assert_bad_input(
            &[cmd, &file],
            "names node 'h9', which this run does not have",
        );
    }
}

#[test]
fn list_bugs_and_check_determinism() {
    let l = faultline(&["list"]);
    let text = String::from_utf8_lossy(&l.stdout);
    for s in [
        "calico-silent-task-death",
        "calico-clock-skew",
        "calico-split-brain",
        "calico-restart",
    ] {
        assert!(text.contains(s), "{text}");
    }
    let b = last_json(&faultline(&["bugs", "--json"]));
    assert_eq!(
        b["switches"].as_array().unwrap().len(),
        scenarios::builtin().switches().count()
    );
    let d = faultline(&["check-determinism", "calico-clock-skew", "--seeds", "6"]);
    assert_eq!(d.status.code(), Some(0));
    assert_eq!(last_json(&d)["mismatches"], 0);
    let dj = faultline(&[
        "check-determinism",
        "calico-restart",
        "--seeds",
        "2",
        "--json",
    ]);
    assert_eq!(dj.status.code(), Some(0), "--json is accepted");
    assert_eq!(last_json(&dj)["seeds"], 2);
    let f = last_json(&faultline(&["findings", "--json"]));
    let ids: Vec<&str> = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), scenarios::builtin().findings().count());
    assert!(ids.contains(&"calico-watch-canceller-dies"), "{ids:?}");
    for x in f["findings"].as_array().unwrap() {
        if x["system"] == "calico" {
            let up = &x["upstream"][0];
            assert_eq!(
                up["commit"], "87c15906f20c4ca1fda55af92295e7678b0cc0b2",
                "{x}"
            );
            assert!(up["lines"].as_str().is_some_and(|l| !l.is_empty()), "{x}");
        }
        if x["system"] == "cilium" {
            // Every Cilium finding, active or retired, cites cilium/cilium at a commit.
            let cites = x["upstream"].as_array().unwrap();
            assert!(!cites.is_empty(), "{x}");
            for c in cites {
                assert_eq!(c["repo"], "cilium/cilium", "{x}");
                assert!(c["commit"].as_str().is_some_and(|h| h.len() >= 12), "{x}");
            }
        }
    }
}

#[test]
fn explore_shrinks_the_first_failure_and_shrink_reports_json() {
    let dir = tmp("shrink");
    let o = faultline(&[
        "explore",
        "calico-silent-task-death",
        "--bug",
        "calico-local-master-flag",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j = last_json(&o);
    let shrunk = j["shrunk_file"]
        .as_str()
        .expect("explore shrinks by default")
        .to_string();
    assert!(j["shrunk_faults"].as_u64().unwrap() <= 5, "{j}");
    let r = faultline(&["replay", &shrunk, "--json"]);
    assert_eq!(last_json(&r)["reproduced"], true);
    let failure = j["failure_file"].as_str().unwrap().to_string();
    let s = faultline(&["shrink", &failure, "--json"]);
    let sj = json_with_status(&s, 1);
    for k in ["invariant", "before_faults", "after_faults", "file"] {
        assert!(sj.get(k).is_some(), "missing {k} in {sj}");
    }
    assert!(sj["after_faults"].as_u64() <= sj["before_faults"].as_u64());
    assert_eq!(sj["invariant"], j["first_failure"]["invariant"]);
    let n = faultline(&[
        "explore",
        "calico-silent-task-death",
        "--bug",
        "calico-local-master-flag",
        "--out",
        dir.to_str().unwrap(),
        "--no-shrink",
        "--json",
    ]);
    assert!(last_json(&n)["shrunk_file"].is_null());
}

#[test]
fn a_replay_file_of_the_previous_version_is_refused_with_its_version() {
    let path = tmp("old-replay.json");
    std::fs::write(
        &path,
        r#"{"format": "faultline-replay", "version": 2, "scenario": "cilium-swarm", "seed": 19}"#,
    )
    .unwrap();
    let o = faultline(&["replay", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("version 2") && err.contains("older faultline"),
        "{err}"
    );
}

/// `--fix all` applies every fix of the scenario's system (and only its system's).
#[test]
fn fix_all_expands_to_the_systems_fixes() {
    let j = last_json(&faultline(&[
        "explore",
        "cilium-swarm",
        "--seeds",
        "3",
        "--fix",
        "all",
        "--no-shrink",
        "--json",
    ]));
    let want: Vec<serde_json::Value> = scenarios::builtin()
        .switches()
        .filter(|s| s.system == "cilium" && s.kind == scenarios::scenario::SwitchKind::Fix)
        .map(|s| serde_json::json!(s.name))
        .collect();
    assert_eq!(j["fixes"], serde_json::Value::Array(want), "{j}");
}
