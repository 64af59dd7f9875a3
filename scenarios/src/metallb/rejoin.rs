//! `prompt-rejoin`: while the network is whole and every speaker runs, a speaker that (re)started
//! and listed its peers' IPs is back in every other speaker's member list within
//! [`REJOIN_BOUND_US`], far sooner than the convergence bound after a partition.
//!
//! Why that bound (metallb 7938d3f, memberlist v0.5.1):
//! * the speaker joins every cached IP that is not a member as soon as its IP list arrives
//!   (`internal/speakerlist/speakerlist.go` `joinMembers` l. 225-242 on the `Rejoin` request,
//!   `mlJoin` l. 258-287); with every node up and the network whole each push/pull exchange of
//!   that join completes in round trips, and `TCPTimeout` (10 s) caps it;
//! * a peer that held the speaker dead or left at an incarnation at least the restarted one's
//!   ignores its alive message (memberlist `state.go` `aliveNode` l. 1077-1080) until the speaker
//!   learns of its old state in that same exchange and refutes it with a higher incarnation
//!   (`deadNode` l. 1280-1285, `refute` l. 918-944); the refutation is gossiped within a few
//!   200 ms rounds, but only to 3 random members each time;
//! * a peer the gossip missed still has the speaker as a non-member, so its own join loop joins it
//!   at its next tick, at most a minute later (`joinMembers`' 1-minute ticker), and that
//!   exchange carries the new incarnation (10 s at most again).
//!
//! So: [`model::metallb::JOIN_PERIOD`] + 2 x [`model::metallb::TCP_TIMEOUT`] + 1 s for clock
//! drift and frames = 81 s. A network fault, a pause or latency spike, a speaker that is not
//! running, or a stalled or dead join loop in force during the wait ends the obligation: rejoining
//! after those is `membership-merges`' business.

use super::expect::S;
use super::invariants::PROMPT_REJOIN;
use model::metallb as m;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::{BTreeMap, BTreeSet};

/// The bound (µs): a peer's next join-loop tick and two joins' exchanges, plus 1 s.
pub const REJOIN_BOUND_US: u64 =
    m::JOIN_PERIOD.as_micros() as u64 + 2 * m::TCP_TIMEOUT.as_micros() as u64 + S;

/// The invariant's state (fed by the MetalLB monitor).
#[derive(Default)]
pub(super) struct RejoinOracle {
    /// Speaker -> when it listed its peers' IPs after starting (the clock of its obligation).
    pending: BTreeMap<String, u64>,
}

impl RejoinOracle {
    /// `speaker` cached its peers' IPs at `t` for the first time since it started; `calm`: the
    /// network is whole and every speaker runs.
    pub(super) fn cached(&mut self, t: u64, speaker: &str, calm: bool) {
        if calm {
            self.pending.insert(speaker.to_string(), t);
        }
    }

    /// Something that excuses a slow rejoin began (a network fault, a speaker going away, a
    /// stalled join loop): every obligation ends.
    pub(super) fn excuse(&mut self) {
        self.pending.clear();
    }

    /// Obligations met by the member lists now: `listed(peer, speaker)` says whether `peer`'s
    /// member list has `speaker` (alive or suspect); `peers` are the other running speakers.
    pub(super) fn update(&mut self, peers: &BTreeSet<String>, listed: impl Fn(&str, &str) -> bool) {
        self.pending.retain(|s, _| {
            peers
                .iter()
                .any(|p| p != s && !listed(p.as_str(), s.as_str()))
        });
    }

    /// A failure if a speaker is still missing from a peer's list longer than the bound; `missing`
    /// names a peer lacking it.
    pub(super) fn due(
        &self,
        now: u64,
        missing: impl Fn(&str) -> Option<String>,
    ) -> Option<Failure> {
        let (s, since) = self
            .pending
            .iter()
            .find(|(_, since)| now > **since + REJOIN_BOUND_US)?;
        let peer = missing(s).unwrap_or_else(|| "a peer".into());
        Some(Failure {
            invariant: PROMPT_REJOIN.name,
            kind: Kind::Liveness,
            node: None,
            explanation: format!(
                "{s} listed its peers' IPs at {} with the network whole, but at {} {peer}'s member list still lacked it",
                secs(*since),
                secs(now)
            ),
            measured: Measured::bounded(now - since, REJOIN_BOUND_US),
        })
    }
}
