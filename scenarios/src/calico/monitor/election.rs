//! The election and master-only work: checks `election-key-single-holder`,
//! `election-deletes-owned`, `master-only-work-legitimate` and `compaction-once-per-period` (and,
//! through `stability`, `master-stable` and `master-only-work-stops`), and keeps the acting
//! intervals behind the split-brain headline.
//!
//! Reads (observations only): the election key's puts and deletes in etcd (`EtcdPut`,
//! `EtcdDelete` with its cause), lease expiries and compactions (`EtcdCompact`), and the model's
//! `CalicoStamp`, `CalicoIsMaster` (for `stamp_age`), `CalicoLost` (a refresh's answer that ends the mastership, reported as it
//! arrives), `CalicoStaleStamp`, `CalicoDeadPidCleanup`, `CalicoStepDown` and `CalicoMasterOnly`
//! events. The holder is the key's value as etcd stores it; who may delete it
//! and how long master-only work stays legitimate are derived here from the spec and the model's
//! constants. Calls no model function.

use super::{secs, work_bound_us, CalicoMonitor, Holder, ACTING_GAP_US};
use model::calico::CalicoEvent;
use sim::event::{DeleteCause, Record};
use sim::{Failure, Kind, Measured, NodeIx};

impl CalicoMonitor {
    /// A master exists: the key names a live process and that host's stamp is set.
    pub(super) fn master_exists(&self) -> bool {
        match &self.holder {
            Some(h) => h.node.is_some_and(|n| {
                self.alive.contains_key(&(n, h.pid)) && self.stamps[n as usize] > 0
            }),
            None => false,
        }
    }

    pub(super) fn describe_master_state(&self) -> String {
        match &self.holder {
            None => "the election key is absent".to_string(),
            Some(h) => {
                let alive = h.node.is_some_and(|n| self.alive.contains_key(&(n, h.pid)));
                let stamp = h.node.is_some_and(|n| self.stamps[n as usize] > 0);
                format!(
                    "the election key names {} ({}, stamp {}) since {}",
                    h.value,
                    if alive { "alive" } else { "a dead process" },
                    if stamp { "set" } else { "clear" },
                    secs(h.since_us)
                )
            }
        }
    }

    pub(super) fn holds(&self, node: NodeIx) -> bool {
        self.holder.as_ref().is_some_and(|h| h.node == Some(node))
    }

    fn release(&mut self, now: u64) {
        if let Some(h) = self.holder.take() {
            if let Some(n) = h.node {
                self.last_held_us.insert(n, now);
            }
        }
    }

    /// The electors' own events: stamps, step-downs, dead-pid cleanups and master-only work.
    pub(super) fn on_election_event(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        let node = rec.node;
        match e {
            CalicoEvent::CalicoStamp { stamp_us } => {
                self.stamps[node as usize] = *stamp_us;
                self.on_stamp(node, *stamp_us, rec.t_us);
                self.on_stamp_written(node, *stamp_us, rec.t_us);
                None
            }
            CalicoEvent::CalicoIsMaster { pid } => {
                self.on_is_master(node, *pid, rec.t_us);
                None
            }
            CalicoEvent::CalicoLost { .. } => {
                self.on_loss_evidence(node, rec.t_us);
                None
            }
            CalicoEvent::CalicoStaleStamp { .. } => {
                self.reach("stale-stamp-observed");
                None
            }
            CalicoEvent::CalicoDeadPidCleanup { .. } => {
                self.reach("dead-pid-cleanup");
                None
            }
            CalicoEvent::CalicoStepDown { deleted: true, .. } => {
                self.reach("graceful-step-down");
                None
            }
            CalicoEvent::CalicoMasterOnly {
                pid,
                worker,
                action,
                in_snapshot,
            } => self.on_master_only(rec, worker, action, *pid, *in_snapshot),
            _ => None,
        }
    }

    /// A put to the election key: a campaign creates it, nothing may change it while it exists
    /// (`election-key-single-holder`).
    pub(super) fn on_key_put(&mut self, value: &str, lease: i64, t: u64) -> Option<Failure> {
        match &self.holder {
            Some(h) if *h.value != *value => Some(Failure {
                invariant: crate::calico::invariants::ELECTION_KEY_SINGLE_HOLDER.name,
                kind: Kind::Safety,
                node: self.parse_id(value).0,
                explanation: format!(
                    "{value} overwrote the election key while it still named {} (held since {})",
                    h.value,
                    secs(h.since_us)
                ),
                measured: Measured::unbounded(t - h.since_us),
            }),
            Some(_) => None,
            None => {
                let (n, pid) = self.parse_id(value);
                if !self.winners.is_empty() && !self.winners.contains(value) {
                    self.reach("handover");
                }
                self.winners.insert(value.to_string());
                self.holder = Some(Holder {
                    value: value.to_string(),
                    node: n,
                    pid,
                    since_us: t,
                    lease,
                });
                None
            }
        }
    }

    /// A delete of the election key: by its holder, or by a same-host dead-pid cleanup
    /// (`election-deletes-owned`). Either way nobody holds it afterwards.
    pub(super) fn on_key_delete(
        &mut self,
        prev_value: &str,
        cause: &DeleteCause,
        t: u64,
    ) -> Option<Failure> {
        let failure = match cause {
            DeleteCause::Client { client } | DeleteCause::LeaseRevoked { client, .. }
                if **client != *prev_value =>
            {
                let (cn, _) = self.parse_id(client);
                let (vn, vpid) = self.parse_id(prev_value);
                let dead_pid_cleanup =
                    cn.is_some() && cn == vn && !self.alive.contains_key(&(vn.unwrap(), vpid));
                (!dead_pid_cleanup).then(|| Failure {
                    invariant: crate::calico::invariants::ELECTION_DELETES_OWNED.name,
                    kind: Kind::Safety,
                    node: cn,
                    explanation: format!("{client} deleted the election key although it named {prev_value}, which is neither itself nor a dead process on its host"),
                    measured: self.holder.as_ref().and_then(|h| Measured::unbounded(t - h.since_us)),
                })
            }
            _ => None,
        };
        let failure = failure.or_else(|| {
            self.holder
                .as_ref()
                .and_then(|h| self.check_master_stable(h, cause, t))
        });
        self.release(t);
        failure
    }

    /// A compaction: at most one per compaction period (`compaction-once-per-period`).
    pub(super) fn on_compact(&mut self, client: &str, t: u64) -> Option<Failure> {
        if self.winners.len() > 1 {
            self.reach("compaction-under-mastership-change");
        }
        let prev = self.last_compaction_us.replace(t);
        match prev {
            Some(p) if t - p < self.compaction_period_us => Some(Failure {
                invariant: crate::calico::invariants::COMPACTION_ONCE_PER_PERIOD.name,
                kind: Kind::Safety,
                node: self.parse_id(client).0,
                explanation: format!("{client} compacted at {}, only {} after the previous compaction at {} (period {})", secs(t), secs(t - p), secs(p), secs(self.compaction_period_us)),
                measured: Measured::bounded(t - p, self.compaction_period_us),
            }),
            _ => None,
        }
    }

    /// Master-only work by `node` (`master-only-work-legitimate`): it must have held the key
    /// within the bound of this kind of work.
    fn on_master_only(
        &mut self,
        rec: &Record,
        worker: &str,
        action: &str,
        pid: u32,
        in_snapshot: bool,
    ) -> Option<Failure> {
        let bound_us = work_bound_us(worker, in_snapshot);
        let node = rec.node;
        let t = rec.t_us;
        self.track_acting(node, t);
        let last = self.last_held_us.get(&node).copied();
        let legit = last.is_some_and(|l| t.saturating_sub(l) <= bound_us);
        if self.holds(node) || legit {
            return self
                .check_stamp_age(node, pid, worker, action, t)
                .or_else(|| self.check_work_stops(node, pid, worker, in_snapshot, t));
        }
        let name = &self.names[node as usize];
        let held = match last {
            Some(l) => format!(
                "{name} last held the election key at {} ({} earlier; bound {})",
                secs(l),
                secs(t - l),
                secs(bound_us)
            ),
            None => format!("{name} never held the election key"),
        };
        let other = match &self.holder {
            Some(h) => format!("{} has held it since {}", h.value, secs(h.since_us)),
            None => "nobody holds it now".to_string(),
        };
        let pause = match self.last_pause[node as usize] {
            Some((a, b)) if last.is_none_or(|l| b >= l) => {
                format!("; {name} was paused from {} to {} and acted on what is_master() told it before the pause", secs(a), secs(b))
            }
            _ => String::new(),
        };
        // Work long after the host knew it had lost (a stopped watcher still dispatching, or
        // the manager's compaction): said, so that it can be told apart from a stale stamp.
        let stopped = self
            .work_after_known_loss(node, pid, worker, in_snapshot, t)
            .map_or_else(String::new, |late| {
                format!(
                    "; it did this master-only work{} {}",
                    if in_snapshot { " from a snapshot" } else { "" },
                    late.describe(name)
                )
            });
        let overlap = if self.max_overlap_us > 0 {
            format!(
                "; two hosts did master-only work at the same time for {}",
                secs(self.max_overlap_us)
            )
        } else {
            String::new()
        };
        Some(Failure {
            invariant: crate::calico::invariants::MASTER_ONLY_WORK_LEGITIMATE.name,
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} ({worker}) did '{action}' at {} true ({} on its clock) believing it was master, but {held}; {other}{pause}{stopped}{overlap}{}",
                secs(t),
                sim::clock::format_rfc3339(rec.local_us),
                self.fault_note(node)
            ),
            // A host that never held the key has no time since; its measure is the run's time
            // so far, which no bound applies to.
            measured: last.map_or_else(
                || Measured::unbounded(t),
                |l| Measured::bounded(t - l, bound_us),
            ),
        })
    }

    /// Acting intervals and the overlap headline: `node` acted at `t`, which extends its interval
    /// (or starts one) and measures the overlap with any other host's open interval.
    fn track_acting(&mut self, node: NodeIx, t: u64) {
        let slot = &mut self.acting[node as usize];
        *slot = match *slot {
            Some((start, last)) if t - last <= ACTING_GAP_US => Some((start, t)),
            _ => Some((t, t)),
        };
        let (s0, _) = slot.unwrap();
        let mut both = false;
        for (other, iv) in self.acting.iter().enumerate() {
            if other == node as usize {
                continue;
            }
            if let Some((s1, l1)) = iv {
                if t - l1 <= ACTING_GAP_US {
                    let overlap = t.min(*l1).saturating_sub(s0.max(*s1));
                    self.max_overlap_us = self.max_overlap_us.max(overlap);
                    both = true;
                }
            }
        }
        if both {
            self.reach("two-hosts-acting-as-master");
        }
    }
}
