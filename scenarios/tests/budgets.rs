//! Every scenario over its CI seed budget: the default model fails only through its documented
//! findings, the fixes of those findings pass the whole budget, each finding is reproduced by its
//! pinned seed, and the coverage catalog is reached.

mod common;
use common::{replays, sweep};
use scenarios::{run_spec, RunSpec, SCENARIOS};

#[test]
fn default_model_fails_only_through_documented_findings() {
    for sc in SCENARIOS {
        let s = sweep(sc, 0, sc.ci_seeds, &[], &[], true);
        assert_eq!(s.seeds_run, sc.ci_seeds);
        let unexplained: Vec<_> = s
            .failures
            .iter()
            .filter(|f| {
                !sc.findings
                    .iter()
                    .any(|k| k.invariant == f.outcome.violation.as_ref().unwrap().invariant)
            })
            .collect();
        assert!(
            unexplained.is_empty(),
            "{}: failures that are not documented findings:{}",
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
fn fixed_model_passes_every_budget() {
    for sc in SCENARIOS {
        let fixes: Vec<&str> = sc.findings.iter().map(|f| f.fix).collect();
        let s = sweep(sc, 0, sc.ci_seeds, &[], &fixes, true);
        assert!(
            s.failures.is_empty(),
            "{} with fixes {fixes:?} failed:{}",
            sc.name,
            replays(&s)
        );
    }
}

#[test]
fn pinned_findings_reproduce_and_their_fixes_remove_them() {
    for sc in SCENARIOS {
        for f in sc.findings {
            let plain = run_spec(RunSpec::from_seed(sc, f.seed, &[], &[]));
            let v = plain.violation.unwrap_or_else(|| {
                panic!(
                    "{} seed {} no longer shows finding {}",
                    sc.name, f.seed, f.invariant
                )
            });
            assert_eq!(v.invariant, f.invariant);
            let fixed = run_spec(RunSpec::from_seed(sc, f.seed, &[], &[f.fix.to_string()]));
            assert!(
                fixed.violation.is_none(),
                "{} seed {} with --fix {}: {:?}",
                sc.name,
                f.seed,
                f.fix,
                fixed.violation
            );
        }
    }
}
