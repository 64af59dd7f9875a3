//! The elector's configuration and its validation (see the module documentation of `leaderelection`).

use super::*;

// ------------------------------------------------------------------------------------------------
// Configuration

/// client-go's `LeaderElectionConfig` (`leaderelection.go` @cg l. 116-166) with the lock's name
/// and identity (the `Lock`), and the lock client's request timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElectionConfig {
    /// The Lease's name.
    pub lock_name: String,
    /// This candidate's identity (cilium: `hostname + "-" + rand.String(10)`, new at every
    /// start, root.go:408-412 @ed90dd5).
    pub identity: String,
    /// How long a non-leader waits, on its own clock, after it last saw the record change before
    /// it may take over. Written into the record as whole seconds. Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up. Default 10 s.
    pub renew_deadline: Duration,
    /// The wait between tries (jittered by x1-x2.2 while acquiring). Default 2 s.
    pub retry_period: Duration,
    /// Release the lease (empty holder, `leaseDurationSeconds: 1`) when the renew loop ends.
    /// client-go's default is false; cilium-operator sets true (root.go:441 @ed90dd5).
    pub release_on_cancel: bool,
    /// How the release is written.
    pub release_style: ReleaseStyle,
    /// The lock client's per-request timeout; `None`: `max(1 s, renew_deadline / 2)` as
    /// `resourcelock.NewFromKubeconfig` sets it (`interface.go` @cg l. 144-151).
    pub request_timeout: Option<Duration>,
}

/// How `ReleaseOnCancel` writes the empty-holder record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStyle {
    /// client-go @cg (`release`/`tryRelease`, leaderelection.go l. 319-359): within
    /// RenewDeadline, read the Lease; if this elector still holds it, update it, reading again
    /// after a conflict.
    ReadThenUpdate,
    /// client-go v0.30.3 (`release`, leaderelection.go l. 296-314 at tag v0.30.3, with
    /// `LeaseLock.Update`, resourcelock/leaselock.go l. 69-82): if the last observed record names
    /// this elector, one update of the *cached* Lease (its last read or written
    /// `resourceVersion`), under `context.TODO()` (only the client's request timeout); no read, and
    /// no retry: a conflict or an error leaves the Lease to expire.
    UpdateCached,
}

impl LeaderElectionConfig {
    /// The defaults cilium-operator passes (15 s / 10 s / 2 s) with client-go's
    /// `ReleaseOnCancel: false`.
    pub fn new(lock_name: &str, identity: &str) -> Self {
        LeaderElectionConfig {
            lock_name: lock_name.to_string(),
            identity: identity.to_string(),
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
            release_on_cancel: false,
            release_style: ReleaseStyle::ReadThenUpdate,
            request_timeout: None,
        }
    }

    /// cilium-operator's configuration (root.go:437-470 @ed90dd5): the lock
    /// [`CILIUM_OPERATOR_LOCK`], 15 s / 10 s / 2 s, `ReleaseOnCancel: true`, released as the
    /// client-go it vendors (v0.30.3) does ([`ReleaseStyle::UpdateCached`]).
    pub fn cilium_operator(identity: &str) -> Self {
        LeaderElectionConfig {
            release_on_cancel: true,
            release_style: ReleaseStyle::UpdateCached,
            ..Self::new(CILIUM_OPERATOR_LOCK, identity)
        }
    }

    /// The lock client's per-request timeout in force.
    pub fn lock_request_timeout(&self) -> Duration {
        self.request_timeout
            .unwrap_or_else(|| (self.renew_deadline / 2).max(Duration::from_secs(1)))
    }

    /// `NewLeaderElector`'s checks, in its order (`leaderelection.go` @cg l. 76-105).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseDurationNotAboveRenewDeadline);
        }
        // time.Duration(JitterFactor*float64(lec.RetryPeriod)): the float product, truncated.
        let jittered =
            Duration::from_nanos((JITTER_FACTOR * self.retry_period.as_nanos() as f64) as u64);
        if self.renew_deadline <= jittered {
            return Err(ConfigError::RenewDeadlineNotAboveJitteredRetry);
        }
        if self.lease_duration.is_zero() {
            return Err(ConfigError::ZeroLeaseDuration);
        }
        if self.renew_deadline.is_zero() {
            return Err(ConfigError::ZeroRenewDeadline);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if self.identity.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        Ok(())
    }
}

/// A configuration `NewLeaderElector` rejects; `Display` gives upstream's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `lease_duration <= renew_deadline`.
    LeaseDurationNotAboveRenewDeadline,
    /// `renew_deadline <= retry_period * JitterFactor` (the float product, truncated).
    RenewDeadlineNotAboveJitteredRetry,
    /// `lease_duration` is zero.
    ZeroLeaseDuration,
    /// `renew_deadline` is zero.
    ZeroRenewDeadline,
    /// `retry_period` is zero.
    ZeroRetryPeriod,
    /// `identity` is the empty string.
    EmptyIdentity,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfigError::LeaseDurationNotAboveRenewDeadline => {
                "leaseDuration must be greater than renewDeadline"
            }
            ConfigError::RenewDeadlineNotAboveJitteredRetry => {
                "renewDeadline must be greater than retryPeriod*JitterFactor"
            }
            ConfigError::ZeroLeaseDuration => "leaseDuration must be greater than zero",
            ConfigError::ZeroRenewDeadline => "renewDeadline must be greater than zero",
            ConfigError::ZeroRetryPeriod => "retryPeriod must be greater than zero",
            ConfigError::EmptyIdentity => "Lock identity is empty",
        })
    }
}

impl std::error::Error for ConfigError {}

/// `wait.Jitter(d, max_factor)` (@am `wait.go` l. 92-98) for the uniform draw `u` in `[0, 1)`:
/// `d + u * max_factor * d` (a factor `<= 0` means 1).
pub fn jitter(d: Duration, max_factor: f64, u: f64) -> Duration {
    let f = if max_factor <= 0.0 { 1.0 } else { max_factor };
    d + Duration::from_nanos((u * f * d.as_nanos() as f64) as u64)
}
