//! Issue 29: every invariant can fail. Each is tripped by at least one `mutant` switch (a small,
//! deliberate break of the model), and exploration from random seeds, with every fix of the system
//! on, catches each mutant through the invariant it names within 2,000 seeds.
//!
//! Also the catalog's shape: at least five invariants per system, each with the upstream behaviour
//! it stands for, and a numeric bound on every liveness invariant.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::scenario::SwitchKind;
use scenarios::{builtin, scenario};
use sim::Kind;

/// The exploration budget within which a mutant must be caught.
const BUDGET: u64 = 2_000;

/// Every mutant of `system` is caught by its scenario through the invariant it names.
fn mutants_are_caught(system: &str) {
    let mut missed = Vec::new();
    for sw in builtin()
        .switches()
        .filter(|s| s.kind == SwitchKind::Mutant && s.system == system)
    {
        let want = sw
            .trips
            .expect("a mutant names the invariant it trips")
            .name;
        let sc = scenario(sw.scenario).unwrap();
        let s = sweep(sc, 0, BUDGET, &[sw.name], &all_fixes(system), false);
        match s.failures.first() {
            Some(f) if f.outcome.violation.as_ref().unwrap().invariant == want => {}
            Some(_) => missed.push(format!(
                "{} tripped another invariant first (want {want}):{}",
                sw.name,
                replays(&s)
            )),
            None => missed.push(format!(
                "{} not caught by {} in {BUDGET} seeds (want {want})",
                sw.name, sc.name
            )),
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// Every invariant of `system` has a mutant that trips it.
fn every_invariant_has_a_mutant(system: &str) {
    let sys = builtin()
        .systems()
        .iter()
        .find(|s| s.name == system)
        .unwrap();
    let uncovered: Vec<&str> = sys
        .invariants
        .iter()
        .filter(|i| {
            !builtin()
                .switches()
                .any(|s| s.kind == SwitchKind::Mutant && s.trips.is_some_and(|t| t.name == i.name))
        })
        .map(|i| i.name)
        .collect();
    assert!(
        uncovered.is_empty(),
        "{system}: no mutant trips {uncovered:?}"
    );
}

/// The catalog's shape for `system`.
fn catalog_is_complete(system: &str) {
    let sys = builtin()
        .systems()
        .iter()
        .find(|s| s.name == system)
        .unwrap();
    assert!(
        sys.invariants.len() >= 5,
        "{system}: fewer than 5 invariants"
    );
    for i in sys.invariants {
        assert!(!i.upstream.is_empty(), "{}: no upstream behaviour", i.name);
        if i.kind == Kind::Liveness {
            assert!(
                i.bound_us.is_some(),
                "{}: a liveness invariant without a bound",
                i.name
            );
        }
    }
}

#[test]
fn calico_catalog() {
    catalog_is_complete("calico");
    every_invariant_has_a_mutant("calico");
}

#[test]
fn cilium_catalog() {
    catalog_is_complete("cilium");
    every_invariant_has_a_mutant("cilium");
}

#[test]
fn metallb_catalog() {
    catalog_is_complete("metallb");
    every_invariant_has_a_mutant("metallb");
}

#[test]
fn calico_mutants_are_caught() {
    mutants_are_caught("calico");
}

#[test]
fn cilium_mutants_are_caught() {
    mutants_are_caught("cilium");
}

#[test]
fn metallb_mutants_are_caught() {
    mutants_are_caught("metallb");
}

/// A mutant is named for `--bug` and listed by `faultline bugs` as kind `mutant`; its invariant is
/// one of its system's.
#[test]
fn mutants_name_their_systems_invariants() {
    for sw in builtin()
        .switches()
        .filter(|s| s.kind == SwitchKind::Mutant)
    {
        let sys = builtin()
            .systems()
            .iter()
            .find(|s| s.name == sw.system)
            .unwrap();
        let t = sw.trips.unwrap();
        assert!(
            sys.invariants.iter().any(|i| i.name == t.name),
            "{} trips {}, not a {} invariant",
            sw.name,
            t.name,
            sw.system
        );
        assert!(builtin().bug_or_mutant(sw.name).is_some());
    }
}
