//! Upstream Cilium IPAM's unit tests for the excess-IP release handshake, mirrored against the
//! model's operator and agent decision code (`model::cilium::decide`, `model::cilium::agent`, and
//! the operator `model::cilium::operator` run in simulation through `cilium_support`).
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
//! | `upstream_cilium_calculate_excess_ips` | `TestCalculateExcessIPs` (all 10 vectors) | pass |
//! | `upstream_cilium_calculate_needed_ips` | `TestCalculateNeededIPs` (all 10 vectors) | pass |
//! | `upstream_cilium_mark_for_release_no_allocate` | `TestMarkForReleaseNoAllocate` (crd_test.go) | pass |
//! | `upstream_cilium_node_manager_release_address` | `TestNodeManagerReleaseAddress` (pkg/ipam), upstream's parameters and numbers | pass |
//! | `upstream_cilium_node_manager_abort_release` | `TestNodeManagerAbortRelease`, upstream's parameters and numbers | pass |
//! | `upstream_cilium_node_manager_release_address_decisions` | `TestNodeManagerReleaseAddress` (pkg/ipam)'s handshake on the decision functions, 2 s delay | pass |
//! | `upstream_cilium_node_manager_abort_release_decisions` | `TestNodeManagerAbortRelease`'s handshake on the decision functions, 2 s delay | pass |
//! | `upstream_cilium_eni_node_manager_release_address` | `TestNodeManagerReleaseAddress` (pkg/aws/eni), upstream's parameters and numbers | pass |
//! | `upstream_cilium_eni_prepare_ip_release_interface_choice` | none: the ENI `PrepareIPRelease` rule the ENI test runs through | pass |
//! | `upstream_cilium_node_manager_abort_release_ip_reassignment` | `TestNodeManagerAbortReleaseIPReassignment` (newer nodemanager), on the decision functions, fix on | pass |
//! | `upstream_cilium_node_manager_abort_release_ip_reassignment_without_fix` | the same steps, @ed90dd5's `abortNoLongerExcessIPs` (no fix): the entry sticks | pass |
//! | `upstream_cilium_node_manager_abort_release_ip_reassignment_simulated_without_fix` | the same steps on the simulated operator, switch `readd_released_ip` off: the entry sticks | pass |
//! | `upstream_cilium_node_manager_abort_release_ip_reassignment_simulated` | `TestNodeManagerAbortReleaseIPReassignment` on the simulated operator, switch `readd_released_ip` on | ignored (divergence 6: finding `cilium-readd-drops-fresh-release`) |
//!
//! An ignored test is runnable (`cargo test -p model --test upstream_cilium -- --ignored`): it
//! asserts upstream's expected values against the model and fails, listing every value where the
//! model differs. Its `#[ignore]` reason says why.
//!
//! How upstream's vocabulary maps onto the model's:
//! * `calculateExcessIPs(available, used, pre, min, maw)` is [`excess_ips`]`(available, used,
//!   &Limits { pre_allocate, min_allocate, max_above_watermark, .. })`, and
//!   `calculateNeededIPs(available, used, pre, min, max)` is [`needed_ips`] with `pre_allocate`,
//!   `min_allocate`, `max_allocate`: the model's functions are upstream's formulas, so the table
//!   tests assert upstream's vectors on them directly. The model takes the limits from the
//!   operator's configuration ([`OperatorConfig::limits`]), not from each CiliumNode's spec.
//! * The node manager tests' `mngr.Upsert(updateCiliumNode(cn, n))` is the driver writing
//!   `status.used` with `n` IPs "1.1.1.x" through the API server (`cilium_support::Driver::
//!   set_used`): as upstream's, those IPs are not in the operator's pool, and the model, like
//!   upstream (node.go:476), counts used as `len(status.used)`. `FakeAcknowledgeReleaseIps` is
//!   `Driver::ack`; `node.Stats().IPv4.AvailableIPs` is the size of `spec.pool` the operator
//!   published (from its cloud cache, as upstream's `syncToAPIServer`), `UsedIPs` the size of
//!   `status.used`.
//! * `node.instanceSync.Trigger()` / `mngr.Resync(..)` have no counterpart: the model's operator
//!   runs a resync of every node when its IPAM starts and then every 60 s
//!   (`ipam-node-interval-refresh`, node_manager.go:231-249), an instance sync and a resync after
//!   each mutation, and a maintainer pass on a CiliumNode update only when an allocation is
//!   needed (node.go:433-437), as upstream's operator does in production (spec
//!   cilium-upstream.md §3.3-3.4); the tests wait for those in simulated time. An agent's
//!   acknowledgement is therefore acted on at the next 60-s resync (upstream's test triggers a
//!   resync by hand instead).
//! * `operatorOption.Config.ExcessIPReleaseDelay = 2` (seconds): the model's delay is the constant
//!   [`RELEASE_DELAY`] (180 s, upstream's default); the simulated tests wait for it (and the
//!   pure-function tests pass 2 s to [`ReleaseState::handle_ip_release`]). With a 60-s resync an
//!   excess IP is timed on the first resync after it becomes excess and marked on the first
//!   resync at least 180 s later (spec §3.4).
//! * Upstream's mock (`nodeOperationsMock`) names its IPs "1", "2", ...; the simulated cloud names
//!   them 10.x.y.z. The pkg/ipam tests' mock allocator has one pool of 2048 IPs: here one
//!   interface of 64. The ENI test's m4.xlarge (4 interfaces of 15 IPs, one primary) is 4
//!   interfaces of 14 secondary IPs; the model's interfaces exist from the start (upstream creates
//!   and attaches them as needed), and an allocation takes the first interface with room.
//!
//! Divergences that remain (the model against upstream @ed90dd5 unless said):
//! 1. `pre-allocate`, `min-allocate`, `max-allocate`, `max-above-watermark` are per CiliumNode
//!    upstream (`spec.ipam.*`; pre-allocate 0 means the default 8, `getPreAllocate`); the model
//!    has one operator-wide [`Limits`].
//! 2. `excess-ip-release-delay` is configurable upstream (2 s in these tests); the model's is the
//!    constant 180 s.
//! 3. Allocation size: the model assigns `needed + max-above-watermark` on the first interface
//!    with room; upstream also adds a surge for pending pods (`MaxIPsToAllocate`,
//!    node.go:651-700) and creates interfaces. Upstream's tests have no pending pods.
//! 4. The agent has no allocation of a given IP (`TestMarkForReleaseNoAllocate`'s `Allocate(ip)`,
//!    which fails for an IP in `marked-for-release`, `ready-for-release` or `released`). Upstream's
//!    endpoint restore goes through it (`AllocateIPWithoutSyncUpstream`), so a restored endpoint
//!    whose IP is marked is not restored; the model's restore takes every pod's IP unchecked.
//! 5. An IP back in the pool while its entry is still `released` (issue #39981) is handled only
//!    with the switch `readd_released_ip` (the newer operator's fix); without it the model behaves
//!    as upstream @ed90dd5 (the entry sticks).
//! 6. With `readd_released_ip` the operator drops its own fresh `released` entry ~5 ms after the
//!    unassign: the resync's status write right after the release pass (cache from before the
//!    unassign, so the spec still lists X and is not rewritten) publishes `released`, and the
//!    follow-up resync runs the maintainer before its spec write, sees `released` with X in the
//!    observed `spec.pool`, and drops it. Then the next status write removes the entry while the
//!    spec still lists X, until the spec write that follows: the window of spec
//!    cilium-upstream.md §3.8 hazard 1 (an agent could hand out X, which the cloud no longer
//!    holds). Judged a finding of newer upstream, not a model error
//!    (`cilium-readd-drops-fresh-release`): upstream runs a node's pool maintainer and its
//!    `k8sSync` as separate triggers, so a maintainer pass can run between the status write that
//!    publishes `released` and the spec write that drops X, and the newer
//!    `abortNoLongerExcessIPs` checks the spec pool. Upstream's unit test removes X from the pool
//!    by hand before it re-adds it, so it never meets this.
//!    `upstream_cilium_node_manager_abort_release_ip_reassignment_simulated` shows it.
//!
//! Fixed since the previous model (each was a divergence these tests exposed): the read-after-
//! write fence (the instance sync after a mutating pass started at the same simulated instant,
//! so `resyncNeeded` was not cleared and a second allocation waited a minute; the model now
//! counts a sync starting at that instant as after it); the piecewise
//! excess with min-allocate; min- and max-allocate in the needed count; allocations with the
//! watermark; the release interface chosen as upstream's `PrepareIPRelease` from the observed
//! `status.eni.enis`; the used count as `len(status.used)`; first-seen times kept when a pass
//! has no maintenance action; `PopulateIPReleaseStatus` keeping an agent's answer; a maintainer
//! pass on an update only when `NeededIPs > 0`.

mod cilium_support;

use cilium_support::{run, short, Run, Script, Setup, Snapshot};
use model::cilium::agent::{allocatable, answer_all};
use model::cilium::decide::{excess_ips, needed_ips, prepare_ip_release, Limits, ReleaseState};
#[allow(unused_imports)]
use model::cilium::operator::OperatorConfig;
use model::cilium::{
    agent_answer, Answer, Switches, DO_NOT_RELEASE, MARKED, READY, RELEASED, RELEASE_DELAY,
};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};

const S: u64 = 1_000_000;

fn limits(pre: usize, min: usize, max: usize, maw: usize) -> Limits {
    Limits {
        pre_allocate: pre,
        min_allocate: min,
        max_allocate: max,
        max_above_watermark: maw,
    }
}

// ---------------------------------------------------------------- the formulas

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

/// `TestNodeManagerReleaseAddress` (pkg/ipam/node_manager_test.go:444-510), with upstream's
/// parameters: pre-allocate 4, min-allocate 15, max-above-watermark 4, announced with no IPs.
/// Upstream's numbers: 19 available (needed max(4, 15) = 15, plus the watermark 4); use 11: 19,
/// nothing allocated; use 19: 27 (needed 4 + watermark 4); use 10: 27, no release on the update
/// (upstream's `WaitUntil` of 2 s must time out: release happens only on a resync); then the
/// handshake, and 19 available: the min-allocate branch of `calculateExcessIPs` gives 27 - 15 -
/// 4 = 8 excess (upstream's comment "down to 18 (10 used + 4 prealloc + 4 max-above-watermark)"
/// is the formula without that branch; the assertion is 19).
#[test]
fn upstream_cilium_node_manager_release_address() {
    let l = limits(4, 15, 0, 4);
    let run = run(
        Setup {
            limits: l,
            switches: Switches::default(),
            enis: 1,
            eni_capacity: 64,
            seeded: vec![],
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
            ("released", 19, 10),
            ("end", 19, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
    assert_eq!(excess_ips(27, 10, &l), 8);
    // 19 at announce, 8 more in one allocation at "use 19".
    let assigns = run.assigns();
    assert_eq!(assigns.len(), 27, "{assigns:?}");
    let (announce, use_a, use_b) = (run.at("announce"), run.at("use a"), run.at("use b"));
    assert!(assigns[..19].iter().all(|a| a.0 < announce.t_us));
    assert!(assigns[19..]
        .iter()
        .all(|a| a.0 > use_a.t_us && a.0 < use_b.t_us));
    let released = check_handshake(&run, 8);
    assert!(released
        .iter()
        .all(|ip| !run.at("end").pool.contains_key(ip)));
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

/// `TestNodeManagerAbortRelease` (pkg/ipam/node_manager_test.go:514-585), with upstream's
/// parameters: pre-allocate 1, min-allocate 3, announced with no IPs: 3 available (min-allocate);
/// use 3: 4 (needed 1); use 2: one excess (the min-allocate branch: 4 - 3 = 1), marked after the
/// delay (`len(ReleaseIPs) == 1`); acknowledged, then use 3 (excess 4 - 3 - 1 = 0): the entry is
/// "removed, instead of being set to released" (`ReleaseIPs` empty); 4 available, 3 used.
#[test]
fn upstream_cilium_node_manager_abort_release() {
    let l = limits(1, 3, 0, 0);
    let run = run(
        Setup {
            limits: l,
            switches: Switches::default(),
            enis: 1,
            eni_capacity: 64,
            seeded: vec![],
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
    assert_eq!((excess_ips(4, 2, &l), excess_ips(4, 3, &l)), (1, 0));
    let marked = run.at("marked");
    assert_eq!(marked.release_ips.len(), 1, "{marked:#?}");
    let x = *marked.in_state(MARKED).first().unwrap();
    assert!(marked.pool.contains_key(&x));
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

/// `TestNodeManagerReleaseAddress` (pkg/aws/eni/node_manager_test.go:415-508), with upstream's
/// parameters: m4.xlarge (14 secondary IPs per interface), pre-allocate 2, min-allocate 10,
/// max-above-watermark 3, announced with one empty interface. Upstream's numbers: 13 (min 10 +
/// watermark 3, "13 < 14 (interface limit)"); use 11: 13; use 13: 18 (needed 2 + watermark 3:
/// the first interface filled to 14 with 1, then, needed 1 + watermark 3, 4 on a second one);
/// use 10: 18, no release on the update; handshake: 13 (the min-allocate branch: 18 - 10 - 3 = 5
/// excess; upstream's comment "10 used + 2 pre-allocate + 3 max-above-watermark => 15" is the
/// formula without it; the assertion is 13).
///
/// Upstream's test copies the operator's interfaces into the observed object
/// (`obj.Status.ENI.ENIs = eniNode.enis`) before the resync; the model's operator writes them to
/// `status.eni.enis` itself. The used IPs are not on any interface, so all 18 are free: eni-0 14,
/// eni-1 4; `PrepareIPRelease` takes eni-0 (min(14, 5) = 5 > min(4, 5) = 4), its first 5.
///
/// The model stops at 14 at "use 13" (and so releases 1, down to 13, from 14): after the pass that
/// fills eni-0 with 1 IP, its follow-up instance sync starts at the same simulated instant the
/// pass ended, so `sync_time > resyncNeeded` fails (upstream: `syncTime.After(n.resyncNeeded)`,
/// node.go:971-978, with the sync started strictly later), `resyncNeeded` stays, and the second
/// allocation (needed 1 + watermark 3 on eni-1) waits for the next 60-s resync instead of
/// happening at once (upstream's `WaitUntil` gives it 5 s).
#[test]
fn upstream_cilium_eni_node_manager_release_address() {
    let l = limits(2, 10, 0, 3);
    let run = run(
        Setup {
            limits: l,
            switches: Switches::default(),
            enis: 4,
            eni_capacity: 14,
            seeded: vec![],
            run_for_s: 700,
        },
        release_address_script(Some(11), 13, 10),
    );
    assert!(run.finished, "{}", show(&run.snapshots));
    let bad = step_mismatches(
        &run,
        &[
            ("announce", 13, 0),
            ("use a", 13, 11),
            ("use b", 18, 13),
            ("use c", 18, 10),
            ("released", 13, 10),
            ("end", 13, 10),
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}\n{}", show(&run.snapshots));
    assert_eq!(excess_ips(18, 10, &l), 5);
    let use_c = run.at("use c");
    assert_eq!((use_c.on("eni-0"), use_c.on("eni-1")), (14, 4));
    let released = check_handshake(&run, 5);
    // All from eni-0, as upstream's `PrepareIPRelease` chooses.
    assert!(released.iter().all(|ip| use_c.pool[ip] == "eni-0"));
    assert!(run.unassigns().iter().all(|u| u.1 == "eni-0"));
    let end = run.at("end");
    assert_eq!((end.on("eni-0"), end.on("eni-1")), (9, 4));
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
    let cases: [((usize, usize, usize, usize), Option<(usize, usize)>); 8] = [
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

/// One `maintainIPPool` pass (node.go:934-956 @ed90dd5, with the newer `abortNoLongerExcessIPs`
/// when `fix`) on the decision functions, for `TestNodeManagerAbortReleaseIPReassignment`:
/// `removeStaleReleaseIPs`; the action from the cloud's view (`cloud`: interface -> addresses,
/// which is also the observed `status.eni.enis`) and `used` (a count; the IPs are outside the
/// pool, as upstream's `updateCiliumNode`); no action: `abortNoLongerExcessIPs(nil)`; else
/// `handleIPRelease` then `abortNoLongerExcessIPs(excess)`. `observed` is `n.resource`'s
/// `release-ips` and `observed_pool` its `spec.ipam.pool`. Returns the IPs to release.
#[allow(clippy::too_many_arguments)]
fn reassignment_pass(
    st: &mut ReleaseState,
    cloud: &BTreeMap<Short, BTreeSet<Short>>,
    used: &BTreeMap<Short, Short>,
    l: &Limits,
    observed: &mut BTreeMap<Short, Short>,
    observed_pool: &BTreeMap<Short, Short>,
    now: u64,
    fix: bool,
) -> Vec<Short> {
    let delay = 2 * S; // upstream's testExcessIPReleaseDelay
    let available: usize = cloud.values().map(BTreeSet::len).sum();
    st.remove_stale_release_ips(observed);
    let excess = excess_ips(available, used.len(), l);
    let release = (excess > 0).then(|| prepare_ip_release(cloud, used, excess).unwrap_or_default());
    if release.is_none() && needed_ips(available, used.len(), l) == 0 {
        st.abort_no_longer_excess(&BTreeSet::new(), observed, observed_pool, fix);
        return Vec::new();
    }
    let list = release.as_ref().map(|r| r.1.clone());
    let step = st.handle_ip_release(list.as_deref(), observed, now, delay, false, false);
    let excess_set: BTreeSet<Short> = list.unwrap_or_default().into_iter().collect();
    st.abort_no_longer_excess(&excess_set, observed, observed_pool, fix);
    step.to_release.into_iter().map(|r| r.0).collect()
}

/// `TestNodeManagerAbortRelease`'s handshake (pkg/ipam/node_manager_test.go:514-585) on the
/// decision functions, pass by pass ([`reassignment_pass`], fix off) with upstream's 2 s delay:
/// 4 available, 2 used, pre-allocate 1, min-allocate 3: one excess IP; timed by the first pass,
/// marked after 3 s (`len(ReleaseIPs) == 1`); acknowledged; used 3 (excess 0, nothing needed: no
/// maintenance action, `abortNoLongerExcessIPs(nil)`); the entry is "removed, instead of being
/// set to released" (`len(ReleaseIPs) == 0`), and nothing was released.
#[test]
fn upstream_cilium_node_manager_abort_release_decisions() {
    let l = limits(1, 3, 0, 0);
    let cloud: BTreeMap<Short, BTreeSet<Short>> = [(
        short("eni-0"),
        (1..=4).map(|i| short(&format!("10.0.0.{i}"))).collect(),
    )]
    .into();
    let used_n = |n: usize| -> BTreeMap<Short, Short> {
        (1..=n)
            .map(|i| (short(&format!("1.1.1.{i}")), short("pod")))
            .collect()
    };
    let pool = BTreeMap::new();
    let mut st = ReleaseState::default();
    let mut observed = BTreeMap::new();
    let used = used_n(2);
    assert!(
        reassignment_pass(&mut st, &cloud, &used, &l, &mut observed, &pool, 0, false).is_empty()
    );
    reassignment_pass(
        &mut st,
        &cloud,
        &used,
        &l,
        &mut observed,
        &pool,
        3 * S,
        false,
    );
    observed = st.populate(&observed); // PopulateIPReleaseStatus
    assert_eq!(observed.len(), 1, "{observed:?}");
    let x = *observed.keys().next().unwrap();
    assert_eq!(observed[&x], MARKED);
    observed.insert(x, short(READY)); // FakeAcknowledgeReleaseIps
    let used = used_n(3); // "Use up one more IP to make excess = 0"
    assert_eq!((excess_ips(4, 3, &l), needed_ips(4, 3, &l)), (0, 0));
    let released = reassignment_pass(
        &mut st,
        &cloud,
        &used,
        &l,
        &mut observed,
        &pool,
        4 * S,
        false,
    );
    assert!(released.is_empty());
    observed = st.populate(&observed);
    assert!(observed.is_empty(), "{observed:?}");
    assert_eq!(st, ReleaseState::default());
}

/// `TestNodeManagerReleaseAddress`'s handshake (pkg/ipam/node_manager_test.go:444-510) on the
/// decision functions with upstream's 2 s delay: 27 available, 10 used, pre-allocate 4,
/// min-allocate 15, max-above-watermark 4: 8 excess; timed by the first pass, all 8 marked after
/// 3 s, acknowledged, then released (and `released` written); 19 left.
#[test]
fn upstream_cilium_node_manager_release_address_decisions() {
    let l = limits(4, 15, 0, 4);
    let mut cloud: BTreeMap<Short, BTreeSet<Short>> = [(
        short("eni-0"),
        (1..=27).map(|i| short(&format!("10.0.0.{i}"))).collect(),
    )]
    .into();
    let used: BTreeMap<Short, Short> = (1..=10)
        .map(|i| (short(&format!("1.1.1.{i}")), short("pod")))
        .collect();
    let pool = BTreeMap::new();
    let mut st = ReleaseState::default();
    let mut observed = BTreeMap::new();
    assert!(
        reassignment_pass(&mut st, &cloud, &used, &l, &mut observed, &pool, 0, false).is_empty()
    );
    assert_eq!(st.marked_at.len(), 8);
    reassignment_pass(
        &mut st,
        &cloud,
        &used,
        &l,
        &mut observed,
        &pool,
        3 * S,
        false,
    );
    observed = st.populate(&observed);
    assert_eq!(observed.len(), 8);
    assert!(observed.values().all(|s| s == MARKED));
    for s in observed.values_mut() {
        *s = short(READY);
    }
    let released = reassignment_pass(
        &mut st,
        &cloud,
        &used,
        &l,
        &mut observed,
        &pool,
        4 * S,
        false,
    );
    assert_eq!(released.len(), 8);
    assert_eq!(
        released.iter().collect::<BTreeSet<_>>(),
        observed.keys().collect::<BTreeSet<_>>()
    );
    st.released(&released);
    let eni0 = cloud.get_mut(&short("eni-0")).unwrap();
    for ip in &released {
        eni0.remove(ip);
    }
    observed = st.populate(&observed);
    assert!(observed.values().all(|s| s == RELEASED) && observed.len() == 8);
    let available: usize = cloud.values().map(BTreeSet::len).sum();
    assert_eq!((available, used.len()), (19, 10));
    assert_eq!(excess_ips(19, 10, &l), 0);
}

/// `TestNodeManagerAbortReleaseIPReassignment`'s steps on the decision functions, up to X
/// `released` and back in the observed pool. Returns (state, cloud, used, observed release-ips,
/// observed pool, X).
#[allow(clippy::type_complexity)]
fn reassignment_setup(
    fix: bool,
) -> (
    ReleaseState,
    BTreeMap<Short, BTreeSet<Short>>,
    BTreeMap<Short, Short>,
    BTreeMap<Short, Short>,
    BTreeMap<Short, Short>,
    Short,
) {
    let l = limits(1, 3, 0, 0);
    let a = |i: u8| Short::from_fmt(format_args!("10.0.0.{i}")).unwrap();
    // Announced: 3 (min-allocate); use 3: 4; use 2 ("Release one IP").
    let mut cloud: BTreeMap<Short, BTreeSet<Short>> =
        [(short("eni-0"), (1..=4).map(a).collect())].into();
    let used: BTreeMap<Short, Short> = (1..=2)
        .map(|i| (short(&format!("1.1.1.{i}")), short("pod")))
        .collect();
    assert_eq!(excess_ips(4, 2, &l), 1);
    let pool_of = |c: &BTreeMap<Short, BTreeSet<Short>>| -> BTreeMap<Short, Short> {
        c.iter()
            .flat_map(|(e, ips)| ips.iter().map(move |ip| (*ip, *e)))
            .collect()
    };
    let mut pool = pool_of(&cloud);
    let mut st = ReleaseState::default();
    let mut observed: BTreeMap<Short, Short> = BTreeMap::new();
    // instanceSync: the excess IP is timed.
    let r = reassignment_pass(&mut st, &cloud, &used, &l, &mut observed, &pool, 0, fix);
    assert!(r.is_empty() && st.marked_at.len() == 1 && st.status.is_empty());
    let x = *st.marked_at.keys().next().unwrap();
    // After the delay: marked (MaintainIPPool, then PopulateIPReleaseStatus into n.resource).
    reassignment_pass(&mut st, &cloud, &used, &l, &mut observed, &pool, 3 * S, fix);
    observed = st.populate(&observed);
    assert_eq!(observed.get(&x).map(Short::as_str), Some(MARKED));
    // FakeAcknowledgeReleaseIps.
    observed.insert(x, short(READY));
    // MaintainIPPool processes the acknowledgement: X is to be released.
    let r = reassignment_pass(&mut st, &cloud, &used, &l, &mut observed, &pool, 4 * S, fix);
    assert_eq!(r, [x]);
    assert_eq!(
        st.populate(&observed).get(&x).map(Short::as_str),
        Some(READY)
    );
    // "Now simulate the operator releasing the IP and marking it as released": X leaves the pool,
    // `released` in ReleaseIPs and in ipReleaseStatus (the model's release path: `released`).
    cloud.get_mut(&short("eni-0")).unwrap().remove(&x);
    pool.remove(&x);
    st.released(&[x]);
    observed.insert(x, short(RELEASED));
    // Before the agent removed the entry, X is back in the pool (interface "eni-test"), and the
    // test allocates one new IP in the mock (`node.ops.AllocateIPs(.., 1)`).
    pool.insert(x, short("eni-test"));
    let y = a(5);
    cloud.get_mut(&short("eni-0")).unwrap().insert(y);
    // The agent keeps a `released` entry whose IP is in its pool (upstream's agent too, crd.go:
    // 371-375), and the IP stays unallocatable.
    assert_eq!(agent_answer(RELEASED, true, false), Answer::Keep);
    assert_eq!(answer_all(&observed, &pool, &used), observed);
    assert!(!allocatable(&pool, &used, &observed).any(|i| i == x));
    (st, cloud, used, observed, pool, x)
}

/// `TestNodeManagerAbortReleaseIPReassignment` (newer `operator/pkg/ipam/nodemanager/
/// node_manager_test.go` @4813068c; issue #39981), on the decision functions with upstream's 2 s
/// delay: pre-allocate 1, min-allocate 3; 4 available, 2 used, one excess IP X; X timed, marked
/// after the delay (asserted in `ReleaseIPs`), acknowledged (`ready-for-release` asserted), then
/// set `released` by hand and removed from the pool; then X is re-added to the pool
/// (`Spec.IPAM.Pool[X]`, "eni-test") before the agent removed the entry, and one new IP is
/// allocated. Expected: eventually X is in none of `ipReleaseStatus`, `ipsMarkedForRelease` and
/// `Status.IPAM.ReleaseIPs`; 4 available, 2 used. With the fix
/// ([`ReleaseState::abort_no_longer_excess`]`(.., fix_39981 = true)`, the operator's switch
/// `readd_released_ip`): the first pass drops it.
///
/// The simulated cloud never hands out an address twice, so this runs pass by pass
/// ([`reassignment_pass`]); the new excess IP is then the newly allocated one, not X (upstream's
/// mock picks it too; an X that is excess again keeps its entry upstream, the newer code's
/// `excessMap` check coming first).
#[test]
fn upstream_cilium_node_manager_abort_release_ip_reassignment() {
    let l = limits(1, 3, 0, 0);
    let (mut st, cloud, used, mut observed, pool, x) = reassignment_setup(true);
    // 4 available, 2 used.
    let available: usize = cloud.values().map(BTreeSet::len).sum();
    assert_eq!((available, used.len()), (4, 2));
    let mut gone = false;
    for k in 5..15 {
        reassignment_pass(
            &mut st,
            &cloud,
            &used,
            &l,
            &mut observed,
            &pool,
            k * S,
            true,
        );
        observed = st.populate(&observed); // PopulateIPReleaseStatus(node.resource)
        if !st.status.contains_key(&x)
            && !st.marked_at.contains_key(&x)
            && !observed.contains_key(&x)
        {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "X is still {:?} in the operator's state / {:?} in release-ips after 10 passes",
        st.status.get(&x),
        observed.get(&x)
    );
    // The agent would now hand X out.
    assert!(allocatable(&pool, &used, &observed).any(|i| i == x));
}

/// The same steps with @ed90dd5's `abortNoLongerExcessIPs` (node.go:735-755, no fix; the model's
/// default, switch `readd_released_ip` off): a `released` entry is never aborted, the agent keeps
/// it while X is in its pool, so X stays `released` in the operator's state and in `release-ips`,
/// and unallocatable, for ever (issue #39981's "No more IPs available").
#[test]
fn upstream_cilium_node_manager_abort_release_ip_reassignment_without_fix() {
    let l = limits(1, 3, 0, 0);
    let (mut st, cloud, used, mut observed, pool, x) = reassignment_setup(false);
    for k in 5..15 {
        reassignment_pass(
            &mut st,
            &cloud,
            &used,
            &l,
            &mut observed,
            &pool,
            k * S,
            false,
        );
        observed = st.populate(&observed);
        // The agent's answer keeps the entry (X is in its pool).
        observed = answer_all(&observed, &pool, &used);
        assert_eq!(
            st.status.get(&x).map(Short::as_str),
            Some(RELEASED),
            "pass {k}"
        );
        assert_eq!(
            observed.get(&x).map(Short::as_str),
            Some(RELEASED),
            "pass {k}"
        );
    }
    assert!(!allocatable(&pool, &used, &observed).any(|i| i == x));
}

/// `TestNodeManagerAbortReleaseIPReassignment`'s steps on the simulated operator: the abort
/// release flow up to X `released` (X unassigned, gone from the pool), then the driver re-adds X
/// to `spec.pool` (interface "eni-test") through the API server before any agent removed the
/// entry, and allocates one new IP in the cloud directly (upstream's `node.ops.AllocateIPs`).
/// Upstream's expectation with the fix (switch `readd_released_ip`): X leaves `release-ips`;
/// 4 available, 2 used. Without it (@ed90dd5): X stays `released`.
fn reassignment_script() -> Script {
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
            d.ack().await;
            d.wait_until(180.0, |s| {
                !s.release_ips.is_empty()
                    && s.release_ips
                        .iter()
                        .all(|(ip, st)| st == RELEASED && !s.pool.contains_key(ip))
            })
            .await;
            let released = d.snapshot("released");
            if let Some(x) = released.in_state(RELEASED).first() {
                d.add_to_pool(*x, short("eni-test")).await;
                d.cloud_assign("eni-0", 1);
                d.snapshot("re-added");
                let x = *x;
                d.wait_until(130.0, |s| !s.release_ips.contains_key(&x))
                    .await;
            }
            d.snapshot("after");
            d.sleep_s(60.0).await;
            d.snapshot("end");
        })
    })
}

fn reassignment_run(fix: bool) -> Run {
    run(
        Setup {
            limits: limits(1, 3, 0, 0),
            switches: Switches {
                readd_released_ip: fix,
                ..Switches::default()
            },
            enis: 1,
            eni_capacity: 64,
            seeded: vec![],
            run_for_s: 800,
        },
        reassignment_script(),
    )
}

/// Upstream's expectations for [`reassignment_script`] against a run, as text where they fail.
fn reassignment_mismatches(fix: bool) -> Vec<String> {
    let mut bad = Vec::new();
    let run = reassignment_run(fix);
    if !run.finished {
        bad.push(format!(
            "the script did not finish\n{}",
            show(&run.snapshots)
        ));
        return bad;
    }
    bad.extend(step_mismatches(
        &run,
        &[("announce", 3, 0), ("use 3", 4, 3), ("use 2", 4, 2)],
    ));
    let released = run.at("released");
    let Some(x) = released.in_state(RELEASED).first().copied() else {
        bad.push(format!(
            "no `released` entry whose IP left the pool (aborts {:?})\n{}",
            run.aborts(),
            show(&run.snapshots)
        ));
        return bad;
    };
    if released.release_ips.len() != 1 {
        bad.push(format!("released: {:?}", released.release_ips));
    }
    let end = run.at("end");
    let state = end.release_ips.get(&x).map(Short::as_str);
    if fix {
        if state.is_some() {
            bad.push(format!(
                "X is still {state:?} at the end\n{}",
                show(&run.snapshots)
            ));
        }
        if (end.available(), end.used_count()) != (4, 2) {
            bad.push(format!(
                "end: upstream 4 available / 2 used, model {} / {}",
                end.available(),
                end.used_count()
            ));
        }
    } else if state != Some(RELEASED) {
        bad.push(format!(
            "X is {state:?} at the end, not released\n{}",
            show(&run.snapshots)
        ));
    }
    bad
}

/// [`reassignment_script`] on the simulated operator without the fix (@ed90dd5, switch
/// `readd_released_ip` off): X is released (one `released` entry, X gone from the pool), and after
/// X is back in the pool the entry stays `released` (no agent removes it here; a real agent keeps
/// it while X is in its pool).
#[test]
fn upstream_cilium_node_manager_abort_release_ip_reassignment_simulated_without_fix() {
    let bad = reassignment_mismatches(false);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// [`reassignment_script`] on the simulated operator with the fix (switch `readd_released_ip`).
/// Upstream's expectation: X is released and written `released`; once X is back in the pool its
/// entry goes; 4 available, 2 used.
///
/// The model never gets there: ~5 ms after its own unassign of X it drops X's fresh `released`
/// state (a `CiliumAbort` of X), so no `released` entry for an IP that left the pool is ever
/// written. Its resync writes status (`released`) right after the release pass with the cache
/// from before the unassign, so the spec (pool still with X) is not rewritten; the follow-up
/// resync after the instance sync runs the maintainer first, which sees `released` with X still
/// in the observed `spec.pool`, and the fix drops it; only then is the spec without X written.
/// Upstream's follow-up `k8sSync` writes status and spec together from the refreshed cache, and
/// no maintainer pass runs between the two informer events.
#[test]
#[ignore = "newer upstream's #39981 clean-up drops the operator's own fresh `released` entry while the observed spec.pool still lists the IP: finding cilium-readd-drops-fresh-release, not the unit test's expectation"]
fn upstream_cilium_node_manager_abort_release_ip_reassignment_simulated() {
    let bad = reassignment_mismatches(true);
    assert!(bad.is_empty(), "{bad:#?}");
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
