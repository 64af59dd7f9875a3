//! `router-follows-owner`: while exactly one speaker announces an IP and no network fault is in
//! force, the router's neighbour entry sends the IP's traffic to that speaker, within one
//! gratuitous-ARP tick and a frame of the situation arising.
//!
//! Why that bound: a speaker announcing an IP sends a gratuitous ARP at once, or at the spam
//! loop's next tick if the loop still held the IP, and one every tick for 5 s after its latest
//! `SetBalancer` (metallb/metallb internal/layer2/announcer.go `spamLoop`, 7938d3f, l. 157-197);
//! the router's existing entry takes a gratuitous ARP whatever its state and locktime (Linux
//! `arp_process`: `override = ... || is_garp`). When the router points elsewhere while a sole
//! announcer is no longer sending gratuitous ARPs, nothing but the neighbour cache's own expiry
//! (up to a minute) corrects it, and the service's traffic goes to the wrong node meanwhile.
//!
//! Computed from ground truth only: the announcements the monitor tracks (`l2-announce`,
//! `l2-withdraw`, a speaker's end), the router's neighbour events, and the faults in force.

use super::expect::{FRAME_US_MAX, GARP_EVERY_US};
use super::invariants::ROUTER_FOLLOWS_OWNER;
use sim::units::show_secs as secs;
use sim::{Failure, Kind, Measured};
use std::collections::BTreeMap;

/// The bound: one gratuitous-ARP tick and a frame's flight.
pub const OWNER_BOUND_US: u64 = GARP_EVERY_US + FRAME_US_MAX;

/// A misrouting window in progress.
#[derive(Clone, Debug, PartialEq)]
struct Wrong {
    since_us: u64,
    owner: String,
    hop: Option<String>,
}

/// The invariant's state (fed by the MetalLB monitor).
#[derive(Default)]
pub(super) struct OwnerOracle {
    /// IP -> its misrouting window.
    wrong: BTreeMap<String, Wrong>,
}

impl OwnerOracle {
    /// The situation of `ip` at `t`: its announcers, where the router sends its traffic (`None`:
    /// it sends none, having no entry or one still resolving; `Some(None)`: it drops it), whether
    /// no network fault is in force. A window opens when exactly one speaker announces, the
    /// network is quiet and the traffic goes elsewhere; it closes as soon as any of that ends.
    pub(super) fn observe<'a>(
        &mut self,
        t: u64,
        ip: &str,
        mut announcers: impl Iterator<Item = &'a String>,
        sent: Option<Option<&String>>,
        quiet: bool,
    ) {
        let Some(hop) = sent else {
            self.wrong.remove(ip);
            return;
        };
        let sole = match (announcers.next(), announcers.next()) {
            (Some(a), None) => Some(a),
            _ => None,
        };
        match sole.filter(|a| quiet && hop != Some(*a)) {
            Some(owner) => {
                let w = Wrong {
                    since_us: t,
                    owner: owner.clone(),
                    hop: hop.cloned(),
                };
                let keep = self
                    .wrong
                    .get(ip)
                    .is_some_and(|o| o.owner == w.owner && o.hop == w.hop);
                if !keep {
                    self.wrong.insert(ip.to_string(), w);
                }
            }
            None => {
                self.wrong.remove(ip);
            }
        }
    }

    /// A network fault starts: every window closes (frames may not get through).
    pub(super) fn network_fault(&mut self) {
        self.wrong.clear();
    }

    /// The invariant at `now`: a window open longer than the bound.
    pub(super) fn due(&self, now: u64) -> Option<Failure> {
        let (ip, w) = self
            .wrong
            .iter()
            .find(|(_, w)| now > w.since_us + OWNER_BOUND_US)?;
        let hop = w.hop.as_deref().unwrap_or("nowhere (its entry FAILED)");
        Some(Failure {
            invariant: ROUTER_FOLLOWS_OWNER.name,
            kind: Kind::Safety,
            node: None,
            explanation: format!(
                "{} alone announces {ip} with no network fault in force since {}, but by {} the router still sent its traffic to {hop}",
                w.owner,
                secs(w.since_us),
                secs(now)
            ),
            measured: Measured::bounded(now - w.since_us, OWNER_BOUND_US),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: &str = "192.168.10.1";

    #[test]
    fn a_sole_announcer_must_get_the_traffic_within_a_tick_and_a_frame() {
        let (n1, n2) = ("n1".to_string(), "n2".to_string());
        let mut o = OwnerOracle::default();
        o.observe(100, IP, [&n1].into_iter(), Some(Some(&n2)), true);
        assert!(o.due(100 + OWNER_BOUND_US).is_none());
        // Another event that changes nothing keeps the window's start.
        o.observe(200, IP, [&n1].into_iter(), Some(Some(&n2)), true);
        let f = o.due(101 + OWNER_BOUND_US).unwrap();
        assert_eq!(f.invariant, ROUTER_FOLLOWS_OWNER.name);
        // The router follows: closed.
        o.observe(300, IP, [&n1].into_iter(), Some(Some(&n1)), true);
        assert!(o.due(u64::MAX / 2).is_none());
        // Two announcers, none, or a fault in force: nothing is expected.
        o.observe(400, IP, [&n1, &n2].into_iter(), Some(None), true);
        o.observe(400, "192.168.10.2", std::iter::empty(), Some(None), true);
        o.observe(400, "192.168.10.3", [&n1].into_iter(), Some(None), false);
        // No traffic sent yet (no entry, or resolving).
        o.observe(400, "192.168.10.4", [&n1].into_iter(), None, true);
        assert!(o.due(u64::MAX / 2).is_none());
        o.observe(500, IP, [&n1].into_iter(), Some(None), true);
        assert!(
            o.due(501 + OWNER_BOUND_US).is_some(),
            "a FAILED entry drops it"
        );
        o.network_fault();
        assert!(o.due(u64::MAX / 2).is_none());
    }

    #[test]
    fn the_bound_is_a_tick_and_a_frame() {
        assert_eq!(OWNER_BOUND_US, 1_106_000);
    }
}
