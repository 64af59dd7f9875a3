//! The bounds of the Cilium invariants and the scenarios' windows, derived from the model's
//! constants: what `invariants` declares and `monitor` applies.

/// Length of the fault window (ms).
pub const FAULT_WINDOW_MS: u64 = 600_000;
/// Length of the liveness phase (ms): the longest liveness bound, and 30 s for the checks after it.
pub const LIVENESS_MS: u64 = {
    let longest = max_us(
        max_us(PODS_BOUND_US, CLEANUP_BOUND_US),
        max_us(max_us(ABORT_BOUND_US, EXCESS_BOUND_US), IPAM_GAP_BOUND_US),
    );
    longest / 1000 + 30_000
};
/// The longer of two durations (µs), in constant expressions.
const fn max_us(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}
/// Interfaces' capacity.
pub const ENI_CAPACITY: u32 = 10;
/// One second (µs).
pub(super) const S: u64 = 1_000_000;
/// A new leader's take-over after faults stop: the lease duration, the widest acquire wait, one
/// request (client-go's `acquire` loop, sim::leaderelection).
pub const TAKEOVER_US: u64 = {
    use sim::leaderelection::{LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD};
    (LEASE_DURATION.as_micros()
        + RETRY_PERIOD.as_micros() * 22 / 10
        + RENEW_DEADLINE.as_micros() / 2) as u64
};
/// An informer whose watch stream died in a partition re-watches within this after it heals: its
/// idle timer, then a health ping that gets no ack (`sim::kube::run_informer`).
pub const REWATCH_US: u64 =
    (model::cilium::INFORMER_IDLE.as_micros() + sim::kube::PING_TIMEOUT.as_micros()) as u64;
/// The longest a node's pool maintainer waits after its last failed pass (node_manager.go:312-330).
pub(super) const BACKOFF_US: u64 = model::cilium::operator::ipam::BACKOFF_MAX_US;
/// The operator's resync period (µs).
pub(super) const RESYNC_US: u64 = model::cilium::OPERATOR_RESYNC.as_micros() as u64;
/// The agent's status write period (µs).
pub(super) const AGENT_WRITE_US: u64 = model::cilium::AGENT_UPDATE_RATE.as_micros() as u64;

/// Bound of `leader-runs-ipam` after faults stop: the longest the Lease can name an operator
/// without running IPAM. Its IPAM start is one blocking cloud resync whose failure exits the
/// process (root.go:575-578, node_manager.go:221-225 @ed90dd5): at most one cloud request
/// timeout, after the SDK's retry delays of a call throttled as the faults stopped; an exited
/// holder stops renewing, and a candidate takes the Lease over within [`TAKEOVER_US`] of the
/// last renewal it saw; 10 s for the requests between.
pub const IPAM_GAP_BOUND_US: u64 = (sim::cloud::REQUEST_TIMEOUT.as_micros()
    + sim::cloud::sdk::LONGEST_BACKOFFS.as_micros()) as u64
    + TAKEOVER_US
    + 10 * S;

/// Bound of `pods-get-ips` after faults stop.
///
/// Derived from the code's constants, the longest chain after faults stop: a new leader takes
/// over (lease duration, the widest acquire wait, one request), a node's maintainer waits out
/// its longest backoff (a failing cloud leaves it at 5 min, node_manager.go:312-330), then the
/// next resync, the operator's writes, the agent's start poll and restore, its rate-limited
/// status write, and the pod's next sandbox attempt (the kubelet's pod-sync backoff with its
/// jitter: a pod that found no IP is not served the instant one appears); 20 s for the requests
/// between.
pub const PODS_BOUND_US: u64 = {
    let agent = 5 * S + 3 * S + AGENT_WRITE_US;
    let kubelet = model::cilium::kubelet::POD_RETRY_MAX_US;
    TAKEOVER_US + BACKOFF_US + RESYNC_US + agent + kubelet + 20 * S
};

/// Bound of `handshake-entries-clear` after faults stop (or after the entry is due to go, if
/// later): the longer of the informers' re-watch and the operator's chain (a take-over, the
/// maintainer's longest backoff, then the resync whose pass releases, aborts or drops the entry
/// and whose writes carry it away), then the agent's rate-limited write (it removes a released
/// entry once the pool lost the IP); 20 s for the requests between.
pub const CLEANUP_BOUND_US: u64 = {
    let operator = TAKEOVER_US + BACKOFF_US + RESYNC_US;
    let slowest = max_us(REWATCH_US, operator);
    slowest + AGENT_WRITE_US + 20 * S
};

/// Bound of `handshake-aborted-when-not-excess`, counted from the later of faults stopping and
/// the entry's IP leaving its node's release candidates: the longer of the informers' re-watch
/// and the operator's chain up to a pass (a take-over, the maintainer's longest backoff), the
/// agent's rate-limited status write (the operator counts `used` from it), then the resync whose
/// pass aborts the handshake (`abortNoLongerExcessIPs`, node.go:735-755, runs only in a pool
/// maintainer pass, and `releaseNeeded` asks for one while `release-ips` is not empty) and
/// whose write drops the entry; 20 s for the requests between.
pub const ABORT_BOUND_US: u64 = {
    let operator = TAKEOVER_US + BACKOFF_US;
    let slowest = max_us(REWATCH_US, operator);
    slowest + AGENT_WRITE_US + RESYNC_US + 20 * S
};

/// After faults stop, the operator and the agent act on current state within this: the longer of
/// a Lease take-over and an informer's re-watch.
pub const RECOVERY_US: u64 = max_us(REWATCH_US, TAKEOVER_US);

/// How long after an IP becomes a release candidate (once the operator and agent work, see
/// [`RECOVERY_US`]) it is unassigned: the agent's status write shows the pods' IPs (15 s), the
/// next resync times it (60 s), the release delay (180 s) runs out and the first resync after
/// it marks it (60 s); the marks reach the CiliumNode with the API sync of that resync or, when
/// that sync ran first, of the next (60 s); the agent answers within its write period (15 s,
/// before the next resync), the next resync releases it (60 s); 10 s for requests
/// (node.go:797-898, node_manager.go:231-249 @ed90dd5).
///
/// Why a resync may write the marks late: `resyncNode` fires the node's pool maintainer and
/// its API sync as two triggers at once (node_manager.go:477-520 @ed90dd5), and each trigger
/// runs its function in its own goroutine, so either may run first. A sync that runs before the
/// pass that marks finds the status unchanged and writes nothing; the marks wait for the next
/// resync's sync.
pub const RELEASE_PIPELINE_US: u64 = AGENT_WRITE_US
    + RESYNC_US
    + model::cilium::RELEASE_DELAY.as_micros() as u64
    + RESYNC_US
    + RESYNC_US
    + RESYNC_US
    + 10 * S;

/// Bound of `excess-released` after faults stop: [`RECOVERY_US`] + [`RELEASE_PIPELINE_US`]
/// (counted from a later start when the IP became a candidate later, the node's addresses
/// changed, or a fault could have left the maintainer in its backoff).
pub const EXCESS_BOUND_US: u64 = RECOVERY_US + RELEASE_PIPELINE_US;

#[cfg(test)]
mod tests {
    use super::LIVENESS_MS;
    use sim::Kind;

    /// Every liveness bound of the catalog runs out within the liveness phase (the checks happen
    /// in it): a new bound longer than the phase, left out of `LIVENESS_MS`'s list, fails here.
    #[test]
    fn every_liveness_bound_ends_inside_the_liveness_phase() {
        for inv in super::super::invariants::INVARIANTS {
            if let (Kind::Liveness, Some(b)) = (inv.kind, inv.bound_us) {
                assert!(b < LIVENESS_MS * 1000, "{}: {b} µs", inv.name);
            }
        }
    }
}
