//! Cilium's invariants (checked by `monitor`): one per promise of the excess-IP release handshake
//! each with the upstream behaviour it stands for and, for liveness, a bound computed
//! from the model's constants (`scenarios::cilium`: [`CLEANUP_BOUND_US`], [`ABORT_BOUND_US`],
//! [`PODS_BOUND_US`], [`EXCESS_BOUND_US`], [`IPAM_GAP_BOUND_US`]). Every one has a mutant that trips it (`switches.rs`).

use super::{ABORT_BOUND_US, CLEANUP_BOUND_US, EXCESS_BOUND_US, IPAM_GAP_BOUND_US, PODS_BOUND_US};
use crate::invariant::{Breach, Invariant};

/// No IP is unassigned while a pod uses it.
pub const NO_RELEASE_IN_USE: Invariant = Invariant::safety(
    "no-release-in-use",
    "when the cloud unassigns IP X of node N, no pod on N uses X",
)
.upstream("the handshake's purpose (PR #17939, issue #13412): the operator unassigns an IP (pkg/ipam/node.go handleIPRelease, EC2 UnassignPrivateIpAddresses) only once the agent has confirmed that no pod uses it")
.measure(Breach::Occurs, "how long the pod had used the IP when the cloud unassigned it");
/// The operator releases only acknowledged, long-excess IPs.
pub const RELEASE_ACKNOWLEDGED: Invariant = Invariant::safety(
    "release-acknowledged",
    "an operator running the handshake decides to unassign X only when the CiliumNode version it decided on holds `ready-for-release` for X, and only once its IPAM has run for the release delay on its monotonic clock (it cannot have timed X for 180 s before)",
)
.bounded("180 s (`excess-ip-release-delay`)")
.bound_us(model::cilium::RELEASE_DELAY.as_micros() as u64)
.upstream("pkg/ipam/node.go handleIPRelease/handleIPReleaseResponse @ed90dd5 (l. 758-776, 797-898): an IP is released only after `excess-ip-release-delay` and on an observed `ready-for-release`")
.measure(Breach::Within, "how long the operator's IPAM had run on its monotonic clock when it decided (a release also needs ready-for-release; without it the value has no bound)");
/// The agent allocates only from its pool.
pub const AGENT_ALLOCATES_FROM_POOL: Invariant = Invariant::safety(
    "agent-allocates-from-pool",
    "the agent gives a pod only an IP the cloud assigns to its node, never one in `marked-for-release`, `ready-for-release` or `released`",
)
.upstream("pkg/ipam/crd.go allocate/allocateNext @ed90dd5 (l. 522-524, 581-583): isIPInReleaseHandshake makes a marked, acknowledged or released IP unallocatable; only pool IPs are handed out")
.measure(Breach::Occurs, "time since the IP left the node's pool (the cloud unassigned it, or the agent's entry took its handshake state)");
/// The agent acknowledges only unallocated IPs.
pub const AGENT_ANSWERS_TRUTHFULLY: Invariant = Invariant::safety(
    "agent-answers-truthfully",
    "the agent answers `ready-for-release` only for an IP no pod on its node uses",
)
.upstream("pkg/ipam/crd.go updateLocalNodeResource @ed90dd5 (l. 428-442): an allocated IP gets `do-not-release`, only a free one `ready-for-release`")
.measure(Breach::Occurs, "how long the pod had held the IP when the agent answered ready-for-release");
/// The operator never marks an IP it saw in use.
pub const OPERATOR_MARKS_UNUSED: Invariant = Invariant::safety(
    "operator-marks-unused",
    "the operator never marks an IP that the CiliumNode version it decided on lists in `status.ipam.used`",
)
.upstream("pkg/aws/eni/node.go PrepareIPRelease @ed90dd5 (l. 131-198): release candidates skip the addresses in the observed `status.ipam.used`")
.measure(Breach::Occurs, "age of the CiliumNode version the operator decided on");
/// The operator marks no more IPs than are in excess.
pub const MARKS_WITHIN_EXCESS: Invariant = Invariant::safety(
    "marks-within-excess",
    "in one pool maintainer pass, an operator marks at most as many IPs of node N as are in excess by upstream's count, computed by the monitor from the pass's inputs: the IPs the operator's cloud view held for N, and `status.ipam.used` of the CiliumNode version it counted, as the API server stored it",
)
.upstream("pkg/ipam/node.go calculateExcessIPs @ed90dd5 (l. 347-378, the piecewise count with min-allocate and max-above-watermark) and pkg/aws/eni/node.go PrepareIPRelease (l. 131-198: at most `min(free, excess)` addresses of one interface); handleIPRelease marks only IPs of that list (l. 797-851)")
.measure(Breach::Occurs, "age of the CiliumNode version whose used IPs the pass counted");
/// Each IP is released only after the delay.
pub const RELEASE_AFTER_DELAY: Invariant = Invariant::safety(
    "release-after-delay",
    "an operator decides to unassign IP X of node N only once the release delay has passed on its monotonic clock since it could first have timed X: the later of its IPAM's start and X's last assignment to N in the cloud (checked for every IP, not only the first after a start)",
)
.bounded("180 s (`excess-ip-release-delay`)")
.bound_us(model::cilium::RELEASE_DELAY.as_micros() as u64)
.upstream("pkg/ipam/node.go handleIPRelease @ed90dd5 (l. 803-837): an IP is timed (`ipsMarkedForRelease[ip] = time.Now()`) on the first pass that has it on the release list, which needs it in the operator's cloud view of the node, and is acted on only once `ts.Add(excessIPReleaseDelay)` is before `time.Now()` (monotonic in Go)")
.measure(Breach::Within, "time on the operator's monotonic clock from the later of its IPAM's start and the IP's assignment to the node, to the decision");
/// Handshake entries clear once their IP left the node or their release was called off.
pub const HANDSHAKE_ENTRIES_CLEAR: Invariant = Invariant::liveness(
    "handshake-entries-clear",
    "the longest of the operator's chain (Lease take-over, the maintainer's longest backoff, a resync) and the informers' re-watch, then the agent's rate-limited write, and 20 s for requests",
    "after faults stop, every `release-ips` entry in a CiliumNode whose IP has left the node in the cloud, whose answer is `do-not-release`, or whose release the leading operator aborted, is gone within the bound (on nodes whose agent and operators run all their tasks)",
)
.bound_us(CLEANUP_BOUND_US)
.upstream("pkg/ipam/crd.go updateLocalNodeResource @ed90dd5 (l. 371-375: a released entry goes once its IP left the pool); pkg/ipam/node.go abortNoLongerExcessIPs and handleIPReleaseResponse (l. 735-776: aborted and refused entries are dropped, PR #18330)")
.measure(Breach::Exceeds, "time the entry outlived its cause (counted from faults stopping at the earliest)");
/// Handshakes whose IP is no longer excess are aborted.
pub const HANDSHAKE_ABORTED_WHEN_NOT_EXCESS: Invariant = Invariant::liveness(
    "handshake-aborted-when-not-excess",
    "the longer of the informers' re-watch and the operator's chain (Lease take-over, the maintainer's longest backoff), the agent's rate-limited status write, a resync (its pass aborts, its write drops the entry), and 20 s for requests; counted from the later of faults stopping and the IP leaving its node's release candidates",
    "after faults stop, a `marked-for-release` or `ready-for-release` entry in a CiliumNode whose IP is still assigned to the node but is no longer among its release candidates (upstream's excess count and pick, computed by the monitor from the cloud's assignments and the pods' IPs) is gone within the bound, unless the leading operator aborted it (then `handshake-entries-clear` holds it to its bound); on nodes whose agent and operators run all their tasks",
)
.bound_us(ABORT_BOUND_US)
.upstream("pkg/ipam/node.go handleIPRelease and abortNoLongerExcessIPs @ed90dd5 (l. 826-832: a timed IP not on this pass's release list loses its time and state; l. 735-755, called at l. 853-861 and from maintainIPPool l. 934-956: every observed entry not in this pass's excess list and not `released` is dropped, and `PopulateIPReleaseStatus` l. 1013-1031 omits it from the next write; PR #18330, asserted by TestNodeManagerAbortRelease, node_manager_test.go l. 514-585)")
.measure(Breach::Exceeds, "time the entry stayed after its IP stopped being a release candidate (counted from faults stopping at the earliest)");
/// Released entries clear once their IP came back.
pub const RELEASED_ENTRIES_CLEAR: Invariant = Invariant::liveness(
    "released-entries-clear",
    "as `pods-get-ips`, counted from the IP's return to its node if later",
    "no agent holds a `released` entry for an IP the cloud has given back to its node (cilium/cilium#39981)",
)
.bound_us(PODS_BOUND_US)
.upstream("newer operator/pkg/ipam/nodemanager/node.go abortNoLongerExcessIPs @35b06d5a: a released entry whose IP is back in the pool is removed (cilium/cilium#39981, PR #42276)")
.measure(Breach::Exceeds, "time a released entry for an IP back in its node's pool has stood since the later of faults stopping and the IP's return");
/// The Lease holder runs IPAM.
pub const LEADER_RUNS_IPAM: Invariant = Invariant::liveness(
    "leader-runs-ipam",
    "one cloud request timeout (the IPAM start's blocking resync, whose failure exits the process), then a Lease take-over (lease duration, the widest acquire wait, one request), and 10 s for requests",
    "after faults stop, while a pod waits for an IP on a node whose agent and operators run all their tasks, the Lease as the API server stores it does not name, for longer than the bound, an operator whose IPAM has not started or whose process has exited (counted from the later of faults stopping, its taking the Lease and its IPAM stopping)",
)
.bound_us(IPAM_GAP_BOUND_US)
.upstream("operator/cmd/root.go @ed90dd5: OnStartedLeading starts the leader lifecycle (l. 448-453), whose IPAM start is one blocking cloud resync that exits the process on failure (alloc.Start, log.Fatalf, l. 554-581; pkg/ipam/node_manager.go Start l. 221-225); a holder that exited stops renewing, and a candidate takes the Lease once LeaseDuration has passed since it last saw a renewal (client-go v0.30.3 leaderelection.go tryAcquireOrRenew)")
.measure(Breach::Exceeds, "how long the Lease named an operator without running IPAM while pods waited (counted from faults stopping at the earliest)");
/// Pods get IPs after faults stop while their node has room.
pub const PODS_GET_IPS: Invariant = Invariant::liveness(
    "pods-get-ips",
    "lease take-over, the maintainer's 5-min backoff, a resync, the agent's start and status write, the pod's next sandbox attempt (kubelet's 10 s pod-sync backoff, jittered to 15 s)",
    "after faults stop, on nodes whose agent and operators run all their tasks, no pod waits for an IP longer than the bound while its node has room (pods holding IPs < interfaces x capacity, and < max-allocate when it is set) and has had it for longer than the kubelet's longest retry wait (a waiting pod takes a freed IP at its next sandbox attempt)",
)
.bound_us(PODS_BOUND_US)
.upstream("pkg/ipam/node.go calculateNeededIPs/handleIPAllocation @ed90dd5 (l. 327-345) and crd.go allocateNext: a node short of IPs gets more up to its interfaces' capacity and its max-allocate (the need is capped so that available + needed <= max-allocate), and handshake states never starve it")
.measure(Breach::Exceeds, "longest wait of a pod for an IP");
/// Excess IPs are released after faults stop.
pub const EXCESS_RELEASED: Invariant = Invariant::liveness(
    "excess-released",
    "the informers' re-watch or a Lease take-over, then the agent's status write, a resync to time the IP, the release delay, a resync to mark it, a resync for the marks' write (that resync's API sync may run before its pass), a resync to release it, and 10 s for requests; counted from the later of faults stopping, the IP entering the excess, the last change of the node's addresses, and the maintainer's longest backoff after the last fault that could fail the operator's cloud calls",
    "an IP that stays among its node's release candidates (upstream's excess count and pick, computed by the monitor from the cloud's assignments and the pods' IPs) is unassigned within the bound",
)
.bound_us(EXCESS_BOUND_US)
.upstream("pkg/ipam/node.go calculateExcessIPs and handleIPRelease @ed90dd5 (l. 347-378, 797-898) with pkg/aws/eni/node.go PrepareIPRelease: an IP excess for `excess-ip-release-delay` is marked, acknowledged and released at the next 1-minute resyncs")
.measure(Breach::Exceeds, "time the IP stayed a release candidate after its clock started");

/// Every Cilium invariant.
pub static INVARIANTS: &[Invariant] = &[
    NO_RELEASE_IN_USE,
    RELEASE_ACKNOWLEDGED,
    AGENT_ALLOCATES_FROM_POOL,
    AGENT_ANSWERS_TRUTHFULLY,
    OPERATOR_MARKS_UNUSED,
    MARKS_WITHIN_EXCESS,
    RELEASE_AFTER_DELAY,
    HANDSHAKE_ENTRIES_CLEAR,
    HANDSHAKE_ABORTED_WHEN_NOT_EXCESS,
    RELEASED_ENTRIES_CLEAR,
    LEADER_RUNS_IPAM,
    PODS_GET_IPS,
    EXCESS_RELEASED,
];
