//! A baseline run gives back all it allocates: `bench` runs thousands of baseline seeds in one
//! process, and its `peak_rss_mb` must measure the harness, not memory a baseline left behind.
//! (The madsim-network program leaked its endpoints and mailboxes, about 15 KB a run, until it
//! killed its nodes at the end as the harness's world does.)

use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes still allocated after `runs` more runs of `program` (all threads of this test binary).
fn growth(program: fn(u64, usize, u64, u64, u64) -> u64, runs: u64) -> isize {
    // A first run sets up whatever a thread keeps for good (madsim's and std's thread-locals).
    program(0, 3, 20_000, 600, 60);
    let region = Region::new(GLOBAL);
    for seed in 1..=runs {
        assert_eq!(program(seed, 3, 20_000, 600, 60), 60);
    }
    let c = region.change();
    c.bytes_allocated as isize - c.bytes_deallocated as isize
}

#[test]
fn baseline_runs_leave_nothing_behind() {
    // 40 leaking runs would hold hundreds of kilobytes; allow a little allocator slack.
    let mem = growth(sim::runtime::baseline, 40);
    let net = growth(sim::runtime::baseline_net, 40);
    assert!(
        mem < 16 * 1024,
        "the in-memory baseline kept {mem} bytes over 40 runs"
    );
    assert!(
        net < 16 * 1024,
        "the network baseline kept {net} bytes over 40 runs"
    );
}
