//! The kinds of fault a Calico seed may enable (swarm testing: each seed turns a subset on and
//! draws its faults from it). Declared in the order of their names, so that sorting a set of them
//! sorts by name, as the draws have always done (the findings' pinned seeds depend on it).

use serde::{Deserialize, Serialize};

/// One kind of fault a Calico scenario draws (what it hits is chosen when it is drawn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultChoice {
    /// `compute-crash`.
    ComputeCrash,
    /// `compute-isolate`.
    ComputeIsolate,
    /// `compute-pause`.
    ComputePause,
    /// `compute-step`.
    ComputeStep,
    /// `db-slow`.
    DbSlow,
    /// `db-unavailable`.
    DbUnavailable,
    /// `death-agent-status`.
    DeathAgentStatus,
    /// `death-agent-status-watcher`.
    DeathAgentStatusWatcher,
    /// `death-any`.
    DeathAny,
    /// `death-compaction`.
    DeathCompaction,
    /// `death-elector`.
    DeathElector,
    /// `death-endpoint-status`.
    DeathEndpointStatus,
    /// `death-endpoint-status-watcher`.
    DeathEndpointStatusWatcher,
    /// `drift-change`.
    DriftChange,
    /// `etcd-ambiguous`.
    EtcdAmbiguous,
    /// `etcd-garbled`.
    EtcdGarbled,
    /// `etcd-restart`.
    EtcdRestart,
    /// `etcd-slow`.
    EtcdSlow,
    /// `etcd-step`.
    EtcdStep,
    /// `etcd-unavailable`.
    EtcdUnavailable,
    /// `flapping`.
    Flapping,
    /// `graceful-restart`.
    GracefulRestart,
    /// `host-crash`.
    HostCrash,
    /// `host-step`.
    HostStep,
    /// `isolate`.
    Isolate,
    /// `latency`.
    Latency,
    /// `manager-crash`.
    ManagerCrash,
    /// `partition`.
    Partition,
    /// `pause`.
    Pause,
    /// `simplex`.
    Simplex,
    /// `stall`.
    Stall,
    /// `stall-elector`.
    StallElector,
    /// `watch-cut`.
    WatchCut,
}

impl FaultChoice {
    /// For a silent task death: the task it kills (`any`: one of every worker's, drawn).
    pub fn death_of(self) -> Option<&'static str> {
        self.name().strip_prefix("death-")
    }

    /// Its name, as options print it.
    pub fn name(self) -> &'static str {
        match self {
            FaultChoice::ComputeCrash => "compute-crash",
            FaultChoice::ComputeIsolate => "compute-isolate",
            FaultChoice::ComputePause => "compute-pause",
            FaultChoice::ComputeStep => "compute-step",
            FaultChoice::DbSlow => "db-slow",
            FaultChoice::DbUnavailable => "db-unavailable",
            FaultChoice::DeathAgentStatus => "death-agent-status",
            FaultChoice::DeathAgentStatusWatcher => "death-agent-status-watcher",
            FaultChoice::DeathAny => "death-any",
            FaultChoice::DeathCompaction => "death-compaction",
            FaultChoice::DeathElector => "death-elector",
            FaultChoice::DeathEndpointStatus => "death-endpoint-status",
            FaultChoice::DeathEndpointStatusWatcher => "death-endpoint-status-watcher",
            FaultChoice::DriftChange => "drift-change",
            FaultChoice::EtcdAmbiguous => "etcd-ambiguous",
            FaultChoice::EtcdGarbled => "etcd-garbled",
            FaultChoice::EtcdRestart => "etcd-restart",
            FaultChoice::EtcdSlow => "etcd-slow",
            FaultChoice::EtcdStep => "etcd-step",
            FaultChoice::EtcdUnavailable => "etcd-unavailable",
            FaultChoice::Flapping => "flapping",
            FaultChoice::GracefulRestart => "graceful-restart",
            FaultChoice::HostCrash => "host-crash",
            FaultChoice::HostStep => "host-step",
            FaultChoice::Isolate => "isolate",
            FaultChoice::Latency => "latency",
            FaultChoice::ManagerCrash => "manager-crash",
            FaultChoice::Partition => "partition",
            FaultChoice::Pause => "pause",
            FaultChoice::Simplex => "simplex",
            FaultChoice::Stall => "stall",
            FaultChoice::StallElector => "stall-elector",
            FaultChoice::WatchCut => "watch-cut",
        }
    }
}
