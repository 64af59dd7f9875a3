//! How long a host may believe it is master, timed on true time: checks
//! `master-only-work-on-fresh-stamp`.
//!
//! Upstream's design: the elector stamps after it wins and after each successful refresh, a
//! refresh that keeps the lease alive for its TTL (60 s), and `is_master()` trusts a stamp for
//! `MASTER_TIMEOUT` (60 s) from its writing (election.py `Elector._become_master`, lines 290 and
//! 317; mech_calico.py `CalicoMechanismDriver.is_master`, lines 580-601, at 87c15906). So a
//! stamp is trusted no longer than the lease it confirms lives, give or take the round trip
//! between the lease's renewal and the stamp: two hosts may both be master only for that
//! moment, and for the work a host dispatches on its last yes (which `master-only-work-stops`
//! and `master-only-work-legitimate` bound). The promise only holds while `time.time()` keeps
//! pace with true time; a backward wall-clock step makes an old stamp look young, and the
//! longer a stale stamp survives (a hung elector; with etcd auth, a refresh blocked for two
//! `etcd_timeout`s before it fails) the longer the step can stretch the trust.
//!
//! The check: when a host does master-only work while another host is master (it holds the
//! election key, its process lives and its stamp is set), the last yes `is_master()` gave in the
//! acting process must have come within [`STAMP_TRUST_BOUND_US`] of true time after the acting
//! host's elector last wrote its stamp.
//!
//! Reads (observations only): the model's `CalicoStamp` (each write of the stamp, with the true
//! time of its record), `CalicoIsMaster` (each yes of `is_master()`) and `CalicoMasterOnly`
//! events, and the election key's holder (`election.rs`). Calls no model function.

use super::{secs, CalicoMonitor, STAMP_TRUST_BOUND_US};
use sim::{Failure, Kind, Measured, NodeIx};
use std::collections::BTreeMap;

/// What the monitor keeps for the check.
#[derive(Default)]
pub(super) struct StampTrust {
    /// Per host: true time of its elector's last write of a (non-zero) stamp.
    written_us: BTreeMap<NodeIx, u64>,
    /// Per worker process: true time of `is_master()`'s last yes, and how old the host's stamp
    /// was then in true time (`None`: no stamp was ever written on the host).
    answers: BTreeMap<(NodeIx, u32), (u64, Option<u64>)>,
}

impl CalicoMonitor {
    /// The elector of `node` wrote `stamp_us` (0: cleared) at true time `t`.
    pub(super) fn on_stamp_written(&mut self, node: NodeIx, stamp_us: i64, t: u64) {
        if stamp_us != 0 {
            self.stamp_trust.written_us.insert(node, t);
        }
    }

    /// `is_master()` answered yes in `node`'s process `pid` at true time `t`.
    pub(super) fn on_is_master(&mut self, node: NodeIx, pid: u32, t: u64) {
        let age = self.stamp_trust.written_us.get(&node).map(|s| t - s);
        self.stamp_trust.answers.insert((node, pid), (t, age));
    }

    /// `master-only-work-on-fresh-stamp` for master-only work by `node`'s process `pid` at `t`.
    pub(super) fn check_stamp_age(
        &self,
        node: NodeIx,
        pid: u32,
        worker: &str,
        action: &str,
        t: u64,
    ) -> Option<Failure> {
        let h = self.holder.as_ref()?;
        let other = h.node.filter(|&n| n != node)?;
        if !self.master_exists() {
            return None;
        }
        let (answered, age) = *self.stamp_trust.answers.get(&(node, pid))?;
        let age = age?;
        if age <= STAMP_TRUST_BOUND_US {
            return None;
        }
        let name = &self.names[node as usize];
        let written = answered - age;
        Some(Failure {
            invariant: crate::calico::invariants::MASTER_ONLY_WORK_ON_FRESH_STAMP.name,
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} ({worker}) did '{action}' at {} on is_master()'s yes at {}, when the stamp its elector last wrote (at {}) was {} old in true time (is_master() trusts a stamp for MASTER_TIMEOUT, bound {}), while {} was master (it holds the election key since {}, its stamp set){}",
                secs(t),
                secs(answered),
                secs(written),
                secs(age),
                secs(STAMP_TRUST_BOUND_US),
                self.names[other as usize],
                secs(h.since_us),
                self.fault_note(node)
            ),
            measured: Measured::bounded(age, STAMP_TRUST_BOUND_US),
        })
    }
}
