//! Every invariant can fail. Each is tripped by at least one `mutant` switch (a small,
//! deliberate break of the model), and exploration from random seeds, with every fix of the system
//! on, catches each mutant through the invariant it names within 2,000 seeds.
//!
//! Also the catalog's shape: at least five invariants per system, each with the upstream behaviour
//! it stands for, a numeric bound on every liveness invariant, and a headline measure on every
//! one. Each caught mutant's violation carries that measure's value, and it breaches the
//! bound the monitor applied the way the catalog says.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::invariant::{Breach, Invariant};
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
        let inv = sw.trips.expect("a mutant names the invariant it trips");
        let want = inv.name;
        let sc = scenario(sw.scenario).unwrap();
        let s = sweep(sc, 0, BUDGET, &[sw.name], &all_fixes(system), false);
        match s
            .failures
            .first()
            .map(|f| f.outcome.violation.as_ref().unwrap())
        {
            Some(v) if v.invariant == want => {
                if let Err(e) = measure_fits(inv, v) {
                    missed.push(format!(
                        "{} (seed {}): {e}",
                        sw.name, s.failures[0].spec.seed
                    ));
                }
            }
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

/// A violation of `inv` carries its measure, and the value breaches the bound the monitor applied
/// as the catalog's [`Breach`] says (an unbounded invariant is held to no bound; a bounded one may
/// leave out the bound only where something else broke it, as `release-acknowledged` without an
/// answer).
fn measure_fits(inv: &Invariant, v: &sim::Violation) -> Result<(), String> {
    let m = v.measured.ok_or("the violation carries no measure")?;
    match (inv.breach, m.bound_us) {
        (Breach::Occurs, Some(b)) => Err(format!("an unbounded invariant measured against {b} us")),
        (_, None) => Ok(()),
        (breach, bound) if breach.breached(m.value_us, bound) => Ok(()),
        (breach, Some(b)) => Err(format!(
            "measure {} us does not breach its bound {b} us as {breach:?}",
            m.value_us
        )),
    }
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
        assert!(!i.measure.is_empty(), "{}: no headline measure", i.name);
        assert_eq!(
            i.breach == Breach::Occurs,
            i.bound_us.is_none(),
            "{}: an invariant has a bound exactly when its measure is held to one",
            i.name
        );
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
