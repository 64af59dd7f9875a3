//! The router's side of an announcement, checked from the router's ARP entries (`arp-entry`, the
//! world's ground truth of where a service IP's traffic goes) against each speaker's own decisions
//! (`l2-announce`, `l2-withdraw`) and its process ending:
//!
//! * `arp-follows-announcer`: a speaker that starts announcing an IP sends a gratuitous ARP at
//!   once, so with no network fault in force the router points at it within one frame's flight
//!   ([`FRAME_US_MAX`]), not only when its own ARP cache goes stale; if it withdrew the IP less
//!   than [`SPAM_HELD_US`] before, its spam loop may still hold the IP and then sends it only at
//!   the next tick, within [`GARP_EVERY_US`] more;
//! * `announcer-withdraws`: once a speaker withdraws an IP (or its speaker is gone) the router
//!   never again switches to it for that IP later than a frame it sent before could arrive.
//!
//! The router reports its entry only when it changes, so an answer from a speaker the entry
//! already points at is not seen; an answer that moves the entry is.
//!
//! Reads `sim::event::Event::ArpEntry` (a world event) and the MetalLB monitor's calls; calls no
//! model function.

use super::expect::{FRAME_US_MAX, GARP_EVERY_US, SPAM_HELD_US};
use super::invariants::{ANNOUNCER_WITHDRAWS, ARP_FOLLOWS_ANNOUNCER};
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::BTreeMap;

/// A speaker that started announcing an IP and that the router has not yet pointed at.
struct Pending {
    since_us: u64,
    deadline_us: u64,
}

/// A speaker that stopped announcing an IP.
struct Withdrawn {
    at_us: u64,
    /// Frames it sent before may arrive until then.
    deadline_us: u64,
    why: &'static str,
}

/// The two invariants' state (fed by the MetalLB monitor).
#[derive(Default)]
pub(super) struct ArpOracle {
    /// (IP, speaker) -> the announcement the router has not followed yet.
    pending: BTreeMap<(String, String), Pending>,
    /// (IP, speaker) -> its withdrawal (until it announces the IP again).
    withdrawn: BTreeMap<(String, String), Withdrawn>,
    /// Latency faults in force: id -> (node, extra µs).
    latency: BTreeMap<u32, (String, u64)>,
    /// Node -> until when a frame it sent under an ended latency spike may still arrive.
    drain_us: BTreeMap<String, u64>,
}

impl ArpOracle {
    /// The extra latency in force on `node`'s frames now (faults on one node add up).
    fn extra_us(&self, node: &str) -> u64 {
        self.latency
            .values()
            .filter(|(n, _)| n == node)
            .map(|(_, e)| e)
            .sum()
    }

    /// A latency fault starts.
    pub(super) fn latency_start(&mut self, id: u32, node: &str, extra_us: u64) {
        self.latency.insert(id, (node.to_string(), extra_us));
    }

    /// A fault ends at `t`: frames sent under a latency spike it added may arrive until its end
    /// plus the spike.
    pub(super) fn fault_end(&mut self, id: u32, t: u64) {
        if let Some((node, _)) = self.latency.get(&id) {
            let until = t + FRAME_US_MAX + self.extra_us(node);
            let node = node.clone();
            self.latency.remove(&id);
            let d = self.drain_us.entry(node).or_default();
            *d = (*d).max(until);
        }
    }

    /// A fault that cuts, slows or stops part of the network starts: an announcement may not
    /// reach the router, so none is awaited.
    pub(super) fn network_fault(&mut self) {
        self.pending.clear();
    }

    /// `node` starts announcing `ip` at `t`; the router points at `entry`; `quiet`: no network
    /// fault in force.
    pub(super) fn announce(
        &mut self,
        t: u64,
        ip: &str,
        node: &str,
        entry: Option<&String>,
        quiet: bool,
    ) {
        let k = (ip.to_string(), node.to_string());
        // Withdrawn less than a burst and a tick ago, the IP may still be in the speaker's spam
        // loop: then no gratuitous ARP goes out at once, only at the loop's next tick.
        let recent = self
            .withdrawn
            .remove(&k)
            .is_some_and(|w| t <= w.at_us + SPAM_HELD_US);
        if quiet && entry.is_none_or(|e| e != node) {
            let deadline_us = t + FRAME_US_MAX + if recent { GARP_EVERY_US } else { 0 };
            self.pending.insert(
                k,
                Pending {
                    since_us: t,
                    deadline_us,
                },
            );
        }
    }

    /// `node` stops announcing `ip` at `t` (`why`: its own decision, or its speaker is gone).
    pub(super) fn withdraw(&mut self, t: u64, ip: &str, node: &str, why: &'static str) {
        let k = (ip.to_string(), node.to_string());
        self.pending.remove(&k);
        let deadline_us = (t + FRAME_US_MAX + self.extra_us(node))
            .max(self.drain_us.get(node).copied().unwrap_or(0));
        self.withdrawn.insert(
            k,
            Withdrawn {
                at_us: t,
                deadline_us,
                why,
            },
        );
    }

    /// The router's entry for `ip` moved to `node` at `t` (heard `via` a gratuitous ARP or a
    /// reply): `announcer-withdraws`.
    pub(super) fn arp_entry(&mut self, t: u64, ip: &str, node: &str, via: &str) -> Option<Failure> {
        let k = (ip.to_string(), node.to_string());
        self.pending.remove(&k);
        let w = self.withdrawn.get(&k)?;
        (t > w.deadline_us).then(|| Failure {
            invariant: ANNOUNCER_WITHDRAWS.name,
            kind: Kind::Safety,
            node: None,
            explanation: format!(
                "the router took {node}'s {via} for {ip} at {} although {node} stopped announcing it at {} ({}); any frame sent before could have arrived by {}",
                secs(t),
                secs(w.at_us),
                w.why,
                secs(w.deadline_us)
            ),
            measured: Measured::bounded(t - w.at_us, w.deadline_us - w.at_us),
        })
    }

    /// `arp-follows-announcer` at `now`: an announcement the router has not followed in time.
    pub(super) fn due(&self, now: u64, entry: impl Fn(&str) -> Option<String>) -> Option<Failure> {
        let ((ip, node), p) = self.pending.iter().find(|(_, p)| now > p.deadline_us)?;
        Some(Failure {
            invariant: ARP_FOLLOWS_ANNOUNCER.name,
            kind: Kind::Safety,
            node: None,
            explanation: format!(
                "{node} started announcing {ip} at {} with no network fault in force, but by {} the router had not heard it (its entry points at {:?}): no gratuitous ARP reached it",
                secs(p.since_us),
                secs(p.deadline_us),
                entry(ip)
            ),
            measured: Measured::bounded(now - p.since_us, p.deadline_us - p.since_us),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::expect::S as S_US;
    use super::*;

    const IP: &str = "192.168.10.1";

    #[test]
    fn a_new_announcer_must_be_heard_within_a_frame_unless_the_network_is_faulty() {
        let mut o = ArpOracle::default();
        o.announce(100, IP, "n1", None, true);
        assert!(o.due(100 + FRAME_US_MAX, |_| None).is_none());
        let f = o.due(101 + FRAME_US_MAX, |_| None).unwrap();
        assert_eq!(f.invariant, ARP_FOLLOWS_ANNOUNCER.name);
        // Heard: nothing pending.
        assert!(o.arp_entry(200, IP, "n1", "garp").is_none());
        assert!(o.due(u64::MAX, |_| None).is_none());
        // Already pointing at it, or a fault in force (now or starting later): nothing awaited.
        let n1 = "n1".to_string();
        o.announce(300, IP, "n1", Some(&n1), true);
        o.announce(300, IP, "n2", None, false);
        o.announce(300, IP, "n3", None, true);
        o.network_fault();
        assert!(o.due(u64::MAX, |_| None).is_none());
    }

    #[test]
    fn an_ip_announced_again_while_the_spam_loop_may_hold_it_gets_one_more_tick() {
        let mut o = ArpOracle::default();
        o.withdraw(S_US, IP, "n1", "test");
        // Within the burst and a tick of the withdrawal: the next tick's gratuitous ARP is awaited.
        let again = S_US + SPAM_HELD_US;
        o.announce(again, IP, "n1", None, true);
        assert!(o
            .due(again + FRAME_US_MAX + GARP_EVERY_US, |_| None)
            .is_none());
        assert!(o
            .due(again + FRAME_US_MAX + GARP_EVERY_US + 1, |_| None)
            .is_some());
        // Later than that: the loop has dropped the IP and a gratuitous ARP goes out at once.
        let mut o = ArpOracle::default();
        o.withdraw(S_US, IP, "n1", "test");
        let later = S_US + SPAM_HELD_US + 1;
        o.announce(later, IP, "n1", None, true);
        assert!(o.due(later + FRAME_US_MAX + 1, |_| None).is_some());
    }

    #[test]
    fn a_withdrawn_speaker_may_only_be_heard_while_its_frames_can_be_in_flight() {
        let mut o = ArpOracle::default();
        o.withdraw(1_000, IP, "n1", "test");
        assert!(o
            .arp_entry(1_000 + FRAME_US_MAX, IP, "n1", "reply")
            .is_none());
        let f = o
            .arp_entry(1_001 + FRAME_US_MAX, IP, "n1", "reply")
            .unwrap();
        assert_eq!(f.invariant, ANNOUNCER_WITHDRAWS.name);
        // Announcing again lifts it; other speakers are not concerned.
        o.announce(2_000, IP, "n1", None, false);
        assert!(o.arp_entry(S_US, IP, "n1", "reply").is_none());
        assert!(o.arp_entry(S_US, IP, "n2", "reply").is_none());
        // A latency spike on its node (in force, or ended since) stretches the flight.
        o.latency_start(7, "n1", 500_000);
        o.withdraw(S_US, IP, "n1", "test");
        assert!(o
            .arp_entry(S_US + FRAME_US_MAX + 500_000, IP, "n1", "reply")
            .is_none());
        o.fault_end(7, 2 * S_US);
        o.withdraw(2 * S_US + 1, IP, "n1", "test");
        assert!(o
            .arp_entry(2 * S_US + FRAME_US_MAX + 500_000, IP, "n1", "reply")
            .is_none());
        assert!(o
            .arp_entry(2 * S_US + FRAME_US_MAX + 500_001, IP, "n1", "reply")
            .is_some());
    }
}
