//! `local-withdraw`: once a speaker's own memberlist view ranks another eligible node first for an
//! IP it announces, it withdraws the IP in the evaluation that view change starts, not when the
//! views of the whole segment converge (`single-announcer`). The evaluation neither sleeps nor
//! waits for the network, so it comes within [`WITHDRAW_BOUND_US`]: less than the 1 ms any
//! simulated sleep lasts (the simulator's clock advances a microsecond or so per scheduling step
//! between the memberlist's event and the announcer's evaluation).
//!
//! Upstream: every memberlist join or leave forces a resync of every Service (metallb 7938d3f
//! `internal/speakerlist/speakerlist.go` `memberlistWatchEvents` l. 339-349), whose
//! `ShouldAnnounce` reads the current members (`UsableSpeakers` l. 303-320) and, for a node that
//! is not first (`speaker/layer2_controller.go` `ShouldAnnounce` l. 88-133, `sortL2Candidates`
//! l. 187-197), the handler calls `DeleteBalancer` (`speaker/main.go` `handleService`
//! l. 474-476), which stops the ARP responder answering at once (`internal/layer2/announcer.go`
//! `DeleteBalancer` l. 291-315). Nothing in that path sleeps or waits for the network.
//!
//! Computed from ground truth and the spec only: the speaker's view is the one its `ml-member`
//! events report (alive or suspect members count, as memberlist's `Members()` does), the
//! eligible nodes are those the scenario did not exclude or mark NetworkUnavailable and that the
//! speaker's Node informer has delivered (its `l2-node` events: upstream's controller fills its
//! node map one reconcile at a time, `speaker/main.go` `SetNode` l. 637-653), and the
//! ordering is sha256(node#ip), reimplemented in `expect`. Checked for Services of traffic
//! policy Cluster: a Local Service's candidates also depend on the speaker's view of endpoint
//! readiness, which no event reports (`announcer-eligible` covers those). A speaker that has left
//! the cluster (its own member state `left`: it is shutting down, and upstream's controllers have
//! stopped, `speaker/main.go` l. 289-292) is not held to it.

use super::expect;
use super::invariants::LOCAL_WITHDRAW;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::BTreeMap;

/// The bound (µs): just under the shortest simulated sleep.
pub const WITHDRAW_BOUND_US: u64 = 999;

/// An announcement its speaker's own view no longer supports.
#[derive(Clone, Debug)]
struct Stale {
    since_us: u64,
    first: String,
}

/// The invariant's state (fed by the MetalLB monitor).
#[derive(Default)]
pub(super) struct WithdrawOracle {
    /// (speaker, IP) -> since when its view ranks another node first.
    stale: BTreeMap<(String, String), Stale>,
}

/// What the oracle needs to know about one IP the speaker announces.
pub(super) struct Announced<'a> {
    /// The IP.
    pub ip: &'a str,
    /// Whether its Service's candidates are knowable from ground truth (traffic policy Cluster).
    pub checked: bool,
}

impl WithdrawOracle {
    /// `speaker`'s view (its members, alive or suspect, filtered to the eligible nodes) or the
    /// IPs it announces changed at `t`: re-derive which of its announcements its view no longer
    /// supports. `left`: it has left the cluster (shutting down).
    pub(super) fn review<'a>(
        &mut self,
        t: u64,
        speaker: &str,
        eligible_members: &[String],
        announced: impl Iterator<Item = Announced<'a>>,
        left: bool,
    ) {
        let mut keep = Vec::new();
        for a in announced.filter(|a| a.checked) {
            let first = expect::first(eligible_members, a.ip);
            if left || first.as_deref() == Some(speaker) {
                continue;
            }
            let key = (speaker.to_string(), a.ip.to_string());
            let first = first.unwrap_or_else(|| "nobody".into());
            let s = self.stale.remove(&key).unwrap_or(Stale {
                since_us: t,
                first: first.clone(),
            });
            keep.push((key, Stale { first, ..s }));
        }
        self.stale.retain(|(sp, _), _| sp != speaker);
        self.stale.extend(keep);
    }

    /// `speaker` is gone: it announces nothing.
    pub(super) fn gone(&mut self, speaker: &str) {
        self.stale.retain(|(sp, _), _| sp != speaker);
    }

    /// A failure if an announcement its speaker's view stopped supporting more than the bound
    /// before `now` is still in place.
    pub(super) fn due(&self, now: u64) -> Option<Failure> {
        let ((speaker, ip), s) = self
            .stale
            .iter()
            .find(|(_, s)| now > s.since_us + WITHDRAW_BOUND_US)?;
        Some(Failure {
            invariant: LOCAL_WITHDRAW.name,
            kind: Kind::Safety,
            node: None,
            explanation: format!(
                "{speaker}'s own member list has ranked {} first for {ip} since {}, but at {} {speaker} still announced it",
                s.first,
                secs(s.since_us),
                secs(now)
            ),
            measured: Measured::bounded(now - s.since_us, WITHDRAW_BOUND_US),
        })
    }
}
