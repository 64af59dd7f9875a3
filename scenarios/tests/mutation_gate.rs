//! The test command of `just mutants` (cargo-mutants, issue 29): a short exploration of one
//! system's scenarios with every fix on. A mutant of the model's decision code is caught when an
//! invariant fails or a coverage point goes unreached within each scenario's CI budget (coverage as
//! an oracle). Ignored in a plain `cargo test`: `scenarios/tests/budgets.rs` runs the same budgets.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::builtin;
use scenarios::explore::unreached_coverage;

fn gate(system: &str) {
    for sc in builtin().scenarios().iter().filter(|s| s.system == system) {
        let s = sweep(sc, 0, sc.ci_seeds, &[], &all_fixes(system), false);
        assert!(s.failures.is_empty(), "{}:{}", sc.name, replays(&s));
        let unreached = unreached_coverage(sc, &s);
        assert!(unreached.is_empty(), "{}: unreached {unreached:?}", sc.name);
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
