//! MetalLB's events (memberlist, speakerlist, the layer-2 announcer): what the model emits and the
//! MetalLB monitor and report read.
//!
//! They travel on the world's bus as [`sim::Event::System`] and serialize (in traces and in the
//! trace hash) exactly as they did when they were variants of `sim::Event`.

use serde::{Deserialize, Serialize};

/// Everything a MetalLB run reports besides the world's events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum MetallbEvent {
    /// This speaker's memberlist view of `member` changed (`state`: alive, suspect, dead, left,
    /// forgotten).
    MlMember {
        /// The member's name (its node's).
        member: String,
        /// Its new state: `alive`, `suspect`, `dead`, `left` or `forgotten`.
        state: String,
        /// The incarnation the change is about.
        incarnation: u32,
    },
    /// This speaker's suspicion of `member` timed out: it declares the member dead (memberlist
    /// v0.5.1 state.go `suspectNode` l. 1229-1250). A death learnt from another member's
    /// message is only an `MlMember` change.
    MlDeclareDead {
        /// The member declared dead.
        member: String,
        /// The incarnation declared dead.
        incarnation: u32,
    },
    /// This speaker refuted a suspicion or death of itself: its incarnation is now `incarnation`
    /// (memberlist v0.5.1 state.go `refute` l. 918-942).
    MlRefute {
        /// Its new incarnation.
        incarnation: u32,
    },
    /// `join(addresses)` finished: `joined` of them answered.
    MlJoin {
        /// The speaker IPs joined (those of speakers not already members).
        addresses: Vec<String>,
        /// How many of them completed the push/pull exchange.
        joined: u32,
        /// What started it: `start` (the single join of bug `metallb-join-once`), `tick` (the
        /// periodic rejoin) or `request` (the first IP list arrived, or the speaker's own Node
        /// changed).
        cause: String,
    },
    /// The speaker's cache of speaker IPs was refreshed from the API server.
    SpeakerIps {
        /// The speaker pods' IPs, as listed.
        ips: Vec<String>,
    },
    /// The speaker started announcing `ip` (`candidates`: its own ordering input).
    L2Announce {
        /// The Service's name.
        service: String,
        /// The Service's IP (dotted).
        ip: String,
        /// The nodes this speaker considered eligible to announce it, in its views' order (this
        /// node came first in `announce_order`).
        candidates: Vec<String>,
    },
    /// The speaker's Node informer view gained (`present`) or lost a Node: only a node seen
    /// there can be a candidate.
    L2Node {
        /// The Node's name.
        node: String,
        /// Whether the view now has it.
        present: bool,
    },
    /// The speaker's Endpoints informer delivered a change of which nodes have a ready (serving)
    /// endpoint of `service`: what this speaker now sees, the input of upstream's
    /// `activeEndpointExists` and, for a Local service, `nodesWithEndpoint` (metallb 7938d3f
    /// speaker/layer2_controller.go l. 56-86, 236-246). A deleted Endpoints object reads as none.
    L2Endpoints {
        /// The Service's name (its Endpoints object's).
        service: String,
        /// The nodes with a ready endpoint, sorted.
        ready: Vec<String>,
    },
    /// The speaker stopped announcing `ip`.
    L2Withdraw {
        /// The Service's name.
        service: String,
        /// The IP no longer announced (dotted).
        ip: String,
    },
}

sim::system_event!(MetallbEvent);
