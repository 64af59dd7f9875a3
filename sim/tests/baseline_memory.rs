//! A baseline run gives back all it allocates: `bench` runs thousands of baseline seeds in one
//! process, and its `peak_rss_mb` must measure the harness, not memory a baseline left behind.
//! (The madsim-network program leaked its endpoints and mailboxes, about 15 KB a run, until it
//! killed its nodes at the end as the harness's world does.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

/// Bytes allocated and not yet freed, by every thread of this test binary.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Live bytes after `runs` more runs of `program`, less those before them.
fn growth(program: fn(u64, usize, u64, u64, u64) -> u64, runs: u64) -> isize {
    // A first run sets up whatever a thread keeps for good (madsim's and std's thread-locals).
    program(0, 3, 20_000, 600, 60);
    let before = LIVE.load(Relaxed);
    for seed in 1..=runs {
        assert_eq!(program(seed, 3, 20_000, 600, 60), 60);
    }
    LIVE.load(Relaxed) - before
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
