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
        member: String,
        state: String,
        incarnation: u32,
    },
    /// `join(addresses)` finished: `joined` of them answered.
    MlJoin {
        addresses: Vec<String>,
        joined: u32,
        cause: String,
    },
    /// The speaker's cache of speaker IPs was refreshed from the API server.
    SpeakerIps { ips: Vec<String> },
    /// The speaker started announcing `ip` (`candidates`: its own ordering input).
    L2Announce {
        service: String,
        ip: String,
        candidates: Vec<String>,
    },
    /// The speaker stopped announcing `ip`.
    L2Withdraw { service: String, ip: String },
}

sim::system_event!(MetallbEvent);
