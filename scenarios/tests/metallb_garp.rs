//! The historic bug `metallb-garp-first-only` (the announcer before metallb 0c1ae8cc3, whose
//! gratuitous ARPs follow only the first `SetBalancer` of a service) is found through
//! `router-follows-owner` with every MetalLB fix on, and its failures are the bug's own: the same
//! seeds with the bug off pass. Fix `metallb-garp-while-announced` changes the spam loop of the
//! current announcer, which the old announcer does not have, so it cannot hide the bug.

mod common;
use common::{all_fixes, replays, sweep};
use scenarios::{run_spec, scenario, RunSpec};

const BUG: &str = "metallb-garp-first-only";

#[test]
fn garp_first_only_is_found_through_router_follows_owner_with_every_fix_on() {
    let sc = scenario("metallb-split-brain").unwrap();
    let fixes = all_fixes("metallb");
    assert!(fixes.contains(&"metallb-garp-while-announced"));
    let s = sweep(sc, 0, 60, &[BUG], &fixes, true);
    assert!(
        s.failures.len() >= 3,
        "the old announcer should fail often: {}",
        replays(&s)
    );
    let fixes: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
    for f in &s.failures {
        let v = f.outcome.violation.as_ref().unwrap();
        assert_eq!(v.invariant, "router-follows-owner", "{}", f.spec.command());
        assert!(
            v.explanation.contains("alone announces") && v.explanation.contains("still sent"),
            "{}",
            v.explanation
        );
        // The same seed with the current announcer and every fix on passes.
        let again = run_spec(RunSpec::from_seed(sc, f.spec.seed, &[], &fixes));
        assert!(
            again.violation.is_none(),
            "seed {} fails without the bug too: {:?}",
            f.spec.seed,
            again.violation
        );
    }
}
