//! Upstream Cilium IPAM's unit tests for the excess-IP release handshake, mirrored against the
//! model's operator and agent decision code (`model::cilium::{operator, agent}` and the shared
//! functions in `model::cilium`).
//!
//! Upstream: cilium/cilium `main` at commit ed90dd5ea4c754a04a8135c6bb9c8afe29b75811 (2024-08-23,
//! VERSION 1.17.0-dev), read from the public fork skmatti/cilium, which holds upstream `main` up
//! to that commit (`git show ed90dd5ea4:<path>`):
//! * `pkg/ipam/node_test.go` (tables `neededDef` line 30, `excessDef` line 43; the tests at 56 and
//!   63), testing `calculateNeededIPs` (`pkg/ipam/node.go:327-345`) and `calculateExcessIPs`
//!   (`node.go:347-378`);
//! * `pkg/ipam/node_manager_test.go` (`TestNodeManagerReleaseAddress` 444-510,
//!   `TestNodeManagerAbortRelease` 514-585; the mock allocator 33-178, `newCiliumNode` 273,
//!   `updateCiliumNode` 296), driving `handleIPRelease` (`node.go:797-898`),
//!   `abortNoLongerExcessIPs` (735-755), `handleIPReleaseResponse` (758-776),
//!   `removeStaleReleaseIPs` (720-731) and `PopulateIPReleaseStatus` (1013-1031);
//! * `pkg/aws/eni/node_manager_test.go` (`TestNodeManagerReleaseAddress` 415-508,
//!   `updateCiliumNode` 1040), which goes through the ENI `PrepareIPRelease`
//!   (`pkg/aws/eni/node.go:131-198`);
//! * `pkg/ipam/crd_test.go` (`TestMarkForReleaseNoAllocate` 87-126), testing the agent's
//!   `nodeStore.updateLocalNodeResource` (`pkg/ipam/crd.go:338-449`) and `allocate`
//!   (`crd.go:510-545`);
//! * `pkg/testutils/ipam/ipam.go` (`FakeAcknowledgeReleaseIps`, 11-18).
//!
//! And the newer `operator/pkg/ipam/nodemanager/node_manager_test.go` at cilium/cilium commit
//! 4813068c856b2b1ff82be7d37bd5f3da17a13a59 (`TestNodeManagerAbortReleaseIPReassignment`, the
//! test of the issue #39981 fix, deflaked in PR #42276), testing the newer
//! `abortNoLongerExcessIPs` in `operator/pkg/ipam/nodemanager/node.go` (read at 35b06d5aefdf).
//!
//! | Rust test | upstream test | status |
//! |---|---|---|
//! | `upstream_cilium_calculate_excess_ips` | `TestCalculateExcessIPs` (vectors with min-allocate 0) | pass |
//! | `upstream_cilium_calculate_excess_ips_min_allocate` | `TestCalculateExcessIPs` (vectors with min-allocate > 0) | ignored |
//! | `upstream_cilium_calculate_needed_ips` | `TestCalculateNeededIPs` (vectors with min- and max-allocate 0) | pass |
//! | `upstream_cilium_calculate_needed_ips_min_max_allocate` | `TestCalculateNeededIPs` (the other vectors) | ignored |
//! | `upstream_cilium_mark_for_release_no_allocate` | `TestMarkForReleaseNoAllocate` (crd_test.go) | pass |
//! | `upstream_cilium_node_manager_release_address` | `TestNodeManagerReleaseAddress` (pkg/ipam), parameters the model expresses | pass |
//! | `upstream_cilium_node_manager_release_address_upstream_parameters` | `TestNodeManagerReleaseAddress` (pkg/ipam), upstream's parameters and numbers | ignored |
//! | `upstream_cilium_node_manager_abort_release` | `TestNodeManagerAbortRelease`, min-allocate's first allocation seeded | pass |
//! | `upstream_cilium_node_manager_abort_release_upstream_parameters` | `TestNodeManagerAbortRelease`, upstream's parameters and numbers | ignored |
//! | `upstream_cilium_eni_node_manager_release_address` | `TestNodeManagerReleaseAddress` (pkg/aws/eni), parameters the model expresses | pass |
//! | `upstream_cilium_eni_node_manager_release_address_upstream_parameters` | `TestNodeManagerReleaseAddress` (pkg/aws/eni), upstream's parameters and numbers | ignored |
//! | `upstream_cilium_eni_prepare_ip_release_interface_choice` | none: the ENI `PrepareIPRelease` rule the ENI test runs through | ignored |
//! | `upstream_cilium_node_manager_abort_release_ip_reassignment` | `TestNodeManagerAbortReleaseIPReassignment` (newer nodemanager) | ignored |
//!
//! Every ignored test is runnable (`cargo test -p model --test upstream_cilium -- --ignored`): it
//! asserts upstream's expected values against the model and fails, listing every value where the
//! model differs. Its `#[ignore]` reason says why.
//!
//! How upstream's vocabulary maps onto the model's:
//! * `calculateExcessIPs(available, used, pre, min, maw)` is [`excess_ips`] (the IPs chosen, so its
//!   length is the count) on the free list of a pool of `available` IPs of which `used` are in
//!   use, all on one interface (so no interface limit cuts the count);
//!   `calculateNeededIPs(available, used, pre, min, max)` is [`needed_ips`] on the same free count.
//!   The model has no `min-allocate` and no `max-allocate`, and takes `pre-allocate` and
//!   `max-above-watermark` from the operator's configuration, not from each CiliumNode's spec.
//! * The node manager tests' `mngr.Upsert(updateCiliumNode(cn, n))` is the driver writing
//!   `status.used` with `n` IPs through the API server (`cilium_support::Driver::set_used`);
//!   `FakeAcknowledgeReleaseIps` is `Driver::ack`; `node.Stats().IPv4.AvailableIPs` is the size
//!   of `spec.pool` the operator published, `UsedIPs` the size of `status.used`.
//!   `node.instanceSync.Trigger()` has no counterpart: the model's operator runs its maintenance
//!   on its own 1-minute resync (and at once for a node short of IPs), as upstream's operator does
//!   in production; the tests wait for it in simulated time.
//! * `operatorOption.Config.ExcessIPReleaseDelay = 2` (seconds): the model's delay is the constant
//!   [`RELEASE_DELAY`] (180 s, upstream's default); the simulated tests wait for it (and the
//!   pure-function tests pass 2 s to [`release_step`]).
//! * Upstream's mock (`nodeOperationsMock`) names its IPs "1", "2", ... while `updateCiliumNode`
//!   puts `used` IPs "1.1.1.x" that are NOT in the operator's pool, so upstream's "used" is only a
//!   count. The model counts free IPs as the pool's IPs not in `status.used`, so here the used IPs
//!   are always pool IPs (as they are for a real agent, which allocates from the pool).
//! * The node manager tests' mock allocator has one pool of 2048 IPs: here one interface of 64.
//!
//! Divergences these tests expose (the model's decisions, against upstream @ed90dd5 unless said):
//! 1. Excess: the model computes `max(0, available - used - pre - maw)` only; upstream's
//!    `calculateExcessIPs` first keeps `min-allocate + max-above-watermark` IPs while `used <=
//!    min + maw`: no excess while `available <= min + maw`, and `available - min - maw` while
//!    `used + pre <= min + maw`. Vectors 3, 4 and 6 of `excessDef` differ (model 9, 8, 4; upstream
//!    1, 0, 0). The same branch applies with min-allocate 0 when `used + pre <= maw` (upstream
//!    `available - maw`, the model less), a case upstream's table does not list.
//! 2. Needed: the model computes `max(0, pre - (available - used))` only; upstream also raises it
//!    to `min-allocate - available` and caps `available + needed` at `max-allocate`. Vectors 1, 2,
//!    5, 8, 9 and 10 of `neededDef` differ.
//! 3. Allocation size: the model assigns exactly the needed count; upstream assigns up to
//!    `needed + max-above-watermark` (+ surge for pending pods) (`determineMaintenanceAction`,
//!    `MaxIPsToAllocate`, node.go:651-700): with 19 of 19 used, pre-allocate 4 and
//!    max-above-watermark 4, upstream allocates 8 (19 -> 27), the model 4.
//! 4. Release interface: upstream's ENI `PrepareIPRelease` takes, in sorted interface order, the
//!    interface whose `min(free, excess)` is strictly largest, so when several interfaces can each
//!    cover the whole excess the first by id wins; the model takes the interface with the most free
//!    IPs. With excess 3 and free 4 on eni-0, 10 on eni-1: upstream eni-0, the model eni-1.
//!    Upstream takes the interface's first free addresses in its address-list order, the model in
//!    address (text) order; upstream never releases an interface's primary IP or from an
//!    interface with prefixes (the model has neither).
//! 5. An IP back in the pool while its entry is still `released` (issue #39981): the newer
//!    operator drops the entry (and its local state) once the IP is not excess; the model, like
//!    upstream @ed90dd5, keeps it for ever (the agent keeps it too, since the IP is in its pool, and
//!    never hands the IP out).
//! 6. `pre-allocate`, `max-above-watermark` (and upstream's `min-allocate`, `max-allocate`) are
//!    per CiliumNode upstream (`spec.ipam.*`; pre-allocate 0 means the default 8,
//!    `getPreAllocate`); the model has one operator-wide value each.
//! 7. `excess-ip-release-delay` is configurable upstream (2 s in these tests); the model's is the
//!    constant 180 s.
//! 8. The agent has no allocation of a given IP (`TestMarkForReleaseNoAllocate`'s `Allocate(ip)`,
//!    which fails for an IP in `marked-for-release`, `ready-for-release` or `released`). Upstream's
//!    endpoint restore goes through it (`AllocateIPWithoutSyncUpstream`), so a restored endpoint
//!    whose IP is marked is not restored; the model's restore takes every pod's IP unchecked.
//!
//! Not exercised by upstream's tests, seen in the code while mirroring them (no test here):
//! * the model drops the first-seen time of an IP as soon as a pass finds it not excess; upstream
//!   keeps the times when a pass has no maintenance action (`handleIPRelease` not called,
//!   node.go:934-949), so an IP can be marked as soon as it is excess again;
//! * the model's free count is the pool's IPs not in `status.used`; upstream's used count is
//!   `len(status.ipam.used)`, whether or not those IPs are in the pool;
//! * the model's status write replaces `release-ips` with its local state on a fresh read;
//!   upstream's `PopulateIPReleaseStatus` keeps, for an IP it holds as marked, an agent answer
//!   (`ready-for-release`, `do-not-release`) already in the copy it writes;
//! * the model's instance resync turns a `ready-for-release` entry whose IP the cloud no longer
//!   holds into `released`; upstream drops such an entry;
//! * a node's update triggers a model pass when `pool - used < pre-allocate`; upstream when
//!   `NeededIPs > 0` (which includes min- and max-allocate).
//!
//! What the model matches (the passing tests): the agent's answers and its refusal to hand out a
//! marked IP; excess and needed counts whenever min-allocate and max-allocate are 0 (and, for
//! excess, `used + pre > maw`); no release on a CiliumNode update (only on the resync); marking only
//! after the delay; unassigning exactly the IPs the agent acknowledged; `released` entries; an
//! acknowledged IP that stops being excess is removed from `release-ips`, not released.

mod cilium_support;

use cilium_support::{run, short, Run, Script, Setup, Snapshot};
use model::cilium::agent::{allocatable, answer_all};
use model::cilium::operator::{fold_answers, release_step};
use model::cilium::{
    agent_answer, excess_ips, needed_ips, unused, Answer, DO_NOT_RELEASE, MARKED, READY, RELEASED,
    RELEASE_DELAY,
};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};

const S: u64 = 1_000_000;

// ---------------------------------------------------------------- upstream's functions

/// Upstream's `calculateNeededIPs` (pkg/ipam/node.go:327-345 @ed90dd5), transcribed: the
/// reference the table tests check and the simulated tests take their expected numbers from.
fn upstream_calculate_needed_ips(
    available: i64,
    used: i64,
    pre_allocate: i64,
    min_allocate: i64,
    max_allocate: i64,
) -> i64 {
    let mut needed = pre_allocate - (available - used);
    if min_allocate > 0 {
        needed = needed.max(min_allocate - available);
    }
    if max_allocate > 0 && available + needed > max_allocate {
        needed = max_allocate - available;
    }
    needed.max(0)
}

/// Upstream's `calculateExcessIPs` (pkg/ipam/node.go:347-378 @ed90dd5), transcribed.
fn upstream_calculate_excess_ips(
    available: i64,
    used: i64,
    pre_allocate: i64,
    min_allocate: i64,
    max_above_watermark: i64,
) -> i64 {
    if used <= min_allocate + max_above_watermark {
        if available <= min_allocate + max_above_watermark {
            return 0;
        }
        if used + pre_allocate <= min_allocate + max_above_watermark {
            return available - min_allocate - max_above_watermark;
        }
    }
    (available - used - pre_allocate - max_above_watermark).max(0)
}

/// `neededDef` (pkg/ipam/node_test.go:30-41): available, used, pre-allocate, min-allocate,
/// max-allocate, result.
const NEEDED_DEF: [(i64, i64, i64, i64, i64, i64); 10] = [
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
const EXCESS_DEF: [(i64, i64, i64, i64, i64, i64); 10] = [
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

// ---------------------------------------------------------------- the model, pure

fn ip(i: usize) -> Short {
    Short::from_fmt(format_args!("10.0.{}.{}", i / 250, i % 250 + 1)).unwrap()
}

/// The model's free list for `available` pool IPs on one interface of which the first `used`
/// are in use ([`unused`], as the operator computes it).
fn free_list(available: i64, used: i64) -> Vec<(Short, Short)> {
    let pool: BTreeMap<Short, Short> = (0..available as usize)
        .map(|i| (ip(i), short("eni-0")))
        .collect();
    let in_use: BTreeMap<Short, ()> = pool.keys().take(used as usize).map(|k| (*k, ())).collect();
    unused(&pool, &in_use).collect()
}

/// The model's excess count for a vector (min-allocate has no counterpart: dropped).
fn model_excess(available: i64, used: i64, pre: i64, maw: i64) -> i64 {
    excess_ips(&free_list(available, used), pre as usize, maw as usize).len() as i64
}

/// The model's needed count for a vector (min- and max-allocate have no counterpart: dropped).
fn model_needed(available: i64, used: i64, pre: i64) -> i64 {
    needed_ips(free_list(available, used).len(), pre as usize) as i64
}

/// The table's vectors that `keep` selects on which the model's value differs from upstream's,
/// as text.
fn table_mismatches(
    table: &[(i64, i64, i64, i64, i64, i64)],
    keep: impl Fn(&(i64, i64, i64, i64, i64, i64)) -> bool,
    model: impl Fn(&(i64, i64, i64, i64, i64, i64)) -> i64,
) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut out = Vec::new();
    for (i, v) in table.iter().enumerate() {
        if !keep(v) {
            continue;
        }
        checked += 1;
        let got = model(v);
        if got != v.5 {
            out.push(format!(
                "vector {} {:?}: upstream {}, model {}",
                i + 1,
                (v.0, v.1, v.2, v.3, v.4),
                v.5,
                got
            ));
        }
    }
    (checked, out)
}

/// `TestCalculateExcessIPs`, the vectors the model expresses exactly (min-allocate 0). Also
/// checks that the transcription of upstream's function gives every result of upstream's table.
#[test]
fn upstream_cilium_calculate_excess_ips() {
    for (i, v) in EXCESS_DEF.iter().enumerate() {
        assert_eq!(
            upstream_calculate_excess_ips(v.0, v.1, v.2, v.3, v.4),
            v.5,
            "transcription, vector {}",
            i + 1
        );
    }
    let (checked, bad) = table_mismatches(
        &EXCESS_DEF,
        |v| v.3 == 0,
        |v| model_excess(v.0, v.1, v.2, v.4),
    );
    assert_eq!(checked, 3);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestCalculateExcessIPs`, the vectors with min-allocate > 0, with min-allocate dropped (the
/// model has none). The model coincides on vectors 1, 2, 7 and 8 only because upstream's final
/// branch (`available - used - pre - maw`, at least 0) gives the same there; it differs on
/// vector 3 {17,0,8,16,0}: upstream 1 (17 - 16), model 9; vector 4 {20,0,8,16,4}: upstream 0
/// (20 <= 16 + 4), model 8; vector 6 {20,0,8,20,8}: upstream 0 (20 <= 28), model 4.
#[test]
#[ignore = "model differs from upstream: no min-allocate, so no `used <= min + maw` branch in the excess (vectors 3, 4, 6)"]
fn upstream_cilium_calculate_excess_ips_min_allocate() {
    let (checked, bad) = table_mismatches(
        &EXCESS_DEF,
        |v| v.3 != 0,
        |v| model_excess(v.0, v.1, v.2, v.4),
    );
    assert_eq!(checked, 7);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestCalculateNeededIPs`, the vectors the model expresses exactly (min- and max-allocate 0).
/// Also checks the transcription of upstream's function against the whole table.
#[test]
fn upstream_cilium_calculate_needed_ips() {
    for (i, v) in NEEDED_DEF.iter().enumerate() {
        assert_eq!(
            upstream_calculate_needed_ips(v.0, v.1, v.2, v.3, v.4),
            v.5,
            "transcription, vector {}",
            i + 1
        );
    }
    let (checked, bad) = table_mismatches(
        &NEEDED_DEF,
        |v| v.3 == 0 && v.4 == 0,
        |v| model_needed(v.0, v.1, v.2),
    );
    assert_eq!(checked, 2);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestCalculateNeededIPs`, the vectors with min-allocate or max-allocate set, both dropped (the
/// model has neither). The model coincides on vectors 3 and 7 (min-allocate below what
/// pre-allocate asks); it differs on vector 1 {0,0,0,16,0}: upstream 16 (min 16), model 0;
/// vector 2 {0,0,8,16,0}: upstream 16, model 8; vector 5 {8,0,0,16,0}: upstream 8, model 0;
/// vector 8 {8,4,8,8,6}: upstream 0 (capped at max 6), model 4; vector 9 {8,4,8,0,8}: upstream 0
/// (capped at max 8), model 4; vector 10 {4,4,8,0,8}: upstream 4 (capped at max 8), model 8.
#[test]
#[ignore = "model differs from upstream: no min-allocate (raise to min - available) and no max-allocate (cap at max) in the needed count (vectors 1, 2, 5, 8, 9, 10)"]
fn upstream_cilium_calculate_needed_ips_min_max_allocate() {
    let (checked, bad) = table_mismatches(
        &NEEDED_DEF,
        |v| v.3 != 0 || v.4 != 0,
        |v| model_needed(v.0, v.1, v.2),
    );
    assert_eq!(checked, 8);
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

// ---------------------------------------------------------------- the node manager tests

/// Upstream's `TestNodeManagerReleaseAddress` steps (both the generic and the ENI test): the node
/// is announced; `a` IPs used (none allocated); `b` used (pre-allocate kicks in); `c` used (excess
/// appears, but is only released on the resync: upstream's `WaitUntil` of 2 s must time out);
/// then the handshake: the marks, `FakeAcknowledgeReleaseIps`, the release.
fn release_address_script(a: Option<usize>, b: usize, c: usize) -> Script {
    Box::new(move |d| {
        Box::pin(async move {
            d.sleep_s(1.0).await;
            d.snapshot("announce");
            if let Some(a) = a {
                d.set_used(a).await;
                d.sleep_s(5.0).await;
                d.snapshot("use a");
            }
            d.set_used(b).await;
            d.sleep_s(5.0).await;
            d.snapshot("use b");
            d.set_used(c).await;
            d.sleep_s(2.0).await;
            d.snapshot("use c");
            // The resync times the excess IPs, and marks them once the delay has passed.
            d.wait_until(400.0, |s| !s.in_state(MARKED).is_empty())
                .await;
            d.snapshot("marked");
            d.ack().await;
            // Released: every entry `released`, its IP gone from the pool.
            d.wait_until(180.0, |s| {
                !s.release_ips.is_empty()
                    && s.release_ips
                        .iter()
                        .all(|(ip, st)| st == RELEASED && !s.pool.contains_key(ip))
            })
            .await;
            d.snapshot("released");
            d.sleep_s(120.0).await;
            d.snapshot("end");
        })
    })
}

/// (label, available, used) where the run differs from `expected`, as text.
fn step_mismatches(run: &Run, expected: &[(&str, usize, usize)]) -> Vec<String> {
    let mut out = Vec::new();
    for (label, available, used) in expected {
        match run.snapshots.iter().find(|s| s.label == *label) {
            None => out.push(format!("{label}: no snapshot")),
            Some(s) if (s.available(), s.used_count()) != (*available, *used) => out.push(format!(
                "{label}: upstream {available} available / {used} used, model {} / {}",
                s.available(),
                s.used_count()
            )),
            Some(_) => {}
        }
    }
    out
}

/// Checks of the handshake common to the passing release tests: the marks came only after the
/// delay (counted from the write that made the IPs excess) and within two resyncs more; nothing
/// was marked or released on the update itself; the operator unassigned exactly the IPs it marked
/// and the driver acknowledged, each only after the acknowledgement, with `ready-for-release`
/// seen; and it wrote `released` for them. Returns the released IPs.
fn check_handshake(run: &Run, excess: usize) -> BTreeSet<Short> {
    let (use_c, marked, released) = (run.at("use c"), run.at("marked"), run.at("released"));
    // The excess appeared at the `use c` write, 2 s before its snapshot.
    let excess_since = use_c.t_us - 2 * S;
    assert!(use_c.release_ips.is_empty(), "{use_c:#?}");
    let marks = run.marks();
    assert_eq!(marks.len(), excess, "{marks:?}");
    let marked_ips: BTreeSet<Short> = marks.iter().map(|m| m.1).collect();
    for (t, _) in &marks {
        assert!(
            *t >= excess_since + RELEASE_DELAY.as_micros() as u64,
            "{marks:?}"
        );
        assert!(*t < excess_since + (180 + 2 * 60 + 5) * S, "{marks:?}");
    }
    assert_eq!(marked.in_state(MARKED), marked_ips);
    // None of them in use.
    assert!(marked_ips.is_disjoint(&marked.used));
    // The acknowledgement flipped exactly those.
    assert_eq!(run.acks.len(), 1);
    let (ack_t, acked) = &run.acks[0];
    assert_eq!(*acked, marked_ips);
    let releases = run.releases();
    assert_eq!(releases.len(), excess, "{releases:?}");
    for (t, ip, seen) in &releases {
        assert!(
            t > ack_t && acked.contains(ip) && seen == READY,
            "{releases:?}"
        );
    }
    let unassigned: BTreeSet<Short> = run.unassigns().iter().map(|u| u.2).collect();
    assert_eq!(unassigned, marked_ips);
    assert_eq!(released.in_state(RELEASED), marked_ips);
    assert!(run.aborts().is_empty(), "{:?}", run.aborts());
    marked_ips
}

/// `TestNodeManagerReleaseAddress` (pkg/ipam/node_manager_test.go:444-510), with parameters the
/// model expresses. Upstream: pre-allocate 4, min-allocate 15, max-above-watermark 4; announced
/// with no IPs (19 allocated: min 15 + maw 4), use 11 (19, nothing allocated), use 19 (27: needed
/// 4 + maw 4), use 10 (27, no release on the update), handshake, 19 available (the min-allocate
/// branch: excess 27 - 15 - 4 = 8; upstream's comment "down to 18" is the formula without it).
///
/// Here: pre-allocate 8, max-above-watermark 0, no min-allocate (the model has none, and
/// allocates no max-above-watermark: divergences 1, 3), and the node starts with the 19 IPs
/// upstream allocates at announce (min-allocate 15 + watermark 4; here seeded in the cloud and
/// the pool), so the driver uses 11 of them at once, before the first resync. Pre-allocate 8 with
/// watermark 0 allocates the same 8 at "use 19" as upstream's 4 + 4. Upstream's formulas give for
/// these parameters: 19/0, 19/11, 27/19, 27/10, then excess 27 - 10 - 8 = 9, released down to
/// 18 (= upstream's comment); the test asserts those.
#[test]
fn upstream_cilium_node_manager_release_address() {
    let (pre, maw) = (8, 0);
    let run = run(
        Setup {
            pre_allocate: pre,
            max_above_watermark: maw,
            enis: 1,
            eni_capacity: 64,
            seeded: vec![19],
            run_for_s: 700,
        },
        release_address_script(Some(11), 19, 10),
    );
    assert!(run.finished, "{}", show(&run.snapshots));
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 19, 0),
            ("use a", 19, 11),
            ("use b", 27, 19),
            ("use c", 27, 10),
            ("released", 18, 10),
            ("end", 18, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
    // Upstream's formulas for the same parameters (no min-allocate).
    assert_eq!(upstream_calculate_needed_ips(19, 19, pre as i64, 0, 0), 8);
    assert_eq!(
        upstream_calculate_excess_ips(27, 10, pre as i64, 0, maw as i64),
        9
    );
    // The 8 came in one allocation, at "use 19".
    let assigns = run.assigns();
    assert_eq!(assigns.len(), 8, "{assigns:?}");
    let (use_a, use_b) = (run.at("use a"), run.at("use b"));
    assert!(assigns.iter().all(|a| a.0 > use_a.t_us && a.0 < use_b.t_us));
    let released = check_handshake(&run, 9);
    assert!(released
        .iter()
        .all(|ip| !run.at("end").pool.contains_key(ip)));
}

/// `TestNodeManagerReleaseAddress` (pkg/ipam) with upstream's own parameters (pre-allocate 4,
/// max-above-watermark 4; min-allocate 15 dropped: the model has none) and upstream's asserted
/// numbers, starting like upstream with no IPs. The model allocates only pre-allocate's 4 at
/// announce (upstream 19: min-allocate 15 + watermark 4) and at every shortage only the needed
/// count (upstream adds the watermark), and would release down to used + pre + maw (upstream
/// keeps min-allocate + watermark: 19). The driver, as an agent, can use only IPs of the pool, so
/// with the model's smaller pool its used counts fall short of upstream's too (upstream's used IPs
/// are outside its mock pool). With `--ignored` it lists each step's numbers.
#[test]
#[ignore = "model differs from upstream: no min-allocate (initial 19 and the final 19), allocations without max-above-watermark (27)"]
fn upstream_cilium_node_manager_release_address_upstream_parameters() {
    let run = run(
        Setup {
            pre_allocate: 4,
            max_above_watermark: 4,
            enis: 1,
            eni_capacity: 64,
            seeded: vec![],
            run_for_s: 700,
        },
        release_address_script(Some(11), 19, 10),
    );
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 19, 0),
            ("use a", 19, 11),
            ("use b", 27, 19),
            ("use c", 27, 10),
            ("released", 19, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
}

/// `TestNodeManagerAbortRelease` steps: announced; use 3 (pre-allocate 1 adds one: 4); use 2 (one
/// excess); after the delay one entry, marked; the agent acknowledges and uses a third IP (excess
/// 0); the next pass removes the entry instead of releasing it.
fn abort_release_script() -> Script {
    Box::new(move |d| {
        Box::pin(async move {
            d.sleep_s(1.0).await;
            d.snapshot("announce");
            d.set_used(3).await;
            d.sleep_s(5.0).await;
            d.snapshot("use 3");
            d.set_used(2).await;
            d.snapshot("use 2");
            d.wait_until(400.0, |s| !s.in_state(MARKED).is_empty())
                .await;
            d.snapshot("marked");
            // Fake acknowledge like the agent would, then use up one more IP (excess 0).
            d.ack().await;
            d.set_used(3).await;
            d.snapshot("acked, use 3");
            d.wait_until(120.0, |s| s.release_ips.is_empty()).await;
            d.snapshot("aborted");
            d.sleep_s(200.0).await;
            d.snapshot("end");
        })
    })
}

/// `TestNodeManagerAbortRelease` (pkg/ipam/node_manager_test.go:514-585): pre-allocate 1,
/// min-allocate 3: 3 available; use 3: 4; use 2: one excess (min-allocate branch: 4 - 3 = 1),
/// marked after the delay (`len(ReleaseIPs) == 1`); acknowledged, then use 3: the entry is
/// "removed, instead of being set to released" (`ReleaseIPs` empty); 4 available, 3 used.
///
/// The model has no min-allocate; the node starts with the 3 IPs min-allocate allocates first
/// (seeded), and the driver uses all 3 before the first resync. From there every number is
/// upstream's: use 3 allocates one (needed 1 - 0 = 1 both ways), use 2 gives one excess (the
/// model's 4 - 2 - 1 = 1 equals upstream's min-allocate branch 4 - 3 = 1).
#[test]
fn upstream_cilium_node_manager_abort_release() {
    let run = run(
        Setup {
            pre_allocate: 1,
            max_above_watermark: 0,
            enis: 1,
            eni_capacity: 64,
            seeded: vec![3],
            run_for_s: 700,
        },
        abort_release_script(),
    );
    assert!(run.finished, "{}", show(&run.snapshots));
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 3, 0),
            ("use 3", 4, 3),
            ("use 2", 4, 2),
            ("aborted", 4, 3),
            ("end", 4, 3),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
    let marked = run.at("marked");
    assert_eq!(marked.release_ips.len(), 1, "{marked:#?}");
    let x = *marked.in_state(MARKED).first().unwrap();
    assert!(!marked.used.contains(&x));
    // The mark came after the delay.
    let (t_mark, _) = run.marks()[0];
    assert!(t_mark >= run.at("use 2").t_us + RELEASE_DELAY.as_micros() as u64);
    assert_eq!(run.marks().len(), 1);
    assert_eq!(run.acks[0].1, BTreeSet::from([x]));
    // Removed, instead of being set to released: no release, no unassign, one abort.
    let aborted = run.at("aborted");
    assert!(aborted.release_ips.is_empty(), "{aborted:#?}");
    assert!(aborted.pool.contains_key(&x));
    assert!(
        run.releases().is_empty() && run.unassigns().is_empty(),
        "{run:#?}"
    );
    assert_eq!(run.aborts().iter().map(|a| a.1).collect::<Vec<_>>(), [x]);
    // And it stays so (no excess, nothing marked again).
    assert!(run.at("end").release_ips.is_empty());
}

/// `TestNodeManagerAbortRelease` with upstream's parameters (pre-allocate 1; min-allocate 3
/// dropped: the model has none) starting like upstream with no IPs. The model allocates 1 at
/// announce (upstream 3), so every later count is off (the driver can use only the pool's IPs),
/// and no IP is ever in excess before the end. With `--ignored` it lists them.
#[test]
#[ignore = "model differs from upstream: no min-allocate (announce allocates 1, not 3)"]
fn upstream_cilium_node_manager_abort_release_upstream_parameters() {
    let run = run(
        Setup {
            pre_allocate: 1,
            max_above_watermark: 0,
            enis: 1,
            eni_capacity: 64,
            seeded: vec![],
            run_for_s: 700,
        },
        abort_release_script(),
    );
    let mut bad = step_mismatches(
        &run,
        &[
            ("announce", 3, 0),
            ("use 3", 4, 3),
            ("use 2", 4, 2),
            ("aborted", 4, 3),
        ],
    );
    let marked = &run.at("marked").release_ips;
    if marked.len() != 1 {
        bad.push(format!(
            "marked: upstream 1 entry, model {}: {marked:?}",
            marked.len()
        ));
    }
    if !run.at("aborted").release_ips.is_empty() {
        bad.push(format!("aborted: {:?}", run.at("aborted").release_ips));
    }
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
}

/// `TestNodeManagerReleaseAddress` (pkg/aws/eni/node_manager_test.go:415-508), with parameters
/// the model expresses. Upstream: m4.xlarge (14 secondary IPs per interface), pre-allocate 2,
/// min-allocate 10, max-above-watermark 3; announced with one empty interface: 13 (min 10 + maw
/// 3); use 11: 13; use 13: 18 (needed 2 + maw 3: the first interface filled to 14, a second one
/// with 4); use 10: 18, no release on the update; handshake: 13 (the min-allocate branch: 18 -
/// 10 - 3 = 5 excess; upstream's comment "10 used + 2 pre-allocate + 3 max-above-watermark =>
/// 15" is the formula without it).
///
/// Here: upstream's pre-allocate 2 and max-above-watermark 3, no min-allocate, and the node starts
/// where upstream's allocation phase ends (eni-0 with 14 IPs, eni-1 with 4), since the model
/// cannot allocate the watermark (divergence 3). Upstream's formulas give for these parameters:
/// use 13: 18 (nothing needed: 2 - 5 < 0; no excess: 18 - 13 - 2 - 3 = 0); use 10: 18, then
/// excess 3, released down to 15 (= upstream's comment). The used IPs fill eni-0 first, so at
/// "use 10" eni-0 and eni-1 have 4 free IPs each: upstream's `PrepareIPRelease` takes eni-0 (the
/// first id, 3 = min(4, 3)), and so does the model (a tie on the most free, first by name).
#[test]
fn upstream_cilium_eni_node_manager_release_address() {
    let (pre, maw) = (2, 3);
    let run = run(
        Setup {
            pre_allocate: pre,
            max_above_watermark: maw,
            enis: 4,
            eni_capacity: 14,
            seeded: vec![14, 4],
            run_for_s: 700,
        },
        release_address_script(None, 13, 10),
    );
    assert!(run.finished, "{}", show(&run.snapshots));
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 18, 0),
            ("use b", 18, 13),
            ("use c", 18, 10),
            ("released", 15, 10),
            ("end", 15, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
    assert_eq!(upstream_calculate_needed_ips(18, 13, pre as i64, 0, 0), 0);
    assert_eq!(
        upstream_calculate_excess_ips(18, 13, pre as i64, 0, maw as i64),
        0
    );
    assert_eq!(
        upstream_calculate_excess_ips(18, 10, pre as i64, 0, maw as i64),
        3
    );
    assert!(run.assigns().is_empty(), "{:?}", run.assigns());
    let use_c = run.at("use c");
    assert_eq!((use_c.on("eni-0"), use_c.on("eni-1")), (14, 4));
    let released = check_handshake(&run, 3);
    // All from eni-0, as upstream's `PrepareIPRelease` chooses.
    assert!(released.iter().all(|ip| use_c.pool[ip] == "eni-0"));
    assert!(run.unassigns().iter().all(|u| u.1 == "eni-0"));
    let end = run.at("end");
    assert_eq!((end.on("eni-0"), end.on("eni-1")), (11, 4));
}

/// The ENI `TestNodeManagerReleaseAddress` with upstream's parameters (m4.xlarge: 4 interfaces of
/// 14; pre-allocate 2, max-above-watermark 3; min-allocate 10 dropped) and asserted numbers,
/// starting like upstream with empty interfaces. The model allocates 2 at announce (upstream
/// 13) and never the watermark (the driver can use only the pool's IPs, so its used counts fall
/// short too). With `--ignored` it lists each step's numbers.
#[test]
#[ignore = "model differs from upstream: no min-allocate (initial 13 and the final 13), allocations without max-above-watermark (18)"]
fn upstream_cilium_eni_node_manager_release_address_upstream_parameters() {
    let run = run(
        Setup {
            pre_allocate: 2,
            max_above_watermark: 3,
            enis: 4,
            eni_capacity: 14,
            seeded: vec![],
            run_for_s: 700,
        },
        release_address_script(Some(11), 13, 10),
    );
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 13, 0),
            ("use a", 13, 11),
            ("use b", 18, 13),
            ("use c", 18, 10),
            ("released", 13, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
}

/// Upstream's ENI `PrepareIPRelease` (pkg/aws/eni/node.go:131-198 @ed90dd5), transcribed for
/// interfaces without prefixes or a primary IP among the free ones: in sorted interface order,
/// the interface whose `min(free, excess)` is strictly larger than the best so far; its first
/// `min(free, excess)` free IPs.
fn upstream_prepare_ip_release(
    free: &BTreeMap<Short, Vec<Short>>,
    excess: usize,
) -> Option<(Short, Vec<Short>)> {
    let mut best: Option<(Short, Vec<Short>)> = None;
    for (eni, ips) in free {
        if ips.is_empty() {
            continue;
        }
        let n = ips.len().min(excess);
        if best.as_ref().is_none_or(|b| n > b.1.len()) {
            best = Some((*eni, ips[..n].to_vec()));
        }
    }
    best
}

/// Not an upstream test function: the interface choice the ENI `TestNodeManagerReleaseAddress`
/// runs through (`PrepareIPRelease`), on layouts where it matters. The model takes the interface
/// with the most free IPs; upstream the first (by id) of those that cover the most of the excess.
/// They agree unless two interfaces can each cover the whole excess: with excess 3 and 4 free on
/// eni-0, 10 on eni-1, upstream releases from eni-0 and the model from eni-1.
#[test]
#[ignore = "model differs from upstream: the release interface is the one with the most free IPs, not the first whose min(free, excess) is largest"]
fn upstream_cilium_eni_prepare_ip_release_interface_choice() {
    // (free on eni-0, free on eni-1, excess)
    let layouts = [(4, 10, 3), (4, 10, 5), (4, 10, 12), (10, 4, 3), (4, 4, 3)];
    let mut bad = Vec::new();
    for (f0, f1, excess) in layouts {
        let mut free = Vec::new();
        let mut per_eni: BTreeMap<Short, Vec<Short>> = BTreeMap::new();
        for (e, n) in [(0, f0), (1, f1)] {
            for k in 0..n {
                let a = Short::from_fmt(format_args!("10.0.{e}.{}", 10 + k)).unwrap();
                let eni = Short::from_fmt(format_args!("eni-{e}")).unwrap();
                free.push((a, eni));
                per_eni.entry(eni).or_default().push(a);
            }
        }
        free.sort();
        // pre-allocate such that the excess is `excess` (watermark 0).
        let pre = (f0 + f1) - excess;
        let model = excess_ips(&free, pre, 0);
        let model_eni = model
            .first()
            .map(|a| free.iter().find(|f| f.0 == *a).unwrap().1);
        let upstream = upstream_prepare_ip_release(&per_eni, excess);
        let want = upstream.as_ref().map(|u| (u.0, u.1.len()));
        if want != model_eni.map(|e| (e, model.len())) {
            bad.push(format!(
                "free {f0}/{f1}, excess {excess}: upstream {want:?}, model {:?}",
                model_eni.map(|e| (e, model.len()))
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `TestNodeManagerAbortReleaseIPReassignment` (newer
/// `operator/pkg/ipam/nodemanager/node_manager_test.go` @4813068c; issue #39981): pre-allocate 1,
/// min-allocate 3; 4 available, 2 used, one excess IP X; X marked after the delay (asserted in
/// `ReleaseIPs`), acknowledged (`ready-for-release` asserted), released: the test sets X
/// `released` in `ReleaseIPs` and in the operator's `ipReleaseStatus` and removes it from the
/// pool; then X is re-added to the pool (reassigned by the cloud) before the agent removed the
/// entry. Expected: eventually X is in none of `ipReleaseStatus`, `ipsMarkedForRelease` and
/// `Status.IPAM.ReleaseIPs`; 4 available, 2 used.
///
/// The simulated cloud never hands out an address twice, so this runs on the model's pure
/// decision functions, pass by pass, with upstream's 2 s delay: [`fold_answers`] (the agent's
/// answers into the operator's local state), [`excess_ips`] and [`release_step`]; the release
/// itself is what the operator's pass does after a successful unassign (X `released`, its time
/// dropped), as the upstream test sets it by hand. The model writes its local state as
/// `release-ips`, so "X not in ReleaseIPs" is "X not in the local state". X comes back on
/// another interface ("eni-test", as upstream's test re-adds it), where it is not the excess IP
/// (upstream's mock picks the new IP it allocated; an X that is excess again keeps its entry
/// upstream too, the newer code's `excessMap` check coming first).
///
/// The model behaves like upstream @ed90dd5: a `released` entry is never aborted, the agent keeps
/// it while X is in its pool, so X stays `released` (and unallocatable) for ever.
#[test]
#[ignore = "model differs from upstream: no #39981 fix (a released entry whose IP is back in the pool is never dropped)"]
fn upstream_cilium_node_manager_abort_release_ip_reassignment() {
    let delay = 2 * S; // upstream's testExcessIPReleaseDelay
    let (pre, maw) = (1, 0);
    let a = |s: &str| short(s);
    let (x, c) = (a("10.0.0.3"), a("10.0.1.1"));
    // 4 available: two used on eni-0, X on eni-0, c on eni-1.
    let mut pool: BTreeMap<Short, Short> = [
        (a("10.0.0.1"), a("eni-0")),
        (a("10.0.0.2"), a("eni-0")),
        (x, a("eni-0")),
        (c, a("eni-1")),
    ]
    .into();
    let used: BTreeMap<Short, Short> =
        [(a("10.0.0.1"), a("pod-1")), (a("10.0.0.2"), a("pod-2"))].into();
    let excess = |pool: &BTreeMap<Short, Short>| {
        let free: Vec<_> = unused(pool, &used).collect();
        excess_ips(&free, pre, maw)
    };
    // Upstream's count for 4 available / 2 used, min-allocate 3: 1. The model's: 4 - 2 - 1 = 1.
    assert_eq!(upstream_calculate_excess_ips(4, 2, 1, 3, 0), 1);
    assert_eq!(excess(&pool), vec![x]);

    let mut local: BTreeMap<Short, Short> = BTreeMap::new(); // ipReleaseStatus (= what is written)
    let mut seen: BTreeMap<Short, u64> = BTreeMap::new(); // ipsMarkedForRelease
    let mut observed: BTreeMap<Short, Short> = BTreeMap::new(); // Status.IPAM.ReleaseIPs
    let pass = |t: u64,
                pool: &BTreeMap<Short, Short>,
                local: &mut BTreeMap<Short, Short>,
                seen: &mut BTreeMap<Short, u64>,
                observed: &BTreeMap<Short, Short>| {
        fold_answers(local, observed);
        release_step(local, seen, &excess(pool), None, t, delay, false)
    };

    // instanceSync: the excess IP is timed.
    let step = pass(0, &pool, &mut local, &mut seen, &observed);
    assert!(step.marked.is_empty() && seen.contains_key(&x));
    // After the delay: marked for release (upstream asserts it in ReleaseIPs).
    let step = pass(3 * S, &pool, &mut local, &mut seen, &observed);
    assert_eq!(step.marked, vec![x]);
    assert_eq!(local.get(&x).map(Short::as_str), Some(MARKED));
    observed = local.clone(); // the operator's status write
                              // FakeAcknowledgeReleaseIps.
    observed.insert(x, a(READY));
    // MaintainIPPool processes the acknowledgement: X is to be released, ready-for-release stays.
    let step = pass(4 * S, &pool, &mut local, &mut seen, &observed);
    assert_eq!(step.to_release.iter().map(|r| r.0).collect::<Vec<_>>(), [x]);
    assert_eq!(local.get(&x).map(Short::as_str), Some(READY));
    // Released (what the pass does after the unassign; upstream's test sets it by hand), and X
    // removed from the pool.
    local.insert(x, a(RELEASED));
    seen.remove(&x);
    observed.insert(x, a(RELEASED));
    pool.remove(&x);
    // Before the agent removed the entry, X is reassigned to the node (another interface).
    pool.insert(x, a("eni-test"));
    // The agent keeps a `released` entry whose IP is in its pool (upstream's agent too), and the
    // IP stays unallocatable.
    assert_eq!(agent_answer(RELEASED, true, false), Answer::Keep);
    assert_eq!(answer_all(&observed, &pool, &used), observed);
    assert!(!allocatable(&pool, &used, &observed).any(|i| i == x));
    // 4 available, 2 used; the excess IP is now c, not X.
    assert_eq!((pool.len(), used.len()), (4, 2));
    assert_eq!(excess(&pool), vec![c]);

    // Upstream: eventually X is in neither local map nor in ReleaseIPs.
    let mut gone = false;
    for k in 5..15 {
        pass(k * S, &pool, &mut local, &mut seen, &observed);
        observed = local.clone(); // the operator's write; the agent keeps X's entry
        if !local.contains_key(&x) && !seen.contains_key(&x) && !observed.contains_key(&x) {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "X is still {:?} in the operator's state and release-ips after 10 passes",
        local.get(&x)
    );
}

/// The simulated runs' snapshots, for a failing test's message.
fn show(snaps: &[Snapshot]) -> String {
    snaps
        .iter()
        .map(|s| {
            format!(
                "{:>8.3} s {:<14} available {:>2} used {:>2} release-ips {:?}",
                s.t_us as f64 / 1e6,
                s.label,
                s.available(),
                s.used_count(),
                s.release_ips
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
