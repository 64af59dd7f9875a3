//! Reports: snapshots of `summary.md` and `report.json` for pinned seeds, a render of `index.html`
//! in headless Chromium (timeline SVG present and sized, every violation shown, no script errors;
//! a screenshot is saved under `target/`), and bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

fn out_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/faultline-reports/test")
        .join(name)
}

fn report(args: &[&str], name: &str) -> PathBuf {
    let dir = out_dir(name);
    let mut a: Vec<&str> = vec!["report"];
    a.extend_from_slice(args);
    let d = dir.to_str().unwrap().to_string();
    a.extend_from_slice(&["--out", &d]);
    let o = faultline(&a);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir
}

#[test]
fn summaries_and_json_of_pinned_seeds() {
    for (name, args) in [
        (
            "silent-task-death-45",
            vec!["calico-silent-task-death", "--seed", "45"],
        ),
        ("restart-7", vec!["calico-restart", "--seed", "7"]),
        (
            "cilium-no-handshake-15",
            vec![
                "cilium-swarm",
                "--seed",
                "15",
                "--bug",
                "cilium-no-handshake",
            ],
        ),
    ] {
        let dir = report(&args, name);
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        insta::assert_snapshot!(format!("{name}-summary"), md);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        insta::assert_json_snapshot!(format!("{name}-report"), json);
        let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
        page_is_for_its_system(&html, name);
    }
    let dir = report(
        &["calico-split-brain", "--seeds", "12"],
        "split-brain-12-seeds",
    );
    insta::assert_snapshot!(
        "split-brain-12-seeds-summary",
        std::fs::read_to_string(dir.join("summary.md")).unwrap()
    );
}

/// A report page shows inline code as `<code>` (never raw backticks), and its legend explains its
/// own system's kinds and none of another system's.
fn page_is_for_its_system(html: &str, name: &str) {
    assert!(
        !html.contains('`'),
        "raw Markdown backticks in {name}'s page"
    );
    let (own, others): (&[&str], &[&str]) = if name.starts_with("cilium") {
        (
            &["IPs in the release handshake"],
            &["believes it is master", "announces a service IP"],
        )
    } else {
        (
            &["believes it is master", "holds the election key"],
            &["IPs in the release handshake", "announces a service IP"],
        )
    };
    for k in own {
        assert!(html.contains(k), "{name}: legend lacks '{k}'");
    }
    for k in others {
        assert!(
            !html.contains(k),
            "{name}: legend has another system's '{k}'"
        );
    }
}

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

fn headless(args: &[&str]) -> Output {
    let profile = std::env::temp_dir().join(format!("faultline-chromium-{}", std::process::id()));
    let mut a = vec![
        "--headless=new".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    a.extend(args.iter().map(|s| s.to_string()));
    Command::new(chromium().unwrap())
        .args(&a)
        .output()
        .expect("chromium runs")
}

#[test]
#[ignore = "needs chromium: `just deps`, then `just test-all`"]
fn index_html_renders_in_headless_chromium() {
    assert!(
        chromium().is_some(),
        "chromium is not installed: `just deps` (apt-get install chromium) renders the reports"
    );
    // A failing seed of calico-clock-skew: calico-wall-clock-stamp on a stale stamp.
    let seed = "377";
    let single = report(&["calico-clock-skew", "--seed", seed], "render-single");
    let many = report(
        &["cilium-split-brain", "--seeds", "8", "--from", "2228"],
        "render-many",
    );
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    for (dir, shot) in [(&single, "report-single.png"), (&many, "report-seeds.png")] {
        let url = format!(
            "file://{}",
            dir.join("index.html").canonicalize().unwrap().display()
        );
        let dom = headless(&["--virtual-time-budget=2000", "--dump-dom", &url]);
        let dom = String::from_utf8_lossy(&dom.stdout);
        if dir == &single {
            // The bound's Markdown code spans are rendered as code.
            assert!(dom.contains("<code>MASTER_TIMEOUT</code>"), "{url}");
        }
        assert!(
            dom.contains(r#"data-errors="0""#),
            "script errors while rendering {url}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        // Every violation of the report appears on the page.
        let violation = json["violation"]["invariant"].as_str().or_else(|| {
            json["seeds"]
                .as_array()
                .and_then(|s| s.iter().find_map(|r| r["violation"].as_str()))
        });
        if let Some(inv) = violation {
            assert!(dom.contains(inv), "{inv} missing from {url}");
        }
        // The timeline SVG is there and sized.
        let svg = dom
            .find(r#"<svg id="timeline""#)
            .unwrap_or_else(|| panic!("no timeline in {url}"));
        let tag = &dom[svg..svg + 200];
        assert!(
            tag.contains(r#"width="1100""#) && tag.contains("height=\""),
            "{tag}"
        );
        let png = shots.join(shot);
        let out = headless(&[
            "--window-size=1240,1400",
            &format!("--screenshot={}", png.display()),
            &url,
        ]);
        assert!(
            png.exists() && std::fs::metadata(&png).unwrap().len() > 10_000,
            "no screenshot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn bad_input_gets_one_line_and_status_2() {
    let one_line = |args: &[&str], needle: &str| {
        let o = faultline(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    one_line(
        &["report", "no-such-scenario", "--seed", "1"],
        "unknown scenario",
    );
    one_line(
        &["report", "--replay", "/nonexistent/replay.json"],
        "cannot read replay file",
    );
    one_line(
        &["report", "calico-restart"],
        "exactly one of --seed N or --seeds N",
    );
    let file = std::env::temp_dir().join(format!("faultline-report-file-{}", std::process::id()));
    std::fs::write(&file, "x").unwrap();
    let bad = file.join("sub");
    one_line(
        &[
            "report",
            "calico-restart",
            "--seed",
            "1",
            "--out",
            bad.to_str().unwrap(),
        ],
        "cannot write report folder",
    );
}

/// Exploring metallb-split-brain under `metallb-join-once` finds two
/// speakers announcing one IP long after the partition healed, and the report of that run shows the
/// duplicate-announcer window (headline, and a band on the router's row).
#[test]
fn join_once_report_shows_the_duplicate_announcer_window() {
    let failures = out_dir("join-once-failures");
    let _ = std::fs::remove_dir_all(&failures);
    let f = failures.to_str().unwrap().to_string();
    let o = faultline(&[
        "explore",
        "metallb-split-brain",
        "--bug",
        "metallb-join-once",
        "--seeds",
        "2000",
        "--no-shrink",
        "--jobs",
        "2",
        "--out",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(1), "a violation is found");
    let replay = std::fs::read_dir(&failures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a replay file");
    let dir = report(&["--replay", replay.to_str().unwrap()], "join-once");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let v = &json["violation"];
    assert_eq!(v["invariant"], "single-announcer", "{v}");
    let explanation = v["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("is announced by")
            && explanation.contains("more than one has answered"),
        "{explanation}"
    );
    // The headline is the invariant's own measure: the check fires only once the network has
    // been whole for the convergence bound (157 s or more), and the report shows that bound.
    let h = &json["headline"];
    assert_eq!(
        h["name"],
        scenarios::metallb::invariants::SINGLE_ANNOUNCER.measure,
        "{h}"
    );
    let since = h["value"].as_f64().unwrap();
    let bound: f64 = h["bound"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        bound >= 157.0 && since >= bound,
        "measure {since} s, bound {bound} s"
    );
    // So the duplicate outlived the partition by at least that long: the family's measure.
    let window = h["family"]["value"].as_f64().unwrap();
    assert!(window >= 157.0, "duplicate window {window} s");
    assert!(h["family"]["name"]
        .as_str()
        .unwrap()
        .contains("duplicate-announcer"));
    let router = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "router")
        .expect("a router row");
    assert!(
        router["bands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["kind"] == "duplicate"),
        "{router}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("Longest duplicate-announcer window"), "{md}");
}
