//! The client side of throttling: the AWS SDK's standard retryer, and a caller's own request
//! rate limiter.
//!
//! # The standard retryer
//!
//! aws-sdk-go-v2 v1.30.3 (the version cilium vendors at ed90dd5ea4c754a04a8135c6bb9c8afe29b75811;
//! an EC2 client made with `config.LoadDefaultConfig` gets `retry.NewStandard()`,
//! `service/ec2/api_client.go` `resolveRetryer` l. 300-320):
//!
//! * at most `DefaultMaxAttempts` = 3 attempts (`aws/retry/standard.go` l. 27-28; standard.go
//!   read at c213f6605dbc3ee1634aeba46f443c879b199481, see docs/citations.md);
//! * `RequestLimitExceeded` is a throttle error code, so retryable (`DefaultThrottleErrorCodes`,
//!   l. 58-75; `DefaultRetryables` l. 79-92);
//! * before each retry a retry-quota token is taken (`GetRetryToken`, l. 242-257): the quota
//!   holds `DefaultRetryRateTokens` = 500, a retry costs `DefaultRetryCost` = 5 (10 after a
//!   timeout), an attempt that succeeds adds `DefaultNoRetryIncrement` = 1, and a retry that
//!   succeeds gives its cost back (l. 34-40, 220-269). With the quota spent, the call fails at
//!   once (`aws/retry/middleware.go` `handleAttempt` l. 229-233);
//! * the delay before retry `n` (1-based, the attempt that failed) is uniform in
//!   [0, 2^n) s, or `DefaultMaxBackoff` = 20 s once `n` > log2(20) (`ExponentialJitterBackoff`,
//!   `aws/retry/jitter_backoff.go` `NewExponentialJitterBackoff` and `BackoffDelay` l. 21-49,
//!   read at 55d15b358798f48ea1fbeae390831bac8755a0ff; `handleAttempt` l. 240-251). With 3 attempts the
//!   cap is never reached: the two delays are below 2 s and 4 s.
//!
//! The SDK retries connection errors, 5xx answers and timeouts the same way; the model retries
//! only throttling so far (an unavailable or silent cloud fails the call at its first attempt).
//! The SDK draws its jitter from `crypto/rand`; here from a generator derived from the run's
//! seed and the client's process.
//!
//! # The caller's rate limiter
//!
//! cilium's EC2 client calls `helpers.APILimiter.Limit` once before each operation, whatever its
//! retries (`pkg/aws/ec2/ec2.go` `NewClient` l. 60-72 and each call, e.g.
//! `AssignPrivateIpAddresses` l. 694-705, at ed90dd5): `pkg/api/helpers/rate_limit.go` `Limit`
//! (l. 35-53) reserves a token of a `golang.org/x/time/rate` limiter and sleeps for the
//! reservation's delay. That limiter starts full (`burst` tokens), refills `qps` a second, and a
//! reservation may take it below zero: the caller then waits until its token has accrued, so
//! callers queue in order. The operator's limits are its flags `--limit-ipam-api-qps` (4) and
//! `--limit-ipam-api-burst` (20) (`pkg/defaults/defaults.go` l. 454-458).

use super::tokens::Tokens;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// `DefaultMaxAttempts`.
pub const MAX_ATTEMPTS: u32 = 3;
/// `DefaultMaxBackoff`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// The longest an operation's retries wait in all: the ceilings of the delays before attempts
/// 2 to [`MAX_ATTEMPTS`] (2 s and 4 s).
pub const LONGEST_BACKOFFS: Duration = Duration::from_secs((1 << MAX_ATTEMPTS) - 2);
/// `DefaultRetryRateTokens`: the retry quota.
pub const RETRY_QUOTA: u32 = 500;
/// `DefaultRetryCost`: what a retry after a non-timeout error takes from the quota.
pub const RETRY_COST: u32 = 5;
/// `DefaultNoRetryIncrement`: what a successful attempt gives the quota.
pub const NO_RETRY_INCREMENT: u32 = 1;

/// The standard retryer's state: the retry quota and the jitter's generator.
pub struct Retryer {
    quota: u32,
    rng: ChaCha8Rng,
}

impl Retryer {
    /// A full quota, with jitter drawn from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Retryer {
        Retryer {
            quota: RETRY_QUOTA,
            rng,
        }
    }

    /// The tokens left in the retry quota.
    pub fn quota(&self) -> u32 {
        self.quota
    }

    /// After a retryable failure of attempt `attempt` (1-based): the delay before the next
    /// attempt, with its quota token taken; `None` if the attempts or the quota are spent.
    pub fn retry_after(&mut self, attempt: u32) -> Option<Duration> {
        if attempt >= MAX_ATTEMPTS || self.quota < RETRY_COST {
            return None;
        }
        self.quota -= RETRY_COST;
        Some(self.backoff(attempt))
    }

    /// `ExponentialJitterBackoff.BackoffDelay`.
    fn backoff(&mut self, attempt: u32) -> Duration {
        let max_attempts = (MAX_BACKOFF.as_secs_f64()).log2() as u32;
        if attempt > max_attempts {
            return MAX_BACKOFF;
        }
        let b: f64 = self.rng.random();
        let ceiling_us = (1u64 << attempt) * 1_000_000;
        Duration::from_micros((b * ceiling_us as f64) as u64)
    }

    /// A successful attempt: `NoRetryIncrement`, and the retry's cost back if it was one.
    pub fn succeeded(&mut self, retried: bool) {
        let back = NO_RETRY_INCREMENT + if retried { RETRY_COST } else { 0 };
        self.quota = (self.quota + back).min(RETRY_QUOTA);
    }
}

/// A caller's limits: requests a second (in thousandths) and burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests per second, in thousandths (`--limit-ipam-api-qps` 4.0 is 4000).
    pub milli_qps: u64,
    /// Most tokens the limiter holds (`--limit-ipam-api-burst`).
    pub burst: u64,
}

/// A `golang.org/x/time/rate` limiter, as `Reserve` uses it.
pub struct Limiter {
    limit: RateLimit,
    /// Below zero while reservations wait (on the caller's monotonic µs).
    tokens: Tokens,
}

impl Limiter {
    /// A full limiter.
    pub fn new(limit: RateLimit) -> Limiter {
        Limiter {
            limit,
            tokens: Tokens::full(limit.burst),
        }
    }

    /// `Reserve` at `now_us`: takes a token, and returns how long the caller waits for it.
    pub fn reserve(&mut self, now_us: u64) -> Duration {
        self.tokens.refill(now_us, self.limit.milli_qps);
        let owed = self.tokens.take_owing();
        if owed == 0 || self.limit.milli_qps == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(owed * 1_000 / self.limit.milli_qps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn sdk_standard_retryer_gives_up_after_three_attempts() {
        let mut r = Retryer::new(ChaCha8Rng::seed_from_u64(1));
        let first = r.retry_after(1).expect("a second attempt");
        let second = r.retry_after(2).expect("a third attempt");
        assert!(first < Duration::from_secs(2) && second < Duration::from_secs(4));
        assert_eq!(r.retry_after(3), None, "no fourth attempt");
        assert_eq!(r.quota(), RETRY_QUOTA - 2 * RETRY_COST);
    }

    #[test]
    fn sdk_retry_quota_runs_out_and_successes_refill_it() {
        let mut r = Retryer::new(ChaCha8Rng::seed_from_u64(2));
        for _ in 0..RETRY_QUOTA / RETRY_COST {
            assert!(r.retry_after(1).is_some());
        }
        assert_eq!(r.retry_after(1), None, "quota spent");
        r.succeeded(true);
        assert_eq!(r.quota(), RETRY_COST + NO_RETRY_INCREMENT);
        assert!(r.retry_after(1).is_some());
    }

    #[test]
    fn sdk_jitter_backoff_is_capped_at_the_max_backoff() {
        let mut r = Retryer::new(ChaCha8Rng::seed_from_u64(3));
        assert_eq!(r.backoff(5), MAX_BACKOFF);
        for attempt in 1..=4 {
            assert!(r.backoff(attempt) < Duration::from_secs(1 << attempt));
        }
    }

    #[test]
    fn cilium_rate_limiter_serves_its_burst_then_queues_callers() {
        let mut l = Limiter::new(RateLimit {
            milli_qps: 4_000,
            burst: 20,
        });
        for _ in 0..20 {
            assert_eq!(l.reserve(0), Duration::ZERO);
        }
        assert_eq!(l.reserve(0), Duration::from_millis(250));
        assert_eq!(l.reserve(0), Duration::from_millis(500), "behind the first");
        // Two seconds on, 8 tokens accrued, 2 of them already reserved.
        for _ in 0..6 {
            assert_eq!(l.reserve(2_000_000), Duration::ZERO);
        }
        assert_eq!(l.reserve(2_000_000), Duration::from_millis(250));
    }
}
