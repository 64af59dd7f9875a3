//! Determinism: the same seed gives the same trace hash in two runs, with one thread or two, and a
//! golden hash per scenario is pinned (so a change that alters behaviour is visible in review).

mod common;
use scenarios::explore::hashes;
use scenarios::{run_spec, RunSpec, SCENARIOS};

#[test]
fn same_seed_same_hash_across_runs_and_thread_counts() {
    for sc in SCENARIOS {
        let one = hashes(sc, 100, 16, &[], &[], 1);
        let two = hashes(sc, 100, 16, &[], &[], 2);
        let again = hashes(sc, 100, 16, &[], &[], 2);
        assert_eq!(one, two, "{}: one thread vs two", sc.name);
        assert_eq!(two, again, "{}: run twice", sc.name);
        let mut distinct = one.clone();
        distinct.sort();
        distinct.dedup();
        assert!(
            distinct.len() > 12,
            "{}: seeds should give different runs",
            sc.name
        );
    }
}

#[test]
fn trace_hash_matches_the_trace() {
    let sc = scenarios::scenario("calico-split-brain").unwrap();
    let mut spec = RunSpec::from_seed(sc, 3, &[], &[]);
    spec.keep_trace = true;
    let o = run_spec(spec);
    let trace = o.trace.unwrap();
    assert_eq!(
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&trace)),
        o.trace_hash
    );
    assert_eq!(
        trace.iter().filter(|b| **b == b'\n').count() as u64,
        o.events
    );
    for line in String::from_utf8(trace).unwrap().lines() {
        let _: sim::event::TraceLine = serde_json::from_str(line).unwrap();
    }
}

#[test]
fn golden_trace_hashes() {
    let golden: Vec<String> = SCENARIOS
        .iter()
        .map(|sc| {
            let o = run_spec(RunSpec::from_seed(sc, 42, &[], &[]));
            format!(
                "{} seed 42: {} events, {} ms, trace {}",
                sc.name, o.events, o.sim_time_ms, o.trace_hash
            )
        })
        .collect();
    insta::assert_snapshot!(golden.join("\n"));
}
