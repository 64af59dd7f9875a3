//! The calico-swarm seeds that failed with every fix on before the port-status writes were
//! ordered (two writers of one process racing, a write held up by a partition landing after the
//! next master's, a stopped watcher's late snapshot) and before `prompt-handover` allowed for
//! requests lost in an etcd crash: with every fix on they pass, and the remedy each needed is
//! shown by the rolled-back write or the absent race in their traces.

mod common;
use common::{calico_every_fix as every_fix, run_calico_swarm as run};
use model::calico::CalicoEvent;
use scenarios::{scenario, RunSpec};
use sim::event::Recording;

fn calico_events(rec: &Recording) -> impl Iterator<Item = (u64, CalicoEvent)> + '_ {
    rec.records
        .iter()
        .filter_map(|r| r.event.system::<CalicoEvent>().map(|e| (r.t_us, e.clone())))
}

#[test]
fn the_seeds_left_failing_with_every_fix_now_pass() {
    for seed in [17250, 2003631, 2005147, 2007269, 19771] {
        let (v, _) = run(seed, &every_fix());
        assert!(
            v.is_none(),
            "calico-swarm seed {seed} with every fix: {v:?}"
        );
    }
}

/// The true-time windows (µs) in which the schedule of `seed` isolates a host, as
/// (host, from, to).
fn isolations(seed: u64) -> Vec<(String, u64, u64)> {
    let sc = scenario("calico-swarm").unwrap();
    RunSpec::from_seed(sc, seed, &[], &[])
        .schedule
        .iter()
        .filter_map(|f| match &f.kind {
            sim::FaultKind::Isolate { node } => {
                Some((node.clone(), f.at_ms * 1_000, (f.at_ms + f.dur_ms) * 1_000))
            }
            _ => None,
        })
        .collect()
}

/// The writes a host sent before one of its isolations ended that Neutron committed after it
/// ended (held up by the cut), as (port, writer, sent at): windows taken from the run's own
/// schedule.
fn late_commits(rec: &Recording, cuts: &[(String, u64, u64)]) -> Vec<(String, String, u64)> {
    let mut sent = std::collections::BTreeMap::new();
    let mut late = Vec::new();
    for (t, e) in calico_events(rec) {
        match e {
            CalicoEvent::CalicoPortWriteSent { client, write, .. } => {
                sent.insert((client, write), t);
            }
            CalicoEvent::NeutronPortStatus {
                port,
                client,
                write,
                ..
            } => {
                let Some(&at) = sent.get(&(client.clone(), write)) else {
                    continue;
                };
                let held = cuts.iter().any(|(host, _, to)| {
                    client.starts_with(&format!("{host}:")) && at < *to && t > *to
                });
                if held {
                    late.push((port, client, at));
                }
            }
            _ => {}
        }
    }
    late
}

/// Seed 2002799 (one of the five seeds of calico-swarm 2,000,000-2,005,999 that fail with every
/// fix but the deadline; the former pin, 7541, stopped showing it when the message broker's hop
/// moved every draw): without
/// the deadline, a port-status write the master sent just before it was isolated commits when
/// the cut heals, over the next master's newer status; with it, no write held up by the cut
/// commits (the writer gave up). The cut's window comes from the seed's schedule.
#[test]
fn a_write_held_up_by_a_partition_never_commits_under_the_deadline() {
    let seed = 2002799;
    let cuts = isolations(seed);
    assert!(!cuts.is_empty(), "seed {seed} isolates no host");
    let without: Vec<String> = every_fix()
        .into_iter()
        .filter(|f| f != "calico-port-status-write-deadline")
        .collect();
    let (v, rec) = run(seed, &without);
    let v = v.expect("the late write shows without the deadline");
    assert!(
        v.explanation
            .contains("it overtook a newer write of another process"),
        "{}",
        v.explanation
    );
    let late = late_commits(&rec, &cuts);
    assert!(
        late.iter().any(
            |(port, client, _)| v.explanation.contains(&format!("{port}: "))
                && v.explanation.contains(client.as_str())
        ),
        "the diverged port's write is not one held up by a cut: {late:?}; {}",
        v.explanation
    );
    let (v, rec) = run(seed, &every_fix());
    assert!(v.is_none(), "{v:?}");
    assert_eq!(late_commits(&rec, &cuts), vec![]);
}

/// Under the key lock no two writes of one port from one process are ever in flight at once.
#[test]
fn the_key_lock_keeps_one_write_per_port_in_flight() {
    for seed in [2003631, 17250] {
        let (_, rec) = run(seed, &every_fix());
        let mut in_flight: std::collections::BTreeMap<(String, String), u64> = Default::default();
        for (_, e) in calico_events(&rec) {
            match e {
                CalicoEvent::CalicoPortWriteSent {
                    port,
                    client,
                    write,
                    ..
                } => {
                    let prev = in_flight.insert((client.clone(), port.clone()), write);
                    assert!(
                        prev.is_none(),
                        "seed {seed}: {client} sent write {write} of {port} while write {prev:?} was in flight"
                    );
                }
                CalicoEvent::CalicoPortWrite { port, .. } => {
                    // The end of a write names no process: it ends the port's write of every
                    // process (a weaker check, never a false alarm).
                    in_flight.retain(|(_, p), _| *p != port);
                }
                _ => {}
            }
        }
    }
}
