//! A node the leader's informer shows for the first time: upstream's `Upsert` describes its
//! instance only if the instances API does not know it, and neither resyncs nor writes it
//! (pkg/ipam/node_manager.go:284-387 @ed90dd5); the leader starts the CiliumNode informer only
//! after the Pod store (operator/cmd/root.go:664-674), once the interval controller's first
//! resync has begun. So a new leader first writes a node that needs no allocation at the next
//! resync, a minute after it started, and that write rebuilds `release-ips` from its empty state.

use super::{limits, S};
use crate::cilium_support::{run, Script, Setup};
use model::cilium::{Switches, MARKED};

/// Snapshots at 1 s, 55 s and 65 s after the start.
fn script() -> Script {
    Box::new(|d| {
        Box::pin(async move {
            d.sleep_s(1.0).await;
            d.snapshot("started");
            d.sleep_s(54.0).await;
            d.snapshot("before the resync");
            d.sleep_s(10.0).await;
            d.snapshot("after the resync");
        })
    })
}

#[test]
fn a_replayed_node_is_first_written_at_the_next_resync() {
    // 10 IPs, none used: pre-allocate 8 needs nothing, and 10 - 8 - 2 leaves no excess.
    let run = run(
        Setup {
            limits: limits(8, 0, 0, 2),
            switches: Switches::default(),
            enis: 1,
            eni_capacity: 14,
            seeded: vec![10],
            seeded_release: vec![(3, MARKED)],
            run_for_s: 70,
        },
        script(),
    );
    assert!(run.finished);
    let entry = |label: &str| run.at(label).in_state(MARKED).len();
    assert_eq!(entry("started"), 1, "{:#?}", run.snapshots);
    assert_eq!(entry("before the resync"), 1, "{:#?}", run.snapshots);
    // The interval controller's second resync (60 s after its first) writes the node.
    assert!(
        run.at("after the resync").release_ips.is_empty(),
        "{:#?}",
        run.snapshots
    );
    assert!(run.at("after the resync").t_us > 60 * S);
    assert_eq!(run.at("after the resync").available(), 10);
}
