//! Determinism: the same seed gives the same trace hash in two runs, with one thread or two, and a
//! golden hash per scenario is pinned (so a change that alters behaviour is visible in review).

mod common;
use scenarios::explore::hashes;
use scenarios::{builtin, run_spec, RunSpec};

/// Reads the built-in systems' events from a trace.
fn decode(v: &serde_json::Value) -> Option<sim::Event> {
    builtin().decode_event(v)
}

#[test]
fn same_seed_same_hash_across_runs_and_thread_counts() {
    for sc in builtin().scenarios() {
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

/// The trace file a run writes gives the run's trace hash back (its JSON lines parse into exactly
/// the events that were hashed), for one scenario of each system; an edited line changes it.
#[test]
fn trace_hash_matches_the_trace() {
    for (name, seed) in [
        ("calico-split-brain", 3),
        ("cilium-swarm", 5),
        ("metallb-clock-skew", 7),
    ] {
        let sc = scenarios::scenario(name).unwrap();
        let mut spec = RunSpec::from_seed(sc, seed, &[], &[]);
        spec.keep_trace = true;
        let o = run_spec(spec);
        let trace = String::from_utf8(o.trace.unwrap()).unwrap();
        assert_eq!(
            sim::event::hash_json_trace(&trace, &decode).unwrap(),
            o.trace_hash,
            "{name} seed {seed}"
        );
        assert_eq!(trace.lines().count() as u64, o.events, "{name}");
        // One microsecond later on the last line: a different hash.
        let last = trace.trim_end().rsplit('\n').next().unwrap();
        let mut line = sim::event::parse_trace_line(last, &decode).unwrap();
        line.t_us += 1;
        let edited = format!(
            "{}{}\n",
            &trace[..trace.len() - last.len() - 1],
            serde_json::to_string(&line).unwrap()
        );
        assert_ne!(
            sim::event::hash_json_trace(&edited, &decode).unwrap(),
            o.trace_hash
        );
    }
    assert!(sim::event::hash_json_trace("{\"i\":0}\n", &decode)
        .unwrap_err()
        .starts_with("line 1:"));
}

#[test]
fn golden_trace_hashes() {
    let golden: Vec<String> = builtin()
        .scenarios()
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
