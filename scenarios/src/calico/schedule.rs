//! The fault schedule a Calico seed draws: `o.fault_count` faults of the kinds its options enable,
//! each drawn by what it hits (the stores, a compute host, a clock, the network between the hosts
//! and etcd, a host itself). Which schedule a seed gives depends on the order of the random draws
//! (the findings' pinned seeds and the golden trace hashes rely on it): keep it.

use super::{CalicoOptions, FAULT_WINDOW_MS};
use crate::calico::fault_choice::FaultChoice;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sim::{Fault, FaultKind, Schedule};

/// The message broker's node (RabbitMQ, between neutron-server's casts and its RPC servers).
pub(crate) const BROKER: &str = "rabbitmq";

/// Tasks a silent death or a stall can hit.
const TASKS: &[&str] = &[
    "elector",
    "compaction",
    "agent-status",
    "endpoint-status",
    "agent-status-watcher",
    "endpoint-status-watcher",
];
/// Every long-running worker task (for the watchdog scenarios).
const ALL_TASKS: &[&str] = &[
    "elector",
    "compaction",
    "agent-status",
    "endpoint-status",
    "agent-status-watcher",
    "endpoint-status-watcher",
    "port-writer-1",
    "port-writer-2",
    "port-writer-3",
    "port-writer-4",
    "resync",
    "status-loop",
    "resync-monitor",
];

/// Draws `o.fault_count` faults of the kinds `o` allows, in time order.
pub(super) fn schedule(o: &CalicoOptions, rng: &mut ChaCha8Rng) -> Schedule {
    let hosts = o.host_names();
    let computes = o.compute_names();
    let mut out = Vec::new();
    // Silent deaths are capped at hosts - 1 electors: with every elector dead no master can ever
    // exist again, which is true by construction and says nothing about the protocol.
    let mut elector_deaths = 0u32;
    let mut drawn = 0;
    while drawn < o.fault_count {
        drawn += 1;
        let kind = *o.fault_kinds.choose(rng).unwrap();
        let at_ms = rng.random_range(5_000..FAULT_WINDOW_MS - 30_000);
        let host = hosts.choose(rng).unwrap().clone();
        let compute = computes
            .choose(rng)
            .cloned()
            .unwrap_or_else(|| host.clone());
        let (dur_ms, fk) = match kind {
            FaultChoice::DbSlow
            | FaultChoice::DbUnavailable
            | FaultChoice::WatchCut
            | FaultChoice::EtcdUnavailable
            | FaultChoice::EtcdAmbiguous
            | FaultChoice::EtcdSlow
            | FaultChoice::EtcdGarbled
            | FaultChoice::EtcdRestart
            | FaultChoice::EtcdHostCrash => store_fault(kind, host, rng),
            FaultChoice::ComputeCrash
            | FaultChoice::ComputeIsolate
            | FaultChoice::ComputePause
            | FaultChoice::ComputeStep => compute_fault(kind, compute, rng),
            k if k.death_of().is_some() => {
                let task = match k.death_of() {
                    Some("any") => ALL_TASKS.choose(rng).unwrap().to_string(),
                    t => t.unwrap_or_default().to_string(),
                };
                if task == "elector" {
                    if elector_deaths + 1 >= o.hosts {
                        continue;
                    }
                    elector_deaths += 1;
                }
                (0, FaultKind::TaskDeath { node: host, task })
            }
            FaultChoice::HostStep | FaultChoice::EtcdStep | FaultChoice::DriftChange => {
                clock_fault(kind, host, rng)
            }
            FaultChoice::Latency
            | FaultChoice::Partition
            | FaultChoice::Isolate
            | FaultChoice::Simplex => network_fault(kind, host, &hosts, rng),
            FaultChoice::Flapping => {
                out.extend(flapping(at_ms, &host, rng));
                continue;
            }
            _ => host_fault(kind, host, rng),
        };
        out.push(Fault {
            at_ms,
            dur_ms,
            kind: fk,
        });
    }
    out.sort_by_key(|f| f.at_ms);
    out
}

/// A fault of the stores, etcd and the Neutron database, or of `host`'s watch on etcd: its length
/// and kind.
fn store_fault(kind: FaultChoice, host: String, rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    let etcd = "etcd".to_string();
    let db = "neutron-db".to_string();
    match kind {
        FaultChoice::DbSlow => (
            rng.random_range(60_000..=400_000),
            FaultKind::ServiceSlow {
                node: db.clone(),
                extra_ms: rng.random_range(500..=8_000),
            },
        ),
        FaultChoice::DbUnavailable => (
            rng.random_range(2_000..=60_000),
            FaultKind::ServiceUnavailable { node: db.clone() },
        ),
        FaultChoice::WatchCut => (
            rng.random_range(11_000..=40_000),
            FaultKind::Simplex {
                from: vec![etcd.clone()],
                to: vec![host],
            },
        ),
        FaultChoice::EtcdUnavailable => (
            rng.random_range(2_000..=30_000),
            FaultKind::ServiceUnavailable { node: etcd.clone() },
        ),
        FaultChoice::EtcdAmbiguous => (
            rng.random_range(10_000..=60_000),
            FaultKind::ServiceAmbiguous {
                node: etcd.clone(),
                percent: rng.random_range(10..=60),
            },
        ),
        FaultChoice::EtcdSlow => (
            rng.random_range(10_000..=60_000),
            FaultKind::ServiceSlow {
                node: etcd.clone(),
                extra_ms: rng.random_range(100..=3_000),
            },
        ),
        FaultChoice::EtcdGarbled => (
            rng.random_range(5_000..=30_000),
            FaultKind::ServiceGarbled {
                node: etcd.clone(),
                percent: rng.random_range(20..=100),
            },
        ),
        FaultChoice::EtcdRestart => (
            rng.random_range(1_000..=20_000),
            FaultKind::ServiceRestart { node: etcd.clone() },
        ),
        FaultChoice::EtcdHostCrash => (
            rng.random_range(5_000..=120_000),
            FaultKind::Crash { node: etcd.clone() },
        ),
        other => unreachable!("not a calico store fault {other:?}"),
    }
}

/// A fault of a compute host (its Felix reports status): its length and kind.
fn compute_fault(kind: FaultChoice, compute: String, rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    match kind {
        FaultChoice::ComputeCrash => (
            rng.random_range(5_000..=120_000),
            FaultKind::Crash { node: compute },
        ),
        FaultChoice::ComputeIsolate => (
            rng.random_range(5_000..=200_000),
            FaultKind::Isolate { node: compute },
        ),
        FaultChoice::ComputePause => (
            rng.random_range(5_000..=200_000),
            FaultKind::Pause { node: compute },
        ),
        FaultChoice::ComputeStep => {
            let delta =
                rng.random_range(1_000..=900_000i64) * if rng.random_bool(0.5) { -1 } else { 1 };
            (
                0,
                FaultKind::ClockStep {
                    node: compute,
                    delta_ms: delta,
                },
            )
        }
        other => unreachable!("not a calico compute fault {other:?}"),
    }
}

/// A clock fault of `host` or etcd: its length and kind.
fn clock_fault(kind: FaultChoice, host: String, rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    let etcd = "etcd".to_string();
    match kind {
        FaultChoice::HostStep => {
            let delta =
                rng.random_range(1_000..=300_000i64) * if rng.random_bool(0.6) { -1 } else { 1 };
            (
                0,
                FaultKind::ClockStep {
                    node: host,
                    delta_ms: delta,
                },
            )
        }
        FaultChoice::EtcdStep => (
            0,
            FaultKind::ClockStep {
                node: etcd.clone(),
                delta_ms: rng.random_range(-5_000..=5_000),
            },
        ),
        FaultChoice::DriftChange => {
            let node = if rng.random_bool(0.2) {
                etcd.clone()
            } else {
                host
            };
            (
                rng.random_range(0..=300_000),
                FaultKind::Drift {
                    node,
                    ppm: rng.random_range(-500..=500),
                },
            )
        }
        other => unreachable!("not a calico clock fault {other:?}"),
    }
}

/// A network fault between the hosts and etcd (one host's, or a split of the hosts): its length
/// and kind.
fn network_fault(
    kind: FaultChoice,
    host: String,
    hosts: &[String],
    rng: &mut ChaCha8Rng,
) -> (u64, FaultKind) {
    let etcd = "etcd".to_string();
    match kind {
        FaultChoice::Latency => {
            let node = if rng.random_bool(0.3) {
                etcd.clone()
            } else {
                host
            };
            (
                rng.random_range(10_000..=60_000),
                FaultKind::Latency {
                    node,
                    extra_ms: rng.random_range(50..=3_000),
                },
            )
        }
        FaultChoice::Partition => {
            // A complete partition: a non-empty proper subset of hosts on one side, etcd with the rest.
            let mut side: Vec<String> = hosts
                .iter()
                .filter(|_| rng.random_bool(0.5))
                .cloned()
                .collect();
            if side.is_empty() || side.len() == hosts.len() {
                side = vec![host];
            }
            let mut other: Vec<String> = hosts
                .iter()
                .filter(|h| !side.contains(h))
                .cloned()
                .collect();
            other.push(etcd.clone());
            (
                rng.random_range(5_000..=120_000),
                FaultKind::Partition { a: side, b: other },
            )
        }
        FaultChoice::Isolate => (
            rng.random_range(5_000..=120_000),
            FaultKind::Isolate { node: host },
        ),
        FaultChoice::Simplex => {
            let (from, to) = if rng.random_bool(0.5) {
                (vec![etcd.clone()], vec![host])
            } else {
                (vec![host], vec![etcd.clone()])
            };
            (
                rng.random_range(5_000..=120_000),
                FaultKind::Simplex { from, to },
            )
        }
        other => unreachable!("not a calico network fault {other:?}"),
    }
}

/// A link that goes up and down: several short cuts between `host` and etcd from `at_ms`, within
/// the fault window.
fn flapping(at_ms: u64, host: &str, rng: &mut ChaCha8Rng) -> Vec<Fault> {
    let mut out = Vec::new();
    let flaps = rng.random_range(3..=8);
    let mut t = at_ms;
    for _ in 0..flaps {
        let d = rng.random_range(500..=8_000);
        if t + d >= FAULT_WINDOW_MS {
            break;
        }
        out.push(Fault {
            at_ms: t,
            dur_ms: d,
            kind: FaultKind::Partition {
                a: vec![host.to_string()],
                b: vec!["etcd".to_string()],
            },
        });
        t += d + rng.random_range(500..=8_000);
    }
    out
}

/// A fault of `host` itself: a stalled task, a pause, a graceful restart or a crash of its
/// services, process or node: its length and kind.
fn host_fault(kind: FaultChoice, host: String, rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    match kind {
        FaultChoice::Stall => (
            rng.random_range(1_000..=30_000),
            FaultKind::TaskStall {
                node: host,
                task: TASKS.choose(rng).unwrap().to_string(),
            },
        ),
        FaultChoice::StallElector => (
            rng.random_range(5_000..=90_000),
            FaultKind::TaskStall {
                node: host,
                task: "elector".into(),
            },
        ),
        FaultChoice::Pause => (
            rng.random_range(5_000..=120_000),
            FaultKind::Pause { node: host },
        ),
        FaultChoice::GracefulRestart => (
            rng.random_range(2_000..=60_000),
            FaultKind::ServiceRestart { node: host },
        ),
        FaultChoice::ManagerCrash => (
            0,
            FaultKind::ProcessCrash {
                node: host,
                process: "neutron-server/manager".into(),
            },
        ),
        FaultChoice::HostCrash => (
            rng.random_range(5_000..=120_000),
            FaultKind::Crash { node: host },
        ),
        other => unreachable!("unknown calico fault kind {other:?}"),
    }
}

/// The broker outages of a seed: half the seeds enable them (swarm testing), then one or two, at
/// any time of the fault window, of 2 s to 5 minutes (the longest: a restarted clustered node
/// waiting out its 10 retries of 30 s for its peers; see the `broker-outage` choice's facts);
/// the realistic profile brings them to the catalog's sizes. Drawn from a stream of their own
/// (`calico-broker`), so that no other draw of the seed moves.
pub(super) fn broker_outages(seed: u64, realistic: bool) -> Vec<Fault> {
    let mut rng = sim::rng::rng_for(seed, "calico-broker");
    if !rng.random_bool(0.5) {
        return Vec::new();
    }
    let n = rng.random_range(1..=2);
    (0..n)
        .map(|_| {
            let mut f = Fault {
                at_ms: rng.random_range(5_000..FAULT_WINDOW_MS - 30_000),
                dur_ms: rng.random_range(2_000..=300_000),
                kind: FaultKind::ServiceUnavailable {
                    node: BROKER.into(),
                },
            };
            if realistic {
                sim::catalog::realize(&mut f, &mut rng);
            }
            f
        })
        .collect()
}
