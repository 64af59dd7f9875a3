//! The refill-and-take core both token buckets of the cloud share: EC2's per-API request
//! buckets ([`super::throttle`]) and a caller's `golang.org/x/time/rate` limiter
//! ([`super::sdk::Limiter`]). Tokens are kept in millionths, so refills stay exact in integers.

/// Millionths of a token in one token.
const UNIT: i64 = 1_000_000;

/// A count of tokens that refills at a rate up to a cap; it may go below zero (a limiter's
/// reservations that wait).
#[derive(Clone, Debug)]
pub(super) struct Tokens {
    /// Tokens now (millionths).
    units: i64,
    /// Most tokens it holds (millionths).
    cap: i64,
    /// When `units` was last brought up to date (µs); `None` before the first refill.
    at_us: Option<u64>,
}

impl Tokens {
    /// Full: `tokens` tokens, which is also its cap.
    pub(super) fn full(tokens: u64) -> Tokens {
        let cap = tokens as i64 * UNIT;
        Tokens {
            units: cap,
            cap,
            at_us: None,
        }
    }

    /// Brings it up to `now_us`, adding `milli_per_s` thousandths of a token a second since the
    /// last refill (none at the first), up to its cap.
    pub(super) fn refill(&mut self, now_us: u64, milli_per_s: u64) {
        let elapsed = self.at_us.map_or(0, |t| now_us.saturating_sub(t));
        let gained = (elapsed as i128 * milli_per_s as i128 / 1_000) as i64;
        self.units = (self.units + gained).min(self.cap);
        self.at_us = Some(now_us);
    }

    /// Takes one token if a whole one is there; false (nothing taken) if not.
    pub(super) fn try_take(&mut self) -> bool {
        if self.units < UNIT {
            return false;
        }
        self.units -= UNIT;
        true
    }

    /// Takes one token whether or not it is there: the millionths still owed, if it went below
    /// zero (0 if not).
    pub(super) fn take_owing(&mut self) -> u64 {
        self.units -= UNIT;
        (-self.units).max(0) as u64
    }

    /// Empties it (other clients' burst took every token).
    pub(super) fn empty(&mut self) {
        self.units = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_at_its_rate_up_to_its_cap_and_owes_below_zero() {
        let mut t = Tokens::full(2);
        t.refill(0, 1_000);
        assert!(t.try_take() && t.try_take() && !t.try_take());
        t.refill(500_000, 1_000);
        assert!(!t.try_take(), "half a token");
        assert_eq!(t.take_owing(), UNIT as u64 / 2);
        t.refill(10_000_000, 1_000);
        assert!(t.try_take() && t.try_take() && !t.try_take(), "capped at 2");
    }
}
