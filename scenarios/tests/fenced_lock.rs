//! The fourth system, `examples/fenced_lock`, through the same library calls its command line
//! makes: written only against the public API, it is found, shrunk and replayed with the bug, and
//! clean without. (CI also runs the example's own command line: `.ci/run`.)

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/fenced_lock/main.rs"]
mod fenced_lock;

use scenarios::explore::{explore, ExploreConfig, ReplayFile};
use scenarios::system::Registry;
use scenarios::{run_spec, shrink};

fn registry() -> &'static Registry {
    Registry::new().with::<fenced_lock::FencedLock>().leak()
}

fn config(reg: &'static Registry, bugs: &[&str]) -> ExploreConfig {
    ExploreConfig {
        scenario: reg.scenario("fenced-lock-pauses").unwrap(),
        from: 0,
        seeds: 2000,
        bugs: bugs.iter().map(|b| b.to_string()).collect(),
        fixes: vec![],
        jobs: 2,
        keep_going: false,
        out_dir: None,
        shard: None,
        profile: Default::default(),
    }
}

#[test]
fn unfenced_writes_are_found_shrunk_and_replayed() {
    let reg = registry();
    let s = explore(&config(reg, &["unfenced"]), |_| {}).unwrap();
    let f = s
        .failures
        .first()
        .expect("a split-brain write within 2,000 seeds");
    let v = f.outcome.violation.as_ref().unwrap();
    assert_eq!(v.invariant, "no-split-brain-write", "{}", v.explanation);
    assert!(v.explanation.contains("two leaders wrote, the older last"));
    let shrunk = shrink::shrink(&f.spec, &f.outcome, 2);
    assert!(shrunk.after_faults <= shrunk.before_faults);
    let file = ReplayFile::new(&shrunk.spec, &shrunk.outcome).unwrap();
    let dir = std::env::temp_dir().join(format!("faultline-fenced-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fenced.json");
    file.write(&path).unwrap();
    let again = run_spec(ReplayFile::load(&path).unwrap().spec(reg).unwrap());
    assert_eq!(again.trace_hash, shrunk.outcome.trace_hash);
    assert_eq!(again.violation, shrunk.outcome.violation);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fenced_writes_are_clean_over_the_same_seeds() {
    let s = explore(&config(registry(), &[]), |_| {}).unwrap();
    assert_eq!(s.seeds_run, 2000);
    assert!(
        s.failures.is_empty(),
        "{:?}",
        s.failures.first().map(|f| &f.outcome.violation)
    );
    assert!(s.coverage.iter().all(|(_, n)| *n > 0), "{:?}", s.coverage);
}
