//! A deposed cilium-operator's IPAM after `legacy.onStop`: its CiliumNode informer is frozen
//! (`legacy.ctx` cancelled, `operator/cmd/root.go:515-522, 673` at cilium/cilium
//! ed90dd5ea4c754a04a8135c6bb9c8afe29b75811) while its node manager's interval resync and
//! triggers keep running until the process exits (`pkg/ipam/node_manager.go:231-249, 299-377`;
//! `model::cilium::operator::shutdown`). So it keeps writing the CiliumNode, deciding from the
//! copy it held at the freeze.
//!
//! The operator is cut from the API server for 20 s at 30 s: its renew rounds fail until the
//! renew deadline and it loses the Lease. Its shutdown then
//! lasts 65 s (a blocking stop hook holds the hive's stop to its timeout). A stray IP put in
//! `spec.pool` at 20 s is in every copy; at 55 s the node's pods take every IP of its pool
//! (`status.used` grows to the pool's size, so pre-allocate asks for more). Either way the
//! lingering IPAM's resync at about 62 s rewrites the spec from the cloud (the stray IP goes).
//! With the informer live until the exit, it also sees the new `used` and allocates; with it
//! frozen half a second into the stop, it computes the need from the frozen `used` and
//! allocates nothing until it has exited and a new process leads.

#[allow(dead_code)] // shared with upstream_cilium, which uses the rest
mod cilium_support;

use cilium_support::{run_with, short, Lifecycle, Run, Setup, Snapshot};
use model::cilium::decide::Limits;
use model::cilium::operator::shutdown::StopSequence;
use model::cilium::Switches;
use sim::{Fault, FaultKind};
use std::time::Duration;

/// When a stray IP is put in the spec (before the cut, so every operator's copy has it), and the
/// IP.
const STRAY_S: f64 = 20.0;
const STRAY: &str = "10.9.9.9";
/// When the pods take the pool (after the freeze).
const CHANGE_S: f64 = 55.0;

/// A little before the deposed process exits: it loses the Lease about 10 s into the cut (its
/// renew deadline), at 40-42 s, and exits 65 s later.
const LINGER_END_S: f64 = 104.0;

/// One run, with the CiliumNode informer stopping `informer_stop_s` into the 65 s shutdown.
fn run(informer_stop_s: u64) -> Run {
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
        seeded: vec![],
        seeded_release: vec![],
        run_for_s: 200,
    };
    let life = Lifecycle {
        schedule: vec![Fault {
            at_ms: 30_000,
            dur_ms: 20_000,
            kind: FaultKind::Partition {
                a: vec!["operator".into()],
                b: vec!["apiserver".into()],
            },
        }],
        shutdown: StopSequence::new(
            Duration::from_millis(informer_stop_s.max(1) * 500),
            Duration::from_secs(65),
        ),
    };
    run_with(
        setup,
        life,
        Box::new(|d| {
            Box::pin(async move {
                assert!(d.wait_until(25.0, |s| s.available() == 4).await);
                d.snapshot("led");
                d.sleep_s(STRAY_S - d.now_us() as f64 / 1e6).await;
                d.add_to_pool(short(STRAY), short("eni-0")).await;
                d.snapshot("stray");
                d.sleep_s(CHANGE_S - STRAY_S).await;
                d.set_used(4).await;
                d.snapshot("changed");
                // Just before the deposed process exits.
                d.sleep_s(LINGER_END_S - CHANGE_S).await;
                d.snapshot("lingering");
            })
        }),
    )
}

fn stray_in(s: &Snapshot) -> bool {
    s.pool.contains_key(&short(STRAY))
}

#[test]
fn a_frozen_informer_leaves_the_lingering_ipam_deciding_from_the_old_copy() {
    // `informer_stop_s` 1 is half a second into the stop; 130 is past the exit (never frozen).
    let (frozen, live) = (run(1), run(130));
    for r in [&frozen, &live] {
        assert!(r.finished);
        assert_eq!(r.at("led").available(), 4, "pre-allocate filled");
        assert!(
            stray_in(r.at("changed")),
            "the stray IP stays until a resync"
        );
        // Only the operator's API sync (run by its resync at about 62 s) writes the spec: the
        // deposed IPAM still acts, from the copy that has the stray IP.
        assert!(
            !stray_in(r.at("lingering")),
            "the lingering IPAM's resync rewrote the spec from the cloud"
        );
    }
    let assigned_in_linger = |r: &Run| {
        r.assigns()
            .iter()
            .filter(|(t, ..)| (CHANGE_S * 1e6) as u64 <= *t && *t <= (LINGER_END_S * 1e6) as u64)
            .count()
    };
    assert_eq!(
        assigned_in_linger(&live),
        4,
        "with its informer live, the deposed IPAM sees the pods and allocates"
    );
    assert_eq!(
        assigned_in_linger(&frozen),
        0,
        "frozen at the old status.used, it sees no need: {:?}",
        frozen.assigns()
    );
    assert_eq!(frozen.at("lingering").available(), 4);
    // The next leader (the restarted process) reads the CiliumNode afresh and allocates.
    assert!(
        frozen
            .assigns()
            .iter()
            .any(|(t, ..)| *t > (LINGER_END_S * 1e6) as u64),
        "{:?}",
        frozen.assigns()
    );
}
