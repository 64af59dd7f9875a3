//! Calico's events (networking-calico's OpenStack driver and the Neutron side it reports to): what
//! the model emits and the Calico monitor and report read.
//!
//! They travel on the world's bus as [`sim::Event::System`] and serialize (in traces and in the
//! trace hash) exactly as they did when they were variants of `sim::Event`.

use serde::{Deserialize, Serialize};

/// Everything a Calico run reports besides the world's events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum CalicoEvent {
    /// The elector tries to create the election key.
    CalicoCampaign { id: String },
    /// The elector created the election key and is master.
    CalicoWon { id: String, lease: i64 },
    /// The elector refreshed its lease and key.
    CalicoRefresh { id: String },
    /// The elector stopped being master (`reason`: why), without deleting the key.
    CalicoLost { id: String, reason: String },
    /// The shared mastership stamp changed (`stamp_us` on the host's clock; 0 = cleared).
    CalicoStamp { stamp_us: i64 },
    /// The elector deleted a stale key naming a dead process on its own host.
    CalicoDeadPidCleanup { id: String, stale: String },
    /// The elector's cleanup ran (graceful stop or exit on an unexpected error).
    CalicoStepDown { id: String, deleted: bool },
    /// The elector hit an unexpected error; its process exits with status 1.
    CalicoElectorCrash { id: String, error: String },
    /// A master-only side effect (`worker`: which worker, `action`: what it did; `in_snapshot`:
    /// while replaying a snapshot, which a stopped watcher finishes).
    CalicoMasterOnly {
        pid: u32,
        worker: String,
        action: String,
        in_snapshot: bool,
    },
    /// `is_master()` answered false because the stamp was stale (logged as a warning upstream).
    CalicoStaleStamp { age_ms: i64 },
    /// A watcher worker started or stopped its master-only watch.
    CalicoWatcher { worker: String, running: bool },
    /// A status watcher loaded (`done` = false: started; true: finished) a snapshot of `keys` keys at `rev`.
    CalicoSnapshot {
        worker: String,
        keys: u32,
        rev: i64,
        done: bool,
    },
    /// The agent-status watcher forwarded a Felix report (the key's `rev`) to Neutron.
    CalicoAgentForward {
        host: String,
        rev: i64,
        in_snapshot: bool,
        time: String,
    },
    /// The stale-update WARNING was logged.
    CalicoStaleWarning {
        host: String,
        lag_ms: i64,
        in_snapshot: bool,
    },
    /// A stale report was seen but the rate limiter held the warning back.
    CalicoStaleSuppressed { host: String, lag_ms: i64 },
    /// A report's time could not be parsed ("could not parse"; skipped).
    CalicoUnparsableTime { host: String, time: String },
    /// A task died from an exception.
    CalicoTaskCrash {
        pid: u32,
        task: String,
        error: String,
    },
    /// A status-watcher greenlet ended on an exception it does not catch (an etcd error other than
    /// a connection failure); the master-only loop replaces it at its next poll.
    CalicoWatcherRaised {
        pid: u32,
        task: String,
        error: String,
    },
    /// The watchdog found a registered task dead and exits the process with status 1.
    CalicoWatchdogExit { pid: u32, task: String },
    /// A resync cycle ran.
    CalicoResync { pid: u32, keys: u32 },
    /// A port-status write to Neutron (`ok` = the DB accepted it).
    CalicoPortWrite {
        port: String,
        status: String,
        ok: bool,
    },
    /// Neutron recorded that the agent on `host` is alive (on Neutron's clock at receipt).
    NeutronAgentHeard { host: String },
    /// Neutron stored a port's status (`client`: the writer, `host:pid`).
    NeutronPortStatus {
        port: String,
        status: String,
        client: String,
    },
}

sim::system_event!(CalicoEvent);
