//! The oracle. It reads ground truth only: etcd's record of who created the lock key at which
//! revision (the world's `etcd-put` events) and the storage's record of the writes it took (the
//! model's `storage-write`). It calls no model function; the one model item it names is the
//! event type it reads.
//!
//! - `no-split-brain-write` (safety): the storage never takes a write from a leader older than
//!   one whose write it already took (epochs are etcd's creation revisions of the key).
//! - `writes-resume` (liveness): after faults stop, a write is taken within [`WRITES_BOUND_US`].

use super::model::{LockEvent, LOCK_KEY, TTL_S};
use scenarios::invariant::{Breach, Invariant};
use sim::event::{Event, Record};
use sim::{Failure, Kind, Measured, Monitor, NodeIx};
use std::collections::{BTreeMap, BTreeSet};

/// After faults stop, a write must be taken within: the old lease's TTL (its holder may be gone),
/// a keep-alive period, an etcd request timeout and two write periods, with a TTL to spare.
pub const WRITES_BOUND_US: u64 = (3 * TTL_S as u64 + 5 + 2) * 1_000_000;

/// Writes land in leadership order.
pub const NO_SPLIT_BRAIN_WRITE: Invariant = Invariant::safety(
    "no-split-brain-write",
    "the storage never takes a write from a leader older than one whose write it already took (epochs: etcd's creation revisions of the lock key)",
)
.measure(
    Breach::Occurs,
    "time since the storage took the newer leader's write",
);
/// Writes resume after faults stop.
pub const WRITES_RESUME: Invariant = Invariant::liveness(
    "writes-resume",
    "3 TTLs + an etcd request timeout + two write periods (25 s)",
    "after faults stop, the storage takes a write",
)
.bound_us(WRITES_BOUND_US)
.measure(Breach::Exceeds, "time after faults stopped without a write");
/// The fenced lock's invariants.
pub static INVARIANTS: &[Invariant] = &[NO_SPLIT_BRAIN_WRITE, WRITES_RESUME];

/// The coverage points: the lock changed hands, a write was taken.
pub const COVERAGE: &[&str] = &["lock-changed-hands", "write-accepted"];

/// The fenced lock's monitor.
pub struct FencedMonitor {
    /// Node names, by index.
    names: Vec<String>,
    /// Replica -> the revision at which it last created the lock key (etcd's record).
    epoch: BTreeMap<String, i64>,
    /// The newest epoch whose write the storage took, its writer, and when it took it.
    newest: Option<(i64, String, u64)>,
    /// When a write must have been taken by (set when faults stop).
    deadline: Option<u64>,
    reached: BTreeSet<&'static str>,
}

impl FencedMonitor {
    /// A monitor for a run with these nodes.
    pub fn new(names: Vec<String>) -> FencedMonitor {
        FencedMonitor {
            names,
            epoch: BTreeMap::new(),
            newest: None,
            deadline: None,
            reached: BTreeSet::new(),
        }
    }

    fn on_write(&mut self, writer: &str, token: Option<i64>, t: u64) -> Option<Failure> {
        self.reached.insert("write-accepted");
        self.deadline = None;
        let node = self
            .names
            .iter()
            .position(|n| n == writer)
            .map(|i| i as NodeIx);
        let Some(&epoch) = self.epoch.get(writer) else {
            return Some(split_brain(
                node,
                format!("the storage took a write from {writer}, which never held the lock"),
                None,
            ));
        };
        match &self.newest {
            Some((newest, by, at)) if *newest > epoch => Some(split_brain(
                node,
                format!(
                    "at {} the storage took a write from {writer} (leader since revision {epoch}, \
                 token {}) after one from {by}, leader since revision {newest}: two leaders \
                 wrote, the older last",
                    sim::units::show_secs(t),
                    token.map_or("none".into(), |t| t.to_string())
                ),
                Measured::unbounded(t - at),
            )),
            _ => {
                self.newest = Some((epoch, writer.to_string(), t));
                None
            }
        }
    }
}

fn split_brain(node: Option<NodeIx>, explanation: String, measured: Option<Measured>) -> Failure {
    Failure {
        invariant: NO_SPLIT_BRAIN_WRITE.name,
        kind: Kind::Safety,
        node,
        explanation,
        measured,
    }
}

impl Monitor for FencedMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        match &rec.event {
            Event::EtcdPut {
                key,
                value,
                rev,
                version: 1,
                ..
            } if &**key == LOCK_KEY => {
                if !self.epoch.is_empty() && !self.epoch.contains_key(&**value) {
                    self.reached.insert("lock-changed-hands");
                }
                self.epoch.insert(value.to_string(), *rev);
                None
            }
            Event::LivenessPhase => {
                self.deadline = Some(rec.t_us + WRITES_BOUND_US);
                None
            }
            _ => match rec.event.system::<LockEvent>()? {
                LockEvent::StorageWrite {
                    writer,
                    token,
                    accepted: true,
                } => self.on_write(writer, *token, rec.t_us),
                _ => None,
            },
        }
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        let d = self.deadline?;
        (now_us >= d).then(|| {
            self.deadline = None;
            Failure {
                invariant: WRITES_RESUME.name,
                kind: Kind::Liveness,
                node: None,
                explanation: format!(
                    "no write taken within {} s after faults stopped",
                    WRITES_BOUND_US / 1_000_000
                ),
                measured: Measured::bounded(now_us - d + WRITES_BOUND_US, WRITES_BOUND_US),
            }
        })
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        COVERAGE
            .iter()
            .map(|p| (*p, self.reached.contains(p)))
            .collect()
    }
}
