//! MetalLB layer 2 (docs/upstream/metallb.md; metallb/metallb PR 662 "make nodes re-join
//! memberlist cluster", fixing metallb/metallb#589).
//!
//! * [`memberlist`]: hashicorp/memberlist's SWIM protocol with its LAN defaults (probe, indirect
//!   probes, suspicion with confirmations, dead-member retention and forgetting, gossip, push/pull,
//!   `join`, graceful leave) over datagrams (probes, gossip) and calls (push/pull, join);
//! * [`speakerlist`]: the IP cache from the API server and its 5-minute refresh, the 1-minute join
//!   loop that joins only non-members, the rejoin trigger when the speaker's own Node changes, a
//!   one-slot request channel;
//! * [`announcer`]: the layer-2 controller: candidates, the sha256 ordering, the gratuitous ARP
//!   burst restarted on every resync of a service this node wins, ARP answers and withdrawal
//!   (also of a deleted Service).
//!
//! One `speaker` process per node, supervised by the node's `kubelet` (which also renews the node's
//! Lease). Kubernetes objects: `Node` (spec `{"exclude": bool, "network_unavailable": bool}`, status
//! `{"ready": bool}`), `Lease`, `Pod` `speaker-<node>` (status `{"ip", "node"}`), `Service`
//! (spec `{"ip", "local": bool}`), `Endpoints` (spec `{"nodes"}`, status `{"ready"}`).
//!
//! Bug switches: `metallb-join-once` (before PR 662: join only at start) and
//! `metallb-rejoin-via-apiserver` (PR 662's first draft: each rejoin lists peer IPs from the API
//! server instead of using the cache).

pub mod event;
pub use event::MetallbEvent;
pub mod announcer;
pub mod memberlist;
pub mod speakerlist;

use sha2::{Digest, Sha256};
use sim::kube::Kube;
use sim::l2::Segment;
use sim::world::Host;
use sim::{NodeIx, World};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// memberlist `ProbeInterval` (DefaultLANConfig).
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// memberlist `ProbeTimeout`.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// memberlist `IndirectChecks`.
pub const INDIRECT_CHECKS: usize = 3;
/// memberlist `SuspicionMult`.
pub const SUSPICION_MULT: u32 = 4;
/// memberlist `SuspicionMaxTimeoutMult`.
pub const SUSPICION_MAX_TIMEOUT_MULT: u32 = 6;
/// memberlist `GossipToTheDeadTime`: dead members are gossiped to this long, then forgotten.
pub const GOSSIP_TO_THE_DEAD: Duration = Duration::from_secs(30);
/// memberlist `GossipInterval`.
pub const GOSSIP_INTERVAL: Duration = Duration::from_millis(200);
/// memberlist `GossipNodes`.
pub const GOSSIP_NODES: usize = 3;
/// memberlist `PushPullInterval`.
pub const PUSH_PULL_INTERVAL: Duration = Duration::from_secs(30);
/// memberlist `RetransmitMult`.
pub const RETRANSMIT_MULT: u32 = 4;
/// memberlist `AwarenessMaxMultiplier`: the health score scales the probe interval up to 8x
/// (v0.5.1 config.go `DefaultLANConfig` l. 320).
pub const AWARENESS_MAX_MULTIPLIER: u32 = 8;
/// memberlist `TCPTimeout` (push/pull and join exchanges).
pub const TCP_TIMEOUT: Duration = Duration::from_secs(10);
/// Graceful leave: how long the speaker waits for its leave message to go out.
pub const LEAVE_TIMEOUT: Duration = Duration::from_secs(1);
/// speakerlist: the join loop's period.
pub const JOIN_PERIOD: Duration = Duration::from_secs(60);
/// speakerlist: the IP cache's refresh period.
pub const IP_REFRESH: Duration = Duration::from_secs(300);
/// Announcer: the spam loop's ticker sends gratuitous ARPs every 1.1 s ...
/// (metallb 7938d3f internal/layer2/announcer.go `spamLoop` l. 171-172) ...
pub const GARP_EVERY: Duration = Duration::from_millis(1100);
/// ... until 5 s after the IP's latest `SetBalancer` (l. 176-177), which a resync repeats.
pub const GARP_FOR: Duration = Duration::from_secs(5);
/// kubelet's node status / Lease renewal period.
pub const NODE_HEARTBEAT: Duration = Duration::from_secs(10);
/// `node-monitor-grace-period`: NotReady after this long without a renewal.
pub const NODE_GRACE: Duration = Duration::from_secs(40);
/// The speaker's informers ping their watch connection after this long without an event
/// (client-go's HTTP/2 `ReadIdleTimeout`); only a ping without an ack makes them watch again.
pub const INFORMER_IDLE: Duration = Duration::from_secs(30);
/// kubelet's restart back-off for a crashed speaker.
pub const RESTART_BACKOFF: Duration = Duration::from_secs(10);

/// memberlist's `suspicionTimeout(SuspicionMult, n, ProbeInterval)`: the minimum suspicion timeout,
/// `mult x max(1, log10(max(1, n))) x interval`, floored to the millisecond (4 s for n <= 10).
pub fn suspicion_timeout(mult: u32, n: usize, interval: Duration) -> Duration {
    let scale = (n.max(1) as f64).log10().max(1.0);
    Duration::from_millis((mult as f64 * scale * interval.as_millis() as f64).floor() as u64)
}

/// memberlist's suspicion timer after `confirmations` independent confirmations when `k` are
/// expected: it starts at `max` and shrinks logarithmically toward `min`
/// (`max - log(c+1)/log(k+1) x (max - min)`, floored to the millisecond, never below `min`).
pub fn suspicion_remaining(min: Duration, max: Duration, k: u32, confirmations: u32) -> Duration {
    if k == 0 {
        return min;
    }
    let frac = ((confirmations as f64) + 1.0).ln() / ((k as f64) + 1.0).ln();
    let raw = max.as_secs_f64() - frac * (max.as_secs_f64() - min.as_secs_f64());
    Duration::from_millis((raw * 1000.0).floor().max(0.0) as u64).max(min)
}

/// memberlist's retransmit limit for a broadcast: `mult x ceil(log10(n + 1))`.
pub fn retransmit_limit(mult: u32, n: usize) -> u32 {
    mult * ((n as f64 + 1.0).log10().ceil() as u32)
}

/// The announcer ordering (pure): candidates sorted by `sha256(node + "#" + ip)` ascending; the
/// first one announces `ip`.
pub fn announce_order(candidates: &[String], ip: &str) -> Vec<String> {
    let mut keyed: Vec<([u8; 32], &String)> = candidates
        .iter()
        .map(|c| (announce_key(c, ip), c))
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, c)| c.clone()).collect()
}

/// Remembered [`announce_key`]s, by IP then node.
pub type KeyMemo = BTreeMap<String, BTreeMap<String, [u8; 32]>>;

/// The first of [`announce_order`]`(candidates, ip)` (the announcer), computing each key once
/// per (IP, node) in `memo`.
pub fn first_in_order<'a>(
    candidates: &'a [String],
    ip: &str,
    memo: &mut KeyMemo,
) -> Option<&'a String> {
    let by_node = match memo.get_mut(ip) {
        Some(k) => k,
        None => memo.entry(ip.to_string()).or_default(),
    };
    candidates
        .iter()
        .min_by_key(|c| match by_node.get(c.as_str()) {
            Some(k) => *k,
            None => *by_node
                .entry(c.to_string())
                .or_insert_with(|| announce_key(c, ip)),
        })
}

/// `sha256(node + "#" + ip)`: a node's place in the announcer ordering of `ip`.
pub fn announce_key(node: &str, ip: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(node.as_bytes());
    h.update(b"#");
    h.update(ip.as_bytes());
    h.finalize().into()
}

/// Bug and mutant switches of the MetalLB model (all off: current upstream behaviour).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// Bug `metallb-join-once`.
    pub join_once: bool,
    /// Bug `metallb-rejoin-via-apiserver`.
    pub rejoin_via_apiserver: bool,
    /// Bug `metallb-garp-first-only` (before PR 709, metallb 0c1ae8cc3): the announcer has no spam
    /// loop; only the first `SetBalancer` of a service starts its gratuitous ARPs (five, 1.1 s
    /// apart), and a `SetBalancer` of a service already announced does nothing.
    pub garp_first_only: bool,
    /// Fix `metallb-garp-while-announced`: the spam loop keeps every announced IP, so a speaker
    /// sends a gratuitous ARP every tick for as long as it announces (as keepalived's
    /// `vrrp_garp_master_refresh` does), not only for 5 s after a `SetBalancer`.
    pub garp_while_announced: bool,
    /// Mutant `metallb-mutant-never-withdraws` (test-only): a speaker that stops being first keeps
    /// announcing (no `DeleteBalancer`).
    pub mutant_never_withdraws: bool,
    /// Mutant `metallb-mutant-slow-suspicion` (test-only): memberlist's suspicion timeout is ten
    /// times upstream's, so a crashed speaker is declared dead (and its IPs taken over) late.
    pub mutant_slow_suspicion: bool,
    /// Mutant `metallb-mutant-no-refute` (test-only): a member never refutes a suspicion of itself
    /// (upstream raises its incarnation: memberlist v0.5.1 state.go `suspectNode` l. 1194-1198), so
    /// any suspicion of a healthy speaker ends in its death.
    pub mutant_no_refute: bool,
    /// Mutant `metallb-mutant-cache-dropped` (test-only): a failed refresh of the speaker IP cache
    /// empties the cache (upstream keeps the old list), so nothing is rejoined while the API server
    /// is down.
    pub mutant_cache_dropped: bool,
    /// Mutant `metallb-mutant-wrong-order` (test-only): a speaker not announcing an IP takes the
    /// LAST candidate by sha256(node#ip) for the announcer instead of the first (one announcing
    /// decides to keep it by the right order, so the wrong decision shows in the announcement
    /// itself, not in a late withdrawal).
    pub mutant_wrong_order: bool,
    /// Mutant `metallb-mutant-ignore-exclusion` (test-only): candidates keep nodes labelled
    /// exclude-from-external-load-balancers or with NetworkUnavailable.
    pub mutant_ignore_exclusion: bool,
    /// Mutant `metallb-mutant-no-garp` (test-only): a new announcer sends no gratuitous ARP right
    /// away, only at the spam loop's next tick.
    pub mutant_no_garp: bool,
    /// Mutant `metallb-mutant-no-spam-ticks` (test-only): the spam loop's ticker sends nothing;
    /// an IP gets only the gratuitous ARP sent right away when it enters the loop.
    pub mutant_no_spam_ticks: bool,
    /// Mutant `metallb-mutant-lazy-withdraw` (test-only): an evaluation started by a member-list
    /// change alone withdraws nothing; withdrawals wait for the next informer change.
    pub mutant_lazy_withdraw: bool,
    /// Mutant `metallb-mutant-lazy-join` (test-only): the join loop ignores join requests (the
    /// first IP list, the speaker's own Node changing) and ticks every 5 minutes, not every minute.
    pub mutant_lazy_join: bool,
    /// Mutant `metallb-mutant-answers-after-withdraw` (test-only): a speaker keeps answering ARP
    /// requests for an IP it withdrew.
    pub mutant_answers_after_withdraw: bool,
    /// Mutant `metallb-mutant-keeps-deleted-service` (test-only): the speaker's Service informer
    /// ignores deletions, so a deleted Service stays announced (upstream hands the reconciler a nil
    /// Service and withdraws it: speaker/main.go `SetBalancer` l. 401-403).
    pub mutant_keeps_deleted_service: bool,
    /// Mutant `metallb-mutant-local-ignores-readiness` (test-only): a speaker announcing a Local
    /// service keeps its own node among the candidates when its Endpoints view no longer has a
    /// ready endpoint there (upstream counts only nodes with a serving endpoint:
    /// speaker/layer2_controller.go `nodesWithEndpoint` l. 56-86), so it keeps the IP.
    pub mutant_local_ignores_readiness: bool,
}

/// The speakers' network: each speaker's IP and node, its memberlist datagram inbox and its
/// push/pull endpoint (what resolving an IP and opening a socket give real code).
pub struct Peers {
    /// Each speaker's IP (dotted) and node.
    pub by_ip: Vec<(String, NodeIx)>,
    /// Each speaker node's memberlist datagram inbox.
    pub udp: std::collections::BTreeMap<NodeIx, sim::net::Datagrams<memberlist::Packet>>,
    /// Each speaker node's push/pull endpoint.
    pub tcp: std::collections::BTreeMap<NodeIx, memberlist::Tcp>,
}

impl Peers {
    /// The network for speakers at these (ip, node) pairs.
    pub fn new(by_ip: Vec<(String, NodeIx)>) -> Rc<Peers> {
        Rc::new(Peers {
            udp: by_ip
                .iter()
                .map(|(_, n)| (*n, sim::net::Datagrams::new(*n)))
                .collect(),
            tcp: by_ip
                .iter()
                .map(|(_, n)| (*n, sim::net::Endpoint::new(*n)))
                .collect(),
            by_ip,
        })
    }

    /// The node an IP belongs to.
    pub fn node_of(&self, ip: &str) -> Option<NodeIx> {
        self.by_ip.iter().find(|(i, _)| i == ip).map(|(_, n)| *n)
    }

    /// The IP of a node.
    pub fn ip_of(&self, node: NodeIx) -> Option<&str> {
        self.by_ip
            .iter()
            .find(|(_, n)| *n == node)
            .map(|(i, _)| i.as_str())
    }
}

/// What a speaker needs to start.
#[derive(Clone)]
pub struct SpeakerConfig {
    /// The API server (the kubelet's Lease; the speaker's Nodes, Services, Endpoints and Pods).
    pub kube: Kube,
    /// The layer-2 segment the speaker announces service IPs on.
    pub segment: Segment,
    /// The speakers' network.
    pub peers: Rc<Peers>,
    /// The run's MetalLB bug switches.
    pub switches: Switches,
}

/// Installs the node's kubelet (Lease renewals, speaker supervision) and the MetalLB speaker as the
/// services of `node`. A crashed speaker is restarted after [`RESTART_BACKOFF`]; a terminated
/// kubelet terminates the speaker (which leaves the cluster gracefully) and exits.
pub fn install(world: &World, node: NodeIx, cfg: SpeakerConfig) {
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let kubelet = host.spawn_process("kubelet");
            let name = host.name();
            let (p, n, k) = (kubelet.clone(), name.clone(), cfg.kube.clone());
            kubelet.spawn("heartbeat", async move {
                k.client(&p).run_node_heartbeat(&n, NODE_HEARTBEAT).await
            });
            let (p, c) = (kubelet.clone(), cfg.clone());
            kubelet.spawn("supervisor", async move {
                loop {
                    let speaker = p.spawn_child("speaker");
                    speakerlist::start(&speaker, &c);
                    let terminated = {
                        let exited = Box::pin(speaker.wait_exit());
                        let term = Box::pin(p.terminated());
                        matches!(
                            futures::future::select(exited, term).await,
                            futures::future::Either::Right(_)
                        )
                    };
                    if terminated {
                        p.terminate(speaker.pid());
                        speaker.wait_exit().await;
                        p.exit(0);
                        return;
                    }
                    p.sleep(RESTART_BACKOFF).await;
                }
            });
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspicion_timeout_follows_memberlist() {
        let s = Duration::from_secs(1);
        // max(1, log10(n)): 4 s up to 10 members, then growing with log10.
        for n in [0, 1, 3, 5, 7, 10] {
            assert_eq!(suspicion_timeout(4, n, s), Duration::from_secs(4), "n={n}");
        }
        assert_eq!(suspicion_timeout(4, 100, s), Duration::from_secs(8));
        assert_eq!(suspicion_timeout(4, 20, s), Duration::from_millis(5204));
        // Starts at 6x the minimum and shrinks with confirmations toward the minimum.
        let (min, max) = (Duration::from_secs(4), Duration::from_secs(24));
        assert_eq!(suspicion_remaining(min, max, 2, 0), max);
        assert_eq!(
            suspicion_remaining(min, max, 2, 1),
            Duration::from_millis(11381)
        );
        assert_eq!(suspicion_remaining(min, max, 2, 2), min);
        assert_eq!(suspicion_remaining(min, max, 2, 5), min);
        // No confirmations expected (fewer than k + 2 members): the minimum at once.
        assert_eq!(suspicion_remaining(min, max, 0, 0), min);
    }

    #[test]
    fn retransmit_limit_follows_memberlist() {
        assert_eq!(retransmit_limit(4, 3), 4);
        assert_eq!(retransmit_limit(4, 9), 4);
        assert_eq!(retransmit_limit(4, 10), 8);
    }

    #[test]
    fn announcer_ordering_is_sha256_of_node_hash_ip() {
        let nodes: Vec<String> = ["n1", "n2", "n3", "n4", "n5"].map(String::from).to_vec();
        let ip = "192.168.10.1";
        let order = announce_order(&nodes, ip);
        // Independent check: the hex digests sorted.
        let mut hex: Vec<(String, &str)> = nodes
            .iter()
            .map(|n| {
                let d = Sha256::digest(format!("{n}#{ip}").as_bytes());
                (d.iter().map(|b| format!("{b:02x}")).collect(), n.as_str())
            })
            .collect();
        hex.sort();
        assert_eq!(
            order,
            hex.iter().map(|(_, n)| n.to_string()).collect::<Vec<_>>()
        );
        // Pure: the input order does not matter, and removing a non-first candidate keeps the first.
        let mut rev = nodes.clone();
        rev.reverse();
        assert_eq!(announce_order(&rev, ip), order);
        // The memoised first is the ordering's first, for any subset and a shared memo.
        let mut memo = KeyMemo::new();
        for mask in 0u32..(1 << nodes.len()) {
            let sub: Vec<String> = (0..nodes.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| nodes[i].clone())
                .collect();
            for ip in [ip, "192.168.10.7"] {
                assert_eq!(
                    first_in_order(&sub, ip, &mut memo),
                    announce_order(&sub, ip).first()
                );
            }
        }
        let without_last: Vec<String> = order[..4].to_vec();
        assert_eq!(announce_order(&without_last, ip)[0], order[0]);
        // Different IPs spread over nodes.
        let firsts: std::collections::BTreeSet<String> = (1..=40)
            .map(|i| announce_order(&nodes, &format!("192.168.10.{i}"))[0].clone())
            .collect();
        assert!(firsts.len() >= 3, "{firsts:?}");
    }
}
