//! Cilium's invariants (checked by `monitor`).

use crate::invariant::Invariant;

/// No IP is unassigned while a pod uses it.
pub const NO_RELEASE_IN_USE: Invariant = Invariant::safety(
    "no-release-in-use",
    "when the cloud unassigns IP X of node N, no pod on N uses X",
);
/// The operator releases only acknowledged, long-excess IPs.
pub const RELEASE_ACKNOWLEDGED: Invariant = Invariant::safety(
    "release-acknowledged",
    "an operator running the handshake unassigns X only after seeing `ready-for-release` for X, and after X was excess for 180 s on its (monotonic) clock",
)
.bounded("180 s");
/// The agent allocates only from its pool.
pub const AGENT_ALLOCATES_FROM_POOL: Invariant = Invariant::safety(
    "agent-allocates-from-pool",
    "the agent gives a pod only an IP the cloud assigns to its node, never one in `marked-for-release`, `ready-for-release` or `released`",
);
/// The agent acknowledges only unallocated IPs.
pub const AGENT_ANSWERS_TRUTHFULLY: Invariant = Invariant::safety(
    "agent-answers-truthfully",
    "the agent answers `ready-for-release` only for an IP it has not allocated",
);
/// The operator never marks an IP it saw in use.
pub const OPERATOR_MARKS_UNUSED: Invariant = Invariant::safety(
    "operator-marks-unused",
    "the operator never marks an IP in the `used` set it observed",
);
/// Released entries clear once their IP came back.
pub const RELEASED_ENTRIES_CLEAR: Invariant = Invariant::liveness(
    "released-entries-clear",
    "as `pods-get-ips`",
    "no agent holds a `released` entry for an IP the cloud has given back to its node (issue #39981)",
);
/// Pods get IPs after faults stop.
pub const PODS_GET_IPS: Invariant = Invariant::liveness(
    "pods-get-ips",
    "427 s (derived: lease take-over, the maintainer's 5-min backoff, a resync, the agent's start and status write)",
    "on nodes whose agent and operator run all their tasks, no pod waits while an unused IP is held in a handshake state or while the node has room",
);

/// Every Cilium invariant.
pub static INVARIANTS: &[Invariant] = &[
    NO_RELEASE_IN_USE,
    RELEASE_ACKNOWLEDGED,
    AGENT_ALLOCATES_FROM_POOL,
    AGENT_ANSWERS_TRUTHFULLY,
    OPERATOR_MARKS_UNUSED,
    RELEASED_ENTRIES_CLEAR,
    PODS_GET_IPS,
];
