//! `no-false-death`: a speaker that no fault touches is never declared dead, at its current
//! incarnation, by another speaker that no fault touches.
//!
//! "Touched" is ground truth from the faults in force (the world's `fault-start` and `fault-end`
//! events) and the speakers' lives: a speaker is touched at time `t` if a fault naming its node
//! (a partition or simplex cut with it on either side, an isolation, a latency spike, a lossy
//! link, a pause, a crash, a clock step, drift or rate change, a task death or stall, a process
//! crash, a service restart) was in force at any time in `[t - W, t]`, or its node crashed or its
//! speaker started or exited in that window. Faults on the API server or the router touch no
//! speaker: memberlist does not use them.
//!
//! A declaration is a member's own suspicion timer running out (memberlist v0.5.1 state.go
//! `suspectNode` l. 1229-1250), which the speaker reports (`ml-declare-dead`); a death learnt from
//! another member's message is not one (that member may be touched). Only a declaration at the
//! accused's current incarnation (what it reports when it refutes, `ml-refute`; 0 for a speaker
//! that never did since it started) counts: a declaration at an older one means the accused did
//! refute, and its refutation missed the declarer. Memberlist cannot rule that out: the
//! refutation is a broadcast sent a bounded number of times to random members (v0.5.1 state.go
//! `refute` l. 918-942, `gossip` l. 593-645), and a suspicion reaching a member late, from a
//! touched member's retransmissions, finds nobody left to repeat it; the accused ignores a stale
//! suspicion (`suspectNode` l. 1173-1176), so only a push/pull or a join corrects that member. `W` covers the longest
//! chain from a cause to a declaration: the longest awareness-scaled probe (8 probe intervals:
//! v0.5.1 state.go `probeNode` l. 312) until the suspicion, the longest suspicion
//! (`SuspicionMaxTimeoutMult` times the minimum), and a probe interval for the messages in
//! flight. Between two untouched speakers no message is lost or late, so a suspicion one holds of
//! the other (started by its own probe, by another member's gossip or by a push/pull) reaches the
//! accused, by gossip and by the suspicion a ping to a suspect carries, and its refutation comes
//! back well within the minimum suspicion timeout.

use super::expect::suspicion_max_us;
use super::invariants::NO_FALSE_DEATH;
use model::metallb as m;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::{BTreeMap, BTreeSet};

/// The window `W` (µs) for a cluster of `speakers`.
pub const fn window_us(speakers: u32) -> u64 {
    let probe = m::PROBE_INTERVAL.as_micros() as u64;
    m::AWARENESS_MAX_MULTIPLIER as u64 * probe + suspicion_max_us(speakers) + probe
}

/// The oracle's state (fed by the MetalLB monitor).
pub(super) struct DeathOracle {
    window_us: u64,
    /// Fault id -> the nodes it touches, while in force.
    faults: BTreeMap<u32, Vec<String>>,
    /// Node -> the faults in force touching it.
    active: BTreeMap<String, BTreeSet<u32>>,
    /// Node -> the last time something touched it.
    last: BTreeMap<String, u64>,
    /// Speaker -> its incarnation (as its refutations report; absent: 0).
    incarnation: BTreeMap<String, u32>,
}

impl DeathOracle {
    pub(super) fn new(speakers: u32) -> Self {
        DeathOracle {
            window_us: window_us(speakers),
            faults: BTreeMap::new(),
            active: BTreeMap::new(),
            last: BTreeMap::new(),
            incarnation: BTreeMap::new(),
        }
    }

    /// `node`'s speaker refuted: its incarnation is `inc`.
    pub(super) fn refuted(&mut self, node: &str, inc: u32) {
        self.incarnation.insert(node.to_string(), inc);
    }

    /// `node`'s speaker starts a new life at incarnation 0 (and that touches it).
    pub(super) fn speaker_started(&mut self, t: u64, node: &str) {
        self.incarnation.remove(node);
        self.touch(t, node);
    }

    /// Fault `id` starts at `t`, touching `nodes`; an instantaneous one (`lasts` false) touches
    /// them at `t` only.
    pub(super) fn fault_start(&mut self, t: u64, id: u32, nodes: Vec<String>, lasts: bool) {
        for n in &nodes {
            self.touch(t, n);
            if lasts {
                self.active.entry(n.clone()).or_default().insert(id);
            }
        }
        if lasts {
            self.faults.insert(id, nodes);
        }
    }

    /// Fault `id` ends at `t`.
    pub(super) fn fault_end(&mut self, t: u64, id: u32) {
        for n in self.faults.remove(&id).unwrap_or_default() {
            if let Some(a) = self.active.get_mut(&n) {
                a.remove(&id);
            }
            self.touch(t, &n);
        }
    }

    /// Something happened to `node` at `t` (a crash, its speaker starting or exiting).
    pub(super) fn touch(&mut self, t: u64, node: &str) {
        self.last.insert(node.to_string(), t);
    }

    fn untouched(&self, t: u64, node: &str) -> bool {
        self.active.get(node).is_none_or(|a| a.is_empty())
            && self
                .last
                .get(node)
                .is_none_or(|&l| t.saturating_sub(l) > self.window_us)
    }

    /// `by` declares `member` dead at incarnation `inc` at `t`: a failure if neither is touched
    /// and `inc` is the member's current incarnation.
    pub(super) fn declared(&self, t: u64, by: &str, member: &str, inc: u32) -> Option<Failure> {
        let current = self.incarnation.get(member).copied().unwrap_or(0);
        if inc < current || !(self.untouched(t, by) && self.untouched(t, member)) {
            return None;
        }
        let since = |n: &str| match self.last.get(n) {
            Some(&l) => format!("{} since {}", n, secs(l)),
            None => format!("{n} ever"),
        };
        Some(Failure {
            invariant: NO_FALSE_DEATH.name,
            kind: Kind::Safety,
            node: None,
            explanation: format!(
                "{by} declared {member} dead at incarnation {inc}, its current one, at {} although no fault touched {} or {}",
                secs(t),
                since(by),
                since(member)
            ),
            measured: Measured::unbounded(t - self.last_of(by, member)),
        })
    }

    /// The last time either was touched (0: never).
    fn last_of(&self, a: &str, b: &str) -> u64 {
        let l = |n: &str| self.last.get(n).copied().unwrap_or(0);
        l(a).max(l(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_a_scaled_probe_a_suspicion_and_a_probe() {
        assert_eq!(window_us(3), 8_000_000 + 24_000_000 + 1_000_000);
    }

    #[test]
    fn only_a_declaration_between_untouched_speakers_fails() {
        let w = window_us(3);
        let mut o = DeathOracle::new(3);
        assert!(o.declared(1_000, "n1", "n2", 0).is_some());
        o.fault_start(10_000, 0, vec!["n3".into()], true);
        assert!(o.declared(20_000, "n3", "n2", 0).is_none(), "the declarer");
        assert!(o.declared(20_000, "n1", "n3", 0).is_none(), "the declared");
        o.fault_end(50_000, 0);
        assert!(o.declared(50_000 + w, "n1", "n3", 0).is_none(), "within W");
        assert!(o.declared(50_001 + w, "n1", "n3", 0).is_some(), "after W");
        o.fault_start(60_000, 1, vec!["n1".into()], false);
        assert!(o.declared(60_000 + w, "n1", "n2", 0).is_none());
        assert!(o.declared(60_001 + w, "n1", "n2", 0).is_some());
        o.touch(70_000, "n2");
        assert!(o.declared(70_000 + w, "n1", "n2", 0).is_none());
        // A refuted incarnation declared dead: the refutation missed the declarer.
        o.refuted("n2", 4);
        assert!(o.declared(70_001 + w, "n1", "n2", 3).is_none());
        assert!(o.declared(70_001 + w, "n1", "n2", 4).is_some());
        o.speaker_started(80_000, "n2");
        assert!(o.declared(80_001 + w, "n1", "n2", 0).is_some());
    }
}
