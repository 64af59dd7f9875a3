//! One entry of a Linux neighbour (ARP) cache: the state machine a Linux router (or node) runs
//! for the next hop of a service IP, with the kernel's default parameters.
//!
//! The states are the kernel's NUD states (`include/net/neighbour.h`). Transitions, as read in
//! Linux v6.18 (`net/core/neighbour.c` and `net/ipv4/arp.c`):
//!
//! * a packet to an address with no entry, or with a FAILED one, makes it INCOMPLETE and sends a
//!   broadcast request at once (`__neigh_event_send`: `probes` starts at `ucast_solicit`, so every
//!   solicitation of an INCOMPLETE entry is a broadcast), then one every `retrans_time`; after
//!   `mcast_solicit` of them unanswered the entry is FAILED and its queued packets are dropped
//!   (`neigh_timer_handler`, `neigh_max_probes` = ucast + app + mcast probes);
//! * an answer makes it REACHABLE for `reachable_time` from that confirmation (`__neigh_update`);
//!   a router forwarding traffic gets no upper-layer confirmation (only local TCP confirms), so
//!   only answered probes confirm here;
//! * when `reachable_time` has passed the entry is DELAY if it was used on the slow path within
//!   `delay_first_probe_time`, else STALE (`neigh_timer_handler`); packets of a REACHABLE entry
//!   take the cached fast path, which does not stamp `used` (`neigh_output` with a valid
//!   `hh_len`), so with reachable_time (15-45 s) above delay_first_probe_time (5 s) it is STALE;
//! * a packet to a STALE entry is sent to the cached address and makes it DELAY
//!   (`__neigh_event_send`); after `delay_first_probe_time` with no confirmation it is PROBE
//!   (`neigh_timer_handler`), which sends `ucast_solicit` unicast requests to the cached address,
//!   `retrans_time` apart; with the default `mcast_resolicit` 0 nothing is broadcast, and the
//!   entry is FAILED once they are spent (`neigh_max_probes` for PROBE uses `mcast_reprobes`);
//!   traffic keeps going to the cached address in DELAY and PROBE;
//! * an ARP frame from the address updates an existing entry only (`arp_accept` 0: `arp_process`
//!   creates no entry for unsolicited ARP); a reply to this host makes it REACHABLE, anything else
//!   (a broadcast, a request) STALE (`arp_process`); a different link-layer address replaces the
//!   cached one only if `locktime` has passed since the entry last changed, or the frame is a
//!   gratuitous ARP (`arp_process`: `override = time_after(jiffies, n->updated + LOCKTIME) ||
//!   is_garp`), so of several answers back to back the first wins; the same address with a
//!   STALE update leaves the state alone (`__neigh_update`: "do not change entry state, if new one
//!   is STALE").
//!
//! MetalLB's gratuitous ARP is a broadcast request and a broadcast reply with sender and target
//! IP both the service IP (metallb/metallb internal/layer2/arp.go `Gratuitous`, 7938d3f,
//! l. 54-66). The kernel's `arp_is_garp` takes the request (target IP = sender IP) as gratuitous;
//! the reply, whose target hardware address is the broadcast address and not the sender's, is not,
//! and arrives within `locktime` of the request with the same address: a no-op. [`Heard::Garp`]
//! stands for the pair.
//!
//! Defaults (`Documentation/networking/ip-sysctl.rst` "neigh/default/*" and arp(7)):
//! `base_reachable_time` 30 s, `delay_first_probe_time` 5 s, `retrans_time` 1 s, `ucast_solicit`
//! 3, `mcast_solicit` 3, `app_solicit` 0, `mcast_resolicit` 0, `locktime` 1 s (`net/ipv4/arp.c`
//! `arp_tbl` `.parms`). `reachable_time` is drawn uniformly in [base/2, 3·base/2)
//! (`neigh_rand_reach_time`) per table, and drawn again every 300 s (`neigh_periodic_work`); the
//! entry is handed the table's current value. Garbage collection is not modelled: the periodic
//! collector keeps every entry while the table holds fewer than `gc_thresh1` (128) entries.

use crate::event::NodeIx;
use serde::{Deserialize, Serialize};

/// The kernel's neighbour parameters (µs and counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `base_reachable_time`.
    pub base_reachable_us: u64,
    /// `delay_first_probe_time`.
    pub delay_first_probe_us: u64,
    /// `retrans_time`: between two solicitations.
    pub retrans_us: u64,
    /// `ucast_solicit`.
    pub ucast_probes: u32,
    /// `mcast_solicit`.
    pub mcast_probes: u32,
    /// `mcast_resolicit`.
    pub mcast_reprobes: u32,
    /// `locktime`.
    pub locktime_us: u64,
}

/// Linux's defaults for ARP (see the module documentation).
pub const LINUX_DEFAULTS: Params = Params {
    base_reachable_us: 30_000_000,
    delay_first_probe_us: 5_000_000,
    retrans_us: 1_000_000,
    ucast_probes: 3,
    mcast_probes: 3,
    mcast_reprobes: 0,
    locktime_us: 1_000_000,
};

/// How often the table draws `reachable_time` again (`neigh_periodic_work`: every 300 s).
pub const REACHABLE_REDRAW_US: u64 = 300_000_000;

impl Params {
    /// The smallest `reachable_time` a draw gives (base / 2).
    pub const fn reachable_min_us(&self) -> u64 {
        self.base_reachable_us / 2
    }

    /// The largest (just under 3 · base / 2).
    pub const fn reachable_max_us(&self) -> u64 {
        self.base_reachable_us + self.base_reachable_us / 2
    }

    /// `neigh_max_probes` for an entry in `state`.
    const fn max_probes(&self, state: Nud) -> u32 {
        self.ucast_probes
            + match state {
                Nud::Probe => self.mcast_reprobes,
                _ => self.mcast_probes,
            }
    }

    /// The longest the entry keeps sending traffic to an address that stopped answering, with
    /// traffic at least every `gap_us`: the whole of the largest `reachable_time`, a packet to
    /// turn STALE into DELAY, `delay_first_probe_time`, the unicast probes, then a packet to start
    /// resolving again (its first broadcast is answered by whoever answers now).
    pub const fn stale_entry_max_us(&self, gap_us: u64) -> u64 {
        self.reachable_max_us()
            + gap_us
            + self.delay_first_probe_us
            + self.ucast_probes as u64 * self.retrans_us
            + gap_us
    }
}

/// A neighbour entry's state (the kernel's NUD states that occur for ARP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nud {
    /// Created, never resolved (a fresh entry before its first packet is handled).
    None,
    /// Resolving: broadcast requests, packets queued.
    Incomplete,
    /// Confirmed within `reachable_time`.
    Reachable,
    /// Not confirmed lately; used as is until the next packet.
    Stale,
    /// Used while STALE: waiting `delay_first_probe_time` for a confirmation.
    Delay,
    /// Sending unicast requests to the cached address.
    Probe,
    /// Resolution failed; the next packet starts it again.
    Failed,
}

impl Nud {
    /// `NUD_VALID`: the entry has an address traffic goes to.
    pub const fn valid(self) -> bool {
        matches!(self, Nud::Reachable | Nud::Stale | Nud::Delay | Nud::Probe)
    }
}

/// A request the entry sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solicit {
    /// To the cached address only.
    Unicast(NodeIx),
    /// To every port.
    Broadcast,
}

/// An ARP frame heard from the address's owner candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// A gratuitous ARP (broadcast): overrides at once, asserts no reachability.
    Garp,
    /// A unicast reply to this host's request: asserts reachability.
    Reply,
}

/// One neighbour entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its state.
    pub state: Nud,
    /// The cached address (the node traffic goes to while the state is valid).
    pub ha: Option<NodeIx>,
    confirmed: u64,
    updated: u64,
    used: u64,
    probes: u32,
    /// When its timer fires (µs), if armed.
    pub timer: Option<u64>,
}

impl Default for Entry {
    fn default() -> Entry {
        Entry {
            state: Nud::None,
            ha: None,
            confirmed: 0,
            updated: 0,
            used: 0,
            probes: 0,
            timer: None,
        }
    }
}

impl Entry {
    /// Where a packet sent now goes (`None`: queued or dropped).
    pub fn next_hop(&self) -> Option<NodeIx> {
        self.ha.filter(|_| self.state.valid())
    }

    /// A packet leaves for the address at `now` on the slow path (the entry is not REACHABLE):
    /// `neigh_event_send_probe`, `__neigh_event_send`. Returns the request to send at once.
    pub fn send(&mut self, now: u64, p: &Params) -> Option<Solicit> {
        self.used = now;
        match self.state {
            Nud::Reachable | Nud::Delay | Nud::Probe | Nud::Incomplete => None,
            Nud::Stale => {
                self.state = Nud::Delay;
                self.updated = now;
                self.timer = Some(now + p.delay_first_probe_us);
                None
            }
            Nud::None | Nud::Failed => {
                self.probes = p.ucast_probes;
                self.state = Nud::Incomplete;
                self.updated = now;
                self.timer = Some(now + p.retrans_us);
                Some(self.probe(p))
            }
        }
    }

    /// Whether a packet at this state needs the slow path (anything but REACHABLE, DELAY, PROBE
    /// and INCOMPLETE, whose packets change nothing in the entry but `used`).
    pub fn packet_changes_state(&self) -> bool {
        matches!(self.state, Nud::None | Nud::Stale | Nud::Failed)
    }

    /// `neigh_probe` and `arp_solicit`: the first `ucast_solicit` probes of an entry go to its
    /// cached address, the rest are broadcast (`app_solicit` is 0).
    fn probe(&mut self, p: &Params) -> Solicit {
        let s = match self.ha {
            Some(ha) if self.probes < p.ucast_probes => Solicit::Unicast(ha),
            _ => Solicit::Broadcast,
        };
        self.probes += 1;
        s
    }

    /// Its timer fires at `now` (`neigh_timer_handler`); `reachable_us` is the table's current
    /// `reachable_time`. Returns the request to send.
    pub fn fire(&mut self, now: u64, reachable_us: u64, p: &Params) -> Option<Solicit> {
        self.timer = None;
        match self.state {
            Nud::Reachable => {
                if now <= self.confirmed + reachable_us {
                    self.timer = Some(self.confirmed + reachable_us);
                } else if now <= self.used + p.delay_first_probe_us {
                    self.state = Nud::Delay;
                    self.updated = now;
                    self.timer = Some(now + p.delay_first_probe_us);
                } else {
                    self.state = Nud::Stale;
                    self.updated = now;
                }
            }
            Nud::Delay => {
                if now <= self.confirmed + p.delay_first_probe_us {
                    self.state = Nud::Reachable;
                    self.updated = now;
                    self.timer = Some(self.confirmed + reachable_us);
                } else {
                    self.state = Nud::Probe;
                    self.updated = now;
                    self.probes = 0;
                    self.timer = Some(now + p.retrans_us);
                }
            }
            Nud::Probe | Nud::Incomplete => self.timer = Some(now + p.retrans_us),
            Nud::None | Nud::Stale | Nud::Failed => {}
        }
        if matches!(self.state, Nud::Incomplete | Nud::Probe)
            && self.probes >= p.max_probes(self.state)
        {
            self.state = Nud::Failed;
            self.timer = None;
            return None;
        }
        matches!(self.state, Nud::Incomplete | Nud::Probe).then(|| self.probe(p))
    }

    /// An ARP frame from `from` reaches the existing entry at `now` (`arp_process`, then
    /// `__neigh_update`); `reachable_us` as in [`Entry::fire`]. Returns whether the cached
    /// address changed.
    pub fn heard(
        &mut self,
        now: u64,
        from: NodeIx,
        heard: Heard,
        reachable_us: u64,
        p: &Params,
    ) -> bool {
        let old = self.state;
        if old == Nud::None {
            return false;
        }
        let overrides = now > self.updated + p.locktime_us || heard == Heard::Garp;
        let mut new = match heard {
            Heard::Reply => Nud::Reachable,
            Heard::Garp => Nud::Stale,
        };
        let same = old.valid() && self.ha == Some(from);
        if new == Nud::Reachable {
            self.confirmed = now;
        }
        if old.valid() {
            if !same && !overrides {
                return false;
            }
            if same && new == Nud::Stale {
                new = old;
            }
        }
        if new != old || !same {
            self.updated = now;
        }
        if new != old {
            self.timer = (new == Nud::Reachable).then_some(now + reachable_us);
            self.state = new;
        }
        if !same {
            self.ha = Some(from);
            if new != Nud::Reachable {
                // An address learnt without confirmation counts as long unconfirmed.
                self.confirmed = now.saturating_sub(2 * p.base_reachable_us);
            }
        }
        !same
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Params = LINUX_DEFAULTS;
    const S: u64 = 1_000_000;
    const REACH: u64 = 30 * S;

    /// An entry resolved to node 1 by a reply at `t`.
    fn reachable_at(t: u64) -> Entry {
        let mut e = Entry::default();
        assert_eq!(e.send(t, &P), Some(Solicit::Broadcast));
        assert!(e.heard(t + 1_000, 1, Heard::Reply, REACH, &P));
        e
    }

    #[test]
    fn neighbour_packet_to_unknown_address_resolves_by_broadcast_and_fails_after_three() {
        let mut e = Entry::default();
        assert_eq!(e.send(0, &P), Some(Solicit::Broadcast));
        assert_eq!(e.state, Nud::Incomplete);
        assert_eq!(e.next_hop(), None, "packets wait for the answer");
        assert_eq!(e.fire(S, REACH, &P), Some(Solicit::Broadcast));
        assert_eq!(e.fire(2 * S, REACH, &P), Some(Solicit::Broadcast));
        assert_eq!(e.fire(3 * S, REACH, &P), None);
        assert_eq!(e.state, Nud::Failed);
        assert_eq!(e.timer, None);
        // The next packet starts again.
        assert_eq!(e.send(10 * S, &P), Some(Solicit::Broadcast));
        assert_eq!(e.state, Nud::Incomplete);
    }

    #[test]
    fn neighbour_reachable_goes_stale_after_reachable_time_without_confirmation() {
        let mut e = reachable_at(0);
        assert_eq!((e.state, e.next_hop()), (Nud::Reachable, Some(1)));
        let t = e.timer.unwrap();
        assert_eq!(t, 1_000 + REACH);
        // The table's reachable_time was drawn again, longer: the timer re-arms.
        assert_eq!(e.fire(t, REACH + S, &P), None);
        assert_eq!(e.state, Nud::Reachable);
        assert_eq!(e.fire(t + S + 1, REACH, &P), None);
        assert_eq!(
            (e.state, e.timer, e.next_hop()),
            (Nud::Stale, None, Some(1))
        );
    }

    #[test]
    fn neighbour_stale_used_goes_delay_then_probe_by_unicast_then_failed() {
        let mut e = reachable_at(0);
        e.fire(REACH + 2_000, REACH, &P);
        assert_eq!(e.state, Nud::Stale);
        let t = 40 * S;
        assert_eq!(e.send(t, &P), None, "sent to the cached address");
        assert_eq!((e.state, e.next_hop()), (Nud::Delay, Some(1)));
        assert_eq!(e.timer, Some(t + 5 * S));
        let t = t + 5 * S;
        assert_eq!(e.fire(t, REACH, &P), Some(Solicit::Unicast(1)));
        assert_eq!((e.state, e.next_hop()), (Nud::Probe, Some(1)));
        assert_eq!(e.fire(t + S, REACH, &P), Some(Solicit::Unicast(1)));
        assert_eq!(e.fire(t + 2 * S, REACH, &P), Some(Solicit::Unicast(1)));
        // mcast_resolicit is 0: no broadcast, the entry fails.
        assert_eq!(e.fire(t + 3 * S, REACH, &P), None);
        assert_eq!((e.state, e.next_hop()), (Nud::Failed, None));
    }

    #[test]
    fn neighbour_probe_answered_is_reachable_again() {
        let mut e = reachable_at(0);
        e.fire(REACH + 2_000, REACH, &P);
        e.send(40 * S, &P);
        e.fire(45 * S, REACH, &P);
        assert_eq!(e.state, Nud::Probe);
        assert!(!e.heard(45 * S + 1_000, 1, Heard::Reply, REACH, &P));
        assert_eq!(e.state, Nud::Reachable);
        assert_eq!(e.timer, Some(45 * S + 1_000 + REACH));
    }

    #[test]
    fn neighbour_gratuitous_arp_updates_an_existing_entry_but_creates_none() {
        let mut none = Entry::default();
        assert!(!none.heard(S, 2, Heard::Garp, REACH, &P));
        assert_eq!(
            none,
            Entry::default(),
            "arp_accept 0: no entry from unsolicited ARP"
        );
        // Within locktime of the last change, yet a gratuitous ARP overrides: STALE at node 2.
        let mut e = reachable_at(0);
        assert!(e.heard(2_000, 2, Heard::Garp, REACH, &P));
        assert_eq!(
            (e.state, e.next_hop(), e.timer),
            (Nud::Stale, Some(2), None)
        );
        // The same address again changes nothing.
        assert!(!e.heard(3 * S, 2, Heard::Garp, REACH, &P));
        assert_eq!(e.state, Nud::Stale);
        // A FAILED entry exists: a gratuitous ARP revives it.
        let mut f = Entry::default();
        f.send(0, &P);
        for k in 1..=3 {
            f.fire(k * S, REACH, &P);
        }
        assert_eq!(f.state, Nud::Failed);
        assert!(f.heard(4 * S, 3, Heard::Garp, REACH, &P));
        assert_eq!((f.state, f.next_hop()), (Nud::Stale, Some(3)));
    }

    #[test]
    fn neighbour_locktime_keeps_the_first_answer() {
        let mut e = Entry::default();
        e.send(0, &P);
        assert!(e.heard(1_000, 1, Heard::Reply, REACH, &P));
        // A second, different answer within a second of the first is ignored ...
        assert!(!e.heard(500_000, 2, Heard::Reply, REACH, &P));
        assert_eq!(e.next_hop(), Some(1));
        // ... after locktime it takes over.
        assert!(e.heard(1_001_001, 2, Heard::Reply, REACH, &P));
        assert_eq!((e.state, e.next_hop()), (Nud::Reachable, Some(2)));
    }

    #[test]
    fn neighbour_bounds_follow_the_defaults() {
        assert_eq!(P.reachable_min_us(), 15 * S);
        assert_eq!(P.reachable_max_us(), 45 * S);
        // 45 + 2 + 5 + 3 + 2 s with a packet at least every 2 s.
        assert_eq!(P.stale_entry_max_us(2 * S), 57 * S);
    }
}
