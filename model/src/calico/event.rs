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
    CalicoCampaign {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
    },
    /// The elector created the election key and is master.
    CalicoWon {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
        /// The etcd lease the key was created with (granted with the election TTL).
        lease: i64,
    },
    /// The elector refreshed its lease and key.
    CalicoRefresh {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
    },
    /// The elector's refresh got the answer that ends its mastership (`reason`: which), emitted
    /// as the answer arrives, before the stamp is cleared; the key is not deleted.
    CalicoLost {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
        /// `key changed or deleted` (the guarded refresh failed its compare) or `refresh failed:
        /// ERROR` (the keep-alive or the refresh returned an etcd error).
        reason: String,
    },
    /// The shared mastership stamp changed (`stamp_us` on the host's clock; 0 = cleared).
    CalicoStamp {
        /// The new stamp (µs): Unix time from the wall clock, or the monotonic clock plus 1 with
        /// `calico-monotonic-stamp`; 0 when cleared.
        stamp_us: i64,
    },
    /// The elector deleted a stale key naming a dead process on its own host.
    CalicoDeadPidCleanup {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
        /// The deleted key's value: the dead master's `host:pid`.
        stale: String,
    },
    /// The elector's cleanup ran (graceful stop or exit on an unexpected error).
    CalicoStepDown {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
        /// Whether its guarded delete removed the key (false: not ours any more, or an error).
        deleted: bool,
    },
    /// The elector hit an unexpected error; its process exits with status 1.
    CalicoElectorCrash {
        /// The elector's identity, `host:pid` of its neutron-server worker (the election key's value).
        id: String,
        /// The error's `Debug` text (an error that is not an etcd exception: `Garbled`).
        error: String,
    },
    /// A master-only side effect (`worker`: which worker, `action`: what it did; `in_snapshot`:
    /// while replaying a snapshot, which a stopped watcher finishes).
    CalicoMasterOnly {
        /// The neutron-server worker process that did it.
        pid: u32,
        /// `agent-status`, `endpoint-status` or `manager` (the compaction check).
        worker: String,
        /// `queue-port-status`, `report-agent-alive` or `compaction-check`.
        action: String,
        /// Whether it happened while the watcher replayed a snapshot.
        in_snapshot: bool,
    },
    /// `is_master()` answered yes in a worker process (each master-only loop asks it before its
    /// work: every 5 s poll, each compaction check, each port-status write).
    CalicoIsMaster {
        /// The neutron-server worker process that asked.
        pid: u32,
    },
    /// `is_master()` answered false because the stamp was stale (logged as a warning upstream).
    CalicoStaleStamp {
        /// The stamp's age on the checking worker's clock (ms; at least `MASTER_TIMEOUT`).
        age_ms: i64,
    },
    /// A watcher worker started or stopped its master-only watch.
    CalicoWatcher {
        /// `agent-status` or `endpoint-status`.
        worker: String,
        /// True: a watcher greenlet was started; false: it was stopped (no longer master, or it
        /// died).
        running: bool,
    },
    /// A status watcher loaded (`done` = false: started; true: finished) a snapshot of `keys` keys at `rev`.
    CalicoSnapshot {
        /// `agent-status` or `endpoint-status`.
        worker: String,
        /// Keys under the watched prefix in the snapshot.
        keys: u32,
        /// The etcd revision the snapshot was read at (the watch then starts at `rev + 1`).
        rev: i64,
        /// False before the keys are handled, true after.
        done: bool,
        /// The `StatusWatcher` instance within its worker process (1, 2, ...: a stopped one may
        /// still run, blocked on a cast or a read, beside its successor).
        watcher: u32,
    },
    /// A stopped status watcher gave up its snapshot before handling every key (fix
    /// `calico-snapshot-checks-stopped`): its replay ends here, with no `done` event.
    CalicoSnapshotDropped {
        /// `agent-status` or `endpoint-status`.
        worker: String,
        /// Keys of the snapshot handled before it saw `_stopped`.
        handled: u32,
        /// The `StatusWatcher` instance within its worker process (1, 2, ...: a stopped one may
        /// still run, blocked on a cast or a read, beside its successor).
        watcher: u32,
    },
    /// The agent-status watcher forwarded a Felix report (the key's `rev`) to Neutron.
    CalicoAgentForward {
        /// The Felix host the report is about.
        host: String,
        /// The status key's `mod_revision`.
        rev: i64,
        /// Whether it was forwarded while replaying a snapshot.
        in_snapshot: bool,
        /// The report's `time` as Felix wrote it (empty if it had none).
        time: String,
        /// The `StatusWatcher` instance within its worker process (1, 2, ...: a stopped one may
        /// still run, blocked on a cast or a read, beside its successor).
        watcher: u32,
    },
    /// A report's RPC cast returned only after the broker had refused it or not answered
    /// (`publishes`: how many publishes it took), the watcher greenlet blocked meanwhile.
    CalicoCastDelayed {
        /// The watcher worker that cast (`agent-status`).
        worker: String,
        /// The Felix host the report is about.
        host: String,
        /// How many times it was published (the first and the retries after reconnecting).
        publishes: u32,
    },
    /// The stale-update WARNING was logged.
    CalicoStaleWarning {
        /// The Felix host whose report was stale.
        host: String,
        /// The report's age: the watcher host's Unix wall time minus the report's `time` (ms;
        /// above `STALE_THRESHOLD_US`).
        lag_ms: i64,
        /// Whether it was logged while replaying a snapshot.
        in_snapshot: bool,
        /// The `StatusWatcher` instance within its worker process (1, 2, ...: a stopped one may
        /// still run, blocked on a cast or a read, beside its successor).
        watcher: u32,
    },
    /// A stale report was seen but the rate limiter held the warning back.
    CalicoStaleSuppressed {
        /// The Felix host whose report was stale.
        host: String,
        /// The report's age, as in [`CalicoEvent::CalicoStaleWarning`] (ms).
        lag_ms: i64,
    },
    /// A report's time could not be parsed ("could not parse"; skipped).
    CalicoUnparsableTime {
        /// The Felix host whose report it was.
        host: String,
        /// The `time` text that did not parse.
        time: String,
    },
    /// A task died from an exception.
    CalicoTaskCrash {
        /// The neutron-server worker process.
        pid: u32,
        /// The task that died (a status watcher greenlet).
        task: String,
        /// The exception's text.
        error: String,
        /// The `StatusWatcher` instance within its worker process.
        watcher: u32,
    },
    /// A status-watcher greenlet ended on an exception it does not catch (an etcd error other than
    /// a connection failure); the master-only loop replaces it at its next poll.
    CalicoWatcherRaised {
        /// The neutron-server worker process.
        pid: u32,
        /// The greenlet that ended: a status watcher or its watch canceller.
        task: String,
        /// The exception (an etcd error's `Debug` text, or `ConnectionTimeoutError`).
        error: String,
        /// The `StatusWatcher` instance within its worker process whose greenlet (or whose
        /// watch's canceller) ended.
        watcher: u32,
    },
    /// The watchdog found a registered task dead and exits the process with status 1.
    CalicoWatchdogExit {
        /// The process that exits.
        pid: u32,
        /// The registered task found dead.
        task: String,
    },
    /// The startup resync ended (`ok` false: it failed and is abandoned, as upstream's).
    CalicoResync {
        /// The neutron-server worker process.
        pid: u32,
        /// Keys read from etcd (those read before a failure).
        keys: u32,
        /// Whether it succeeded.
        ok: bool,
        /// The step that raised, and its error (None: it succeeded).
        failed: Option<String>,
    },
    /// A port-status writer sends a write to Neutron: the status it read from its cache just
    /// before. `write` numbers the writes of one process (Neutron's record of the write, if it
    /// commits, carries the same number).
    CalicoPortWriteSent {
        /// The Neutron port ID.
        port: String,
        /// The Neutron status sent: `ACTIVE`, `DOWN` or `ERROR`.
        status: String,
        /// The writing worker process (`host:pid`).
        client: String,
        /// The write's number within its process.
        write: u64,
    },
    /// A port-status write to Neutron (`ok` = the DB accepted it).
    CalicoPortWrite {
        /// The Neutron port ID.
        port: String,
        /// The Neutron status written: `ACTIVE`, `DOWN` or `ERROR`.
        status: String,
        /// Whether Neutron answered that the write was stored.
        ok: bool,
    },
    /// Neutron recorded that the agent on `host` is alive (on Neutron's clock at receipt).
    NeutronAgentHeard {
        /// The Felix host reported alive.
        host: String,
    },
    /// Neutron stored a port's status (`client`: the writer, `host:pid`).
    NeutronPortStatus {
        /// The Neutron port ID.
        port: String,
        /// The status stored: `ACTIVE`, `DOWN` or `ERROR`.
        status: String,
        /// The writing worker process (`host:pid`).
        client: String,
        /// The write's number within that process (see `CalicoPortWriteSent`).
        write: u64,
    },
    /// ML2's `update_port_status` read the port with the status it was to store already, and
    /// wrote nothing (see `ml2`).
    NeutronPortUnchanged {
        /// The Neutron port ID.
        port: String,
        /// The writing worker process (`host:pid`).
        client: String,
        /// The write's number within that process (see `CalicoPortWriteSent`).
        write: u64,
        /// The row's revision it read (the number of statuses committed for the port before).
        revision: u64,
    },
    /// Neutron rolled back a port-status write whose client had stopped waiting before it could
    /// commit (see `neutron`'s module documentation).
    NeutronPortRolledBack {
        /// The Neutron port ID.
        port: String,
        /// The writing worker process (`host:pid`).
        client: String,
        /// The write's number within that process.
        write: u64,
    },
}

sim::system_event!(CalicoEvent);
