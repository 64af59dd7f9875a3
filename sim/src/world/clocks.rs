//! The nodes' clocks as the world reads and changes them (the clocks themselves are
//! [`crate::clock::NodeClock`]s): reading a node's wall and monotonic clocks, converting their
//! readings to true time, and the clock faults (steps, drift, monotonic rate).

use super::World;
use crate::clock::NodeClock;
use crate::event::{Event, NodeIx};
use crate::sync::Notify;

impl World {
    /// The node's wall clock now (µs, see `clock`).
    pub fn wall_us(&self, node: NodeIx) -> i64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize].clock.wall_at(now)
    }

    /// The node's monotonic clock now (µs since boot, at the node's monotonic rate).
    pub fn mono_us(&self, node: NodeIx) -> u64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize].clock.mono_at(now)
    }

    /// The earliest true time at which the node's monotonic clock reads `mono_us`, assuming its
    /// current rate holds (see `NodeClock::true_time_for_mono`).
    pub fn true_time_for_mono(&self, node: NodeIx, mono_us: u64) -> u64 {
        self.0.nodes.borrow()[node as usize]
            .clock
            .true_time_for_mono(mono_us)
    }

    /// The node's current monotonic rate (ppm; 0: the true rate).
    pub fn mono_rate_ppm(&self, node: NodeIx) -> i64 {
        self.0.nodes.borrow()[node as usize].clock.mono_rate_ppm()
    }

    /// A copy of the node's clock (for reports and local-time conversions).
    pub fn clock(&self, node: NodeIx) -> NodeClock {
        self.0.nodes.borrow()[node as usize].clock.clone()
    }

    /// Signal notified whenever the node's wall clock is stepped or changes rate.
    pub fn clock_notify(&self, node: NodeIx) -> Notify {
        self.0.nodes.borrow()[node as usize].clock_changed.clone()
    }

    /// The earliest true time at which the node's wall clock reads `wall_us` (now if it already
    /// does), assuming no further clock changes.
    pub fn true_time_for_wall(&self, node: NodeIx, wall_us: i64) -> u64 {
        let now = self.now_us();
        self.0.nodes.borrow()[node as usize]
            .clock
            .true_time_for_wall(wall_us, now)
    }

    /// Sets the node's monotonic rate. Sleeps already armed keep their deadlines (see
    /// [`Proc::sleep`](super::Proc::sleep)), so nobody is notified: [`World::clock_notify`] is
    /// about the wall clock.
    pub(super) fn set_mono_rate(&self, node: NodeIx, now: u64, ppm: i64) {
        self.0.nodes.borrow_mut()[node as usize]
            .clock
            .set_mono_rate(now, ppm);
        let ppm = self.0.nodes.borrow()[node as usize].clock.mono_rate_ppm();
        self.emit(node, Event::MonoRate { ppm });
    }

    /// Steps the node's wall clock by `delta_ms` (a `ClockStep` fault).
    pub(super) fn step_clock(&self, node: NodeIx, now: u64, delta_ms: i64) {
        self.change_clock(node, |c| c.step(now, delta_ms * 1000));
        self.emit(node, Event::ClockStep { delta_ms });
    }

    /// Sets the drift of the node's wall clock (a `Drift` fault; 0 when it ends).
    pub(super) fn set_drift(&self, node: NodeIx, now: u64, ppm: i64) {
        self.change_clock(node, |c| c.set_drift(now, ppm));
        self.emit(node, Event::ClockDrift { ppm });
    }

    /// Changes the node's wall clock and tells whoever waits on [`World::clock_notify`].
    fn change_clock(&self, node: NodeIx, f: impl FnOnce(&mut NodeClock)) {
        let notify = {
            let mut nodes = self.0.nodes.borrow_mut();
            f(&mut nodes[node as usize].clock);
            nodes[node as usize].clock_changed.clone()
        };
        notify.notify();
    }
}
