//! Port status from Felix to Neutron: the endpoint-status worker's cache, priority queue and writer
//! greenlets, as networking-calico's mechanism driver has them (mech_calico.py at projectcalico/calico
//! 87c15906, folder networking-calico/networking_calico/plugins/ml2/drivers/calico/):
//!
//! * `_init_start_endpoint_status_watcher` (line 655): one cache and one queue per worker process,
//!   made once, kept across mastership changes and watcher replacements; `num_port_status_threads`
//!   (default 4) writer greenlets started with it.
//! * `on_port_status_changed` (line 741): a "high" update (a live watch event) is always queued; a
//!   "low" one (snapshot replay) only if the cache holds a different status. The cache gets the new
//!   status (an unknown one, or a deletion, removes the entry) and the queue gets the port's KEY
//!   with priority `(0 | 1, monotonic_time())`.
//! * `_loop_writing_port_statuses` / `_try_to_update_port_status` (lines 836, 862): a writer takes
//!   the first key and writes the status the cache holds NOW (no entry: `ERROR`) into Neutron. It
//!   does not ask `is_master()`: a former master drains its queue. A DB error schedules
//!   `_retry_port_status_update` (line 945) 5 s later (`eventlet.spawn_after`), which queues the key
//!   again with priority 2; the writer goes on at once.
//!
//! Not modelled: the `eventlet.sleep()` the handler takes when the queue holds more than 10 keys
//! (it only lets the writers start during a long snapshot; here they start right after it), and the
//! live-migration notification after an `up` write.
//!
//! Fix `calico-port-status-recheck` (a remedy for the stale-write finding): a writer asks
//! `is_master()` right before each write and, while the answer is no, waits (polling every 5 s)
//! instead of writing; a watcher that (re)starts as master clears the cache and the queue, so that
//! its snapshot rewrites every port, and a writer that waited across such a restart drops its key
//! (the snapshot queued it again). Dropping a key as soon as `is_master()` says no would lose the
//! update when the stamp is only briefly stale on the host that is still master.
//!
//! Two more remedies, for writes that land out of order:
//!
//! * Fix `calico-port-status-key-lock`: upstream's queue may hold a key twice (a retry and a live
//!   event, or two quick changes), and two writers may then write the same port at once, each the
//!   status the cache held when it took the key; their transactions overlap in the database and
//!   the one that commits last wins, which may be the older status. Under the fix a writer that
//!   takes a key another writer of its process is writing waits for that write to end, then
//!   writes what the cache holds.
//! * Fix `calico-port-status-write-deadline`: upstream sets no read timeout on the database
//!   connection, so a write held up by a partition commits whenever the partition heals, after
//!   the writer's host may have lost mastership and the new master written a newer status. Under
//!   the fix the whole `update_port_status` call, neutron's own database retries included, is
//!   bounded by [`WRITE_DEADLINE`] (an `eventlet.Timeout` around it); on expiry the greenlet's
//!   session is closed, so its transaction is never committed (see `neutron`), and the key is
//!   retried as after any database error, through `is_master()` again under
//!   `calico-port-status-recheck`. (A read timeout alone would not do: neutron-lib retries the
//!   `DBConnectionError` it raises, re-sending the same status for minutes.)
//!
//!   The deadline alone orders writes only when the handover takes longer than it, as it does
//!   when the lease has to run out. A handover can take about a second: a manager worker that
//!   dies is respawned, its elector's constructor writes 0 into the stamp (election.py
//!   `Elector.__init__`, lines 108-109 at 87c15906) and its `_check_master_process` (lines
//!   223-259) deletes the key naming the dead pid of its own host, so another host wins at once;
//!   the endpoint-status worker is another process (mech_calico.py `get_workers`, lines
//!   522-526) and its writer, which passed `is_master()` before the death, may still be in
//!   neutron-lib's retries. So under the fix a watcher that starts as master also holds this
//!   process's writes for [`WRITE_DEADLINE`]: every write another host began while it was master
//!   (before this host could win) has by then committed or been rolled back.
//!
//! The call itself is ML2's (see `ml2`): it reads the port, writes nothing if the status is
//! already stored, and retries database errors for up to 20 times before Calico sees one.

use super::master::{MasterCheck, Shared};
use super::ml2::{CallError, Ml2, CALL_TIMEOUT};
use super::neutron::Neutron;
use super::Switches;
use crate::calico::CalicoEvent;
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// `num_port_status_threads` default.
pub const PORT_WRITERS: usize = 4;
/// `PORT_UPDATE_RETRY_DELAY_SECS`.
pub const RETRY_DELAY: Duration = Duration::from_secs(5);

/// The bound on one write under fix `calico-port-status-write-deadline`: well below the 60 s a
/// stamp stays fresh and the lease lives, so a write checked with `is_master()` commits, if at
/// all, before another host can normally have won and written.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(20);

/// `(hostname, port_id)`: the cache and queue key.
pub type PortKey = (String, String);

/// `PRIORITY_HIGH`, `PRIORITY_LOW`, `PRIORITY_RETRY` (lines 230-232).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// A live watch event: always queued, taken first.
    High = 0,
    /// A snapshot replay: queued only if the cache held a different status.
    Low = 1,
    /// A write retried 5 s after a database error: taken last.
    Retry = 2,
}

/// Neutron's status for a Calico status (`PORT_STATUS_MAPPING`, line 212; no entry: `ERROR`).
pub fn neutron_status(calico: Option<&str>) -> &'static str {
    match calico {
        Some("up") => "ACTIVE",
        Some("down") => "DOWN",
        _ => "ERROR",
    }
}

fn known(status: &str) -> bool {
    matches!(status, "up" | "down" | "error")
}

/// One endpoint-status worker's port-status state.
pub struct PortStatus {
    proc: Proc,
    ml2: Ml2,
    shared: Rc<Shared>,
    sw: Switches,
    cache: RefCell<BTreeMap<PortKey, String>>,
    /// The priority queue: Python compares `((priority, time), key)` tuples; `seq` keeps equal
    /// entries apart as a heap would keep both.
    queue: RefCell<BTreeSet<(Priority, u64, PortKey, u64)>>,
    seq: Cell<u64>,
    retries: Cell<u64>,
    /// Watcher starts as master, under the fix (a writer that waited across one drops its key).
    generation: Cell<u64>,
    added: Notify,
    check: MasterCheck,
    /// Writes sent so far (numbers them for the record).
    writes: Cell<u64>,
    /// Keys a writer is writing now (fix `calico-port-status-key-lock`), and their releases.
    writing: RefCell<BTreeSet<PortKey>>,
    released: Notify,
    /// No write before this monotonic time (fix `calico-port-status-write-deadline`: a watcher
    /// that starts as master waits out the former master's write deadline).
    hold_until_us: Cell<u64>,
}

/// Holds a key for one writer; releases it when dropped.
struct KeyLock<'a> {
    ports: &'a PortStatus,
    key: PortKey,
}

impl Drop for KeyLock<'_> {
    fn drop(&mut self) {
        self.ports.writing.borrow_mut().remove(&self.key);
        self.ports.released.notify();
    }
}

impl PortStatus {
    /// The cache and queue of the endpoint-status worker `proc`.
    pub fn new(proc: &Proc, neutron: Neutron, shared: Rc<Shared>, sw: Switches) -> Rc<Self> {
        Rc::new(PortStatus {
            proc: proc.clone(),
            ml2: Ml2::new(proc, neutron),
            shared,
            sw,
            cache: RefCell::default(),
            queue: RefCell::default(),
            seq: Cell::new(0),
            retries: Cell::new(0),
            generation: Cell::new(0),
            added: Notify::new(),
            check: MasterCheck::new(),
            writes: Cell::new(0),
            writing: RefCell::default(),
            released: Notify::new(),
            hold_until_us: Cell::new(0),
        })
    }

    /// A watcher starts as master: under the recheck fix, forget what this process knew and
    /// queued; under the deadline fix, hold the writes for [`WRITE_DEADLINE`].
    pub fn on_watcher_start(&self) {
        if self.sw.port_status_write_deadline {
            let until = self.proc.mono_us() + WRITE_DEADLINE.as_micros() as u64;
            self.hold_until_us.set(until);
        }
        if self.sw.port_status_recheck {
            self.cache.borrow_mut().clear();
            self.queue.borrow_mut().clear();
            self.generation.set(self.generation.get() + 1);
        }
    }

    /// `on_port_status_changed`: `status` is the endpoint's `status` field (None: deleted, or no
    /// readable status).
    pub fn on_changed(&self, key: PortKey, status: Option<&str>, priority: Priority) {
        if priority != Priority::High && self.cache.borrow().get(&key).map(String::as_str) == status
        {
            return;
        }
        match status {
            Some(s) if known(s) => {
                self.cache.borrow_mut().insert(key.clone(), s.to_string());
            }
            _ => {
                self.cache.borrow_mut().remove(&key);
            }
        }
        self.put(priority, key);
    }

    fn put(&self, priority: Priority, key: PortKey) {
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        let now = self.proc.mono_us();
        self.queue.borrow_mut().insert((priority, now, key, seq));
        self.added.notify();
    }

    async fn get(&self) -> PortKey {
        loop {
            let seen = self.added.generation();
            if let Some((_, _, key, _)) = self.queue.borrow_mut().pop_first() {
                return key;
            }
            self.added.changed_since(seen).await;
        }
    }

    /// Keys waiting for a writer.
    pub fn queued(&self) -> usize {
        self.queue.borrow().len()
    }

    /// `_loop_writing_port_statuses`: one writer greenlet.
    pub async fn writer(self: Rc<Self>) {
        loop {
            let key = self.get().await;
            let _lock = match self.sw.port_status_key_lock {
                true => Some(self.lock(&key).await),
                false => None,
            };
            self.hold().await;
            if self.sw.port_status_recheck {
                let generation = self.generation.get();
                while !self.check.check(&self.proc, &self.shared, &self.sw) {
                    self.proc.sleep(super::MASTER_CHECK_INTERVAL).await;
                }
                if self.generation.get() != generation {
                    continue;
                }
            }
            self.try_to_update(key).await;
        }
    }

    /// Waits out the hold a watcher's start as master set (fix
    /// `calico-port-status-write-deadline`).
    async fn hold(&self) {
        let (now, until) = (self.proc.mono_us(), self.hold_until_us.get());
        if until > now {
            self.proc.sleep(Duration::from_micros(until - now)).await;
        }
    }

    /// Waits until no other writer of this process writes `key`, then holds it (fix
    /// `calico-port-status-key-lock`).
    async fn lock(&self, key: &PortKey) -> KeyLock<'_> {
        loop {
            let seen = self.released.generation();
            if self.writing.borrow_mut().insert(key.clone()) {
                return KeyLock {
                    ports: self,
                    key: key.clone(),
                };
            }
            self.released.changed_since(seen).await;
        }
    }

    /// `_try_to_update_port_status`: writes what the cache holds now.
    async fn try_to_update(self: &Rc<Self>, key: PortKey) {
        let status = neutron_status(self.cache.borrow().get(&key).map(String::as_str));
        let (host, port) = key.clone();
        let write = self.writes.get() + 1;
        self.writes.set(write);
        self.proc.emit(CalicoEvent::CalicoPortWriteSent {
            port: port.clone(),
            status: status.to_string(),
            client: self.proc.ident().to_string(),
            write,
        });
        let update = self
            .ml2
            .update_port_status(&port, status, write, CALL_TIMEOUT);
        // Under the deadline fix the whole call is bounded (`eventlet.Timeout`): the greenlet's
        // session is closed on expiry, so its transaction rolls back, and the key is retried as
        // after a database error.
        let (ok, retry) = if self.sw.port_status_write_deadline {
            match sim::time::timeout(WRITE_DEADLINE, update).await {
                Ok(r) => (r.is_ok(), matches!(r, Err(CallError::Db(_)))),
                Err(_) => (false, true),
            }
        } else {
            let r = update.await;
            // Only a database error (`DBError`, `SQLAlchemyError`) schedules a retry; anything
            // else is logged by the writer loop and the update dropped (mech_calico.py lines
            // 846-852).
            (r.is_ok(), matches!(r, Err(CallError::Db(_))))
        };
        self.proc.emit(CalicoEvent::CalicoPortWrite {
            port,
            status: status.to_string(),
            ok,
        });
        if retry && !self.sw.mutant_port_write_no_retry {
            self.retry_later(host, key.1);
        }
    }

    /// `eventlet.spawn_after(5, _retry_port_status_update, key)`.
    fn retry_later(self: &Rc<Self>, host: String, port: String) {
        let this = self.clone();
        self.retries.set(self.retries.get() + 1);
        let name = format!("port-status-retry-{}", self.retries.get());
        self.proc.spawn(&name, async move {
            this.proc.sleep(RETRY_DELAY).await;
            this.put(Priority::Retry, (host, port));
        });
    }
}
