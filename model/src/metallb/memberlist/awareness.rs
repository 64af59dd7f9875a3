//! Lifeguard's local health: memberlist v0.5.1 awareness.go. A score from 0 (healthy) to
//! `max - 1` scales the probe interval (state.go `probeNode` l. 309-315): a member that misses
//! nacks it expected, or is asked to refute, slows its own probing down instead of accusing others
//! at full speed.

use std::cell::Cell;
use std::time::Duration;

/// The health score (`awareness`, awareness.go l. 13-39).
#[derive(Debug)]
pub struct Awareness {
    max: u32,
    score: Cell<u32>,
}

impl Awareness {
    /// A healthy score (0) that `apply_delta` keeps below `max` (`newAwareness`, l. 32-39;
    /// `AwarenessMaxMultiplier`).
    pub fn new(max: u32) -> Self {
        Awareness {
            max,
            score: Cell::new(0),
        }
    }

    /// `ApplyDelta` (l. 41-59): adds `delta`, clamped to `0..=max-1`.
    pub fn apply_delta(&self, delta: i32) {
        let top = self.max.saturating_sub(1) as i64;
        let s = (self.score.get() as i64 + delta as i64).clamp(0, top);
        self.score.set(s as u32);
    }

    /// `GetHealthScore` (l. 61-67).
    pub fn score(&self) -> u32 {
        self.score.get()
    }

    /// `ScaleTimeout` (l. 69-76): `timeout x (score + 1)`.
    pub fn scale(&self, timeout: Duration) -> Duration {
        timeout * (self.score.get() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// memberlist awareness_test.go `TestAwareness` (v0.5.1): the score rails at 0 and `max - 1`
    /// and the timeout scales with it.
    #[test]
    fn upstream_awareness() {
        let cases: [(i32, u32, u64); 14] = [
            (0, 0, 1),
            (-1, 0, 1),
            (-10, 0, 1),
            (1, 1, 2),
            (-1, 0, 1),
            (10, 7, 8),
            (-1, 6, 7),
            (-1, 5, 6),
            (-1, 4, 5),
            (-1, 3, 4),
            (-1, 2, 3),
            (-1, 1, 2),
            (-1, 0, 1),
            (-1, 0, 1),
        ];
        let a = Awareness::new(8);
        for (i, (delta, score, secs)) in cases.into_iter().enumerate() {
            a.apply_delta(delta);
            assert_eq!(a.score(), score, "case {i}: score");
            assert_eq!(
                a.scale(Duration::from_secs(1)),
                Duration::from_secs(secs),
                "case {i}: timeout"
            );
        }
    }
}
