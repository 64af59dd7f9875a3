//! The kinds of fault a Cilium seed may enable (swarm testing: each seed turns a subset on and
//! draws its faults from it). Declared in the order of their names, so that sorting a set of them
//! sorts by name, as the draws have always done (the findings' pinned seeds depend on it).

use crate::faults::ChoiceFacts;
use serde::{Deserialize, Serialize};
use strum::EnumIter;

/// One kind of fault a Cilium scenario draws (what it hits is chosen when it is drawn).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, EnumIter,
)]
#[serde(rename_all = "kebab-case")]
pub enum FaultChoice {
    /// `agent-crash`.
    AgentCrash,
    /// `api-down`.
    ApiDown,
    /// `api-latency`.
    ApiLatency,
    /// `api-slow`.
    ApiSlow,
    /// `cloud-ambiguous`.
    CloudAmbiguous,
    /// `cloud-down`.
    CloudDown,
    /// `cloud-slow`.
    CloudSlow,
    /// `cloud-stale-reads`.
    CloudStaleReads,
    /// `cloud-throttling`.
    CloudThrottling,
    /// `death-maintenance`.
    DeathMaintenance,
    /// `death-status-writer`.
    DeathStatusWriter,
    /// `drift`.
    Drift,
    /// `node-api-cut`.
    NodeApiCut,
    /// `node-isolate`.
    NodeIsolate,
    /// `node-step`.
    NodeStep,
    /// `operator-api-cut`.
    OperatorApiCut,
    /// `operator-api-slow`.
    OperatorApiSlow,
    /// `operator-clock-rate`.
    OperatorClockRate,
    /// `operator-cloud-cut`.
    OperatorCloudCut,
    /// `operator-crash`.
    OperatorCrash,
    /// `operator-pause`.
    OperatorPause,
    /// `operator-restart`.
    OperatorRestart,
    /// `operator-step`.
    OperatorStep,
    /// `stall-maintenance`.
    StallMaintenance,
    /// `stall-status-writer`.
    StallStatusWriter,
}

impl FaultChoice {
    /// Its name, as options print it.
    pub fn name(self) -> &'static str {
        match self {
            FaultChoice::AgentCrash => "agent-crash",
            FaultChoice::ApiDown => "api-down",
            FaultChoice::ApiLatency => "api-latency",
            FaultChoice::ApiSlow => "api-slow",
            FaultChoice::CloudAmbiguous => "cloud-ambiguous",
            FaultChoice::CloudDown => "cloud-down",
            FaultChoice::CloudSlow => "cloud-slow",
            FaultChoice::CloudStaleReads => "cloud-stale-reads",
            FaultChoice::CloudThrottling => "cloud-throttling",
            FaultChoice::DeathMaintenance => "death-maintenance",
            FaultChoice::DeathStatusWriter => "death-status-writer",
            FaultChoice::Drift => "drift",
            FaultChoice::NodeApiCut => "node-api-cut",
            FaultChoice::NodeIsolate => "node-isolate",
            FaultChoice::NodeStep => "node-step",
            FaultChoice::OperatorApiCut => "operator-api-cut",
            FaultChoice::OperatorApiSlow => "operator-api-slow",
            FaultChoice::OperatorClockRate => "operator-clock-rate",
            FaultChoice::OperatorCloudCut => "operator-cloud-cut",
            FaultChoice::OperatorCrash => "operator-crash",
            FaultChoice::OperatorPause => "operator-pause",
            FaultChoice::OperatorRestart => "operator-restart",
            FaultChoice::OperatorStep => "operator-step",
            FaultChoice::StallMaintenance => "stall-maintenance",
            FaultChoice::StallStatusWriter => "stall-status-writer",
        }
    }
}

impl FaultChoice {
    /// Its catalog entry: the kinds it draws, its causes, whether upstream code produces it.
    pub fn facts(self) -> ChoiceFacts {
        use sim::catalog as k;
        use FaultChoice::*;
        match self {
            AgentCrash | OperatorCrash => ChoiceFacts::real(&[&k::PROCESS_CRASH], &[]),
            ApiDown => ChoiceFacts::real(&[&k::SERVICE_UNAVAILABLE], &[]),
            ApiLatency => ChoiceFacts::real(&[&k::LATENCY], &[]),
            ApiSlow | OperatorApiSlow => ChoiceFacts::real(
                &[&k::SERVICE_SLOW],
                &["an API server slowed by a fail-slow etcd disk or by client-side throttling \
                   (client-go's QPS limit)"],
            ),
            CloudAmbiguous => ChoiceFacts::real(
                &[&k::SERVICE_AMBIGUOUS],
                &["a cloud API call that times out at the client after the cloud applied it; \
                   the AWS SDK retries it, so the retry meets the applied state"],
            ),
            CloudDown => ChoiceFacts::real(
                &[&k::SERVICE_UNAVAILABLE],
                &["a regional outage of the cloud API, or its endpoint unreachable: every call \
                   refused (503 or a refused connection), which the AWS SDK retries twice within \
                   6 s"],
            ),
            CloudSlow => ChoiceFacts::real(&[&k::SERVICE_SLOW], &[]),
            CloudStaleReads => ChoiceFacts::real(
                &[&k::STALE_READS],
                &["EC2's eventual consistency: the operator's DescribeNetworkInterfaces (its full \
                   resync and each instance sync) may not yet show an assign or unassign that \
                   returned; the lag's size is assumed (EC2 publishes none)"],
            )
            .noted(
                "the operator fences its passes with a resync that started after the last \
                 mutation (node.go requireResync/updateLastResync), which a stale describe \
                 does not satisfy: it can rebuild the pool and status.eni from a view before \
                 the unassign",
            ),
            CloudThrottling => ChoiceFacts::real(
                &[&k::THROTTLING],
                &["other clients of the AWS account and Region spending EC2's request tokens \
                   (RequestLimitExceeded): the operator's calls wait for its own limiter (4 a \
                   second, burst 20), then the SDK makes up to 3 attempts with jittered backoff"],
            ),
            DeathMaintenance | DeathStatusWriter => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "both run as triggers or controllers (the agent's `refreshTrigger`, the \
                 operator's pool maintainer and `ipam-node-interval-refresh` controller), which \
                 retry on error; nothing ends them while the process lives, and a Go panic ends \
                 the whole process (`*-crash`)",
            ),
            Drift => ChoiceFacts::real(&[&k::DRIFT], &[]),
            NodeApiCut | OperatorApiCut | OperatorCloudCut => {
                ChoiceFacts::real(&[&k::PARTITION], &[])
            }
            NodeIsolate => ChoiceFacts::real(&[&k::ISOLATE], &[]),
            NodeStep | OperatorStep => ChoiceFacts::real(&[&k::CLOCK_STEP], &[]),
            OperatorClockRate => ChoiceFacts::real(&[&k::CLOCK_RATE], &[]),
            OperatorPause => ChoiceFacts::real(&[&k::PAUSE], &[]),
            OperatorRestart => ChoiceFacts::real(&[&k::SERVICE_RESTART], &[]),
            StallMaintenance | StallStatusWriter => ChoiceFacts::real(
                &[&k::TASK_STALL],
                &["a call without a deadline blocking on a slow API server or cloud API"],
            ),
        }
    }
}
