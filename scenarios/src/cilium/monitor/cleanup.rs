//! The liveness invariants, checked once faults have stopped: `handshake-entries-clear`,
//! `handshake-aborted-when-not-excess`, `released-entries-clear`, `pods-get-ips` and
//! `excess-released`.
//!
//! Independence: the entries are those of the CiliumNodes the API server stores (`api.rs`);
//! whether an IP left its node is the cloud's record; which IPs pods hold, the monitor's own
//! record of pod events; release candidates, `excess.rs`. Reads the model's state-string
//! constants; calls no model function.

use super::super::{ABORT_BOUND_US, CLEANUP_BOUND_US, PODS_BOUND_US, RELEASE_PIPELINE_US};
use super::api::ReleaseIps;
use super::{CiliumMonitor, CLEAN_UP_RUNS, EXCESS_AGAIN};
use crate::cilium::invariants::{
    EXCESS_RELEASED, HANDSHAKE_ABORTED_WHEN_NOT_EXCESS, HANDSHAKE_ENTRIES_CLEAR, PODS_GET_IPS,
    RELEASED_ENTRIES_CLEAR,
};
use model::cilium::{DO_NOT_RELEASE, MARKED, READY, RELEASED};
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured, Short};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The `release-ips` entries of every CiliumNode, and per IP the events after which its entry
/// must go. An entry comes back legitimately only through a new mark (which forgets them); a
/// new leader that adopts an entry continues it.
pub(super) struct Entries {
    /// Per node index: (IP, its state), as the API server holds `release-ips` now.
    now: Vec<ReleaseIps>,
    /// Per node index: IP -> when an operator last marked it.
    marked: Vec<BTreeMap<Short, u64>>,
    /// Per node index: IP -> when the leading operator aborted its handshake, since its last mark.
    aborted: Vec<BTreeMap<Short, u64>>,
    /// Per node index: IP -> when its entry first read `do-not-release`, since its last mark.
    refused: Vec<BTreeMap<Short, u64>>,
}

impl Entries {
    pub(super) fn new(nodes: usize) -> Self {
        Entries {
            now: (0..nodes).map(|_| ReleaseIps::from([])).collect(),
            marked: (0..nodes).map(|_| BTreeMap::new()).collect(),
            aborted: (0..nodes).map(|_| BTreeMap::new()).collect(),
            refused: (0..nodes).map(|_| BTreeMap::new()).collect(),
        }
    }

    /// Node `i`'s CiliumNode was written at `t_us`; its `release-ips` is now `fresh`.
    pub(super) fn on_write(&mut self, i: usize, fresh: ReleaseIps, t_us: u64) {
        if Rc::ptr_eq(&fresh, &self.now[i]) {
            return; // unchanged (most writes)
        }
        for (ip, state) in fresh.iter() {
            if state.as_str() == DO_NOT_RELEASE {
                self.refused[i].entry(*ip).or_insert(t_us);
            }
        }
        self.now[i] = fresh;
    }

    /// An operator marked `ip` of node `i` at `t_us`.
    pub(super) fn mark(&mut self, i: usize, ip: Short, t_us: u64) {
        self.marked[i].insert(ip, t_us);
        self.aborted[i].remove(&ip);
        self.refused[i].remove(&ip);
    }

    /// The leading operator aborted the handshake of `ip` of node `i` at `t_us`.
    pub(super) fn abort(&mut self, i: usize, ip: Short, t_us: u64) {
        self.aborted[i].insert(ip, t_us);
    }
}

/// A failure of `invariant`, measured at `value_us` against `bound_us`.
pub(super) fn liveness(
    invariant: &crate::invariant::Invariant,
    explanation: String,
    value_us: u64,
    bound_us: u64,
) -> Failure {
    Failure {
        invariant: invariant.name,
        kind: Kind::Liveness,
        node: None,
        explanation,
        measured: Measured::bounded(value_us, bound_us),
    }
}

impl CiliumMonitor {
    /// The liveness checks due at `now_us` (none before faults stop).
    pub(super) fn liveness_checks(&mut self, now_us: u64) -> Option<Failure> {
        let l = self.liveness_at?;
        if let Some(f) = self.leader_without_ipam(l, now_us) {
            return Some(f);
        }
        if let Some(f) = self.entries_overdue(l, now_us) {
            return Some(f);
        }
        if let Some(f) = self.handshakes_not_aborted(l, now_us) {
            return Some(f);
        }
        if let Some(f) = self.stuck_released(l, now_us) {
            return Some(f);
        }
        if !self.pods_checked && now_us >= l + PODS_BOUND_US {
            self.pods_checked = true;
            if let Some(f) = self.pods_waiting(now_us) {
                return Some(f);
            }
        }
        self.excess_overdue(now_us)
    }

    /// Why entry `ip` (in `state`) of node `i` must go, and since when (none: it may stay): its
    /// IP left the node in the cloud (and was not marked since), the agent refused its release,
    /// or the leading operator aborted it. (A `released` entry whose IP came back is
    /// `released-entries-clear`'s.)
    fn entry_due(&self, i: usize, ip: &Short, state: Short) -> Option<(u64, String)> {
        let node = self.names[i];
        let e = &self.entries;
        if !self.nodes[i].assigned.contains_key(ip) {
            let left = self.unassigned.get(&(node, *ip)).map_or(0, |u| u.0);
            let marked = e.marked[i].get(ip).copied().unwrap_or(0);
            let why = match left {
                0 => format!("{ip} was never assigned to {node}"),
                t => format!("{ip} left {node} in the cloud at {}", secs(t)),
            };
            return Some((left.max(marked), why));
        }
        if state.as_str() == RELEASED {
            return None;
        }
        if let Some(t) = e.refused[i].get(ip) {
            return Some((*t, format!("the agent refused its release at {}", secs(*t))));
        }
        let t = *e.aborted[i].get(ip)?;
        Some((
            t,
            format!("the leading operator aborted its release at {}", secs(t)),
        ))
    }

    /// `handshake-entries-clear`: the first entry, on a node whose agent and operators run all
    /// their tasks, that should have gone by `now_us`.
    fn entries_overdue(&self, l: u64, now_us: u64) -> Option<Failure> {
        for i in 0..self.k8s_nodes {
            if !self.all_tasks_run(i) {
                continue;
            }
            for (ip, state) in self.entries.now[i].iter() {
                let Some((due, why)) = self.entry_due(i, ip, *state) else {
                    continue;
                };
                let since = due.max(l);
                if now_us < since + CLEANUP_BOUND_US {
                    continue;
                }
                return Some(liveness(
                    &HANDSHAKE_ENTRIES_CLEAR,
                    format!(
                        "{}'s CiliumNode still holds '{state}' for {ip} at {}: {why}, and faults stopped at {} ({} bound)",
                        self.names[i],
                        secs(now_us),
                        secs(l),
                        secs(CLEANUP_BOUND_US)
                    ),
                    now_us - since,
                    CLEANUP_BOUND_US,
                ));
            }
        }
        None
    }

    /// `handshake-aborted-when-not-excess`: the first `marked-for-release` or `ready-for-release`
    /// entry, on a node whose agent and operators run all their tasks, whose IP the cloud still
    /// assigns to the node but which has not been a release candidate (`excess.rs`) for the
    /// bound, counted from faults stopping at the earliest. Entries the leading operator aborted
    /// or the agent refused since their last mark are `handshake-entries-clear`'s.
    fn handshakes_not_aborted(&self, l: u64, now_us: u64) -> Option<Failure> {
        for i in 0..self.k8s_nodes {
            if !self.all_tasks_run(i) {
                continue;
            }
            let e = &self.entries;
            for (ip, state) in self.entries.now[i].iter() {
                if !matches!(state.as_str(), MARKED | READY)
                    || !self.nodes[i].assigned.contains_key(ip)
                    || e.aborted[i].contains_key(ip)
                    || e.refused[i].contains_key(ip)
                {
                    continue;
                }
                let Some(left) = self.progress.not_candidate_since(i, ip) else {
                    continue; // still a candidate: `excess-released`'s
                };
                let since = left.max(l);
                if now_us < since + ABORT_BOUND_US {
                    continue;
                }
                let v = &self.nodes[i];
                let k =
                    super::excess::excess_count(v.assigned.len(), v.pod_ips.len(), self.watermarks);
                let when = match left {
                    0 => "since faults stopped".to_string(),
                    t => format!("since {}", secs(t)),
                };
                return Some(liveness(
                    &HANDSHAKE_ABORTED_WHEN_NOT_EXCESS,
                    format!(
                        "{node}'s CiliumNode still holds '{state}' for {ip} at {}, though {ip} has not been a release candidate {when} ({k} of {node}'s {} IPs in excess, {} used by pods) and the leading operator never aborted its release; faults stopped at {} ({} bound)",
                        secs(now_us),
                        v.assigned.len(),
                        v.pod_ips.len(),
                        secs(l),
                        secs(ABORT_BOUND_US),
                        node = self.names[i],
                    ),
                    now_us - since,
                    ABORT_BOUND_US,
                ));
            }
        }
        None
    }

    /// `released-entries-clear`: an agent's `released` entry for an IP the cloud holds for that
    /// node again (it gave the address back after the release) never clears while the IP stays in
    /// the pool, and the IP can never be used (upstream issue #39981). Checked on nodes whose agent
    /// and the operators run all their tasks, for each entry once the bound has run from the later
    /// of faults stopping and the cloud's last assignment of the IP to the node (the clean-up can
    /// act only once the IP is back); measured for the entry that has waited longest.
    ///
    /// Each IP is told as a release candidate again ([`EXCESS_AGAIN`]) when, by the monitor's own
    /// excess count, it is on its node's release list now: newer upstream's clean-up skips such
    /// an IP.
    fn stuck_released(&self, l: u64, now_us: u64) -> Option<Failure> {
        // No entry is due before the bound has run from faults stopping (each one's clock starts
        // then at the earliest): most of the liveness phase needs no look at the entries.
        if now_us < l + PODS_BOUND_US {
            return None;
        }
        let mut stuck = Vec::new();
        let mut longest = 0;
        for (i, v) in self.nodes.iter().enumerate() {
            if !self.all_tasks_run(i) {
                continue;
            }
            // Released entries for IPs the cloud gives the node again (cheap test first).
            let released = v
                .agent_state
                .iter()
                .filter(|(ip, (s, _))| s.as_str() == RELEASED && v.assigned.contains_key(*ip));
            for (ip, _) in released {
                let back = self.assigned.last(self.names[i], *ip).unwrap_or(0);
                let since = back.max(l);
                if now_us >= since + PODS_BOUND_US {
                    longest = longest.max(now_us - since);
                    // By the monitor's own count: is the IP on its node's release list again?
                    let again = match self.progress.not_candidate_since(i, ip) {
                        None => format!(" {EXCESS_AGAIN}"),
                        Some(_) => String::new(),
                    };
                    stuck.push(format!("{ip} on {}{again}", self.names[i]));
                }
            }
        }
        (!stuck.is_empty()).then(|| liveness(
            &RELEASED_ENTRIES_CLEAR,
            format!(
                "{} after faults stopped (or after the cloud gave the IP back, if later), released entries remain for IPs the cloud has given back to the same node, which the agents therefore never use: {}{}",
                secs(PODS_BOUND_US),
                stuck.join(", "),
                if self.cleans_readded { CLEAN_UP_RUNS } else { "" }
            ),
            longest,
            PODS_BOUND_US,
        ))
    }

    /// `pods-get-ips`: pods that have waited for the bound on nodes with room: pods hold fewer
    /// IPs than the interfaces can, and fewer than `max-allocate` when it is set (upstream's
    /// calculateNeededIPs caps the need so that the pool stays within it, node.go:327-345
    /// @ed90dd5: a node whose pods hold max-allocate IPs gets no more).
    /// A node whose pods held all it has room for less than the kubelet's longest retry wait ago
    /// does not count: a waiting pod takes a freed IP at its next sandbox attempt.
    fn pods_waiting(&self, now_us: u64) -> Option<Failure> {
        let room = self.room();
        let retry = model::cilium::kubelet::POD_RETRY_MAX_US;
        let mut waiting = Vec::new();
        let mut longest = 0;
        for (pod, (n, since)) in &self.pending {
            let i = self.index(*n).expect("a pod's node is a node");
            if *since + PODS_BOUND_US > now_us || !self.all_tasks_run(i) {
                continue;
            }
            let v = &self.nodes[i];
            if v.pod_ips.len() >= room || v.full_until + retry >= now_us {
                continue; // no room (the node cannot, or may not, hold another IP), or not for long
            }
            // IPs of the node that no pod uses but that sit in a handshake state.
            let held: Vec<&Short> = v
                .agent_state
                .iter()
                .filter(|(ip, (s, _))| {
                    matches!(s.as_str(), MARKED | READY) && !v.pod_ips.contains_key(*ip)
                })
                .map(|(ip, _)| ip)
                .collect();
            let why = match held.is_empty() {
                true => format!("{n} holds {} of {room} IPs", v.pod_ips.len()),
                false => format!("{held:?} are held in a handshake state"),
            };
            waiting.push(format!("{pod} on {n} (since {}; {why})", secs(*since)));
            longest = longest.max(now_us - since);
        }
        (!waiting.is_empty()).then(|| {
            liveness(
                &PODS_GET_IPS,
                format!(
                    "{} after faults stopped, pods still wait for an IP: {}",
                    secs(PODS_BOUND_US),
                    waiting.join(", ")
                ),
                longest,
                PODS_BOUND_US,
            )
        })
    }

    /// `excess-released`: the first release candidate, on a node whose agent and operators run
    /// all their tasks, that the cloud still assigns past its deadline.
    fn excess_overdue(&self, now_us: u64) -> Option<Failure> {
        for i in 0..self.k8s_nodes {
            if !self.all_tasks_run(i) {
                continue;
            }
            let Some(o) = self.progress.overdue(i, now_us) else {
                continue;
            };
            let v = &self.nodes[i];
            let k = super::excess::excess_count(v.assigned.len(), v.pod_ips.len(), self.watermarks);
            return Some(liveness(
                &EXCESS_RELEASED,
                format!(
                    "{ip} of {node} has been a release candidate since {} ({k} of {node}'s {} IPs in excess, {} used by pods), with no change of {node}'s addresses, and is still assigned at {}: {} after its clock started at {}",
                    secs(o.since),
                    v.assigned.len(),
                    v.pod_ips.len(),
                    secs(now_us),
                    secs(RELEASE_PIPELINE_US),
                    secs(o.start),
                    ip = o.ip,
                    node = self.names[i],
                ),
                now_us - o.start,
                RELEASE_PIPELINE_US,
            ));
        }
        None
    }
}
