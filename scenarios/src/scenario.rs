//! The scenario catalog and the bug/fix switch registry.

use crate::calico::{self, CalicoOptions, Family};
use serde::{Deserialize, Serialize};
use sim::{Outcome, Schedule};

/// The options a seed drew, per system (printed next to the seed, stored in replay files).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Options {
    /// A Calico scenario's options.
    Calico(CalicoOptions),
    /// A Cilium scenario's options.
    Cilium(crate::cilium::CiliumOptions),
    /// A MetalLB scenario's options.
    Metallb(crate::metallb::MetallbOptions),
}

/// Swarm testing: each fault kind is on with probability 1/2, and at least one is (drawn from `rng`
/// in a fixed order, so the options are a function of the seed).
pub(crate) fn draw_fault_kinds(rng: &mut rand_chacha::ChaCha8Rng, kinds: &[&str]) -> Vec<String> {
    use rand::seq::IndexedRandom;
    use rand::Rng;
    let mut on: Vec<String> = kinds
        .iter()
        .filter(|_| rng.random_bool(0.5))
        .map(|s| s.to_string())
        .collect();
    if on.is_empty() {
        on.push(kinds.choose(rng).unwrap().to_string());
    }
    on
}

/// Wall clock offsets (ms) and drifts (ppm) of `n` nodes: with `skew`, offsets up to
/// `max_offset_ms` either way and drifts up to 500 ppm; without, offsets within 0.5 s and no drift.
pub(crate) fn draw_clocks(
    rng: &mut rand_chacha::ChaCha8Rng,
    n: usize,
    skew: bool,
    max_offset_ms: i64,
) -> (Vec<i64>, Vec<i64>) {
    use rand::Rng;
    let offsets = (0..n)
        .map(|_| {
            if skew {
                rng.random_range(-max_offset_ms..=max_offset_ms)
            } else {
                rng.random_range(-500..=500)
            }
        })
        .collect();
    let drifts = (0..n)
        .map(|_| {
            if skew {
                rng.random_range(-500..=500)
            } else {
                0
            }
        })
        .collect();
    (offsets, drifts)
}

/// Everything that determines a run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The scenario.
    pub scenario: &'static Scenario,
    /// The seed.
    pub seed: u64,
    /// Bug switches (`--bug`).
    pub bugs: Vec<String>,
    /// Fix switches (`--fix`).
    pub fixes: Vec<String>,
    /// Options (drawn from the seed unless replayed or shrunk).
    pub options: Options,
    /// Fault schedule (likewise).
    pub schedule: Schedule,
    /// Keep the JSON-lines trace.
    pub keep_trace: bool,
    /// Run a longer (or shorter) fault window than the scenario's (cost measurements).
    pub fault_window_ms: Option<u64>,
}

impl RunSpec {
    /// The spec a seed draws.
    pub fn from_seed(
        scenario: &'static Scenario,
        seed: u64,
        bugs: &[String],
        fixes: &[String],
    ) -> RunSpec {
        let (options, schedule) = (scenario.draw)(seed);
        RunSpec {
            scenario,
            seed,
            bugs: bugs.to_vec(),
            fixes: fixes.to_vec(),
            options,
            schedule,
            keep_trace: false,
            fault_window_ms: None,
        }
    }

    /// The simulation settings of this spec for a scenario's nodes, latencies and phase lengths.
    pub fn sim_config(
        &self,
        nodes: Vec<sim::NodeSpec>,
        latency_us: (u64, u64),
        fault_window_ms: u64,
        liveness_ms: u64,
    ) -> sim::SimConfig {
        sim::SimConfig {
            seed: self.seed,
            nodes,
            net: sim::NetSpec {
                latency_min_us: latency_us.0,
                latency_max_us: latency_us.1,
            },
            schedule: self.schedule.clone(),
            fault_window_ms: self.fault_window_ms.unwrap_or(fault_window_ms),
            liveness_ms,
            keep_trace: self.keep_trace,
        }
    }

    /// Runs it on the current thread (use `sim::runtime::on_fresh_thread`).
    pub fn run(&self) -> Outcome {
        (self.scenario.run)(self)
    }

    /// The `faultline run` command line that reproduces this seed (with its switches).
    pub fn command(&self) -> String {
        let mut c = format!("faultline run {} --seed {}", self.scenario.name, self.seed);
        for b in &self.bugs {
            c += &format!(" --bug {b}");
        }
        for f in &self.fixes {
            c += &format!(" --fix {f}");
        }
        c
    }
}

/// A scenario: what it deploys, how a seed draws its options and faults, what it checks.
pub struct Scenario {
    /// Name (`calico-split-brain`).
    pub name: &'static str,
    /// The system it exercises.
    pub system: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Seeds the default model must pass in `cargo test`.
    pub ci_seeds: u64,
    /// Coverage points this scenario must reach within its CI budget.
    pub coverage: &'static [&'static str],
    /// Draws options and a fault schedule from a seed.
    pub draw: fn(u64) -> (Options, Schedule),
    /// Runs a spec.
    pub run: fn(&RunSpec) -> Outcome,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

macro_rules! calico_scenario {
    ($name:literal, $family:expr, $about:literal, $coverage:expr) => {
        Scenario {
            name: $name,
            system: "calico",
            about: $about,
            ci_seeds: 300,
            coverage: $coverage,
            draw: |seed| {
                let (o, s) = calico::draw($family, seed);
                (Options::Calico(o), s)
            },
            run: |spec| calico::run(spec, $family, $coverage),
        }
    };
}

macro_rules! cilium_scenario {
    ($name:literal, $family:expr, $about:literal, $coverage:expr) => {
        Scenario {
            name: $name,
            system: "cilium",
            about: $about,
            ci_seeds: 200,
            coverage: $coverage,
            draw: |seed| {
                let (o, s) = crate::cilium::draw($family, seed);
                (Options::Cilium(o), s)
            },
            run: |spec| crate::cilium::run(spec, $coverage),
        }
    };
}

macro_rules! metallb_scenario {
    ($name:literal, $family:expr, $about:literal, $coverage:expr) => {
        Scenario {
            name: $name,
            system: "metallb",
            about: $about,
            ci_seeds: 300,
            coverage: $coverage,
            draw: |seed| {
                let (o, s) = crate::metallb::draw($family, seed);
                (Options::Metallb(o), s)
            },
            run: |spec| crate::metallb::run(spec, $coverage),
        }
    };
}

/// Every scenario.
pub static SCENARIOS: &[Scenario] = &[
    calico_scenario!(
        "calico-silent-task-death",
        Family::SilentTaskDeath,
        "Calico election under silent deaths and stalls of the elector, compaction and status-watcher tasks",
        &["elector-died-while-master", "handover", "stale-stamp-observed", "election-lease-expired"]
    ),
    calico_scenario!(
        "calico-clock-skew",
        Family::ClockSkew,
        "Calico election with skewed, drifting and stepped wall clocks on the hosts and etcd, plus elector stalls",
        &["backward-step-on-master", "stale-stamp-observed", "handover"]
    ),
    calico_scenario!(
        "calico-split-brain",
        Family::SplitBrain,
        "Calico election under partitions, pauses, latency and etcd unavailability, ambiguity and slowness",
        &["master-paused", "master-cut-from-etcd", "two-hosts-acting-as-master", "etcd-ambiguous-applied", "etcd-ambiguous-lost", "handover"]
    ),
    calico_scenario!(
        "calico-restart",
        Family::Restart,
        "Calico election across graceful restarts, manager crashes, host reboots, etcd restarts and garbled replies",
        &["graceful-step-down", "dead-pid-cleanup", "elector-exit-on-unexpected-error", "handover"]
    ),
    calico_scenario!(
        "calico-status-backlog",
        Family::StatusBacklog,
        "Calico status watchers under a slow Neutron DB, snapshot replays, every timestamp format, skewed and rebooting hosts",
        &["warning-on-young-host", "naive-timestamp-processed", "snapshot-replayed", "unparsable-time-skipped", "compaction-under-mastership-change"]
    ),
    calico_scenario!(
        "calico-watchdog",
        Family::Watchdog,
        "Calico's mutual watchdog (PR 12456) under silent deaths of every worker task, with one-shot and periodic resync",
        &["watchdog-restart", "oneshot-resync-finished", "periodic-resync", "handover"]
    ),
    calico_scenario!(
        "calico-swarm",
        Family::Swarm,
        "Every Calico fault together: tasks, clocks, partitions, pauses, restarts, etcd and Neutron faults",
        &["handover", "two-hosts-acting-as-master", "snapshot-replayed", "stale-stamp-observed", "watchdog-restart"]
    ),
    cilium_scenario!(
        "cilium-silent-task-death",
        crate::cilium::Family::SilentTaskDeath,
        "Cilium IPAM when the agent's status writer or the operator's maintenance dies silently, stalls or restarts",
        &["ip-released", "conflict-on-write", "ack-raced-with-allocation"]
    ),
    cilium_scenario!(
        "cilium-clock-skew",
        crate::cilium::Family::ClockSkew,
        "Cilium IPAM with the operators' and agents' wall clocks skewed, drifting and stepped, and operators' monotonic clocks running fast or slow",
        &["ip-released", "conflict-on-write"]
    ),
    cilium_scenario!(
        "cilium-split-brain",
        crate::cilium::Family::SplitBrain,
        "Cilium IPAM under partitions between agents, the API server, the operators and the cloud, paused operators, slow answers to an operator and operator clocks running fast or slow",
        &["ip-released", "conflict-on-write", "ack-raced-with-allocation"]
    ),
    cilium_scenario!(
        "cilium-swarm",
        crate::cilium::Family::Swarm,
        "Every Cilium fault together, including cloud and API server failures, ambiguity and slowness",
        &["ip-released", "conflict-on-write", "ack-raced-with-allocation", "operator-restart-mid-handshake", "ambiguous-unassign"]
    ),
    metallb_scenario!(
        "metallb-silent-task-death",
        crate::metallb::Family::SilentTaskDeath,
        "MetalLB speakers when the join loop or the IP cache refresh dies silently or stalls, with speaker crashes and partitions",
        &["join-loop-died", "partition-outlived-retention", "duplicate-announcer-resolved", "announcer-taken-over"]
    ),
    metallb_scenario!(
        "metallb-clock-skew",
        crate::metallb::Family::ClockSkew,
        "MetalLB speakers with skewed, drifting and stepped wall clocks, paused nodes and latency spikes",
        &["node-not-ready"]
    ),
    metallb_scenario!(
        "metallb-split-brain",
        crate::metallb::Family::SplitBrain,
        "MetalLB speakers under complete, partial and simplex partitions of 3 to 7 speakers, with and without an API server outage",
        &["partition-outlived-retention", "rejoin-while-apiserver-down", "duplicate-announcer-resolved"]
    ),
    metallb_scenario!(
        "metallb-swarm",
        crate::metallb::Family::Swarm,
        "Every MetalLB fault together: task deaths, clocks, pauses, partitions, API server outages, crashes and graceful restarts",
        &["partition-outlived-retention", "rejoin-while-apiserver-down", "duplicate-announcer-resolved", "node-not-ready", "announcer-taken-over"]
    ),
];

/// Looks a scenario up by name.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Bug (restores historic behaviour) or fix (a remedy for a finding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchKind {
    Bug,
    Fix,
}

/// A `--bug` or `--fix` switch.
#[derive(Debug, Serialize)]
pub struct Switch {
    pub name: &'static str,
    pub kind: SwitchKind,
    pub system: &'static str,
    /// The scenario that finds the bug (or whose finding the fix remedies).
    pub scenario: &'static str,
    pub about: &'static str,
}

/// Every switch.
pub static SWITCHES: &[Switch] = &[
    Switch {
        name: "calico-local-master-flag",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-silent-task-death",
        about: "is_master() reads a flag cleared only by the elector's cleanup: a silently dead elector leaves it set forever (split brain)",
    },
    Switch {
        name: "calico-no-step-down-on-stop",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-restart",
        about: "stopping the manager does not stop the elector: the key lingers a full TTL after a graceful restart",
    },
    Switch {
        name: "calico-no-dead-pid-cleanup",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-restart",
        about: "no same-host dead-pid check: after a master crash and respawn, no master until the TTL runs out",
    },
    Switch {
        name: "calico-watchdog-counts-oneshot",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-watchdog",
        about: "the watchdog registers the one-shot resync: it finishes, the watchdog sees it dead and exits the process, over and over",
    },
    Switch {
        name: "calico-stale-warn-zero-sentinel",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "the stale-warning limiter starts at 0.0: on a host up for less than 300 s the first warning is suppressed",
    },
    Switch {
        name: "calico-stale-warn-naive-crash",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "naive timestamps are not treated as UTC: naive minus aware raises and the agent-status task dies",
    },
    Switch {
        name: "calico-stale-warn-in-snapshot",
        kind: SwitchKind::Bug,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "the stale check also runs during snapshot replay: false warnings for old reports in the snapshot",
    },
    Switch {
        name: "cilium-no-handshake",
        kind: SwitchKind::Bug,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "the operator releases excess IPs directly after the delay, judging use from a status that lags the agent by up to 15 s",
    },
    Switch {
        name: "metallb-join-once",
        kind: SwitchKind::Bug,
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "before PR 662: speakers join the memberlist only at start; after a partition longer than suspicion plus dead-member retention the halves never merge and both announce the IP",
    },
    Switch {
        name: "metallb-rejoin-via-apiserver",
        kind: SwitchKind::Bug,
        system: "metallb",
        scenario: "metallb-split-brain",
        about: "PR 662's first draft: each rejoin lists the peer IPs from the API server instead of the cache, so no rejoin happens while the API server is down",
    },
    Switch {
        name: "cilium-adopt-release-ips",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "a new leader takes the release-ips it finds as its own handshake state instead of rebuilding the map from nothing, which wipes released entries (and agent answers) while the spec still lists the IPs",
    },
    Switch {
        name: "cilium-restore-before-ack",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-silent-task-death",
        about: "after a restart the agent answers the release handshake only once endpoint restore has finished, and restore keeps an IP that is only marked for release (its pod still uses it)",
    },
    Switch {
        name: "cilium-keep-released",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "the operator keeps its released state for an IP until the agent removes the entry, instead of dropping it when a stale interface list puts the IP back on (and then off) its release list; release-ips then never loses the entry before the spec loses the IP",
    },
    Switch {
        name: "cilium-hold-unknown-release",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-swarm",
        about: "after an unassign with no answer, hold the IP's handshake state until a cloud describe that started later shows whether the cloud still holds the IP (gone: released), instead of dropping it once the IP leaves the release list",
    },
    Switch {
        name: "cilium-fence-cloud",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-split-brain",
        about: "every cloud call of the operator carries the Lease transition count it won with, and the cloud refuses a count older than one it has seen (real cloud APIs have no such fence)",
    },
    Switch {
        name: "cilium-exit-on-lost-lead",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-split-brain",
        about: "newer upstream (PR 42920): an operator that loses the lease exits at once instead of a graceful shutdown whose stop hooks keep its IPAM running",
    },
    Switch {
        name: "cilium-readd-released-ip",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "newer upstream (issue 39981): a released entry whose IP is in the CiliumNode's spec pool is dropped, so an IP the cloud gave back to the same node becomes usable again",
    },
    Switch {
        name: "cilium-readd-after-resync",
        kind: SwitchKind::Fix,
        system: "cilium",
        scenario: "cilium-clock-skew",
        about: "issue 39981's clean-up done safely: drop a released entry only when a cloud describe that started after the release lists the IP on the node again, not when the CiliumNode's spec pool (not yet rewritten) still lists it",
    },
    Switch {
        name: "calico-watchdog",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-silent-task-death",
        about: "run PR 12456's mutual watchdog in every worker: a worker whose registered task died exits and is respawned",
    },
    Switch {
        name: "calico-monotonic-stamp",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-clock-skew",
        about: "stamp mastership with the host's monotonic clock, so a backward wall-clock step cannot extend a stale stamp",
    },
    Switch {
        name: "calico-canceller-catches-all",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-swarm",
        about: "the status watcher's watch canceller catches every error of its round-trip write (upstream catches only ConnectionFailedError and dies on a timeout), so a watch broken later is still cancelled and restarted",
    },
    Switch {
        name: "calico-compaction-claims-period",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-swarm",
        about: "compaction claims its period by creating the trigger key in a transaction guarded by its absence before compacting, so two hosts that both believe they are master cannot both compact",
    },
    Switch {
        name: "calico-port-status-recheck",
        kind: SwitchKind::Fix,
        system: "calico",
        scenario: "calico-status-backlog",
        about: "port-status writers ask is_master() before each write, and a watcher starting as master clears the port-status cache so its snapshot rewrites every port",
    },
];

/// Looks a switch up by name and kind.
pub fn switch(name: &str, kind: SwitchKind) -> Option<&'static Switch> {
    SWITCHES.iter().find(|s| s.name == name && s.kind == kind)
}
