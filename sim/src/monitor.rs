//! The monitor interface: invariants checked on every event.
//!
//! A scenario supplies a [`Monitor`]. The world calls [`Monitor::on_event`] synchronously for every
//! event before the simulation continues, and [`Monitor::on_tick`] once per simulated second so that
//! deadline-based (liveness) invariants fire on time even when nothing happens. The first violation
//! stops the run.

use crate::event::{NodeIx, Record};
use serde::{Deserialize, Serialize};

/// Safety invariants must hold at every instant; liveness ones require progress within a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Something bad happened.
    Safety,
    /// Something good did not happen in time.
    Liveness,
    /// The harness itself failed (a panic in model or world code).
    Crash,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Safety => "safety",
            Kind::Liveness => "liveness",
            Kind::Crash => "crash",
        })
    }
}

/// What a monitor reports when an invariant fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The invariant's name (kebab-case, as documented in the scenario's table).
    pub invariant: &'static str,
    /// Safety or liveness.
    pub kind: Kind,
    /// The node it is about, if one.
    pub node: Option<NodeIx>,
    /// One sentence built from the events that explains the failure.
    pub explanation: String,
    /// The invariant's own measure in this failure (see [`Measured`]), if it has a value here.
    pub measured: Option<Measured>,
}

/// The value of a violated invariant's headline measure (what the scenario's catalog names, e.g.
/// "time from the host last holding the election key to its master-only work") and the bound the
/// monitor applied, so a report shows how far past its bound the run went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// The measure (simulated microseconds).
    pub value_us: u64,
    /// The bound the monitor held it to here (simulated microseconds), for a bounded invariant:
    /// the catalog's, or the one of this case where the bound depends on it (the kind of work, the
    /// cluster's size).
    pub bound_us: Option<u64>,
}

impl Measured {
    /// A measure held to `bound_us`.
    pub fn bounded(value_us: u64, bound_us: u64) -> Option<Measured> {
        Some(Measured {
            value_us,
            bound_us: Some(bound_us),
        })
    }

    /// A measure of an invariant without a bound (any occurrence is a violation).
    pub fn unbounded(value_us: u64) -> Option<Measured> {
        Some(Measured {
            value_us,
            bound_us: None,
        })
    }
}

/// A violation as recorded for a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Invariant name.
    pub invariant: String,
    /// Safety, liveness or crash.
    pub kind: Kind,
    /// Index of the event at which it was detected (for a deadline: the number of events so far).
    pub event_index: u64,
    /// True time of detection (ms).
    pub sim_time_ms: u64,
    /// Node name, if the invariant is about one node.
    pub node: Option<String>,
    /// The causal sentence.
    pub explanation: String,
    /// The invariant's own measure, when the monitor had a value for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

/// A scenario's invariant checker. Implementations keep their own ground-truth view, built only
/// from events.
pub trait Monitor {
    /// Called for every event, in order, before the simulation continues.
    fn on_event(&mut self, rec: &Record) -> Option<Failure>;
    /// Called once per simulated second (true time `now_us`).
    fn on_tick(&mut self, now_us: u64) -> Option<Failure>;
    /// The scenario's coverage ("sometimes") points and whether this run reached each.
    fn coverage(&self) -> Vec<(&'static str, bool)>;
}

/// A monitor that checks nothing (for tests of the world itself).
#[derive(Default)]
pub struct NullMonitor;

impl Monitor for NullMonitor {
    fn on_event(&mut self, _: &Record) -> Option<Failure> {
        None
    }
    fn on_tick(&mut self, _: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}
