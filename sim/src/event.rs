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
use std::any::Any;
use std::fmt::Debug;
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
    Code {
        /// The exit code the process passed.
        code: i32,
    },
    /// It was killed (crash, node crash): no cleanup ran.
    Killed,
}

/// Why an etcd key went away.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum DeleteCause {
    /// A client's delete (or txn delete); `client` is `host:pid`.
    Client {
        /// The deleting process (`host:pid`).
        client: String,
    },
    /// Its lease expired on the etcd node's clock.
    LeaseExpired {
        /// ID of the lease that expired.
        lease: i64,
    },
    /// Its lease was revoked by a client.
    LeaseRevoked {
        /// ID of the revoked lease.
        lease: i64,
        /// The revoking process (`host:pid`).
        client: String,
    },
}

/// An API object's content as a write left it, as JSON (a typed part is serialized): the
/// `object` of a [`Event::KubeWrite`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubeObject {
    /// The object's spec.
    pub spec: serde_json::Value,
    /// The object's status.
    pub status: serde_json::Value,
}

/// Everything that can happen in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    // ---- the world ----
    /// A scheduled fault started (`id` is its position in the schedule).
    /// Recorded on the first node the fault names.
    FaultStart {
        /// The fault's position in the run's schedule, from 0.
        id: u32,
        /// Its scheduled duration (ms); 0 for an instantaneous fault.
        dur_ms: u64,
        /// What the fault does.
        fault: FaultKind,
    },
    /// A fault with a duration ended (or was healed by the liveness phase). Recorded on the first
    /// node the fault names, before the effects of its end (a reboot, a resume).
    FaultEnd {
        /// The ending fault's position in the schedule (as in its `FaultStart`).
        id: u32,
    },
    /// Faults stop; the monitor now checks liveness.
    LivenessPhase,
    /// The node booted (`boot` counts from 1).
    NodeBoot {
        /// How many times the node has booted, this boot included (1: the first).
        boot: u32,
    },
    /// The node crashed.
    NodeCrash,
    /// The node stopped being scheduled.
    NodePause,
    /// The node runs again.
    NodeResume,
    /// A process started.
    ProcessStart {
        /// Its process ID, unique on the node across boots (the first is 1000).
        pid: u32,
        /// The process's name (`etcd`, `kube-apiserver`, a model's daemon, ...).
        name: String,
    },
    /// A process ended.
    ProcessExit {
        /// Its process ID.
        pid: u32,
        /// The process's name.
        name: String,
        /// How it ended.
        status: ExitStatus,
    },
    /// A task was dropped silently (no cleanup ran): a `TaskDeath` fault.
    TaskDeath {
        /// The process the task belonged to.
        pid: u32,
        /// The task's name, as its process spawned it.
        task: String,
    },
    /// A task finished normally (returned).
    TaskEnd {
        /// The process the task belongs to.
        pid: u32,
        /// The task's name, as its process spawned it.
        task: String,
    },
    /// A task will not be polled until `until_ms` (true time): a `TaskStall` fault.
    TaskStall {
        /// The process the task belongs to.
        pid: u32,
        /// The task's name, as its process spawned it.
        task: String,
        /// True time (ms since the start of the run) at which it is polled again.
        until_ms: u64,
    },
    /// The node's wall clock jumped.
    ClockStep {
        /// Size of the jump (ms; negative: backward).
        delta_ms: i64,
    },
    /// The node's wall clock drift changed.
    ClockDrift {
        /// The drift now in force (ppm of true time; 0 when a `Drift` fault ends).
        ppm: i64,
    },
    /// The node's monotonic clock now runs at `(1 + ppm / 1e6)` times the true rate.
    MonoRate {
        /// The rate offset now in force (ppm; a rate below [`crate::clock::MIN_MONO_RATE_PPM`]
        /// is raised to it).
        ppm: i64,
    },

    // ---- the simulated etcd ----
    /// A key was created or updated (key and value shared with the store: an event costs no copy
    /// of them; `Arc`, so that events stay `Send` for monitors that hand them to other threads).
    EtcdPut {
        /// The key written.
        key: Arc<str>,
        /// Its new value.
        value: Arc<str>,
        /// The key's new `mod_revision` (the revision of the transaction that wrote it).
        rev: i64,
        /// The key's new version (1: created).
        version: i64,
        /// The lease the key is attached to (0: none).
        lease: i64,
        /// The writing process (`host:pid`).
        client: String,
    },
    /// A key was deleted.
    EtcdDelete {
        /// The key deleted.
        key: Arc<str>,
        /// The revision of the deletion.
        rev: i64,
        /// The value the key had before.
        prev_value: Arc<str>,
        /// Who or what deleted it.
        cause: DeleteCause,
    },
    /// A lease was granted.
    EtcdLeaseGrant {
        /// The new lease's ID.
        lease: i64,
        /// The TTL granted (s): the one asked for, raised to the server's minimum.
        ttl_s: i64,
        /// The process that asked (`host:pid`).
        client: String,
    },
    /// A lease expired on the etcd node's clock (its keys' deletions follow).
    EtcdLeaseExpire {
        /// ID of the expired lease.
        lease: i64,
    },
    /// The store was compacted at `rev`.
    EtcdCompact {
        /// The revision compacted up to: older versions are unreadable.
        rev: i64,
        /// The process that asked (`host:pid`).
        client: String,
    },
    /// etcd came back after a crash; with `lease_ttl_reset` every lease got its full TTL again.
    EtcdRecover {
        /// Whether every lease got its full TTL plus the election timeout from now
        /// (`EtcdConfig::lease_ttl_reset_on_restart`).
        lease_ttl_reset: bool,
    },
    /// A request timed out at the client but was (or was not) applied.
    EtcdAmbiguous {
        /// The request (`range`, `txn`, `lease-grant`, `lease-keepalive`, `lease-revoke`,
        /// `lease-ttl`, `compact`, `status` or `watch`).
        op: String,
        /// Whether the server applied it (before or after the client's timeout).
        applied: bool,
        /// The process whose request it was (`host:pid`).
        client: String,
    },

    // ---- the simulated Kubernetes API server ----
    /// An object was created, updated (`part`: spec or status) or deleted.
    KubeWrite {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
        /// The object's new resourceVersion (0 for a delete).
        rv: u64,
        /// What was written: `create`, `spec`, `status` or `delete`.
        part: Text,
        /// The writing process (`host:pid`; the controller manager's for the node lifecycle
        /// controller's status writes to Nodes and Endpoints).
        client: Text,
        /// The object as the write left it, for the kinds the server was asked to record
        /// (`Kube::record_objects`): what a monitor reads as ground truth (a Lease's holder, say).
        /// None for a delete and for other kinds (absent from the JSON trace then).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        object: Option<Arc<KubeObject>>,
    },
    /// A write based on a stale resourceVersion was rejected.
    KubeConflict {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
        /// The resourceVersion the writer based its update on.
        expected_rv: u64,
        /// The object's resourceVersion in the store.
        actual_rv: u64,
        /// The writing process (`host:pid`).
        client: Text,
    },

    /// A leader elector ([`crate::leaderelection::LeaderElector`]) started leading: client-go's
    /// `OnStartedLeading` is called; leader-only work may run from here.
    LeaderStarted {
        /// The Lease's name.
        lock: Text,
        /// The elector's identity (its `holderIdentity`).
        identity: Text,
    },
    /// A leader elector stopped leading: the context `OnStartedLeading` received is cancelled
    /// (a renewal round failed, or the elector was stopped).
    LeaderStopped {
        /// The Lease's name.
        lock: Text,
        /// The elector's identity.
        identity: Text,
    },

    /// The node lifecycle controller changed a node's `Ready` condition (ground truth).
    KubeNodeReady {
        /// The Node object's name.
        node: String,
        /// The condition now: whether the controller saw the node's Lease renewed within its grace
        /// period.
        ready: bool,
    },

    // ---- the layer-2 segment ----
    /// The router's entry for a service IP now caches `node`'s address (it heard `via`: `garp` or
    /// `reply`).
    ArpEntry {
        /// The service IP (dotted).
        ip: String,
        /// The node whose frame the switch heard.
        node: String,
        /// The frame: `garp` (a gratuitous ARP) or `reply` (an answer to the router's request).
        via: String,
    },

    /// The router's neighbour entry for a service IP changed state (ground truth of where its
    /// traffic goes: to `node` while the state is valid, nowhere otherwise).
    Neighbour {
        /// The service IP (dotted).
        ip: String,
        /// The entry's new state.
        state: crate::neigh::Nud,
        /// The cached address's node, if any.
        node: Option<String>,
    },

    // ---- the simulated cloud IP API ----
    /// A secondary IP was assigned to an instance's interface.
    CloudAssign {
        /// The instance (Kubernetes node name).
        instance: Text,
        /// The interface (`eni-0`, ...).
        eni: Short,
        /// The IP assigned (dotted).
        ip: Short,
        /// The calling process (`host:pid`).
        client: Text,
    },
    /// A secondary IP was unassigned.
    CloudUnassign {
        /// The instance (Kubernetes node name).
        instance: Text,
        /// The interface that held the IP.
        eni: Short,
        /// The IP released (dotted), back in the subnet.
        ip: Short,
        /// The calling process (`host:pid`).
        client: Text,
    },
    /// A request was refused with `RequestLimitExceeded` (its API's token bucket was empty).
    CloudThrottled {
        /// The request: `assign`, `unassign` or `describe`.
        op: Text,
        /// The calling process (`host:pid`).
        client: Text,
    },
    /// A client's SDK got a retryable error on attempt `attempt` of an operation, and retries
    /// after `delay_ms`, or gives up (`None`: attempts or retry quota spent).
    CloudRetry {
        /// The request: `assign`, `unassign` or `describe`.
        op: Text,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The class of its error.
        cause: crate::cloud::sdk::RetryCause,
        /// The delay before the next attempt, if there is one.
        delay_ms: Option<u64>,
    },
    /// A request was answered with a transient server error (`InternalError`), not applied.
    CloudInternalError {
        /// The request: `assign`, `unassign` or `describe`.
        op: Text,
        /// The calling process (`host:pid`).
        client: Text,
    },
    /// A request was applied but the caller got no answer.
    CloudAmbiguous {
        /// The request: `assign`, `unassign` or `describe`.
        op: Text,
        /// The calling process (`host:pid`).
        client: Text,
    },
    /// A request was refused (not applied) because its fencing token for `lock` was below the
    /// `highest` the cloud had seen (a check real EC2 does not have: `sim::cloud`'s module doc).
    CloudFenced {
        /// The request: `assign`, `unassign` or `describe`.
        op: Text,
        /// The calling process (`host:pid`).
        client: Text,
        /// The lock the fence names (a Lease's name).
        lock: Text,
        /// The request's token.
        token: u64,
        /// The highest token the cloud had seen for `lock`.
        highest: u64,
    },

    // ---- the systems under test ----
    /// An event of a system under test: its type lives with the system (see [`SystemEvent`]).
    /// It is written and hashed exactly as the system's own type serializes (untagged here), so
    /// a system's events read like the world's in a trace: `{"type": "calico-won", ...}`.
    #[serde(untagged)]
    System(Ext),
}

/// What a system's event type must be to travel on the bus: comparable, printable, shareable
/// between threads, and serializable (as an internally tagged enum, `#[serde(tag = "type",
/// rename_all = "kebab-case")]`, so that its trace lines look like the world's). Every such type
/// is one: a system declares an enum and converts it into an [`Event`] with
/// [`system_event!`](crate::system_event).
pub trait SystemEvent: Any + Debug + Send + Sync + erased_serde::Serialize {
    /// Itself, for downcasting.
    fn as_any(&self) -> &dyn Any;
    /// Equality with another system event (false across types).
    fn eq_dyn(&self, other: &dyn SystemEvent) -> bool;
}

impl<T: Any + Debug + PartialEq + Send + Sync + Serialize> SystemEvent for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn eq_dyn(&self, other: &dyn SystemEvent) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// A system's event on the bus (shared: records are cloned into kept traces without copying it).
#[derive(Clone, Debug)]
pub struct Ext(Arc<dyn SystemEvent>);

impl Ext {
    /// Wraps a system's event.
    pub fn new<T: SystemEvent>(event: T) -> Ext {
        Ext(Arc::new(event))
    }

    /// The event, if it is of type `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl PartialEq for Ext {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(&*other.0)
    }
}

impl Serialize for Ext {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        erased_serde::serialize(&*self.0, s)
    }
}

/// A system event cannot be read back without knowing its type: [`Event`]'s own deserializer
/// reads the world's events, and a trace with system events is read with
/// [`hash_json_trace`]'s decoders.
impl<'de> Deserialize<'de> for Ext {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "not a world event (a system's event needs its system's decoder)",
        ))
    }
}

impl Event {
    /// The system event of type `T` this is, if it is one.
    pub fn system<T: 'static>(&self) -> Option<&T> {
        match self {
            Event::System(e) => e.get(),
            _ => None,
        }
    }
}

/// Declares that a type is a system's event: `sim::system_event!(CalicoEvent);` lets model code
/// emit it (`proc.emit(CalicoEvent::CalicoWon { .. })`) and monitors read it back
/// (`rec.event.system::<CalicoEvent>()`).
#[macro_export]
macro_rules! system_event {
    ($t:ty) => {
        impl From<$t> for $crate::event::Event {
            fn from(e: $t) -> Self {
                $crate::event::Event::System($crate::event::Ext::new(e))
            }
        }
    };
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
        let buf = std::mem::take(&mut self.buf);
        self.buf = postcard::to_extend(line, buf).expect("trace lines encode");
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

/// Reads a system's event of type `T` from its JSON (a system's decoder for [`parse_trace_line`]).
pub fn decode<T: serde::de::DeserializeOwned + Into<Event>>(
    v: &serde_json::Value,
) -> Option<Event> {
    serde_json::from_value::<T>(v.clone()).ok().map(Into::into)
}

/// A trace line as JSON, its event not yet read.
#[derive(Deserialize)]
struct RawLine {
    i: u64,
    t_us: u64,
    node: String,
    local_us: i64,
    ev: serde_json::Value,
}

/// Reads one line of a JSON-lines trace. The world's events are read here; `decode` reads the
/// systems' (a registry's decoders; a system's event type cannot be guessed from its JSON).
pub fn parse_trace_line(
    text: &str,
    decode: &dyn Fn(&serde_json::Value) -> Option<Event>,
) -> Result<TraceLine, String> {
    let raw: RawLine = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let ev = match serde_json::from_value::<Event>(raw.ev.clone()) {
        Ok(ev) => ev,
        Err(_) => decode(&raw.ev).ok_or_else(|| {
            format!(
                "unknown event {}",
                raw.ev.get("type").unwrap_or(&serde_json::Value::Null)
            )
        })?,
    };
    Ok(TraceLine {
        i: raw.i,
        t_us: raw.t_us,
        node: raw.node,
        local_us: raw.local_us,
        ev,
    })
}

/// The trace hash of a JSON-lines trace (what `run --trace` writes): the run's own trace hash if
/// the file is intact. Errors name the first line that is not a trace line.
pub fn hash_json_trace(
    text: &str,
    decode: &dyn Fn(&serde_json::Value) -> Option<Event>,
) -> Result<String, String> {
    let mut h = TraceHasher::default();
    for (n, line) in text.lines().enumerate() {
        let line = parse_trace_line(line, decode).map_err(|e| format!("line {}: {e}", n + 1))?;
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
            all.extend(postcard::to_allocvec(&line).unwrap());
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
