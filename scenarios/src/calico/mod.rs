//! The Calico scenarios: `calico-silent-task-death`, `calico-clock-skew`, `calico-split-brain` and
//! `calico-restart`.
//!
//! Each deploys N neutron-server hosts (`h1`..`hN`, 3 to 5) and one etcd node (`etcd`), draws its
//! options from the seed (swarm testing: which fault kinds are on, how many, how long, clock offsets
//! and drifts, latencies), generates a fault schedule (`schedule.rs`) over a 10-minute fault window,
//! and then runs a 150 s liveness phase. The invariants are in [`monitor`].

mod bounds;
pub mod fault_choice;
pub mod findings;
pub mod invariants;
pub mod monitor;
pub mod report;
pub mod switches;
mod system;
pub use system::Calico;
mod ports;
mod schedule;
use crate::calico::fault_choice::FaultChoice;
use crate::faults::Profile;
use schedule::schedule;

use crate::scenario::RunSpec;
use model::calico::felix::FelixConfig;
use model::calico::resync::StartupResync;
use model::calico::status::TimeFormat;
use model::calico::{Config, Switches};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sim::etcd::{AuthConfig, Etcd, EtcdConfig};
use sim::runtime::simulate;
use sim::{NodeIx, NodeSpec, Outcome, Schedule};

/// Length of the fault window (ms).
pub const FAULT_WINDOW_MS: u64 = 600_000;
/// Length of the liveness phase (ms): longer than the liveness bound (about 85 s) with room to spare.
pub const LIVENESS_MS: u64 = 150_000;

/// The options a seed draws for a Calico scenario (printed next to the seed, stored in replay files).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalicoOptions {
    /// Number of neutron-server hosts.
    pub hosts: u32,
    /// One-way network latency range (µs).
    pub latency_min_us: u64,
    /// Upper end of that range (µs).
    pub latency_max_us: u64,
    /// Wall clock offset at start per node (hosts, then etcd), ms.
    pub clock_offset_ms: Vec<i64>,
    /// Wall clock drift per node (hosts, then etcd), ppm.
    pub drift_ppm: Vec<i64>,
    /// Fault kinds this seed enables (swarm testing).
    pub fault_kinds: Vec<FaultChoice>,
    /// How many faults were drawn (broker outages, drawn from their own stream, come on top).
    pub fault_count: u32,
    /// Felix on each compute host (`c1`..).
    pub felix: Vec<FelixConfig>,
    /// Wall clock offset of each compute host at start, ms.
    pub compute_offset_ms: Vec<i64>,
    /// The mutual watchdog of PR 12456 (on with `--fix calico-watchdog`, or drawn by the scenario).
    pub watchdog: bool,
    /// The one host whose `[calico] startup_resync` is `always` (the others' `never`); None:
    /// `always` on every host, the default. `resync_interval_secs` has no effect upstream
    /// (see `model::calico::resync`).
    pub startup_resync_on: Option<u64>,
    /// `etcd_compaction_period_mins`.
    pub compaction_period_min: u64,
    /// etcd auth on (`etcd_username` and `etcd_password` set, etcd's `--auth-token-ttl` at its
    /// default): the drivers' clients re-authenticate and post again after any etcd error. Drawn
    /// from a stream of its own (`draw_auth`), so it moves no other draw.
    #[serde(default)]
    pub etcd_auth: bool,
}

impl CalicoOptions {
    /// The same options with `hosts` neutron-server hosts (clock settings of added hosts: none).
    pub fn with_hosts(&self, hosts: u32) -> CalicoOptions {
        let mut o = self.clone();
        let h = self.hosts as usize;
        let (etcd_offset, etcd_drift) = (self.clock_offset_ms[h], self.drift_ppm[h]);
        o.clock_offset_ms.truncate(h);
        o.drift_ppm.truncate(h);
        o.clock_offset_ms.resize(hosts as usize, 0);
        o.drift_ppm.resize(hosts as usize, 0);
        o.clock_offset_ms.push(etcd_offset);
        o.drift_ppm.push(etcd_drift);
        o.hosts = hosts;
        // A resync host that is no longer there: the default, every host.
        o.startup_resync_on = self.startup_resync_on.filter(|&r| r < u64::from(hosts));
        o
    }

    fn host_names(&self) -> Vec<String> {
        (1..=self.hosts).map(|i| format!("h{i}")).collect()
    }

    fn compute_names(&self) -> Vec<String> {
        (1..=self.felix.len()).map(|i| format!("c{i}")).collect()
    }

    /// Node names in index order: neutron hosts, compute hosts, etcd, neutron-db, rabbitmq.
    pub fn node_names(&self) -> Vec<String> {
        let mut n = self.host_names();
        n.extend(self.compute_names());
        n.push("etcd".into());
        n.push("neutron-db".into());
        n.push(schedule::BROKER.into());
        n
    }
}

/// Which scenario of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `calico-silent-task-death`: silent deaths and stalls of the elector, compaction and
    /// status-watcher tasks.
    SilentTaskDeath,
    /// `calico-clock-skew`: skewed, drifting and stepped wall clocks on the hosts and etcd, plus
    /// elector stalls.
    ClockSkew,
    /// `calico-split-brain`: partitions, pauses, latency and etcd unavailability, ambiguity and
    /// slowness.
    SplitBrain,
    /// `calico-restart`: graceful restarts, manager crashes, host reboots, etcd restarts and
    /// garbled replies.
    Restart,
    /// `calico-status-backlog`: the status watchers under a slow Neutron DB, snapshot replays,
    /// every timestamp format, skewed and rebooting compute hosts.
    StatusBacklog,
    /// `calico-watchdog`: the mutual watchdog under silent deaths of every worker task.
    Watchdog,
    /// `calico-swarm`: every Calico fault kind together.
    Swarm,
}

fn pick_subset(
    rng: &mut ChaCha8Rng,
    all: &[FaultChoice],
    at_least_one_of: &[FaultChoice],
) -> Vec<FaultChoice> {
    let mut on: Vec<FaultChoice> = all
        .iter()
        .filter(|_| rng.random_bool(0.5))
        .copied()
        .collect();
    if !on.iter().any(|k| at_least_one_of.contains(k)) {
        on.push(*at_least_one_of.choose(rng).unwrap());
    }
    on.sort();
    on
}

/// Draws the options and the fault schedule of `family` for `seed` (the adversarial profile).
pub fn draw(family: Family, seed: u64) -> (CalicoOptions, Schedule) {
    draw_in(family, seed, Profile::Adversarial)
}

/// The fault kinds a seed of `family` enables under `profile`: the realistic profile leaves out
/// the hypothetical ones (and, when every subject kind is hypothetical, takes any kind left).
fn pick_kinds(rng: &mut ChaCha8Rng, family: Family, profile: Profile) -> Vec<FaultChoice> {
    if profile == Profile::Adversarial {
        return pick_subset(rng, fault_kinds(family), subject_kinds(family));
    }
    let all = crate::faults::known_causes(fault_kinds(family), FaultChoice::facts);
    let mut subject = crate::faults::known_causes(subject_kinds(family), FaultChoice::facts);
    if subject.is_empty() {
        subject = all.clone();
    }
    pick_subset(rng, &all, &subject)
}

/// Draws the options and the fault schedule of `family` for `seed` under `profile`.
pub fn draw_in(family: Family, seed: u64, profile: Profile) -> (CalicoOptions, Schedule) {
    let mut rng = sim::rng::rng_for(seed, "calico-swarm");
    let hosts = rng.random_range(3..=5u32);
    let latency_min_us = rng.random_range(200..=2_000u64);
    let latency_max_us = latency_min_us + rng.random_range(0..=8_000u64);
    let n = hosts as usize + 1;
    let (offset_max_ms, drift_max) = match family {
        Family::ClockSkew | Family::Swarm => (
            rng.random_range(0..=30_000i64),
            rng.random_range(0..=500i64),
        ),
        _ => (rng.random_range(0..=500i64), rng.random_range(0..=50i64)),
    };
    let clock_offset_ms = (0..n)
        .map(|_| rng.random_range(-offset_max_ms..=offset_max_ms))
        .collect();
    let drift_ppm = (0..n)
        .map(|_| rng.random_range(-drift_max..=drift_max))
        .collect();
    let fault_kinds = pick_kinds(&mut rng, family, profile);
    let fault_count = match family {
        Family::Swarm => rng.random_range(1..=16u32),
        _ => rng.random_range(1..=8u32),
    };
    // Compute hosts and their Felix: few in the election scenarios (they only need master-only work
    // to happen), many where the status path is the subject.
    let computes = match family {
        Family::StatusBacklog => rng.random_range(10..=40usize),
        Family::Swarm => rng.random_range(3..=30usize),
        Family::Watchdog => rng.random_range(3..=6usize),
        _ => rng.random_range(2..=4usize),
    };
    let status_focus = matches!(family, Family::StatusBacklog | Family::Swarm);
    let felix = draw_felix(&mut rng, computes, status_focus);
    // Compute hosts' clocks: in the status scenarios some run minutes behind or ahead, so skew shows
    // up as lag (or hides it).
    let compute_offset_ms = (0..computes)
        .map(|_| {
            if status_focus && rng.random_bool(0.3) {
                rng.random_range(-900_000..=900_000i64)
            } else {
                rng.random_range(-2_000..=2_000i64)
            }
        })
        .collect();
    let watchdog = match family {
        Family::Watchdog => true,
        Family::Swarm => rng.random_bool(0.5),
        _ => false,
    };
    // Half the deployments resync on every host (the default), half on one host only (the
    // topology `get_workers`' docstring suggests). It takes the place of the draw of the
    // pre-80d666fd13 `resync_interval_secs`, with as many draws, so the later draws keep their
    // values.
    let startup_resync_on = if rng.random_bool(0.5) {
        None
    } else {
        Some(rng.random_range(0..u64::from(hosts)))
    };
    let compaction_period_min = if status_focus {
        rng.random_range(1..=10u64)
    } else {
        60
    };
    let opts = CalicoOptions {
        hosts,
        latency_min_us,
        latency_max_us,
        clock_offset_ms,
        drift_ppm,
        fault_kinds,
        fault_count,
        felix,
        compute_offset_ms,
        watchdog,
        startup_resync_on,
        compaction_period_min,
        etcd_auth: false,
    };
    let mut schedule = schedule(&opts, &mut rng);
    let mut opts = CalicoOptions {
        etcd_auth: draw_auth(seed),
        ..opts
    };
    if profile == Profile::Realistic {
        crate::faults::realize_schedule(&mut schedule, &mut rng);
        crate::faults::realize_clocks(&mut opts.clock_offset_ms, &mut opts.drift_ppm, &mut rng);
        crate::faults::realize_clocks(&mut opts.compute_offset_ms, &mut [], &mut rng);
    }
    if matches!(family, Family::StatusBacklog | Family::Swarm) {
        let outages = schedule::broker_outages(seed, profile == Profile::Realistic);
        if !outages.is_empty() {
            opts.fault_kinds.push(FaultChoice::BrokerOutage);
            opts.fault_kinds.sort();
            schedule.extend(outages);
            schedule.sort_by_key(|f| f.at_ms);
        }
    }
    (opts, schedule)
}

/// Whether a seed's deployment has etcd auth on: half of them. No public source counts the
/// OpenStack deployments that set `etcd_username` and `etcd_password` (Calico's install guide
/// offers them as an option), and both paths need the same coverage: with auth every request of
/// the drivers that meets an etcd error is sent up to three times (`Etcd3AuthClient.post`, see
/// `sim::etcd::auth`), which stretches every outage's effect; without it, once. Its own stream
/// (`calico-etcd-auth`), drawn after everything else, so the faults and clocks of a seed do not
/// depend on it.
fn draw_auth(seed: u64) -> bool {
    sim::rng::rng_for(seed, "calico-etcd-auth").random_bool(0.5)
}

/// The fault kinds `family` draws from (swarm testing: each seed enables a subset).
fn fault_kinds(family: Family) -> &'static [FaultChoice] {
    match family {
        Family::SilentTaskDeath => &[
            FaultChoice::DeathElector,
            FaultChoice::DeathCompaction,
            FaultChoice::DeathAgentStatus,
            FaultChoice::DeathEndpointStatus,
            FaultChoice::DeathAgentStatusWatcher,
            FaultChoice::DeathEndpointStatusWatcher,
            FaultChoice::Stall,
            FaultChoice::Latency,
        ],
        Family::ClockSkew => &[
            FaultChoice::HostStep,
            FaultChoice::EtcdStep,
            FaultChoice::DriftChange,
            FaultChoice::StallElector,
            FaultChoice::DeathElector,
        ],
        Family::SplitBrain => &[
            FaultChoice::Partition,
            FaultChoice::Isolate,
            FaultChoice::Simplex,
            FaultChoice::Flapping,
            FaultChoice::Pause,
            FaultChoice::Latency,
            FaultChoice::EtcdUnavailable,
            FaultChoice::EtcdAmbiguous,
            FaultChoice::EtcdSlow,
        ],
        Family::Restart => &[
            FaultChoice::GracefulRestart,
            FaultChoice::ManagerCrash,
            FaultChoice::HostCrash,
            FaultChoice::EtcdRestart,
            FaultChoice::EtcdHostCrash,
            FaultChoice::EtcdGarbled,
        ],
        Family::StatusBacklog => &[
            FaultChoice::DbSlow,
            FaultChoice::DbUnavailable,
            FaultChoice::HostCrash,
            FaultChoice::WatchCut,
            FaultChoice::EtcdRestart,
            FaultChoice::EtcdHostCrash,
            FaultChoice::ComputeCrash,
            FaultChoice::ComputeIsolate,
            FaultChoice::ComputePause,
            FaultChoice::ComputeStep,
        ],
        Family::Watchdog => &[
            FaultChoice::DeathAny,
            FaultChoice::Stall,
            FaultChoice::ManagerCrash,
            FaultChoice::GracefulRestart,
        ],
        Family::Swarm => &[
            FaultChoice::DeathAny,
            FaultChoice::Stall,
            FaultChoice::Latency,
            FaultChoice::HostStep,
            FaultChoice::EtcdStep,
            FaultChoice::DriftChange,
            FaultChoice::Partition,
            FaultChoice::Isolate,
            FaultChoice::Simplex,
            FaultChoice::Flapping,
            FaultChoice::Pause,
            FaultChoice::EtcdUnavailable,
            FaultChoice::EtcdAmbiguous,
            FaultChoice::EtcdSlow,
            FaultChoice::GracefulRestart,
            FaultChoice::ManagerCrash,
            FaultChoice::HostCrash,
            FaultChoice::EtcdRestart,
            FaultChoice::EtcdHostCrash,
            FaultChoice::EtcdGarbled,
            FaultChoice::DbSlow,
            FaultChoice::DbUnavailable,
            FaultChoice::WatchCut,
            FaultChoice::ComputeCrash,
            FaultChoice::ComputeIsolate,
            FaultChoice::ComputePause,
            FaultChoice::ComputeStep,
        ],
    }
}

/// The kinds of which a seed of `family` enables at least one (the scenario's subject).
fn subject_kinds(family: Family) -> &'static [FaultChoice] {
    match family {
        Family::SilentTaskDeath => &[
            FaultChoice::DeathElector,
            FaultChoice::DeathCompaction,
            FaultChoice::DeathAgentStatus,
            FaultChoice::DeathEndpointStatus,
        ],
        Family::ClockSkew => &[FaultChoice::HostStep],
        Family::SplitBrain => &[
            FaultChoice::Partition,
            FaultChoice::Isolate,
            FaultChoice::Simplex,
            FaultChoice::Flapping,
            FaultChoice::Pause,
        ],
        Family::Restart => &[
            FaultChoice::GracefulRestart,
            FaultChoice::ManagerCrash,
            FaultChoice::HostCrash,
            FaultChoice::EtcdRestart,
            FaultChoice::EtcdHostCrash,
        ],
        Family::StatusBacklog => &[FaultChoice::DbSlow],
        Family::Watchdog => &[FaultChoice::DeathAny],
        Family::Swarm => &[
            FaultChoice::DeathAny,
            FaultChoice::Partition,
            FaultChoice::Pause,
            FaultChoice::HostStep,
            FaultChoice::DbSlow,
        ],
    }
}

/// Felix on each of `computes` compute hosts: its timestamp format, how often its reports are
/// garbled (only where the status path is the subject) and its ports.
fn draw_felix(rng: &mut ChaCha8Rng, computes: usize, status_focus: bool) -> Vec<FelixConfig> {
    (0..computes)
        .map(|_| {
            let format = match rng.random_range(0..10) {
                0..=4 => TimeFormat::Zulu,
                5..=7 => TimeFormat::Offset {
                    minutes: *[0, 60, -300, 330, 540].choose(rng).unwrap(),
                },
                _ => TimeFormat::Naive,
            };
            let garbage_percent = if status_focus && rng.random_bool(0.2) {
                rng.random_range(1..=5)
            } else {
                0
            };
            FelixConfig {
                format,
                garbage_percent,
                ports: rng.random_range(1..=3),
            }
        })
        .collect()
}

/// Smaller options for shrinking: one host fewer, or one Felix fewer, if the schedule names
/// neither (the last of each goes, so the other names stay).
pub(crate) fn smaller_options(o: &CalicoOptions, schedule: &Schedule) -> Vec<CalicoOptions> {
    let named = |name: &str| schedule.iter().any(|f| f.kind.nodes().contains(&name));
    let mut out = Vec::new();
    if o.hosts > 2 && !named(&format!("h{}", o.hosts)) {
        let mut o2 = o.clone();
        o2.hosts -= 1;
        o2.clock_offset_ms.remove(o2.hosts as usize);
        o2.drift_ppm.remove(o2.hosts as usize);
        out.push(o2);
    }
    if o.felix.len() > 1 && !named(&format!("c{}", o.felix.len())) {
        let mut o2 = o.clone();
        o2.felix.pop();
        o2.compute_offset_ms.pop();
        out.push(o2);
    }
    out
}

/// Maps switch names to the model's switches.
pub fn switches(spec: &RunSpec) -> Switches {
    let has = |n: &str| spec.bugs.iter().chain(&spec.fixes).any(|s| s == n);
    Switches {
        local_master_flag: has("calico-local-master-flag"),
        no_step_down_on_stop: has("calico-no-step-down-on-stop"),
        no_dead_pid_cleanup: has("calico-no-dead-pid-cleanup"),
        port_status_recheck: has("calico-port-status-recheck"),
        port_status_key_lock: has("calico-port-status-key-lock"),
        port_status_write_deadline: has("calico-port-status-write-deadline"),
        snapshot_checks_stopped: has("calico-snapshot-checks-stopped"),
        canceller_catches_all: has("calico-canceller-catches-all"),
        watch_create_timeout: has("calico-watch-create-timeout"),
        compaction_claims_period: has("calico-compaction-claims-period"),
        monotonic_stamp: has("calico-monotonic-stamp"),
        watchdog_counts_oneshot: has("calico-watchdog-counts-oneshot"),
        stale_warn_zero_sentinel: has("calico-stale-warn-zero-sentinel"),
        stale_warn_naive_crash: has("calico-stale-warn-naive-crash"),
        stale_warn_in_snapshot: has("calico-stale-warn-in-snapshot"),
        mutant_campaign_unguarded: has("calico-mutant-campaign-unguarded"),
        mutant_is_master_ignores_age: has("calico-mutant-is-master-ignores-age"),
        mutant_lost_campaign_stamps: has("calico-mutant-lost-campaign-stamps"),
        mutant_step_down_unguarded: has("calico-mutant-step-down-unguarded"),
        mutant_no_recampaign: has("calico-mutant-no-recampaign"),
        mutant_step_down_keeps_key: has("calico-mutant-step-down-keeps-key"),
        mutant_refresh_skips_keepalive: has("calico-mutant-refresh-skips-keepalive"),
        mutant_loss_keeps_stamp: has("calico-mutant-loss-keeps-stamp"),
        mutant_watcher_not_stopped: has("calico-mutant-watcher-not-stopped"),
        mutant_snapshot_flag_unset: has("calico-mutant-snapshot-flag-unset"),
        mutant_stale_warn_unlimited: has("calico-mutant-stale-warn-unlimited"),
        mutant_watcher_dies_on_unparsable: has("calico-mutant-watcher-dies-on-unparsable"),
        mutant_stale_warn_missing: has("calico-mutant-stale-warn-missing"),
        mutant_stale_threshold_ms: has("calico-mutant-stale-threshold-ms"),
        mutant_compaction_ignores_period: has("calico-mutant-compaction-ignores-period"),
        mutant_compaction_gives_up: has("calico-mutant-compaction-gives-up"),
        mutant_watchdog_registers_watcher: has("calico-mutant-watchdog-registers-watcher"),
        mutant_agent_dedup_by_host: has("calico-mutant-agent-dedup-by-host"),
        mutant_port_write_no_retry: has("calico-mutant-port-write-no-retry"),
        mutant_felix_status_no_lease: has("calico-mutant-felix-status-no-lease"),
        mutant_no_round_trip: has("calico-mutant-no-round-trip"),
        mutant_resync_waits_for_master: has("calico-mutant-resync-waits-for-master"),
        mutant_refresh_every_half_ttl: has("calico-mutant-refresh-every-half-ttl"),
    }
}

/// Runs one Calico scenario (on the current thread).
pub fn run(
    family: Family,
    spec: &RunSpec,
    o: &CalicoOptions,
    coverage: &'static [&'static str],
) -> Outcome {
    let names = o.node_names();
    let (h, c) = (o.hosts as usize, o.felix.len());
    let offset_ms = |i: usize| -> i64 {
        if i < h {
            o.clock_offset_ms.get(i).copied().unwrap_or(0)
        } else if i < h + c {
            o.compute_offset_ms.get(i - h).copied().unwrap_or(0)
        } else if i == h + c {
            o.clock_offset_ms.get(h).copied().unwrap_or(0)
        } else {
            0
        }
    };
    let drift = |i: usize| -> i64 {
        if i < h {
            o.drift_ppm.get(i).copied().unwrap_or(0)
        } else if i == h + c {
            o.drift_ppm.get(h).copied().unwrap_or(0)
        } else {
            0
        }
    };
    let nodes: Vec<NodeSpec> = names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeSpec {
            name: name.clone(),
            offset_us: offset_ms(i) * 1000,
            drift_ppm: drift(i),
        })
        .collect();
    let cfg = spec.sim_config(
        nodes,
        (o.latency_min_us, o.latency_max_us),
        FAULT_WINDOW_MS,
        LIVENESS_MS,
    );
    let sw = switches(spec);
    let watchdog = o.watchdog
        || sw.watchdog_counts_oneshot
        || spec.fixes.iter().any(|f| f == "calico-watchdog");
    let model_cfg = Config {
        switches: sw,
        watchdog,
        startup_resync: match o.startup_resync_on {
            None => StartupResync::Everywhere,
            Some(h) => StartupResync::OnlyOn(h as NodeIx),
        },
        compaction_period: std::time::Duration::from_secs(o.compaction_period_min * 60),
        ..Config::default()
    };
    // The status-path liveness check belongs to the scenarios about the status path; the election
    // scenarios check the election and master-only invariants.
    let status_path = matches!(
        family,
        Family::StatusBacklog | Family::Watchdog | Family::Swarm
    );
    let monitor = monitor::CalicoMonitor::new(
        names.clone(),
        &model_cfg.region,
        h,
        c,
        model_cfg.compaction_period,
        status_path,
        coverage,
    );
    let hosts: Vec<NodeIx> = (0..h as NodeIx).collect();
    let felix: Vec<(NodeIx, FelixConfig)> = o
        .felix
        .iter()
        .enumerate()
        .map(|(i, f)| ((h + i) as NodeIx, f.clone()))
        .collect();
    let (etcd_ix, db_ix, broker_ix) = (
        (h + c) as NodeIx,
        (h + c + 1) as NodeIx,
        (h + c + 2) as NodeIx,
    );
    let etcd_auth = o.etcd_auth;
    simulate(cfg, Box::new(monitor), move |world| {
        let etcd_cfg = EtcdConfig {
            auth: etcd_auth.then(AuthConfig::default),
            ..EtcdConfig::default()
        };
        let etcd = Etcd::install(world, etcd_ix, etcd_cfg);
        let neutron = model::calico::neutron::install(world, db_ix);
        let broker = model::calico::broker::install(world, broker_ix, neutron.clone());
        model::calico::felix::install(world, &felix, &etcd, &model_cfg.region, &model_cfg.switches);
        model::calico::install(world, &hosts, &etcd, &neutron, &broker, model_cfg);
    })
}
