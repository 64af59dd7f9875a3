//! Every active finding's pinned violation is recognised as that finding and no other: no two
//! active findings (of any system) share a signature, so a report names the right one.

use scenarios::findings::all;
use scenarios::{run_spec, scenario, RunSpec};

#[test]
fn every_pinned_violation_matches_only_its_own_finding() {
    let active: Vec<_> = all().filter(|f| f.is_active()).collect();
    for f in &active {
        let sc = scenario(f.scenario).expect("a finding names a scenario");
        let with: Vec<String> = f.shown_with.iter().map(|w| w.to_string()).collect();
        for &seed in f.seeds {
            let v = run_spec(RunSpec::from_seed(sc, seed, &[], &with))
                .violation
                .unwrap_or_else(|| panic!("{} seed {seed} no longer shows {}", sc.name, f.id));
            assert_eq!(
                scenarios::findings::matching(&v),
                vec![f.id],
                "{} seed {seed} (pinned for {}): {}: {}",
                sc.name,
                f.id,
                v.invariant,
                v.explanation
            );
        }
    }
}

#[test]
fn the_39981_clean_up_dropping_a_fresh_release_is_named_as_such() {
    // The finding's pinned seed, run with the newer clean-up only (`cilium-keep-released` off).
    let f = all()
        .find(|f| f.id == "cilium-readd-drops-fresh-release")
        .expect("in the catalog");
    let sc = scenario(f.scenario).expect("built in");
    let fix = ["cilium-readd-released-ip".to_string()];
    let Some(&seed) = f.seeds.first() else {
        // No seed pinned: nothing to run; `an_unpinned_finding_says_where_none_was_found` holds
        // its summary to naming the ranges searched.
        return;
    };
    let v = run_spec(RunSpec::from_seed(sc, seed, &[], &fix))
        .violation
        .unwrap_or_else(|| panic!("seed {seed} fails with the newer clean-up"));
    let named = scenarios::findings::finding_for(sc.name, &v).map(|f| f.id);
    assert_eq!(
        named,
        Some("cilium-readd-drops-fresh-release"),
        "{}",
        v.explanation
    );
}

/// An active finding with no pinned seed is tested by nothing that runs it, so its summary must
/// say so and where seeds were searched ("... so it has none pinned until one is").
#[test]
fn an_unpinned_finding_says_where_none_was_found() {
    for f in all().filter(|f| f.is_active() && f.seeds.is_empty()) {
        assert!(
            f.summary.contains("none pinned until one is") && f.summary.contains(f.scenario),
            "{}: no seed pinned, and its summary does not say which ranges of {} showed none",
            f.id,
            f.scenario
        );
    }
}

#[test]
fn a_violation_is_never_named_as_a_finding_whose_fix_the_run_has_on() {
    // Each finding with a fix: its pinned violation, looked up as if seen in a run with that fix
    // on. The fix removes the finding, so the lookup must not name it.
    let reg = scenarios::builtin();
    for f in all().filter(|f| f.is_active() && f.fix.is_some()) {
        let Some(&seed) = f.seeds.first() else {
            continue;
        };
        let sc = scenario(f.scenario).expect("a finding names a scenario");
        let with: Vec<String> = f.shown_with.iter().map(|w| w.to_string()).collect();
        let Some(v) = run_spec(RunSpec::from_seed(sc, seed, &[], &with)).violation else {
            continue; // a stale pin is the first test's failure, not this one's
        };
        let mut fixed = with.clone();
        fixed.push(f.fix.unwrap().to_string());
        let spec = RunSpec::from_seed(sc, seed, &[], &fixed);
        assert_eq!(
            reg.finding_in(&RunSpec::from_seed(sc, seed, &[], &with), &v)
                .map(|x| x.id),
            Some(f.id)
        );
        assert_ne!(
            reg.finding_in(&spec, &v).map(|x| x.id),
            Some(f.id),
            "{}",
            f.id
        );
    }
}

/// A stopped agent-status watcher that goes on through its snapshot after a long RabbitMQ outage
/// can break `master-only-work-legitimate` before `master-only-work-stops`. With a backward clock
/// step on its host among the faults, it once looked like a stale stamp kept fresh by the step
/// (`calico-wall-clock-stamp`). calico-swarm seed 6827 is such a run: it must be named the
/// stopped watcher's, fail the same way with the monotonic stamp, and pass once a stopped watcher
/// checks before each snapshot key.
#[test]
fn a_stopped_watcher_past_the_legitimate_bound_is_not_taken_for_a_clock_step() {
    let sc = scenario("calico-swarm").expect("built in");
    let run = |fixes: &[&str]| {
        let fixes: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
        run_spec(RunSpec::from_seed(sc, 6827, &[], &fixes)).violation
    };
    for fixes in [&[][..], &["calico-monotonic-stamp"][..]] {
        let v = run(fixes).unwrap_or_else(|| panic!("seed 6827 with {fixes:?} passes"));
        assert_eq!(
            v.invariant, "master-only-work-legitimate",
            "{}",
            v.explanation
        );
        assert!(v.explanation.contains("clock step -"), "{}", v.explanation);
        assert_eq!(
            scenarios::findings::matching(&v),
            vec!["calico-stopped-watcher-snapshot"],
            "{fixes:?}: {}",
            v.explanation
        );
    }
    assert!(run(&["calico-snapshot-checks-stopped"]).is_none());
}

/// No violation in a range of drawn seeds matches two active findings, and none matches no
/// finding (other than one whose fix the run has on): every scenario with no switch, and each
/// finding's scenario with its `shown_with` switches, seeds 0-1,999. (The pinned and replay tests check chosen runs; this reads runs
/// nobody chose.) Takes minutes: `cargo test --release -p scenarios --test finding_signatures
/// -- --ignored`.
#[test]
#[ignore]
fn drawn_violations_match_exactly_one_finding() {
    let mut runs: Vec<(&str, Vec<String>)> = scenarios::builtin()
        .scenarios()
        .iter()
        .map(|sc| (sc.name, Vec::new()))
        .collect();
    for f in all().filter(|f| f.is_active() && !f.shown_with.is_empty()) {
        let with: Vec<String> = f.shown_with.iter().map(|w| w.to_string()).collect();
        if !runs.contains(&(f.scenario, with.clone())) {
            runs.push((f.scenario, with));
        }
    }
    let mut wrong = Vec::new();
    for (name, fixes) in &runs {
        let sc = scenario(name).expect("built in");
        for seed in 0..2000 {
            let Some(v) = run_spec(RunSpec::from_seed(sc, seed, &[], fixes)).violation else {
                continue;
            };
            // A finding whose fix the run has on cannot be what it shows.
            let fixed = |id: &&str| {
                all().any(|f| f.id == *id && f.fix.is_some_and(|x| fixes.iter().any(|w| w == x)))
            };
            let m: Vec<_> = scenarios::findings::matching(&v)
                .into_iter()
                .filter(|id| !fixed(id))
                .collect();
            if m.len() != 1 {
                wrong.push(format!(
                    "{name} {seed} {fixes:?}: {} matches {m:?}",
                    v.invariant
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
