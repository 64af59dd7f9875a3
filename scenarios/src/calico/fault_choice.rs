//! The kinds of fault a Calico seed may enable (swarm testing: each seed turns a subset on and
//! draws its faults from it). Declared in the order of their names, so that sorting a set of them
//! sorts by name, as the draws have always done (the findings' pinned seeds depend on it).

use crate::faults::ChoiceFacts;
use serde::{Deserialize, Serialize};
use strum::EnumIter;

/// One kind of fault a Calico scenario draws (what it hits is chosen when it is drawn).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, EnumIter,
)]
#[serde(rename_all = "kebab-case")]
pub enum FaultChoice {
    /// `broker-outage`: the message broker (RabbitMQ) refuses every connection and publish.
    BrokerOutage,
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
    /// `etcd-host-crash`.
    EtcdHostCrash,
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
            FaultChoice::BrokerOutage => "broker-outage",
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
            FaultChoice::EtcdHostCrash => "etcd-host-crash",
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

impl FaultChoice {
    /// Its catalog entry: the kinds it draws, its causes, whether upstream code produces it
    /// (networking-calico at projectcalico/calico 87c15906, folder networking-calico/networking_calico/).
    pub fn facts(self) -> ChoiceFacts {
        use sim::catalog as k;
        use FaultChoice::*;
        match self {
            ComputeCrash | HostCrash => ChoiceFacts::real(&[&k::CRASH], &[]),
            ComputeIsolate | Isolate => ChoiceFacts::real(&[&k::ISOLATE], &[]),
            ComputePause | Pause => ChoiceFacts::real(&[&k::PAUSE], &[]),
            ComputeStep | HostStep | EtcdStep => ChoiceFacts::real(&[&k::CLOCK_STEP], &[]),
            DriftChange => ChoiceFacts::real(&[&k::DRIFT], &[]),
            DbSlow => ChoiceFacts::real(
                &[&k::SERVICE_SLOW],
                &["the Neutron database (MySQL or Galera) on a slow disk or under lock contention"],
            ),
            BrokerOutage => ChoiceFacts::real(
                &[&k::SERVICE_UNAVAILABLE],
                &["RabbitMQ restarted or upgraded under neutron-server (a clustered node waits up \
                   to 5 minutes for its peers before it serves)",
                  "a RabbitMQ memory or disk alarm blocking every publishing connection until \
                   it clears",
                  "a RabbitMQ node pausing itself (`pause_minority`) while partitioned from its \
                   cluster, closing its clients' connections"],
            )
            .noted(
                "networking-calico's agent-status watcher casts each Felix report on its own \
                 greenlet (mech_calico.py `on_felix_alive`, 730-740), and oslo.messaging retries \
                 the publish for ever (`retry=None`), so the watcher blocks for the outage",
            ),
            DbUnavailable => ChoiceFacts::real(
                &[&k::SERVICE_UNAVAILABLE],
                &["a Galera failover or a MySQL restart under Neutron"],
            ),
            // The watcher greenlet (`agent-status-watcher`, `endpoint-status-watcher`): upstream
            // replaces it when it dies (mech_calico.py line 710).
            DeathAgentStatusWatcher | DeathEndpointStatusWatcher => ChoiceFacts::real(
                &[&k::TASK_DEATH],
                &["a timeout or etcd error of the status watcher's status or snapshot read ends \
                   its greenlet (etcdutils.py `EtcdWatcher.start`, line 150)"],
            ),
            // The master-only loop itself (`agent-status`, `endpoint-status`).
            DeathAgentStatus | DeathEndpointStatus => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "`watch_status_updates` (mech_calico.py 677-728) has nothing in its loop body \
                 that raises or returns, and its `@logging_exceptions` would log a death",
            ),
            DeathCompaction => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "`do_periodic_compaction` (mech_calico.py 1324-1345) catches and logs every \
                 exception of its check and loops on",
            ),
            DeathElector => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "the elector's `_run` (election.py 116-151) logs any unexpected exception, \
                 steps down and exits the process (`sys.exit(1)`); nothing ends it silently",
            ),
            DeathAny => ChoiceFacts::hypothetical(
                &[&k::TASK_DEATH],
                "draws any worker task, most of whose loops catch everything (the port writers, \
                 mech_calico.py 846-852; compaction; the status loops)",
            ),
            EtcdAmbiguous => ChoiceFacts::real(&[&k::SERVICE_AMBIGUOUS], &[]),
            EtcdGarbled => ChoiceFacts::real(
                &[&k::SERVICE_GARBLED],
                &["a proxy or load balancer in front of etcd's gateway answering with an error \
                   page the client cannot decode"],
            ),
            EtcdRestart => ChoiceFacts::real(
                &[&k::SERVICE_RESTART],
                &["etcd's process restarted on a host that stays up: a rolling upgrade or \
                   `systemctl restart`, or the OOM killer followed by systemd's `Restart=`; the \
                   host's kernel closes every client connection at once (etcd3gw raises \
                   ConnectionFailedError on each request in flight) and refuses new ones until \
                   etcd listens again (a restart takes seconds: WAL replay and an election)"],
            ),
            EtcdHostCrash => ChoiceFacts::real(
                &[&k::CRASH],
                &["etcd's host crashes (kernel panic, power loss, VM reset): nothing closes the \
                   connections, so a request etcd held is never answered and fails only at \
                   etcd_timeout, and a request sent during the reboot is reset by the rebooted \
                   host"],
            ),
            EtcdSlow => ChoiceFacts::real(&[&k::SERVICE_SLOW], &[]),
            EtcdUnavailable => ChoiceFacts::real(&[&k::SERVICE_UNAVAILABLE], &[]),
            Flapping => ChoiceFacts::real(
                &[&k::PARTITION],
                &["a flapping link or switch port (repeated short cuts between a host and etcd)"],
            ),
            GracefulRestart => ChoiceFacts::real(&[&k::SERVICE_RESTART], &[]),
            Latency => ChoiceFacts::real(&[&k::LATENCY], &[]),
            ManagerCrash => ChoiceFacts::real(&[&k::PROCESS_CRASH], &[]),
            Partition => ChoiceFacts::real(&[&k::PARTITION], &[]),
            Simplex | WatchCut => ChoiceFacts::real(&[&k::SIMPLEX], &[]),
            Stall | StallElector => ChoiceFacts::real(
                &[&k::TASK_STALL],
                &["a greenthread that does not yield to eventlet's hub (a blocking call, a long \
                   CPU-bound loop) starves the others"],
            ),
        }
    }
}
