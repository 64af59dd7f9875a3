//! Cilium ENI IPAM: the operator/agent handshake before an excess IP is released (shared/spec/
//! cilium.md, seed document 003).
//!
//! * [`operator`]: decides per node how many IPs are needed or in excess, assigns and unassigns them
//!   in the cloud, and drives the release handshake through `status.ipam.release-ips` (in memory:
//!   when each IP was first seen excess and its handshake state; lost on restart);
//! * [`agent`]: allocates IPs to pods from its node's pool, answers the operator's marks, and writes
//!   the CiliumNode status at most once per 15 s; a `kubelet` on each node creates and deletes pods.
//!
//! The CiliumNode object (kind `CiliumNode`, one per node) holds `spec.pool` (IP -> interface),
//! `status.used` (IP -> pod) and `status.release_ips` (IP -> handshake state).
//!
//! The version modelled: the `release-ips` handshake is the protocol of ENI (and AlibabaCloud)
//! agents up to cilium 1.19, which use the CRD allocator. cilium 1.20 moved ENI agents to the
//! multi-pool allocator (PR #45154), which releases whole CIDRs without this handshake; newer
//! operators still serve the handshake for 1.19 agents (`operator/pkg/ipam/nodemanager/node.go`
//! @35b06d5a, `recalculate`; shared/spec/cilium-upstream.md §0).
//!
//! Bug switch `cilium-no-handshake`: the operator releases excess IPs directly once they have been
//! excess for the delay, with no states (the behaviour the handshake replaced).

pub mod agent;
pub mod operator;

use serde::{Deserialize, Serialize};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// `excess-ip-release-delay`.
pub const RELEASE_DELAY: Duration = Duration::from_secs(180);
/// `ipam-cilium-node-update-rate`: the agent's status writes are at least this far apart.
pub const AGENT_UPDATE_RATE: Duration = Duration::from_secs(15);
/// The operator's resync of every node.
pub const OPERATOR_RESYNC: Duration = Duration::from_secs(60);
/// `pre-allocate` default.
pub const PRE_ALLOCATE: usize = 8;
/// `max-above-watermark` default.
pub const MAX_ABOVE_WATERMARK: usize = 0;
/// An informer whose watch stream is silent this long pings its connection (client-go's HTTP/2
/// `ReadIdleTimeout`); only a ping without an ack makes it watch again (see `sim::kube`).
pub const INFORMER_IDLE: Duration = Duration::from_secs(30);
/// Status and spec write attempts.
pub const WRITE_ATTEMPTS: u32 = 2;

/// `marked-for-release`: the operator's candidate.
pub const MARKED: &str = "marked-for-release";
/// `ready-for-release`: the agent's yes.
pub const READY: &str = "ready-for-release";
/// `do-not-release`: the agent's no.
pub const DO_NOT_RELEASE: &str = "do-not-release";
/// `released`: the operator unassigned it.
pub const RELEASED: &str = "released";

/// The CiliumNode kind.
pub const KIND: &str = "CiliumNode";

/// Bug and fix switches of the Cilium model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// Bug `cilium-no-handshake`.
    pub no_handshake: bool,
    /// Fix `cilium-merge-release-ips`: the operator's status write changes only the entries it
    /// changed itself, instead of replacing the whole map with its (possibly stale or empty) state.
    pub merge_release_ips: bool,
    /// Fix `cilium-hold-unknown-release`: after an unassign whose outcome is unknown (no answer),
    /// never abort that IP's handshake until the instance resync shows whether the cloud still
    /// holds it.
    pub hold_unknown_release: bool,
}

/// `spec` of a CiliumNode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// IP -> interface.
    #[serde(default)]
    pub pool: BTreeMap<Short, Short>,
}

/// `status` of a CiliumNode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// IP -> pod using it.
    #[serde(default)]
    pub used: BTreeMap<Short, Short>,
    /// IP -> handshake state.
    #[serde(default)]
    pub release_ips: BTreeMap<Short, Short>,
}

/// A CiliumNode's spec: the typed value its writer stored (the operator and agent write typed
/// parts, see `sim::kube::Body`), else parsed from its JSON (empty when missing or malformed).
pub fn spec_of(obj: &sim::kube::Object) -> Rc<Spec> {
    obj.spec
        .typed::<Spec>()
        .unwrap_or_else(|| Rc::new(Spec::deserialize(obj.spec.json()).unwrap_or_default()))
}

/// A CiliumNode's status, as [`spec_of`].
pub fn status_of(obj: &sim::kube::Object) -> Rc<Status> {
    obj.status
        .typed::<Status>()
        .unwrap_or_else(|| Rc::new(Status::deserialize(obj.status.json()).unwrap_or_default()))
}

/// The pool's (IP, interface) entries whose IP is not in `used`, in IP order. One walk over the
/// two sorted maps: a lookup per pool IP was most of a maintenance pass's comparisons.
pub fn unused<'a, V>(
    pool: &'a BTreeMap<Short, Short>,
    used: &'a BTreeMap<Short, V>,
) -> impl Iterator<Item = (Short, Short)> + 'a {
    let mut used = used.keys().peekable();
    pool.iter()
        .filter(move |(ip, _)| loop {
            // One comparison per step of the walk (not an order test, then an equality test).
            match used.peek().map(|u| u.cmp(ip)) {
                Some(std::cmp::Ordering::Less) => {
                    used.next();
                }
                Some(std::cmp::Ordering::Equal) => return false,
                _ => return true,
            }
        })
        .map(|(ip, eni)| (*ip, *eni))
}

/// The operator's allocation decision for one node: how many IPs to assign so that
/// `pre_allocate` of the pool are free (`free`: the pool's IPs not in use; none when at least
/// `pre_allocate` are free). Upstream's `calculateNeededIPs` (cilium/cilium pkg/ipam/node.go at
/// ed90dd5, see shared/spec/cilium-upstream.md) also applies min-allocate and max-allocate, which
/// the model lacks (`model/tests/upstream_cilium.rs` lists the vectors that differ).
pub fn needed_ips(free: usize, pre_allocate: usize) -> usize {
    pre_allocate.saturating_sub(free)
}

/// The operator's excess decision for one node: which IPs to release, chosen from the interface
/// with the most free IPs, never one in use. `free` is the pool's entries not in use, in IP order
/// ([`unused`]). Excess = available - used - pre_allocate - max_above_watermark, that is, free -
/// pre_allocate - max_above_watermark (none while within pre_allocate + max_above_watermark of
/// used).
pub fn excess_ips(
    free: &[(Short, Short)],
    pre_allocate: usize,
    max_above_watermark: usize,
) -> Vec<Short> {
    let excess = free
        .len()
        .saturating_sub(pre_allocate + max_above_watermark);
    if excess == 0 {
        return Vec::new();
    }
    let mut by_eni: BTreeMap<Short, Vec<Short>> = BTreeMap::new();
    for (ip, eni) in free {
        by_eni.entry(*eni).or_default().push(*ip);
    }
    // The interface with the most free IPs (ties: the first by name), so that it may be emptied.
    let Some((_, ips)) = by_eni
        .iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
    else {
        return Vec::new();
    };
    ips.iter().take(excess).copied().collect()
}

/// What the agent does with one `release-ips` entry (spec/cilium.md, "Agent").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Leave the entry as it is.
    Keep,
    /// Remove the entry.
    Remove,
    /// Set the entry to this state.
    Set(&'static str),
}

/// The agent's answer table for an entry in `state`, given whether the IP is in the pool and
/// whether it is allocated to a pod.
pub fn agent_answer(state: &str, in_pool: bool, allocated: bool) -> Answer {
    match (state, in_pool) {
        (READY | DO_NOT_RELEASE, _) => Answer::Keep,
        (RELEASED, false) => Answer::Remove,
        (MARKED, false) => Answer::Set(DO_NOT_RELEASE),
        (MARKED, true) if allocated => Answer::Set(DO_NOT_RELEASE),
        (MARKED, true) => Answer::Set(READY),
        _ => Answer::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(spec: &[(&str, &str)]) -> BTreeMap<Short, Short> {
        spec.iter()
            .map(|(ip, eni)| (Short::lit(ip), Short::lit(eni)))
            .collect()
    }

    #[test]
    fn a_typed_part_reads_as_the_json_it_stands_for() {
        use sim::kube::{Body, Object};
        let st = Status {
            used: pool(&[("10.0.0.2", "pod-a"), ("10.0.0.3", "pod-b")]),
            release_ips: pool(&[("10.0.0.9", "ready-for-release")]),
        };
        let sp = Spec {
            pool: pool(&[("10.0.0.2", "eni-0"), ("10.0.0.9", "eni-1")]),
        };
        let object = |spec: Body, status: Body| Object {
            kind: KIND.into(),
            name: "n1".into(),
            rv: 1,
            spec: Rc::new(spec),
            status: Rc::new(status),
        };
        let typed = object(Body::of(Rc::new(sp.clone())), Body::of(Rc::new(st.clone())));
        let json = object(
            serde_json::to_value(&sp).unwrap().into(),
            serde_json::to_value(&st).unwrap().into(),
        );
        // The typed parts are taken as they are, the JSON ones parsed: the same values.
        assert!(
            typed.status.typed::<Status>().is_some() && json.status.typed::<Status>().is_none()
        );
        assert_eq!(*spec_of(&typed), sp);
        assert_eq!(*status_of(&typed), st);
        assert_eq!(*spec_of(&json), sp);
        assert_eq!(*status_of(&json), st);
        // Read as JSON, a typed part is its writer's JSON; the objects compare equal.
        assert_eq!(*typed.status.json(), *json.status.json());
        assert_eq!(typed, json);
        // A part of another type is not taken for a status; a missing part reads as empty.
        assert!(typed.spec.typed::<Status>().is_none());
        let empty = object(serde_json::json!({}).into(), serde_json::Value::Null.into());
        assert_eq!(*status_of(&empty), Status::default());
        assert_eq!(*spec_of(&empty), Spec::default());
    }

    #[test]
    fn excess_is_available_minus_used_minus_pre_allocate() {
        let p: BTreeMap<Short, Short> = (0..12)
            .map(|i| {
                (
                    Short::new(&format!("10.0.0.{i:02}")).unwrap(),
                    Short::lit(if i < 4 { "eni-0" } else { "eni-1" }),
                )
            })
            .collect();
        let used: BTreeMap<Short, ()> =
            [(Short::lit("10.0.0.00"), ()), (Short::lit("10.0.0.05"), ())].into();
        let free: Vec<_> = unused(&p, &used).collect();
        // 12 available - 2 used - 8 pre-allocate = 2 excess, from eni-1 (7 free vs 3).
        assert_eq!(excess_ips(&free, 8, 0), vec!["10.0.0.04", "10.0.0.06"]);
        // Within the watermark: nothing.
        assert!(excess_ips(&free, 8, 2).is_empty());
        assert!(excess_ips(&free, 10, 0).is_empty());
        // Used IPs are never chosen, whatever the interface.
        let all_used: BTreeMap<Short, ()> = p.keys().map(|ip| (*ip, ())).collect();
        assert_eq!(unused(&p, &all_used).count(), 0);
        assert!(excess_ips(&[], 0, 0).is_empty());
    }

    proptest::proptest! {
        /// The walk finds exactly the pool entries a lookup per IP finds unused.
        #[test]
        fn unused_is_the_pool_minus_used(
            pool in proptest::collection::btree_map(0u8..60, 0u8..3, 0..30),
            used in proptest::collection::btree_set(0u8..60, 0..30),
        ) {
            let ip = |i: u8| Short::from_fmt(format_args!("10.0.{}.{}", i / 10, i % 10)).unwrap();
            let eni = |e: u8| Short::from_fmt(format_args!("eni-{e}")).unwrap();
            let pool: BTreeMap<Short, Short> = pool.into_iter().map(|(i, e)| (ip(i), eni(e))).collect();
            let used: BTreeMap<Short, ()> = used.into_iter().map(|i| (ip(i), ())).collect();
            let by_lookup: Vec<(Short, Short)> = pool
                .iter()
                .filter(|(ip, _)| !used.contains_key(*ip))
                .map(|(a, b)| (*a, *b))
                .collect();
            proptest::prop_assert_eq!(unused(&pool, &used).collect::<Vec<_>>(), by_lookup);
        }
    }

    #[test]
    fn excess_prefers_the_interface_with_most_free() {
        let p = pool(&[("a", "eni-0"), ("b", "eni-0"), ("c", "eni-1")]);
        let free: Vec<_> = p.iter().map(|(a, b)| (*a, *b)).collect();
        assert_eq!(excess_ips(&free, 1, 0), vec!["a", "b"]);
    }

    #[test]
    fn the_agent_answer_table() {
        assert_eq!(agent_answer(READY, true, true), Answer::Keep);
        assert_eq!(agent_answer(DO_NOT_RELEASE, false, false), Answer::Keep);
        assert_eq!(agent_answer(RELEASED, false, false), Answer::Remove);
        assert_eq!(agent_answer(RELEASED, true, false), Answer::Keep);
        assert_eq!(
            agent_answer(MARKED, false, false),
            Answer::Set(DO_NOT_RELEASE)
        );
        assert_eq!(
            agent_answer(MARKED, true, true),
            Answer::Set(DO_NOT_RELEASE)
        );
        assert_eq!(agent_answer(MARKED, true, false), Answer::Set(READY));
    }
}
