//! The compaction task of the manager worker, as networking-calico has it
//! (plugins/ml2/drivers/calico/mech_calico.py at projectcalico/calico 87c15906, folder
//! networking-calico/networking_calico/):
//!
//! * `do_periodic_compaction` (line 1324): master (`is_master()`): check, then sleep a whole
//!   `etcd_compaction_period_mins`; not master: sleep 5 s. Any exception of the check is logged.
//! * `check_request_etcd_compaction` (line 1413): if the trigger key exists with a lease whose TTL
//!   is at most one period, somebody checked within the period: return (a TTL that vanished while
//!   being read falls through; a key without lease, or with a TTL over a period, is rewritten).
//!   Otherwise read the last key (its value is the last compaction revision, its mod_revision the
//!   revision of the last check; missing: first check, write the keys), the current revision, and
//!   compact at `current - max(min_revisions, current - last_check)` if that is beyond the last
//!   compaction; an etcd error of the compaction means somebody else compacted (write the keys with
//!   the current revision); any other error (an undecodable reply) writes nothing.
//! * `write_compaction_keys` (line 1610): the last key first, then the trigger key with a lease of
//!   one period.
//!
//! Two hosts that both believe they are master (the handover window the stamp allows) can both find
//! the trigger absent and both compact. Fix `calico-compaction-claims-period`: claim the period by
//! creating the trigger key in a transaction guarded by its absence before compacting.

use super::master::{MasterCheck, Shared};
use super::{
    Switches, COMPACTION_LAST_KEY, COMPACTION_MIN_KEEP, COMPACTION_TRIGGER_KEY,
    MASTER_CHECK_INTERVAL,
};
use crate::calico::CalicoEvent;
use sim::etcd::{Client, EtcdError, Txn};
use sim::Proc;
use std::rc::Rc;
use std::time::Duration;

/// The compaction task.
pub(super) struct Compaction {
    pub proc: Proc,
    pub etcd: Client,
    pub shared: Rc<Shared>,
    pub sw: Switches,
    pub period: Duration,
}

impl Compaction {
    /// `do_periodic_compaction` (never returns).
    pub async fn run(&self) {
        let check = MasterCheck::new();
        loop {
            if check.check(&self.proc, &self.shared, &self.sw) {
                self.proc.emit(CalicoEvent::CalicoMasterOnly {
                    pid: self.proc.pid(),
                    worker: "manager".into(),
                    action: "compaction-check".into(),
                    in_snapshot: false,
                });
                // Any error: logged; the next check is a period later.
                let _ = self.check_request_compaction().await;
                if self.sw.mutant_compaction_ignores_period {
                    self.proc.sleep(MASTER_CHECK_INTERVAL).await;
                } else {
                    self.proc.sleep(self.period).await;
                }
            } else if self.sw.mutant_compaction_gives_up {
                std::future::pending::<()>().await;
            } else {
                self.proc.sleep(MASTER_CHECK_INTERVAL).await;
            }
        }
    }

    /// `check_request_etcd_compaction`.
    async fn check_request_compaction(&self) -> Result<(), EtcdError> {
        let trigger = if self.sw.mutant_compaction_ignores_period {
            None
        } else {
            self.etcd.get(COMPACTION_TRIGGER_KEY).await?
        };
        if let Some(kv) = trigger {
            if kv.lease == 0 {
                return self.write_keys(0).await; // "lost its lease"
            }
            // `lease.ttl()` is `int(result["TTL"])`: etcd answers TTL -1 for a lease that is gone
            // (v3rpc/lease.go), and the JSON gateway omits a TTL of 0, so that read raises
            // KeyError. Only KeyError and etcd errors fall through to compaction (mech_calico.py
            // line 1467).
            match self.etcd.time_to_live(kv.lease).await {
                Ok((ttl, _)) if ttl > self.period.as_secs() as i64 => {
                    return self.write_keys(0).await; // "Unreasonably large lease TTL"
                }
                Ok((0, _)) => {} // KeyError: "Lease expired as we were checking it"
                Ok(_) => return Ok(()), // "Compaction trigger TTL is ..." (also -1)
                Err(e) if !e.is_etcd_exception() => return Err(e),
                Err(_) => {} // an etcd error: "Lease expired as we were checking it"
            }
        }
        let claims = self.sw.compaction_claims_period && !self.sw.mutant_compaction_ignores_period;
        if claims && !self.claim_period().await? {
            return Ok(()); // another master claimed this period first
        }
        let Some(last) = self.etcd.get(COMPACTION_LAST_KEY).await? else {
            return self.write_keys(0).await; // "First check"
        };
        let last_compaction: i64 = last.value.trim().parse().unwrap_or(0);
        let last_check = last.mod_revision;
        let (current, _) = self.etcd.status().await?;
        if last_compaction > current {
            return self.write_keys(0).await; // "Bogus last compaction revision"
        }
        if current <= COMPACTION_MIN_KEEP {
            return self.write_keys(last_compaction).await;
        }
        let keep = COMPACTION_MIN_KEEP.max(current - last_check);
        let compact_at = current - keep;
        if compact_at <= last_compaction {
            return self.write_keys(last_compaction).await;
        }
        match self.etcd.compact(compact_at).await {
            Ok(_) => {}
            // `except etcdv3.Etcd3Exception`: "Someone else has requested etcd compaction"
            // (mech_calico.py lines 1579-1600 at 87c15906).
            Err(e) if e.is_etcd_exception() => return self.write_keys(current).await,
            // Any other exception (an undecodable reply: `resp.json()` raises, etcd3gw 30567b4c
            // `client.py` line 136) skips that handler and reaches the outer `except Exception`
            // (mech_calico.py lines 1604-1607 at 87c15906): logged, no key written.
            Err(e) => return Err(e),
        }
        self.write_keys(compact_at).await
    }

    /// Fix `calico-compaction-claims-period`: create the trigger key only if it is still absent,
    /// before compacting; false if another host created it first.
    async fn claim_period(&self) -> Result<bool, EtcdError> {
        let (lease, _) = self.etcd.grant(self.period.as_secs() as i64).await?;
        let pid = self.proc.pid().to_string();
        let txn = Txn::put_if_absent(COMPACTION_TRIGGER_KEY, &pid, lease);
        Ok(self.etcd.txn(txn).await?.succeeded)
    }

    /// `write_compaction_keys`: the last key, then the trigger key with a lease of one period.
    async fn write_keys(&self, revision: i64) -> Result<(), EtcdError> {
        self.etcd
            .put(COMPACTION_LAST_KEY, &revision.to_string(), 0)
            .await?;
        let (lease, _) = self.etcd.grant(self.period.as_secs() as i64).await?;
        let pid = self.proc.pid().to_string();
        self.etcd.put(COMPACTION_TRIGGER_KEY, &pid, lease).await?;
        Ok(())
    }
}
