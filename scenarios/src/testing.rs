//! Test helpers for a system's own tests: the checks `explore`, `shrink` and `replay` make on the
//! command line, as library calls that panic with a readable message when the check fails.
//!
//! A user's system proves itself with two tests: with its bug switch, exploration finds the
//! violation, shrinks it and the replay file reproduces it to the same trace hash
//! ([`found_shrunk_replayed`]); without it, the same seeds are clean and every coverage point is
//! reached ([`clean`]). `examples/fenced_lock` and `examples/lease_log` run exactly these from
//! their own `#[cfg(test)]` modules (`cargo test --example fenced_lock`).

use crate::explore::{explore, ExploreConfig, ReplayFile};
use crate::run_spec;
use crate::shrink::{shrink, Shrunk};
use crate::system::Registry;

/// Explores `cfg` (which should switch a bug on), expects a failure whose violation names
/// `invariant`, shrinks it on two threads, writes its replay file to a temporary folder, reads it
/// back through `registry` and replays it: the replay must give the shrunk run's trace hash and
/// violation. Returns the shrunk failure for further checks (its explanation, its faults).
pub fn found_shrunk_replayed(
    registry: &'static Registry,
    cfg: &ExploreConfig,
    invariant: &str,
) -> Shrunk {
    let s = explore(cfg, |_| {}).expect("a valid exploration");
    let f = s.failures.first().unwrap_or_else(|| {
        panic!(
            "{}: no failure in {} seeds from {} with {:?}",
            cfg.scenario.name, cfg.seeds, cfg.from, cfg.bugs
        )
    });
    let v = f
        .outcome
        .violation
        .as_ref()
        .expect("a failure has a violation");
    assert_eq!(
        v.invariant, invariant,
        "seed {}: {}",
        f.spec.seed, v.explanation
    );
    let shrunk = shrink(registry, &f.spec, &f.outcome, 2);
    assert!(shrunk.after_faults <= shrunk.before_faults);
    let file = ReplayFile::new(&shrunk.spec, &shrunk.outcome).expect("a replay file");
    let dir = std::env::temp_dir().join(format!(
        "faultline-test-{}-{}-{}",
        cfg.scenario.name,
        f.spec.seed,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("shrunk.json");
    file.write(&path).expect("the replay file is written");
    let spec = ReplayFile::load(&path)
        .expect("the replay file reads back")
        .spec(registry)
        .expect("the replay file names a known scenario");
    let again = run_spec(spec);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        again.trace_hash, shrunk.outcome.trace_hash,
        "the replay diverged"
    );
    assert_eq!(
        again.violation, shrunk.outcome.violation,
        "the replay's verdict differs"
    );
    shrunk
}

/// Explores `cfg` (keeping going) and expects every seed to pass and every coverage point of the
/// scenario to be reached at least once.
pub fn clean(cfg: &ExploreConfig) {
    let cfg = cfg.clone().keep_going();
    let s = explore(&cfg, |_| {}).expect("a valid exploration");
    assert_eq!(s.seeds_run, cfg.seeds);
    if let Some(f) = s.failures.first() {
        panic!(
            "{} failures; the first: {}\n  replay: {}",
            s.failures.len(),
            reports::summary(f.spec.scenario.name, f.spec.seed, &f.outcome),
            f.spec.command()
        );
    }
    let unreached: Vec<&str> = s
        .coverage
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(c, _)| *c)
        .collect();
    assert!(
        unreached.is_empty(),
        "coverage points never reached: {unreached:?}"
    );
}
