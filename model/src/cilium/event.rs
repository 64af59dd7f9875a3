//! Cilium's events (ENI IPAM: pods, the agent's release-ips view, the operators' handshake
//! decisions and leadership): what the model emits and the Cilium monitor and report read. Pod
//! names and addresses are `Short`s, the agent's own type for them: these are most of a Cilium
//! run's events, and they serialize as the same text as a `String`.
//!
//! They travel on the world's bus as [`sim::Event::System`] and serialize (in traces and in the
//! trace hash) exactly as they did when they were variants of `sim::Event`.

use serde::{Deserialize, Serialize};
use sim::Short;

/// Everything a Cilium run reports besides the world's events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum CiliumEvent {
    /// The kubelet created a pod (it needs an IP).
    CiliumPodCreated {
        /// The pod's name (`HOST-pod-N`).
        pod: Short,
    },
    /// The agent gave a pod an IP.
    CiliumPodIp {
        /// The pod's name.
        pod: Short,
        /// The IP it got from the node's pool (dotted).
        ip: Short,
    },
    /// The agent died while creating a pod's endpoint: the pod's CNI ADD failed, its sandbox
    /// is torn down, and it no longer has the IP the agent had allocated (it waits again).
    CiliumSandboxFailed {
        /// The pod's name.
        pod: Short,
        /// The IP the agent had allocated to it (dotted).
        ip: Short,
    },
    /// The kubelet deleted a pod (which had `ip`, if any).
    CiliumPodDeleted {
        /// The pod's name.
        pod: Short,
        /// The IP it had (none: it was still pending).
        ip: Option<Short>,
    },
    /// An entry of the agent's `release-ips` view changed (`state` none: removed).
    CiliumAgentState {
        /// The IP of the entry (dotted).
        ip: Short,
        /// Its handshake state now (`marked-for-release`, `ready-for-release`, `do-not-release`
        /// or `released`); none: the entry is gone.
        state: Option<Short>,
        /// Whether the agent counted the IP as used (by a pod) when the entry changed.
        allocated: bool,
    },
    /// The operator marked an IP for release (`observed_used`: it was in the used set it saw).
    CiliumMark {
        /// The CiliumNode (node name) whose IP it is.
        node: String,
        /// The IP marked (dotted).
        ip: String,
        /// Whether the IP was in the CiliumNode's `status.ipam.used` the operator saw.
        observed_used: bool,
        /// The resourceVersion of the CiliumNode the operator decided on.
        observed_rv: u64,
        /// The inputs of the excess count the pass acted on (`recalculate`): the IPs the
        /// operator's cloud view held for the node, and the resourceVersion of the CiliumNode
        /// whose `status.ipam.used` it counted.
        available: u32,
        /// See `available`.
        counted_rv: u64,
    },
    /// The operator dropped a handshake entry: the IP is no longer excess, or (a `released`
    /// entry) its IP is no longer on the interfaces or is back in the pool.
    CiliumAbort {
        /// The CiliumNode (node name) whose IP it is.
        node: String,
        /// The IP whose handshake was dropped (dotted).
        ip: String,
        /// The entry was `released` and went because its IP was back in the pool the operator
        /// checked: newer upstream's clean-up for cilium/cilium#39981 (fixes `cilium-readd-released-ip`
        /// and `cilium-readd-after-resync`). Serialized only when true, so a run without those
        /// fixes has the traces it had before the field existed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        back_in_pool: bool,
        /// The operator's own state for the IP was `released` (its unassign had answered) and
        /// went because the IP was no longer on the pass's release list (`handleIPRelease`'s
        /// `deleteLocalReleaseStatus`, cilium/cilium pkg/ipam/node.go:826-832 at ed90dd5), so
        /// no status write after it can carry the `released` entry. Serialized only when true.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        released: bool,
    },
    /// The operator decided to unassign an IP (`state_seen`: the handshake state it saw).
    CiliumRelease {
        /// The CiliumNode (node name) whose IP it is.
        node: String,
        /// The IP to unassign (dotted).
        ip: String,
        /// The agent's answer the operator saw (`ready-for-release`; empty without the handshake).
        state_seen: String,
        /// How long the IP had been excess by the operator's monotonic clock (ms).
        excess_for_ms: u64,
        /// The resourceVersion of the CiliumNode the operator decided on.
        observed_rv: u64,
        /// False with bug `cilium-no-handshake` (released without asking the agent).
        handshake: bool,
    },
    /// An operator's elector called OnStartedLeading: its IPAM starts (`identity`: its Lease
    /// holder identity, `transitions`: the Lease's leaderTransitions it won with).
    CiliumLeading {
        /// The operator's Lease holder identity (`HOST-PID`).
        identity: String,
        /// The Lease's `leaderTransitions` in the record it won with.
        transitions: i32,
    },
    /// An operator's leader context ended (leadership lost or released): with the graceful
    /// shutdown of the pinned commit its IPAM keeps running until the process exits.
    CiliumLeadershipLost {
        /// The operator's Lease holder identity (`HOST-PID`).
        identity: String,
    },
    /// An operator's IPAM started its work as leader after the blocking cloud resync.
    CiliumIpamStarted {
        /// The operator's Lease holder identity (`HOST-PID`).
        identity: String,
        /// The operator runs a clean-up for cilium/cilium#39981 (a `released` entry whose IP is back in
        /// the pool is dropped): which operator version is deployed, a fact of the world.
        /// Serialized only when true, so a run of the pinned commit keeps its traces.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cleans_readded: bool,
    },
}

sim::system_event!(CiliumEvent);
