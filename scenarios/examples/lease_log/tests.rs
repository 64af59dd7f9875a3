//! The example through the library calls its command line makes (`scenarios::testing`): with
//! the bug, a stale leader's append is found, shrunk and replayed; without it, the same seeds are
//! clean, and the fence was seen refusing. (CI also runs its command line: `.ci/lease-log`.)

use super::LeaseLog;
use scenarios::system::Registry;
use scenarios::{testing, ExploreConfig};

fn registry() -> &'static Registry {
    Registry::new().with::<LeaseLog>().leak()
}

fn config(reg: &'static Registry) -> ExploreConfig {
    ExploreConfig::new(reg.scenario("lease-log-pauses").unwrap())
        .seeds(1000)
        .jobs(2)
}

#[test]
fn unfenced_appends_are_found_shrunk_and_replayed() {
    let reg = registry();
    let cfg = config(reg).bug("unfenced");
    let shrunk = testing::found_shrunk_replayed(reg, &cfg, "no-stale-leader-write");
    let v = shrunk.outcome.violation.unwrap();
    assert!(
        v.explanation.contains("two leaders wrote, the older last"),
        "{}",
        v.explanation
    );
    // The story needs one fault: a leader paused or cut off past its lease.
    assert_eq!(shrunk.spec.schedule.len(), 1, "{:?}", shrunk.spec.schedule);
}

#[test]
fn fenced_appends_are_clean_over_the_same_seeds() {
    testing::clean(&config(registry()));
}
