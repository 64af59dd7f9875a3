//! The Cilium monitor: ground truth from the world's and the model's events, checked against the
//! invariants of `scenarios::cilium::invariants` (the table in the module documentation of
//! `scenarios::cilium`).
//!
//! Independence: the monitor computes every expectation itself and calls no model
//! function. What it reads of the model, as observations only:
//! * `model::cilium::CiliumEvent`: the pods' IPs (its own notion of which IPs are in use), the
//!   agent's `release-ips` view, and the operators' decisions with the resourceVersion each was
//!   made on;
//! * `model::cilium::Status`, the typed status part of a CiliumNode as the API server stored it
//!   (`api.rs`: what a decision's version really held);
//! * constants: the state strings, `KIND`, `RELEASE_DELAY`, and (for the bounds, in
//!   `scenarios::cilium`) the operator's and agent's periods.
//!
//! Ground truth besides: the cloud's assignments and unassignments (with their interfaces), the
//! API server's stored CiliumNodes, faults, process exits, task deaths and monotonic clock rates.
//! The excess count and the release candidates are computed here (`excess.rs`), from the
//! cloud's assignments and the pods' IPs.

mod api;
mod cleanup;
mod excess;
mod lease;
mod marks;
mod safety;

pub(crate) use api::ApiSlot;
pub(crate) use excess::Watermarks;

use model::cilium::CiliumEvent;
use model::cilium::{DO_NOT_RELEASE, KIND};
use sim::event::{Event, Record};
use sim::leaderelection::LEASE_KIND;
use sim::units::show_secs as secs;
use sim::{Failure, Monitor, Short};
use std::collections::{BTreeMap, BTreeSet};

/// What a `released-entries-clear` sentence says after an IP that is on its node's release list
/// again by the monitor's own excess count.
pub(crate) const EXCESS_AGAIN: &str = "(on its node's release list again)";

/// In an `agent-allocates-from-pool` sentence: the operator that unassigned the IP was told the
/// unassign succeeded, then dropped its `released` state for it (`deleteLocalReleaseStatus`).
pub(crate) const DROPPED_RELEASED: &str = "dropped its own 'released' state";

/// What a `released-entries-clear` sentence ends with when the operators run newer upstream's
/// #39981 clean-up (they said so when their IPAM started).
pub(crate) const CLEAN_UP_RUNS: &str = "; the operators run the #39981 clean-up";

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
    /// Ground truth: the IPs assigned to the node (the cloud instance) in the cloud, and the
    /// interface holding each.
    assigned: BTreeMap<Short, Short>,
    /// ip -> (pod, since): the IPs the node's pods hold.
    pod_ips: BTreeMap<Short, (Short, u64)>,
    /// The last time the node's pods held as many IPs as it has room for (`pods-get-ips`: a
    /// waiting pod takes a freed IP only at its next sandbox attempt, up to the kubelet's
    /// longest retry wait later).
    full_until: u64,
    /// ip -> the agent's state, and since when it has held it.
    agent_state: BTreeMap<Short, (Short, u64)>,
}

/// A node's monotonic clock, followed from its rate changes (`MonoRate` events): piecewise
/// linear, `reading = at_from + floor(elapsed * (1e6 + ppm) / 1e6)`.
#[derive(Clone, Copy, Default)]
struct Mono {
    from_us: u64,
    at_from: u64,
    ppm: i64,
}

impl Mono {
    fn read(&self, t_us: u64) -> u64 {
        let dt = t_us.saturating_sub(self.from_us) as i128;
        self.at_from + (dt + (dt * self.ppm as i128).div_euclid(1_000_000)) as u64
    }

    fn set_rate(&mut self, t_us: u64, ppm: i64) {
        *self = Mono {
            from_us: t_us,
            at_from: self.read(t_us),
            ppm,
        };
    }
}

/// The Cilium monitor (see the module documentation's table).
pub struct CiliumMonitor {
    names: Vec<Short>,
    /// How many of `names` are Kubernetes nodes (the first ones).
    k8s_nodes: usize,
    /// Per node, in the order of `names` (the world's node indices).
    nodes: Vec<NodeView>,
    /// Every stored version of each CiliumNode.
    api: api::ApiView,
    /// The nodes' IPAM limits.
    watermarks: Watermarks,
    /// (node, ip) -> the operator's decision (time, observed rv, state seen).
    decisions: BTreeMap<NodeIp, (u64, u64, String)>,
    /// pod -> (node, since) for pods waiting for an IP.
    pending: BTreeMap<Short, (Short, u64)>,
    marked: BTreeSet<NodeIp>,
    /// When faults stopped.
    liveness_at: Option<u64>,
    /// Whether the checks at the `pods-get-ips` deadline have run.
    pods_checked: bool,
    reached: BTreeSet<&'static str>,
    catalog: &'static [&'static str],
    /// IPs a node can hold (interfaces x capacity).
    capacity: usize,
    /// (node, ip) -> (time, client, deposed note) of the last unassign.
    unassigned: BTreeMap<NodeIp, (u64, String, String)>,
    /// (node, ip) -> (time, previous state) when the agent's entry went away.
    entry_removed: BTreeMap<NodeIp, (u64, Short)>,
    /// (node, ip) -> (time, operator) when an operator last dropped its `released` state because
    /// the IP was back in the pool it checked (the #39981 clean-up).
    back_in_pool: BTreeMap<NodeIp, (u64, Short)>,
    /// (node, ip) -> (time, operator) when an operator last dropped its own `released` state
    /// for the IP no longer being on its release list (`deleteLocalReleaseStatus`).
    released_dropped: BTreeMap<NodeIp, (u64, Short)>,
    /// The operator process that won the Lease last ("host:pid") and when its IPAM started.
    leader: Option<(String, u64)>,
    /// Operator processes whose leadership ended (OnStoppedLeading) and when.
    stopped: BTreeMap<String, u64>,
    /// Nodes whose agent or operator has a silently dead task.
    dead_tasks: BTreeSet<String>,
    /// Live processes (node index, pid) on the operators' nodes: supervisors and operators. None
    /// left means no operator will ever run again (a supervisor killed at the end of a graceful
    /// restart's grace period, its orphaned operator crashed since).
    operator_procs: BTreeSet<(usize, u32)>,
    /// Per node index: its agent process (pid, when it started).
    agents: Vec<Option<(u32, u64)>>,
    /// Per node index: its monotonic clock.
    clocks: Vec<Mono>,
    /// Per node index: the monotonic reading when its operator's IPAM started (none: no IPAM).
    ipam_started: Vec<Option<u64>>,
    /// Whether an operator IPAM that started runs newer upstream's #39981 clean-up.
    cleans_readded: bool,
    /// `excess-released`'s candidates.
    progress: excess::Progress,
    /// `handshake-entries-clear`'s entries.
    entries: cleanup::Entries,
    /// `leader-runs-ipam`'s Lease holder and running IPAMs.
    lease: lease::LeaseWatch,
    /// `marks-within-excess`: the pass in progress.
    marks: marks::Marks,
    /// `release-after-delay`: when each IP was last assigned to its node.
    assigned: marks::Assigned,
}

impl CiliumMonitor {
    /// A monitor of the nodes `names` (the first `k8s_nodes` are Kubernetes nodes, each able to
    /// hold `capacity` IPs, with IPAM limits `watermarks`).
    pub(super) fn new(
        names: Vec<String>,
        k8s_nodes: usize,
        capacity: usize,
        watermarks: Watermarks,
        catalog: &'static [&'static str],
    ) -> Self {
        let operators = names
            .iter()
            .filter(|n| n.starts_with("operator"))
            .map(|n| short(n))
            .collect();
        let n = names.len();
        CiliumMonitor {
            k8s_nodes,
            capacity,
            watermarks,
            api: api::ApiView::new(n),
            unassigned: BTreeMap::new(),
            entry_removed: BTreeMap::new(),
            back_in_pool: BTreeMap::new(),
            released_dropped: BTreeMap::new(),
            dead_tasks: BTreeSet::new(),
            operator_procs: BTreeSet::new(),
            agents: vec![None; n],
            leader: None,
            stopped: BTreeMap::new(),
            names: names.iter().map(|n| short(n)).collect(),
            nodes: names.iter().map(|_| NodeView::default()).collect(),
            decisions: BTreeMap::new(),
            pending: BTreeMap::new(),
            marked: BTreeSet::new(),
            liveness_at: None,
            pods_checked: false,
            reached: BTreeSet::new(),
            catalog,
            clocks: vec![Mono::default(); n],
            ipam_started: vec![None; n],
            cleans_readded: false,
            progress: excess::Progress::new(n, operators),
            entries: cleanup::Entries::new(n),
            lease: lease::LeaseWatch::default(),
            marks: marks::Marks::default(),
            assigned: marks::Assigned::default(),
        }
    }

    /// The slot the scenario fills with the API server it installs (the monitor reads the
    /// CiliumNodes it stores).
    pub(super) fn api_slot(&self) -> ApiSlot {
        self.api.slot()
    }

    /// The cloud holds `ip` on interface `eni` of node `i` before the run starts (the initial
    /// pools).
    pub(super) fn assigned_at_start(&mut self, i: usize, ip: Short, eni: Short) {
        self.nodes[i].assigned.insert(ip, eni);
        self.note_assigned((self.names[i], ip), 0);
    }

    /// The index of the node named `name` (a cloud instance is a node).
    fn index(&self, name: Short) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    /// Whether node `i`'s agent and every operator run all their tasks, and an operator process
    /// runs at all (the liveness checks' scope: a silently dead task stays dead, and no Cilium
    /// mechanism restarts it; nor does anything start an operator once no process is left on the
    /// operators' nodes).
    fn all_tasks_run(&self, i: usize) -> bool {
        let operator_dead = self.dead_tasks.iter().any(|n| n.starts_with("operator"));
        let no_operator = self.operator_procs.is_empty();
        !operator_dead && !no_operator && !self.dead_tasks.contains(self.names[i].as_str())
    }

    /// After faults stopped: node `i`'s release candidates, from the cloud's assignments and the
    /// pods' IPs (`reset`: its addresses changed).
    fn refresh_excess(&mut self, i: usize, t_us: u64, reset: bool) {
        if !self.progress.following() || i >= self.k8s_nodes {
            return;
        }
        let v = &self.nodes[i];
        let k = excess::excess_count(v.assigned.len(), v.pod_ips.len(), self.watermarks);
        let c = excess::candidates(&v.assigned, |ip| v.pod_ips.contains_key(ip), k);
        self.progress.refresh(i, t_us, c, reset);
    }

    /// Coverage `max-allocate-capped`: node `i`'s pods hold so many IPs that upstream's need
    /// for more (pre-allocate above what the pods use, or min-allocate) would take the pool past
    /// `max-allocate`: `max(used + pre-allocate, min-allocate) > max-allocate`, which is
    /// `available + needed > max-allocate` for any `available` (calculateNeededIPs' cap,
    /// node.go:327-345 @ed90dd5), from the pods' IPs the monitor follows.
    fn note_cap(&mut self, i: usize) {
        let w = self.watermarks;
        let used = self.nodes[i].pod_ips.len();
        if w.max > 0 && (used + w.pre).max(w.min) > w.max {
            self.reached.insert("max-allocate-capped");
        }
    }

    /// The IPs a node may hold: its interfaces' capacity, and `max-allocate` when it is set
    /// (upstream's calculateNeededIPs caps the need so that the pool stays within it,
    /// node.go:327-345 @ed90dd5).
    fn room(&self) -> usize {
        match self.watermarks.max {
            0 => self.capacity,
            max => max.min(self.capacity),
        }
    }

    /// Before node `i`'s pods give up IPs: whether they held all it has room for, until now.
    fn note_full(&mut self, i: usize, t_us: u64) {
        if self.nodes[i].pod_ips.len() >= self.room() {
            self.nodes[i].full_until = t_us;
        }
    }

    /// The cloud assigned `ip` on `eni` to `instance`.
    fn assign(&mut self, t_us: u64, instance: &str, eni: Short, ip: Short) {
        if let Some(i) = self.index(short(instance)) {
            self.note_assigned((self.names[i], ip), t_us);
            self.nodes[i].assigned.insert(ip, eni);
            self.refresh_excess(i, t_us, true);
        }
    }

    /// A CiliumNode was written.
    fn kube_write(
        &mut self,
        t_us: u64,
        name: &str,
        rv: u64,
        part: &str,
        client: &sim::event::Text,
    ) {
        let Some(i) = self.index(short(name)) else {
            return;
        };
        self.api.on_write(i, name, rv, part, t_us, client);
        let now = self.api.release_ips_now(i);
        self.entries.on_write(i, now, t_us);
    }

    /// The world's events about processes, tasks, clocks and faults.
    fn on_world(&mut self, rec: &Record) -> Option<Failure> {
        let (t, i) = (rec.t_us, rec.node as usize);
        let node = self.names[i];
        match &rec.event {
            Event::ProcessStart { pid, .. } if node.starts_with("operator") => {
                self.operator_procs.insert((i, *pid));
            }
            Event::ProcessExit { pid, name, .. } if node.starts_with("operator") => {
                self.operator_procs.remove(&(i, *pid));
                if name == "cilium-operator" {
                    self.lease.ended(t, &node, Some(*pid));
                }
            }
            Event::ProcessStart { pid, name } if name == "cilium-agent" => {
                self.agents[i] = Some((*pid, t));
            }
            _ => {}
        }
        match &rec.event {
            Event::TaskDeath { .. } => {
                self.dead_tasks.insert(node.to_string());
            }
            Event::NodeCrash => {
                self.operator_procs.retain(|(n, _)| *n != i);
                self.lease.ended(t, &node, None);
                self.dead_tasks.remove(node.as_str());
                self.note_full(i, t);
                let view = &mut self.nodes[i];
                view.pod_ips.clear();
                view.agent_state.clear();
                self.pending.retain(|_, (n, _)| *n != node);
                self.ipam_started[i] = None;
                self.refresh_excess(i, t, false);
            }
            Event::NodeBoot { .. } => {
                self.assigned.boot(i, t);
                self.clocks[i] = Mono {
                    from_us: t,
                    at_from: 0,
                    ppm: self.clocks[i].ppm,
                };
            }
            Event::MonoRate { ppm } => self.clocks[i].set_rate(t, *ppm),
            Event::ProcessExit { name, .. } if name == "cilium-operator" => {
                self.dead_tasks.remove(node.as_str());
                if !self.marked.is_empty() {
                    self.reached.insert("operator-restart-mid-handshake");
                }
                self.marked.clear();
                self.ipam_started[i] = None;
            }
            Event::ProcessExit { name, .. } if name == "cilium-agent" => {
                self.dead_tasks.remove(node.as_str());
                self.nodes[i].agent_state.clear();
            }
            Event::FaultStart { id, fault, .. } => self.progress.fault_start(*id, fault),
            Event::FaultEnd { id } => self.progress.fault_end(*id, t),
            Event::LivenessPhase => {
                self.liveness_at = Some(t);
                self.progress.liveness(t);
                for i in 0..self.k8s_nodes {
                    self.refresh_excess(i, t, true);
                }
            }
            _ => {}
        }
        None
    }
}

impl Monitor for CiliumMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        match &rec.event {
            Event::CloudAssign {
                instance, eni, ip, ..
            } => {
                self.assign(rec.t_us, instance, *eni, *ip);
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
                ..
            } if kind == KIND => {
                self.kube_write(rec.t_us, name, *rv, part, client);
                None
            }
            Event::KubeWrite {
                kind,
                object: Some(o),
                ..
            } if kind == LEASE_KIND => {
                let holder = o.spec.get("holderIdentity").and_then(|h| h.as_str());
                self.lease
                    .lease_written(rec.t_us, holder.unwrap_or_default());
                None
            }
            Event::System(_) => rec
                .event
                .system::<CiliumEvent>()
                .and_then(|e| self.on_cilium(rec, e)),
            _ => self.on_world(rec),
        }
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        self.liveness_checks(now_us)
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        self.catalog
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}

impl CiliumMonitor {
    /// The Cilium model's own events.
    fn on_cilium(&mut self, rec: &Record, e: &CiliumEvent) -> Option<Failure> {
        let (t, i) = (rec.t_us, rec.node as usize);
        let node = self.names[i];
        match e {
            CiliumEvent::CiliumPodCreated { pod } => {
                self.pending.insert(*pod, (node, t));
                None
            }
            CiliumEvent::CiliumPodIp { pod, ip } => {
                let f = self.on_pod_ip(rec, *pod, *ip);
                self.note_cap(i);
                self.refresh_excess(i, t, false);
                f
            }
            CiliumEvent::CiliumSandboxFailed { pod, ip } => {
                // The agent died before the endpoint existed: the pod no longer has the IP and
                // waits again.
                if self.nodes[i].pod_ips.get(ip).is_some_and(|(p, _)| p == pod) {
                    self.nodes[i].pod_ips.remove(ip);
                    self.refresh_excess(i, t, false);
                }
                self.pending.insert(*pod, (node, t));
                None
            }
            CiliumEvent::CiliumPodDeleted { pod, ip } => {
                self.pending.remove(pod);
                if let Some(ip) = ip {
                    self.note_full(i, t);
                    self.nodes[i].pod_ips.remove(ip);
                    self.refresh_excess(i, t, false);
                }
                None
            }
            CiliumEvent::CiliumAgentState {
                ip,
                state,
                allocated,
            } => {
                if *state == Some(Short::lit(DO_NOT_RELEASE)) && *allocated {
                    self.reached.insert("ack-raced-with-allocation");
                }
                self.on_agent_state(rec, *ip, *state)
            }
            CiliumEvent::CiliumMark {
                node: n,
                ip,
                observed_rv,
                available,
                counted_rv,
                ..
            } => {
                let f = self.check_mark_count(rec, short(n), *available, *counted_rv);
                let g = self.on_mark(rec, short(n), short(ip), *observed_rv);
                f.or(g)
            }
            CiliumEvent::CiliumAbort {
                node: n,
                ip,
                back_in_pool,
                released,
            } => {
                let key = (short(n), short(ip));
                self.marked.remove(&key);
                let op = self.names[rec.node as usize];
                if *back_in_pool {
                    self.back_in_pool.insert(key, (rec.t_us, op));
                }
                if *released {
                    self.released_dropped.insert(key, (rec.t_us, op));
                }
                self.on_abort(rec, key);
                None
            }
            CiliumEvent::CiliumRelease {
                node: n,
                ip,
                state_seen,
                observed_rv,
                handshake,
                ..
            } => {
                let key = (short(n), short(ip));
                self.marked.remove(&key);
                self.decisions
                    .insert(key, (t, *observed_rv, state_seen.clone()));
                let f = self.on_release(rec, key, *observed_rv, *handshake);
                f.or_else(|| self.check_release_delay(rec, key))
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
            CiliumEvent::CiliumIpamStarted {
                cleans_readded,
                identity,
            } => {
                self.lease.ipam_started(t, identity);
                self.cleans_readded |= *cleans_readded;
                self.ipam_started[i] = Some(self.clocks[i].read(t));
                None
            }
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
}
