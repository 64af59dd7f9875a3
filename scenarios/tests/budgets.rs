//! Every scenario over its CI seed budget: with every fix of its system on it is clean; the
//! default model fails only through catalogued findings, each recognised by its exact signature
//! (not by the name of its invariant); every active finding reproduces at its pinned seeds and its
//! fix removes it; every retired finding no longer shows; the coverage catalog is reached.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::findings::{finding_for, Status};
use scenarios::{builtin, run_spec, scenario, RunSpec};

#[test]
fn every_fix_on_passes_every_budget() {
    for sc in builtin().scenarios() {
        let fixes = all_fixes(sc.system);
        let s = sweep(sc, 0, sc.ci_seeds, &[], &fixes, true);
        assert_eq!(s.seeds_run, sc.ci_seeds);
        assert!(
            s.failures.is_empty(),
            "{} with fixes {fixes:?} failed:{}",
            sc.name,
            replays(&s)
        );
    }
}

#[test]
fn default_model_fails_only_through_catalogued_findings() {
    for sc in builtin().scenarios() {
        let s = sweep(sc, 0, sc.ci_seeds, &[], &[], true);
        let unexplained: Vec<_> = s
            .failures
            .iter()
            .filter(|f| finding_for(sc.name, f.outcome.violation.as_ref().unwrap()).is_none())
            .collect();
        assert!(
            unexplained.is_empty(),
            "{}: failures that match no catalogued finding:{}",
            sc.name,
            replays(&s)
        );
        for (point, n) in &s.coverage {
            assert!(
                *n > 0,
                "{}: coverage point {point} not reached in {} seeds",
                sc.name,
                sc.ci_seeds
            );
        }
    }
}

#[test]
fn active_findings_reproduce_exactly_and_their_fixes_remove_them() {
    for f in builtin().findings().filter(|f| f.is_active()) {
        let sc = scenario(f.scenario).expect("a finding names a scenario");
        let fix = f.fix.expect("an active finding has a fix");
        let with: Vec<String> = f.shown_with.iter().map(|w| w.to_string()).collect();
        for &seed in f.seeds {
            let plain = run_spec(RunSpec::from_seed(sc, seed, &[], &with));
            let v = plain
                .violation
                .unwrap_or_else(|| panic!("{} seed {seed} no longer shows {}", sc.name, f.id));
            assert!(
                f.signature.matches(&v),
                "{} seed {seed}: expected {} ({:?}), got {}: {}",
                sc.name,
                f.id,
                f.signature,
                v.invariant,
                v.explanation
            );
            let mut fixes = with.clone();
            fixes.push(fix.to_string());
            let fixed = run_spec(RunSpec::from_seed(sc, seed, &[], &fixes));
            assert!(
                fixed
                    .violation
                    .as_ref()
                    .is_none_or(|v| !f.signature.matches(v)),
                "{} seed {seed} with --fix {fix} still shows {}",
                sc.name,
                f.id
            );
            let every: Vec<String> = all_fixes(sc.system).iter().map(|s| s.to_string()).collect();
            let all = run_spec(RunSpec::from_seed(sc, seed, &[], &every));
            assert!(
                all.violation.is_none(),
                "{} seed {seed} with every fix: {:?}",
                sc.name,
                all.violation
            );
        }
    }
}

#[test]
fn retired_findings_no_longer_show() {
    for f in builtin().findings() {
        if let Status::Retired { .. } = f.status {
            let sc = scenario(f.scenario).expect("a finding names a scenario");
            for &seed in f.seeds {
                let out = run_spec(RunSpec::from_seed(sc, seed, &[], &[]));
                assert!(
                    out.violation
                        .as_ref()
                        .is_none_or(|v| !f.signature.matches(v)),
                    "retired {} shows again at {} seed {seed}",
                    f.id,
                    sc.name
                );
            }
        }
    }
}

#[test]
fn every_fix_remedies_a_catalogued_finding() {
    for fix in all_fixes("calico").into_iter().chain(all_fixes("cilium")) {
        assert!(
            builtin()
                .findings()
                .any(|f| f.is_active() && f.fix == Some(fix)),
            "fix {fix} remedies no active finding"
        );
    }
}
