//! The example through the same library calls its command line makes (`scenarios::testing`):
//! with the bug, a split-brain write is found, shrunk and replayed; without it, the same seeds
//! are clean. (CI also runs its command line: `.ci/fenced-lock`.)

use super::FencedLock;
use scenarios::system::Registry;
use scenarios::{testing, ExploreConfig};

fn registry() -> &'static Registry {
    Registry::new().with::<FencedLock>().leak()
}

fn config(reg: &'static Registry) -> ExploreConfig {
    ExploreConfig::new(reg.scenario("fenced-lock-pauses").unwrap())
        .seeds(2000)
        .jobs(2)
}

#[test]
fn unfenced_writes_are_found_shrunk_and_replayed() {
    let reg = registry();
    let shrunk =
        testing::found_shrunk_replayed(reg, &config(reg).bug("unfenced"), "no-split-brain-write");
    let v = shrunk.outcome.violation.unwrap();
    assert!(v.explanation.contains("two leaders wrote, the older last"));
}

#[test]
fn fenced_writes_are_clean_over_the_same_seeds() {
    testing::clean(&config(registry()));
}
