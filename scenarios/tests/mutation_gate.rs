//! The test command of `just mutants` (cargo-mutants): a short exploration of one
//! system's scenarios with every fix on. A mutant of the model's decision code is caught when an
//! invariant fails or a coverage point goes unreached within each scenario's CI budget (coverage as
//! an oracle), or when a pinned seed of an active finding fails with every fix on (those seeds
//! reach the rare states a fix is about, which a CI budget may not). Ignored in a plain `cargo
//! test`: `scenarios/tests/budgets.rs` runs the same budgets and the same pinned seeds.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::explore::unreached_coverage;
use scenarios::{builtin, run_spec, scenario, RunSpec};

fn gate(system: &str) {
    let fixes = all_fixes(system);
    for sc in builtin().scenarios().iter().filter(|s| s.system == system) {
        let s = sweep(sc, 0, sc.ci_seeds, &[], &fixes, false);
        assert!(s.failures.is_empty(), "{}:{}", sc.name, replays(&s));
        let unreached = unreached_coverage(sc, &s);
        assert!(unreached.is_empty(), "{}: unreached {unreached:?}", sc.name);
    }
    let every: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
    for f in builtin()
        .findings()
        .filter(|f| f.is_active() && f.system == system)
    {
        let sc = scenario(f.scenario).expect("a finding names a scenario");
        for &seed in f.seeds {
            let o = run_spec(RunSpec::from_seed(sc, seed, &[], &every));
            assert!(
                o.violation.is_none(),
                "{} seed {seed} (finding {}) with every fix: {:?}",
                sc.name,
                f.id,
                o.violation
            );
        }
    }
}

#[test]
#[ignore = "the test command of `just mutants calico`"]
fn calico() {
    gate("calico");
}

#[test]
#[ignore = "the test command of `just mutants cilium`"]
fn cilium() {
    gate("cilium");
}

#[test]
#[ignore = "the test command of `just mutants metallb`"]
fn metallb() {
    gate("metallb");
}
