//! The node manager tests' handshakes on the decision functions, pass by pass
//! ([`reassignment_pass`]) with upstream's 2 s delay.

use super::{limits, S};
use crate::cilium_support::short;
use model::cilium::agent::{allocatable, answer_all};
use model::cilium::decide::{excess_ips, needed_ips, prepare_ip_release, Limits, ReleaseState};
use model::cilium::{agent_answer, Answer, MARKED, READY, RELEASED};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};

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
/// node_manager_test.go` @4813068c; cilium/cilium#39981), on the decision functions with upstream's 2 s
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
/// and unallocatable, for ever (cilium/cilium#39981's "No more IPs available").
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
