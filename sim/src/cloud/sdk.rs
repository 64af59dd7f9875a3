//! The client side of throttling: the AWS SDK's standard retryer, and a caller's own request
//! rate limiter.
//!
//! # The standard retryer
//!
//! aws-sdk-go-v2 v1.30.3 is the version cilium vendors at
//! ed90dd5ea4c754a04a8135c6bb9c8afe29b75811; an EC2 client made with `config.LoadDefaultConfig`
//! gets `retry.NewStandard()` (`service/ec2/api_client.go` `resolveRetryer` l. 300-320). The
//! lines below were read at the nearest stored commits of aws/aws-sdk-go-v2 (docs/citations.md
//! says which and why): `aws/retry/standard.go` at c213f6605dbc3ee1634aeba46f443c879b199481,
//! `aws/retry/jitter_backoff.go` as stored in its current form (the same lines as at
//! 55d15b358798f48ea1fbeae390831bac8755a0ff, where the jitter still added 2^n instead of scaling
//! it). The lines of `aws/retry/middleware.go` and of `service/ec2/api_client.go` are v1.30.3's
//! as first cited and remain unchecked: no stored version of either has v1.30.3's layout.
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
//! The SDK draws its jitter from `crypto/rand`; here from a generator derived from the run's
//! seed and the client's process.
//!
//! # What it retries
//!
//! Read at the same commit of standard.go, and `aws/retry/retryable_error.go` at
//! 4f56f56dc75385ba937f0fee08f9abe6df5c1562. `DefaultRetryables` (standard.go l. 79-92) asks,
//! in order: a cancelled request is not retried (`NoRetryCanceledError`, retryable_error.go
//! l. 60-77); a connection error is (`RetryableConnectionError`, l. 79-156: a reset connection
//! l. 119-120, a refused one l. 122-130, a failed dial l. 132-138, and any error whose
//! `Timeout()` is true l. 145-148); so are the HTTP statuses 500, 502, 503 and 504
//! (`DefaultRetryableHTTPStatusCodes`, standard.go l. 42-49; `RetryableHTTPStatusCode`,
//! retryable_error.go l. 158-179) and the throttle codes. Anything else, EC2's 400 answers
//! among them, is not. The model's errors fall in these classes ([`retry_cause`]):
//!
//! * `RequestLimitExceeded` ([`CloudError::Throttled`]): a throttle code;
//! * a cloud that refuses the request without applying it ([`CloudError::Unavailable`]): EC2's
//!   `Unavailable` (503) or `InternalError` (500), or a refused connection;
//! * no answer ([`CloudError::Timeout`]): the client's transport timed out, maybe after the
//!   cloud applied the request. The SDK retries it as it does any connection error, so the
//!   retry meets the applied state: an unassign of IPs already unassigned gets
//!   `InvalidParameterValue` ([`CloudError::NotAssigned`], a 400, not retried), and an assign by
//!   count assigns as many again (`AssignPrivateIpAddresses` takes no client token), the first
//!   batch left on the interface for the caller's next describe to find.
//!
//! A retry costs [`RETRY_COST`], or [`RETRY_TIMEOUT_COST`] after a timeout: `GetRetryToken`
//! (standard.go l. 242-257) charges `DefaultRetryTimeoutCost` when an `IsErrorTimeout` check
//! says so, and `NewStandard` (l. 169-201) installs `DefaultTimeouts` (l. 94-97),
//! `TimeouterError`, which says so of any error whose `Timeout()` is true.
//!
//! # The caller's rate limiter
//!
//! cilium's EC2 client calls `helpers.APILimiter.Limit` once before each operation, whatever its
//! retries (`pkg/aws/ec2/ec2.go` `NewClient` l. 60-72 @ed90dd5 and each call, e.g.
//! `AssignPrivateIpAddresses` l. 694-705, at ed90dd5): `pkg/api/helpers/rate_limit.go` `Limit`
//! (l. 35-53) reserves a token of a `golang.org/x/time/rate` limiter and sleeps for the
//! reservation's delay. That limiter starts full (`burst` tokens), refills `qps` a second, and a
//! reservation may take it below zero: the caller then waits until its token has accrued, so
//! callers queue in order. The operator's limits are its flags `--limit-ipam-api-qps` (4) and
//! `--limit-ipam-api-burst` (20) (`pkg/defaults/defaults.go` l. 454-458 @ed90dd5).

use super::tokens::Tokens;
use super::CloudError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
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
/// `DefaultRetryTimeoutCost`: what a retry after a timeout takes from the quota.
pub const RETRY_TIMEOUT_COST: u32 = 10;
/// `DefaultNoRetryIncrement`: what a successful attempt gives the quota.
pub const NO_RETRY_INCREMENT: u32 = 1;

/// What a retry after an error of `cause` takes from the quota: a timeout (an error whose
/// `Timeout()` is true, `DefaultTimeouts`) costs more.
pub fn retry_cost(cause: RetryCause) -> u32 {
    match cause {
        RetryCause::NoAnswer => RETRY_TIMEOUT_COST,
        RetryCause::Throttled | RetryCause::Unavailable => RETRY_COST,
    }
}

/// Why the SDK retries an attempt: the class of `DefaultRetryables` its error falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryCause {
    /// A throttle error code (`RequestLimitExceeded`).
    Throttled,
    /// A 5xx answer (`Unavailable`, `InternalError`) or a refused connection: not applied.
    Unavailable,
    /// No answer: a transport timeout or a reset connection; the cloud may have applied it.
    NoAnswer,
}

/// The class under which the standard retryer retries `e`, or `None` if it does not.
pub fn retry_cause(e: &CloudError) -> Option<RetryCause> {
    match e {
        CloudError::Throttled => Some(RetryCause::Throttled),
        CloudError::Unavailable => Some(RetryCause::Unavailable),
        CloudError::Timeout => Some(RetryCause::NoAnswer),
        CloudError::SubnetFull { .. }
        | CloudError::InterfaceFull
        | CloudError::NotAssigned { .. }
        | CloudError::Invalid(_)
        | CloudError::Fenced { .. } => None,
    }
}

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
    pub fn retry_after(&mut self, attempt: u32, cause: RetryCause) -> Option<Duration> {
        let cost = retry_cost(cause);
        if attempt >= MAX_ATTEMPTS || self.quota < cost {
            return None;
        }
        self.quota -= cost;
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

    /// A successful attempt: `NoRetryIncrement`, and, if it was a retry, the cost its retry
    /// token took (`after`: the cause of the failure it retried).
    pub fn succeeded(&mut self, after: Option<RetryCause>) {
        let back = NO_RETRY_INCREMENT + after.map_or(0, retry_cost);
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
        let first = r
            .retry_after(1, RetryCause::Throttled)
            .expect("a second attempt");
        let second = r
            .retry_after(2, RetryCause::Throttled)
            .expect("a third attempt");
        assert!(first < Duration::from_secs(2) && second < Duration::from_secs(4));
        assert_eq!(
            r.retry_after(3, RetryCause::Throttled),
            None,
            "no fourth attempt"
        );
        assert_eq!(r.quota(), RETRY_QUOTA - 2 * RETRY_COST);
    }

    #[test]
    fn sdk_retry_quota_runs_out_and_successes_refill_it() {
        let mut r = Retryer::new(ChaCha8Rng::seed_from_u64(2));
        for _ in 0..RETRY_QUOTA / RETRY_COST {
            assert!(r.retry_after(1, RetryCause::Unavailable).is_some());
        }
        assert_eq!(
            r.retry_after(1, RetryCause::Unavailable),
            None,
            "quota spent"
        );
        r.succeeded(Some(RetryCause::Unavailable));
        assert_eq!(r.quota(), RETRY_COST + NO_RETRY_INCREMENT);
        assert!(r.retry_after(1, RetryCause::Throttled).is_some());
        assert_eq!(
            r.retry_after(1, RetryCause::NoAnswer),
            None,
            "a timeout's retry costs more than is left"
        );
    }

    #[test]
    fn sdk_a_timeout_retry_costs_the_timeout_cost_and_gets_it_back_on_success() {
        let mut r = Retryer::new(ChaCha8Rng::seed_from_u64(4));
        r.retry_after(1, RetryCause::NoAnswer).expect("a retry");
        assert_eq!(r.quota(), RETRY_QUOTA - RETRY_TIMEOUT_COST);
        r.succeeded(Some(RetryCause::NoAnswer));
        assert_eq!(
            r.quota(),
            RETRY_QUOTA,
            "its cost back, the increment capped"
        );
    }

    #[test]
    fn sdk_retries_throttles_server_errors_and_lost_answers_but_no_client_error() {
        use RetryCause::*;
        let ip = crate::short::Short::new("10.0.0.4").expect("fits");
        let eni = super::super::eni_name(0);
        let cases = [
            (CloudError::Throttled, Some(Throttled)),
            (CloudError::Unavailable, Some(Unavailable)),
            (CloudError::Timeout, Some(NoAnswer)),
            (CloudError::NotAssigned { ip, eni }, None),
            (CloudError::InterfaceFull, None),
            (CloudError::SubnetFull { free: 0, wanted: 1 }, None),
            (CloudError::Invalid("no instance".into()), None),
        ];
        for (e, want) in cases {
            assert_eq!(retry_cause(&e), want, "{e:?}");
        }
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
