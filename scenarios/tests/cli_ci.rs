//! The `faultline` command line in CI: sharded explorations and their merge, JUnit XML, the
//! reports and the benchmark's JSON and plot.

#[path = "support/cli.rs"]
mod cli_support;
use cli_support::*;

#[test]
fn shards_cover_the_range_disjointly_and_merge() {
    let dir = tmp("shards");
    let bug = [
        "--bug",
        "calico-no-dead-pid-cleanup",
        "--keep-going",
        "--no-shrink",
    ];
    let files: Vec<_> = (1..=3)
        .map(|k| explore_shard(&dir, "calico-restart", 30, (k, 3), &bug).1)
        .collect();
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
    let m = merge(&files);
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
        let merged = last_json(&merge(&files));
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
                    failure_texts.push(String::new());
                }
                path.push(name);
            }
            // A failure's text arrives in pieces, split at each entity reference (`&apos;`).
            Event::Text(t) if path.last().is_some_and(|p| p == "failure") => {
                let text: &mut String = failure_texts.last_mut().unwrap();
                text.push_str(&t.decode().unwrap());
            }
            Event::GeneralRef(r) if path.last().is_some_and(|p| p == "failure") => {
                let text: &mut String = failure_texts.last_mut().unwrap();
                text.push(match r.as_ref() {
                    b"apos" => '\'',
                    b"quot" => '"',
                    b"amp" => '&',
                    b"lt" => '<',
                    b"gt" => '>',
                    other => panic!("unexpected entity {}", String::from_utf8_lossy(other)),
                });
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
        failure_texts[0].contains(".shrunk.json"),
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
/// master-only-work violation on a stale stamp shows the stamp's true age when `is_master()`
/// last said yes (here past the 61 s bound), not the overlap of two masters.
#[test]
fn a_violation_report_headlines_its_invariants_measure() {
    let dir = tmp("headline");
    let o = faultline(&[
        "report",
        "calico-silent-task-death",
        "--seed",
        "3",
        "--bug",
        "calico-local-master-flag",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        r["violation"]["invariant"],
        "master-only-work-on-fresh-stamp"
    );
    let h = &r["headline"];
    assert!(
        h["name"]
            .as_str()
            .unwrap()
            .contains("true age of the acting host's stamp"),
        "{h}"
    );
    assert!(h["value"].as_f64().unwrap() > 61.0, "{h}");
    assert!(h["bound"].as_str().unwrap().starts_with("61.000 s"), "{h}");
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
