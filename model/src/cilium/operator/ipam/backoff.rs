//! The pool maintainer's backoff after a failed pass: cilium's `pkg/backoff` (`backoff.go` at
//! ed90dd5ea4c754a04a8135c6bb9c8afe29b75811), as `Upsert` configures it for each node
//! (`pkg/ipam/node_manager.go:312-318`: `Max` 5 min, `Jitter`, `NodeManager` the node manager
//! itself, `ResetAfter` 10 min; `Min` and `Factor` unset, so 1 s and 2). The maintainer's trigger
//! function calls `Wait` after every pass that returned an error (l. 323-327), so the wait holds
//! the trigger: requests during it fold into the run after it.
//!
//! * `Exponential.Wait` (backoff.go:144-170): when `ResetAfter` is set and above `Max`, and more
//!   than `ResetAfter` has passed since the last wait began (`time.Since`, the monotonic clock),
//!   the attempt count goes back to 0; then the wait's start is stamped, the attempt counted, and
//!   the wait lasts `Duration(attempt)`. Nothing else resets the count: a successful pass does not
//!   call `Wait`, so failures ten minutes apart or less keep growing it.
//! * `Duration` (l. 173-199): `CalculateDuration(Min, Max, Factor, Jitter, attempt)`, then scaled
//!   by the `NodeManager`'s `ClusterSizeDependantInterval`, then capped at `Max` again.
//! * `CalculateDuration` (l. 87-101): `Min * Factor^attempt` (so the first wait is up to 2 s),
//!   capped at `Max`, and with jitter drawn uniformly from `[Min, that)`
//!   (`rand.Float64()*(t-min)+min`), truncated to nanoseconds.
//! * `ClusterSizeDependantInterval` (l. 127-136, and `NodeManager.ClusterSizeDependantInterval`,
//!   pkg/ipam/node_manager.go:180-186): the duration times `ln(1 + nodes)`, `nodes` the node
//!   manager's nodes when the wait is computed; with no node, the duration unchanged.
//!
//! Upstream draws the jitter from Go's global generator (`math/rand/v2`, seeded by the runtime);
//! the model draws it from a generator of the operator process and the node (`Proc::rng`), so a
//! run stays reproducible and no other draw moves. `ln(1 + n)` is Rust's `f64::ln_1p` where Go
//! has `math.Log1p`: both are correctly rounded to within an ulp, so a scaled wait may differ
//! from Go's by a nanosecond.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// `Exponential`'s default `Min` when unset: 1 s.
const DEFAULT_MIN: Duration = Duration::from_secs(1);
/// `Exponential`'s default `Factor` when unset: 2.
const DEFAULT_FACTOR: f64 = 2.0;

/// The pool maintainer's `Max` (node_manager.go:313).
pub const POOL_MAINTAINER_MAX: Duration = Duration::from_secs(5 * 60);
/// The pool maintainer's `ResetAfter` (node_manager.go:317).
pub const POOL_MAINTAINER_RESET_AFTER: Duration = Duration::from_secs(10 * 60);

/// `backoff.Exponential` with its state (`attempt`, `lastBackoffStart`) and the generator its
/// jitter is drawn from. A zero `min`, `max`, `factor` or `reset_after` means unset, as upstream.
pub(crate) struct Exponential {
    min: Duration,
    max: Duration,
    factor: f64,
    jitter: bool,
    /// Whether the wait is scaled by the cluster's size (the `NodeManager` field is set).
    cluster_sized: bool,
    reset_after: Duration,
    /// `lastBackoffStart` on the monotonic clock (µs); `None` before the first wait.
    last_start_us: Option<u64>,
    attempt: u32,
    rng: ChaCha8Rng,
}

impl Exponential {
    /// The pool maintainer's backoff of one node (node_manager.go:312-318), its jitter drawn
    /// from `rng`.
    pub(crate) fn pool_maintainer(rng: ChaCha8Rng) -> Exponential {
        Exponential {
            min: Duration::ZERO,
            max: POOL_MAINTAINER_MAX,
            factor: 0.0,
            jitter: true,
            cluster_sized: true,
            reset_after: POOL_MAINTAINER_RESET_AFTER,
            last_start_us: None,
            attempt: 0,
            rng,
        }
    }

    /// `Wait` without the sleep: at monotonic time `now_us`, with `nodes` nodes in the node
    /// manager, how long to wait.
    pub(crate) fn wait(&mut self, now_us: u64, nodes: usize) -> Duration {
        let reset = self.reset_after;
        if !reset.is_zero() && reset > self.max {
            if let Some(last) = self.last_start_us {
                if now_us.saturating_sub(last) > reset.as_micros() as u64 {
                    self.attempt = 0; // Reset
                }
            }
        }
        self.last_start_us = Some(now_us);
        self.attempt += 1;
        self.duration(self.attempt, nodes)
    }

    /// `Duration(attempt)`, with `nodes` nodes in the node manager.
    pub(crate) fn duration(&mut self, attempt: u32, nodes: usize) -> Duration {
        let min = match self.min.is_zero() {
            true => DEFAULT_MIN,
            false => self.min,
        };
        let factor = match self.factor == 0.0 {
            true => DEFAULT_FACTOR,
            false => self.factor,
        };
        let draw = self.jitter.then(|| self.rng.random::<f64>());
        let mut t = calculate_duration(min, self.max, factor, draw, attempt);
        if self.cluster_sized {
            t = cluster_size_dependant_interval(t, nodes);
        }
        if !self.max.is_zero() && t > self.max {
            t = self.max;
        }
        t
    }
}

/// `CalculateDuration(min, max, factor, jitter, failures)`, the jitter given as the draw from
/// `[0, 1)` it uses (`None`: no jitter).
pub(crate) fn calculate_duration(
    min: Duration,
    max: Duration,
    factor: f64,
    jitter: Option<f64>,
    failures: u32,
) -> Duration {
    let min_ns = min.as_nanos() as f64;
    let max_ns = max.as_nanos() as f64;
    let exp = i32::try_from(failures).unwrap_or(i32::MAX);
    let mut t = min_ns * factor.powi(exp);
    if !max.is_zero() && t > max_ns {
        t = max_ns;
    }
    if let Some(r) = jitter {
        t = r * (t - min_ns) + min_ns;
    }
    // Go's `time.Duration(t)` truncates toward zero (a float above the range saturates here).
    Duration::from_nanos(t as u64)
}

/// `ClusterSizeDependantInterval(base, nodes)`: `base * ln(1 + nodes)`, or `base` with no node.
pub(crate) fn cluster_size_dependant_interval(base: Duration, nodes: usize) -> Duration {
    if nodes == 0 {
        return base;
    }
    let ns = base.as_nanos() as f64 * (nodes as f64).ln_1p();
    Duration::from_nanos(ns as u64)
}

/// Upstream's tests of the backoff (`pkg/backoff/backoff_test.go` at ed90dd5), and the table in
/// `ClusterSizeDependantInterval`'s doc comment.
#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    /// `TestJitter` (l. 15-22): a hundred jittered first durations (min 1 s, max 1 min), each
    /// different from the one before.
    #[test]
    fn upstream_cilium_backoff_jitter() {
        let mut r = rng();
        let mut prev = Duration::ZERO;
        for _ in 0..100 {
            let d = calculate_duration(
                Duration::from_secs(1),
                Duration::from_secs(60),
                2.0,
                Some(r.random()),
                1,
            );
            assert_ne!(d, prev);
            assert!(
                (Duration::from_secs(1)..Duration::from_secs(2)).contains(&d),
                "{d:?}"
            );
            prev = d;
        }
        // Without jitter every first duration is the same: min * 2.
        let plain = calculate_duration(Duration::from_secs(1), Duration::ZERO, 2.0, None, 1);
        assert_eq!(plain, Duration::from_secs(2));
    }

    /// `TestNewNodeManager` (l. 39-45) checks the wrapper around a scaling function; the one the
    /// node manager uses is `ClusterSizeDependantInterval`, whose doc comment tabulates it for a
    /// 1-minute base (backoff.go:108-127). Go's values, to the nanosecond.
    #[test]
    fn upstream_cilium_backoff_cluster_size_dependant_interval() {
        let table: [(usize, u64); 15] = [
            (1, 41_588_830_833),
            (2, 65_916_737_320),
            (4, 96_566_274_746),
            (8, 131_833_474_640),
            (16, 169_992_800_643),
            (32, 209_790_453_687),
            (64, 250_463_236_193),
            (128, 291_588_744_261),
            (256, 332_944_565_093),
            (512, 374_416_550_710),
            (1024, 415_946_873_494),
            (2048, 457_506_428_894),
            (4096, 499_080_616_652),
            (8192, 540_662_124_608),
            (16384, 582_247_293_667),
        ];
        for (nodes, ns) in table {
            let got = cluster_size_dependant_interval(Duration::from_secs(60), nodes);
            let diff = got.as_nanos().abs_diff(u128::from(ns));
            assert!(diff <= 1, "{nodes} nodes: {got:?}, Go has {ns} ns");
        }
        // No node: the base unchanged (no work is being done).
        assert_eq!(
            cluster_size_dependant_interval(Duration::from_secs(60), 0),
            Duration::from_secs(60)
        );
    }

    /// `TestClusterSizeDependantInterval` (l. 47-72): min 1 s, max 2 min, factor 2, jitter,
    /// scaled by the cluster's size; attempts 1-8 for 4 to 2048 nodes. Upstream prints the table;
    /// here each value is checked against its bounds: `[min, min * 2^attempt]` (capped) scaled by
    /// `ln(1 + nodes)`, then capped at the max.
    #[test]
    fn upstream_cilium_backoff_cluster_size_dependant_backoff() {
        let max = Duration::from_secs(120);
        let mut b = Exponential {
            min: Duration::from_secs(1),
            max,
            factor: 2.0,
            jitter: true,
            cluster_sized: true,
            reset_after: Duration::ZERO,
            last_start_us: None,
            attempt: 0,
            rng: rng(),
        };
        for attempt in 1..=8u32 {
            for nodes in [4usize, 16, 128, 512, 1024, 2048] {
                let scale = (nodes as f64).ln_1p();
                let top = (2f64.powi(attempt as i32)).min(120.0) * scale;
                let d = b.duration(attempt, nodes).as_secs_f64();
                assert!(d >= (scale).min(120.0) - 1e-6, "{attempt}/{nodes}: {d}");
                assert!(d <= top.min(120.0) + 1e-6, "{attempt}/{nodes}: {d}");
            }
        }
        // 2048 nodes scale even the shortest wait (1 s * ln 2049 = 7.6 s) past 2 s, and attempt
        // 8 past the max.
        assert!(b.duration(1, 2048) > Duration::from_secs(7));
        assert_eq!(b.duration(8, 2048), max);
    }

    /// `TestJitterDistribution` (l. 74-84): min 1 s, factor 2, no jitter, no max: attempt k waits
    /// `2^k` s (upstream prints them).
    #[test]
    fn upstream_cilium_backoff_jitter_distribution() {
        let mut b = Exponential {
            min: Duration::from_secs(1),
            max: Duration::ZERO,
            factor: 2.0,
            jitter: false,
            cluster_sized: false,
            reset_after: Duration::ZERO,
            last_start_us: None,
            attempt: 0,
            rng: rng(),
        };
        for attempt in 1..=8u32 {
            assert_eq!(b.duration(attempt, 0), Duration::from_secs(1 << attempt));
        }
    }

    /// `Wait` as the pool maintainer uses it: the count grows with every wait, is not reset by
    /// anything but ten quiet minutes since the last wait began, and the wait is capped at 5 min.
    #[test]
    fn pool_maintainer_backoff_grows_caps_and_resets_after_ten_quiet_minutes() {
        let mut b = Exponential::pool_maintainer(rng());
        let nodes = 3;
        let scale = (nodes as f64).ln_1p();
        let s = 1_000_000u64;
        let mut now = 0u64;
        for attempt in 1..=12u32 {
            let d = b.wait(now, nodes).as_secs_f64();
            let top = (2f64.powi(attempt as i32).min(300.0) * scale).min(300.0);
            assert!(
                d >= scale - 1e-6 && d <= top + 1e-6,
                "attempt {attempt}: {d}"
            );
            // The next failure comes a minute after this wait began: no reset.
            now += 60 * s;
        }
        assert_eq!(b.attempt, 12);
        // Exactly ten minutes after the last wait began is not more than ten: no reset.
        now += 540 * s;
        b.wait(now, nodes);
        assert_eq!(b.attempt, 13);
        // Just over ten minutes later: reset, so this is attempt 1 again (at most 2 s scaled).
        now += 600 * s + 1;
        let d = b.wait(now, nodes).as_secs_f64();
        assert_eq!(b.attempt, 1);
        assert!(d <= 2.0 * scale + 1e-6, "{d}");
        // A late attempt with a large cluster is capped at the max.
        assert_eq!(b.duration(20, 100), POOL_MAINTAINER_MAX);
    }
}
