//! `excess-released` and `handshake-aborted-when-not-excess`: which of a node's IPs are in excess, as upstream counts and picks them,
//! computed from ground truth (the cloud's assignments, with their interfaces, and the IPs the
//! node's pods hold), and how long each has stayed a release candidate after faults stopped.
//!
//! Independence: reads no model type; the excess count and the candidate pick are this file's own
//! transcription of upstream's rules (docs/upstream/cilium.md §3.2 and §3.1: cilium/cilium
//! `pkg/ipam/node.go` calculateExcessIPs l. 347-378 and `pkg/aws/eni/node.go` PrepareIPRelease
//! l. 131-198 @ed90dd5); calls no model function.

use super::super::{RECOVERY_US, RELEASE_PIPELINE_US};
use sim::{FaultKind, Short};
use std::collections::{BTreeMap, BTreeSet};

/// The per-node IPAM limits the scenario configures.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watermarks {
    /// `pre-allocate`.
    pub(crate) pre: usize,
    /// `min-allocate` (0: none).
    pub(crate) min: usize,
    /// `max-above-watermark`.
    pub(crate) maw: usize,
    /// `max-allocate` (0: none). Upstream's excess count does not read it (calculateExcessIPs
    /// takes pre-allocate, min-allocate and max-above-watermark only, node.go:347-378 @ed90dd5);
    /// only the need for more IPs is capped by it (calculateNeededIPs, l. 327-345).
    pub(crate) max: usize,
}

/// How many of `available` IPs are in excess with `used` of them in use: while `used` is within
/// `min-allocate + max-above-watermark`, none when `available` is too, and everything above it
/// when pre-allocate asks for no more; otherwise what exceeds used + pre-allocate +
/// max-above-watermark (never negative).
pub(super) fn excess_count(available: usize, used: usize, w: Watermarks) -> usize {
    let floor = w.min + w.maw;
    if used <= floor && available <= floor {
        return 0;
    }
    if used <= floor && used + w.pre <= floor {
        return available - floor;
    }
    available.saturating_sub(used + w.pre + w.maw)
}

/// The release candidates among `assigned` (IP -> interface) when `excess` are in excess and
/// `in_use` tells the IPs pods hold: on each interface, in interface-name order, its free
/// addresses in address order; the first interface on which `min(free, excess)` is strictly the
/// largest gives its first `min(free, excess)` free addresses.
pub(super) fn candidates(
    assigned: &BTreeMap<Short, Short>,
    in_use: impl Fn(&Short) -> bool,
    excess: usize,
) -> Vec<Short> {
    if excess == 0 {
        return Vec::new(); // most calls
    }
    // (interface, its free addresses): a node has a few interfaces, a linear search finds one.
    let mut free: Vec<(Short, Vec<Short>)> = Vec::new();
    for (ip, eni) in assigned.iter().filter(|(ip, _)| !in_use(ip)) {
        match free.iter_mut().find(|(e, _)| e == eni) {
            Some((_, ips)) => ips.push(*ip),
            None => free.push((*eni, vec![*ip])),
        }
    }
    free.sort_by_key(|(e, _)| *e);
    let mut best: &[Short] = &[];
    for (_, ips) in &free {
        let n = ips.len().min(excess);
        if n > best.len() {
            best = &ips[..n];
        }
    }
    best.to_vec()
}

/// Whether a fault can make the leading operator's cloud calls fail (and so leave a node's pool
/// maintainer in its backoff): any fault naming the cloud (its service failing, a cut between it
/// and others), and an operator cut off from everything, delayed or paused. (A cut between an
/// operator and the API server alone cannot.)
fn can_fail_cloud_calls(f: &FaultKind, operators: &[Short]) -> bool {
    use FaultKind::*;
    let nodes = f.nodes();
    if nodes.contains(&"cloud") {
        return true;
    }
    let operator = nodes
        .iter()
        .any(|n| operators.iter().any(|o| o.as_str() == *n));
    operator && matches!(f, Isolate { .. } | Latency { .. } | Pause { .. })
}

/// How long each node's release candidates have stayed candidates after faults stopped.
pub(super) struct Progress {
    operators: Vec<Short>,
    /// When faults stopped (true µs).
    liveness_at: Option<u64>,
    /// Faults (by schedule position) that can fail the operator's cloud calls, while active.
    trouble: BTreeSet<u32>,
    /// When the last of those ended (true µs).
    trouble_end: u64,
    /// Per node index: candidate IP -> since when (true µs) it has been one, with no change of
    /// the node's addresses in the cloud.
    since: Vec<BTreeMap<Short, u64>>,
    /// Per node index: IP -> when (true µs) it last stopped being a candidate (for
    /// `handshake-aborted-when-not-excess`; an IP that is a candidate again is not in it).
    left: Vec<BTreeMap<Short, u64>>,
}

/// A candidate that stayed one past its deadline.
pub(super) struct Overdue {
    /// The IP.
    pub(super) ip: Short,
    /// Since when it has been a candidate with the node's addresses unchanged.
    pub(super) since: u64,
    /// When its clock started (the later of `since`, recovery after faults stop, and the
    /// maintainer's longest backoff after the last fault that could fail cloud calls).
    pub(super) start: u64,
}

impl Progress {
    pub(super) fn new(nodes: usize, operators: Vec<Short>) -> Self {
        Progress {
            operators,
            liveness_at: None,
            trouble: BTreeSet::new(),
            trouble_end: 0,
            since: (0..nodes).map(|_| BTreeMap::new()).collect(),
            left: (0..nodes).map(|_| BTreeMap::new()).collect(),
        }
    }

    /// Fault `id` started.
    pub(super) fn fault_start(&mut self, id: u32, f: &FaultKind) {
        if can_fail_cloud_calls(f, &self.operators) {
            self.trouble.insert(id);
        }
    }

    /// Fault `id` ended at `t_us`.
    pub(super) fn fault_end(&mut self, id: u32, t_us: u64) {
        if self.trouble.remove(&id) {
            self.trouble_end = self.trouble_end.max(t_us);
        }
    }

    /// Faults stopped at `t_us`.
    pub(super) fn liveness(&mut self, t_us: u64) {
        self.liveness_at = Some(t_us);
    }

    /// Whether candidates are followed (after faults stopped).
    pub(super) fn following(&self) -> bool {
        self.liveness_at.is_some()
    }

    /// Node `i`'s candidates are now `fresh` (at `t_us`); with `reset`, its addresses changed,
    /// and every candidate's clock starts again.
    pub(super) fn refresh(&mut self, i: usize, t_us: u64, fresh: Vec<Short>, reset: bool) {
        let since = &mut self.since[i];
        let left = &mut self.left[i];
        for ip in since.keys().filter(|ip| !fresh.contains(ip)) {
            left.insert(*ip, t_us);
        }
        for ip in &fresh {
            left.remove(ip);
        }
        if reset {
            since.clear();
        }
        since.retain(|ip, _| fresh.contains(ip));
        for ip in fresh {
            since.entry(ip).or_insert(t_us);
        }
    }

    /// Whether `ip` of node `i` is a release candidate now (none) or, if not, since when it has
    /// not been one (0: not since faults stopped).
    pub(super) fn not_candidate_since(&self, i: usize, ip: &Short) -> Option<u64> {
        match self.since[i].contains_key(ip) {
            true => None,
            false => Some(self.left[i].get(ip).copied().unwrap_or(0)),
        }
    }

    /// The first of node `i`'s candidates whose deadline has passed at `now_us`.
    pub(super) fn overdue(&self, i: usize, now_us: u64) -> Option<Overdue> {
        let l = self.liveness_at?;
        let floor = (l + RECOVERY_US).max(self.trouble_end + super::super::BACKOFF_US);
        self.since[i]
            .iter()
            .map(|(ip, since)| Overdue {
                ip: *ip,
                since: *since,
                start: (*since).max(floor),
            })
            .find(|o| now_us >= o.start + RELEASE_PIPELINE_US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// upstream's conformance vectors (pkg/ipam/node_test.go l. 43-54 @ed90dd5):
    /// (available, used, pre, min, maw) -> excess.
    #[test]
    fn the_excess_count_meets_upstreams_vectors() {
        let vectors = [
            (0, 0, 0, 16, 0, 0),
            (15, 0, 8, 16, 8, 0),
            (17, 0, 8, 16, 0, 1),
            (20, 0, 8, 16, 4, 0),
            (21, 0, 8, 0, 4, 9),
            (20, 0, 8, 20, 8, 0),
            (16, 1, 8, 16, 8, 0),
            (20, 4, 8, 17, 8, 0),
            (20, 4, 8, 0, 0, 8),
            (20, 4, 8, 0, 8, 0),
        ];
        for (a, u, pre, min, maw, want) in vectors {
            let w = Watermarks {
                pre,
                min,
                maw,
                max: 0,
            };
            assert_eq!(excess_count(a, u, w), want, "{a} {u} {pre} {min} {maw}");
        }
    }

    #[test]
    fn candidates_come_from_the_interface_with_the_most_to_give() {
        let s = |x: &str| Short::new(x).unwrap();
        let assigned: BTreeMap<Short, Short> = [
            ("10.0.0.1", "eni-0"),
            ("10.0.0.2", "eni-0"),
            ("10.0.0.3", "eni-1"),
            ("10.0.0.4", "eni-1"),
            ("10.0.0.5", "eni-1"),
        ]
        .iter()
        .map(|(ip, e)| (s(ip), s(e)))
        .collect();
        // One in excess: both interfaces could give it; the first one does.
        assert_eq!(candidates(&assigned, |_| false, 1), vec![s("10.0.0.1")]);
        // Three: eni-1 gives three, eni-0 two.
        let three = candidates(&assigned, |_| false, 3);
        assert_eq!(three, vec![s("10.0.0.3"), s("10.0.0.4"), s("10.0.0.5")]);
        // IPs in use are never candidates.
        let used = s("10.0.0.3");
        let two = candidates(&assigned, |ip| *ip == used, 3);
        assert_eq!(two, vec![s("10.0.0.1"), s("10.0.0.2")]);
    }
}
