//! `faultline findings`: the JSON carries each finding's preconditions, realism and rates;
//! `--report` prints an active finding's report; `--measure-rates` reports each rate's interval;
//! bad input is one line and exit 2.

use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

#[test]
fn findings_json_has_preconditions_realism_and_rates() {
    let o = faultline(&["findings", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("output")).expect("JSON");
    let findings = v["findings"].as_array().expect("findings");
    let active: Vec<_> = findings
        .iter()
        .filter(|f| f["status"] == "active")
        .collect();
    assert!(!active.is_empty());
    for f in active {
        assert!(
            f["preconditions"].as_array().is_some_and(|p| !p.is_empty()),
            "{f}"
        );
        let realism = f["realism"].as_str().expect("realism");
        assert!(
            ["normal-operation", "rare-fault", "hypothetical-fault"].contains(&realism),
            "{realism}"
        );
        let rates = f["rates"].as_array().expect("rates");
        for profile in ["adversarial", "realistic"] {
            assert!(
                rates.iter().any(|r| r["profile"] == profile),
                "{profile}: {f}"
            );
        }
        for r in rates {
            let (n, seeds) = (
                r["failures"].as_u64().unwrap(),
                r["seeds"].as_u64().unwrap(),
            );
            let per = r["per_100k"].as_u64().unwrap();
            assert_eq!(per, (n * 100_000 + seeds / 2) / seeds);
            // The interval the sample allows holds the rate, and is not empty.
            let (low, high) = (
                r["per_100k_low"].as_u64().unwrap(),
                r["per_100k_high"].as_u64().unwrap(),
            );
            assert!(low <= per && per <= high && low < high, "{r}");
        }
    }
}

/// `--measure-rates` prints the rates file on standard output and, on standard error, each
/// finding's rate with the interval its sample allows.
#[test]
fn measure_rates_reports_the_interval() {
    let o = faultline(&[
        "findings",
        "--measure-rates",
        "--seeds",
        "2",
        "--first-seed",
        "0",
        "--commit",
        "test",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the rates file is JSON");
    assert!(out["measurements"]
        .as_array()
        .is_some_and(|m| !m.is_empty()));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("calico-wall-clock-stamp: adversarial "))
        .unwrap_or_else(|| panic!("no line for calico-wall-clock-stamp in:\n{err}"));
    assert!(line.contains("of 2 seeds from 0: "), "{line}");
    assert!(line.contains(" per 100,000 (95 % interval "), "{line}");
}

#[test]
fn findings_report_prints_an_active_findings_report() {
    let o = faultline(&["findings", "--report", "calico-watch-canceller-dies"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    for heading in [
        "## What goes wrong",
        "## Version",
        "## Shortest replay",
        "## How it happens",
        "## What it needs, and how often",
        "## The change upstream would make",
    ] {
        assert!(out.contains(heading), "no {heading} in:\n{out}");
    }
}

#[test]
fn findings_bad_input_is_one_line_and_exit_2() {
    for args in [
        &["findings", "--report", "no-such-finding"][..],
        &[
            "findings",
            "--measure-rates",
            "--profile",
            "gentle",
            "--commit",
            "x",
        ],
        &["findings", "--measure-rates", "--seeds", "5"],
        &[
            "findings",
            "--measure-rates",
            "--seeds",
            "0",
            "--commit",
            "x",
        ],
    ] {
        let o = faultline(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
