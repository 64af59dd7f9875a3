//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use scenarios::explore::{ExploreConfig, ExploreSummary};
use scenarios::{explore, Scenario};

/// Explores `seeds` seeds from `from` on two threads, keeping going; writes no files.
pub fn sweep(
    sc: &'static Scenario,
    from: u64,
    seeds: u64,
    bugs: &[&str],
    fixes: &[&str],
    keep_going: bool,
) -> ExploreSummary {
    let cfg = ExploreConfig {
        scenario: sc,
        from,
        seeds,
        bugs: bugs.iter().map(|s| s.to_string()).collect(),
        fixes: fixes.iter().map(|s| s.to_string()).collect(),
        jobs: 2,
        keep_going,
        out_dir: None,
        shard: None,
        profile: Default::default(),
    };
    explore(&cfg, |_| {}).expect("valid exploration")
}

/// The replay command lines of every failure, for assertion messages.
pub fn replays(s: &ExploreSummary) -> String {
    s.failures
        .iter()
        .map(|f| {
            format!(
                "\n  {}\n  replay: {}",
                reports::summary(f.spec.scenario.name, f.spec.seed, &f.outcome),
                f.spec.command()
            )
        })
        .collect()
}

/// Every fix switch of `system`.
pub fn all_fixes(system: &str) -> Vec<&'static str> {
    scenarios::builtin()
        .switches()
        .filter(|s| s.system == system && s.kind == scenarios::scenario::SwitchKind::Fix)
        .map(|s| s.name)
        .collect()
}

/// Every Calico fix switch, owned.
pub fn calico_every_fix() -> Vec<String> {
    all_fixes("calico").iter().map(|s| s.to_string()).collect()
}

/// One calico-swarm seed with `fixes` on: its violation, if any, and its kept trace.
pub fn run_calico_swarm(
    seed: u64,
    fixes: &[String],
) -> (Option<sim::Violation>, sim::event::Recording) {
    let sc = scenarios::scenario("calico-swarm").unwrap();
    let mut spec = scenarios::RunSpec::from_seed(sc, seed, &[], fixes);
    spec.keep_trace = true;
    let out = scenarios::run_spec(spec);
    (out.violation, out.records.expect("kept"))
}
