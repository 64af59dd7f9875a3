//! Cilium's `--bug`, `--fix` and mutant switches (a mutant is passed with `--bug`; each names the
//! invariant it trips and the scenario that catches it: `scenarios/tests/mutants.rs`).

use super::Cilium;
use crate::scenario::Switch;

/// Every Cilium switch.
pub static SWITCHES: &[Switch] = &[
    Switch::bug::<Cilium>(
        "cilium-no-handshake",
        "cilium-swarm",
        "the operator releases excess IPs directly after the delay, judging use from a status that lags the agent by up to 15 s",
    ),
    Switch::fix::<Cilium>(
        "cilium-adopt-release-ips",
        "cilium-silent-task-death",
        "a new leader takes the release-ips it finds as its own handshake state instead of rebuilding the map from nothing, which wipes released entries (and agent answers) while the spec still lists the IPs",
    ),
    Switch::fix::<Cilium>(
        "cilium-restore-before-ack",
        "cilium-silent-task-death",
        "after a restart the agent answers the release handshake only once endpoint restore has finished, and restore keeps an IP that is only marked for release (its pod still uses it)",
    ),
    Switch::fix::<Cilium>(
        "cilium-keep-released",
        "cilium-split-brain",
        "the operator keeps its released state for an IP until the agent removes the entry, instead of dropping it when a stale interface list puts the IP back on (and then off) its release list; release-ips then never loses the entry before the spec loses the IP",
    ),
    Switch::fix::<Cilium>(
        "cilium-hold-unknown-release",
        "cilium-swarm",
        "after an unassign with no answer, hold the IP's handshake state until a cloud describe that started later shows whether the cloud still holds the IP (gone: released), instead of dropping it once the IP leaves the release list",
    ),
    Switch::fix::<Cilium>(
        "cilium-fence-cloud",
        "cilium-split-brain",
        "every cloud call of the operator carries the Lease transition count of the term it holds (won, or taken back in a renewal), and the cloud refuses a count older than one it has seen (real cloud APIs have no such fence)",
    ),
    Switch::fix::<Cilium>(
        "cilium-exit-on-lost-lead",
        "cilium-split-brain",
        "newer upstream (PR 42920): an operator that loses the lease exits at once instead of a graceful shutdown whose stop hooks keep its IPAM running",
    ),
    Switch::fix::<Cilium>(
        "cilium-readd-released-ip",
        "cilium-clock-skew",
        "newer upstream (cilium/cilium#39981): a released entry whose IP is in the CiliumNode's spec pool is dropped, so an IP the cloud gave back to the same node becomes usable again",
    ),
    Switch::fix::<Cilium>(
        "cilium-readd-after-resync",
        "cilium-clock-skew",
        "upstream issue #39981's clean-up done safely: drop a released entry only when a cloud describe that started after the release lists the IP on the node again, not when the CiliumNode's spec pool (not yet rewritten) still lists it",
    ),
    Switch::fix::<Cilium>(
        "cilium-readd-excess-ip",
        "cilium-swarm",
        "upstream issue #39981's clean-up also for an IP that is excess again: a released entry whose IP is back in the pool is dropped even when the IP is on the pass's release list (newer upstream skips listed IPs first)",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-release-unacked",
        "cilium-swarm",
        &super::invariants::RELEASE_ACKNOWLEDGED,
        "the operator releases an IP in the pass that marks it, without waiting for the agent's ready-for-release",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-no-delay",
        "cilium-swarm",
        &super::invariants::RELEASE_AFTER_DELAY,
        "the operator's excess-ip-release-delay is zero: it marks and releases IPs as soon as they are excess",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-unassign-by-count",
        "cilium-clock-skew",
        &super::invariants::NO_RELEASE_IN_USE,
        "the operator's unassign call names the interface's lowest addresses, as many as were acknowledged, instead of the acknowledged IPs",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-ack-allocated",
        "cilium-split-brain",
        &super::invariants::AGENT_ANSWERS_TRUTHFULLY,
        "the agent answers ready-for-release for a marked IP in its pool even when a pod holds it",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-allocate-held",
        "cilium-clock-skew",
        &super::invariants::AGENT_ALLOCATES_FROM_POOL,
        "the agent hands out IPs whatever their release-ips state (marked, acknowledged or released)",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-mark-beyond-excess",
        "cilium-swarm",
        &super::invariants::MARKS_WITHIN_EXCESS,
        "the operator picks its release list for one IP more than its excess count",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-delay-from-start",
        "cilium-swarm",
        &super::invariants::RELEASE_AFTER_DELAY,
        "the operator times every IP from its IPAM's start instead of from the pass that first saw it excess",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-mark-used",
        "cilium-swarm",
        &super::invariants::OPERATOR_MARKS_UNUSED,
        "the operator picks release candidates without excluding the IPs its observed status lists as used",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-keep-released-entry",
        "cilium-swarm",
        &super::invariants::HANDSHAKE_ENTRIES_CLEAR,
        "the agent never deletes a released entry, even once its IP has left the pool",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-keep-aborted",
        "cilium-silent-task-death",
        &super::invariants::HANDSHAKE_ENTRIES_CLEAR,
        "the agent keeps the release-ips entries the operator dropped (aborted or refused releases) and writes them back",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-never-abort",
        "cilium-swarm",
        &super::invariants::HANDSHAKE_ABORTED_WHEN_NOT_EXCESS,
        "the operator never aborts a handshake whose IP left its release list: a marked-for-release or ready-for-release entry stays once the IP is no longer excess (what docs/mutation.md took its surviving handle_ip_release mutant to do)",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-keep-readded-released",
        "cilium-split-brain",
        &super::invariants::RELEASED_ENTRIES_CLEAR,
        "a released entry whose IP the cloud gave back to the node is never dropped, whatever fix of upstream issue #39981 is on",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-no-allocation",
        "cilium-swarm",
        &super::invariants::PODS_GET_IPS,
        "the operator never assigns IPs to a node that needs them",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-ipam-stalls",
        "cilium-swarm",
        &super::invariants::LEADER_RUNS_IPAM,
        "a new leader's IPAM never starts (its blocking cloud resync never returns) while the operator keeps renewing the Lease",
    ),
    Switch::mutant::<Cilium>(
        "cilium-mutant-never-mark",
        "cilium-clock-skew",
        &super::invariants::EXCESS_RELEASED,
        "the operator never marks an IP: the handshake never starts and no excess IP is released",
    ),
];
