//! `marks-within-excess` and `release-after-delay`: how many IPs one pass of an operator may
//! mark, and how soon after an IP could first have been timed the operator may release it.
//!
//! Independence: the excess count is this monitor's own transcription of upstream's
//! (`excess::excess_count`, from cilium/cilium `pkg/ipam/node.go` calculateExcessIPs
//! l. 347-378 @ed90dd5); the used IPs a pass counted are read from the API server's stored
//! version the pass names (`api.rs`); when an IP was last assigned to a node is the cloud's own
//! event, and the operators' monotonic clocks are followed from their rate changes and boots.
//! What the model reports and the monitor takes as given: which version it counted and how many
//! IPs its cloud view of the node held (the describe answer it last read, an input like the
//! resourceVersion a decision names). Calls no model function.

use super::excess::{excess_count, Watermarks};
use super::{CiliumMonitor, NodeIp};
use crate::cilium::invariants::{MARKS_WITHIN_EXCESS, RELEASE_AFTER_DELAY};
use model::cilium::RELEASE_DELAY;
use sim::event::Record;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured, Short};
use std::collections::BTreeMap;

/// The marks of the pass in progress: (operator node index, node, time), and how many so far.
/// A pass emits all its marks at one instant (no await between them), and two passes of one
/// operator for one node never share an instant.
#[derive(Default)]
pub(super) struct Marks {
    pass: Option<((usize, Short, u64), usize)>,
}

impl Marks {
    /// One more mark by the operator on node `op` for `node` at `t_us`: the pass's count so far.
    fn count(&mut self, op: usize, node: Short, t_us: u64) -> usize {
        let key = (op, node, t_us);
        match &mut self.pass {
            Some((k, n)) if *k == key => *n += 1,
            _ => self.pass = Some((key, 1)),
        }
        self.pass.as_ref().map_or(0, |p| p.1)
    }
}

/// When each IP was last assigned to its node, as each operator node's monotonic clock read
/// then; and each node's last boot (a clock reading from before it is of another epoch).
#[derive(Default)]
pub(super) struct Assigned {
    /// (node, ip) -> (true µs of the assignment, the operators' readings then: (node index,
    /// reading)).
    at: BTreeMap<NodeIp, (u64, Vec<(usize, u64)>)>,
    /// Per node index: when it last booted (true µs).
    booted: BTreeMap<usize, u64>,
}

impl Assigned {
    /// Node `i` booted at `t_us`.
    pub(super) fn boot(&mut self, i: usize, t_us: u64) {
        self.booted.insert(i, t_us);
    }

    /// When the cloud last assigned `ip` to `node` (true µs; none: not since the start).
    pub(super) fn last(&self, node: Short, ip: Short) -> Option<u64> {
        self.at.get(&(node, ip)).map(|a| a.0)
    }
}

impl CiliumMonitor {
    /// The cloud assigned `key` at `t_us`: the operators' clocks are read now.
    pub(super) fn note_assigned(&mut self, key: NodeIp, t_us: u64) {
        let readings = (0..self.names.len())
            .filter(|i| self.names[*i].starts_with("operator"))
            .map(|i| (i, self.clocks[i].read(t_us)))
            .collect();
        self.assigned.at.insert(key, (t_us, readings));
    }

    /// An operator marked an IP of node `n` in a pass whose excess count read `available` IPs
    /// in its cloud view and the used IPs of version `counted_rv` (`marks-within-excess`).
    pub(super) fn check_mark_count(
        &mut self,
        rec: &Record,
        n: Short,
        available: u32,
        counted_rv: u64,
    ) -> Option<Failure> {
        let op = rec.node as usize;
        let count = self.marks.count(op, n, rec.t_us);
        let i = self.index(n)?;
        let version = self.api.version(i, counted_rv);
        let used = version.map_or(0, |v| v.used_count());
        let w: Watermarks = self.watermarks;
        let excess = excess_count(available as usize, used, w);
        if count <= excess {
            return None;
        }
        Some(Failure {
            invariant: MARKS_WITHIN_EXCESS.name,
            kind: Kind::Safety,
            node: Some(rec.node),
            explanation: format!(
                "{} marked {count} IPs of {n} in one pass at {}, but only {excess} are in excess: its cloud view held {available} IPs and {n}'s CiliumNode at resourceVersion {counted_rv}, whose used IPs it counted, lists {used} (pre-allocate {}, min-allocate {}, max-above-watermark {})",
                self.names[op],
                secs(rec.t_us),
                w.pre,
                w.min,
                w.maw
            ),
            measured: Measured::unbounded(
                version.map_or(0, |v| rec.t_us.saturating_sub(v.t_us)),
            ),
        })
    }

    /// An operator decided to unassign `ip` of node `n` (`release-after-delay`): the later of
    /// its IPAM's start and the IP's last assignment to the node is at least the release delay
    /// back on its monotonic clock.
    pub(super) fn check_release_delay(&self, rec: &Record, (n, ip): NodeIp) -> Option<Failure> {
        let op = rec.node as usize;
        let started = self.ipam_started[op]?;
        let booted = self.assigned.booted.get(&op).copied().unwrap_or(0);
        let (assigned_t, assigned_mono) = match self.assigned.at.get(&(n, ip)) {
            Some((t, readings)) if *t >= booted => (
                Some(*t),
                readings.iter().find(|r| r.0 == op).map_or(0, |r| r.1),
            ),
            _ => (None, 0),
        };
        let now = self.clocks[op].read(rec.t_us);
        let from = started.max(assigned_mono);
        let waited = now.saturating_sub(from);
        let delay_us = RELEASE_DELAY.as_micros() as u64;
        if waited >= delay_us {
            return None;
        }
        let since = match assigned_t {
            Some(t) if assigned_mono > started => {
                format!("the cloud assigned {ip} to {n} at {}", secs(t))
            }
            _ => "its IPAM started".to_string(),
        };
        Some(Failure {
            invariant: RELEASE_AFTER_DELAY.name,
            kind: Kind::Safety,
            node: Some(rec.node),
            explanation: format!(
                "{} decided at {} to unassign {ip} of {n} only {} on its monotonic clock after {since} (the release delay is {})",
                self.names[op],
                secs(rec.t_us),
                secs(waited),
                secs(delay_us)
            ),
            measured: Measured::bounded(waited, delay_us),
        })
    }
}
