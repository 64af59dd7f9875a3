//! The oracle. It reads ground truth only, from the API server's write events: the Lease as each
//! write left it (who holds it, in which term: `leaseTransitions`; the server records Lease
//! objects) and who wrote the log object. It calls no model function and trusts nothing a
//! replica says about itself.
//!
//! - `no-stale-leader-write` (safety): the log never takes a write from a replica whose newest
//!   term is older than that of a replica whose write it already took.
//! - `appends-resume` (liveness): after faults stop, the log takes a write within
//!   [`APPENDS_BOUND_US`].

use super::model::{LogEvent, LOG_KIND};
use scenarios::invariant::{Breach, Invariant};
use sim::event::{Event, Record};
use sim::leaderelection::LeaseSpec;
use sim::{Failure, Kind, Measured, Monitor};
use std::collections::{BTreeMap, BTreeSet};

/// After faults stop, the log takes a write within: a LeaseDuration for a dead leader's lease to
/// run out, an acquire try interval (2.2 x RetryPeriod), a RenewDeadline for a paused leader to
/// give up, two lock request timeouts and two append periods, with 5 s to spare.
pub const APPENDS_BOUND_US: u64 = (15 + 5 + 10 + 2 * 5 + 2 + 5) * 1_000_000;

/// Entries land in leadership order.
pub const NO_STALE_LEADER_WRITE: Invariant = Invariant::safety(
    "no-stale-leader-write",
    "the log never takes a write from a leader of an older term than one whose write it already took (terms: the Lease's leaseTransitions)",
)
.measure(Breach::Occurs, "time since the log took the newer leader's write");
/// Appends resume after faults stop.
pub const APPENDS_RESUME: Invariant = Invariant::liveness(
    "appends-resume",
    "a lease duration + a try interval + a renew deadline + two request timeouts + two appends (47 s)",
    "after faults stop, the log takes a write",
)
.bound_us(APPENDS_BOUND_US)
.measure(Breach::Exceeds, "time after faults stopped without an append");
/// The lease log's invariants.
pub static INVARIANTS: &[Invariant] = &[NO_STALE_LEADER_WRITE, APPENDS_RESUME];

/// The coverage points: the Lease changed hands, a fenced append was refused, an append landed.
pub const COVERAGE: &[&str] = &[
    "lease-changed-hands",
    "stale-append-refused",
    "append-taken",
];

/// The lease log's monitor.
#[derive(Default)]
pub struct LogMonitor {
    /// The Lease's holder now.
    holder: String,
    /// Replica -> the newest term in which it took the Lease.
    term: BTreeMap<String, i32>,
    /// The newest term whose write the log took, its writer, and when.
    newest: Option<(i32, String, u64)>,
    /// When the log must have taken a write by (set when faults stop).
    deadline: Option<u64>,
    reached: BTreeSet<&'static str>,
}

impl LogMonitor {
    fn on_lease(&mut self, spec: LeaseSpec) {
        let holder = spec.holder_identity.unwrap_or_default();
        if holder.is_empty() || holder == self.holder {
            return;
        }
        if !self.holder.is_empty() {
            self.reached.insert("lease-changed-hands");
        }
        self.term
            .insert(holder.clone(), spec.lease_transitions.unwrap_or(0));
        self.holder = holder;
    }

    fn on_log_write(&mut self, client: &str, t: u64) -> Option<Failure> {
        self.reached.insert("append-taken");
        self.deadline = None;
        let writer = client.split(':').next().unwrap_or(client);
        let Some(&term) = self.term.get(writer) else {
            return Some(stale(
                format!("the log took a write from {writer}, which never held the Lease"),
                None,
            ));
        };
        match &self.newest {
            Some((newest, by, at)) if *newest > term => Some(stale(
                format!(
                    "at {} the log took a write from {writer} (leader in term {term}) after one \
                     from {by} (term {newest}): two leaders wrote, the older last",
                    sim::units::show_secs(t)
                ),
                Measured::unbounded(t - at),
            )),
            _ => {
                self.newest = Some((term, writer.to_string(), t));
                None
            }
        }
    }
}

fn stale(explanation: String, measured: Option<Measured>) -> Failure {
    Failure {
        invariant: NO_STALE_LEADER_WRITE.name,
        kind: Kind::Safety,
        node: None,
        explanation,
        measured,
    }
}

impl Monitor for LogMonitor {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        if let Some((_, spec)) = LeaseSpec::written(&rec.event) {
            self.on_lease(spec);
            return None;
        }
        match &rec.event {
            Event::KubeWrite {
                kind, part, client, ..
            } if kind == LOG_KIND && part == "spec" => self.on_log_write(client, rec.t_us),
            Event::LivenessPhase => {
                self.deadline = Some(rec.t_us + APPENDS_BOUND_US);
                None
            }
            _ => {
                if let Some(LogEvent::AppendRefused { .. }) = rec.event.system::<LogEvent>() {
                    self.reached.insert("stale-append-refused");
                }
                None
            }
        }
    }

    fn on_tick(&mut self, now_us: u64) -> Option<Failure> {
        let d = self.deadline?;
        (now_us >= d).then(|| {
            self.deadline = None;
            Failure {
                invariant: APPENDS_RESUME.name,
                kind: Kind::Liveness,
                node: None,
                explanation: format!(
                    "no append taken within {} s after faults stopped",
                    APPENDS_BOUND_US / 1_000_000
                ),
                measured: Measured::bounded(now_us - d + APPENDS_BOUND_US, APPENDS_BOUND_US),
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
