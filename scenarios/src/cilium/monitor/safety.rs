//! The safety invariants: `no-release-in-use`, `release-acknowledged`,
//! `agent-allocates-from-pool`, `agent-answers-truthfully`, `operator-marks-unused`.
//!
//! Independence: which IPs are in use is the monitor's own record of the pods' IPs (pod events);
//! what a decision's CiliumNode version held is what the API server stored (`api.rs`); the
//! operator's monotonic clock is followed from its rate changes. Reads the model's events and
//! state-string constants and `RELEASE_DELAY`; calls no model function.

use super::{short, CiliumMonitor, NodeIp, DROPPED_RELEASED};
use crate::cilium::invariants::{
    AGENT_ALLOCATES_FROM_POOL, AGENT_ANSWERS_TRUTHFULLY, NO_RELEASE_IN_USE, OPERATOR_MARKS_UNUSED,
    RELEASE_ACKNOWLEDGED,
};
use model::cilium::{MARKED, READY, RELEASED, RELEASE_DELAY};
use sim::event::Record;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured, NodeIx, Short};
use std::collections::BTreeMap;

/// A failure of `invariant` about `node`, with its measure (these invariants have no bound, save
/// `release-acknowledged`, which gives its own).
fn safety(
    invariant: &crate::invariant::Invariant,
    node: Option<NodeIx>,
    explanation: String,
    measured: Option<Measured>,
) -> Failure {
    Failure {
        invariant: invariant.name,
        kind: Kind::Safety,
        node,
        explanation,
        measured,
    }
}

impl CiliumMonitor {
    /// The cloud unassigned `ip` from `instance` (`no-release-in-use`: no pod on it uses `ip`).
    pub(super) fn unassign(
        &mut self,
        rec: &Record,
        instance: &str,
        ip: Short,
        client: &str,
    ) -> Option<Failure> {
        self.reached.insert("ip-released");
        let key = (short(instance), ip);
        let i = self.index(key.0);
        if let Some(i) = i {
            self.nodes[i].assigned.remove(&key.1);
            self.refresh_excess(i, rec.t_us, true);
        }
        let deposed = self.deposed(client);
        self.unassigned
            .insert(key, (rec.t_us, client.to_string(), deposed.clone()));
        let i = i?;
        let (pod, since) = *self.nodes[i].pod_ips.get(&key.1)?;
        let view = match self.decisions.get(&key) {
            Some((t, rv, _)) => match self.api.version(i, *rv).filter(|v| v.status_write) {
                Some(v) => format!(
                    "the operator decided at {} from {instance}'s status at resourceVersion {rv}, written by {} at {} ({} before the pod got the IP), whose used IPs did not include {ip}",
                    secs(*t),
                    v.client,
                    secs(v.t_us),
                    secs(since.saturating_sub(v.t_us))
                ),
                None => format!("the operator decided at {} from {instance}'s status at resourceVersion {rv}, whose used IPs did not include {ip}", secs(*t)),
            },
            None => "the operator never recorded a decision for it".to_string(),
        };
        Some(safety(
            &NO_RELEASE_IN_USE,
            Some(i as NodeIx),
            format!(
                "{client} unassigned {ip} from {instance} at {} while pod {pod} used it (since {}, {} earlier): {view}{}",
                secs(rec.t_us),
                secs(since),
                secs(rec.t_us - since),
                deposed
            ),
            Measured::unbounded(rec.t_us - since),
        ))
    }

    /// The agent gave `pod` the IP `ip` (`agent-allocates-from-pool`): the cloud still assigns it
    /// to the node, and the agent's own release state for it is not a handshake state.
    pub(super) fn on_pod_ip(&mut self, rec: &Record, pod: Short, ip: Short) -> Option<Failure> {
        let t = rec.t_us;
        let i = rec.node as usize;
        let node = self.names[i];
        self.pending.remove(&pod);
        let key = (node, ip);
        let view = &mut self.nodes[i];
        view.pod_ips.insert(ip, (pod, t));
        let state = view.agent_state.get(&ip).copied();
        let gone_us = self.unassigned.get(&key).map(|u| t - u.0);
        if !view.assigned.contains_key(&ip) {
            let gone = match self.unassigned.get(&key) {
                Some((tu, by, deposed)) => {
                    format!(", {by} having unassigned it at {}{deposed}", secs(*tu))
                }
                None => String::new(),
            };
            let erased = match self.entry_removed.get(&key) {
                Some((te, prev)) => {
                    // The last status write of the node at or before the removal.
                    let by = self
                        .api
                        .last_status_write(i, *te)
                        .map(|(tw, c)| format!(" by {c}'s status write at {}", secs(tw)))
                        .unwrap_or_default();
                    // The operator's own reason, when it dropped a `released` state for being
                    // back in the pool after the unassign (newer upstream's #39981 clean-up).
                    let unassigned_us = self.unassigned.get(&key).map_or(0, |u| u.0);
                    let after = |m: &BTreeMap<NodeIp, (u64, Short)>| {
                        m.get(&key)
                            .filter(|(tb, _)| *tb >= unassigned_us && tb <= te)
                            .copied()
                    };
                    let why = match (after(&self.back_in_pool), after(&self.released_dropped)) {
                        (Some((tb, op)), _) => format!(
                            ", after {op} dropped its 'released' state at {} for the IP being in the pool it checked (the #39981 clean-up)",
                            secs(tb)
                        ),
                        // The operator learned the unassign succeeded, then dropped what it
                        // learned before a status write carried it.
                        (None, Some((tb, op))) => format!(
                            ", after {op} {DROPPED_RELEASED} at {} for the IP no longer being on its release list",
                            secs(tb)
                        ),
                        _ => String::new(),
                    };
                    format!("; the agent's '{prev}' entry for it had been removed from release-ips{by}{why} (seen at {}), so the agent took it for an aborted release", secs(*te))
                }
                None => String::new(),
            };
            return Some(safety(
                &AGENT_ALLOCATES_FROM_POOL,
                Some(rec.node),
                format!("the agent on {node} gave pod {pod} the IP {ip}, which is no longer assigned to {node} in the cloud{gone}{erased}"),
                gone_us.and_then(Measured::unbounded),
            ));
        }
        if let Some((s, since)) =
            state.filter(|(s, _)| matches!(s.as_str(), MARKED | READY | RELEASED))
        {
            return Some(safety(
                &AGENT_ALLOCATES_FROM_POOL,
                Some(rec.node),
                format!("the agent on {node} gave pod {pod} the IP {ip} while its own release state for it was {s} (since {})", secs(since)),
                Measured::unbounded(t - since),
            ));
        }
        None
    }

    /// An entry of the agent's `release-ips` view changed (`agent-answers-truthfully`: no
    /// ready-for-release for an IP a pod on the node holds).
    pub(super) fn on_agent_state(
        &mut self,
        rec: &Record,
        ip: Short,
        state: Option<Short>,
    ) -> Option<Failure> {
        let i = rec.node as usize;
        let node = self.names[i];
        let view = &mut self.nodes[i];
        let Some(s) = state else {
            if let Some((prev, _)) = view.agent_state.remove(&ip) {
                self.entry_removed.insert((node, ip), (rec.t_us, prev));
            }
            return None;
        };
        let since = match view.agent_state.get(&ip) {
            Some((old, since)) if *old == s => *since,
            _ => rec.t_us,
        };
        view.agent_state.insert(ip, (s, since));
        let (pod, since) = view.pod_ips.get(&ip).filter(|_| s.as_str() == READY)?;
        let agent = match self.agents[i] {
            Some((pid, t)) => format!(" ({node}:{pid}, started at {})", secs(t)),
            None => String::new(),
        };
        Some(safety(
            &AGENT_ANSWERS_TRUTHFULLY,
            Some(rec.node),
            format!(
                "the agent on {node}{agent} answered ready-for-release for {ip}, which pod {pod} has held since {}",
                secs(*since)
            ),
            Measured::unbounded(rec.t_us - since),
        ))
    }

    /// An operator marked `ip` of node `n` deciding on version `rv` (`operator-marks-unused`:
    /// that version does not list it as used).
    pub(super) fn on_mark(
        &mut self,
        rec: &Record,
        n: Short,
        ip: Short,
        rv: u64,
    ) -> Option<Failure> {
        let key = (n, ip);
        self.marked.insert(key);
        let i = self.index(n)?;
        self.entries.mark(i, ip, rec.t_us);
        if !self.api.used_at(i, rv, &ip) {
            return None;
        }
        let version = self.api.version(i, rv);
        let written = match version.filter(|v| v.status_write) {
            Some(v) => format!(", written by {} at {}", v.client, secs(v.t_us)),
            None => String::new(),
        };
        Some(safety(
            &OPERATOR_MARKS_UNUSED,
            Some(rec.node),
            format!(
                "{} marked {ip} of {n} for release at {} although {n}'s CiliumNode at resourceVersion {rv}, which it decided on{written}, lists {ip} as used",
                self.names[rec.node as usize],
                secs(rec.t_us)
            ),
            version.and_then(|v| Measured::unbounded(rec.t_us - v.t_us)),
        ))
    }

    /// An operator decided to unassign `ip` of a node deciding on version `rv`
    /// (`release-acknowledged`: with the handshake, that version holds ready-for-release for it,
    /// and the operator's IPAM has run for the release delay on its monotonic clock).
    pub(super) fn on_release(
        &mut self,
        rec: &Record,
        (n, ip): NodeIp,
        rv: u64,
        handshake: bool,
    ) -> Option<Failure> {
        let i = self.index(n)?;
        if !handshake {
            return None; // bug `cilium-no-handshake`: no states at all
        }
        let op = rec.node as usize;
        let state = self.api.release_state_at(i, rv, &ip);
        let up_us = self.ipam_started[op].map(|s| self.clocks[op].read(rec.t_us) - s);
        let delay_us = RELEASE_DELAY.as_micros() as u64;
        let acked = state.is_some_and(|s| s.as_str() == READY);
        if acked && up_us.is_some_and(|u| u >= delay_us) {
            return None;
        }
        let seen = state.map_or("no entry".to_string(), |s| format!("'{s}'"));
        let up = up_us.map_or("no IPAM running".to_string(), |u| {
            format!("its IPAM had run {} on its monotonic clock", secs(u))
        });
        Some(safety(
            &RELEASE_ACKNOWLEDGED,
            Some(rec.node),
            format!(
                "{} decided at {} to unassign {ip} of {n}: {n}'s CiliumNode at resourceVersion {rv}, which it decided on, holds {seen} for it, and {up} (needs ready-for-release and {})",
                self.names[op],
                secs(rec.t_us),
                secs(delay_us)
            ),
            // Held to the delay when the answer was there; otherwise the missing answer broke it.
            up_us.and_then(|u| match acked {
                true => Measured::bounded(u, delay_us),
                false => Measured::unbounded(u),
            }),
        ))
    }

    /// An operator dropped the handshake of `ip` of node `n`: the leader's aborts call an entry
    /// off (`handshake-entries-clear`).
    pub(super) fn on_abort(&mut self, rec: &Record, (n, ip): NodeIp) {
        let Some(i) = self.index(n) else {
            return;
        };
        let host = self.names[rec.node as usize];
        let leads = self.leader.as_ref().is_some_and(|(l, since)| {
            l.split(':').next() == Some(host.as_str()) && *since <= rec.t_us
        });
        if leads {
            self.entries.abort(i, ip, rec.t_us);
        }
    }
}
