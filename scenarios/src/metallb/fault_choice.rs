//! The kinds of fault a MetalLB seed may enable (swarm testing: each seed turns a subset on and
//! draws its faults from it). Declared in the order of their names, so that sorting a set of them
//! sorts by name, as the draws have always done (the findings' pinned seeds depend on it).

use serde::{Deserialize, Serialize};

/// One kind of fault a MetalLB scenario draws (what it hits is chosen when it is drawn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultChoice {
    /// `api-down`.
    ApiDown,
    /// `api-slow`.
    ApiSlow,
    /// `death-ip-refresh`.
    DeathIpRefresh,
    /// `death-join-loop`.
    DeathJoinLoop,
    /// `drift`.
    Drift,
    /// `isolate`.
    Isolate,
    /// `latency`.
    Latency,
    /// `node-crash`.
    NodeCrash,
    /// `node-step`.
    NodeStep,
    /// `partial`.
    Partial,
    /// `pause`.
    Pause,
    /// `simplex`.
    Simplex,
    /// `speaker-crash`.
    SpeakerCrash,
    /// `speaker-restart`.
    SpeakerRestart,
    /// `split`.
    Split,
    /// `split-api-down`.
    SplitApiDown,
    /// `stall-ip-refresh`.
    StallIpRefresh,
    /// `stall-join-loop`.
    StallJoinLoop,
}

impl FaultChoice {
    /// For a task stall: the task it stalls.
    pub fn stall_of(self) -> Option<&'static str> {
        self.name().strip_prefix("stall-")
    }

    /// Its name, as options print it.
    pub fn name(self) -> &'static str {
        match self {
            FaultChoice::ApiDown => "api-down",
            FaultChoice::ApiSlow => "api-slow",
            FaultChoice::DeathIpRefresh => "death-ip-refresh",
            FaultChoice::DeathJoinLoop => "death-join-loop",
            FaultChoice::Drift => "drift",
            FaultChoice::Isolate => "isolate",
            FaultChoice::Latency => "latency",
            FaultChoice::NodeCrash => "node-crash",
            FaultChoice::NodeStep => "node-step",
            FaultChoice::Partial => "partial",
            FaultChoice::Pause => "pause",
            FaultChoice::Simplex => "simplex",
            FaultChoice::SpeakerCrash => "speaker-crash",
            FaultChoice::SpeakerRestart => "speaker-restart",
            FaultChoice::Split => "split",
            FaultChoice::SplitApiDown => "split-api-down",
            FaultChoice::StallIpRefresh => "stall-ip-refresh",
            FaultChoice::StallJoinLoop => "stall-join-loop",
        }
    }
}
