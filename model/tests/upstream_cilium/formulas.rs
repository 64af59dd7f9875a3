//! The formulas and rules on their own: `calculateNeededIPs` and `calculateExcessIPs` against
//! upstream's tables, the agent's answers to marks (`TestMarkForReleaseNoAllocate`), and the ENI
//! interface choice of `PrepareIPRelease`.

use super::limits;
use crate::cilium_support::short;
use model::cilium::agent::{allocatable, answer_all};
use model::cilium::decide::{excess_ips, max_ips_to_allocate, needed_ips, prepare_ip_release};
use model::cilium::{DO_NOT_RELEASE, MARKED, READY};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};

/// `neededDef` (pkg/ipam/node_test.go:30-41): available, used, pre-allocate, min-allocate,
/// max-allocate, result.
const NEEDED_DEF: [(usize, usize, usize, usize, usize, usize); 10] = [
    (0, 0, 0, 16, 0, 16),
    (0, 0, 8, 16, 0, 16),
    (0, 0, 16, 8, 0, 16),
    (0, 0, 16, 0, 0, 16),
    (8, 0, 0, 16, 0, 8),
    (8, 4, 8, 0, 0, 4),
    (8, 4, 8, 8, 0, 4),
    (8, 4, 8, 8, 6, 0),
    (8, 4, 8, 0, 8, 0),
    (4, 4, 8, 0, 8, 4),
];

/// `excessDef` (pkg/ipam/node_test.go:43-54): available, used, pre-allocate, min-allocate,
/// max-above-watermark, result. (Upstream's inline comments call `available` "used".)
const EXCESS_DEF: [(usize, usize, usize, usize, usize, usize); 10] = [
    (0, 0, 0, 16, 0, 0),
    (15, 0, 8, 16, 8, 0),
    (17, 0, 8, 16, 0, 1),
    (20, 0, 8, 16, 4, 0),
    (21, 0, 8, 0, 4, 9),
    (20, 0, 8, 20, 8, 0),
    (16, 1, 8, 16, 8, 0),
    (20, 4, 8, 17, 8, 0),
    (20, 4, 8, 0, 0, 8),
    (20, 4, 8, 0, 8, 0),
];

/// `TestCalculateExcessIPs` (pkg/ipam/node_test.go:63-68): every vector of `excessDef` against
/// [`excess_ips`] (upstream's `calculateExcessIPs`, node.go:347-378, with its min-allocate
/// branch: vectors 3, 4 and 6 take it).
#[test]
fn upstream_cilium_calculate_excess_ips() {
    let bad: Vec<String> = EXCESS_DEF
        .iter()
        .enumerate()
        .filter_map(|(i, &(avail, used, pre, min, maw, want))| {
            let got = excess_ips(avail, used, &limits(pre, min, 0, maw));
            (got != want).then(|| {
                format!(
                    "vector {} {:?}: upstream {want}, model {got}",
                    i + 1,
                    (avail, used, pre, min, maw)
                )
            })
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestCalculateNeededIPs` (pkg/ipam/node_test.go:56-61): every vector of `neededDef` against
/// [`needed_ips`] (upstream's `calculateNeededIPs`, node.go:327-345, with min-allocate raising and
/// max-allocate capping the count: vectors 1, 2, 5, 8, 9 and 10 depend on them).
#[test]
fn upstream_cilium_calculate_needed_ips() {
    let bad: Vec<String> = NEEDED_DEF
        .iter()
        .enumerate()
        .filter_map(|(i, &(avail, used, pre, min, max, want))| {
            let got = needed_ips(avail, used, &limits(pre, min, max, 0));
            (got != want).then(|| {
                format!(
                    "vector {} {:?}: upstream {want}, model {got}",
                    i + 1,
                    (avail, used, pre, min, max)
                )
            })
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The surge allocation (`determineMaintenanceAction`, pkg/ipam/node.go:677-690): needed,
/// max-above-watermark, pending pods (`None`: the Pod store could not be read), result. Upstream
/// has no unit test of it at ed90dd5; these vectors, in the form of `neededDef`, are worked out
/// from the code: no surge without pending pods, none while they do not outnumber the IPs
/// needed, and the excess of pending pods over needed IPs otherwise.
const SURGE_DEF: [(usize, usize, Option<usize>, usize); 7] = [
    (16, 0, None, 16),
    (4, 2, None, 6),
    (4, 2, Some(0), 6),
    (4, 2, Some(4), 6),
    (4, 2, Some(5), 7),
    (4, 2, Some(10), 12),
    (1, 0, Some(8), 8),
];

/// `MaxIPsToAllocate = NeededIPs + maxAboveWatermark + surgeAllocate` (node.go:677-690) against
/// [`max_ips_to_allocate`], in the form of `TestCalculateNeededIPs`.
#[test]
fn surge_allocation_vectors() {
    let bad: Vec<String> = SURGE_DEF
        .iter()
        .enumerate()
        .filter_map(|(i, &(needed, maw, pending, want))| {
            let got = max_ips_to_allocate(needed, maw, pending);
            (got != want).then(|| {
                format!(
                    "vector {} {:?}: upstream {want}, model {got}",
                    i + 1,
                    (needed, maw, pending)
                )
            })
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestMarkForReleaseNoAllocate` (pkg/ipam/crd_test.go:87-126): pool 1.1.1.1-4; the agent
/// allocates .1-.3; the operator marks .4: .4 cannot be allocated, and the agent answers
/// `ready-for-release`; the operator marks .3 (in use): the agent answers `do-not-release`.
///
/// The model's agent answers every entry of the object it observes ([`answer_all`], upstream's
/// `updateLocalNodeResource` loop) and hands out IPs in pool order ([`allocatable`], upstream's
/// `allocateNext`). It has no allocation of a given IP (upstream's `Allocate(ip)`, used by the
/// test and by endpoint restore), so "allocating .1-.3" is taking the next three allocatable IPs,
/// and "`Allocate(.4)` fails" is ".4 is not allocatable". Upstream's test mutates the stored
/// CiliumNode in place, so its allocator sees the mark before `updateLocalNodeResource` runs; the
/// model's agent sees a mark only with the object it observes, so the test checks both the raw
/// mark and the agent's answer to it.
#[test]
fn upstream_cilium_mark_for_release_no_allocate() {
    let a = |i: u8| short(&format!("1.1.1.{i}"));
    let pool: BTreeMap<Short, Short> = (1..=4).map(|i| (a(i), short("foo"))).collect();
    let mut used: BTreeMap<Short, Short> = BTreeMap::new();
    // cn.Status.IPAM.ReleaseIPs.
    let mut release_ips: BTreeMap<Short, Short> = BTreeMap::new();
    // sharedNodeStore.updateLocalNodeResource(cn): nothing to answer.
    let view = answer_all(&release_ips, &pool, &used);
    assert!(view.is_empty());

    // Allocate the first 3 IPs.
    for i in 1..=3 {
        let next = allocatable(&pool, &used, &view).next();
        assert_eq!(next, Some(a(i)));
        used.insert(a(i), short(&format!("test{i}")));
    }

    // Update 1.1.1.4 as marked for release like the operator would.
    release_ips.insert(a(4), short(MARKED));
    // Attempts to allocate 1.1.1.4 should fail, since it's already marked for release.
    assert!(!allocatable(&pool, &used, &release_ips).any(|x| x == a(4)));
    // The agent's CRD update: 1.1.1.4 goes from marked to ready for release.
    let view = answer_all(&release_ips, &pool, &used);
    assert_eq!(view.get(&a(4)).map(Short::as_str), Some(READY));
    assert_eq!(allocatable(&pool, &used, &view).next(), None);
    release_ips = view; // the agent's status write

    // 1.1.1.3 is denied for release, since it's already in use.
    release_ips.insert(a(3), short(MARKED));
    let view = answer_all(&release_ips, &pool, &used);
    assert_eq!(view.get(&a(3)).map(Short::as_str), Some(DO_NOT_RELEASE));
    // The earlier answer stays.
    assert_eq!(view.get(&a(4)).map(Short::as_str), Some(READY));
    assert_eq!(view.len(), 2);
}

/// Not an upstream test function: the interface choice the ENI `TestNodeManagerReleaseAddress`
/// runs through (`PrepareIPRelease`, pkg/aws/eni/node.go:131-198 @ed90dd5), on layouts where it
/// matters, against [`prepare_ip_release`]. Upstream walks the interfaces in order and takes the
/// first whose `min(free, excess)` is strictly larger than the best so far, then its first
/// `min(free, excess)` free addresses (addresses in `status.ipam.used` are not free). So when
/// several interfaces can each cover the whole excess, the first one wins, not the one with the
/// most free IPs. Expected values written out from that rule.
#[test]
fn upstream_cilium_eni_prepare_ip_release_interface_choice() {
    let addr = |e: usize, k: usize| Short::from_fmt(format_args!("10.0.{e}.{}", 10 + k)).unwrap();
    let eni = |e: usize| Short::from_fmt(format_args!("eni-{e}")).unwrap();
    // (addresses on eni-0, on eni-1, used on eni-0, excess) -> (interface, count) chosen.
    type Case = ((usize, usize, usize, usize), Option<(usize, usize)>);
    let cases: [Case; 8] = [
        ((4, 10, 0, 3), Some((0, 3))),   // both cover 3: the first
        ((4, 10, 0, 5), Some((1, 5))),   // 4 < 5
        ((4, 10, 0, 12), Some((1, 10))), // neither covers it: the most
        ((10, 4, 0, 3), Some((0, 3))),
        ((4, 4, 0, 3), Some((0, 3))),
        ((4, 4, 0, 5), Some((0, 4))), // a tie below the excess: the first
        ((6, 4, 3, 4), Some((1, 4))), // eni-0 has 3 free: used addresses are skipped
        ((4, 4, 0, 0), None),         // nothing in excess
    ];
    let mut bad = Vec::new();
    for ((n0, n1, used0, excess), want) in cases {
        let enis: BTreeMap<Short, BTreeSet<Short>> = [(0, n0), (1, n1)]
            .into_iter()
            .map(|(e, n)| (eni(e), (0..n).map(|k| addr(e, k)).collect()))
            .collect();
        let used: BTreeMap<Short, Short> = (0..used0).map(|k| (addr(0, k), short("pod"))).collect();
        let got = prepare_ip_release(&enis, &used, excess);
        let want = want.map(|(e, n)| {
            let first = if e == 0 { used0 } else { 0 };
            (
                eni(e),
                (first..first + n).map(|k| addr(e, k)).collect::<Vec<_>>(),
            )
        });
        if got != want {
            bad.push(format!(
                "{n0}/{n1} addresses, {used0} used on eni-0, excess {excess}: upstream {want:?}, model {got:?}"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
