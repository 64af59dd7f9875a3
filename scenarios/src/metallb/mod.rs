//! The MetalLB scenarios: `metallb-silent-task-death`, `metallb-clock-skew`, `metallb-split-brain`,
//! `metallb-swarm`.
//!
//! Each deploys 3 to 7 speaker nodes (`n1`.., IPs `10.0.0.1`..) running a kubelet and the MetalLB
//! speaker, the API server with the node lifecycle controller (`apiserver`), and the router of the
//! layer-2 segment (`router`). 1 to 3 LoadBalancer services (`svc-1`.., IPs `192.168.10.1`..) with
//! endpoints on some nodes and traffic policy Cluster or Local; some nodes may carry the exclusion
//! label or the NetworkUnavailable condition. 10-minute fault window, 300 s liveness phase. In
//! `metallb-swarm`, 40 % of seeds also have a user (`kubectl` beside the API server) delete one or
//! two Services during the fault window and, for most of them, create them again later
//! ([`ServiceDeletion`]); the speakers withdraw a deleted Service (upstream's reconciler hands the
//! handler a nil Service: metallb 7938d3f speaker/main.go `SetBalancer` l. 401-403).
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `single-announcer` | safety | once every live speaker and the router have been mutually reachable, with no fault in force, for the convergence bound (join period + a join timeout per speaker + maximum suspicion + a probe round + the longest the router's neighbour entry keeps a node that stopped answering + 10 s), every service IP with candidates has exactly one announcer, it is the first of the true candidates, and the router's entry points at it; an IP without candidates (none eligible, or its Service deleted) has none; after a Service is deleted or created again, within the bound of an informer view (idle timeout + ping timeout + the router's stale-entry time + 10 s) |
//! | `takeover-after-crash` | safety | the same, sooner, after a speaker or its node crashed, exited or left: within a probe round + probe interval + maximum suspicion + 2 s of gossip + the 5 s ARP burst; and by then every live speaker has dropped it from its memberlist |
//! | `membership-merges` | liveness | at the same moments, every live speaker's memberlist lists exactly the live speakers |
//! | `announcer-first-in-own-order` | safety | a speaker announces only if it is first in the sha256(node#ip) ordering of the candidates it reports (computed by the monitor: the choice is a pure function of candidates and IP) |
//! | `announcer-eligible` | safety | no speaker announces from an excluded or NetworkUnavailable node, for a service without endpoints, or for a Local service without an endpoint on its node |
//! | `arp-follows-announcer` | safety | a speaker that starts announcing with no network fault in force has the router pointing at it within one frame's flight (its gratuitous ARP), or one 1.1 s tick more if it withdrew the IP less than 6.1 s before (upstream's spam loop may still hold the IP) |
//! | `announcer-withdraws` | safety | once a speaker withdraws an IP or its speaker is gone, the router never again switches to it for that IP later than a frame sent before could arrive |
//! | `router-follows-owner` | safety | while one speaker alone announces an IP and no network fault, pause or latency spike is in force, the router's entry sends its traffic to that speaker within one 1.1 s tick and a frame |
//! | `local-withdraw` | safety | once a speaker's own views (its member list from `ml-member` events, its Nodes from `l2-node`, its ready endpoints from `l2-endpoints`, which alone make a Local IP's nodes eligible) rank another eligible node (or none) first for an IP it announces, it withdraws it within the evaluation (under 1 ms) |
//! | `prompt-rejoin` | liveness | while the network is whole and every speaker runs, a speaker that started and listed its peers' IPs is in every other running speaker's member list within a peer's join tick + two joins' exchanges + 1 s (81 s) |
//!
//! Bounds and the announcer ordering are computed in `expect` from the spec and upstream code
//! (never by calling the model); `arp` checks the router's entries against the announcements.
//!
//! The convergence checks apply only while one live speaker can still re-merge the cluster (its
//! peer IPs cached since it started and its join loop not dead), and the announcer checks only once
//! the API server has served normally for as long as an informer takes to replace a dead watch
//! (while it is down or slower than its clients' timeouts, the speakers' views of nodes and
//! endpoints legitimately differ; membership is still checked then: the cache exists for that).
//!
//! Coverage point `announcer-taken-over`: a speaker that announced an IP crashed or left and the
//! router then heard a gratuitous ARP for it from another speaker. `service-deleted`: a Service was
//! deleted in the API server while a speaker announced its IP.
//!
//! Duplicate-announcer periods (two or more speakers answering for one IP) are allowed while the
//! network is split; each one's length is recorded in the trace (`l2-announce`/`l2-withdraw`) and
//! reported.

use crate::metallb::fault_choice::FaultChoice;
use crate::scenario::RunSpec;
use model::metallb::{self, Peers, SpeakerConfig, Switches};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sim::runtime::simulate;
use sim::{Fault, FaultKind, NodeIx, NodeSpec, Outcome, Schedule};
use std::collections::BTreeSet;

mod arp;
mod death;
pub mod expect;
pub mod fault_choice;
pub mod findings;
pub mod invariants;
mod monitor;
mod owner;
mod rejoin;
pub mod report;
pub mod switches;
mod system;
mod withdraw;
pub use expect::{merge_bound_us, takeover_bound_us};
pub use monitor::MetallbMonitor;
pub use system::Metallb;

/// Length of the fault window (ms).
pub const FAULT_WINDOW_MS: u64 = 600_000;
/// Length of the liveness phase (ms): longer than the convergence bound for 7 speakers (about 210 s).
pub const LIVENESS_MS: u64 = 300_000;
use expect::{LATENCY_MIN_US_MAX, LATENCY_SPREAD_US_MAX, SPEAKERS_MAX, SPEAKERS_MIN};

/// A LoadBalancer service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceOpt {
    /// The service's LoadBalancer IP (`192.168.10.K` for `svc-K`).
    pub ip: String,
    /// `externalTrafficPolicy: Local`.
    pub local: bool,
    /// Nodes with an endpoint (a pod) of the service.
    pub endpoints: Vec<String>,
}

/// A user deleting a Service (and maybe creating it again later), through the API server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceDeletion {
    /// The service, `svc-K`.
    pub service: String,
    /// When it is deleted (ms).
    pub at_ms: u64,
    /// When it is created again, the same (ms); never if `None`.
    pub recreate_at_ms: Option<u64>,
}

/// The options a seed draws for a MetalLB scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetallbOptions {
    /// Speaker nodes (`n1`..), each with a kubelet and a speaker.
    pub speakers: u32,
    /// One-way network latency range: lower end (µs).
    pub latency_min_us: u64,
    /// Upper end of that range (µs).
    pub latency_max_us: u64,
    /// The LoadBalancer services, `svc-1`.. in order.
    pub services: Vec<ServiceOpt>,
    /// Nodes labelled `node.kubernetes.io/exclude-from-external-load-balancers`.
    pub excluded: Vec<String>,
    /// Nodes with the NetworkUnavailable condition.
    pub network_unavailable: Vec<String>,
    /// Wall clock offset (ms) and drift (ppm) of each speaker node.
    pub clock_offset_ms: Vec<i64>,
    /// Wall clock drift (ppm), in the same order as `clock_offset_ms`.
    pub drift_ppm: Vec<i64>,
    /// Fault kinds this seed enables (swarm testing).
    pub fault_kinds: Vec<FaultChoice>,
    /// How many faults were drawn.
    pub fault_count: u32,
    /// Services a user deletes (`metallb-swarm` only; drawn from a stream of their own, so the
    /// rest of a seed's draw is what it was before they existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_deletions: Vec<ServiceDeletion>,
}

impl MetallbOptions {
    /// Speaker node names.
    pub fn speaker_names(&self) -> Vec<String> {
        (1..=self.speakers).map(|i| format!("n{i}")).collect()
    }

    /// The same cluster with `speakers` speaker nodes (cost measurements): endpoints and labels
    /// on nodes that no longer exist are dropped, added nodes have none and exact clocks.
    pub fn with_speakers(&self, speakers: u32) -> MetallbOptions {
        let mut o = self.clone();
        o.speakers = speakers;
        let names = o.speaker_names();
        let keep = |v: &mut Vec<String>| v.retain(|n| names.contains(n));
        for svc in &mut o.services {
            keep(&mut svc.endpoints);
        }
        keep(&mut o.excluded);
        keep(&mut o.network_unavailable);
        o
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
    /// `metallb-silent-task-death`: the join loop or the IP cache refresh dies silently or
    /// stalls, with speaker crashes and partitions.
    SilentTaskDeath,
    /// `metallb-clock-skew`: skewed, drifting and stepped wall clocks, paused nodes and latency
    /// spikes.
    ClockSkew,
    /// `metallb-split-brain`: complete, partial and simplex partitions of 3 to 7 speakers, with
    /// and without an API server outage.
    SplitBrain,
    /// `metallb-swarm`: every MetalLB fault kind together, with crashes and graceful restarts.
    Swarm,
}

/// Draws options and a fault schedule (the adversarial profile).
pub fn draw(family: Family, seed: u64) -> (MetallbOptions, Schedule) {
    draw_in(family, seed, crate::faults::Profile::Adversarial)
}

/// Draws options and a fault schedule under `profile`: the realistic profile leaves the
/// hypothetical fault kinds out and brings sizes and clocks to the catalog's realistic ones.
pub fn draw_in(
    family: Family,
    seed: u64,
    profile: crate::faults::Profile,
) -> (MetallbOptions, Schedule) {
    let realistic = profile == crate::faults::Profile::Realistic;
    let mut rng = sim::rng::rng_for(seed, "metallb-swarm");
    let speakers = rng.random_range(SPEAKERS_MIN..=SPEAKERS_MAX);
    let names: Vec<String> = (1..=speakers).map(|i| format!("n{i}")).collect();
    let latency_min_us = rng.random_range(100..=LATENCY_MIN_US_MAX);
    let latency_max_us = latency_min_us + rng.random_range(0..=LATENCY_SPREAD_US_MAX);
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
    let kinds: &[FaultChoice] = match family {
        Family::SilentTaskDeath => &[
            FaultChoice::DeathJoinLoop,
            FaultChoice::DeathIpRefresh,
            FaultChoice::StallJoinLoop,
            FaultChoice::StallIpRefresh,
            FaultChoice::SpeakerCrash,
            FaultChoice::Split,
            FaultChoice::Isolate,
        ],
        Family::ClockSkew => &[
            FaultChoice::NodeStep,
            FaultChoice::Drift,
            FaultChoice::Pause,
            FaultChoice::Isolate,
            FaultChoice::Latency,
            FaultChoice::Loss,
        ],
        Family::SplitBrain => &[
            FaultChoice::Split,
            FaultChoice::Partial,
            FaultChoice::Simplex,
            FaultChoice::Isolate,
            FaultChoice::SplitApiDown,
            FaultChoice::ApiDown,
        ],
        Family::Swarm => &[
            FaultChoice::DeathJoinLoop,
            FaultChoice::DeathIpRefresh,
            FaultChoice::StallJoinLoop,
            FaultChoice::SpeakerCrash,
            FaultChoice::NodeStep,
            FaultChoice::Drift,
            FaultChoice::Pause,
            FaultChoice::Latency,
            FaultChoice::Split,
            FaultChoice::Partial,
            FaultChoice::Simplex,
            FaultChoice::Isolate,
            FaultChoice::SplitApiDown,
            FaultChoice::ApiDown,
            FaultChoice::ApiSlow,
            FaultChoice::NodeCrash,
            FaultChoice::SpeakerRestart,
            FaultChoice::Loss,
        ],
    };
    let known;
    let kinds = if realistic {
        known = crate::faults::known_causes(kinds, FaultChoice::facts);
        &known[..]
    } else {
        kinds
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
        service_deletions: Vec::new(),
    };
    let mut schedule = schedule(&o, &mut rng);
    let mut o = o;
    if family == Family::Swarm {
        o.service_deletions = draw_service_deletions(seed, o.services.len());
    }
    if realistic {
        crate::faults::realize_schedule(&mut schedule, &mut rng);
        crate::faults::realize_clocks(&mut o.clock_offset_ms, &mut o.drift_ppm, &mut rng);
    }
    (o, schedule)
}

/// The Service deletions of a `metallb-swarm` seed: in 40 % of seeds, one or two services (distinct)
/// are deleted during the fault window; 70 % of them are created again 10 to 300 s later (at the
/// latest when the fault window ends), the others stay deleted.
fn draw_service_deletions(seed: u64, services: usize) -> Vec<ServiceDeletion> {
    let mut rng = sim::rng::rng_for(seed, "metallb-service-deletion");
    if !rng.random_bool(0.4) {
        return Vec::new();
    }
    let mut ks: Vec<usize> = (1..=services).collect();
    ks.shuffle(&mut rng);
    ks.truncate(rng.random_range(1..=2));
    let mut out: Vec<ServiceDeletion> = ks
        .into_iter()
        .map(|k| {
            let at_ms = rng.random_range(5_000..FAULT_WINDOW_MS - 30_000);
            let recreate_at_ms = rng
                .random_bool(0.7)
                .then(|| (at_ms + rng.random_range(10_000..=300_000)).min(FAULT_WINDOW_MS));
            ServiceDeletion {
                service: format!("svc-{k}"),
                at_ms,
                recreate_at_ms,
            }
        })
        .collect();
    out.sort_by_key(|d| d.at_ms);
    out
}

/// The user of the Service deletions: a `kubectl` process on the API server's node that deletes
/// each Service at its time and creates it again (same IP, same spec) at its re-creation time,
/// retrying every second while the API server refuses or times out. A deletion removes the
/// Service object only: the speaker reads a deleted Service's endpoints no more (upstream's
/// handler withdraws a nil Service before looking at them).
async fn run_user(p: sim::Proc, world: sim::World, kube: sim::kube::Kube, o: MetallbOptions) {
    let client = kube.client(&p);
    let mut steps: Vec<(u64, String, Option<serde_json::Value>)> = Vec::new();
    for d in &o.service_deletions {
        steps.push((d.at_ms, d.service.clone(), None));
        if let Some(at) = d.recreate_at_ms {
            let k: usize = d.service["svc-".len()..].parse().expect("svc-K");
            let svc = &o.services[k - 1];
            let spec = serde_json::json!({ "ip": svc.ip, "local": svc.local });
            steps.push((at, d.service.clone(), Some(spec)));
        }
    }
    steps.sort_by_key(|s| s.0);
    for (at_ms, name, spec) in steps {
        let now = world.now_us();
        if at_ms * 1000 > now {
            p.sleep(std::time::Duration::from_micros(at_ms * 1000 - now))
                .await;
        }
        loop {
            let r = match &spec {
                None => client.delete("Service", &name).await,
                Some(s) => client
                    .create("Service", &name, s.clone(), serde_json::json!({}))
                    .await
                    .map(|_| ()),
            };
            match r {
                Ok(()) | Err(sim::kube::KubeError::NotFound) => break,
                Err(sim::kube::KubeError::AlreadyExists) => break,
                Err(_) => p.sleep(std::time::Duration::from_secs(1)).await,
            }
        }
    }
}

/// Splits the speakers into two non-empty groups.
fn halves(names: &[String], rng: &mut ChaCha8Rng) -> (Vec<String>, Vec<String>) {
    let mut v = names.to_vec();
    v.shuffle(rng);
    let k = rng.random_range(1..v.len());
    let b = v.split_off(k);
    (v, b)
}

/// Draws `o.fault_count` faults of the kinds `o` allows, in time order.
fn schedule(o: &MetallbOptions, rng: &mut ChaCha8Rng) -> Schedule {
    let names = o.speaker_names();
    let mut out = Vec::new();
    // Silent deaths of the join loop hit at most speakers - 1 nodes: one live loop re-merges.
    let mut join_deaths: BTreeSet<String> = BTreeSet::new();
    for _ in 0..o.fault_count {
        let kind = *o.fault_kinds.choose(rng).unwrap();
        let at_ms = rng.random_range(5_000..FAULT_WINDOW_MS - 30_000);
        let n = names.choose(rng).unwrap().clone();
        match kind {
            FaultChoice::DeathJoinLoop => {
                if join_deaths.len() + 1 < names.len() || join_deaths.contains(&n) {
                    join_deaths.insert(n.clone());
                    out.push(Fault {
                        at_ms,
                        dur_ms: 0,
                        kind: FaultKind::TaskDeath {
                            node: n,
                            task: "join-loop".into(),
                        },
                    });
                }
            }
            FaultChoice::Split
            | FaultChoice::SplitApiDown
            | FaultChoice::Partial
            | FaultChoice::Simplex => {
                out.extend(split_faults(kind, at_ms, &names, rng));
            }
            _ => {
                let (dur_ms, kind) = targeted_fault(kind, n, rng);
                out.push(Fault {
                    at_ms,
                    dur_ms,
                    kind,
                });
            }
        }
    }
    out.sort_by_key(|f| f.at_ms);
    out
}

/// How long a cut or a crash lasts: 60 % of them 70-300 s (longer than suspicion plus
/// dead-member retention), the others 5-70 s.
fn long_ms(rng: &mut ChaCha8Rng) -> u64 {
    if rng.random_bool(0.6) {
        rng.random_range(70_000..=300_000)
    } else {
        rng.random_range(5_000..=70_000)
    }
}

/// A fault that splits the speakers into two groups (and, for `split-api-down`, the API server
/// outage that goes with it).
fn split_faults(
    kind: FaultChoice,
    at_ms: u64,
    names: &[String],
    rng: &mut ChaCha8Rng,
) -> Vec<Fault> {
    let s = |x: &str| x.to_string();
    let mut out = Vec::new();
    let mut push = |at_ms: u64, dur_ms: u64, kind: FaultKind| {
        out.push(Fault {
            at_ms,
            dur_ms,
            kind,
        })
    };
    match kind {
        FaultChoice::Split | FaultChoice::SplitApiDown => {
            // A complete partition: the router and the API server each land on a side.
            let (mut a, mut b) = halves(names, rng);
            for extra in ["router", "apiserver"] {
                if rng.random_bool(0.5) {
                    a.push(s(extra));
                } else {
                    b.push(s(extra));
                }
            }
            let dur = long_ms(rng);
            push(at_ms, dur, FaultKind::Partition { a, b });
            if kind == FaultChoice::SplitApiDown {
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
        FaultChoice::Partial => {
            // The speakers split; the router, the API server and maybe a bridge speaker reach both.
            let (a, mut b) = halves(names, rng);
            if b.len() > 1 && rng.random_bool(0.3) {
                b.pop();
            }
            push(at_ms, long_ms(rng), FaultKind::Partition { a, b });
        }
        FaultChoice::Simplex => {
            let (a, b) = halves(names, rng);
            push(at_ms, long_ms(rng), FaultKind::Simplex { from: a, to: b });
        }
        other => unreachable!("not a metallb split {other:?}"),
    }
    out
}

/// A fault aimed at speaker `n` (its tasks, process, node or clock) or at the API server: its
/// length and kind.
fn targeted_fault(kind: FaultChoice, n: String, rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    let s = |x: &str| x.to_string();
    match kind {
        FaultChoice::DeathIpRefresh => (
            0,
            FaultKind::TaskDeath {
                node: n,
                task: s("ip-refresh"),
            },
        ),
        FaultChoice::StallJoinLoop | FaultChoice::StallIpRefresh => (
            rng.random_range(5_000..=120_000),
            FaultKind::TaskStall {
                node: n,
                task: s(kind.stall_of().unwrap_or_default()),
            },
        ),
        FaultChoice::SpeakerCrash => (
            0,
            FaultKind::ProcessCrash {
                node: n,
                process: s("speaker"),
            },
        ),
        FaultChoice::NodeStep => (
            0,
            FaultKind::ClockStep {
                node: n,
                delta_ms: rng.random_range(-300_000..=300_000),
            },
        ),
        FaultChoice::Drift => (
            rng.random_range(30_000..=300_000),
            FaultKind::Drift {
                node: n,
                ppm: rng.random_range(-500..=500),
            },
        ),
        FaultChoice::Pause => (
            rng.random_range(1_000..=60_000),
            FaultKind::Pause { node: n },
        ),
        FaultChoice::Latency => (
            rng.random_range(5_000..=60_000),
            FaultKind::Latency {
                node: n,
                extra_ms: rng.random_range(50..=1_500),
            },
        ),
        // A degraded link of the speaker's node (the realistic profile keeps the catalog's sizes).
        FaultChoice::Loss => (
            rng.random_range(5_000..=300_000),
            FaultKind::Loss {
                node: n,
                permille: rng.random_range(1..=300),
                burst: rng.random_range(1..=20),
            },
        ),
        FaultChoice::Isolate => (long_ms(rng), FaultKind::Isolate { node: n }),
        FaultChoice::ApiDown => (
            rng.random_range(10_000..=400_000),
            FaultKind::ServiceUnavailable {
                node: s("apiserver"),
            },
        ),
        FaultChoice::ApiSlow => (
            rng.random_range(10_000..=120_000),
            FaultKind::ServiceSlow {
                node: s("apiserver"),
                extra_ms: rng.random_range(500..=12_000),
            },
        ),
        FaultChoice::NodeCrash => (long_ms(rng), FaultKind::Crash { node: n }),
        FaultChoice::SpeakerRestart => (
            rng.random_range(1_000..=60_000),
            FaultKind::ServiceRestart { node: n },
        ),
        other => unreachable!("unknown metallb fault kind {other:?}"),
    }
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
    let on = |name: &str| spec.bugs.iter().chain(&spec.fixes).any(|b| b == name);
    let switches = Switches {
        join_once: on("metallb-join-once"),
        rejoin_via_apiserver: on("metallb-rejoin-via-apiserver"),
        garp_first_only: on("metallb-garp-first-only"),
        garp_while_announced: on("metallb-garp-while-announced"),
        mutant_never_withdraws: on("metallb-mutant-never-withdraws"),
        mutant_slow_suspicion: on("metallb-mutant-slow-suspicion"),
        mutant_no_refute: on("metallb-mutant-no-refute"),
        mutant_cache_dropped: on("metallb-mutant-cache-dropped"),
        mutant_wrong_order: on("metallb-mutant-wrong-order"),
        mutant_ignore_exclusion: on("metallb-mutant-ignore-exclusion"),
        mutant_no_garp: on("metallb-mutant-no-garp"),
        mutant_no_spam_ticks: on("metallb-mutant-no-spam-ticks"),
        mutant_answers_after_withdraw: on("metallb-mutant-answers-after-withdraw"),
        mutant_lazy_withdraw: on("metallb-mutant-lazy-withdraw"),
        mutant_lazy_join: on("metallb-mutant-lazy-join"),
        mutant_keeps_deleted_service: on("metallb-mutant-keeps-deleted-service"),
        mutant_local_ignores_readiness: on("metallb-mutant-local-ignores-readiness"),
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
        if !o2.service_deletions.is_empty() {
            // The user runs beside the API server (its own node's services, wrapped).
            let (k, o3) = (cfg.kube.clone(), o2.clone());
            let server = world.services(api).expect("the API server's services");
            world.set_services(
                api,
                std::rc::Rc::new(move |host: &sim::world::Host| {
                    server(host);
                    let p = host.spawn_process("kubectl");
                    let (k, o, w) = (k.clone(), o3.clone(), host.world().clone());
                    p.spawn("user", {
                        let p = p.clone();
                        async move { run_user(p, w, k, o).await }
                    });
                }),
            );
        }
    })
}
