//! `local-withdraw`: once a speaker's own views (member list, Nodes, Endpoints) rank another
//! eligible node first (or none) for an IP it announces, it withdraws the IP in the evaluation
//! that view change starts, not when the views of the whole segment converge
//! (`single-announcer`). The evaluation neither sleeps nor
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
//! `DeleteBalancer` l. 291-315). An Endpoints change reconciles its Service the same way (the
//! Service reconciler watches EndpointSlices and enqueues their Service,
//! `internal/k8s/controllers/service_controller.go` `SetupWithManager` l. 118-137).
//! Nothing in that path sleeps or waits for the network.
//!
//! Computed from ground truth and the spec only: the speaker's view is the one its `ml-member`
//! events report (alive or suspect members count, as memberlist's `Members()` does), the
//! eligible nodes are those the scenario did not exclude or mark NetworkUnavailable and that the
//! speaker's Node informer has delivered (its `l2-node` events: upstream's controller fills its
//! node map one reconcile at a time, `speaker/main.go` `SetNode` l. 637-653), and the
//! ordering is sha256(node#ip), reimplemented in `expect`. The speaker's Endpoints informer view
//! (its `l2-endpoints` events: the nodes with a ready endpoint, per Service) decides the rest,
//! as in `ShouldAnnounce` (`speaker/layer2_controller.go` l. 88-133): a Service with no ready
//! endpoint in that view has no eligible node (`activeEndpointExists` l. 236-246, checked first,
//! l. 89-92), and for a Service of traffic policy Local only the nodes with a ready endpoint
//! there are (`nodesWithEndpoint` l. 56-86, chosen at l. 111-113; readiness is upstream's
//! `EndpointCanServe`, `internal/k8s/epslices/endpoint_slices.go` l. 15-23). The speaker's own
//! view is the reference, not the API server's Endpoints: an informer delivers a write one watch
//! later, and a speaker cut from the API server keeps its old view for as long as the cut lasts,
//! so only its own view bounds its withdrawal. A speaker that has left
//! the cluster (its own member state `left`: it is shutting down, and upstream's controllers have
//! stopped, `speaker/main.go` l. 289-292) is not held to it.

use super::expect;
use super::invariants::LOCAL_WITHDRAW;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::{BTreeMap, BTreeSet};

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
pub(super) struct Announced {
    /// The IP.
    pub ip: String,
    /// The nodes the speaker's own views make eligible for it (unordered).
    pub eligible: Vec<String>,
}

impl WithdrawOracle {
    /// `speaker`'s views (its members, Nodes and Endpoints) or the IPs it announces changed at
    /// `t`: re-derive which of its announcements its views no longer support. `left`: it has
    /// left the cluster (shutting down).
    pub(super) fn review(&mut self, t: u64, speaker: &str, announced: Vec<Announced>, left: bool) {
        let mut keep = Vec::new();
        for a in announced {
            let first = expect::first(&a.eligible, &a.ip);
            if left || first.as_deref() == Some(speaker) {
                continue;
            }
            let key = (speaker.to_string(), a.ip);
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
                "{speaker}'s own views (member list, Nodes, Endpoints) have ranked {} first for {ip} since {}, but at {} {speaker} still announced it",
                s.first,
                secs(s.since_us),
                secs(now)
            ),
            measured: Measured::bounded(now - s.since_us, WITHDRAW_BOUND_US),
        })
    }
}

/// The nodes a speaker's own views make eligible for a Service (upstream's `ShouldAnnounce`,
/// metallb 7938d3f speaker/layer2_controller.go l. 88-133): none without a ready endpoint in
/// its Endpoints view (`activeEndpointExists`), else its eligible members, and for traffic
/// policy Local only those with a ready endpoint (`nodesWithEndpoint`).
pub(super) fn own_candidates(
    members: &[&String],
    ready: Option<&BTreeSet<String>>,
    local: bool,
) -> Vec<String> {
    let Some(ready) = ready.filter(|r| !r.is_empty()) else {
        return Vec::new();
    };
    members
        .iter()
        .filter(|n| !local || ready.contains(**n))
        .map(|n| (*n).clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_candidates_follow_the_speakers_endpoint_view() {
        let (n1, n2, n3) = ("n1".to_string(), "n2".to_string(), "n3".to_string());
        let members = [&n1, &n2, &n3];
        let ready: BTreeSet<String> = [n2.clone()].into();
        let none = BTreeSet::new();
        // Cluster: every eligible member, as long as one endpoint is ready anywhere.
        assert_eq!(
            own_candidates(&members, Some(&ready), false),
            [n1.clone(), n2.clone(), n3.clone()]
        );
        // Local: only the members with a ready endpoint.
        assert_eq!(own_candidates(&members, Some(&ready), true), ["n2"]);
        // No ready endpoint in the view (or no Endpoints delivered yet): nobody.
        for local in [false, true] {
            assert!(own_candidates(&members, Some(&none), local).is_empty());
            assert!(own_candidates(&members, None, local).is_empty());
        }
    }
}
