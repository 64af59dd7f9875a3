//! The Calico elector (networking-calico `election.py`), one per manager worker.
//!
//! Faithful to upstream's control flow (spec/calico.md, "Elector"):
//! * `_vote`: read the key. Absent: campaign. Present: the dead-pid check (same host, process gone:
//!   delete the key guarded by its value; if that did not delete it, restart the election), then
//!   watch the key from `mod_revision + 1` with a 20 s timeout, looping on PUT events; a DELETE
//!   campaigns at once; a timeout or etcd error returns to `_run`, which sleeps 1-2 s and votes again.
//! * `_become_master`: grant a 60 s lease, put the key with it guarded by `mod_revision == 0`. On
//!   success stamp, then refresh immediately and every 10 s: keep the lease alive and re-put the key
//!   guarded by `value == id`, stamping after each success. Any error or failed compare ends
//!   mastership: the stamp is cleared (the `finally`), the key is NOT deleted.
//! * A graceful stop kills the elector where it waits and runs `_attempt_step_down`: clear the stamp
//!   and delete the key guarded by `value == id`, errors ignored.
//! * An exception that is not an etcd exception (here: a reply the client cannot decode, outside
//!   `_become_master`'s broad `except`) is unexpected: step down, then the process exits with 1.
//!
//! A silent death (the task is dropped) runs none of this, which is the point of the scenario.

use super::master::Shared;
use super::{Switches, MASTER_TIMEOUT, REFRESH_INTERVAL, WATCH_TIMEOUT};
use futures::future::Either;
use rand::Rng;
use sim::etcd::{Client, EtcdError, EventKind, Txn, WatchEvent, WatchMsg};
use sim::sync::Notify;
use sim::{Event, Proc};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Why the elector's `_run` loop ended abnormally.
struct Unexpected(String);

/// Result of one step that may abandon the current election round (`RestartElection`).
type Round = Result<(), Unexpected>;

/// One process's elector.
pub struct Elector {
    proc: Proc,
    etcd: Client,
    key: String,
    /// The legacy key written with the same lease whenever the election key is (`old_key`).
    old_key: Option<String>,
    id: String,
    shared: Rc<Shared>,
    sw: Switches,
    rng: RefCell<rand_chacha::ChaCha8Rng>,
}

fn classify(e: EtcdError) -> Round {
    if e.is_etcd_exception() {
        Ok(())
    } else {
        Err(Unexpected(format!("{e:?}")))
    }
}

impl Elector {
    /// An elector for the process `proc` (its id is `host:pid`). Like upstream's
    /// `Elector.__init__` (election.py line 109 at 87c15906), creating one sets the shared stamp
    /// to 0: a respawned manager worker clears whatever stamp its dead predecessor left.
    pub fn new(
        proc: &Proc,
        etcd: Client,
        key: String,
        old_key: Option<String>,
        shared: Rc<Shared>,
        sw: Switches,
    ) -> Rc<Elector> {
        shared.clear(proc);
        Rc::new(Elector {
            id: proc.ident().to_string(),
            rng: RefCell::new(proc.rng("elector")),
            proc: proc.clone(),
            etcd,
            key,
            old_key,
            shared,
            sw,
        })
    }

    /// Runs until stopped (then steps down and notifies `done`) or until an unexpected error (then
    /// steps down and exits the process with status 1).
    pub async fn run(self: Rc<Self>, stop: Notify, done: Notify) {
        let seen = stop.generation();
        let lp = Box::pin(self.run_loop());
        match futures::future::select(lp, stop.changed_since(seen)).await {
            Either::Left((Unexpected(error), _)) => {
                self.proc.emit(Event::CalicoElectorCrash {
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
        if !self.sw.no_dead_pid_cleanup && !self.check_master_process(&kv.value).await {
            return Ok(());
        }
        let mut mod_revision = kv.mod_revision;
        loop {
            match self.watch_once(mod_revision + 1).await {
                Ok(ev) if ev.kind == EventKind::Delete => return self.become_master().await,
                Ok(ev) => mod_revision = ev.kv.mod_revision,
                Err(e) => return classify(e),
            }
        }
    }

    /// The dead-pid check. Returns false when the election must restart.
    async fn check_master_process(&self, master_id: &str) -> bool {
        let Some((host, pid)) = master_id.split_once(':') else {
            return true;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            return true;
        };
        if host != self.proc.host_name() || self.proc.pid_alive(pid) {
            return true;
        }
        let deleted = self
            .etcd
            .txn(Txn::delete_if_value(&self.key, master_id))
            .await
            .is_ok_and(|r| r.succeeded);
        if deleted {
            self.proc.emit(Event::CalicoDeadPidCleanup {
                id: self.id.clone(),
                stale: master_id.to_string(),
            });
        }
        deleted
    }

    /// `etcdv3.watch_once`: the first event at or after `start`, or a timeout after 20 s. A watch on
    /// a compacted revision reports no events and times out (etcd3gw's behaviour, which upstream's
    /// comment relies on).
    async fn watch_once(&self, start: i64) -> Result<WatchEvent, EtcdError> {
        let wait = async {
            let mut w = self.etcd.watch(&self.key, false, start).await?;
            loop {
                if let WatchMsg::Events(mut evs) = w.next().await {
                    return Ok(std::rc::Rc::unwrap_or_clone(evs.swap_remove(0)));
                }
            }
        };
        sim::time::timeout(WATCH_TIMEOUT, wait)
            .await
            .unwrap_or(Err(EtcdError::Timeout))
    }

    async fn become_master(&self) -> Round {
        self.proc.emit(Event::CalicoCampaign {
            id: self.id.clone(),
        });
        let won = async {
            let (lease, _) = self.etcd.grant(MASTER_TIMEOUT.as_secs() as i64).await?;
            let r = self
                .etcd
                .txn(Txn::put_if_absent(&self.key, &self.id, lease))
                .await?;
            Ok::<_, EtcdError>((lease, r.succeeded))
        }
        .await;
        let lease = match won {
            Ok((lease, true)) => lease,
            _ => {
                self.shared.clear(&self.proc);
                return Ok(());
            }
        };
        self.shared.set(&self.proc, &self.sw);
        self.proc.emit(Event::CalicoWon {
            id: self.id.clone(),
            lease,
        });
        self.write_old_key(lease).await;
        let reason = loop {
            let refreshed = async {
                self.etcd.keep_alive(lease).await?;
                self.etcd
                    .txn(Txn::put_if_value(&self.key, &self.id, lease, &self.id))
                    .await
            }
            .await;
            match refreshed {
                Ok(r) if r.succeeded => {
                    self.shared.set(&self.proc, &self.sw);
                    self.proc.emit(Event::CalicoRefresh {
                        id: self.id.clone(),
                    });
                }
                Ok(_) => break "key changed or deleted".to_string(),
                Err(e) => break format!("refresh failed: {e:?}"),
            }
            self.write_old_key(lease).await;
            self.proc.sleep(REFRESH_INTERVAL).await;
        };
        self.shared.clear(&self.proc);
        self.proc.emit(Event::CalicoLost {
            id: self.id.clone(),
            reason,
        });
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
        let deleted = self
            .etcd
            .txn(Txn::delete_if_value(&self.key, &self.id))
            .await
            .is_ok_and(|r| r.succeeded);
        self.proc.emit(Event::CalicoStepDown {
            id: self.id.clone(),
            deleted,
        });
    }
}
