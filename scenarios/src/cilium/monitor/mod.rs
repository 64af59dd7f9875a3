//! The Cilium monitor: ground truth from the cloud's and agents' events, checked against the
//! invariants of the table in the module documentation of `scenarios::cilium`.

use super::PODS_BOUND_US;
use model::cilium::CiliumEvent;
use model::cilium::{DO_NOT_RELEASE, KIND, MARKED, READY, RELEASED, RELEASE_DELAY};
use sim::event::{Event, Record};
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Monitor, NodeIx, Short};
use std::collections::{BTreeMap, BTreeSet};

/// A node name, IP address, pod name or handshake state as the monitor keeps it (the model's
/// names and addresses all fit a `Short`; keys of two `Short`s compare without `memcmp`).
pub(super) fn short(s: &str) -> Short {
    Short::new(s).expect("Cilium node and pod names and addresses fit a Short")
}

/// (node, ip).
type NodeIp = (Short, Short);

/// What the monitor follows on one node, keyed by IP (most events concern one node's IPs: kept
/// apart, each lookup compares addresses only, in smaller maps).
#[derive(Default)]
struct NodeView {
    /// Ground truth: the IPs assigned to the node (the cloud instance) in the cloud.
    assigned: BTreeSet<Short>,
    /// ip -> (pod, since).
    pod_ips: BTreeMap<Short, (Short, u64)>,
    /// ip -> the agent's state.
    agent_state: BTreeMap<Short, Short>,
}

/// The Cilium monitor (see the module documentation's table).
pub struct CiliumMonitor {
    names: Vec<Short>,
    /// Per node, in the order of `names` (the world's node indices).
    nodes: Vec<NodeView>,
    /// (node, ip) -> the operator's decision (time, observed rv, state seen).
    decisions: BTreeMap<NodeIp, (u64, u64, String)>,
    /// CiliumNode status writes, in order: (node, rv, time written, client). Read only to
    /// explain a failure; appending is much cheaper than keeping a map sorted on every write.
    writes: Vec<(Short, u64, u64, sim::event::Text)>,
    /// pod -> (node, since) for pods waiting for an IP.
    pending: BTreeMap<Short, (Short, u64)>,
    marked: BTreeSet<NodeIp>,
    pods_deadline: Option<u64>,
    reached: BTreeSet<&'static str>,
    catalog: &'static [&'static str],
    /// IPs a node can hold (interfaces x capacity).
    capacity: usize,
    /// (node, ip) -> (time, client) of the last unassign.
    unassigned: BTreeMap<NodeIp, (u64, String, String)>,
    /// (node, ip) -> (time, previous state) when the agent's entry went away.
    entry_removed: BTreeMap<NodeIp, (u64, Short)>,
    /// The operator process that won the Lease last ("host:pid") and when its IPAM started.
    leader: Option<(String, u64)>,
    /// Operator processes whose leadership ended (OnStoppedLeading) and when.
    stopped: BTreeMap<String, u64>,
    /// Nodes whose agent or operator has a silently dead task.
    dead_tasks: BTreeSet<String>,
}

impl CiliumMonitor {
    pub(super) fn new(
        names: Vec<String>,
        capacity: usize,
        catalog: &'static [&'static str],
    ) -> Self {
        CiliumMonitor {
            capacity,
            unassigned: BTreeMap::new(),
            entry_removed: BTreeMap::new(),
            dead_tasks: BTreeSet::new(),
            leader: None,
            stopped: BTreeMap::new(),
            names: names.iter().map(|n| short(n)).collect(),
            nodes: names.iter().map(|_| NodeView::default()).collect(),
            decisions: BTreeMap::new(),
            writes: Vec::new(),
            pending: BTreeMap::new(),
            marked: BTreeSet::new(),
            pods_deadline: None,
            reached: BTreeSet::new(),
            catalog,
        }
    }

    /// When `client` is an operator process other than the latest Lease winner: the note that it
    /// was deposed (empty otherwise).
    fn deposed(&self, client: &str) -> String {
        let lingering = match self.stopped.get(client) {
            Some(t) => format!(
                " (its leadership had ended at {}: it was lingering in its graceful shutdown)",
                secs(*t)
            ),
            None => String::new(),
        };
        match &self.leader {
            Some((leader, since)) if leader != client && client.starts_with("operator") => format!(
                "; {client} was deposed{lingering}: {leader} had led since {}",
                secs(*since)
            ),
            _ => String::new(),
        }
    }

    /// `released-entries-clear`: an agent's `released` entry for an IP the cloud holds for that
    /// node again (it gave the address back after the release) never clears while the IP stays in
    /// the pool, and the IP can never be used (upstream issue #39981). Checked once, at the
    /// liveness deadline, on nodes whose agent and the operators run all their tasks.
    fn stuck_released(&self, operator_ok: bool) -> Option<Failure> {
        let mut stuck = Vec::new();
        for (i, v) in self.nodes.iter().enumerate() {
            let name = self.names[i];
            if !operator_ok || self.dead_tasks.contains(name.as_str()) {
                continue;
            }
            for (ip, s) in &v.agent_state {
                if s.as_str() == RELEASED && v.assigned.contains(ip) {
                    stuck.push(format!("{ip} on {name}"));
                }
            }
        }
        (!stuck.is_empty()).then(|| Failure {
            invariant: crate::cilium::invariants::RELEASED_ENTRIES_CLEAR.name,
            kind: Kind::Liveness,
            node: None,
            explanation: format!(
                "{} after faults stopped, released entries remain for IPs the cloud has given back to the same node, which the agents therefore never use: {}",
                secs(PODS_BOUND_US),
                stuck.join(", ")
            ),
        })
    }

    /// The cloud holds `ip` for node `i` before the run starts (the initial pools).
    pub(super) fn assigned_at_start(&mut self, i: usize, ip: Short) {
        self.nodes[i].assigned.insert(ip);
    }

    /// The index of the node named `name` (a cloud instance is a node).
    fn index(&self, name: Short) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    /// The status write that made `node`'s version `rv` (a resourceVersion names one write):
    /// (time, client).
    fn write_of(&self, node: Short, rv: u64) -> Option<(u64, &str)> {
        self.writes
            .iter()
            .find(|(n, r, ..)| *n == node && *r == rv)
            .map(|(_, _, t, c)| (*t, c.as_str()))
    }

    fn unassign(
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
        }
        let deposed = self.deposed(client);
        self.unassigned
            .insert(key, (rec.t_us, client.to_string(), deposed.clone()));
        let (pod, since) = *self.nodes[i?].pod_ips.get(&key.1)?;
        let node = i.map(|i| i as NodeIx);
        let view = match self.decisions.get(&key) {
            Some((t, rv, _)) => match self.write_of(key.0, *rv) {
                Some((tw, by)) => format!(
                    "the operator decided at {} from {instance}'s status at resourceVersion {rv}, written by {by} at {} ({} before the pod got the IP), whose used IPs did not include {ip}",
                    secs(*t),
                    secs(tw),
                    secs(since.saturating_sub(tw))
                ),
                None => format!("the operator decided at {} from {instance}'s status at resourceVersion {rv}, whose used IPs did not include {ip}", secs(*t)),
            },
            None => "the operator never recorded a decision for it".to_string(),
        };
        Some(Failure {
            invariant: crate::cilium::invariants::NO_RELEASE_IN_USE.name,
            kind: Kind::Safety,
            node,
            explanation: format!(
                "{client} unassigned {ip} from {instance} at {} while pod {pod} used it (since {}, {} earlier): {view}{}",
                secs(rec.t_us),
                secs(since),
                secs(rec.t_us - since),
                deposed
            ),
        })
    }
}

impl CiliumMonitor {
    /// The Cilium model's own events.
    fn on_cilium(&mut self, rec: &Record, e: &CiliumEvent) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize];
        match e {
            CiliumEvent::CiliumPodCreated { pod } => {
                self.pending.insert(*pod, (node, t));
                None
            }
            CiliumEvent::CiliumPodIp { pod, ip } => self.on_pod_ip(rec, *pod, *ip),
            CiliumEvent::CiliumPodDeleted { pod, ip } => {
                self.pending.remove(pod);
                if let Some(ip) = ip {
                    self.nodes[rec.node as usize].pod_ips.remove(ip);
                }
                None
            }
            CiliumEvent::CiliumAgentState {
                ip,
                state,
                allocated,
            } => self.on_agent_state(rec, *ip, *state, *allocated),
            CiliumEvent::CiliumMark {
                node: n,
                ip,
                observed_used,
                ..
            } => {
                self.marked.insert((short(n), short(ip)));
                observed_used.then(|| Failure {
                    invariant: crate::cilium::invariants::OPERATOR_MARKS_UNUSED.name,
                    kind: Kind::Safety,
                    node: Some(rec.node),
                    explanation: format!("the operator marked {ip} of {n} for release although its own view listed it as used"),
                })
            }
            CiliumEvent::CiliumAbort { node: n, ip } => {
                self.marked.remove(&(short(n), short(ip)));
                None
            }
            CiliumEvent::CiliumRelease {
                node: n,
                ip,
                state_seen,
                excess_for_ms,
                observed_rv,
                handshake,
            } => {
                let key = (short(n), short(ip));
                self.marked.remove(&key);
                self.decisions
                    .insert(key, (t, *observed_rv, state_seen.clone()));
                let too_early = *excess_for_ms < RELEASE_DELAY.as_millis() as u64;
                (*handshake && (state_seen != READY || too_early)).then(|| Failure {
                    invariant: crate::cilium::invariants::RELEASE_ACKNOWLEDGED.name,
                    kind: Kind::Safety,
                    node: Some(rec.node),
                    explanation: format!(
                        "{node} decided to unassign {ip} of {n} after seeing '{state_seen}' and {} of excess (needs ready-for-release and {})",
                        secs(excess_for_ms * 1000),
                        secs(RELEASE_DELAY.as_micros() as u64)
                    ),
                })
            }
            CiliumEvent::CiliumLeadershipLost { identity } => {
                let pid = identity.rsplit('-').next().unwrap_or_default();
                self.stopped.insert(format!("{node}:{pid}"), t);
                None
            }
            CiliumEvent::CiliumLeading { identity, .. } => {
                let pid = identity.rsplit('-').next().unwrap_or_default();
                self.leader = Some((format!("{node}:{pid}"), t));
                None
            }
            _ => None,
        }
    }

    /// The agent gave `pod` the IP `ip` (`agent-allocates-from-pool`): the cloud still assigns it
    /// to the node, and the agent's own release state for it is not a handshake state.
    fn on_pod_ip(&mut self, rec: &Record, pod: Short, ip: Short) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize];
        self.pending.remove(&pod);
        let key = (node, ip);
        let view = &mut self.nodes[rec.node as usize];
        view.pod_ips.insert(ip, (pod, t));
        let state = view.agent_state.get(&ip).copied();
        if !view.assigned.contains(&ip) {
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
                        .writes
                        .iter()
                        .filter(|(n, _, tw, _)| *n == node && tw <= te)
                        .max_by_key(|(_, _, tw, _)| *tw)
                        .map(|(_, _, tw, c)| format!(" by {c}'s status write at {}", secs(*tw)))
                        .unwrap_or_default();
                    format!("; the agent's '{prev}' entry for it had been removed from release-ips{by} (seen at {}), so the agent took it for an aborted release", secs(*te))
                }
                None => String::new(),
            };
            return Some(Failure {
                invariant: crate::cilium::invariants::AGENT_ALLOCATES_FROM_POOL.name,
                kind: Kind::Safety,
                node: Some(rec.node),
                explanation: format!("the agent on {node} gave pod {pod} the IP {ip}, which is no longer assigned to {node} in the cloud{gone}{erased}"),
            });
        }
        if matches!(state.as_deref(), Some(MARKED | READY | RELEASED)) {
            return Some(Failure {
                invariant: crate::cilium::invariants::AGENT_ALLOCATES_FROM_POOL.name,
                kind: Kind::Safety,
                node: Some(rec.node),
                explanation: format!("the agent on {node} gave pod {pod} the IP {ip} while its own release state for it was {}", state.unwrap()),
            });
        }
        None
    }

    /// An entry of the agent's `release-ips` view changed (`agent-answers-truthfully`: no
    /// ready-for-release for an IP it has allocated).
    fn on_agent_state(
        &mut self,
        rec: &Record,
        ip: Short,
        state: Option<Short>,
        allocated: bool,
    ) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize];
        let key = (node, ip);
        let agent_state = &mut self.nodes[rec.node as usize].agent_state;
        match state {
            Some(s) => {
                if s == DO_NOT_RELEASE && allocated {
                    self.reached.insert("ack-raced-with-allocation");
                }
                agent_state.insert(key.1, s);
                if s == READY && allocated {
                    return Some(Failure {
                        invariant: crate::cilium::invariants::AGENT_ANSWERS_TRUTHFULLY.name,
                        kind: Kind::Safety,
                        node: Some(rec.node),
                        explanation: format!("the agent on {node} answered ready-for-release for {ip}, which it has allocated"),
                    });
                }
            }
            None => {
                if let Some(prev) = agent_state.remove(&key.1) {
                    self.entry_removed.insert(key, (t, prev));
                }
            }
        }
        None
    }
}

impl Monitor for CiliumMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize];
        match &rec.event {
            Event::CloudAssign { instance, ip, .. } => {
                if let Some(i) = self.index(short(instance)) {
                    self.nodes[i].assigned.insert(*ip);
                }
                None
            }
            Event::CloudUnassign {
                instance,
                ip,
                client,
                ..
            } => self.unassign(rec, instance, *ip, client),
            Event::CloudAmbiguous { op, .. } => {
                if op == "unassign" {
                    self.reached.insert("ambiguous-unassign");
                }
                None
            }
            Event::KubeConflict { .. } => {
                self.reached.insert("conflict-on-write");
                None
            }
            Event::KubeWrite {
                kind,
                name,
                rv,
                part,
                client,
            } if kind == KIND && part == "status" => {
                self.writes.push((short(name), *rv, t, client.clone()));
                None
            }
            Event::TaskDeath { .. } => {
                self.dead_tasks.insert(node.to_string());
                None
            }
            Event::NodeCrash => {
                self.dead_tasks.remove(node.as_str());
                let view = &mut self.nodes[rec.node as usize];
                view.pod_ips.clear();
                view.agent_state.clear();
                self.pending.retain(|_, (n, _)| *n != node);
                None
            }
            Event::ProcessExit { name, .. } if name == "cilium-operator" => {
                self.dead_tasks.remove(node.as_str());
                if !self.marked.is_empty() {
                    self.reached.insert("operator-restart-mid-handshake");
                }
                self.marked.clear();
                None
            }
            Event::ProcessExit { name, .. } if name == "cilium-agent" => {
                self.dead_tasks.remove(node.as_str());
                self.nodes[rec.node as usize].agent_state.clear();
                None
            }
            Event::LivenessPhase => {
                self.pods_deadline = Some(t + PODS_BOUND_US);
                None
            }
            Event::System(_) => rec
                .event
                .system::<CiliumEvent>()
                .and_then(|e| self.on_cilium(rec, e)),
            _ => None,
        }
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        let d = self.pods_deadline?;
        if now_us < d {
            return None;
        }
        self.pods_deadline = None;
        let operator_ok = !self.dead_tasks.iter().any(|n| n.starts_with("operator"));
        if let Some(f) = self.stuck_released(operator_ok) {
            return Some(f);
        }
        let view = |n: &Short| &self.nodes[self.index(*n).expect("a pod's node is a node")];
        let mut waiting = Vec::new();
        for (pod, (n, since)) in &self.pending {
            if *since + PODS_BOUND_US > now_us {
                continue;
            }
            // IPs of the node that no pod uses but that sit in a handshake state.
            let v = view(n);
            let held: Vec<&Short> = v
                .agent_state
                .iter()
                .filter(|(ip, s)| {
                    matches!(s.as_str(), MARKED | READY) && !v.pod_ips.contains_key(*ip)
                })
                .map(|(ip, _)| ip)
                .collect();
            if !operator_ok || self.dead_tasks.contains(n.as_str()) {
                continue;
            }
            if !held.is_empty() {
                waiting.push(format!(
                    "{pod} on {n} (since {}) while {:?} are held in a handshake state",
                    secs(*since),
                    held
                ));
            } else if v.pod_ips.len() < self.capacity {
                waiting.push(format!(
                    "{pod} on {n} (since {}; {n} holds {} of {} IPs)",
                    secs(*since),
                    v.pod_ips.len(),
                    self.capacity
                ));
            }
        }
        (!waiting.is_empty()).then(|| Failure {
            invariant: crate::cilium::invariants::PODS_GET_IPS.name,
            kind: Kind::Liveness,
            node: None,
            explanation: format!(
                "{} after faults stopped, pods still wait for an IP: {}",
                secs(PODS_BOUND_US),
                waiting.join(", ")
            ),
        })
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        self.catalog
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}
