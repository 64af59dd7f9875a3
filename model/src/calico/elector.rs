//! The Calico elector (networking-calico `election.py`), one per manager worker.
//!
//! Faithful to upstream's control flow (projectcalico/calico at 87c15906,
//! `networking-calico/networking_calico/plugins/ml2/drivers/calico/election.py`, `Elector`):
//! * `_vote`: read the key. Absent: campaign. Present: the dead-pid check (a `host:pid` value of
//!   this host whose process is gone: delete the key guarded by its value; if that did not delete
//!   it, restart the election), then watch the key from `mod_revision + 1` with a timeout of twice
//!   the interval (20 s), looping on PUT events; a DELETE campaigns at once; a timeout or etcd
//!   error returns to `_run`, which sleeps 1-2 s and votes again.
//! * `_become_master`: grant a lease of `ttl` (60 s), put the key with it guarded by
//!   `mod_revision == 0`. On success stamp, then refresh immediately and every `interval` (10 s):
//!   keep the lease alive and re-put the key guarded by `value == id`, stamping after each success.
//!   Any error or failed compare ends mastership: the stamp is cleared (the `finally`), the key is
//!   NOT deleted.
//! * A graceful stop kills the elector where it waits and runs `_attempt_step_down`: clear the stamp
//!   and delete the key guarded by `value == id`, errors ignored.
//! * An exception that is not an etcd exception (here: a reply the client cannot decode, outside
//!   `_become_master`'s broad `except`, e.g. in the read, the watch or the dead-pid check's delete)
//!   is unexpected: step down, then the process exits with 1.
//!
//! A silent death (the task is dropped) runs none of this, which is the point of the scenario.
//!
//! The elector reaches etcd through [`ElectionStore`], the handful of `etcdv3` calls upstream's
//! elector makes. The simulation uses `sim::etcd::Client`; the tests in
//! `model/tests/upstream_election/` use a scripted store, as upstream's tests use `stub_etcd`.
//! `interval` and `ttl` are parameters ([`Timing`]) checked as `Elector.__init__` checks them.

use super::master::Shared;
use super::{Switches, ETCD_TIMEOUT, MASTER_TIMEOUT, REFRESH_INTERVAL};
use crate::calico::CalicoEvent;
use futures::future::Either;
use rand::Rng;
use sim::etcd::{Client, EtcdError, EventKind, KeyValue, Txn, TxnResponse, WatchEvent, WatchMsg};
use sim::sync::Notify;
use sim::Proc;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Why the elector's `_run` loop ended abnormally.
struct Unexpected(String);

/// Result of one step that may abandon the current election round (`RestartElection`).
type Round = Result<(), Unexpected>;

/// The etcd calls the elector makes, each as networking-calico's `etcdv3` module makes it (the
/// seam upstream's tests replace with `stub_etcd`). Errors are the client's: `EtcdError::Garbled`
/// stands for an exception that is not an `Etcd3Exception`.
#[allow(async_fn_in_trait)] // one simulation runs on one thread: no `Send` bounds are wanted
pub trait ElectionStore {
    /// `etcdv3.get(key)`: the key, or `None` where upstream raises `KeyNotFound`.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, EtcdError>;
    /// `etcdv3.watch_once(key, timeout=timeout, start_revision=start_revision)`: the first event
    /// on `key` at or after `start_revision`, or `Timeout` (`WatchTimedOut`) after `timeout`.
    async fn watch_once(
        &self,
        key: &str,
        start_revision: i64,
        timeout: Duration,
    ) -> Result<WatchEvent, EtcdError>;
    /// `etcdv3.get_lease(ttl)`: the lease's id and granted TTL.
    async fn grant(&self, ttl_s: i64) -> Result<(i64, i64), EtcdError>;
    /// `Lease.refresh()`: the lease's remaining TTL (0 if it no longer exists).
    async fn keep_alive(&self, lease: i64) -> Result<i64, EtcdError>;
    /// A guarded `etcdv3.put` or `etcdv3.delete` (`mod_revision=`, `existing_value=`): one
    /// transaction; `succeeded` is what upstream returns.
    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError>;
    /// An unguarded `etcdv3.put(key, value, lease=lease)`: the new revision.
    async fn put(&self, key: &str, value: &str, lease: i64) -> Result<i64, EtcdError>;
}

impl ElectionStore for Client {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, EtcdError> {
        Client::get(self, key).await
    }

    /// A watch on a compacted revision reports no events and times out (etcd3gw's behaviour,
    /// which upstream's comment in `_vote` relies on).
    ///
    /// As etcd3gw's `watch_once` (2.4.2, 30567b4c, `etcd3gw/client.py` lines 433-451): the
    /// `Watcher` is created first, its create request waiting for etcd's answer with no timeout
    /// ([`Client::watch`]), and only then does `event_queue.get(timeout=timeout)` start. A
    /// creation that fails raises `requests`' own `ConnectionError` (the `Watcher` posts through
    /// the session, `etcd3gw/watch.py` lines 61-63, not through the client's `post` that maps it
    /// to `ConnectionFailedError`): not an `Etcd3Exception`, so `_vote` does not catch it
    /// (election.py lines 196-214 at 87c15906) and `_run` exits the process (lines 138-147). It
    /// is returned as [`EtcdError::Garbled`], this trait's stand-in for such an exception.
    async fn watch_once(
        &self,
        key: &str,
        start_revision: i64,
        timeout: Duration,
    ) -> Result<WatchEvent, EtcdError> {
        let mut w = self
            .watch(key, false, start_revision)
            .await
            .map_err(|_| EtcdError::Garbled)?;
        let wait = async {
            loop {
                if let WatchMsg::Events(mut evs) = w.next().await {
                    return Ok(Rc::unwrap_or_clone(evs.swap_remove(0)));
                }
            }
        };
        sim::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(EtcdError::Timeout))
    }

    async fn grant(&self, ttl_s: i64) -> Result<(i64, i64), EtcdError> {
        Client::grant(self, ttl_s).await
    }

    async fn keep_alive(&self, lease: i64) -> Result<i64, EtcdError> {
        Client::keep_alive(self, lease).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        Client::txn(self, txn).await
    }

    async fn put(&self, key: &str, value: &str, lease: i64) -> Result<i64, EtcdError> {
        Client::put(self, key, value, lease).await
    }
}

/// `interval` and `ttl` of `Elector.__init__` (whole seconds, as upstream's `int(...)`): the
/// refresh interval (the watch timeout is twice it) and the election lease's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Seconds between refreshes of the lease and key while master.
    pub interval_s: i64,
    /// TTL of the election lease (s); must be above `interval_s`.
    pub ttl_s: i64,
}

impl Default for Timing {
    /// What the neutron-server workers use: [`REFRESH_INTERVAL`] and [`MASTER_TIMEOUT`].
    fn default() -> Self {
        Timing {
            interval_s: REFRESH_INTERVAL.as_secs() as i64,
            ttl_s: MASTER_TIMEOUT.as_secs() as i64,
        }
    }
}

/// Timing `Elector.__init__` rejects with `ValueError` (election.py lines 102-106 at 87c15906).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidTiming {
    /// "Interval %r is <= 0".
    IntervalNotPositive {
        /// The interval given (s).
        interval_s: i64,
    },
    /// "TTL %r is <= interval %r".
    TtlNotAboveInterval {
        /// The TTL given (s).
        ttl_s: i64,
        /// The interval given (s).
        interval_s: i64,
    },
}

impl Timing {
    fn check(self) -> Result<Timing, InvalidTiming> {
        let Timing { interval_s, ttl_s } = self;
        if interval_s <= 0 {
            return Err(InvalidTiming::IntervalNotPositive { interval_s });
        }
        if ttl_s <= interval_s {
            return Err(InvalidTiming::TtlNotAboveInterval { ttl_s, interval_s });
        }
        Ok(self)
    }

    fn interval(self) -> Duration {
        Duration::from_secs(self.interval_s as u64)
    }
}

/// One process's elector.
pub struct Elector<S: ElectionStore = Client> {
    proc: Proc,
    etcd: S,
    key: String,
    /// The legacy key written with the same lease whenever the election key is (`old_key`).
    old_key: Option<String>,
    id: String,
    shared: Rc<Shared>,
    sw: Switches,
    timing: Timing,
    rng: RefCell<rand_chacha::ChaCha8Rng>,
}

fn classify(e: EtcdError) -> Round {
    if e.is_etcd_exception() {
        Ok(())
    } else {
        Err(Unexpected(format!("{e:?}")))
    }
}

/// `re.match(r"^(?P<host>[^:]+):(?P<pid>\d+)$", master_id)` (election.py line 233 at 87c15906):
/// the host and the pid's digits. `$` also matches before a final newline. (Python's `\d` also
/// matches non-ASCII decimal digits, which no elector writes; here only ASCII digits do.)
fn parse_master_id(master_id: &str) -> Option<(&str, &str)> {
    let id = master_id.strip_suffix('\n').unwrap_or(master_id);
    let (host, pid) = id.split_once(':')?;
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (!host.is_empty() && digits).then_some((host, pid))
}

impl<S: ElectionStore> Elector<S> {
    /// An elector for the process `proc` (its id is `host:pid`) with the default [`Timing`]. Like
    /// upstream's `Elector.__init__` (election.py line 109 at 87c15906), creating one sets the
    /// shared stamp to 0: a respawned manager worker clears whatever stamp its dead predecessor
    /// left.
    pub fn new(
        proc: &Proc,
        etcd: S,
        key: String,
        old_key: Option<String>,
        shared: Rc<Shared>,
        sw: Switches,
    ) -> Rc<Self> {
        Self::with_timing(proc, etcd, key, old_key, shared, sw, Timing::default())
            .expect("the default timing is valid")
    }

    /// An elector with the given `interval` and `ttl`. As in `Elector.__init__`, a timing with
    /// `interval <= 0` or `ttl <= interval` is rejected before the shared stamp is touched.
    pub fn with_timing(
        proc: &Proc,
        etcd: S,
        key: String,
        old_key: Option<String>,
        shared: Rc<Shared>,
        sw: Switches,
        timing: Timing,
    ) -> Result<Rc<Self>, InvalidTiming> {
        let timing = timing.check()?;
        shared.clear(proc);
        Ok(Rc::new(Elector {
            id: proc.ident().to_string(),
            rng: RefCell::new(proc.rng("elector")),
            proc: proc.clone(),
            etcd,
            key,
            old_key,
            shared,
            sw,
            timing,
        }))
    }

    /// Runs until stopped (then steps down and notifies `done`) or until an unexpected error (then
    /// steps down and exits the process with status 1).
    pub async fn run(self: Rc<Self>, stop: Notify, done: Notify) {
        let seen = stop.generation();
        let lp = Box::pin(self.run_loop());
        match futures::future::select(lp, stop.changed_since(seen)).await {
            Either::Left((Unexpected(error), _)) => {
                self.proc.emit(CalicoEvent::CalicoElectorCrash {
                    id: self.id.clone(),
                    error,
                });
                self.step_down().await;
                self.proc.exit(1);
            }
            Either::Right(_) => {
                self.step_down().await;
                done.notify();
            }
        }
    }

    async fn run_loop(&self) -> Unexpected {
        loop {
            if let Err(u) = self.vote().await {
                return u;
            }
            if self.sw.mutant_no_recampaign {
                std::future::pending::<()>().await;
            }
            let retry_ms = self.rng.borrow_mut().random_range(1000..2000);
            self.proc.sleep(Duration::from_millis(retry_ms)).await;
        }
    }

    async fn vote(&self) -> Round {
        let kv = match self.etcd.get(&self.key).await {
            Ok(Some(kv)) => kv,
            Ok(None) => return self.become_master().await,
            Err(e) => return classify(e),
        };
        if !self.sw.no_dead_pid_cleanup && !self.check_master_process(&kv.value).await? {
            return Ok(());
        }
        let mut mod_revision = kv.mod_revision;
        // `timeout=self._interval * 2`.
        let timeout = 2 * self.timing.interval();
        loop {
            let watched = self.etcd.watch_once(&self.key, mod_revision + 1, timeout);
            let watched = if self.sw.watch_create_timeout {
                // Fix `calico-watch-create-timeout`: the creation is bounded by `etcd_timeout`
                // (`ConnectionTimeoutError`, an etcd exception), the wait by `timeout` after it.
                sim::time::timeout(ETCD_TIMEOUT + timeout, watched)
                    .await
                    .unwrap_or(Err(EtcdError::Timeout))
            } else {
                watched.await
            };
            match watched {
                Ok(ev) if ev.kind == EventKind::Delete => return self.become_master().await,
                Ok(ev) => mod_revision = ev.kv.mod_revision,
                Err(e) => return classify(e),
            }
        }
    }

    /// The dead-pid check (`_check_master_process`). `Ok(false)` when the election must restart;
    /// an error that is not an etcd exception escapes it, as upstream's `except Etcd3Exception`
    /// (election.py line 252 at 87c15906) lets it, and ends the elector.
    async fn check_master_process(&self, master_id: &str) -> Result<bool, Unexpected> {
        let Some((host, pid)) = parse_master_id(master_id) else {
            return Ok(true);
        };
        if host != self.proc.host_name() {
            return Ok(true);
        }
        // `os.path.exists("/proc/%s" % pid)`: a pid no process can have is not alive.
        if pid.parse::<u32>().is_ok_and(|pid| self.proc.pid_alive(pid)) {
            return Ok(true);
        }
        let deleted = match self
            .etcd
            .txn(Txn::delete_if_value(&self.key, master_id))
            .await
        {
            Ok(r) => r.succeeded,
            Err(e) => {
                classify(e)?;
                false
            }
        };
        if deleted {
            self.proc.emit(CalicoEvent::CalicoDeadPidCleanup {
                id: self.id.clone(),
                stale: master_id.to_string(),
            });
        }
        Ok(deleted)
    }

    async fn become_master(&self) -> Round {
        self.proc.emit(CalicoEvent::CalicoCampaign {
            id: self.id.clone(),
        });
        let won = async {
            let (lease, _) = self.etcd.grant(self.timing.ttl_s).await?;
            let campaign = if self.sw.mutant_campaign_unguarded {
                Txn::put(&self.key, &self.id, lease)
            } else {
                Txn::put_if_absent(&self.key, &self.id, lease)
            };
            let r = self.etcd.txn(campaign).await?;
            Ok::<_, EtcdError>((lease, r.succeeded))
        }
        .await;
        let lease = match won {
            Ok((lease, true)) => lease,
            Ok((_, false)) if self.sw.mutant_lost_campaign_stamps => {
                self.shared.set(&self.proc, &self.sw);
                return Ok(());
            }
            _ => {
                self.shared.clear(&self.proc);
                return Ok(());
            }
        };
        self.shared.set(&self.proc, &self.sw);
        self.proc.emit(CalicoEvent::CalicoWon {
            id: self.id.clone(),
            lease,
        });
        self.write_old_key(lease).await;
        let reason = loop {
            let refreshed = async {
                if !self.sw.mutant_refresh_skips_keepalive {
                    self.etcd.keep_alive(lease).await?;
                }
                self.etcd
                    .txn(Txn::put_if_value(&self.key, &self.id, lease, &self.id))
                    .await
            }
            .await;
            match refreshed {
                Ok(r) if r.succeeded => {
                    self.shared.set(&self.proc, &self.sw);
                    self.proc.emit(CalicoEvent::CalicoRefresh {
                        id: self.id.clone(),
                    });
                }
                Ok(_) => break "key changed or deleted".to_string(),
                Err(e) => break format!("refresh failed: {e:?}"),
            }
            self.write_old_key(lease).await;
            let interval = if self.sw.mutant_refresh_every_half_ttl {
                Duration::from_secs(self.timing.ttl_s as u64 / 2)
            } else {
                self.timing.interval()
            };
            self.proc.sleep(interval).await;
        };
        // The answer that ends the mastership is reported as it arrives, before the reaction to
        // it (the `finally` that clears the stamp, election.py lines 332-334 at 87c15906): the
        // monitor times the host's step-down from it.
        self.proc.emit(CalicoEvent::CalicoLost {
            id: self.id.clone(),
            reason,
        });
        if !self.sw.mutant_loss_keeps_stamp {
            self.shared.clear(&self.proc);
        }
        Ok(())
    }

    /// `_write_old_key` (election.py line 337 at 87c15906): put the legacy key with the election
    /// lease, unconditionally; any error (even an unexpected one) is logged and ignored.
    async fn write_old_key(&self, lease: i64) {
        if let Some(old_key) = &self.old_key {
            let _ = self.etcd.put(old_key, &self.id, lease).await;
        }
    }

    /// `_attempt_step_down`: clear the stamp, delete the key if it is still ours (errors ignored).
    async fn step_down(&self) {
        self.shared.clear(&self.proc);
        let delete = if self.sw.mutant_step_down_unguarded {
            Txn::delete(&self.key, false)
        } else {
            Txn::delete_if_value(&self.key, &self.id)
        };
        let deleted = !self.sw.mutant_step_down_keeps_key
            && self.etcd.txn(delete).await.is_ok_and(|r| r.succeeded);
        self.proc.emit(CalicoEvent::CalicoStepDown {
            id: self.id.clone(),
            deleted,
        });
    }
}
