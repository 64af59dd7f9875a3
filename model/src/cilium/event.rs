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
    // Cilium run's events, and they serialize as the same text as a `String`.)
    /// The kubelet created a pod (it needs an IP).
    CiliumPodCreated { pod: Short },
    /// The agent gave a pod an IP.
    CiliumPodIp { pod: Short, ip: Short },
    /// The kubelet deleted a pod (which had `ip`, if any).
    CiliumPodDeleted { pod: Short, ip: Option<Short> },
    /// An entry of the agent's `release-ips` view changed (`state` none: removed).
    CiliumAgentState {
        ip: Short,
        state: Option<Short>,
        allocated: bool,
    },
    /// The operator marked an IP for release (`observed_used`: it was in the used set it saw).
    CiliumMark {
        node: String,
        ip: String,
        observed_used: bool,
        observed_rv: u64,
    },
    /// The operator dropped a handshake entry: the IP is no longer excess.
    CiliumAbort { node: String, ip: String },
    /// The operator decided to unassign an IP (`state_seen`: the handshake state it saw).
    CiliumRelease {
        node: String,
        ip: String,
        state_seen: String,
        excess_for_ms: u64,
        observed_rv: u64,
        handshake: bool,
    },
    /// An operator's elector called OnStartedLeading: its IPAM starts (`identity`: its Lease
    /// holder identity, `transitions`: the Lease's leaderTransitions it won with).
    CiliumLeading { identity: String, transitions: i32 },
    /// An operator's leader context ended (leadership lost or released): with the graceful
    /// shutdown of the pinned commit its IPAM keeps running until the process exits.
    CiliumLeadershipLost { identity: String },
    /// An operator's IPAM started its work as leader after the blocking cloud resync.
    CiliumIpamStarted { identity: String },
}

sim::system_event!(CiliumEvent);
