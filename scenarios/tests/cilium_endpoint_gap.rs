//! A pod's CNI ADD ends only once its endpoint exists: an agent that dies between the allocation
//! and the endpoint's creation fails the call, and the pod waits for the kubelet's backoff and a
//! new allocation; a pod whose call had ended keeps its IP through the restart (endpoint
//! restore). Checked on traces of `cilium-silent-task-death`, whose agents crash and restart.

use model::cilium::agent::{ENDPOINT_GAP_MAX, ENDPOINT_GAP_MIN};
use model::cilium::kubelet::POD_SYNC_BACKOFF;
use scenarios::{run_spec, scenario, RunSpec};
use std::collections::BTreeMap;

/// One trace record: (time µs, node, event).
type Rec = (u64, String, serde_json::Value);

fn trace(seed: u64) -> Vec<Rec> {
    let sc = scenario("cilium-silent-task-death").unwrap();
    let mut spec = RunSpec::from_seed(sc, seed, &[], &[]);
    spec.keep_trace = true;
    let out = run_spec(spec);
    let text = String::from_utf8(out.trace.expect("kept")).unwrap();
    text.lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let t = r["t_us"].as_u64().unwrap();
            (t, r["node"].as_str().unwrap().to_string(), r["ev"].clone())
        })
        .collect()
}

fn us(d: std::time::Duration) -> u64 {
    d.as_micros() as u64
}

/// Checks one trace; returns how many sandboxes failed.
fn check(seed: u64, recs: &[Rec]) -> usize {
    // (node, pod) -> (time of its IP, IP), while the pod holds it.
    let mut given: BTreeMap<(String, String), (u64, String)> = BTreeMap::new();
    let mut agent_exit: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed_at: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut failures = 0;
    for (t, node, ev) in recs {
        let pod = || ev["pod"].as_str().unwrap_or_default().to_string();
        match ev["type"].as_str().unwrap() {
            "process-exit" if ev["name"] == "cilium-agent" => {
                // Every pod given an IP less than the shortest gap ago is still creating its
                // endpoint: its sandbox must fail with this exit (checked below).
                agent_exit.insert(node.clone(), *t);
            }
            "cilium-pod-ip" => {
                let key = (node.clone(), pod());
                if let Some(f) = failed_at.remove(&key) {
                    assert!(
                        *t >= f + us(POD_SYNC_BACKOFF),
                        "seed {seed}: {key:?} retried {} µs after its failed sandbox",
                        t - f
                    );
                }
                given.insert(key, (*t, ev["ip"].as_str().unwrap().to_string()));
            }
            "cilium-sandbox-failed" => {
                failures += 1;
                let key = (node.clone(), pod());
                let (t0, ip) = given.remove(&key).expect("a failed sandbox had an IP");
                assert_eq!(ip, ev["ip"].as_str().unwrap(), "seed {seed}: {key:?}");
                let exit = agent_exit.get(node).copied().expect("the agent died");
                assert!(
                    t0 <= exit && exit <= *t && exit - t0 <= us(ENDPOINT_GAP_MAX),
                    "seed {seed}: {key:?} given its IP at {t0}, agent exit at {exit}, failed at {t}"
                );
                failed_at.insert(key, *t);
            }
            "cilium-pod-deleted" => {
                given.remove(&(node.clone(), pod()));
                failed_at.remove(&(node.clone(), pod()));
            }
            _ => {}
        }
        // A pod given its IP within the shortest gap before an agent exit cannot have kept it.
        if let Some(exit) = agent_exit.get(node) {
            if *t > *exit {
                for ((n, p), (t0, _)) in &given {
                    let young = *t0 <= *exit && exit - t0 < us(ENDPOINT_GAP_MIN);
                    assert!(
                        !(n == node && young),
                        "seed {seed}: {n}/{p} given its IP at {t0} kept it through the agent's exit at {exit}"
                    );
                }
            }
        }
    }
    failures
}

#[test]
fn an_agent_dying_before_the_endpoint_exists_fails_the_cni_add() {
    let failed: usize = (0..40).map(|seed| check(seed, &trace(seed))).sum();
    assert!(
        failed > 0,
        "no agent died inside an endpoint creation in 40 seeds"
    );
}
