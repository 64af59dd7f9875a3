//! How long a deposed cilium-operator's graceful shutdown lasts, drawn per seed from what
//! upstream runs during it (`model::cilium::operator::shutdown`).
//!
//! * A normal stop: every stop hook cancels contexts and waits for goroutines, each expected
//!   under cilium's 100 ms `LogThreshold` (`pkg/hive/hive.go:78` at ed90dd5ea4c7): the process
//!   exits within [`NORMAL_STOP_MAX_MS`], and `legacy.onStop` (which stops the CiliumNode
//!   informer) falls anywhere in it.
//! * A blocking stop hook (PR #42920 names the case): the stop lasts until the hive's stop
//!   context expires after one minute (`StopTimeout`, `pkg/hive/hive.go:77`), plus up to the
//!   5 s before the hive panics when the hook ignores its context (`fatalOnTimeout`). If the
//!   hook comes before `legacy.onStop` in the stop order, the informer runs until the exit
//!   (the lifecycle gives up on the hooks after it, `cell/lifecycle.go:133-136`); if after, it
//!   stops within the normal time.
//!
//! How often a hook blocks is not known: the adversarial profile gives one seed in
//! [`BLOCKED_ONE_IN_ADVERSARIAL`] a blocking hook to explore it, the realistic profile one in
//! [`BLOCKED_ONE_IN_REALISTIC`].

use model::cilium::operator::shutdown::{HIVE_FATAL_GRACE, HIVE_STOP_TIMEOUT};
use rand::Rng;

/// The longest normal stop (ms): about ten hooks on either side of `legacy.onStop`, each under
/// the 100 ms `LogThreshold`.
pub const NORMAL_STOP_MAX_MS: u64 = 1_000;
/// One seed in this many has a blocking stop hook (adversarial profile).
pub const BLOCKED_ONE_IN_ADVERSARIAL: u32 = 4;
/// One seed in this many has a blocking stop hook (realistic profile).
pub const BLOCKED_ONE_IN_REALISTIC: u32 = 20;

/// `(informer_stop_ms, exit_ms)` after the Lease is lost, for `seed`, given the normal stop's
/// length `normal_ms` (drawn in the world's own stream, at most [`NORMAL_STOP_MAX_MS`]).
pub fn draw(seed: u64, realistic: bool, normal_ms: u64) -> (u64, u64) {
    let mut rng = sim::rng::rng_for(seed, "cilium-shutdown");
    let informer_stop = rng.random_range(0..=normal_ms);
    let one_in = match realistic {
        true => BLOCKED_ONE_IN_REALISTIC,
        false => BLOCKED_ONE_IN_ADVERSARIAL,
    };
    if rng.random_range(0..one_in) != 0 {
        return (informer_stop, normal_ms);
    }
    let timeout = HIVE_STOP_TIMEOUT.as_millis() as u64;
    let exit = timeout + rng.random_range(0..=HIVE_FATAL_GRACE.as_millis() as u64);
    match rng.random_bool(0.5) {
        true => (exit, exit), // blocked before legacy.onStop: the informer never stops
        false => (informer_stop, exit),
    }
}
