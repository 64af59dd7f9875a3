//! `leader-runs-ipam`: the Lease, as the API server stores it, names an operator whose IPAM does
//! not run (it has not started, or its process has exited) for no longer than the bound while
//! pods wait for an IP.
//!
//! Ground truth only: the holder comes from the Lease writes the API server applied (their
//! recorded objects' `holderIdentity`), an IPAM's start from the operator's own start event, and
//! its end from the world's process exits and node crashes.

use super::cleanup::liveness;
use super::CiliumMonitor;
use crate::cilium::invariants::LEADER_RUNS_IPAM;
use crate::cilium::IPAM_GAP_BOUND_US;
use sim::units::show_secs as secs;
use sim::Failure;
use std::collections::BTreeSet;

/// The Lease's holder and whether its IPAM runs.
#[derive(Default)]
pub(super) struct LeaseWatch {
    /// The holder identity the stored Lease names (none: no Lease or an empty holder) and since
    /// when it names it.
    holder: Option<(String, u64)>,
    /// Operator identities (`HOST-PID`) whose IPAM started and whose process still runs.
    running: BTreeSet<String>,
    /// Since when the holder has had no running IPAM (none: it has one, or there is no holder).
    gap_since: Option<u64>,
}

impl LeaseWatch {
    /// The API server stored a Lease naming `holder` (empty: released).
    pub(super) fn lease_written(&mut self, t_us: u64, holder: &str) {
        let now = (!holder.is_empty()).then(|| holder.to_string());
        if self.holder.as_ref().map(|(h, _)| h) != now.as_ref() {
            self.holder = now.map(|h| (h, t_us));
            self.gap_since = None;
        }
        self.recompute(t_us);
    }

    /// The IPAM of operator `identity` started.
    pub(super) fn ipam_started(&mut self, t_us: u64, identity: &str) {
        self.running.insert(identity.to_string());
        self.recompute(t_us);
    }

    /// Operator process `pid` of `host` ended (none: every process of the host, a crash).
    pub(super) fn ended(&mut self, t_us: u64, host: &str, pid: Option<u32>) {
        self.running.retain(|id| {
            let Some(p) = id.strip_prefix(host).and_then(|r| r.strip_prefix('-')) else {
                return true;
            };
            let Ok(p) = p.parse::<u32>() else {
                return true; // another host whose name starts with this one's
            };
            pid.is_some_and(|pid| pid != p)
        });
        self.recompute(t_us);
    }

    fn recompute(&mut self, t_us: u64) {
        let gap = self
            .holder
            .as_ref()
            .is_some_and(|(h, _)| !self.running.contains(h));
        self.gap_since = match gap {
            true => Some(self.gap_since.unwrap_or(t_us)),
            false => None,
        };
    }
}

impl CiliumMonitor {
    /// `leader-runs-ipam` at `now_us`, after faults stopped at `l`: the gap is counted from the
    /// later of its start and `l`, and only while a pod waits for an IP on a node whose agent and
    /// the operators run all their tasks.
    pub(super) fn leader_without_ipam(&self, l: u64, now_us: u64) -> Option<Failure> {
        let w = &self.lease;
        let since = w.gap_since?.max(l);
        if now_us <= since + IPAM_GAP_BOUND_US {
            return None;
        }
        let waiting = self.pending.values().find(|(n, t)| {
            let i = self.index(*n).expect("a pod's node is a node");
            *t <= now_us && self.all_tasks_run(i)
        })?;
        let (holder, held) = w.holder.as_ref().expect("a gap has a holder");
        Some(liveness(
            &LEADER_RUNS_IPAM,
            format!(
                "the Lease has named {holder} since {} and its IPAM has not run since {} (counted from {}), while pods wait for an IP (on {} since {})",
                secs(*held),
                secs(w.gap_since.unwrap_or(since)),
                secs(since),
                waiting.0,
                secs(waiting.1),
            ),
            now_us - since,
            IPAM_GAP_BOUND_US,
        ))
    }
}
