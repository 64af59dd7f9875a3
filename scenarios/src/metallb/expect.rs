//! What the MetalLB monitor expects, computed here from the spec and the upstream code, never by
//! calling the model: the announcer ordering (sha256 of `node#ip`), memberlist's suspicion timeout,
//! and the bounds the invariants are checked at. Only the model's constants (intervals, timeouts)
//! are read; they are the configuration both sides share.

use model::metallb as m;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// One second in microseconds.
pub(super) const S: u64 = 1_000_000;

/// A duration in microseconds (const).
const fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// The fewest speakers a scenario deploys (the catalog's bounds are given for this cluster).
pub const SPEAKERS_MIN: u32 = 3;
/// The most speakers a scenario deploys.
pub const SPEAKERS_MAX: u32 = 7;
/// The lower end of a seed's one-way latency range is drawn up to this (µs) ...
pub const LATENCY_MIN_US_MAX: u64 = 1_000;
/// ... and the range's width up to this (µs).
pub const LATENCY_SPREAD_US_MAX: u64 = 4_000;

/// The longest a frame takes from a speaker to the router with no latency spike in force: the
/// largest one-way latency a seed can draw, plus the 1 ms every simulated sleep lasts at least
/// (the router's listener is woken at a datagram's arrival, never sooner than 1 ms after it was
/// sent).
pub const FRAME_US_MAX: u64 = LATENCY_MIN_US_MAX + LATENCY_SPREAD_US_MAX + 1_000;

/// The spam loop's ticker period (µs): a gratuitous ARP every 1.1 s while an IP's burst lasts.
///
/// upstream: metallb/metallb internal/layer2/announcer.go `spamLoop` (7938d3f, l. 170-173).
pub const GARP_EVERY_US: u64 = us(m::GARP_EVERY);

/// How long after its last `SetBalancer` an IP may stay in the spam loop's map (µs): its burst's
/// 5 s deadline, then up to one tick until the tick that finds the deadline passed drops it. A
/// speaker's last `SetBalancer` for an IP comes no later than its withdrawal, so an IP withdrawn
/// longer ago than this is no longer held, and announcing it again sends a gratuitous ARP at once.
///
/// upstream: announcer.go `spamLoop` (l. 174-182: "Spam right away" only for an IP not in the map;
/// l. 183-194: an IP leaves the map at the first tick after its deadline).
pub const SPAM_HELD_US: u64 = us(m::GARP_FOR) + us(m::GARP_EVERY);

/// The announcer ordering for `ip`: candidates sorted by `sha256(node + "#" + ip)` ascending,
/// compared as bytes.
///
/// upstream: metallb/metallb speaker/layer2_controller.go `sortL2Candidates` (7938d3f, l. 187-197:
/// `sha256.Sum256([]byte(candidates[i] + "#" + ip))`, `bytes.Compare(hi[:], hj[:]) < 0`; no
/// L2Advertisement carries preferred nodes here, so the scores are all equal) and `ShouldAnnounce`
/// (l. 122-129: the first of the sorted list announces).
pub fn order(candidates: &[String], ip: &str) -> Vec<String> {
    let mut keyed: Vec<([u8; 32], &String)> = candidates.iter().map(|c| (key(c, ip), c)).collect();
    keyed.sort();
    keyed.into_iter().map(|(_, c)| c.clone()).collect()
}

/// The announcer of `ip` among `candidates`: the first of [`order`].
pub fn first(candidates: &[String], ip: &str) -> Option<String> {
    candidates.iter().min_by_key(|c| key(c, ip)).cloned()
}

/// `sha256(node + "#" + ip)`.
fn key(node: &str, ip: &str) -> [u8; 32] {
    Sha256::digest(format!("{node}#{ip}").as_bytes()).into()
}

/// memberlist's minimum suspicion timeout for a cluster of `members` (µs):
/// `SuspicionMult x time.Duration(nodeScale x 1000) x ProbeInterval / 1000` with
/// `nodeScale = max(1, log10(max(1, n)))`.
///
/// upstream: hashicorp/memberlist util.go `suspicionTimeout` (v0.5.1, l. 71-76); state.go
/// `suspectNode` (l. 1227-1228: the timer starts at `SuspicionMaxTimeoutMult` times it).
///
/// `nodeScale` is exactly 1 for every cluster of up to 10 members, which covers every scenario (3
/// to 7 speakers); a larger cluster is refused rather than approximated (a logarithm is not
/// available in const context).
pub const fn suspicion_min_us(members: u32) -> u64 {
    assert!(
        members <= 10,
        "memberlist's node scale is 1 only up to 10 members"
    );
    let node_scale_milli = 1_000;
    m::SUSPICION_MULT as u64 * node_scale_milli * us(m::PROBE_INTERVAL) / 1_000
}

/// The longest a suspicion lasts before the member is declared dead: with no confirmation, the
/// timer starts at `SuspicionMaxTimeoutMult` times the minimum.
pub const fn suspicion_max_us(members: u32) -> u64 {
    suspicion_min_us(members) * m::SUSPICION_MAX_TIMEOUT_MULT as u64
}

/// Convergence bound after the network heals or a speaker (re)starts: the join period, a join
/// timeout per speaker, the maximum suspicion, a probe round, the longest the router's neighbour
/// entry keeps a node that stopped answering ([`sim::l2::STALE_ENTRY_MAX`]), 10 s slack.
///
/// The last term stays although every resync restarts the winner's gratuitous-ARP burst
/// (upstream's `SetBalancer` -> `doSpam` on every memberlist event): the burst corrects the router
/// only if it outlasts the loser's last gratuitous ARP, i.e. if the loser learns of the winner
/// within [`m::GARP_FOR`] of the winner's last membership event. Nothing bounds that from the
/// constants: the loser learns of the winner by gossip (usually within a few 200 ms rounds, but
/// each broadcast goes to only 3 random members, a bounded number of times) or else by a push/pull
/// or join up to a minute later, and meanwhile every membership event of its own restarts its
/// burst. When the winner's burst ended first, only the router's neighbour cache corrects the
/// entry: it keeps the loser's address for up to `reachable_time` (45 s at most), then, once a
/// packet finds it STALE, 5 s of DELAY and 3 unicast probes the loser no longer answers, and the
/// next packet's broadcast is answered by the winner.
pub const fn merge_bound_us(speakers: u32) -> u64 {
    us(m::JOIN_PERIOD)
        + us(m::TCP_TIMEOUT) * speakers as u64
        + suspicion_max_us(speakers)
        + us(m::PROBE_INTERVAL) * speakers as u64
        + us(sim::l2::STALE_ENTRY_MAX)
        + 10 * S
}

/// Takeover bound after a crash: a probe round and interval, maximum suspicion, 2 s of gossip, the
/// 5 s ARP burst.
pub const fn takeover_bound_us(speakers: u32) -> u64 {
    us(m::PROBE_INTERVAL) * (speakers as u64 + 1)
        + suspicion_max_us(speakers)
        + us(m::GARP_FOR)
        + 2 * S
}

/// After a readiness change: the longest an informer takes to notice a dead watch and watch again
/// (the transport's 30 s read-idle timeout, then a 15 s ping without an ack), the longest the
/// router's neighbour entry keeps a node that stopped answering, 10 s slack.
pub const VIEW_BOUND_US: u64 =
    us(m::INFORMER_IDLE) + us(sim::kube::PING_TIMEOUT) + us(sim::l2::STALE_ENTRY_MAX) + 10 * S;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_compares_whole_digests_as_bytes() {
        let nodes: Vec<String> = ["n1", "n2", "n3", "n4", "n5"].map(String::from).to_vec();
        for i in 1..=20 {
            let ip = format!("192.168.10.{i}");
            let o = order(&nodes, &ip);
            // Hex digests sort like their bytes.
            let hex = |n: &str| {
                Sha256::digest(format!("{n}#{ip}"))
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            };
            assert!(o.windows(2).all(|w| hex(&w[0]) < hex(&w[1])), "{ip}: {o:?}");
            assert_eq!(first(&nodes, &ip).as_ref(), o.first());
        }
        assert_eq!(first(&[], "192.168.10.1"), None);
    }

    #[test]
    fn suspicion_follows_memberlist_for_small_clusters() {
        for n in 0..=10 {
            assert_eq!(suspicion_min_us(n), 4 * S, "n={n}");
            assert_eq!(suspicion_max_us(n), 24 * S, "n={n}");
        }
        assert_eq!(merge_bound_us(3), 184 * S);
        assert_eq!(merge_bound_us(7), 228 * S);
        assert_eq!(takeover_bound_us(3), 35 * S);
    }
}
