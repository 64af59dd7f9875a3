//! The event bus: every event is stamped with its index, true time and the node's wall clock,
//! hashed into the trace and checked by the monitor before anything else runs. The first violation
//! freezes the stream and stops the run; [`Finished`] is what the bus hands back at the end.

use super::World;
use crate::event::{Event, NodeIx, Record, Recording, TraceHasher, TraceLineRef};
use crate::monitor::{Failure, Monitor, Violation};

/// The event stream of a run: its numbering, trace hash, optional trace and records, the monitor
/// and the verdict.
pub(super) struct Bus {
    next_index: u64,
    hasher: TraceHasher,
    trace: Option<Vec<u8>>,
    /// The typed records, kept with the trace (for reports).
    records: Option<Vec<Record>>,
    monitor: Box<dyn Monitor>,
    violation: Option<Violation>,
}

impl Bus {
    /// A bus before the first event; with `trace`, it keeps the trace's text and typed records as
    /// well as its hash.
    pub(super) fn new(monitor: Box<dyn Monitor>, trace: bool) -> Bus {
        Bus {
            next_index: 0,
            hasher: TraceHasher::default(),
            trace: trace.then(Vec::new),
            records: trace.then(Vec::new),
            monitor,
            violation: None,
        }
    }
}

impl World {
    /// Whether the run has been stopped by a violation.
    pub fn violated(&self) -> bool {
        self.0.bus.borrow().violation.is_some()
    }

    /// Emits an event on `node`: stamps it, hashes it into the trace, and lets the monitor check
    /// every invariant before anything else runs. Once a violation is recorded the stream freezes.
    pub fn emit(&self, node: NodeIx, event: impl Into<Event>) {
        let event = event.into();
        let now = self.now_us();
        let local_us = self.0.nodes.borrow()[node as usize].clock.wall_at(now);
        let mut bus = self.0.bus.borrow_mut();
        if bus.violation.is_some() {
            return;
        }
        let rec = Record {
            index: bus.next_index,
            t_us: now,
            node,
            local_us,
            event,
        };
        bus.next_index += 1;
        {
            let nodes = self.0.nodes.borrow();
            let name = nodes[node as usize].name.as_str();
            let line = TraceLineRef {
                i: rec.index,
                t_us: now,
                node: name,
                local_us,
                ev: &rec.event,
            };
            let Bus { hasher, trace, .. } = &mut *bus;
            hasher.add(&line);
            if let Some(t) = trace {
                serde_json::to_writer(&mut *t, &line).expect("events serialize");
                t.push(b'\n');
            }
            if tracing::enabled!(target: "faultline::event", tracing::Level::INFO) {
                tracing::info!(
                    target: "faultline::event",
                    "#{} t={:.6}s {} local={:.6}s {:?}",
                    rec.index,
                    now as f64 / 1e6,
                    name,
                    local_us as f64 / 1e6,
                    rec.event
                );
            }
        }
        let failure = bus.monitor.on_event(&rec);
        let index = rec.index;
        if let Some(records) = &mut bus.records {
            records.push(rec);
        }
        if let Some(f) = failure {
            self.record_violation(&mut bus, f, index, now);
        }
    }

    /// Records the violation that stops the run (`index`: the event, or the next one for a missed
    /// deadline) and wakes the driver waiting for it.
    fn record_violation(&self, bus: &mut Bus, f: Failure, index: u64, now_us: u64) {
        let node = f
            .node
            .map(|n| self.0.nodes.borrow()[n as usize].name.clone());
        bus.violation = Some(Violation {
            invariant: f.invariant.to_string(),
            kind: f.kind,
            event_index: index,
            sim_time_ms: now_us / 1000,
            node,
            explanation: f.explanation,
            measured: f.measured,
        });
        self.0.stopped.notify();
    }

    /// Lets the monitor check its deadlines (called once per simulated second).
    pub(crate) fn tick(&self) {
        let now = self.now_us();
        let mut bus = self.0.bus.borrow_mut();
        if bus.violation.is_some() {
            return;
        }
        if let Some(f) = bus.monitor.on_tick(now) {
            let index = bus.next_index;
            self.record_violation(&mut bus, f, index, now);
        }
    }

    /// Hands over what the bus kept once the run is over.
    pub(crate) fn finish(&self) -> Finished {
        let mut bus = self.0.bus.borrow_mut();
        let records = bus.records.take().map(|records| Recording {
            nodes: self
                .0
                .nodes
                .borrow()
                .iter()
                .map(|n| n.name.clone())
                .collect(),
            records,
        });
        Finished {
            violation: bus.violation.clone(),
            events: bus.next_index,
            trace_hash: bus.hasher.hex(),
            trace: bus.trace.take(),
            records,
            coverage: bus.monitor.coverage(),
        }
    }
}

/// What a finished run hands back: violation, event count, trace hash, trace, coverage.
pub(crate) struct Finished {
    pub(crate) violation: Option<Violation>,
    pub(crate) events: u64,
    pub(crate) trace_hash: String,
    pub(crate) trace: Option<Vec<u8>>,
    pub(crate) records: Option<Recording>,
    pub(crate) coverage: Vec<(&'static str, bool)>,
}
