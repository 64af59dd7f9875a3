//! Every active finding says what it needs and how often it shows: its preconditions and realism
//! class (judged in the catalog), its rates (measured, recorded in
//! scenarios/data/finding-rates.json and re-measured exactly here on a sample), and its
//! upstream-ready report in docs/findings/ (generated, and fresh).

use scenarios::faults::Profile;
use scenarios::finding_rates::{failing_seeds, groups, recorded};
use scenarios::finding_report;
use scenarios::{builtin, run_spec};
use std::collections::BTreeMap;

/// Seeds re-run from the start of each recorded range.
const SAMPLE: u64 = 12;
/// Recorded failing seeds re-run per finding.
const FAILING_SAMPLE: usize = 2;

#[test]
fn every_active_finding_has_an_impact_preconditions_and_a_realism_class() {
    for f in builtin().findings().filter(|f| f.is_active()) {
        assert!(!f.impact.is_empty(), "{}: no impact", f.id);
        assert!(!f.preconditions.is_empty(), "{}: no preconditions", f.id);
        assert!(
            f.preconditions.iter().all(|p| !p.trim().is_empty()),
            "{}: an empty precondition",
            f.id
        );
        assert!(f.realism.is_some(), "{}: no realism class", f.id);
    }
}

/// The recorded rates cover every active finding under both profiles, and re-measuring the
/// start of each recorded range, and a few of its recorded failing seeds, gives exactly the
/// recorded failing seeds (determinism makes this exact, not statistical).
#[test]
fn recorded_rates_cover_every_active_finding_and_re_measure_exactly() {
    let reg = builtin();
    for (((scenario, with), findings), profile) in groups(reg)
        .into_iter()
        .flat_map(|g| [Profile::Adversarial, Profile::Realistic].map(|p| (g.clone(), p)))
    {
        let m = recorded()
            .iter()
            .find(|m| m.scenario == scenario && m.with == with && m.profile == profile)
            .unwrap_or_else(|| {
                panic!(
                    "no recorded {} rates for {scenario} with {with:?}: run `just measure-rates`",
                    profile.name()
                )
            });
        for f in &findings {
            assert!(
                m.failing.contains_key(f.id),
                "{}: not in the recorded rates of {scenario}: run `just measure-rates`",
                f.id
            );
        }
        let end = m.first_seed + m.seeds;
        let sub_end = m.first_seed + SAMPLE.min(m.seeds);
        let mut seeds: Vec<u64> = (m.first_seed..sub_end).collect();
        for list in m.failing.values() {
            assert!(list.iter().all(|s| (m.first_seed..end).contains(s)));
            seeds.extend(list.iter().filter(|s| **s >= sub_end).take(FAILING_SAMPLE));
        }
        let now = failing_seeds(
            reg,
            &scenario,
            &with,
            m.profile,
            seeds.iter().copied(),
            &findings,
        )
        .expect("the recorded scenario and profile exist");
        let expected: BTreeMap<String, Vec<u64>> = m
            .failing
            .iter()
            .map(|(id, list)| {
                (
                    id.clone(),
                    list.iter().copied().filter(|s| seeds.contains(s)).collect(),
                )
            })
            .collect();
        let mut now_sorted = now.clone();
        for list in now_sorted.values_mut() {
            list.sort_unstable();
        }
        let mut expected_sorted = expected.clone();
        for list in expected_sorted.values_mut() {
            list.sort_unstable();
        }
        assert_eq!(
            now_sorted, expected_sorted,
            "{scenario} with {with:?} ({}): the re-measured sample differs from the recorded rates \
             (recorded at {}): run `just measure-rates`",
            profile.name(),
            m.commit
        );
    }
}

/// docs/findings/<id>.md is generated from the catalog for every active finding (and only for
/// them); every active finding has a recorded shortest replay, of at most 5 faults, that still
/// shows that finding and no other (no two active findings share its signature).
#[test]
fn finding_reports_are_fresh_and_their_replays_show_the_finding() {
    let reg = builtin();
    let dir = finding_report::folder();
    for f in reg.findings().filter(|f| f.is_active()) {
        let path = dir.join(format!("{}.md", f.id));
        let doc = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} missing: run .ci/regen-docs", path.display()));
        assert_eq!(
            doc,
            finding_report::markdown(reg, f),
            "{} is stale: run .ci/regen-docs",
            path.display()
        );
        let r = finding_report::replay(f)
            .unwrap_or_else(|| panic!("{}: no replay in docs/findings/", f.id));
        assert!(
            r.schedule.len() <= 5,
            "{}: {} faults",
            f.id,
            r.schedule.len()
        );
        let out = run_spec(r.spec(reg).expect("the replay file fits its scenario"));
        let v = out.violation.expect("the shrunk replay still fails");
        assert_eq!(
            scenarios::findings::matching(&v),
            vec![f.id],
            "{}: the shrunk replay shows {}: {}",
            f.id,
            v.invariant,
            v.explanation
        );
    }
    for entry in std::fs::read_dir(&dir).expect("docs/findings/") {
        let name = entry
            .expect("an entry")
            .file_name()
            .into_string()
            .expect("UTF-8");
        let id = name
            .trim_end_matches(".replay.json")
            .trim_end_matches(".md");
        assert!(
            reg.findings().any(|f| f.id == id && f.is_active()),
            "docs/findings/{name} is not an active finding's: remove it"
        );
    }
}
