//! The kinds of fault a MetalLB seed may enable (swarm testing: each seed turns a subset on and
//! draws its faults from it). Declared in the order of their names, so that sorting a set of them
//! sorts by name, as the draws have always done (the findings' pinned seeds depend on it).

use crate::faults::ChoiceFacts;
use serde::{Deserialize, Serialize};
use strum::EnumIter;

/// One kind of fault a MetalLB scenario draws (what it hits is chosen when it is drawn).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, EnumIter,
)]
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
    /// `loss`.
    Loss,
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
            FaultChoice::Loss => "loss",
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

impl FaultChoice {
    /// Its catalog entry: the kinds it draws, its causes, whether upstream code produces it.
    pub fn facts(self) -> ChoiceFacts {
        use sim::catalog as k;
        use FaultChoice::*;
        match self {
            ApiDown => ChoiceFacts::real(&[&k::SERVICE_UNAVAILABLE], &[]),
            ApiSlow => ChoiceFacts::real(&[&k::SERVICE_SLOW], &[]),
            DeathIpRefresh | DeathJoinLoop => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "no upstream path ends this speakerlist goroutine while the speaker lives (a Go \
                 panic ends the whole process, which `speaker-crash` models)",
            ),
            Drift => ChoiceFacts::real(&[&k::DRIFT], &[]),
            Isolate => ChoiceFacts::real(&[&k::ISOLATE], &[]),
            Latency => ChoiceFacts::real(&[&k::LATENCY], &[]),
            Loss => ChoiceFacts::real(&[&k::LOSS], &[]),
            NodeCrash => ChoiceFacts::real(&[&k::CRASH], &[]),
            NodeStep => ChoiceFacts::real(&[&k::CLOCK_STEP], &[]),
            Partial => ChoiceFacts::real(
                &[&k::PARTITION],
                &[
                    "a partial partition: the speakers split while the router and the API server \
                   reach both sides",
                ],
            ),
            Pause => ChoiceFacts::real(&[&k::PAUSE], &[]),
            Simplex => ChoiceFacts::real(&[&k::SIMPLEX], &[]),
            SpeakerCrash => ChoiceFacts::real(&[&k::PROCESS_CRASH], &[]),
            SpeakerRestart => ChoiceFacts::real(&[&k::SERVICE_RESTART], &[]),
            Split => ChoiceFacts::real(&[&k::PARTITION], &[]),
            SplitApiDown => ChoiceFacts::real(
                &[&k::PARTITION, &k::SERVICE_UNAVAILABLE],
                &[
                    "a partition during which the API server also goes down (a control-plane \
                   outage that outlasts the partition)",
                ],
            ),
            StallIpRefresh | StallJoinLoop => ChoiceFacts::real(
                &[&k::TASK_STALL],
                &["a memberlist call blocked on a slow peer or a full send queue"],
            ),
        }
    }
}
