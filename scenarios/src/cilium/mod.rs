//! The Cilium scenarios: `cilium-silent-task-death`, `cilium-clock-skew`, `cilium-split-brain`,
//! `cilium-swarm`.
//!
//! Each deploys 2 to 4 Kubernetes nodes (`n1`..) running the agent and a kubelet with a swarm-chosen
//! pod workload, the API server (`apiserver`), the cloud IP API (`cloud`, one subnet a little
//! larger than the nodes can hold, so that released addresses come back), and 2 or 3 operator
//! processes (`operator`, `operator-2`, ..) that elect a leader through client-go's Lease; only
//! the leader runs IPAM (`model::cilium::operator`). Every node starts with `pre-allocate` IPs on
//! `eni-0`; `cilium-swarm` also sets `max-allocate` on a third of its seeds. 10-minute fault
//! window; the liveness phase lasts [`LIVENESS_MS`]: its longest liveness bound + 30 s.
//!
//! Faults aimed at an operator pick one of them at random (it may or may not lead): crashes,
//! graceful restarts, pauses, cuts from the API server or the cloud, slow API answers, and a
//! monotonic clock that runs 40 % slow to 60 % fast; these are how two operators come to act at
//! once (client-go gives no fencing). The version modelled: the `release-ips` handshake of ENI
//! agents up to cilium 1.19, still served by newer operators.
//!
//! | invariant | kind | what it checks |
//! |---|---|---|
//! | `no-release-in-use` | safety | when the cloud unassigns IP X of node N, no pod on N uses X |
//! | `release-acknowledged` | safety | an operator running the handshake decides to unassign X only when the CiliumNode version it decided on holds `ready-for-release` for X, and once its IPAM has run for 180 s on its monotonic clock |
//! | `agent-allocates-from-pool` | safety | the agent hands a pod only an IP assigned to its node in the cloud, never one in `marked-for-release`, `ready-for-release` or `released` |
//! | `agent-answers-truthfully` | safety | the agent answers `ready-for-release` only for an IP no pod on its node holds |
//! | `operator-marks-unused` | safety | the operator never marks an IP that the CiliumNode version it decided on lists as used |
//! | `handshake-entries-clear` | liveness | [`CLEANUP_BOUND_US`] after faults stop (or after the entry is due, if later), no CiliumNode holds an entry whose IP left the node in the cloud, that the agent refused, or whose release the leading operator aborted |
//! | `handshake-aborted-when-not-excess` | liveness | [`ABORT_BOUND_US`] after the later of faults stopping and its IP leaving its node's release candidates (upstream's excess count and interface pick, from the cloud's assignments and the pods' IPs), no CiliumNode holds a `marked-for-release` or `ready-for-release` entry for an IP still assigned to the node that the leading operator has not aborted |
//! | `released-entries-clear` | liveness | [`PODS_BOUND_US`] after faults stop, or after the cloud gave the IP back if later, no agent holds a `released` entry for an IP the cloud has given back to its node (cilium/cilium#39981: the IP would never be used again) |
//! | `leader-runs-ipam` | liveness | [`IPAM_GAP_BOUND_US`] after faults stop (or after its holder took it or its IPAM stopped, if later), while a pod waits for an IP, the stored Lease names no operator whose IPAM has not started or whose process has exited |
//! | `pods-get-ips` | liveness | [`PODS_BOUND_US`] after faults stop, no pod still waits for an IP while its node has room (pods holding IPs < interfaces x capacity, and < `max-allocate` when set) and has had it for longer than the kubelet's longest retry wait |
//! | `excess-released` | liveness | an IP that stays a release candidate (upstream's excess count and interface pick, from the cloud's assignments and the pods' IPs) is unassigned [`RELEASE_PIPELINE_US`] after its clock starts: the later of [`RECOVERY_US`] after faults stop, its becoming a candidate, the last change of its node's addresses, and the maintainer's longest backoff after the last fault that could fail the operator's cloud calls |
//!
//! The monitor computes each expectation itself (`monitor/`: it calls no model function). The
//! liveness invariants hold on nodes whose agent and the operators run all their tasks, while an
//! operator process exists: a task that died silently stays dead (no Cilium mechanism restarts
//! it; the liveness phase heals faults and restarts crashed processes, not dead tasks in live
//! ones); nodes they starve are reported by the scenario's coverage, not by the liveness
//! invariants. (The operator-exists scope dates from a harness bug, fixed: a graceful restart's
//! stop used to leave the operator process without its supervisor, so no operator ran again once
//! it exited; the supervisor now stops its operator and exits, as a deleted pod does.)

use crate::cilium::fault_choice::FaultChoice;
use crate::scenario::RunSpec;
use model::cilium::agent::Workload;
use model::cilium::decide::Limits;
use model::cilium::operator::OperatorConfig;
use model::cilium::{Switches, KIND, PRE_ALLOCATE};
use rand::seq::IndexedRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::runtime::simulate;
use sim::{Fault, FaultKind, NodeIx, NodeSpec, Outcome, Schedule, Short};
use std::collections::BTreeMap;

/// The options a seed draws for a Cilium scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiliumOptions {
    /// Kubernetes nodes (`n1`..), each with an agent and a kubelet.
    pub nodes: u32,
    /// Operator processes (replicas of the Deployment, each on its own node).
    pub operators: u32,
    /// `min-allocate` and `max-above-watermark` of every node.
    pub min_allocate: u32,
    /// `max-above-watermark` of every node (IPs).
    pub max_above_watermark: u32,
    /// `max-allocate` of every node (0: none; drawn by `cilium-swarm` only, from its own random
    /// stream, so that a seed's other options and faults are those it drew before). Left out of
    /// the serialized options when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_allocate: u32,
    /// How long a deposed leader's graceful shutdown lasts, to its exit (ms): its IPAM runs
    /// until then.
    pub shutdown_linger_ms: u64,
    /// When, in that shutdown, `legacy.onStop` stops its CiliumNode informer (ms; at most
    /// `shutdown_linger_ms`).
    #[serde(default)]
    pub informer_stop_ms: u64,
    /// One-way network latency range: lower end (µs).
    pub latency_min_us: u64,
    /// Upper end of that range (µs).
    pub latency_max_us: u64,
    /// Interfaces per node.
    pub enis: u32,
    /// Addresses in the cloud's subnet (shared by every node): a little more than the nodes can
    /// hold, so that a released address often comes back, to the same node or another.
    pub subnet_size: u32,
    /// Per Kubernetes node.
    pub workloads: Vec<Workload>,
    /// Wall clock offset (ms) and drift (ppm) of the operator and each node.
    pub clock_offset_ms: Vec<i64>,
    /// Wall clock drift (ppm), in the same order as `clock_offset_ms`.
    pub drift_ppm: Vec<i64>,
    /// Fault kinds this seed enables (swarm testing).
    pub fault_kinds: Vec<FaultChoice>,
    /// How many faults were drawn.
    pub fault_count: u32,
}

impl CiliumOptions {
    /// The same cluster with `nodes` Kubernetes nodes (cost measurements): the workloads repeat
    /// in order, the subnet keeps its slack beyond what the nodes can hold, added nodes' clocks
    /// are exact.
    pub fn with_nodes(&self, nodes: u32) -> CiliumOptions {
        let mut o = self.clone();
        let slack = self.subnet_size - self.nodes * self.enis * ENI_CAPACITY;
        o.workloads = (0..nodes as usize)
            .map(|i| self.workloads[i % self.workloads.len()].clone())
            .collect();
        o.subnet_size = nodes * self.enis * ENI_CAPACITY + slack;
        o.nodes = nodes;
        o
    }

    /// Node names in index order.
    pub fn node_names(&self) -> Vec<String> {
        let mut n: Vec<String> = (1..=self.nodes).map(|i| format!("n{i}")).collect();
        n.extend(["apiserver", "cloud"].map(String::from));
        n.extend(self.operator_names());
        n
    }

    /// The operators' node names: `operator`, `operator-2`, ...
    pub fn operator_names(&self) -> Vec<String> {
        (1..=self.operators.max(1))
            .map(|i| match i {
                1 => "operator".to_string(),
                i => format!("operator-{i}"),
            })
            .collect()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `max-allocate` for `family` and `seed`, from its own random stream: `cilium-swarm` sets it on
/// a third of its seeds (as min-allocate and max-above-watermark are), between min-allocate's 10
/// and 20 IPs, where pods plus pre-allocate often ask for more (calculateNeededIPs then caps the
/// need, node.go:327-345 @ed90dd5); the other scenarios never set it.
fn draw_max_allocate(family: Family, seed: u64) -> u32 {
    if family != Family::Swarm {
        return 0;
    }
    let mut rng = sim::rng::rng_for(seed, "cilium-max-allocate");
    match *[false, false, true].choose(&mut rng).unwrap() {
        true => rng.random_range(10..=20u32),
        false => 0,
    }
}

/// Which Cilium scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `cilium-silent-task-death`: the agent's status writer or the operator's maintenance dies
    /// silently, stalls or restarts.
    SilentTaskDeath,
    /// `cilium-clock-skew`: skewed, drifting and stepped wall clocks, and operators' monotonic
    /// clocks running fast or slow.
    ClockSkew,
    /// `cilium-split-brain`: partitions between agents, the API server, the operators and the
    /// cloud, paused and slowed operators.
    SplitBrain,
    /// `cilium-swarm`: every Cilium fault kind together, with cloud and API server failures.
    Swarm,
}

/// Draws options and a fault schedule (the adversarial profile).
pub fn draw(family: Family, seed: u64) -> (CiliumOptions, Schedule) {
    draw_in(family, seed, crate::faults::Profile::Adversarial)
}

/// Draws options and a fault schedule under `profile`: the realistic profile leaves the
/// hypothetical fault kinds out and brings sizes and clocks to the catalog's realistic ones.
pub fn draw_in(
    family: Family,
    seed: u64,
    profile: crate::faults::Profile,
) -> (CiliumOptions, Schedule) {
    let realistic = profile == crate::faults::Profile::Realistic;
    let mut rng = sim::rng::rng_for(seed, "cilium-swarm");
    let nodes = rng.random_range(2..=4u32);
    let latency_min_us = rng.random_range(200..=2_000u64);
    let latency_max_us = latency_min_us + rng.random_range(0..=8_000u64);
    let enis = rng.random_range(2..=3u32);
    let operators = rng.random_range(2..=3u32);
    let subnet_size = nodes * enis * ENI_CAPACITY + rng.random_range(4..=40u32);
    let min_allocate = *[0u32, 0, 10].choose(&mut rng).unwrap();
    let max_above_watermark = *[0u32, 0, 2].choose(&mut rng).unwrap();
    let normal_stop_ms = rng.random_range(0..=stop_draw::NORMAL_STOP_MAX_MS);
    let (informer_stop_ms, shutdown_linger_ms) = stop_draw::draw(seed, realistic, normal_stop_ms);
    let workloads = (0..nodes)
        .map(|_| Workload {
            restore_ms: rng.random_range(0..=3_000),
            max_pods: rng.random_range(4..=(enis * ENI_CAPACITY - PRE_ALLOCATE as u32 - 2)),
            period_s: rng.random_range(120..=480),
            step_min_s: rng.random_range(1..=5),
            step_max_s: rng.random_range(5..=20),
            burst_percent: rng.random_range(0..=20),
        })
        .collect();
    let skew = matches!(family, Family::ClockSkew | Family::Swarm);
    let (clock_offset_ms, drift_ppm) =
        crate::scenario::draw_clocks(&mut rng, nodes as usize + 1, skew, 60_000);
    let kinds: &[FaultChoice] = match family {
        Family::SilentTaskDeath => &[
            FaultChoice::DeathStatusWriter,
            FaultChoice::DeathMaintenance,
            FaultChoice::StallStatusWriter,
            FaultChoice::StallMaintenance,
            FaultChoice::AgentCrash,
            FaultChoice::OperatorCrash,
            FaultChoice::OperatorRestart,
            FaultChoice::CloudStaleReads,
            FaultChoice::CloudThrottling,
        ],
        Family::ClockSkew => &[
            FaultChoice::OperatorStep,
            FaultChoice::NodeStep,
            FaultChoice::Drift,
            FaultChoice::OperatorCrash,
            FaultChoice::OperatorClockRate,
            FaultChoice::CloudStaleReads,
            FaultChoice::CloudThrottling,
        ],
        Family::SplitBrain => &[
            FaultChoice::NodeApiCut,
            FaultChoice::OperatorApiCut,
            FaultChoice::OperatorCloudCut,
            FaultChoice::OperatorPause,
            FaultChoice::OperatorApiSlow,
            FaultChoice::OperatorClockRate,
            FaultChoice::ApiLatency,
            FaultChoice::NodeIsolate,
            FaultChoice::CloudStaleReads,
            FaultChoice::CloudThrottling,
        ],
        Family::Swarm => &[
            FaultChoice::DeathStatusWriter,
            FaultChoice::DeathMaintenance,
            FaultChoice::StallStatusWriter,
            FaultChoice::StallMaintenance,
            FaultChoice::AgentCrash,
            FaultChoice::OperatorCrash,
            FaultChoice::OperatorStep,
            FaultChoice::NodeStep,
            FaultChoice::Drift,
            FaultChoice::NodeApiCut,
            FaultChoice::OperatorApiCut,
            FaultChoice::OperatorCloudCut,
            FaultChoice::OperatorPause,
            FaultChoice::OperatorApiSlow,
            FaultChoice::OperatorClockRate,
            FaultChoice::OperatorRestart,
            FaultChoice::ApiLatency,
            FaultChoice::NodeIsolate,
            FaultChoice::CloudDown,
            FaultChoice::CloudAmbiguous,
            FaultChoice::CloudSlow,
            FaultChoice::ApiDown,
            FaultChoice::ApiSlow,
            FaultChoice::CloudStaleReads,
            FaultChoice::CloudThrottling,
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
    let fault_count = rng.random_range(1..=if family == Family::Swarm { 14 } else { 8 });
    let o = CiliumOptions {
        nodes,
        operators,
        subnet_size,
        min_allocate,
        max_above_watermark,
        max_allocate: draw_max_allocate(family, seed),
        shutdown_linger_ms,
        informer_stop_ms,
        latency_min_us,
        latency_max_us,
        enis,
        workloads,
        clock_offset_ms,
        drift_ppm,
        fault_kinds,
        fault_count,
    };
    let mut schedule = schedule(&o, &mut rng);
    let mut o = o;
    if realistic {
        crate::faults::realize_schedule(&mut schedule, &mut rng);
        crate::faults::realize_clocks(&mut o.clock_offset_ms, &mut o.drift_ppm, &mut rng);
    }
    (o, schedule)
}

/// Draws `o.fault_count` faults of the kinds `o` allows, in time order.
fn schedule(o: &CiliumOptions, rng: &mut rand_chacha::ChaCha8Rng) -> Schedule {
    let nodes: Vec<String> = (1..=o.nodes).map(|i| format!("n{i}")).collect();
    let operators = o.operator_names();
    let mut out = Vec::new();
    for _ in 0..o.fault_count {
        let kind = *o.fault_kinds.choose(rng).unwrap();
        let at_ms = rng.random_range(5_000..FAULT_WINDOW_MS - 30_000);
        let n = nodes.choose(rng).unwrap().clone();
        let op = operators.choose(rng).unwrap().clone();
        let (dur_ms, k) = match kind {
            FaultChoice::DeathStatusWriter
            | FaultChoice::StallStatusWriter
            | FaultChoice::AgentCrash
            | FaultChoice::NodeStep
            | FaultChoice::NodeApiCut
            | FaultChoice::NodeIsolate => node_fault(kind, n, rng),
            FaultChoice::DeathMaintenance
            | FaultChoice::StallMaintenance
            | FaultChoice::OperatorCrash
            | FaultChoice::OperatorRestart
            | FaultChoice::OperatorPause
            | FaultChoice::OperatorApiSlow
            | FaultChoice::OperatorClockRate
            | FaultChoice::OperatorStep
            | FaultChoice::OperatorApiCut
            | FaultChoice::OperatorCloudCut => operator_fault(kind, op, rng),
            FaultChoice::ApiLatency
            | FaultChoice::ApiDown
            | FaultChoice::ApiSlow
            | FaultChoice::CloudDown
            | FaultChoice::CloudAmbiguous
            | FaultChoice::CloudSlow
            | FaultChoice::CloudStaleReads
            | FaultChoice::CloudThrottling => service_fault(kind, rng),
            FaultChoice::Drift => (
                rng.random_range(30_000..=300_000),
                FaultKind::Drift {
                    node: if rng.random_bool(0.5) { op.clone() } else { n },
                    ppm: rng.random_range(-500..=500),
                },
            ),
        };
        out.push(Fault {
            at_ms,
            dur_ms,
            kind: k,
        });
    }
    out.sort_by_key(|f| f.at_ms);
    out
}

/// A fault of node `n` (its agent, its clock, its links): its length and kind.
fn node_fault(kind: FaultChoice, n: String, rng: &mut rand_chacha::ChaCha8Rng) -> (u64, FaultKind) {
    let s = |x: &str| x.to_string();
    match kind {
        FaultChoice::DeathStatusWriter => (
            0,
            FaultKind::TaskDeath {
                node: n,
                task: s("status-writer"),
            },
        ),
        FaultChoice::StallStatusWriter => (
            rng.random_range(5_000..=120_000),
            FaultKind::TaskStall {
                node: n,
                task: s("status-writer"),
            },
        ),
        FaultChoice::AgentCrash => (
            0,
            FaultKind::ProcessCrash {
                node: n,
                process: s("cilium-agent"),
            },
        ),
        FaultChoice::NodeStep => (
            0,
            FaultKind::ClockStep {
                node: n,
                delta_ms: rng.random_range(-300_000..=300_000),
            },
        ),
        FaultChoice::NodeApiCut => (
            rng.random_range(5_000..=120_000),
            FaultKind::Partition {
                a: vec![n],
                b: vec![s("apiserver")],
            },
        ),
        FaultChoice::NodeIsolate => (
            rng.random_range(5_000..=120_000),
            FaultKind::Isolate { node: n },
        ),
        other => unreachable!("not a cilium node fault {other:?}"),
    }
}

/// A fault of operator process `op` (it may or may not lead): its length and kind.
fn operator_fault(
    kind: FaultChoice,
    op: String,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> (u64, FaultKind) {
    let s = |x: &str| x.to_string();
    match kind {
        FaultChoice::DeathMaintenance => (
            0,
            FaultKind::TaskDeath {
                node: op,
                task: s("maintenance"),
            },
        ),
        FaultChoice::StallMaintenance => (
            rng.random_range(5_000..=240_000),
            FaultKind::TaskStall {
                node: op,
                task: s("maintenance"),
            },
        ),
        FaultChoice::OperatorCrash => (
            0,
            FaultKind::ProcessCrash {
                node: op,
                process: s("cilium-operator"),
            },
        ),
        FaultChoice::OperatorRestart => (
            rng.random_range(1_000..=30_000),
            FaultKind::ServiceRestart { node: op },
        ),
        FaultChoice::OperatorPause => (
            rng.random_range(2_000..=40_000),
            FaultKind::Pause { node: op },
        ),
        FaultChoice::OperatorApiSlow => (
            rng.random_range(10_000..=120_000),
            FaultKind::Latency {
                node: op,
                extra_ms: rng.random_range(500..=6_000),
            },
        ),
        FaultChoice::OperatorClockRate => (
            rng.random_range(30_000..=300_000),
            FaultKind::ClockRate {
                node: op,
                ppm: rng.random_range(-400_000..=600_000),
            },
        ),
        FaultChoice::OperatorStep => (
            0,
            FaultKind::ClockStep {
                node: op,
                delta_ms: rng.random_range(-300_000..=300_000),
            },
        ),
        FaultChoice::OperatorApiCut => (
            rng.random_range(5_000..=180_000),
            FaultKind::Partition {
                a: vec![op],
                b: vec![s("apiserver")],
            },
        ),
        FaultChoice::OperatorCloudCut => (
            rng.random_range(5_000..=120_000),
            FaultKind::Partition {
                a: vec![op],
                b: vec![s("cloud")],
            },
        ),
        other => unreachable!("not a cilium operator fault {other:?}"),
    }
}

/// A fault of the API server or the cloud IP API: its length and kind.
fn service_fault(kind: FaultChoice, rng: &mut rand_chacha::ChaCha8Rng) -> (u64, FaultKind) {
    let s = |x: &str| x.to_string();
    match kind {
        FaultChoice::ApiLatency => (
            rng.random_range(10_000..=120_000),
            FaultKind::Latency {
                node: s("apiserver"),
                extra_ms: rng.random_range(100..=5_000),
            },
        ),
        FaultChoice::ApiDown => (
            rng.random_range(2_000..=30_000),
            FaultKind::ServiceUnavailable {
                node: s("apiserver"),
            },
        ),
        FaultChoice::ApiSlow => (
            rng.random_range(10_000..=60_000),
            FaultKind::ServiceSlow {
                node: s("apiserver"),
                extra_ms: rng.random_range(100..=3_000),
            },
        ),
        FaultChoice::CloudDown => (
            rng.random_range(5_000..=60_000),
            FaultKind::ServiceUnavailable { node: s("cloud") },
        ),
        FaultChoice::CloudAmbiguous => (
            rng.random_range(60_000..=400_000),
            FaultKind::ServiceAmbiguous {
                node: s("cloud"),
                percent: rng.random_range(20..=100),
            },
        ),
        FaultChoice::CloudSlow => (
            rng.random_range(10_000..=120_000),
            FaultKind::ServiceSlow {
                node: s("cloud"),
                extra_ms: rng.random_range(500..=8_000),
            },
        ),
        FaultChoice::CloudStaleReads => (
            rng.random_range(30_000..=600_000),
            FaultKind::StaleReads {
                node: s("cloud"),
                lag_ms: rng.random_range(50..=sim::cloud::stale::MAX_LAG_MS),
            },
        ),
        FaultChoice::CloudThrottling => (
            rng.random_range(10_000..=300_000),
            FaultKind::Throttling {
                node: s("cloud"),
                percent: rng.random_range(50..=100),
            },
        ),
        other => unreachable!("not a cilium service fault {other:?}"),
    }
}

/// The model's switches a run's `--fix` and `--bug` names turn on.
fn switches(spec: &RunSpec) -> Switches {
    let fix = |name: &str| spec.fixes.iter().any(|f| f == name);
    let bug = |name: &str| spec.bugs.iter().any(|b| b == name);
    Switches {
        no_handshake: bug("cilium-no-handshake"),
        adopt_release_ips: fix("cilium-adopt-release-ips"),
        exit_on_lost_lead: fix("cilium-exit-on-lost-lead"),
        readd_released_ip: fix("cilium-readd-released-ip"),
        restore_before_ack: fix("cilium-restore-before-ack"),
        keep_released: fix("cilium-keep-released"),
        readd_after_resync: fix("cilium-readd-after-resync"),
        readd_excess_ip: fix("cilium-readd-excess-ip"),
        fence_cloud: fix("cilium-fence-cloud"),
        hold_unknown_release: fix("cilium-hold-unknown-release"),
        mutant_release_unacked: bug("cilium-mutant-release-unacked"),
        mutant_no_delay: bug("cilium-mutant-no-delay"),
        mutant_unassign_by_count: bug("cilium-mutant-unassign-by-count"),
        mutant_ack_allocated: bug("cilium-mutant-ack-allocated"),
        mutant_allocate_held: bug("cilium-mutant-allocate-held"),
        mutant_mark_used: bug("cilium-mutant-mark-used"),
        mutant_keep_released_entry: bug("cilium-mutant-keep-released-entry"),
        mutant_keep_aborted: bug("cilium-mutant-keep-aborted"),
        mutant_never_mark: bug("cilium-mutant-never-mark"),
        mutant_no_allocation: bug("cilium-mutant-no-allocation"),
        mutant_keep_readded_released: bug("cilium-mutant-keep-readded-released"),
        mutant_never_abort: bug("cilium-mutant-never-abort"),
        mutant_ipam_stalls: bug("cilium-mutant-ipam-stalls"),
        mutant_mark_beyond_excess: bug("cilium-mutant-mark-beyond-excess"),
        mutant_delay_from_start: bug("cilium-mutant-delay-from-start"),
    }
}

/// Runs one Cilium scenario.
pub fn run(
    _family: Family,
    spec: &RunSpec,
    o: &CiliumOptions,
    coverage: &'static [&'static str],
) -> Outcome {
    let names = o.node_names();
    let n = o.nodes as usize;
    let nodes: Vec<NodeSpec> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            // Clocks: index 0 of the options is the operator, then the nodes.
            let c = if i < n {
                i + 1
            } else if name == "operator" {
                0
            } else {
                usize::MAX
            };
            NodeSpec {
                name: name.clone(),
                offset_us: o.clock_offset_ms.get(c).copied().unwrap_or(0) * 1000,
                drift_ppm: o.drift_ppm.get(c).copied().unwrap_or(0),
            }
        })
        .collect();
    let cfg = spec.sim_config(
        nodes,
        (o.latency_min_us, o.latency_max_us),
        FAULT_WINDOW_MS,
        LIVENESS_MS,
    );
    let sw = switches(spec);
    let node_names: Vec<String> = names[..n].to_vec();
    let watermarks = monitor::Watermarks {
        pre: PRE_ALLOCATE,
        min: o.min_allocate as usize,
        maw: o.max_above_watermark as usize,
        max: o.max_allocate as usize,
    };
    let capacity = (o.enis * ENI_CAPACITY) as usize;
    let mut monitor = CiliumMonitor::new(names.clone(), n, capacity, watermarks, coverage);
    let api = monitor.api_slot();
    let (o2, names2) = (o.clone(), names.clone());
    // Initial pools: pre-allocate IPs on eni-0 of every node (the cloud's picks for this seed,
    // replayed here on a copy of its subnet so that the monitor knows them).
    let mut subnet = sim::cloud::Subnet::of_run(cfg.seed, o.subnet_size);
    let initial: Vec<Vec<String>> = (0..n)
        .map(|_| {
            let ips = subnet
                .take(PRE_ALLOCATE as u32)
                .expect("the subnet has room");
            ips.iter().map(|ip| ip.to_string()).collect()
        })
        .collect();
    for (i, ips) in initial.iter().enumerate() {
        for ip in ips {
            monitor.assigned_at_start(i, short(ip), sim::cloud::eni_name(0));
        }
    }
    simulate(cfg, Box::new(monitor), move |world| {
        let idx = |name: &str| names2.iter().position(|x| x == name).unwrap() as NodeIx;
        let kube = sim::kube::Kube::install(world, idx("apiserver"));
        // The Lease's holder as stored: `leader-runs-ipam`'s ground truth.
        kube.record_objects(sim::leaderelection::LEASE_KIND);
        *api.borrow_mut() = Some(kube.clone()); // the monitor reads the CiliumNodes it stores
        let cloud = sim::cloud::Cloud::install_with(
            world,
            idx("cloud"),
            sim::cloud::CloudConfig {
                capacity: ENI_CAPACITY,
                subnet_size: o2.subnet_size,
                internal_errors_per_mille: CLOUD_INTERNAL_ERRORS_PER_MILLE,
            },
        );
        let pod_store = model::cilium::kubelet::PodStore::default();
        for (i, name) in node_names.iter().enumerate() {
            cloud.add_instance(name, o2.enis);
            let eni = sim::cloud::eni_name(0);
            let ips = cloud.seed_assign(name, &eni, PRE_ALLOCATE as u32);
            debug_assert!(ips.iter().map(|ip| ip.as_str()).eq(initial[i].iter()));
            let pool: BTreeMap<Short, Short> = ips.into_iter().map(|ip| (ip, eni)).collect();
            kube.seed_object(
                KIND,
                name,
                serde_json::json!({ "pool": pool }),
                serde_json::json!({}),
            );
            model::cilium::agent::install(
                world,
                i as NodeIx,
                &kube,
                o2.workloads[i].clone(),
                &sw,
                &pod_store,
            );
        }
        let cfg = OperatorConfig {
            nodes: node_names.clone(),
            limits: Limits {
                pre_allocate: PRE_ALLOCATE,
                min_allocate: o2.min_allocate as usize,
                max_allocate: o2.max_allocate as usize,
                max_above_watermark: o2.max_above_watermark as usize,
            },
            release_excess: true,
            enis: o2.enis,
            eni_capacity: ENI_CAPACITY,
            shutdown: model::cilium::operator::shutdown::StopSequence::new(
                std::time::Duration::from_millis(o2.informer_stop_ms),
                std::time::Duration::from_millis(o2.shutdown_linger_ms),
            ),
            switches: sw.clone(),
            pods: pod_store,
        };
        for node in o2.operator_names() {
            model::cilium::operator::install(world, idx(&node), &kube, &cloud, cfg.clone());
        }
    })
}

mod bounds;
pub use bounds::*;
pub mod fault_choice;
pub mod findings;
pub mod invariants;
mod monitor;
pub mod report;
mod stop_draw;
pub mod switches;
mod system;
use monitor::short;
pub use monitor::CiliumMonitor;
pub use system::Cilium;

/// Requests in a thousand the scenarios' cloud answers with a transient `InternalError` or
/// `Unavailable`, outside any fault (`sim::cloud`, "Transient server errors"). Assumed: EC2
/// publishes no rate; one in a thousand makes them show in every run's few hundred calls
/// without making the SDK's three attempts all fail more than once in a billion operations.
pub const CLOUD_INTERNAL_ERRORS_PER_MILLE: u32 = 1;
