//! Progress of the master's periodic duties: `compaction-progresses` (while a master exists and
//! nothing disturbs it or etcd, a compaction check rewrites the trigger key, or compacts, at least
//! once every two compaction periods plus slack) — the lower bound that
//! `compaction-once-per-period` (the upper one) lacks.
//!
//! Why two periods and not one: the loop sleeps one period after a check, and the trigger key's
//! lease is one period too (mech_calico.py `do_periodic_compaction` line 1345 and
//! `write_compaction_keys` line 1620 at 87c15906). The next check's read reaches etcd a few round
//! trips after the lease would run out, by the clocks' nominal rates; a host whose monotonic clock
//! runs a little fast against etcd's (tens of ppm over a period of minutes to an hour: tens to
//! hundreds of ms) reads the key just before it expires, finds a TTL of at most a period, returns,
//! and sleeps a second period (calico-swarm seed 75 with every fix: the check at 685.717 s reads the
//! trigger 9 ms before its lease runs out). Upstream compacts every period or every other period;
//! the oracle holds it to the latter.
//!
//! Reads (observations only): the compaction trigger key's puts and the store's compactions in
//! etcd (`EtcdPut`, `EtcdCompact`), whether a master exists (the election key's holder, its
//! process alive and its host's stamp set: `election.rs`), the schedule's faults and the world's
//! task faults (`stability.rs`). The period is the deployment's `etcd_compaction_period_mins`; the
//! slack is `calico::bounds`' [`COMPACTION_SLACK_US`]. Calls no model
//! function.

use super::{secs, CalicoMonitor, TaskFault, COMPACTION_SLACK_US};
use crate::calico::bounds::us;
use model::calico::COMPACTION_TRIGGER_KEY;
use model::calico::ETCD_TIMEOUT;
use sim::{Failure, Kind, Measured};

/// Compaction's progress, as the monitor tracks it.
#[derive(Default)]
pub(super) struct CompactionProgress {
    /// True time of the last trigger-key put or compaction (0: the run's start).
    last_us: u64,
    /// Since when a master has existed without a break (None: none now).
    master_since_us: Option<u64>,
    /// Whether the current stretch was already reported (one failure per stretch).
    reported: bool,
}

impl CalicoMonitor {
    /// An event wrote the trigger key (`key`) or compacted the store: the duty progressed.
    pub(super) fn on_compaction_progress(&mut self, key: Option<&str>, t: u64) {
        if key.is_none_or(|k| k == COMPACTION_TRIGGER_KEY) {
            self.compaction_progress.last_us = t;
            self.compaction_progress.reported = false;
        }
    }

    /// After every event: whether a master exists (its stretch starts when it appears).
    pub(super) fn track_master_stretch(&mut self, t: u64) {
        let exists = self.master_exists();
        let p = &mut self.compaction_progress;
        match (exists, p.master_since_us) {
            (true, None) => {
                p.master_since_us = Some(t);
                p.reported = false;
            }
            (false, Some(_)) => p.master_since_us = None,
            _ => {}
        }
    }

    /// Since when a master has existed without a break (None: none now).
    pub(super) fn master_since_us(&self) -> Option<u64> {
        self.compaction_progress.master_since_us
    }

    /// When the last disturbance of a master's duty ended (`now` if one is in force): any fault
    /// of the schedule (on etcd, the network or any host: the monitor does not try to tell which
    /// can delay the duty), or a stall or silent death (for good: `u64::MAX`) of a task of the
    /// master's host that `touches` names (the duty's own tasks and those it depends on).
    pub(super) fn duty_disturbed_until(
        &self,
        now: u64,
        touches: impl Fn(&TaskFault) -> bool,
    ) -> u64 {
        let faults = self.fault_log.values().map(|f| f.end_us.unwrap_or(now));
        let node = self.holder.as_ref().and_then(|h| h.node);
        let tasks = self
            .task_faults
            .iter()
            .filter(|f| node == Some(f.node) && touches(f))
            .map(|f| f.end_us);
        faults.chain(tasks).max().unwrap_or(0)
    }

    /// When the last disturbance of compaction ended: as [`Self::duty_disturbed_until`], for a
    /// stall or silent death of the master's compaction task or of its elector.
    fn compaction_disturbed_until(&self, now: u64) -> u64 {
        let master = self.holder.as_ref().map(|h| h.pid);
        self.duty_disturbed_until(now, |f| {
            master == Some(f.pid) && (f.task == "compaction" || f.task == "elector")
        })
    }

    /// `compaction-progresses`, checked every simulated second: with a master since `m`, the last
    /// progress at `l` and the last disturbance ended at `d`, the trigger key is rewritten (or the
    /// store compacted) by the latest of `l`, `m` and `d` + `etcd_timeout`, plus two periods and
    /// the slack. Two periods: a check may find the trigger still alive, by a few ms (see the
    /// module documentation), or find its predecessor's; `etcd_timeout`: a request sent before
    /// a fault ended may wait out its timeout after it, and the loop then sleeps a period.
    pub(super) fn compaction_overdue(&mut self, now: u64) -> Option<Failure> {
        let m = self.compaction_progress.master_since_us?;
        if self.compaction_progress.reported {
            return None;
        }
        let p = self.compaction_period_us;
        let l = self.compaction_progress.last_us;
        let d = self.compaction_disturbed_until(now);
        if d >= now {
            return None;
        }
        let due = l.max(m).max(d + us(ETCD_TIMEOUT)) + 2 * p + COMPACTION_SLACK_US;
        if now <= due {
            return None;
        }
        self.compaction_progress.reported = true;
        let holder = self.holder.as_ref().map_or("?", |h| h.value.as_str());
        let since = l.max(m);
        Some(Failure {
            invariant: crate::calico::invariants::COMPACTION_PROGRESSES.name,
            kind: Kind::Liveness,
            node: self.holder.as_ref().and_then(|h| h.node),
            explanation: format!(
                "{holder} has been master since {} and nothing disturbed it or etcd after {}, but no compaction check has rewritten the trigger key (nor compacted) since {} ({} ago; due by {}, period {})",
                secs(m),
                secs(d),
                secs(l),
                secs(now - since),
                secs(due),
                secs(p)
            ),
            measured: Measured::bounded(now - since, due - since),
        })
    }
}
