//! Two cilium-operators act at once only through modelled causes, each shown here producing an
//! overlap of leadership: a paused leader, slow answers to its renewals, a leader whose
//! monotonic clock runs slow, and the graceful shutdown's lingering. No fault, no
//! overlap.
//!
//! "Acting" is measured from the trace, not from the model: an operator process acts from the
//! event that says its IPAM started (after it won the Lease and resynced) until the process
//! exits. Each case runs one `cilium-split-brain` seed's deployment with a hand-made schedule
//! aimed at the first leader, and compares against the same run without the cause.

use scenarios::cilium::CiliumOptions;
use scenarios::{run_spec, scenario, RunSpec};
use sim::{Fault, FaultKind};
use std::collections::BTreeMap;

const SEED: u64 = 1;
const AT_MS: u64 = 100_000;

/// A run of the deployment of `SEED` with `faults`, the graceful shutdown's linger set to
/// `linger_ms`, and `fixes`: (the first leader's node, the total µs during which two operator
/// processes acted at once).
fn run(faults: Vec<Fault>, linger_ms: u64, fixes: &[&str]) -> (String, u64) {
    let sc = scenario("cilium-split-brain").unwrap();
    let fixes: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
    let mut spec = RunSpec::from_seed(sc, SEED, &[], &fixes);
    let o = spec
        .options
        .get_mut::<CiliumOptions>()
        .expect("cilium options");
    o.shutdown_linger_ms = linger_ms;
    o.informer_stop_ms = linger_ms;
    spec.schedule = faults;
    spec.keep_trace = true;
    let out = run_spec(spec);
    let trace = String::from_utf8(out.trace.expect("kept")).unwrap();
    // identity ("host-pid") -> [IPAM started, process exit)
    let mut acting: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut first_leader = None;
    for line in trace.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let (t, node, ev) = (
            r["t_us"].as_u64().unwrap(),
            r["node"].as_str().unwrap(),
            &r["ev"],
        );
        match ev["type"].as_str().unwrap() {
            "cilium-leading" if first_leader.is_none() => first_leader = Some(node.to_string()),
            "cilium-ipam-started" => {
                acting.insert(ev["identity"].as_str().unwrap().into(), (t, u64::MAX));
            }
            "process-exit" if ev["name"] == "cilium-operator" => {
                let id = format!("{node}-{}", ev["pid"]);
                if let Some(a) = acting.get_mut(&id) {
                    a.1 = t;
                }
            }
            _ => {}
        }
    }
    let spans: Vec<(u64, u64)> = acting.into_values().collect();
    let mut overlap = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            overlap += a.1.min(b.1).saturating_sub(a.0.max(b.0));
        }
    }
    (first_leader.expect("someone leads"), overlap)
}

/// The first leader of the undisturbed deployment.
fn leader() -> String {
    run(Vec::new(), 0, &[]).0
}

fn fault(at_ms: u64, dur_ms: u64, kind: FaultKind) -> Fault {
    Fault {
        at_ms,
        dur_ms,
        kind,
    }
}

fn cut(node: &str, at_ms: u64) -> Fault {
    fault(
        at_ms,
        60_000,
        FaultKind::Partition {
            a: vec![node.into()],
            b: vec!["apiserver".into()],
        },
    )
}

#[test]
fn without_faults_one_operator_acts_at_a_time() {
    assert_eq!(run(Vec::new(), 20_000, &[]).1, 0);
}

#[test]
fn a_paused_leader_acts_beside_its_successor() {
    let l = leader();
    let pause = fault(AT_MS, 25_000, FaultKind::Pause { node: l.clone() });
    // Immediate exit on losing the lease: no lingering, only the pause.
    let (_, overlap) = run(vec![pause], 0, &["cilium-exit-on-lost-lead"]);
    assert!(overlap > 1_000_000, "{l} paused: overlap {overlap} µs");
}

#[test]
fn the_graceful_shutdown_lingers_beside_the_successor() {
    let l = leader();
    let (_, graceful) = run(vec![cut(&l, AT_MS)], 15_000, &[]);
    let (_, immediate) = run(vec![cut(&l, AT_MS)], 15_000, &["cilium-exit-on-lost-lead"]);
    assert!(
        graceful >= immediate + 10_000_000,
        "graceful {graceful} µs, immediate {immediate} µs"
    );
}

#[test]
fn slow_renew_answers_stretch_the_overlap() {
    let l = leader();
    let exit = ["cilium-exit-on-lost-lead"];
    // The candidate's retry jitter (x1 to x2.2 of 2 s) decides each run; over cuts at ten
    // instants, slow answers give overlap where prompt ones give less.
    let (mut prompt, mut late) = (0, 0);
    for k in 0..10 {
        let at = AT_MS + k * 7_300;
        prompt += run(vec![cut(&l, at)], 0, &exit).1;
        // Every message 2.4 s late (a round trip inside the 5 s request timeout), then the
        // cut: the leader learns of its last renewal late and counts its deadline from there.
        let slow = fault(
            at - 30_000,
            40_000,
            FaultKind::Latency {
                node: l.clone(),
                extra_ms: 2_400,
            },
        );
        late += run(vec![slow, cut(&l, at)], 0, &exit).1;
    }
    assert!(
        late > prompt + 1_000_000,
        "slow answers {late} µs, prompt answers {prompt} µs"
    );
}

#[test]
fn a_slow_monotonic_clock_keeps_a_cut_off_leader_acting() {
    let l = leader();
    let exit = ["cilium-exit-on-lost-lead"];
    let (_, true_rate) = run(vec![cut(&l, AT_MS)], 0, &exit);
    // Its clock at half speed: RenewDeadline (10 s on its clock) takes 20 s.
    let slow = fault(
        AT_MS - 10_000,
        120_000,
        FaultKind::ClockRate {
            node: l.clone(),
            ppm: -500_000,
        },
    );
    let (_, half) = run(vec![slow, cut(&l, AT_MS)], 0, &exit);
    assert!(
        half >= true_rate + 5_000_000,
        "half-rate clock {half} µs, true rate {true_rate} µs"
    );
}

/// A deposed leader's shutdown is drawn from the hive's stop: a normal one within a second
/// (stop hooks under the 100 ms log threshold), a blocked one at the one-minute stop timeout
/// plus at most the 5 s before the hive panics, and never an informer that outlives the process.
#[test]
fn the_graceful_shutdown_is_drawn_from_the_hive_stop() {
    use scenarios::cilium::{draw_in, Family};
    use scenarios::faults::Profile;
    for profile in [Profile::Adversarial, Profile::Realistic] {
        let (mut normal, mut blocked, mut frozen_early) = (0, 0, 0);
        for seed in 0..400 {
            let (o, _) = draw_in(Family::SplitBrain, seed, profile);
            assert!(o.informer_stop_ms <= o.shutdown_linger_ms, "seed {seed}");
            match o.shutdown_linger_ms {
                0..=1_000 => normal += 1,
                60_000..=65_000 => {
                    blocked += 1;
                    frozen_early += u32::from(o.informer_stop_ms <= 1_000);
                }
                other => panic!("seed {seed}: a stop of {other} ms"),
            }
        }
        assert!(
            normal > 2 * blocked,
            "{profile:?}: {normal} normal, {blocked} blocked"
        );
        assert!(frozen_early > 0 && frozen_early < blocked, "{profile:?}");
    }
}
