//! The `faultline` command line: exit statuses, `--json` last lines, and bad input (one clear line
//! on stderr, exit 2, never a panic).

use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

/// `faultline` with these environment variables set (and the CI engines' own cleared).
fn faultline_env(args: &[&str], vars: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_faultline"));
    for v in [
        "JOB_COMPLETION_INDEX",
        "FAULTLINE_SHARDS",
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
    ] {
        c.env_remove(v);
    }
    c.args(args)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("faultline runs")
}

fn last_json(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().expect("some output")).expect("last line is JSON")
}

/// The last JSON line of a command that must have exited with `code` (else its stderr is shown).
fn json_with_status(o: &Output, code: i32) -> serde_json::Value {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    last_json(o)
}

fn assert_bad_input(args: &[&str], needle: &str) {
    let o = faultline(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: expected one line, got {err:?}"
    );
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?}: {err}"
    );
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("faultline-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

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
        "cannot create output directory",
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
    let o = faultline(&["run", "calico-split-brain", "--seed", "0x2a", "--json"]);
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
    assert_eq!(j["seed"], 42);
    assert_eq!(j["outcome"], "pass");
    // The trace file it writes hashes back to the same trace hash.
    let trace = tmp("run-42.jsonl");
    let o = faultline(&[
        "run",
        "calico-split-brain",
        "--seed",
        "0x2a",
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
            Exit::Clean => faultline(&["run", "calico-restart", "--seed", "1"]),
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
fn shards_cover_the_range_disjointly_and_merge() {
    let dir = tmp("shards");
    let mut files = Vec::new();
    for k in 1..=3 {
        let o = faultline(&[
            "explore",
            "calico-restart",
            "--seeds",
            "30",
            "--shard",
            &format!("{k}/3"),
            "--bug",
            "calico-no-dead-pid-cleanup",
            "--keep-going",
            "--no-shrink",
            "--out",
            dir.to_str().unwrap(),
            "--json",
        ]);
        let f = dir.join(format!("shard-{k}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f);
    }
    let whole = last_json(&faultline(&[
        "explore",
        "calico-restart",
        "--seeds",
        "30",
        "--bug",
        "calico-no-dead-pid-cleanup",
        "--keep-going",
        "--no-shrink",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]));
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let m = faultline(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let merged = last_json(&m);
    assert_eq!(merged["seeds_run"], whole["seeds_run"]);
    assert_eq!(merged["failures"], whole["failures"]);
    assert_eq!(
        merged["first_failure"]["seed"],
        whole["first_failure"]["seed"]
    );
    assert_eq!(m.status.code(), Some(1));
    assert_bad_input(
        &["explore", "calico-restart", "--shard", "3/2"],
        "malformed shard",
    );
    assert_bad_input(&["merge", "/nonexistent"], "cannot read");
}

/// `--shard auto` under a Kubernetes Indexed Job (JOB_COMPLETION_INDEX from 0, the count from
/// --shards or FAULTLINE_SHARDS) and under GitLab's parallel (CI_NODE_INDEX from 1,
/// CI_NODE_TOTAL): the merged shards count the same seeds and find the same failures as one
/// unsharded exploration.
#[test]
fn shard_auto_under_kubernetes_and_gitlab_equals_unsharded() {
    let dir = tmp("auto-shards");
    let args = |out: &std::path::Path| {
        [
            "explore",
            "calico-restart",
            "--seeds",
            "40",
            "--bug",
            "calico-no-dead-pid-cleanup",
            "--keep-going",
            "--no-shrink",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ]
        .map(String::from)
        .to_vec()
    };
    let whole = last_json(&faultline(
        &args(&dir).iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(whole["failures"].as_u64().unwrap() > 1, "{whole}");
    type Vars = fn(u64) -> Vec<(&'static str, String)>;
    let engines: [(&str, Vars); 2] = [
        ("k8s", |k| {
            vec![
                ("JOB_COMPLETION_INDEX", (k - 1).to_string()),
                ("FAULTLINE_SHARDS", "3".into()),
            ]
        }),
        ("gitlab", |k| {
            vec![
                ("CI_NODE_INDEX", k.to_string()),
                ("CI_NODE_TOTAL", "3".into()),
            ]
        }),
    ];
    for (name, vars) in engines {
        let mut files = Vec::new();
        for k in 1..=3u64 {
            let mut a = args(&dir);
            a.extend(["--shard".into(), "auto".into()]);
            let o = faultline_env(&a.iter().map(String::as_str).collect::<Vec<_>>(), &vars(k));
            assert_eq!(last_json(&o)["shard"], format!("{k}/3"), "{name}");
            let f = dir.join(format!("{name}-{k}.json"));
            std::fs::write(&f, &o.stdout).unwrap();
            files.push(f.display().to_string());
        }
        let mut m = vec!["merge".to_string()];
        m.extend(files);
        let merged = last_json(&faultline(
            &m.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        for key in ["seeds_run", "failures", "failing_seeds"] {
            assert_eq!(merged[key], whole[key], "{name}: {key}");
        }
    }
    let explore = [
        "explore",
        "calico-restart",
        "--seeds",
        "3",
        "--shard",
        "auto",
    ];
    let bad = |vars: Vec<(&str, String)>, needle: &str| {
        let o = faultline_env(&explore, &vars);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{vars:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{vars:?}: {err}");
    };
    bad(vec![], "neither JOB_COMPLETION_INDEX");
    bad(
        vec![("JOB_COMPLETION_INDEX", "0".into())],
        "completion count",
    );
    bad(
        vec![
            ("JOB_COMPLETION_INDEX", "one".into()),
            ("FAULTLINE_SHARDS", "2".into()),
        ],
        "not a whole number",
    );
    bad(vec![("CI_NODE_INDEX", "1".into())], "CI_NODE_TOTAL");
    bad(
        vec![("CI_NODE_INDEX", "4".into()), ("CI_NODE_TOTAL", "3".into())],
        "outside",
    );
}

#[test]
fn bench_json_has_every_figure() {
    let o = faultline(&[
        "bench",
        "cilium-swarm",
        "--seeds",
        "4",
        "--repeat",
        "2",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let j = last_json(&o);
    let rows = j["scenarios"].as_array().expect("scenarios");
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["scenario"], "cilium-swarm");
    for k in [
        "seeds_per_sec",
        "sim_speedup",
        "events_per_sec",
        "peak_rss_mb",
        "baseline_ratio",
        "baseline_net_ratio",
    ] {
        let v = r[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {r}"));
        assert!(v.is_finite() && v > 0.0, "{k} = {v}");
    }
    assert!(r["timers_per_seed"].as_u64().unwrap() > r["messages_per_seed"].as_u64().unwrap());
    assert!(j["jobs_scaling"].as_f64().unwrap() > 0.0);
    assert_bad_input(&["bench", "--repeat", "0"], "repeat count");
    assert_bad_input(&["bench", "no-such-scenario"], "no-such-scenario");
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

/// `explore --junit` (and `replay --junit`, `check-determinism --junit`) write JUnit XML that a real
/// XML parser reads, with the elements and attributes GitLab and Jenkins use: testsuites >
/// testsuite (name, tests, failures, errors, skipped, time) > testcase (name, classname, time) >
/// failure (message: the causal sentence, type; text: the replay command and the schedule).
#[test]
fn junit_output_parses_and_names_the_replay_command() {
    use quick_xml::events::Event;
    let dir = tmp("junit");
    let xml = dir.join("explore.xml");
    let o = faultline(&[
        "explore",
        "calico-restart",
        "--bug",
        "calico-no-dead-pid-cleanup",
        "--seeds",
        "60",
        "--keep-going",
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
        "--json",
    ]);
    let j = last_json(&o);
    let failures = j["failures"].as_u64().unwrap();
    assert!(failures > 0);
    let text = std::fs::read_to_string(&xml).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let (mut path, mut seen_failures, mut failure_texts) = (Vec::<String>::new(), 0, Vec::new());
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attrs: Vec<String> = e
                    .attributes()
                    .map(|a| String::from_utf8(a.unwrap().key.as_ref().to_vec()).unwrap())
                    .collect();
                let want: &[&str] = match name.as_str() {
                    "testsuites" => &["tests", "failures"],
                    "testsuite" => &["name", "tests", "failures", "errors", "skipped", "time"],
                    "testcase" => &["name", "classname", "time"],
                    "failure" => &["message", "type"],
                    other => panic!("unexpected element {other}"),
                };
                for w in want {
                    assert!(attrs.iter().any(|a| a == w), "{name} lacks {w}: {attrs:?}");
                }
                if name == "failure" {
                    seen_failures += 1;
                }
                path.push(name);
            }
            Event::Text(t) if path.last().is_some_and(|p| p == "failure") => {
                failure_texts.push(t.decode().unwrap().to_string());
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(seen_failures, failures);
    assert!(failure_texts
        .iter()
        .all(|t| t.contains("replay: ") && t.contains("measure: ") && t.contains("faults (")));
    assert!(
        failure_texts[0].contains("-shrunk.json"),
        "{}",
        failure_texts[0]
    );
    let file = j["failure_file"].as_str().unwrap();
    let rx = dir.join("replay.xml");
    faultline(&["replay", file, "--junit", rx.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&rx).unwrap().contains("<failure"));
    let dx = dir.join("det.xml");
    let d = faultline(&[
        "check-determinism",
        "calico-restart",
        "--seeds",
        "3",
        "--junit",
        dx.to_str().unwrap(),
    ]);
    assert_eq!(d.status.code(), Some(0));
    let det = std::fs::read_to_string(&dx).unwrap();
    assert!(det.contains("3 seeds with equal traces") && !det.contains("<failure"));
}

/// A report of a violation headlines the violated invariant's own measure with its bound: a
/// master-only-work violation shows how long after losing the key the work was done (here past the
/// 125 s bound), not the overlap of two masters.
#[test]
fn a_violation_report_headlines_its_invariants_measure() {
    let dir = tmp("headline");
    let o = faultline(&[
        "report",
        "calico-silent-task-death",
        "--seed",
        "22",
        "--bug",
        "calico-local-master-flag",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["violation"]["invariant"], "master-only-work-legitimate");
    let h = &r["headline"];
    assert!(
        h["name"]
            .as_str()
            .unwrap()
            .contains("last holding the election key"),
        "{h}"
    );
    assert!(h["value_s"].as_f64().unwrap() > 125.0, "{h}");
    assert!(h["bound"].as_str().unwrap().contains("125 s"), "{h}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("(bound: "), "{md}");
}

/// `bench --scale` measures each system's first scenario at 3, 5 and 9 nodes over 10 and 60
/// simulated minutes, and writes its JSON and an SVG plot that parses as XML.
#[test]
fn bench_scale_writes_the_table_and_the_plot() {
    let dir = tmp("scale");
    let o = faultline(&[
        "bench",
        "--scale",
        "--seeds",
        "1",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let j = json_with_status(&o, 0);
    let rows = j["scale"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 3 * 2, "{j}");
    assert!(rows
        .iter()
        .all(|r| r["us_per_event"].as_f64().unwrap() > 0.0
            && r["us_per_work"].as_f64().unwrap() > 0.0
            && r["work_per_seed"].as_f64().unwrap() > r["events_per_seed"].as_f64().unwrap()));
    let spread = j["spread"].as_array().unwrap();
    assert_eq!(spread.len(), 3);
    assert!(spread
        .iter()
        .all(|s| s["us_per_event_max_over_min"].as_f64().unwrap() >= 1.0
            && s["us_per_work_max_over_min"].as_f64().unwrap() >= 1.0));
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scale.json")).unwrap()).unwrap();
    assert_eq!(file, j);
    let svg = std::fs::read_to_string(dir.join("scale.svg")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    let mut polylines = 0;
    loop {
        match reader.read_event().expect("the plot is well-formed XML") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Empty(e) if e.name().as_ref() == b"polyline" => {
                polylines += 1
            }
            _ => {}
        }
    }
    assert_eq!(polylines, 3 * 2, "one line per scenario and duration");
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
