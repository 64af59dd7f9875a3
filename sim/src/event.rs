//! The typed event stream.
//!
//! Simulated services and model code emit an [`Event`] at every state change that an invariant or
//! a report needs. The world stamps each with its index, true time, node and that node's wall
//! reading (a [`Record`]), hands it to the scenario's monitor synchronously, and folds it into the
//! trace hash. The vocabulary lives here, below the models, so that reports can read traces without
//! depending on the models.

use crate::fault::FaultKind;
use crate::short::Short;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Text of the busiest control-plane events (API writes and cloud IP changes, a third of a Cilium
/// run's events): kept inline up to 24 bytes, as kinds, object names, interface and client names
/// are, instead of one heap allocation per field per event. It serializes as the same text as a
/// `String`.
pub type Text = compact_str::CompactString;

/// How a process ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitStatus {
    /// It called exit with this code.
    Code { code: i32 },
    /// It was killed (crash, node crash): no cleanup ran.
    Killed,
}

/// Why an etcd key went away.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum DeleteCause {
    /// A client's delete (or txn delete); `client` is `host:pid`.
    Client { client: String },
    /// Its lease expired on the etcd node's clock.
    LeaseExpired { lease: i64 },
    /// Its lease was revoked by a client.
    LeaseRevoked { lease: i64, client: String },
}

/// Everything that can happen in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    // ---- the world ----
    /// A scheduled fault started (`id` is its position in the schedule).
    FaultStart {
        id: u32,
        dur_ms: u64,
        fault: FaultKind,
    },
    /// A fault with a duration ended (or was healed by the liveness phase).
    FaultEnd { id: u32 },
    /// Faults stop; the monitor now checks liveness.
    LivenessPhase,
    /// The node booted (`boot` counts from 1).
    NodeBoot { boot: u32 },
    /// The node crashed.
    NodeCrash,
    /// The node stopped being scheduled.
    NodePause,
    /// The node runs again.
    NodeResume,
    /// A process started.
    ProcessStart { pid: u32, name: String },
    /// A process ended.
    ProcessExit {
        pid: u32,
        name: String,
        status: ExitStatus,
    },
    /// A task was dropped silently (no cleanup ran).
    TaskDeath { pid: u32, task: String },
    /// A task finished normally (returned).
    TaskEnd { pid: u32, task: String },
    /// A task will not be polled until `until_ms` (true time).
    TaskStall {
        pid: u32,
        task: String,
        until_ms: u64,
    },
    /// The node's wall clock jumped.
    ClockStep { delta_ms: i64 },
    /// The node's wall clock drift changed.
    ClockDrift { ppm: i64 },
    /// The node's monotonic clock now runs at `(1 + ppm / 1e6)` times the true rate.
    MonoRate { ppm: i64 },

    // ---- the simulated etcd ----
    /// A key was created or updated (key and value shared with the store: an event costs no copy
    /// of them; `Arc`, so that events stay `Send` for monitors that hand them to other threads).
    EtcdPut {
        key: Arc<str>,
        value: Arc<str>,
        rev: i64,
        version: i64,
        lease: i64,
        client: String,
    },
    /// A key was deleted.
    EtcdDelete {
        key: Arc<str>,
        rev: i64,
        prev_value: Arc<str>,
        cause: DeleteCause,
    },
    /// A lease was granted.
    EtcdLeaseGrant {
        lease: i64,
        ttl_s: i64,
        client: String,
    },
    /// A lease expired on the etcd node's clock (its keys' deletions follow).
    EtcdLeaseExpire { lease: i64 },
    /// The store was compacted at `rev`.
    EtcdCompact { rev: i64, client: String },
    /// etcd came back after a crash; with `lease_ttl_reset` every lease got its full TTL again.
    EtcdRecover { lease_ttl_reset: bool },
    /// A request timed out at the client but was (or was not) applied.
    EtcdAmbiguous {
        op: String,
        applied: bool,
        client: String,
    },

    // ---- the simulated Kubernetes API server ----
    /// An object was created, updated (`part`: spec or status) or deleted.
    KubeWrite {
        kind: Text,
        name: Text,
        rv: u64,
        part: Text,
        client: Text,
    },
    /// A write based on a stale resourceVersion was rejected.
    KubeConflict {
        kind: Text,
        name: Text,
        expected_rv: u64,
        actual_rv: u64,
        client: Text,
    },

    /// The node lifecycle controller changed a node's `Ready` condition (ground truth).
    KubeNodeReady { node: String, ready: bool },

    // ---- the layer-2 segment ----
    /// The switch's entry for a service IP now points at `node` (it heard `via`: `garp` or `reply`).
    ArpEntry {
        ip: String,
        node: String,
        via: String,
    },

    // ---- the simulated cloud IP API ----
    /// A secondary IP was assigned to an instance's interface.
    CloudAssign {
        instance: Text,
        eni: Short,
        ip: Short,
        client: Text,
    },
    /// A secondary IP was unassigned.
    CloudUnassign {
        instance: Text,
        eni: Short,
        ip: Short,
        client: Text,
    },
    /// A request was applied but the caller got no answer.
    CloudAmbiguous { op: Text, client: Text },
    /// A request was refused (not applied) because its fencing token for `lock` was below the
    /// `highest` the cloud had seen (a check real EC2 does not have: `sim::cloud`'s module doc).
    CloudFenced {
        op: Text,
        client: Text,
        lock: Text,
        token: u64,
        highest: u64,
    },

    // ---- Cilium ENI IPAM ----
    // (Pod names and addresses are `Short`s, the agent's own type for them: these are most of a
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

    // ---- Calico (networking-calico's OpenStack driver) ----
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

    // ---- Neutron (the OpenStack side Calico reports to) ----
    /// Neutron recorded that the agent on `host` is alive (on Neutron's clock at receipt).
    NeutronAgentHeard { host: String },
    /// Neutron stored a port's status (`client`: the writer, `host:pid`).
    NeutronPortStatus {
        port: String,
        status: String,
        client: String,
    },

    // ---- MetalLB (memberlist, speakerlist, layer-2 announcer) ----
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

impl Event {
    /// The event's type name as it appears in the trace (`fault-start`, `calico-won`, ...).
    pub fn name(&self) -> &'static str {
        use Event::*;
        match self {
            FaultStart { .. } => "fault-start",
            FaultEnd { .. } => "fault-end",
            LivenessPhase => "liveness-phase",
            NodeBoot { .. } => "node-boot",
            NodeCrash => "node-crash",
            NodePause => "node-pause",
            NodeResume => "node-resume",
            ProcessStart { .. } => "process-start",
            ProcessExit { .. } => "process-exit",
            TaskDeath { .. } => "task-death",
            TaskEnd { .. } => "task-end",
            TaskStall { .. } => "task-stall",
            ClockStep { .. } => "clock-step",
            ClockDrift { .. } => "clock-drift",
            MonoRate { .. } => "mono-rate",
            EtcdPut { .. } => "etcd-put",
            EtcdDelete { .. } => "etcd-delete",
            EtcdLeaseGrant { .. } => "etcd-lease-grant",
            EtcdLeaseExpire { .. } => "etcd-lease-expire",
            EtcdCompact { .. } => "etcd-compact",
            EtcdRecover { .. } => "etcd-recover",
            EtcdAmbiguous { .. } => "etcd-ambiguous",
            KubeWrite { .. } => "kube-write",
            KubeConflict { .. } => "kube-conflict",
            CloudAssign { .. } => "cloud-assign",
            CloudUnassign { .. } => "cloud-unassign",
            CloudAmbiguous { .. } => "cloud-ambiguous",
            CloudFenced { .. } => "cloud-fenced",
            CiliumPodCreated { .. } => "cilium-pod-created",
            CiliumPodIp { .. } => "cilium-pod-ip",
            CiliumPodDeleted { .. } => "cilium-pod-deleted",
            CiliumAgentState { .. } => "cilium-agent-state",
            CiliumMark { .. } => "cilium-mark",
            CiliumAbort { .. } => "cilium-abort",
            CiliumRelease { .. } => "cilium-release",
            CiliumLeading { .. } => "cilium-leading",
            CiliumLeadershipLost { .. } => "cilium-leadership-lost",
            CiliumIpamStarted { .. } => "cilium-ipam-started",
            CalicoCampaign { .. } => "calico-campaign",
            CalicoWon { .. } => "calico-won",
            CalicoRefresh { .. } => "calico-refresh",
            CalicoLost { .. } => "calico-lost",
            CalicoStamp { .. } => "calico-stamp",
            CalicoDeadPidCleanup { .. } => "calico-dead-pid-cleanup",
            CalicoStepDown { .. } => "calico-step-down",
            CalicoElectorCrash { .. } => "calico-elector-crash",
            CalicoMasterOnly { .. } => "calico-master-only",
            CalicoStaleStamp { .. } => "calico-stale-stamp",
            CalicoWatcher { .. } => "calico-watcher",
            CalicoSnapshot { .. } => "calico-snapshot",
            CalicoAgentForward { .. } => "calico-agent-forward",
            CalicoStaleWarning { .. } => "calico-stale-warning",
            CalicoStaleSuppressed { .. } => "calico-stale-suppressed",
            CalicoUnparsableTime { .. } => "calico-unparsable-time",
            CalicoTaskCrash { .. } => "calico-task-crash",
            CalicoWatcherRaised { .. } => "calico-watcher-raised",
            CalicoWatchdogExit { .. } => "calico-watchdog-exit",
            CalicoResync { .. } => "calico-resync",
            CalicoPortWrite { .. } => "calico-port-write",
            NeutronAgentHeard { .. } => "neutron-agent-heard",
            NeutronPortStatus { .. } => "neutron-port-status",
            KubeNodeReady { .. } => "kube-node-ready",
            ArpEntry { .. } => "arp-entry",
            MlMember { .. } => "ml-member",
            MlJoin { .. } => "ml-join",
            SpeakerIps { .. } => "speaker-ips",
            L2Announce { .. } => "l2-announce",
            L2Withdraw { .. } => "l2-withdraw",
        }
    }
}

/// Index of a node in the world (in creation order).
pub type NodeIx = u16;

/// An event as the world saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the run's event stream, from 0.
    pub index: u64,
    /// True time, microseconds since the start of the run.
    pub t_us: u64,
    /// The node it happened on.
    pub node: NodeIx,
    /// That node's wall clock reading (see `clock`).
    pub local_us: i64,
    /// What happened.
    pub event: Event,
}

/// The typed records of a run, kept when its trace is (reports read them instead of the JSON).
#[derive(Clone, Debug)]
pub struct Recording {
    /// Node names, by index.
    pub nodes: Vec<String>,
    /// Every record, in order.
    pub records: Vec<Record>,
}

/// One line of the JSON-lines trace: a [`Record`] with the node's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceLine {
    /// Position in the event stream.
    pub i: u64,
    /// True time (µs).
    pub t_us: u64,
    /// Node name.
    pub node: String,
    /// The node's wall clock (µs relative to `clock::EPOCH_UNIX_US`).
    pub local_us: i64,
    /// The event.
    pub ev: Event,
}

/// One trace line by reference: what the world writes (as JSON) and hashes for each event.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TraceLineRef<'a> {
    /// Position in the event stream.
    pub i: u64,
    /// True time (µs).
    pub t_us: u64,
    /// Node name.
    pub node: &'a str,
    /// The node's wall clock (µs relative to `clock::EPOCH_UNIX_US`).
    pub local_us: i64,
    /// The event.
    pub ev: &'a Event,
}

impl TraceLine {
    /// The same line by reference (it serializes identically).
    pub fn as_ref(&self) -> TraceLineRef<'_> {
        TraceLineRef {
            i: self.i,
            t_us: self.t_us,
            node: &self.node,
            local_us: self.local_us,
            ev: &self.ev,
        }
    }
}

/// The trace hash: xxh3-64 over the canonical encoding of every trace line in order.
///
/// The canonical encoding of a line is its fields (the same data as its JSON line) in
/// [postcard](https://postcard.jamesmunns.com/wire-format)'s wire format, stable since postcard 1.0:
/// integers as varints, strings length-prefixed, the event's `type` tag as its name. Each line's
/// encoding ends where its schema says, so the concatenation identifies the sequence of lines.
/// Hashing this instead of the JSON text skips number formatting and string escaping on every
/// event (8 % of a Calico seed's instructions); a JSON trace file gives the same hash through
/// [`hash_json_trace`].
pub struct TraceHasher {
    hasher: xxhash_rust::xxh3::Xxh3,
    /// Encoded lines not yet folded in: the hash is of the concatenation, so lines are handed to
    /// the hasher in blocks (one update per line cost about as much as encoding the line).
    buf: Vec<u8>,
}

/// Bytes of encoded lines gathered before they are folded into the hash.
const HASH_BLOCK: usize = 4096;

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher {
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            buf: Vec::with_capacity(HASH_BLOCK + 512),
        }
    }
}

impl TraceHasher {
    /// Folds one line into the hash.
    pub fn add(&mut self, line: &TraceLineRef<'_>) {
        crate::wire::encode(line, &mut self.buf).expect("trace lines encode");
        if self.buf.len() >= HASH_BLOCK {
            self.hasher.update(&self.buf);
            self.buf.clear();
        }
    }

    /// The hash so far, as 16 hex digits.
    pub fn hex(&self) -> String {
        let mut h = self.hasher.clone();
        h.update(&self.buf);
        format!("{:016x}", h.digest())
    }
}

/// The trace hash of a JSON-lines trace (what `run --trace` writes): the run's own trace hash if
/// the file is intact. Errors name the first line that is not a trace line.
pub fn hash_json_trace(text: &str) -> Result<String, String> {
    let mut h = TraceHasher::default();
    for (n, line) in text.lines().enumerate() {
        let line: TraceLine =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        h.add(&line.as_ref());
    }
    Ok(h.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is of the lines' encodings end to end, however the hasher groups them into blocks,
    /// and reading it does not disturb it.
    #[test]
    fn the_trace_hash_is_xxh3_of_the_concatenated_lines() {
        let mut h = TraceHasher::default();
        let mut all = Vec::new();
        let empty = TraceHasher::default().hex();
        assert_eq!(empty, format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&[])));
        // Enough lines to fill several blocks, read part-way through.
        for i in 0..2_000u64 {
            let node = format!("node-{}", i % 7);
            let ev = if i % 3 == 0 {
                Event::LivenessPhase
            } else {
                Event::NodeBoot { boot: i as u32 }
            };
            let line = TraceLineRef {
                i,
                t_us: i * 1_000,
                node: &node,
                local_us: -(i as i64),
                ev: &ev,
            };
            crate::wire::encode(&line, &mut all).unwrap();
            h.add(&line);
            if i % 500 == 0 {
                let expect = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&all));
                assert_eq!(h.hex(), expect);
                assert_eq!(h.hex(), expect, "reading the hash leaves it as it was");
            }
        }
        assert!(all.len() > 3 * HASH_BLOCK);
        assert_eq!(
            h.hex(),
            format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&all))
        );
    }
}
