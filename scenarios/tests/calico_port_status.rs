//! The calico-swarm seeds that failed with every fix on before the port-status writes were
//! ordered (two writers of one process racing, a write held up by a partition landing after the
//! next master's, a stopped watcher's late snapshot) and before `prompt-handover` allowed for
//! requests lost in an etcd crash: with every fix on they pass, and the remedy each needed is
//! shown by the rolled-back write or the absent race in their traces.

mod common;
use common::all_fixes;
use model::calico::CalicoEvent;
use scenarios::{run_spec, scenario, RunSpec};
use sim::event::Recording;

fn every_fix() -> Vec<String> {
    all_fixes("calico").iter().map(|s| s.to_string()).collect()
}

fn run(seed: u64, fixes: &[String]) -> (Option<sim::Violation>, Recording) {
    let sc = scenario("calico-swarm").unwrap();
    let mut spec = RunSpec::from_seed(sc, seed, &[], fixes);
    spec.keep_trace = true;
    let out = run_spec(spec);
    (out.violation, out.records.expect("kept"))
}

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

/// The writes h3 sent while cut off (368.3 s to 482.6 s) that Neutron committed after the cut
/// healed, as (port, sent at).
fn late_commits_of_h3(rec: &Recording) -> Vec<(String, u64)> {
    let mut sent = std::collections::BTreeMap::new();
    let mut late = Vec::new();
    for (t, e) in calico_events(rec) {
        match e {
            CalicoEvent::CalicoPortWriteSent { client, write, .. } if client.starts_with("h3:") => {
                sent.insert((client, write), t);
            }
            CalicoEvent::NeutronPortStatus {
                port,
                client,
                write,
                ..
            } if t > 482_576_000 => {
                if let Some(&at) = sent.get(&(client, write)) {
                    if (368_257_000..482_576_000).contains(&at) {
                        late.push((port, at));
                    }
                }
            }
            _ => {}
        }
    }
    late
}

/// Seed 17250: without the deadline, a write the master h3 sent after it was cut off commits
/// when the cut heals, two minutes later, over the next master's newer status; with it, none
/// does (the writer gave up, so the write is never committed).
#[test]
#[ignore = "seed 17250 no longer shows the late write since etcd's process restart and host crash became different faults; its times are seed-specific and need re-pinning (the finding's pinned seeds are now calico-swarm 1193 and 1896)"]
fn a_write_held_up_by_a_partition_never_commits_under_the_deadline() {
    let without: Vec<String> = every_fix()
        .into_iter()
        .filter(|f| f != "calico-port-status-write-deadline")
        .collect();
    let (v, rec) = run(17250, &without);
    let v = v.expect("the late write shows without the deadline");
    assert!(
        v.explanation
            .contains("it overtook a newer write of another process"),
        "{}",
        v.explanation
    );
    assert!(!late_commits_of_h3(&rec).is_empty());
    let (v, rec) = run(17250, &every_fix());
    assert!(v.is_none(), "{v:?}");
    assert_eq!(late_commits_of_h3(&rec), vec![]);
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
