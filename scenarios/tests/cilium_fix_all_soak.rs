//! The cilium-swarm seeds found failing with every fix on, each judged and settled (docs/soak.md):
//!
//! * 2101351 (adversarial): an artefact of fix `cilium-fence-cloud`. The leader was paused while
//!   operator-2 won the Lease; operator-2 then restarted cleanly and released it, and the paused
//!   leader's next renew round took the Lease back (`leaderTransitions` 0 -> 2) without ever
//!   stopping to lead, as client-go's `tryAcquireOrRenew` does. Its IPAM went on fencing its cloud
//!   calls with the count it first won with (0), older than operator-2's (1), so the cloud
//!   refused every resync for good and no pass ever dropped n1's `do-not-release` entry. The
//!   fence now carries the term the leader holds.
//! * 2207390 (realistic): a monitor error of `released-entries-clear`. Long after faults stopped
//!   the leader released two IPs of n3 and the cloud gave both back at once (the #39981 path);
//!   the check, counted only from faults stopping, took entries 14 s old as stuck. Its bound now
//!   runs from the later of faults stopping and the IP's return.
//! * 16180864 and 57722070: `released-entries-clear` once failed here with every fix on; they
//!   pass under both profiles.
//!
//! And one cilium-split-brain seed:
//!
//! * 3010136 (adversarial): a monitor bound too tight. The pass that marked four of n3's IPs ran
//!   after its resync's API sync, so the marks reached the CiliumNode only with the next
//!   resync's sync, a minute later; `excess-released` allowed the marking resync's own sync only.
//!   Upstream's `resyncNode` fires the pool maintainer and the API sync together, and either may
//!   run first (node_manager.go:477-520 @ed90dd5). The bound now allows one more resync.

mod common;
use common::all_fixes;
use scenarios::faults::Profile;
use scenarios::{run_spec, scenario, RunSpec};

/// One cilium-swarm seed: its violation's invariant (if any) and its trace (JSON lines).
fn run(seed: u64, fixes: &[&str], profile: Profile) -> (Option<String>, String) {
    run_with(seed, fixes, profile, None)
}

/// As `run`, with the seed's drawn faults replaced by `schedule` (JSON) when given.
fn run_with(
    seed: u64,
    fixes: &[&str],
    profile: Profile,
    schedule: Option<&str>,
) -> (Option<String>, String) {
    run_in("cilium-swarm", seed, fixes, profile, schedule)
}

/// As `run_with`, in scenario `name`.
fn run_in(
    name: &str,
    seed: u64,
    fixes: &[&str],
    profile: Profile,
    schedule: Option<&str>,
) -> (Option<String>, String) {
    let sc = scenario(name).unwrap();
    let fixes: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
    let mut spec = RunSpec::from_seed_in(sc, seed, &[], &fixes, profile);
    if let Some(s) = schedule {
        spec.schedule = serde_json::from_str(s).unwrap();
    }
    spec.keep_trace = true;
    let out = run_spec(spec);
    let trace = String::from_utf8(out.trace.expect("kept")).unwrap();
    (out.violation.map(|v| v.invariant.to_string()), trace)
}

/// The trace's events: (t_us, event object).
fn events(trace: &str) -> Vec<(u64, serde_json::Value)> {
    trace
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            (r["t_us"].as_u64().unwrap(), r["ev"].clone())
        })
        .collect()
}

/// The Lease writes: (t_us, holder, leaseTransitions).
fn lease_writes(ev: &[(u64, serde_json::Value)]) -> Vec<(u64, String, u64)> {
    ev.iter()
        .filter(|(_, e)| e["type"] == "kube-write" && e["kind"] == "Lease")
        .map(|(t, e)| {
            let spec = &e["object"]["spec"];
            (
                *t,
                spec["holderIdentity"].as_str().unwrap_or("").to_string(),
                spec["leaseTransitions"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The cloud calls refused by the fence, by client: (t_us, client).
fn fenced(ev: &[(u64, serde_json::Value)]) -> Vec<(u64, String)> {
    ev.iter()
        .filter(|(_, e)| e["type"] == "cloud-fenced")
        .map(|(t, e)| (*t, e["client"].as_str().unwrap().to_string()))
        .collect()
}

/// Seed 2101351's path, as a constructed schedule (the seed's own run changed when EC2's
/// throttling and the SDK's retries were modelled, and no seed of cilium-swarm 2,100,000-2,101,499
/// or 2,700,000-2,701,499 takes it with every fix on): the leader is paused for 28.8 s, operator-2
/// wins the Lease meanwhile and is restarted cleanly (it releases the Lease) and stays down 15 s,
/// so the paused leader's next renew round takes the Lease back under a newer term.
const LEASE_TAKEN_BACK: &str = r#"[
    {"at_ms": 100000, "dur_ms": 28800, "kind": "pause", "node": "operator"},
    {"at_ms": 121000, "dur_ms": 15000, "kind": "service-restart", "node": "operator-2"}
]"#;

/// The first leader takes the Lease back in a renewal after the other operator released it;
/// with every fix on the run passes, and once it holds the Lease again under the newer term the
/// cloud refuses none of its calls. Without the fence the run passes too: the entry that seed
/// 2101351 left was the fence's doing, not upstream's.
#[test]
fn a_leader_that_takes_the_lease_back_in_a_renewal_fences_with_its_new_term() {
    let seed = 1;
    let every = all_fixes("cilium");
    let run =
        |seed, fixes: &[&str], profile| run_with(seed, fixes, profile, Some(LEASE_TAKEN_BACK));
    let (v, trace) = run(seed, &every, Profile::Adversarial);
    assert_eq!(v, None, "seed {seed} with every fix");
    let ev = events(&trace);
    let leases = lease_writes(&ev);
    let first = leases.first().expect("a Lease write").1.clone();
    // The first leader's holder writes: a later one under a term above the one it won with.
    let mine: Vec<&(u64, String, u64)> = leases.iter().filter(|l| l.1 == first).collect();
    let won = mine[0].2;
    let back = mine
        .iter()
        .find(|l| l.2 > won)
        .unwrap_or_else(|| panic!("{first} never holds the Lease under a newer term"));
    let released = leases
        .iter()
        .any(|l| l.1.is_empty() && l.0 < back.0 && l.2 > won);
    assert!(
        released,
        "another operator released the Lease before {first} took it back"
    );
    // The same process all along: its identity is `host-pid`, its client `host:pid`.
    let (host, pid) = first.rsplit_once('-').unwrap();
    let client = format!("{host}:{pid}");
    let refused_after: Vec<u64> = fenced(&ev)
        .into_iter()
        .filter(|(t, c)| *c == client && *t > back.0)
        .map(|(t, _)| t)
        .collect();
    assert!(
        refused_after.is_empty(),
        "{client}'s calls refused after it took the Lease back at {} µs: {refused_after:?}",
        back.0
    );
    // Without the fence the seed passes too.
    let without: Vec<&str> = every
        .iter()
        .copied()
        .filter(|f| *f != "cilium-fence-cloud")
        .collect();
    assert_eq!(run(seed, &without, Profile::Adversarial).0, None);
}

/// Seeds that once failed `released-entries-clear` with every fix on pass under both profiles.
#[test]
fn released_entry_seeds_pass_with_every_fix_under_both_profiles() {
    let every = all_fixes("cilium");
    for seed in [16180864, 57722070] {
        for profile in [Profile::Adversarial, Profile::Realistic] {
            let (v, _) = run(seed, &every, profile);
            assert_eq!(v, None, "seed {seed}, {profile:?}");
        }
    }
}

/// Seed 2207390's path (IPs released and given back to their node shortly before the
/// `pods-get-ips` deadline are not yet stuck), at seed 2214896: 2207390's run changed when EC2's
/// throttling and the SDK's retries were modelled, and its successor 2210330's when the pool
/// maintainer's backoff became upstream's and the agent's writes were spaced from their start;
/// 2214896 is the first seed of 2,210,000-2,214,896 (realistic, every fix) whose cloud gives an
/// IP back to its node after faults stopped. With every fix the run passes under both profiles,
/// and the give-back happened (the cloud assigned an IP to a node that it had unassigned from
/// that node less than a second before), after faults stopped.
#[test]
fn ips_given_back_late_have_their_own_bound() {
    let seed = 2214896;
    let every = all_fixes("cilium");
    let (v, trace) = run(seed, &every, Profile::Realistic);
    assert_eq!(v, None);
    let ev = events(&trace);
    let unassigned: Vec<(u64, String, String)> = ev
        .iter()
        .filter(|(_, e)| e["type"] == "cloud-unassign")
        .map(|(t, e)| {
            let field = |k: &str| e[k].as_str().unwrap().to_string();
            (*t, field("instance"), field("ip"))
        })
        .collect();
    let given_back = ev.iter().any(|(t, e)| {
        e["type"] == "cloud-assign"
            && unassigned.iter().any(|(u, node, ip)| {
                e["instance"] == node.as_str()
                    && e["ip"] == ip.as_str()
                    && *u < *t
                    && *t < u + 1_000_000
            })
            && *t > scenarios::cilium::FAULT_WINDOW_MS * 1000
    });
    assert!(
        given_back,
        "no IP given back to its node after faults stopped"
    );
    assert_eq!(run(seed, &every, Profile::Adversarial).0, None);
}

/// cilium-split-brain 3010136 (adversarial) with every fix: n3's first marks after faults stop are written to its
/// CiliumNode by the operator only a resync after the pass that made them (the marking resync's
/// API sync ran first), and the run passes: `excess-released` allows for it.
#[test]
fn marks_written_a_resync_late_are_released_within_the_bound() {
    let every = all_fixes("cilium");
    let (v, trace) = run_in(
        "cilium-split-brain",
        3010136,
        &every,
        Profile::Adversarial,
        None,
    );
    assert_eq!(v, None);
    let ev = events(&trace);
    let n3 = |e: &serde_json::Value| e["node"] == "n3" || e["name"] == "n3";
    let faults_end = scenarios::cilium::FAULT_WINDOW_MS * 1000;
    let (marked, _) = ev
        .iter()
        .find(|(t, e)| *t > faults_end && e["type"] == "cilium-mark" && n3(e))
        .expect("n3 has IPs marked after faults stop");
    let (written, _) = ev
        .iter()
        .find(|(t, e)| {
            t > marked
                && e["type"] == "kube-write"
                && e["kind"] == "CiliumNode"
                && n3(e)
                && e["client"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("operator"))
        })
        .expect("the operator writes n3's marks");
    // A resync later, less 5 s for the triggers' timing.
    let resync_us = model::cilium::OPERATOR_RESYNC.as_micros() as u64;
    assert!(
        written - marked >= resync_us - 5_000_000,
        "marked at {marked} µs, written at {written} µs: the marking resync's own sync wrote them"
    );
}
