//! proptest strategies that generate fault schedules for a scenario family.
//!
//! The seed-driven generator (`calico::draw`) is what `explore` uses; these strategies let property
//! tests search schedules with proptest's own exploration and shrinking, over the same fault
//! vocabulary and the same nodes as a drawn run.

use proptest::prelude::*;
use scenarios::calico::{CalicoOptions, Family, FAULT_WINDOW_MS};
use sim::{Fault, FaultKind, Schedule};

fn pick(names: Vec<String>) -> BoxedStrategy<String> {
    proptest::sample::select(names).boxed()
}

/// Faults that touch the election: partitions, pauses, clocks, tasks, etcd.
fn election_fault(hosts: Vec<String>) -> BoxedStrategy<(u64, FaultKind)> {
    let etcd = || "etcd".to_string();
    let h = || pick(hosts.clone());
    let tasks = proptest::sample::select(vec![
        "elector",
        "compaction",
        "agent-status",
        "endpoint-status",
    ]);
    prop_oneof![
        (5_000..120_000u64, h()).prop_map(move |(d, n)| (
            d,
            FaultKind::Partition {
                a: vec![n],
                b: vec![etcd()]
            }
        )),
        (5_000..120_000u64, h()).prop_map(|(d, n)| (d, FaultKind::Isolate { node: n })),
        (5_000..120_000u64, h(), any::<bool>()).prop_map(move |(d, n, up)| {
            let (from, to) = if up {
                (vec![n], vec![etcd()])
            } else {
                (vec![etcd()], vec![n])
            };
            (d, FaultKind::Simplex { from, to })
        }),
        (5_000..180_000u64, h()).prop_map(|(d, n)| (d, FaultKind::Pause { node: n })),
        (10_000..60_000u64, h(), 50..3_000u64).prop_map(|(d, n, e)| (
            d,
            FaultKind::Latency {
                node: n,
                extra_ms: e
            }
        )),
        (h(), -300_000..300_000i64).prop_map(|(n, s)| (
            0,
            FaultKind::ClockStep {
                node: n,
                delta_ms: s
            }
        )),
        (h(), tasks.clone()).prop_map(|(n, t)| (
            0,
            FaultKind::TaskDeath {
                node: n,
                task: t.to_string()
            }
        )),
        (1_000..90_000u64, h(), tasks).prop_map(|(d, n, t)| (
            d,
            FaultKind::TaskStall {
                node: n,
                task: t.to_string()
            }
        )),
        (2_000..30_000u64).prop_map(move |d| (d, FaultKind::ServiceUnavailable { node: etcd() })),
        (10_000..60_000u64, 10..60u32).prop_map(move |(d, p)| (
            d,
            FaultKind::ServiceAmbiguous {
                node: etcd(),
                percent: p
            }
        )),
        (2_000..60_000u64, h()).prop_map(|(d, n)| (d, FaultKind::ServiceRestart { node: n })),
        h().prop_map(|n| (
            0,
            FaultKind::ProcessCrash {
                node: n,
                process: "neutron-server/manager".into()
            }
        )),
        (5_000..120_000u64, h()).prop_map(|(d, n)| (d, FaultKind::Crash { node: n })),
    ]
    .boxed()
}

/// Faults of the status path: the Neutron DB, compute hosts, watch cuts.
fn status_fault(hosts: Vec<String>, computes: Vec<String>) -> BoxedStrategy<(u64, FaultKind)> {
    let db = || "neutron-db".to_string();
    let c = || pick(computes.clone());
    prop_oneof![
        (60_000..400_000u64, 500..8_000u64).prop_map(move |(d, e)| (
            d,
            FaultKind::ServiceSlow {
                node: db(),
                extra_ms: e
            }
        )),
        (2_000..60_000u64).prop_map(move |d| (d, FaultKind::ServiceUnavailable { node: db() })),
        (11_000..40_000u64, pick(hosts)).prop_map(|(d, n)| (
            d,
            FaultKind::Simplex {
                from: vec!["etcd".into()],
                to: vec![n]
            }
        )),
        (5_000..120_000u64, c()).prop_map(|(d, n)| (d, FaultKind::Crash { node: n })),
        (5_000..200_000u64, c()).prop_map(|(d, n)| (d, FaultKind::Isolate { node: n })),
        (c(), -900_000..900_000i64).prop_map(|(n, s)| (
            0,
            FaultKind::ClockStep {
                node: n,
                delta_ms: s
            }
        )),
    ]
    .boxed()
}

/// A schedule of up to `max` faults for a drawn run's nodes, sorted by start time.
pub fn schedule(family: Family, opts: &CalicoOptions, max: usize) -> BoxedStrategy<Schedule> {
    let hosts: Vec<String> = (1..=opts.hosts).map(|i| format!("h{i}")).collect();
    let computes: Vec<String> = (1..=opts.felix.len()).map(|i| format!("c{i}")).collect();
    let fault = match family {
        Family::StatusBacklog => status_fault(hosts, computes),
        Family::Swarm => {
            prop_oneof![election_fault(hosts.clone()), status_fault(hosts, computes)].boxed()
        }
        _ => election_fault(hosts),
    };
    let timed =
        (5_000..FAULT_WINDOW_MS - 30_000, fault).prop_map(|(at_ms, (dur_ms, kind))| Fault {
            at_ms,
            dur_ms,
            kind,
        });
    proptest::collection::vec(timed, 0..=max)
        .prop_map(|mut s| {
            s.sort_by_key(|f| f.at_ms);
            s
        })
        .boxed()
}
