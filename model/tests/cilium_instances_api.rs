//! The instances API's readiness (cilium/cilium at ed90dd5ea4c754a04a8135c6bb9c8afe29b75811):
//!
//! * every full resync sets it to whether the cloud answered (`instancesAPIResync`,
//!   `pkg/ipam/node_manager.go:212-217`); a new node's describe in `Upsert` sets it too
//!   (l. 301-308), but only runs while it is ready; the per-node instance sync does not touch it;
//! * while it is not ready, every pool maintainer pass is refused before it decides anything: it
//!   fires the node's retry trigger (minimum interval 1 min, l. 336-345) and returns an error
//!   (`MaintainIPPool`, `pkg/ipam/node.go:985-990`), so the maintainer trigger backs off
//!   (l. 312-330) and the node stays `waitingForPoolMaintenance`: a resync does not trigger it
//!   again (`allocationNeeded`, node.go:503-509), the retry trigger does.
//!
//! The cloud API refuses every request from 50 s to 70 s, across the interval resync at about
//! 61 s, which fails and leaves the API unready. At 75 s the cloud answers again and the node's
//! pods take its whole pool, so it needs IPs: its pass is refused (the API is still unready,
//! though the cloud would answer), and so is the one run after its backoff (one node: 1-2 s
//! jittered, times ln 2, `pkg/backoff/backoff.go`). The next interval resync, at about 121 s,
//! succeeds and makes the API ready, but does not trigger the waiting node; the retry trigger, a
//! minute after it first ran at 75 s, does, and the pass allocates at about 135 s.

#[allow(dead_code)] // shared with upstream_cilium, which uses the rest
mod cilium_support;

use cilium_support::{run_with, Lifecycle, Run, Setup};
use model::cilium::decide::Limits;
use model::cilium::Switches;
use sim::{Fault, FaultKind};

/// When the pods take the pool (the cloud answers again from 70 s).
const NEED_S: f64 = 75.0;
/// The cloud's outage: from 50 s, for 20 s.
const OUTAGE_MS: (u64, u64) = (50_000, 20_000);

fn run(outage: bool) -> Run {
    let setup = Setup {
        limits: Limits {
            pre_allocate: 4,
            min_allocate: 0,
            max_allocate: 0,
            max_above_watermark: 0,
        },
        switches: Switches::default(),
        enis: 1,
        eni_capacity: 32,
        seeded: vec![4],
        seeded_release: vec![],
        run_for_s: 240,
    };
    let schedule = match outage {
        true => vec![Fault {
            at_ms: OUTAGE_MS.0,
            dur_ms: OUTAGE_MS.1,
            kind: FaultKind::ServiceUnavailable {
                node: "cloud".into(),
            },
        }],
        false => vec![],
    };
    let life = Lifecycle {
        schedule,
        ..Lifecycle::default()
    };
    run_with(
        setup,
        life,
        Box::new(|d| {
            Box::pin(async move {
                assert!(d.wait_until(25.0, |s| s.available() == 4).await);
                d.sleep_s(NEED_S - d.now_us() as f64 / 1e6).await;
                d.set_used(4).await;
                d.snapshot("needed");
                d.sleep_s(200.0 - NEED_S).await;
                d.snapshot("end");
            })
        }),
    )
}

/// True time (s) of the first cloud assign after `NEED_S`.
fn first_assign_s(r: &Run) -> Option<f64> {
    r.assigns()
        .iter()
        .map(|(t, ..)| *t as f64 / 1e6)
        .find(|t| *t >= NEED_S)
}

#[test]
fn instances_api_unready_a_ready_api_allocates_at_once() {
    // The control: no outage, the pass the pods' update triggers allocates within a second.
    let r = run(false);
    assert!(r.finished);
    let t = first_assign_s(&r).expect("an allocation");
    assert!(t < NEED_S + 1.0, "allocated at {t} s");
    assert_eq!(r.at("end").available(), 8, "pre-allocate 4 above 4 used");
}

#[test]
fn instances_api_unready_passes_are_refused_until_a_full_resync_succeeds() {
    let r = run(true);
    assert!(r.finished);
    assert_eq!(r.at("needed").available(), 4);
    // The cloud answers from 70 s, yet no pass mutates it while the API is unready: the failed
    // resync at about 61 s left it so until the one at about 121 s.
    let t = first_assign_s(&r).expect("the passes resume");
    assert!(
        t > 121.0,
        "a pass allocated at {t} s, while the API was unready"
    );
    assert_eq!(r.at("end").available(), 8);
}

#[test]
fn instances_api_unready_a_refused_pass_is_retried_by_the_retry_trigger() {
    // The refused node stays waiting for maintenance, so the successful resync at about 121 s
    // does not trigger it; the retry trigger does, a minute after its first run at 75 s.
    let r = run(true);
    let t = first_assign_s(&r).expect("the passes resume");
    assert!(
        (NEED_S + 60.0..NEED_S + 62.0).contains(&t),
        "the first pass after the outage allocated at {t} s"
    );
}
