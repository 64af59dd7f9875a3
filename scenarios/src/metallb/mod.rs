//! The MetalLB scenarios: `metallb-silent-task-death`, `metallb-clock-skew`, `metallb-split-brain`,
//! `metallb-swarm`.
//!
//! Each deploys 3 to 7 speaker nodes (`n1`.., IPs `10.0.0.1`..) running a kubelet and the MetalLB
//! speaker, the API server with the node lifecycle controller (`apiserver`), and the router of the
//! layer-2 segment (`router`). 1 to 3 LoadBalancer services (`svc-1`.., IPs `192.168.10.1`..) with
//! endpoints on some nodes and traffic policy Cluster or Local; some nodes may carry the exclusion
//! label or the NetworkUnavailable condition. 10-minute fault window, 300 s liveness phase.
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `single-announcer` | safety | once every live speaker and the router have been mutually reachable, with no fault in force, for the convergence bound (join period + a join timeout per speaker + maximum suspicion + a probe round + the router's ARP refresh + 10 s), every service IP with candidates has exactly one announcer, it is the first of the true candidates, and the router's entry points at it; an IP without candidates has none |
//! | `takeover-after-crash` | safety | the same, sooner, after a speaker or its node crashed: within a probe round + probe interval + maximum suspicion + 2 s of gossip + the 5 s ARP burst |
//! | `membership-merges` | liveness | at the same moments, every live speaker's memberlist lists exactly the live speakers |
//! | `announcer-first-in-own-order` | safety | a speaker announces only if it is first in `announce_order` of the candidates it reports (recomputed here: the choice is a pure function of candidates and IP) |
//! | `announcer-eligible` | safety | no speaker announces from an excluded or NetworkUnavailable node, for a service without endpoints, or for a Local service without an endpoint on its node |
//!
//! The convergence checks apply only while one live speaker can still re-merge the cluster (its
//! peer IPs cached since it started and its join loop not dead), and the announcer checks only once
//! the API server has served normally for as long as an informer takes to replace a dead watch
//! (while it is down or slower than its clients' timeouts, the speakers' views of nodes and
//! endpoints legitimately differ; membership is still checked then: the cache exists for that).
//!
//! Coverage point `announcer-taken-over`: a speaker that announced an IP crashed or left and the
//! router then heard a gratuitous ARP for it from another speaker.
//!
//! Duplicate-announcer periods (two or more speakers answering for one IP) are allowed while the
//! network is split; each one's length is recorded in the trace (`l2-announce`/`l2-withdraw`) and
//! reported.

use crate::scenario::RunSpec;
use model::metallb::MetallbEvent;
use model::metallb::{self, announce_order, Peers, SpeakerConfig, Switches};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sim::event::{Event, Record};
use sim::runtime::simulate;
use sim::{Failure, Fault, FaultKind, Kind, Monitor, NodeIx, NodeSpec, Outcome, Schedule};
use std::collections::{BTreeMap, BTreeSet};

pub mod invariants;
pub mod report;
/// Length of the fault window (ms).
pub mod switches;
mod system;
pub use system::Metallb;

pub const FAULT_WINDOW_MS: u64 = 600_000;
/// Length of the liveness phase (ms): longer than the convergence bound for 7 speakers (about 210 s).
pub const LIVENESS_MS: u64 = 300_000;
const S: u64 = 1_000_000;

/// A LoadBalancer service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceOpt {
    pub ip: String,
    /// `externalTrafficPolicy: Local`.
    pub local: bool,
    /// Nodes with an endpoint (a pod) of the service.
    pub endpoints: Vec<String>,
}

/// The options a seed draws for a MetalLB scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetallbOptions {
    pub speakers: u32,
    pub latency_min_us: u64,
    pub latency_max_us: u64,
    pub services: Vec<ServiceOpt>,
    /// Nodes labelled `node.kubernetes.io/exclude-from-external-load-balancers`.
    pub excluded: Vec<String>,
    /// Nodes with the NetworkUnavailable condition.
    pub network_unavailable: Vec<String>,
    /// Wall clock offset (ms) and drift (ppm) of each speaker node.
    pub clock_offset_ms: Vec<i64>,
    pub drift_ppm: Vec<i64>,
    pub fault_kinds: Vec<String>,
    pub fault_count: u32,
}

impl MetallbOptions {
    /// Speaker node names.
    pub fn speaker_names(&self) -> Vec<String> {
        (1..=self.speakers).map(|i| format!("n{i}")).collect()
    }

    /// Node names in index order.
    pub fn node_names(&self) -> Vec<String> {
        let mut n = self.speaker_names();
        n.extend(["apiserver", "router"].map(String::from));
        n
    }
}

fn speaker_ip(i: usize) -> String {
    format!("10.0.0.{}", i + 1)
}

/// Which MetalLB scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    SilentTaskDeath,
    ClockSkew,
    SplitBrain,
    Swarm,
}

/// Draws options and a fault schedule.
pub fn draw(family: Family, seed: u64) -> (MetallbOptions, Schedule) {
    let mut rng = sim::rng::rng_for(seed, "metallb-swarm");
    let speakers = rng.random_range(3..=7u32);
    let names: Vec<String> = (1..=speakers).map(|i| format!("n{i}")).collect();
    let latency_min_us = rng.random_range(100..=1_000u64);
    let latency_max_us = latency_min_us + rng.random_range(0..=4_000u64);
    let services = (1..=rng.random_range(1..=3u32))
        .map(|k| {
            let mut eps: Vec<String> = names
                .iter()
                .filter(|_| rng.random_bool(0.5))
                .cloned()
                .collect();
            if eps.is_empty() && rng.random_bool(0.8) {
                eps.push(names.choose(&mut rng).unwrap().clone());
            }
            ServiceOpt {
                ip: format!("192.168.10.{k}"),
                local: rng.random_bool(0.4),
                endpoints: eps,
            }
        })
        .collect();
    let pick = |rng: &mut ChaCha8Rng, p: f64| -> Vec<String> {
        if rng.random_bool(p) {
            vec![names.choose(rng).unwrap().clone()]
        } else {
            Vec::new()
        }
    };
    let excluded = pick(&mut rng, 0.25);
    let network_unavailable = pick(&mut rng, 0.15);
    let skew = matches!(family, Family::ClockSkew | Family::Swarm);
    let (clock_offset_ms, drift_ppm) =
        crate::scenario::draw_clocks(&mut rng, speakers as usize, skew, 120_000);
    let kinds: &[&str] = match family {
        Family::SilentTaskDeath => &[
            "death-join-loop",
            "death-ip-refresh",
            "stall-join-loop",
            "stall-ip-refresh",
            "speaker-crash",
            "split",
            "isolate",
        ],
        Family::ClockSkew => &["node-step", "drift", "pause", "isolate", "latency"],
        Family::SplitBrain => &[
            "split",
            "partial",
            "simplex",
            "isolate",
            "split-api-down",
            "api-down",
        ],
        Family::Swarm => &[
            "death-join-loop",
            "death-ip-refresh",
            "stall-join-loop",
            "speaker-crash",
            "node-step",
            "drift",
            "pause",
            "latency",
            "split",
            "partial",
            "simplex",
            "isolate",
            "split-api-down",
            "api-down",
            "api-slow",
            "node-crash",
            "speaker-restart",
        ],
    };
    let fault_kinds = crate::scenario::draw_fault_kinds(&mut rng, kinds);
    let fault_count = rng.random_range(1..=if family == Family::Swarm { 10 } else { 6 });
    let o = MetallbOptions {
        speakers,
        latency_min_us,
        latency_max_us,
        services,
        excluded,
        network_unavailable,
        clock_offset_ms,
        drift_ppm,
        fault_kinds,
        fault_count,
    };
    let schedule = schedule(&o, &mut rng);
    (o, schedule)
}

/// Splits the speakers into two non-empty groups.
fn halves(names: &[String], rng: &mut ChaCha8Rng) -> (Vec<String>, Vec<String>) {
    let mut v = names.to_vec();
    v.shuffle(rng);
    let k = rng.random_range(1..v.len());
    let b = v.split_off(k);
    (v, b)
}

fn schedule(o: &MetallbOptions, rng: &mut ChaCha8Rng) -> Schedule {
    let names = o.speaker_names();
    let s = |x: &str| x.to_string();
    let mut out = Vec::new();
    // Silent deaths of the join loop hit at most speakers - 1 nodes: one live loop re-merges.
    let mut join_deaths: BTreeSet<String> = BTreeSet::new();
    for _ in 0..o.fault_count {
        let kind = o.fault_kinds.choose(rng).unwrap().as_str();
        let at_ms = rng.random_range(5_000..FAULT_WINDOW_MS - 30_000);
        let n = names.choose(rng).unwrap().clone();
        let long = |rng: &mut ChaCha8Rng| {
            if rng.random_bool(0.6) {
                rng.random_range(70_000..=300_000)
            } else {
                rng.random_range(5_000..=70_000)
            }
        };
        let mut push = |at_ms: u64, dur_ms: u64, kind: FaultKind| {
            out.push(Fault {
                at_ms,
                dur_ms,
                kind,
            })
        };
        match kind {
            "death-join-loop" => {
                if join_deaths.len() + 1 < names.len() || join_deaths.contains(&n) {
                    join_deaths.insert(n.clone());
                    push(
                        at_ms,
                        0,
                        FaultKind::TaskDeath {
                            node: n,
                            task: s("join-loop"),
                        },
                    );
                }
            }
            "death-ip-refresh" => push(
                at_ms,
                0,
                FaultKind::TaskDeath {
                    node: n,
                    task: s("ip-refresh"),
                },
            ),
            "stall-join-loop" | "stall-ip-refresh" => push(
                at_ms,
                rng.random_range(5_000..=120_000),
                FaultKind::TaskStall {
                    node: n,
                    task: s(kind.trim_start_matches("stall-")),
                },
            ),
            "speaker-crash" => push(
                at_ms,
                0,
                FaultKind::ProcessCrash {
                    node: n,
                    process: s("speaker"),
                },
            ),
            "node-step" => push(
                at_ms,
                0,
                FaultKind::ClockStep {
                    node: n,
                    delta_ms: rng.random_range(-300_000..=300_000),
                },
            ),
            "drift" => push(
                at_ms,
                rng.random_range(30_000..=300_000),
                FaultKind::Drift {
                    node: n,
                    ppm: rng.random_range(-500..=500),
                },
            ),
            "pause" => push(
                at_ms,
                rng.random_range(1_000..=60_000),
                FaultKind::Pause { node: n },
            ),
            "latency" => push(
                at_ms,
                rng.random_range(5_000..=60_000),
                FaultKind::Latency {
                    node: n,
                    extra_ms: rng.random_range(50..=1_500),
                },
            ),
            "split" | "split-api-down" => {
                // A complete partition: the router and the API server each land on a side.
                let (mut a, mut b) = halves(&names, rng);
                for extra in ["router", "apiserver"] {
                    if rng.random_bool(0.5) {
                        a.push(s(extra));
                    } else {
                        b.push(s(extra));
                    }
                }
                let dur = long(rng);
                push(at_ms, dur, FaultKind::Partition { a, b });
                if kind == "split-api-down" {
                    // The API server goes down during the partition and stays down well after it heals.
                    let from = at_ms + rng.random_range(0..=dur);
                    let until = at_ms + dur + rng.random_range(60_000..=400_000);
                    push(
                        from,
                        until - from,
                        FaultKind::ServiceUnavailable {
                            node: s("apiserver"),
                        },
                    );
                }
            }
            "partial" => {
                // The speakers split; the router, the API server and maybe a bridge speaker reach both.
                let (a, mut b) = halves(&names, rng);
                if b.len() > 1 && rng.random_bool(0.3) {
                    b.pop();
                }
                push(at_ms, long(rng), FaultKind::Partition { a, b });
            }
            "simplex" => {
                let (a, b) = halves(&names, rng);
                push(at_ms, long(rng), FaultKind::Simplex { from: a, to: b });
            }
            "isolate" => push(at_ms, long(rng), FaultKind::Isolate { node: n }),
            "api-down" => push(
                at_ms,
                rng.random_range(10_000..=400_000),
                FaultKind::ServiceUnavailable {
                    node: s("apiserver"),
                },
            ),
            "api-slow" => push(
                at_ms,
                rng.random_range(10_000..=120_000),
                FaultKind::ServiceSlow {
                    node: s("apiserver"),
                    extra_ms: rng.random_range(500..=12_000),
                },
            ),
            "node-crash" => push(at_ms, long(rng), FaultKind::Crash { node: n }),
            "speaker-restart" => push(
                at_ms,
                rng.random_range(1_000..=60_000),
                FaultKind::ServiceRestart { node: n },
            ),
            other => unreachable!("unknown metallb fault kind {other}"),
        }
    }
    out.sort_by_key(|f| f.at_ms);
    out
}

/// Runs one MetalLB scenario.
pub fn run(
    _family: Family,
    spec: &RunSpec,
    o: &MetallbOptions,
    coverage: &'static [&'static str],
) -> Outcome {
    let names = o.node_names();
    let n = o.speakers as usize;
    let nodes: Vec<NodeSpec> = names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeSpec {
            name: name.clone(),
            offset_us: o.clock_offset_ms.get(i).copied().unwrap_or(0) * 1000,
            drift_ppm: o.drift_ppm.get(i).copied().unwrap_or(0),
        })
        .collect();
    let cfg = spec.sim_config(
        nodes,
        (o.latency_min_us, o.latency_max_us),
        FAULT_WINDOW_MS,
        LIVENESS_MS,
    );
    let switches = Switches {
        join_once: spec.bugs.iter().any(|b| b == "metallb-join-once"),
        rejoin_via_apiserver: spec
            .bugs
            .iter()
            .any(|b| b == "metallb-rejoin-via-apiserver"),
    };
    let monitor = MetallbMonitor::new(o, coverage);
    let o2 = o.clone();
    simulate(cfg, Box::new(monitor), move |world| {
        let speakers: Vec<NodeIx> = (0..n as NodeIx).collect();
        let api = world.node("apiserver").unwrap();
        let router = world.node("router").unwrap();
        let kube = sim::kube::Kube::install(world, api);
        kube.enable_node_lifecycle(metallb::NODE_GRACE);
        let ips: Vec<String> = o2.services.iter().map(|s| s.ip.clone()).collect();
        let segment = sim::l2::Segment::install(world, router, &speakers, ips);
        let speaker_names = o2.speaker_names();
        for (i, name) in speaker_names.iter().enumerate() {
            let flags = serde_json::json!({
                "exclude": o2.excluded.contains(name),
                "network_unavailable": o2.network_unavailable.contains(name),
            });
            kube.seed_object("Node", name, flags, serde_json::json!({ "ready": true }));
            kube.seed_object("Lease", name, serde_json::json!({}), serde_json::json!({}));
            kube.seed_object(
                "Pod",
                &format!("speaker-{name}"),
                serde_json::json!({}),
                serde_json::json!({ "ip": speaker_ip(i), "node": name }),
            );
        }
        for (k, svc) in o2.services.iter().enumerate() {
            let name = format!("svc-{}", k + 1);
            kube.seed_object(
                "Service",
                &name,
                serde_json::json!({ "ip": svc.ip, "local": svc.local }),
                serde_json::json!({}),
            );
            kube.seed_object(
                "Endpoints",
                &name,
                serde_json::json!({ "nodes": svc.endpoints }),
                serde_json::json!({ "ready": svc.endpoints }),
            );
        }
        let peers = Peers::new(
            speakers
                .iter()
                .map(|&i| (speaker_ip(i as usize), i))
                .collect(),
        );
        let cfg = SpeakerConfig {
            kube,
            segment,
            peers,
            switches,
        };
        for &i in &speakers {
            metallb::install(world, i, cfg.clone());
        }
    })
}

fn secs(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// Convergence bound after the network heals or a speaker (re)starts: the join period, a join
/// timeout per speaker, the maximum suspicion, a probe round, the router's ARP refresh, 10 s slack.
pub fn merge_bound_us(speakers: u32) -> u64 {
    let suspicion = metallb::suspicion_timeout(
        metallb::SUSPICION_MULT,
        speakers as usize,
        metallb::PROBE_INTERVAL,
    ) * metallb::SUSPICION_MAX_TIMEOUT_MULT;
    (metallb::JOIN_PERIOD
        + metallb::TCP_TIMEOUT * speakers
        + suspicion
        + metallb::PROBE_INTERVAL * speakers
        + sim::l2::ARP_REFRESH)
        .as_micros() as u64
        + 10 * S
}

/// Takeover bound after a crash: a probe round and interval, maximum suspicion, 2 s of gossip, the
/// 5 s ARP burst.
pub fn takeover_bound_us(speakers: u32) -> u64 {
    let suspicion = metallb::suspicion_timeout(
        metallb::SUSPICION_MULT,
        speakers as usize,
        metallb::PROBE_INTERVAL,
    ) * metallb::SUSPICION_MAX_TIMEOUT_MULT;
    (metallb::PROBE_INTERVAL * (speakers + 1) + suspicion + metallb::GARP_FOR).as_micros() as u64
        + 2 * S
}

/// After a readiness change: the longest an informer takes to notice a dead watch and watch again
/// (the transport's 30 s read-idle timeout, then a 15 s ping without an ack), the router's ARP
/// refresh, 10 s slack.
const VIEW_BOUND_US: u64 = (metallb::INFORMER_IDLE.as_micros() as u64)
    + (sim::kube::PING_TIMEOUT.as_micros() as u64)
    + (sim::l2::ARP_REFRESH.as_micros() as u64)
    + 10 * S;

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
    /// IP -> speakers announcing it (since when).
    announcing: BTreeMap<String, BTreeMap<String, u64>>,
    /// IP -> the router's entry.
    arp: BTreeMap<String, String>,
    /// IP -> changes of the router's entry.
    arp_flaps: BTreeMap<String, u32>,
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
    settle_from: u64,
    /// When the network last became whole again.
    healed_at: Option<u64>,
    /// IP -> the speaker that announced it when it crashed or left (until another one takes over).
    lost_announcer: BTreeMap<String, String>,
    /// IP -> start of its current duplicate-announcer period.
    dup_since: BTreeMap<String, u64>,
    reached: BTreeSet<&'static str>,
    catalog: &'static [&'static str],
    /// The last convergence check passed with its time gates open (`settle_at`, `views_at`): what
    /// it reads changes only with events, so ticks skip it until the next tracked event.
    quiet: bool,
}

impl MetallbMonitor {
    fn new(o: &MetallbOptions, catalog: &'static [&'static str]) -> Self {
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
            arp_flaps: BTreeMap::new(),
            views: BTreeMap::new(),
            unsettled: BTreeMap::new(),
            api_down: BTreeSet::new(),
            api_down_since: None,
            views_at: 0,
            settle_at: merge_bound_us(o.speakers),
            settle_reason: "the speakers started".into(),
            settle_from: 0,
            healed_at: None,
            dup_since: BTreeMap::new(),
            lost_announcer: BTreeMap::new(),
            reached: BTreeSet::new(),
            catalog,
            names,
            quiet: false,
        }
    }

    fn unsettle(&mut self, t: u64, bound: u64, reason: String) {
        if t + bound >= self.settle_at {
            self.settle_at = t + bound;
            self.settle_reason = reason;
            self.settle_from = t;
        }
    }

    /// The speakers that should be candidates for a service (ground truth).
    fn true_candidates(&self, svc: &ServiceOpt) -> Vec<String> {
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
        let r = self.check(now);
        self.quiet = r.is_none()
            && now >= self.settle_at
            && (now >= self.views_at || !self.api_down.is_empty());
        r
    }

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
        let crash = self.settle_reason.contains("crash") || self.settle_reason.contains("left");
        // Built only when a check fails.
        let since = || {
            format!(
                "settled since {} ({} after {} at {})",
                secs(self.settle_at),
                secs(self.settle_at.saturating_sub(self.settle_from)),
                self.settle_reason,
                secs(self.settle_from)
            )
        };
        let invariant = if crash {
            "takeover-after-crash"
        } else {
            "single-announcer"
        };
        let views_settled = now >= self.views_at && self.api_down.is_empty();
        for svc in self.services.iter().filter(|_| views_settled) {
            let cands = self.true_candidates(svc);
            let expect = announce_order(&cands, &svc.ip).first().cloned();
            let actual: Vec<&String> = self
                .announcing
                .get(&svc.ip)
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            let dup = || {
                match self.dup_since.get(&svc.ip) {
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
            };
            let views = || {
                actual
                    .iter()
                    .map(|a| {
                        let v: Vec<&String> = self
                            .views
                            .get(*a)
                            .map(|v| {
                                v.iter()
                                    .filter(|(_, s)| *s == "alive" || *s == "suspect")
                                    .map(|(m, _)| m)
                                    .collect()
                            })
                            .unwrap_or_default();
                        format!("{a}'s memberlist: {v:?}")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let flaps = self.arp_flaps.get(&svc.ip).copied().unwrap_or(0);
            match &expect {
                None if !actual.is_empty() => {
                    return Some(Failure {
                        invariant,
                        kind: Kind::Safety,
                        node: None,
                        explanation: format!(
                            "{} has no candidate (no live eligible speaker with a serving endpoint) but {:?} announce it; {}",
                            svc.ip, actual, since()
                        ),
                    })
                }
                None => {}
                Some(e) => {
                    if actual.len() != 1 || actual[0] != e {
                        return Some(Failure {
                            invariant,
                            kind: Kind::Safety,
                            node: None,
                            explanation: format!(
                                "{} is announced by {:?}, expected exactly {e} (first of {:?} by sha256(node#ip)){}; {}; the router's entry changed {flaps} times; {}",
                                svc.ip, actual, announce_order(&cands, &svc.ip), dup(), views(), since()
                            ),
                        });
                    }
                    if self.arp.get(&svc.ip) != Some(e) {
                        return Some(Failure {
                            invariant,
                            kind: Kind::Safety,
                            node: None,
                            explanation: format!(
                                "the router sends {}'s traffic to {:?} although {e} alone announces it; {}",
                                svc.ip,
                                self.arp.get(&svc.ip),
                                since()
                            ),
                        });
                    }
                }
            }
        }
        // Membership (checked while the API server is down too: the cache must suffice).
        for sp in &self.live {
            let view: BTreeSet<&String> = self
                .views
                .get(sp)
                .map(|v| {
                    v.iter()
                        .filter(|(_, s)| *s == "alive" || *s == "suspect")
                        .map(|(m, _)| m)
                        .collect()
                })
                .unwrap_or_default();
            let want: BTreeSet<&String> = self.live.iter().collect();
            if view != want {
                let api = match self.api_down_since {
                    Some(d) => format!(
                        "; the API server has been down since {} and {:?} hold the peer IPs in their cache",
                        secs(d),
                        self.cached.intersection(&self.live).collect::<Vec<_>>()
                    ),
                    None => String::new(),
                };
                return Some(Failure {
                    invariant: "membership-merges",
                    kind: Kind::Liveness,
                    node: self.names.iter().position(|n| n == sp).map(|i| i as NodeIx),
                    explanation: format!(
                        "{sp}'s memberlist lists {:?} but the live speakers are {:?}; the segment has been whole and {}{api}",
                        view, want, since()
                    ),
                });
            }
        }
        None
    }
}

impl MetallbMonitor {
    /// The MetalLB model's own events.
    fn on_metallb(&mut self, rec: &Record, e: &MetallbEvent) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize].clone();
        let merge = merge_bound_us(self.speakers);
        let takeover = takeover_bound_us(self.speakers);
        match e {
            MetallbEvent::MlMember { member, state, .. } => {
                if member == &node && state == "left" {
                    // A speaker leaving the cluster (graceful shutdown) is no longer live.
                    self.live.remove(&node);
                    self.unsettle(t, takeover, format!("{node}'s speaker leaving (it left)"));
                }
                let v = self.views.entry(node.clone()).or_default();
                if state == "forgotten" {
                    v.remove(member);
                    if !self.unsettled.is_empty() {
                        self.reached.insert("partition-outlived-retention");
                    }
                } else {
                    v.insert(member.clone(), state.clone());
                }
            }
            // A speaker that can join from now on gets the join period to do so.
            MetallbEvent::SpeakerIps { .. } if self.cached.insert(node.clone()) => {
                self.unsettle(t, merge, format!("{node} caching the peer IPs"));
            }
            MetallbEvent::MlJoin { joined, .. } if *joined > 0 && !self.api_down.is_empty() => {
                self.reached.insert("rejoin-while-apiserver-down");
            }
            MetallbEvent::L2Announce {
                ip,
                candidates,
                service,
            } => {
                self.announcing
                    .entry(ip.clone())
                    .or_default()
                    .insert(node.clone(), t);
                self.duplicates(t, ip);
                let order = announce_order(candidates, ip);
                if order.first() != Some(&node) {
                    return Some(Failure {
                        invariant: "announcer-first-in-own-order",
                        kind: Kind::Safety,
                        node: Some(rec.node),
                        explanation: format!(
                            "{node} announces {ip} but its candidates {candidates:?} order as {order:?}"
                        ),
                    });
                }
                let svc = self.services.iter().find(|s| &s.ip == ip);
                let why = if self.excluded.contains(&node) {
                    Some("its node is excluded from external load balancers".to_string())
                } else if self.unavailable.contains(&node) {
                    Some("its node's network is unavailable".to_string())
                } else if svc.is_some_and(|s| s.endpoints.is_empty()) {
                    Some(format!("{service} has no endpoints"))
                } else if svc.is_some_and(|s| s.local && !s.endpoints.contains(&node)) {
                    Some(format!("{service} is Local and has no endpoint on {node}"))
                } else {
                    None
                };
                if let Some(why) = why {
                    return Some(Failure {
                        invariant: "announcer-eligible",
                        kind: Kind::Safety,
                        node: Some(rec.node),
                        explanation: format!("{node} announces {ip} although {why}"),
                    });
                }
            }
            MetallbEvent::L2Withdraw { ip, .. } => {
                if let Some(m) = self.announcing.get_mut(ip) {
                    m.remove(&node);
                }
                self.duplicates(t, ip);
            }
            // Nothing this monitor tracks changed: the last check still holds until the next tick.
            // Nothing this monitor tracks changed: the last check still holds until the next tick.
            _ => return None,
        }
        self.converged(t)
    }
}

impl Monitor for MetallbMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize].clone();
        let merge = merge_bound_us(self.speakers);
        let takeover = takeover_bound_us(self.speakers);
        if let Some(e) = rec.event.system::<MetallbEvent>() {
            return self.on_metallb(rec, e);
        }
        match &rec.event {
            Event::FaultStart { id, fault, .. } => match fault {
                FaultKind::Partition { .. }
                | FaultKind::Simplex { .. }
                | FaultKind::Isolate { .. }
                | FaultKind::Latency { .. }
                | FaultKind::Pause { .. } => {
                    self.unsettled.insert(*id, fault.describe());
                }
                // Informers cannot keep up while the API server is down or slower than its clients'
                // timeouts: views converge only after it recovers.
                FaultKind::ServiceUnavailable { node } | FaultKind::ServiceSlow { node, .. }
                    if node == "apiserver" =>
                {
                    if self.api_down.is_empty() {
                        self.api_down_since = Some(t);
                    }
                    self.api_down.insert(*id);
                }
                FaultKind::TaskDeath { task, node } if task == "join-loop" => {
                    self.reached.insert("join-loop-died");
                    self.loop_dead.insert(node.clone());
                }
                _ => {}
            },
            Event::FaultEnd { id } => {
                if self.api_down.remove(id) && self.api_down.is_empty() {
                    self.api_down_since = None;
                    self.views_at = self.views_at.max(t + VIEW_BOUND_US);
                }
                if let Some(d) = self.unsettled.remove(id) {
                    self.unsettle(t, merge, format!("the end of '{d}'"));
                    if self.unsettled.is_empty() {
                        self.healed_at = Some(t);
                    }
                }
            }
            Event::NodeCrash => {
                self.live.remove(&node);
                self.views.remove(&node);
                self.drop_announcer(t, &node);
                self.unsettle(t, takeover, format!("{node}'s crash"));
            }
            Event::ProcessStart { name, .. } if name == "speaker" => {
                self.live.insert(node.clone());
                self.cached.remove(&node);
                self.loop_dead.remove(&node);
                self.unsettle(t, merge, format!("{node}'s speaker start"));
            }
            Event::ProcessExit { name, status, .. } if name == "speaker" => {
                self.live.remove(&node);
                self.views.remove(&node);
                self.drop_announcer(t, &node);
                let how = if matches!(status, sim::event::ExitStatus::Killed) {
                    "crash"
                } else {
                    "exit (it left the cluster)"
                };
                self.unsettle(t, takeover, format!("{node}'s speaker {how}"));
            }
            Event::KubeNodeReady { node: n, ready } => {
                self.ready.insert(n.clone(), *ready);
                if !ready {
                    self.reached.insert("node-not-ready");
                }
                self.unsettle(
                    t,
                    VIEW_BOUND_US,
                    format!("{n} turning {}", if *ready { "Ready" } else { "NotReady" }),
                );
            }
            Event::ArpEntry { ip, node: to, via } => {
                if via == "garp" && self.lost_announcer.get(ip).is_some_and(|l| l != to) {
                    self.lost_announcer.remove(ip);
                    self.reached.insert("announcer-taken-over");
                }
                self.arp.insert(ip.clone(), to.clone());
                *self.arp_flaps.entry(ip.clone()).or_default() += 1;
            }
            _ => return None,
        }
        self.converged(t)
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
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
