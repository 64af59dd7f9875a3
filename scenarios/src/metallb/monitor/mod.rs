//! The MetalLB monitor: ground truth from the world's events (faults starting and ending, node
//! crashes, speaker processes starting and exiting, Node readiness and Service deletions and
//! creations in the API server, the router's ARP entries) and the speakers' own (memberlist member states, the peer IP cache, joins, layer-2
//! announcements and withdrawals), checked against the invariants of the table in the module
//! documentation of `scenarios::metallb`, with the bounds they are checked at.
//!
//! Independence from the model: this monitor reads `model::metallb::MetallbEvent` (the records the
//! speakers emit: observations only) and, through `expect`, the model's constants (intervals and
//! timeouts, to derive bounds). It calls no model function: the announcer ordering (sha256 of
//! `node#ip`) and memberlist's suspicion timeout are computed in `expect` from the spec and the
//! upstream code, and which speakers should be candidates from the world's ground truth.

use super::arp::ArpOracle;
use super::death::DeathOracle;
use super::expect::{self, merge_bound_us, takeover_bound_us, VIEW_BOUND_US};
use super::owner::OwnerOracle;
use super::rejoin::RejoinOracle;
use super::withdraw::{own_candidates, Announced, WithdrawOracle};
use super::{MetallbOptions, ServiceOpt};
use model::metallb::MetallbEvent;
use sim::event::{Event, Record};
use sim::neigh::Nud;
use sim::units::show_secs as secs;
use sim::{Failure, FaultKind, Kind, Measured, Monitor, NodeIx};
use std::collections::{BTreeMap, BTreeSet};

mod model_events;

/// Why the segment must converge again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unsettled {
    /// A speaker is gone (crash, exit, leave): `takeover-after-crash`, sooner.
    Departure,
    /// Anything else: `single-announcer`.
    Change,
}

/// The MetalLB monitor (see the module documentation's table).
pub struct MetallbMonitor {
    names: Vec<String>,
    speakers: u32,
    services: Vec<ServiceOpt>,
    excluded: BTreeSet<String>,
    unavailable: BTreeSet<String>,
    /// Ground truth of Node readiness.
    ready: BTreeMap<String, bool>,
    /// Speakers whose process runs.
    live: BTreeSet<String>,
    /// Speakers that have cached the peer IPs since they started.
    cached: BTreeSet<String>,
    /// Speakers whose join loop died silently since they started.
    loop_dead: BTreeSet<String>,
    /// IP -> speakers announcing it (since when they started).
    announcing: BTreeMap<String, BTreeMap<String, u64>>,
    /// IP -> the node the router's entry sends its traffic to (its neighbour entry is valid).
    arp: BTreeMap<String, String>,
    /// IP -> the state of the router's neighbour entry for it (none before its first packet; a
    /// gratuitous ARP creates none).
    neighbours: BTreeMap<String, Nud>,
    /// `arp-follows-announcer` and `announcer-withdraws`.
    l2: ArpOracle,
    /// `router-follows-owner`.
    owner: OwnerOracle,
    /// `local-withdraw`.
    withdraw: WithdrawOracle,
    /// `prompt-rejoin`.
    rejoin: RejoinOracle,
    /// Stalled or dead join loops in force (fault ids).
    join_loop_faults: BTreeSet<u32>,
    /// `no-false-death`.
    death: DeathOracle,
    /// IP -> changes of the router's entry.
    arp_flaps: BTreeMap<String, u32>,
    /// Speaker -> the Nodes its informer view has (its `l2-node` events).
    node_views: BTreeMap<String, BTreeSet<String>>,
    /// Speaker -> Service -> the nodes with a ready endpoint in its Endpoints informer view (its
    /// `l2-endpoints` events).
    endpoint_views: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Speaker -> its memberlist view (member -> state).
    views: BTreeMap<String, BTreeMap<String, String>>,
    /// Active faults that cut or slow the network or stop nodes: id -> description.
    unsettled: BTreeMap<u32, String>,
    api_down: BTreeSet<u32>,
    api_down_since: Option<u64>,
    /// Informer views must agree with the API server from this time on (it was down until then).
    views_at: u64,
    /// The segment must have converged from this time on, and why.
    settle_at: u64,
    settle_reason: String,
    /// What the last unsettling was: it chooses the convergence invariant in force.
    settle_why: Unsettled,
    settle_from: u64,
    /// When the network last became whole again.
    healed_at: Option<u64>,
    /// IP -> the speaker that announced it when it crashed or left (until another one takes over).
    lost_announcer: BTreeMap<String, String>,
    /// IP -> start of its current duplicate-announcer period.
    dup_since: BTreeMap<String, u64>,
    /// IPs of the Services deleted in the API server (ground truth: its writes), until created
    /// again.
    deleted: BTreeSet<String>,
    reached: BTreeSet<&'static str>,
    catalog: &'static [&'static str],
    /// The last convergence check passed with its time gates open (`settle_at`, `views_at`): what
    /// it reads changes only with events, so ticks skip it until the next tracked event.
    quiet: bool,
}

impl MetallbMonitor {
    pub(super) fn new(o: &MetallbOptions, catalog: &'static [&'static str]) -> Self {
        let names = o.node_names();
        MetallbMonitor {
            speakers: o.speakers,
            services: o.services.clone(),
            excluded: o.excluded.iter().cloned().collect(),
            unavailable: o.network_unavailable.iter().cloned().collect(),
            ready: o.speaker_names().into_iter().map(|n| (n, true)).collect(),
            live: BTreeSet::new(),
            cached: BTreeSet::new(),
            loop_dead: BTreeSet::new(),
            announcing: BTreeMap::new(),
            arp: BTreeMap::new(),
            neighbours: BTreeMap::new(),
            l2: ArpOracle::default(),
            owner: OwnerOracle::default(),
            withdraw: WithdrawOracle::default(),
            rejoin: RejoinOracle::default(),
            join_loop_faults: BTreeSet::new(),
            death: DeathOracle::new(o.speakers),
            arp_flaps: BTreeMap::new(),
            views: BTreeMap::new(),
            node_views: BTreeMap::new(),
            endpoint_views: BTreeMap::new(),
            unsettled: BTreeMap::new(),
            api_down: BTreeSet::new(),
            api_down_since: None,
            views_at: 0,
            settle_at: merge_bound_us(o.speakers),
            settle_reason: "the speakers started".into(),
            settle_why: Unsettled::Change,
            settle_from: 0,
            healed_at: None,
            dup_since: BTreeMap::new(),
            deleted: BTreeSet::new(),
            lost_announcer: BTreeMap::new(),
            reached: BTreeSet::new(),
            catalog,
            names,
            quiet: false,
        }
    }

    /// The segment must converge again by `t + bound`: a speaker's departure (crash, exit,
    /// leave: the takeover bound and invariant) or another change (the full convergence bound).
    fn unsettle(&mut self, t: u64, bound: u64, why: Unsettled, reason: String) {
        if t + bound >= self.settle_at {
            self.settle_at = t + bound;
            self.settle_reason = reason;
            self.settle_why = why;
            self.settle_from = t;
        }
    }

    /// The speakers that should be candidates for a service (ground truth): none once it is
    /// deleted.
    fn true_candidates(&self, svc: &ServiceOpt) -> Vec<String> {
        if self.deleted.contains(&svc.ip) {
            return Vec::new();
        }
        let serving: Vec<&String> = svc
            .endpoints
            .iter()
            .filter(|n| self.ready.get(*n).copied().unwrap_or(false))
            .collect();
        if serving.is_empty() {
            return Vec::new();
        }
        self.live
            .iter()
            .filter(|n| !self.excluded.contains(*n) && !self.unavailable.contains(*n))
            .filter(|n| !svc.local || serving.contains(n))
            .cloned()
            .collect()
    }

    /// `node` stops announcing everything (its speaker or node went away).
    fn drop_announcer(&mut self, t: u64, node: &str) {
        let ips: Vec<String> = self.announcing.keys().cloned().collect();
        for ip in ips {
            if self.announcing.get_mut(&ip).unwrap().remove(node).is_some() {
                self.lost_announcer.insert(ip.clone(), node.to_string());
                self.l2.withdraw(t, &ip, node, "its speaker is gone");
            }
            self.duplicates(t, &ip);
        }
    }

    fn duplicates(&mut self, t: u64, ip: &str) {
        let count = self.announcing.get(ip).map_or(0, |m| m.len());
        if count >= 2 {
            self.dup_since.entry(ip.to_string()).or_insert(t);
        } else if self.dup_since.remove(ip).is_some() {
            self.reached.insert("duplicate-announcer-resolved");
        }
    }

    fn converged(&mut self, now: u64) -> Option<Failure> {
        let quiet = self.unsettled.is_empty();
        for svc in &self.services {
            let announcers = self
                .announcing
                .get(&svc.ip)
                .into_iter()
                .flat_map(|m| m.keys());
            let hop = self.arp.get(&svc.ip);
            // Traffic goes wrong through a valid entry elsewhere, or is dropped by a FAILED one;
            // with no entry yet or one resolving, none has been sent (or it waits for the answer).
            let state = self.neighbours.get(&svc.ip).copied();
            let sent = state.is_some_and(|s| s.valid() || s == Nud::Failed);
            self.owner
                .observe(now, &svc.ip, announcers, sent.then_some(hop), quiet);
        }
        let r = self.check(now);
        self.quiet = r.is_none()
            && now >= self.settle_at
            && (now >= self.views_at || !self.api_down.is_empty());
        r
    }

    /// The convergence checks, once the segment has been whole and quiet for the bound
    /// (`settle_at`): the announcers (`single-announcer`, or `takeover-after-crash` after a crash),
    /// once the informers' views have settled too, then `membership-merges`.
    fn check(&self, now: u64) -> Option<Failure> {
        if now < self.settle_at || !self.unsettled.is_empty() {
            return None;
        }
        // Re-merging needs one live speaker that can still join: its peer IPs cached and its join
        // loop running (one join merges whole groups). Without one, nothing in MetalLB repairs a
        // split (the spec's "as long as the peer IPs were cached").
        if !self
            .live
            .iter()
            .any(|n| self.cached.contains(n) && !self.loop_dead.contains(n))
        {
            return None;
        }
        let views_settled = now >= self.views_at && self.api_down.is_empty();
        for svc in self.services.iter().filter(|_| views_settled) {
            if let Some(f) = self.check_announcer(svc, now) {
                return Some(f);
            }
        }
        // Membership (checked while the API server is down too: the cache must suffice).
        self.check_membership(now)
    }

    /// The convergence invariant in force: the settle bound last set by a crash or a leave is
    /// the takeover bound.
    fn settled_invariant(&self) -> &'static str {
        if self.settle_why == Unsettled::Departure {
            crate::metallb::invariants::TAKEOVER_AFTER_CRASH.name
        } else {
            crate::metallb::invariants::SINGLE_ANNOUNCER.name
        }
    }

    /// Since when, and after what, the segment must have converged (built only when a check
    /// fails).
    fn since(&self) -> String {
        format!(
            "settled since {} ({} after {} at {})",
            secs(self.settle_at),
            secs(self.settle_at.saturating_sub(self.settle_from)),
            self.settle_reason,
            secs(self.settle_from)
        )
    }

    /// The convergence checks' measure at `now`: how long since the change the segment must
    /// converge after, held to the bound that change set.
    fn settled_measure(&self, now: u64) -> Option<Measured> {
        Measured::bounded(now - self.settle_from, self.settle_at - self.settle_from)
    }

    /// The members `speaker`'s memberlist counts (alive or suspect).
    fn members<'a>(&'a self, speaker: &str) -> impl Iterator<Item = &'a String> {
        self.views.get(speaker).into_iter().flat_map(|v| {
            v.iter()
                .filter(|(_, s)| *s == "alive" || *s == "suspect")
                .map(|(m, _)| m)
        })
    }

    /// One service's announcers: exactly the first of its true candidates, and the router's entry
    /// pointing at it; none without candidates.
    fn check_announcer(&self, svc: &ServiceOpt, now: u64) -> Option<Failure> {
        let invariant = self.settled_invariant();
        let cands = self.true_candidates(svc);
        let expect = expect::first(&cands, &svc.ip);
        let actual: Vec<&String> = self
            .announcing
            .get(&svc.ip)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let flaps = self.arp_flaps.get(&svc.ip).copied().unwrap_or(0);
        match &expect {
            None if !actual.is_empty() => Some(Failure {
                invariant,
                kind: Kind::Safety,
                node: None,
                explanation: format!(
                    "{} has no candidate ({}) but {:?} announce it; {}",
                    svc.ip,
                    if self.deleted.contains(&svc.ip) {
                        "its Service is deleted"
                    } else {
                        "no live eligible speaker with a serving endpoint"
                    },
                    actual,
                    self.since()
                ),
                measured: self.settled_measure(now),
            }),
            None => None,
            Some(e) if actual.len() != 1 || actual[0] != e => Some(Failure {
                invariant,
                kind: Kind::Safety,
                node: None,
                explanation: format!(
                    "{} is announced by {:?}, expected exactly {e} (first of {:?} by sha256(node#ip)){}; {}; the router's entry changed {flaps} times; {}",
                    svc.ip,
                    actual,
                    expect::order(&cands, &svc.ip),
                    self.duplicate_note(&svc.ip, now),
                    self.memberlists_note(&actual),
                    self.since()
                ),
                measured: self.settled_measure(now),
            }),
            Some(e) if self.arp.get(&svc.ip) != Some(e) => Some(Failure {
                invariant,
                kind: Kind::Safety,
                node: None,
                explanation: format!(
                    "the router sends {}'s traffic to {:?} although {e} alone announces it; {}",
                    svc.ip,
                    self.arp.get(&svc.ip),
                    self.since()
                ),
                measured: self.settled_measure(now),
            }),
            Some(_) => None,
        }
    }

    /// How long more than one speaker has answered for `ip`, against when the network healed.
    fn duplicate_note(&self, ip: &str, now: u64) -> String {
        match self.dup_since.get(ip) {
            Some(t) => match self.healed_at {
                Some(h) if h <= *t => format!(
                    "; more than one has answered since {} ({} after the network healed at {})",
                    secs(*t),
                    secs(t - h),
                    secs(h)
                ),
                Some(h) => format!(
                    "; more than one has answered since {}, before the network healed at {}, {} ago",
                    secs(*t),
                    secs(h),
                    secs(now - h)
                ),
                None => format!("; more than one has answered since {}", secs(*t)),
            },
            None => String::new(),
        }
    }

    /// The memberlists of the speakers announcing an IP.
    fn memberlists_note(&self, announcers: &[&String]) -> String {
        announcers
            .iter()
            .map(|a| {
                let v: Vec<&String> = self.members(a).collect();
                format!("{a}'s memberlist: {v:?}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `membership-merges`: every live speaker's memberlist lists exactly the live speakers. After
    /// a departure (the takeover bound in force), a view still listing a speaker that is gone
    /// breaks `takeover-after-crash`, which promises that the others drop it within that bound.
    fn check_membership(&self, now: u64) -> Option<Failure> {
        for sp in &self.live {
            let view: BTreeSet<&String> = self.members(sp).collect();
            let want: BTreeSet<&String> = self.live.iter().collect();
            if view != want {
                let api = match self.api_down_since {
                    Some(d) => format!(
                        "; the API server has been down since {} and {:?} have listed the peer IPs since they started (their cache must outlive the outage)",
                        secs(d),
                        self.cached.intersection(&self.live).collect::<Vec<_>>()
                    ),
                    None => String::new(),
                };
                let stale = view.iter().any(|m| !self.live.contains(*m));
                let (invariant, kind) = if stale && self.settle_why == Unsettled::Departure {
                    (
                        crate::metallb::invariants::TAKEOVER_AFTER_CRASH.name,
                        Kind::Safety,
                    )
                } else {
                    (
                        crate::metallb::invariants::MEMBERSHIP_MERGES.name,
                        Kind::Liveness,
                    )
                };
                return Some(Failure {
                    invariant,
                    kind,
                    node: self.names.iter().position(|n| n == sp).map(|i| i as NodeIx),
                    explanation: format!(
                        "{sp}'s memberlist lists {:?} but the live speakers are {:?}{}; the segment has been whole and {}{api}",
                        view,
                        want,
                        if invariant == crate::metallb::invariants::TAKEOVER_AFTER_CRASH.name {
                            " (a speaker that is gone must be dropped within the takeover bound)"
                        } else {
                            ""
                        },
                        self.since()
                    ),
                    measured: self.settled_measure(now),
                });
            }
        }
        None
    }
}

impl MetallbMonitor {
    /// A user deleted (or created again) Service `name` at `t`: the speakers' informers must
    /// follow within the bound of any informer view. `None` for a Service the scenario does not
    /// know.
    fn on_service_write(&mut self, t: u64, name: &str, deleted: bool) -> Option<()> {
        let k: usize = name.strip_prefix("svc-")?.parse().ok()?;
        let ip = self.services.get(k.checked_sub(1)?)?.ip.clone();
        if deleted {
            if self.announcing.get(&ip).is_some_and(|m| !m.is_empty()) {
                self.reached.insert("service-deleted");
            }
            self.deleted.insert(ip);
        } else {
            self.deleted.remove(&ip);
        }
        let what = if deleted { "deleted" } else { "created again" };
        self.unsettle(
            t,
            VIEW_BOUND_US,
            Unsettled::Change,
            format!("{name} {what}"),
        );
        Some(())
    }

    /// The router's neighbour entry for `ip` is now in `state`, caching `node`'s address.
    fn on_neighbour(&mut self, ip: &str, state: Nud, node: Option<&String>) {
        self.neighbours.insert(ip.to_string(), state);
        match node.filter(|_| state.valid()) {
            Some(n) => self.arp.insert(ip.to_string(), n.clone()),
            None => self.arp.remove(ip),
        };
    }

    /// `arp-follows-announcer`: an announcement the router has not followed in time.
    /// What touches a speaker, for `no-false-death`.
    fn touches(&mut self, rec: &Record, node: &str) {
        let t = rec.t_us;
        match &rec.event {
            Event::FaultStart { id, dur_ms, fault } => {
                let nodes = fault.nodes().into_iter().map(str::to_string).collect();
                self.death.fault_start(t, *id, nodes, *dur_ms > 0);
            }
            Event::FaultEnd { id } => self.death.fault_end(t, *id),
            Event::NodeCrash => self.death.touch(t, node),
            Event::ProcessStart { name, .. } if name == "speaker" => {
                self.death.speaker_started(t, node)
            }
            Event::ProcessExit { name, .. } if name == "speaker" => self.death.touch(t, node),
            _ => {}
        }
    }

    fn arp_due(&self, now: u64) -> Option<Failure> {
        self.l2
            .due(now, |ip| self.arp.get(ip).cloned())
            .or_else(|| self.owner.due(now))
            .or_else(|| self.withdraw.due(now))
            .or_else(|| self.rejoin.due(now, |s| self.lacking(s)))
    }

    /// `local-withdraw`: `speaker`'s views or announcements changed at `t`.
    fn review_own_view(&mut self, t: u64, speaker: &str) {
        let seen = self.node_views.get(speaker);
        let members: Vec<&String> = self
            .members(speaker)
            .filter(|n| !self.excluded.contains(*n) && !self.unavailable.contains(*n))
            .filter(|n| seen.is_some_and(|s| s.contains(*n)))
            .collect();
        let left = self
            .views
            .get(speaker)
            .and_then(|v| v.get(speaker))
            .is_some_and(|s| s == "left" || s == "dead");
        let endpoints = self.endpoint_views.get(speaker);
        let announced = self
            .announcing
            .iter()
            .filter(|(_, by)| by.contains_key(speaker))
            .filter_map(|(ip, _)| {
                let k = self.services.iter().position(|s| &s.ip == ip)?;
                let ready = endpoints.and_then(|e| e.get(&service_name(k)));
                Some(Announced {
                    ip: ip.clone(),
                    eligible: own_candidates(&members, ready, self.services[k].local),
                })
            })
            .collect();
        self.withdraw.review(t, speaker, announced, left);
        let views = &self.views;
        self.rejoin.update(&self.live, |peer, s| {
            views
                .get(peer)
                .and_then(|v| v.get(s))
                .is_some_and(|st| st == "alive" || st == "suspect")
        });
    }

    /// `prompt-rejoin`: a running speaker whose member list lacks `speaker`.
    fn lacking(&self, speaker: &str) -> Option<String> {
        self.live
            .iter()
            .find(|p| *p != speaker && !self.members(p).any(|m| m == speaker))
            .cloned()
    }
}

impl MetallbMonitor {
    /// A fault starts at `t`: network faults unsettle the segment and excuse slow rejoins; an API
    /// server outage stalls the informers; a stalled or dead join loop excuses slow rejoins.
    fn on_fault_start(&mut self, t: u64, id: u32, fault: &FaultKind) {
        match fault {
            FaultKind::Partition { .. }
            | FaultKind::Simplex { .. }
            | FaultKind::Isolate { .. }
            | FaultKind::Latency { .. }
            | FaultKind::Loss { .. }
            | FaultKind::Pause { .. } => {
                self.unsettled.insert(id, fault.describe());
                self.rejoin.excuse();
                self.l2.network_fault();
                self.owner.network_fault();
                if let FaultKind::Latency { node, extra_ms } = fault {
                    self.l2.latency_start(id, node, extra_ms * 1000);
                }
            }
            // Informers cannot keep up while the API server is down or slower than its clients'
            // timeouts: views converge only after it recovers.
            FaultKind::ServiceUnavailable { node } | FaultKind::ServiceSlow { node, .. }
                if node == "apiserver" =>
            {
                if self.api_down.is_empty() {
                    self.api_down_since = Some(t);
                }
                self.api_down.insert(id);
            }
            FaultKind::TaskDeath { task, node } if task == "join-loop" => {
                self.reached.insert("join-loop-died");
                self.loop_dead.insert(node.clone());
                self.join_loop_faults.insert(id);
                self.rejoin.excuse();
            }
            FaultKind::TaskStall { task, .. } if task == "join-loop" => {
                self.join_loop_faults.insert(id);
                self.rejoin.excuse();
            }
            _ => {}
        }
    }
}

impl Monitor for MetallbMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        if let Some(f) = self.arp_due(t) {
            return Some(f);
        }
        let node = self.names[rec.node as usize].clone();
        let merge = merge_bound_us(self.speakers);
        let takeover = takeover_bound_us(self.speakers);
        if let Some(e) = rec.event.system::<MetallbEvent>() {
            return self.on_metallb(rec, e);
        }
        self.touches(rec, &node);
        match &rec.event {
            Event::FaultStart { id, fault, .. } => self.on_fault_start(t, *id, fault),
            Event::FaultEnd { id } => {
                self.l2.fault_end(*id, t);
                self.join_loop_faults.remove(id);
                if self.api_down.remove(id) && self.api_down.is_empty() {
                    self.api_down_since = None;
                    self.views_at = self.views_at.max(t + VIEW_BOUND_US);
                }
                if let Some(d) = self.unsettled.remove(id) {
                    self.unsettle(t, merge, Unsettled::Change, format!("the end of '{d}'"));
                    if self.unsettled.is_empty() {
                        self.healed_at = Some(t);
                    }
                }
            }
            Event::NodeCrash => {
                self.live.remove(&node);
                self.views.remove(&node);
                self.withdraw.gone(&node);
                self.rejoin.excuse();
                self.drop_announcer(t, &node);
                self.unsettle(t, takeover, Unsettled::Departure, format!("{node}'s crash"));
            }
            Event::ProcessStart { name, .. } if name == "speaker" => {
                self.live.insert(node.clone());
                self.node_views.remove(&node);
                self.endpoint_views.remove(&node);
                self.cached.remove(&node);
                self.loop_dead.remove(&node);
                self.unsettle(
                    t,
                    merge,
                    Unsettled::Change,
                    format!("{node}'s speaker start"),
                );
            }
            Event::ProcessExit { name, status, .. } if name == "speaker" => {
                self.live.remove(&node);
                self.views.remove(&node);
                self.withdraw.gone(&node);
                self.rejoin.excuse();
                self.drop_announcer(t, &node);
                let how = if matches!(status, sim::event::ExitStatus::Killed) {
                    "crash"
                } else {
                    "exit (it left the cluster)"
                };
                self.unsettle(
                    t,
                    takeover,
                    Unsettled::Departure,
                    format!("{node}'s speaker {how}"),
                );
            }
            Event::KubeWrite {
                kind, name, part, ..
            } if kind == "Service" && (part == "delete" || part == "create") => {
                self.on_service_write(t, name, part == "delete")?;
            }
            Event::KubeNodeReady { node: n, ready } => {
                self.ready.insert(n.clone(), *ready);
                if !ready {
                    self.reached.insert("node-not-ready");
                }
                self.unsettle(
                    t,
                    VIEW_BOUND_US,
                    Unsettled::Change,
                    format!("{n} turning {}", if *ready { "Ready" } else { "NotReady" }),
                );
            }
            Event::ArpEntry { ip, node: to, via } => {
                if via == "garp" && self.lost_announcer.get(ip).is_some_and(|l| l != to) {
                    self.lost_announcer.remove(ip);
                    self.reached.insert("announcer-taken-over");
                }
                *self.arp_flaps.entry(ip.clone()).or_default() += 1;
                if let Some(f) = self.l2.arp_entry(t, ip, to, via) {
                    return Some(f);
                }
            }
            Event::Neighbour { ip, state, node } => self.on_neighbour(ip, *state, node.as_ref()),
            _ => return None,
        }
        self.converged(t)
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        if let Some(f) = self.arp_due(now_us) {
            return Some(f);
        }
        if self.quiet {
            return None;
        }
        self.converged(now_us)
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        self.catalog
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}

/// The name of the scenario's `k`th Service (0-based), as `spawn` creates it.
fn service_name(k: usize) -> String {
    format!("svc-{}", k + 1)
}
