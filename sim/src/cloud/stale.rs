//! Eventually consistent reads of the cloud.
//!
//! EC2's API is eventually consistent: "the result of an API command you run that affects your
//! Amazon EC2 resources might not be immediately visible to all subsequent commands you run"
//! (Amazon EC2 API reference, "Eventual consistency in the Amazon EC2 API",
//! docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html). So a
//! `DescribeNetworkInterfaces` made after an `AssignPrivateIpAddresses` or
//! `UnassignPrivateIpAddresses` returned may still show the interfaces as they were before it.
//!
//! The cloud keeps the views its changes replaced, each with the true time until which it was
//! the present (`History`). While a [`crate::FaultKind::StaleReads`] fault is in force on the
//! cloud's node, each describe draws an age from 0 to the fault's lag and answers with the view
//! that was the present that long ago (all instances from one moment); writes always act on the
//! present. Reads are not monotonic: each draws its age afresh, so a describe may show an older
//! view than the one before it (an eventually consistent API promises no monotonic reads; the
//! page does not say whether EC2's serve them). The page gives no size for the lag: the fault
//! catalog's range is an assumption (`sim::catalog::STALE_READS`).

use super::Interfaces;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Every instance's interfaces at one moment.
pub(super) type View = BTreeMap<String, Rc<Interfaces>>;

/// How long a replaced view is kept (µs): longer than any lag a fault may have.
pub const HISTORY_US: u64 = 60_000_000;

/// The largest lag a stale-reads fault of the cloud may have (ms): scenarios draw lags up to
/// it (the catalog's realistic range, `sim::catalog::STALE_READS`, lies within it), and a
/// client that must wait out the lag derives its margin from it.
pub const MAX_LAG_MS: u64 = 10_000;

/// The label of the generator that draws each stale read's age (under the run's seed).
pub const STALE_RNG_LABEL: &str = "cloud-stale-reads";

/// The views the cloud's changes replaced, oldest first, and the generator of read ages.
pub(super) struct History {
    /// `(until_us, view)`: `view` was the present until true time `until_us`.
    past: VecDeque<(u64, View)>,
    rng: ChaCha8Rng,
}

impl History {
    /// An empty history whose read ages come from `rng`.
    pub(super) fn new(rng: ChaCha8Rng) -> History {
        History {
            past: VecDeque::new(),
            rng,
        }
    }

    /// Records that `before` stopped being the present at `now_us`, and forgets views older
    /// than [`HISTORY_US`].
    pub(super) fn replaced(&mut self, now_us: u64, before: View) {
        self.past.push_back((now_us, before));
        let horizon = now_us.saturating_sub(HISTORY_US);
        while self.past.front().is_some_and(|(until, _)| *until < horizon) {
            self.past.pop_front();
        }
    }

    /// The view that was the present at true time `t_us`; `None` if it still is.
    fn view_at(&self, t_us: u64) -> Option<&View> {
        self.past
            .iter()
            .find(|(until, _)| *until > t_us)
            .map(|(_, v)| v)
    }

    /// A read at `now_us` with reads lagging up to `lag_us`: the view of a moment drawn
    /// uniformly from the last `lag_us` (`present` if nothing changed since), and its age.
    /// No draw is made when `lag_us` is 0.
    pub(super) fn read(&mut self, now_us: u64, lag_us: u64, present: &View) -> (View, u64) {
        if lag_us == 0 {
            return (present.clone(), 0);
        }
        let age = self.rng.random_range(0..=lag_us);
        let view = self.view_at(now_us.saturating_sub(age)).unwrap_or(present);
        (view.clone(), age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::eni_name;
    use crate::Short;
    use rand_chacha::rand_core::SeedableRng;

    /// A view with instance `a` holding `ips` on `eni-0`.
    fn view(ips: &[&str]) -> View {
        let set = ips.iter().map(|ip| Short::new(ip).unwrap()).collect();
        let ifs: Interfaces = [(eni_name(0), set)].into_iter().collect();
        [("a".to_string(), Rc::new(ifs))].into_iter().collect()
    }

    #[test]
    fn the_catalogs_realistic_lags_lie_within_the_largest() {
        let r = crate::catalog::STALE_READS
            .range(crate::catalog::Quantity::LagMs)
            .expect("a lag range");
        assert!(r.hi as u64 <= MAX_LAG_MS && HISTORY_US > MAX_LAG_MS * 1000);
    }

    #[test]
    fn a_read_without_lag_sees_the_present() {
        let mut h = History::new(ChaCha8Rng::seed_from_u64(1));
        h.replaced(1_000, view(&[]));
        assert_eq!(
            h.read(1_001, 0, &view(&["10.0.0.4"])).0,
            view(&["10.0.0.4"])
        );
    }

    #[test]
    fn a_lagging_read_sees_views_of_the_lag_and_none_older() {
        let mut h = History::new(ChaCha8Rng::seed_from_u64(7));
        // Empty until 1 s, then .4 until 2 s, then .4 and .5 (the present).
        h.replaced(1_000_000, view(&[]));
        h.replaced(2_000_000, view(&["10.0.0.4"]));
        let present = view(&["10.0.0.4", "10.0.0.5"]);
        let (mut saw_old, mut saw_present) = (false, false);
        for _ in 0..200 {
            // At 2.3 s with a lag of 0.5 s: a view from 1.8 s to 2.3 s.
            let (v, age) = h.read(2_300_000, 500_000, &present);
            assert!(age <= 500_000);
            if age > 300_000 {
                assert_eq!(v, view(&["10.0.0.4"]), "age {age}");
                saw_old = true;
            } else {
                assert_eq!(v, present, "age {age}");
                saw_present = true;
            }
            assert_ne!(v, view(&[]), "older than the lag");
        }
        assert!(saw_old && saw_present);
    }

    #[test]
    fn views_older_than_the_horizon_are_forgotten() {
        let mut h = History::new(ChaCha8Rng::seed_from_u64(1));
        h.replaced(1_000_000, view(&[]));
        h.replaced(HISTORY_US + 2_000_000, view(&["10.0.0.4"]));
        assert_eq!(h.past.len(), 1);
        assert_eq!(h.view_at(0), Some(&view(&["10.0.0.4"])));
    }
}
