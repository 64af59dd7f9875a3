//! The one scheduling rule of eventlet's hub that decides what a status watcher does after a pause:
//! overdue timers run before a greenlet that I/O made ready.
//!
//! Upstream (eventlet at c8f903a3, `eventlet/hubs/hub.py` `BaseHub.run`, lines 345-364): each turn
//! of the hub first fires every due timer (`fire_timers`, 456-471, in order of expiry) and only then
//! polls file descriptors (`wait`). A greenlet blocked in `Queue.get()` (networking-calico's watch
//! iterator, etcdv3.py lines 582-621, over etcd3gw's reader thread) is handed an item through a
//! zero-delay timer (`eventlet/queue.py` `_schedule_unlock`, 386-388), whose expiry is the moment
//! the item was put, i.e. after the pause. So when a process resumes from a stop, a greenlet whose
//! `eventlet.sleep(5)` expired during the stop (the `watch_status_updates` poll, mech_calico.py line
//! 728 at networking-calico 87c15906) runs before the watcher greenlet sees an event that arrived
//! meanwhile. madsim instead runs a resumed node's ready tasks in random order.
//!
//! [`Hub::sleep`] registers a greenlet's timer while it sleeps; [`Hub::io_ready`] is awaited by a
//! greenlet that just got an item from I/O, before it acts on it: it waits until every registered
//! timer that is already due has fired (its greenlet ran). A timer whose greenlet cannot run at this
//! instant (a stalled task) holds nobody up for longer than one scheduler step (1 ms): eventlet's
//! rule is about order within one turn of the hub, not about waiting for a blocked greenlet.

use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Duration;

/// The timers of one process's greenlets that are asleep through the hub.
#[derive(Default)]
pub struct Hub {
    /// Registered timers: id -> expiry on the process's monotonic clock (µs).
    timers: RefCell<BTreeMap<u64, u64>>,
    next_id: Cell<u64>,
    fired: Notify,
}

/// Removes a timer from the hub when its sleep ends or its greenlet is dropped (a silent death).
struct Registration<'a> {
    hub: &'a Hub,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.hub.timers.borrow_mut().remove(&self.id);
        self.hub.fired.notify();
    }
}

impl Hub {
    /// `eventlet.sleep(d)`: sleeps with the timer registered.
    pub async fn sleep(&self, proc: &Proc, d: Duration) {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let due = proc.mono_us() + d.as_micros() as u64;
        self.timers.borrow_mut().insert(id, due);
        let _registered = Registration { hub: self, id };
        proc.sleep(d).await;
    }

    /// Waits, as a greenlet just handed an item by I/O, until the timers already due have fired.
    pub async fn io_ready(&self, proc: &Proc) {
        let mut step = std::pin::pin!(sim::time::sleep(Duration::ZERO));
        loop {
            let now = proc.mono_us();
            if !self.timers.borrow().values().any(|&due| due <= now) {
                return;
            }
            let seen = self.fired.generation();
            let changed = std::pin::pin!(self.fired.changed_since(seen));
            if let futures::future::Either::Right(_) =
                futures::future::select(changed, step.as_mut()).await
            {
                return;
            }
        }
    }
}
