//! Lossy links (fault `Loss`): a node's link loses packets in bursts, as a two-state Gilbert
//! channel (Gilbert 1960; Elliott 1963): in the good state every packet gets through, in the bad
//! state every packet is lost. Each packet crossing the link first moves the chain (good to bad
//! with probability `p`, bad to good with `r`), then is lost if the chain is bad. The mean burst
//! is `1/r` packets and the long-run loss `p / (p + r)`; both come from the fault.
//!
//! Datagrams are lost. A TCP segment is retransmitted after the retransmission timeout, 200 ms at
//! first (Linux `TCP_RTO_MIN`, RFC 6298 and tcp(7)), doubling for each further loss of the same
//! segment: a stream's message is delayed by the sum of the timeouts of its lost transmissions,
//! never lost. That is a simplification (one segment per message, no fast retransmit, no RTT
//! estimate), stated as such: it bounds how long a lossy link holds a TCP exchange up.

use crate::event::NodeIx;
use crate::world::World;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// Linux's minimum retransmission timeout (`TCP_RTO_MIN`, include/net/tcp.h: `HZ / 5`).
const RTO_MIN: Duration = Duration::from_millis(200);
/// Transmissions of one segment considered at most (the delay is capped there: 200 ms x 63).
const MAX_TRANSMISSIONS: u32 = 6;

/// One node's lossy link: its Gilbert chain.
pub struct LossyLink {
    node: NodeIx,
    /// Good to bad, per packet.
    p: f64,
    /// Bad to good, per packet.
    r: f64,
    bad: bool,
}

impl LossyLink {
    /// The link of `node`, losing `permille` of its packets (clamped to 1-999) in bursts of
    /// `burst` packets on average (at least 1). It starts good.
    pub fn new(node: NodeIx, permille: u32, burst: u32) -> Self {
        let loss = permille.clamp(1, 999) as f64 / 1000.0;
        let r = 1.0 / burst.max(1) as f64;
        LossyLink {
            node,
            p: (r * loss / (1.0 - loss)).min(1.0),
            r,
            bad: false,
        }
    }

    /// One packet crosses the link: whether it is lost.
    fn cross(&mut self, rng: &mut ChaCha8Rng) -> bool {
        let flip = if self.bad { self.r } else { self.p };
        if rng.random_bool(flip) {
            self.bad = !self.bad;
        }
        self.bad
    }
}

impl World {
    /// Whether a datagram from `from` to `to` sent now is lost on a lossy link of either end
    /// (both links see the packet). No loss fault in force: false, and nothing is drawn.
    pub fn datagram_lost(&self, from: NodeIx, to: NodeIx) -> bool {
        let mut net = self.0.net.borrow_mut();
        if net.loss.is_empty() || from == to {
            return false;
        }
        let net = &mut *net;
        let mut lost = false;
        for link in net.loss.values_mut() {
            if link.node == from || link.node == to {
                lost |= link.cross(&mut net.rng);
            }
        }
        lost
    }

    /// TCP's delay for a segment from `from` to `to` sent now: the retransmission timeouts of its
    /// lost transmissions (see the module documentation).
    pub(crate) fn retransmission_delay(&self, from: NodeIx, to: NodeIx) -> Duration {
        let mut delay = Duration::ZERO;
        let mut rto = RTO_MIN;
        for _ in 1..MAX_TRANSMISSIONS {
            if !self.datagram_lost(from, to) {
                break;
            }
            delay += rto;
            rto *= 2;
        }
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn run(permille: u32, burst: u32, n: usize) -> (f64, f64) {
        let mut link = LossyLink::new(0, permille, burst);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let lost: Vec<bool> = (0..n).map(|_| link.cross(&mut rng)).collect();
        let total = lost.iter().filter(|l| **l).count();
        let bursts = lost.windows(2).filter(|w| w[1] && !w[0]).count() + lost[0] as usize;
        (total as f64 / n as f64, total as f64 / bursts.max(1) as f64)
    }

    #[test]
    fn a_lossy_link_loses_its_share_in_bursts_of_its_length() {
        let (rate, burst) = run(50, 4, 400_000);
        assert!((0.045..0.055).contains(&rate), "rate {rate}");
        assert!((3.6..4.4).contains(&burst), "burst {burst}");
        let (rate, burst) = run(10, 1, 400_000);
        assert!((0.008..0.012).contains(&rate), "rate {rate}");
        assert!((0.9..1.1).contains(&burst), "burst {burst}");
    }
}
