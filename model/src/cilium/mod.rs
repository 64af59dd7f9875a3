//! Cilium ENI IPAM: the operator/agent handshake before an excess IP is released (docs/upstream/
//! cilium.md; the handshake of cilium/cilium PR 17939).
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
//! @35b06d5a, `recalculate`; docs/upstream/cilium.md §0).
//!
//! Bug switch `cilium-no-handshake`: the operator releases excess IPs directly once they have been
//! excess for the delay, with no states (the behaviour the handshake replaced).

pub mod event;
pub use event::CiliumEvent;
pub mod agent;
pub mod decide;
pub mod kubelet;
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
/// `pre-allocate` default (`defaults.IPAMPreAllocation`).
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
    /// Fix `cilium-hold-unknown-release`: after an unassign whose outcome is unknown (no answer,
    /// or, after the SDK retried an attempt that got none, the IPs already off the interface),
    /// the IP's handshake state is held (no release, abort or deletion) until a describe that
    /// started after the unassign shows whether the cloud still holds it; gone, it is `released`.
    pub hold_unknown_release: bool,
    /// Fix `cilium-adopt-release-ips`: a new leader (or restarted operator) takes each node's
    /// `release-ips` as it first sees it as its own handshake state, instead of rebuilding it from
    /// nothing and wiping every entry, agent answers and `released` included, on its first write
    /// (`PopulateIPReleaseStatus`, node.go:1013-1031 @ed90dd5).
    pub adopt_release_ips: bool,
    /// Fix `cilium-exit-on-lost-lead` (newer upstream, PR #42920): an operator that loses the
    /// lease exits at once instead of shutting down gracefully.
    pub exit_on_lost_lead: bool,
    /// Fix `cilium-readd-released-ip` (newer upstream, cilium/cilium#39981): a `released` entry whose IP
    /// is back in the node's pool is dropped.
    pub readd_released_ip: bool,
    /// Fix `cilium-restore-before-ack`: after a restart the agent answers the handshake only
    /// once endpoint restore has finished, and restore takes an IP only marked for release (its
    /// pod still uses it; the answer becomes do-not-release).
    pub restore_before_ack: bool,
    /// Fix `cilium-keep-released`: the operator never drops its own `released` state when the IP
    /// leaves its release list (upstream's `deleteLocalReleaseStatus` does, node.go
    /// `handleIPRelease`); only the agent's removal of the entry ends it.
    pub keep_released: bool,
    /// Fix `cilium-readd-after-resync`: the cilium/cilium#39981 clean-up, but a `released` entry is
    /// dropped only when the cloud itself lists the IP on the node again, in a describe that
    /// started after the release by more than an assumed bound on EC2's describe lag
    /// (`operator::ipam` pass's `READD_DESCRIBE_MARGIN_US`; upstream's newer code checks the
    /// CiliumNode's spec pool, which still lists every released IP until the next spec write).
    pub readd_after_resync: bool,
    /// Fix `cilium-readd-excess-ip`: the cilium/cilium#39981 clean-up looks at a `released` entry
    /// whether or not its IP is on this pass's release list. Newer upstream skips every IP on
    /// the list first (`if excessMap[ip] { continue }` before the #39981 branch in
    /// `abortNoLongerExcessIPs`, operator/pkg/ipam/nodemanager/node.go at 09b89c6c), so an IP
    /// the cloud gave back that is excess again keeps its `released` entry: the agent never
    /// answers for it and the operator never marks it again, for as long as it stays excess.
    pub readd_excess_ip: bool,
    /// Fix `cilium-fence-cloud`: every cloud call carries the Lease transition count of the term
    /// the operator holds (the count it won with, or took the Lease back with in a renewal), and
    /// the cloud refuses one older than it has seen (`sim::cloud::Fence`;
    /// real cloud APIs offer nothing like it, client-go's documentation says no fencing is given,
    /// `leaderelection.go` @cg l. 17-20).
    pub fence_cloud: bool,
    /// Mutant `cilium-mutant-release-unacked` (test-only): an IP the operator marks is put on
    /// the release list of the same pass, without waiting for the agent's answer.
    pub mutant_release_unacked: bool,
    /// Mutant `cilium-mutant-no-delay` (test-only): the operator's `excess-ip-release-delay` is
    /// zero, so it marks and releases IPs as soon as they are excess.
    pub mutant_no_delay: bool,
    /// Mutant `cilium-mutant-unassign-by-count` (test-only): the operator's unassign call names
    /// the interface's lowest addresses, as many as were acknowledged, instead of the
    /// acknowledged IPs (as if release went by count, like assignment).
    pub mutant_unassign_by_count: bool,
    /// Mutant `cilium-mutant-ack-allocated` (test-only): the agent answers `ready-for-release`
    /// for a marked IP in its pool whether or not it has allocated it.
    pub mutant_ack_allocated: bool,
    /// Mutant `cilium-mutant-allocate-held` (test-only): the agent hands out IPs whatever their
    /// `release-ips` state (marked, acknowledged or released).
    pub mutant_allocate_held: bool,
    /// Mutant `cilium-mutant-mark-used` (test-only): the operator picks release candidates without
    /// excluding the IPs its observed status lists as used.
    pub mutant_mark_used: bool,
    /// Mutant `cilium-mutant-keep-released-entry` (test-only): the agent never deletes a
    /// `released` entry, even once its IP has left the pool.
    pub mutant_keep_released_entry: bool,
    /// Mutant `cilium-mutant-keep-aborted` (test-only): the agent keeps the entries of its
    /// `release-ips` view that the operator dropped (aborted releases, refused ones) and writes
    /// them back.
    pub mutant_keep_aborted: bool,
    /// Mutant `cilium-mutant-never-mark` (test-only): the operator never marks an IP, so the
    /// handshake never starts and no excess IP is released.
    pub mutant_never_mark: bool,
    /// Mutant `cilium-mutant-no-allocation` (test-only): the operator never assigns IPs to a node
    /// that needs them.
    pub mutant_no_allocation: bool,
    /// Mutant `cilium-mutant-keep-readded-released` (test-only): a `released` entry whose IP came
    /// back to the node is never dropped, whatever cilium/cilium#39981 fix is on.
    pub mutant_keep_readded_released: bool,
    /// Mutant `cilium-mutant-never-abort` (test-only): the operator never aborts a handshake
    /// whose IP left its release list: a `marked-for-release` or `ready-for-release` state stays
    /// (neither `handleIPRelease`'s drop of a timed IP nor `abortNoLongerExcessIPs` removes it).
    /// What docs/mutation.md took its surviving `decide.rs` `handle_ip_release` mutant to do.
    pub mutant_never_abort: bool,
    /// Mutant `cilium-mutant-ipam-stalls` (test-only): a new leader's IPAM never starts (its
    /// blocking cloud resync never returns) while the elector keeps renewing the Lease.
    pub mutant_ipam_stalls: bool,
    /// Mutant `cilium-mutant-mark-beyond-excess` (test-only): the operator picks its release
    /// list for one IP more than its excess count (`PrepareIPRelease` is given `excess + 1`).
    pub mutant_mark_beyond_excess: bool,
    /// Mutant `cilium-mutant-delay-from-start` (test-only): the operator times an IP from its
    /// IPAM's start instead of from the pass that first saw it excess, so an IP that becomes
    /// excess after the first delay is marked at once.
    pub mutant_delay_from_start: bool,
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
    /// `status.eni.enis`: interface -> its addresses, as the operator last wrote them from its
    /// cloud cache (`PopulateStatusFields`, pkg/aws/eni/node.go:103-114 @ed90dd5).
    #[serde(default)]
    pub enis: BTreeMap<Short, BTreeSet<Short>>,
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

/// What the agent does with one `release-ips` entry (docs/upstream/cilium.md, section 4, "The
/// agent side").
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
            enis: BTreeMap::new(),
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
