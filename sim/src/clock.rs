//! Per-node clocks.
//!
//! madsim has one global clock (the simulator's "true time"). Real nodes disagree about time, and
//! the systems we model read two different clocks, so every node carries its own [`NodeClock`]:
//!
//! * a **monotonic** clock: time since the node last booted (it restarts at zero when the node
//!   restarts, like `CLOCK_MONOTONIC` / Python's `time.monotonic()` on Linux), counted at the true
//!   rate unless a rate fault makes it run fast or slow;
//! * a **wall** clock: true time plus an offset that can drift (parts per million) and be stepped
//!   forward or backward (NTP steps, VM restores), like `time.time()`.
//!
//! The wall clock is a piecewise-linear function of true time (the shape of TigerBeetle's simulated
//! time: linear segments with steps). It is pure and integer-only, so the same inputs always give the
//! same readings in debug and release builds. Drift models an undisciplined wall clock, which is what
//! the modelled systems compare against.
//!
//! The monotonic clock is piecewise linear too, but has rates only (no steps, and never backward):
//! from each change on it runs at `(1 + ppm / 1e6)` times the true rate. A rate change keeps the
//! reading continuous; a reboot restarts it at zero at the rate in force. This models a host whose
//! timer source runs fast or slow (a mis-calibrated TSC, a VM whose hypervisor scales or steals its
//! clock) and lets a fault break what timeouts measured on one node assume about another's: that
//! a second here is a second there. By default the rate is 0 ppm and the monotonic clock is true
//! time since boot.
//!
//! All times are microseconds. True time is `u64` since the start of the run; wall readings are `i64`
//! microseconds relative to [`EPOCH_UNIX_US`] (the wall time of true time zero on a node with no
//! offset), so they can be negative for a node whose clock is behind.

/// Unix time (microseconds) that wall reading 0 stands for: 2026-01-01T00:00:00Z.
pub const EPOCH_UNIX_US: i64 = 1_767_225_600_000_000;

const PPM: i128 = 1_000_000;

/// One linear piece of a wall clock: from true time `from_us` on, `wall = wall_at_from_us +
/// elapsed + elapsed * drift_ppm / 1e6` (rounded toward negative infinity).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Segment {
    from_us: u64,
    wall_at_from_us: i64,
    drift_ppm: i64,
}

impl Segment {
    fn wall_at(&self, t_us: u64) -> i64 {
        let dt = t_us - self.from_us;
        if self.drift_ppm == 0 {
            return self.wall_at_from_us + dt as i64;
        }
        // In 64 bits when it fits (any run shorter than centuries), else in 128: the same value.
        match i64::try_from(dt)
            .ok()
            .and_then(|d| d.checked_mul(self.drift_ppm).map(|m| (d, m)))
        {
            Some((d, m)) => self.wall_at_from_us + d + m.div_euclid(PPM as i64),
            None => {
                let dt = dt as i128;
                self.wall_at_from_us + (dt + (dt * self.drift_ppm as i128).div_euclid(PPM)) as i64
            }
        }
    }
}

/// One linear piece of a monotonic clock: from true time `from_us` on, `mono = mono_at_from_us +
/// floor(elapsed * (1e6 + rate_ppm) / 1e6)`. `rate_ppm > -1e6`, so the reading never decreases.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MonoSegment {
    from_us: u64,
    mono_at_from_us: u64,
    rate_ppm: i64,
}

impl MonoSegment {
    fn mono_at(&self, t_us: u64) -> u64 {
        let dt = t_us.saturating_sub(self.from_us);
        if self.rate_ppm == 0 {
            return self.mono_at_from_us + dt;
        }
        // In 64 bits when it fits, else in 128: the same value (as for the wall segments).
        let ticks = match i64::try_from(dt)
            .ok()
            .and_then(|d| d.checked_mul(self.rate_ppm).map(|m| (d, m)))
        {
            Some((d, m)) => (d + m.div_euclid(PPM as i64)) as u64,
            None => {
                let d = dt as i128;
                (d + (d * self.rate_ppm as i128).div_euclid(PPM)) as u64
            }
        };
        self.mono_at_from_us + ticks
    }

    /// The earliest true time at which this piece, extended backward if need be, reads at least
    /// `mono_us`: exact, since `floor(x) >= n` iff `x >= n` for an integer `n`.
    fn true_time_for(&self, mono_us: u64) -> u64 {
        let need = mono_us as i128 - self.mono_at_from_us as i128;
        let rate = PPM + self.rate_ppm as i128;
        // The smallest dt with dt * rate >= need * PPM (rate > 0): a ceiling division.
        let dt = -(-need * PPM).div_euclid(rate);
        let t = self.from_us as i128 + dt;
        u64::try_from(t.max(0)).unwrap_or(u64::MAX)
    }
}

/// The slowest monotonic rate a clock accepts (ppm): at -1e6 it would stop, and a sleep on it would
/// never end.
pub const MIN_MONO_RATE_PPM: i64 = -999_999;

/// A node's clocks. See the module documentation.
#[derive(Clone, Debug)]
pub struct NodeClock {
    segments: Vec<Segment>,
    mono: Vec<MonoSegment>,
    boot_us: u64,
}

/// The piece of `pieces` (in true-time order, starting at `from(piece)`) in force at `t_us`.
fn piece_at<S>(pieces: &[S], from: impl Fn(&S) -> u64, t_us: u64) -> &S {
    // Most readings are of the present: the last piece.
    let last = pieces.last().expect("a clock has a piece");
    if from(last) <= t_us {
        return last;
    }
    let i = pieces.partition_point(|s| from(s) <= t_us);
    &pieces[i.saturating_sub(1)]
}

/// Appends `piece` (which starts at `from(piece)`), replacing the last one if it starts at the same
/// instant.
fn push_piece<S>(pieces: &mut Vec<S>, from: impl Fn(&S) -> u64, piece: S) {
    let last = from(pieces.last().expect("a clock has a piece"));
    assert!(
        from(&piece) >= last,
        "clock changes must be applied in true-time order"
    );
    if from(&piece) == last {
        *pieces.last_mut().unwrap() = piece;
    } else {
        pieces.push(piece);
    }
}

impl NodeClock {
    /// A clock whose wall reading at true time 0 is `offset_us`, drifting by `drift_ppm`, booted at
    /// true time 0.
    pub fn new(offset_us: i64, drift_ppm: i64) -> Self {
        NodeClock {
            segments: vec![Segment {
                from_us: 0,
                wall_at_from_us: offset_us,
                drift_ppm,
            }],
            mono: vec![MonoSegment {
                from_us: 0,
                mono_at_from_us: 0,
                rate_ppm: 0,
            }],
            boot_us: 0,
        }
    }

    fn segment_at(&self, t_us: u64) -> &Segment {
        // Segments are appended in true-time order; readings of the past use the piece in force then.
        piece_at(&self.segments, |s| s.from_us, t_us)
    }

    /// Wall reading at true time `t_us`.
    pub fn wall_at(&self, t_us: u64) -> i64 {
        self.segment_at(t_us).wall_at(t_us)
    }

    /// Offset of the wall clock from true time at `t_us` (wall - true).
    pub fn offset_at(&self, t_us: u64) -> i64 {
        self.wall_at(t_us) - t_us as i64
    }

    /// Monotonic reading (time since boot, at the clock's rate) at true time `t_us`.
    pub fn mono_at(&self, t_us: u64) -> u64 {
        piece_at(&self.mono, |s| s.from_us, t_us).mono_at(t_us)
    }

    /// Current monotonic rate in ppm (0: the true rate).
    pub fn mono_rate_ppm(&self) -> i64 {
        self.mono.last().expect("a clock has a piece").rate_ppm
    }

    /// Makes the monotonic clock run at `(1 + ppm / 1e6)` times the true rate from true time `t_us`
    /// on (the reading itself is continuous). Rates below [`MIN_MONO_RATE_PPM`] are raised to it,
    /// so that the clock keeps moving forward.
    pub fn set_mono_rate(&mut self, t_us: u64, ppm: i64) {
        let mono = self.mono_at(t_us);
        push_piece(
            &mut self.mono,
            |s| s.from_us,
            MonoSegment {
                from_us: t_us,
                mono_at_from_us: mono,
                rate_ppm: ppm.max(MIN_MONO_RATE_PPM),
            },
        );
    }

    /// The earliest true time at which the monotonic clock reads at least `mono_us`, assuming its
    /// current rate holds (a later rate change or reboot is not foreseen: callers holding a timer
    /// keep the deadline this gave, as with [`NodeClock::true_time_for_wall`]). Exact: the clock
    /// reads `mono_us` or more at the returned time and less one microsecond before, for any
    /// reading not yet passed; for one already passed it is a time no later than the current
    /// rate's start (at the true rate since boot: `boot + mono_us`, as it always was).
    pub fn true_time_for_mono(&self, mono_us: u64) -> u64 {
        self.mono
            .last()
            .expect("a clock has a piece")
            .true_time_for(mono_us)
    }

    /// True time of the last boot.
    pub fn boot_us(&self) -> u64 {
        self.boot_us
    }

    /// Current drift in ppm.
    pub fn drift_ppm(&self) -> i64 {
        self.segments
            .last()
            .expect("a clock has a segment")
            .drift_ppm
    }

    fn push(&mut self, seg: Segment) {
        push_piece(&mut self.segments, |s| s.from_us, seg);
    }

    /// Step the wall clock by `delta_us` (positive: forward) at true time `t_us`.
    pub fn step(&mut self, t_us: u64, delta_us: i64) {
        let wall = self.wall_at(t_us) + delta_us;
        let drift_ppm = self.drift_ppm();
        self.push(Segment {
            from_us: t_us,
            wall_at_from_us: wall,
            drift_ppm,
        });
    }

    /// Change the drift rate from true time `t_us` on (the reading itself is continuous).
    pub fn set_drift(&mut self, t_us: u64, drift_ppm: i64) {
        let wall = self.wall_at(t_us);
        self.push(Segment {
            from_us: t_us,
            wall_at_from_us: wall,
            drift_ppm,
        });
    }

    /// The node booted at true time `t_us`: the monotonic clock restarts at zero, at the rate in
    /// force (the hardware's, which a reboot does not change); the wall clock (battery-backed,
    /// NTP-set) carries on.
    pub fn reboot(&mut self, t_us: u64) {
        self.boot_us = t_us;
        let rate_ppm = self.mono_rate_ppm();
        push_piece(
            &mut self.mono,
            |s| s.from_us,
            MonoSegment {
                from_us: t_us,
                mono_at_from_us: 0,
                rate_ppm,
            },
        );
    }

    /// The earliest true time `>= now_us` at which the wall clock reads at least `wall_us`, assuming
    /// no further steps or drift changes (callers re-arm when the clock changes).
    pub fn true_time_for_wall(&self, wall_us: i64, now_us: u64) -> u64 {
        let seg = self.segment_at(now_us);
        if seg.wall_at(now_us) >= wall_us {
            return now_us;
        }
        // Solve wall_at(t) >= wall_us on the current piece; start from the exact rational solution and
        // correct the rounding by scanning a few microseconds.
        let need = (wall_us - seg.wall_at_from_us) as i128;
        let rate = PPM + seg.drift_ppm as i128;
        let mut dt = if rate <= 0 {
            need
        } else {
            (need * PPM + rate - 1).div_euclid(rate)
        };
        dt = dt.max((now_us - seg.from_us) as i128);
        while dt > 0 && seg.wall_at(seg.from_us + (dt - 1) as u64) >= wall_us {
            dt -= 1;
        }
        while seg.wall_at(seg.from_us + dt as u64) < wall_us {
            dt += 1;
        }
        (seg.from_us + dt as u64).max(now_us)
    }
}

/// Formats a wall reading as an RFC 3339 UTC timestamp with microseconds (`2026-01-01T00:00:05.000000Z`).
pub fn format_rfc3339(wall_us: i64) -> String {
    let unix_us = EPOCH_UNIX_US + wall_us;
    let secs = unix_us.div_euclid(1_000_000);
    let micros = unix_us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's well-known civil-from-days algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) to days since 1970-01-01 (the inverse of [`civil_from_days`]).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The 64-bit fast path reads exactly what the 128-bit formula gives.
        #[test]
        fn wall_reading_equals_the_wide_formula(
            from in 0u64..1u64 << 40,
            dt in prop_oneof![0u64..10_000_000_000, any::<u32>().prop_map(u64::from)],
            wall in -1i64 << 45..1i64 << 45,
            drift in prop_oneof![Just(0i64), -1_000i64..1_000, -2_000_000i64..2_000_000],
        ) {
            let seg = Segment { from_us: from, wall_at_from_us: wall, drift_ppm: drift };
            let d = dt as i128;
            let wide = wall + (d + (d * drift as i128).div_euclid(PPM)) as i64;
            prop_assert_eq!(seg.wall_at(from + dt), wide);
        }

        /// The same for the monotonic pieces.
        #[test]
        fn mono_reading_equals_the_wide_formula(
            from in 0u64..1u64 << 40,
            dt in prop_oneof![0u64..10_000_000_000, any::<u32>().prop_map(u64::from)],
            mono in 0u64..1u64 << 45,
            rate in prop_oneof![Just(0i64), -1_000i64..1_000, MIN_MONO_RATE_PPM..2_000_000],
        ) {
            let seg = MonoSegment { from_us: from, mono_at_from_us: mono, rate_ppm: rate };
            let d = dt as i128;
            let wide = mono + (d * (PPM + rate as i128)).div_euclid(PPM) as u64;
            prop_assert_eq!(seg.mono_at(from + dt), wide);
        }
    }

    #[test]
    fn a_past_reading_uses_the_piece_in_force_then() {
        let mut c = NodeClock::new(0, 200);
        c.step(10_000_000, 5_000_000);
        c.set_drift(20_000_000, -300);
        for t in [
            0, 5_000_000, 9_999_999, 10_000_000, 19_999_999, 20_000_000, 30_000_000,
        ] {
            let seg = &c.segments[c.segments.partition_point(|s| s.from_us <= t) - 1];
            assert_eq!(c.wall_at(t), seg.wall_at(t), "{t}");
        }
    }

    #[test]
    fn offset_and_drift() {
        let c = NodeClock::new(5_000_000, 100);
        assert_eq!(c.wall_at(0), 5_000_000);
        // 100 ppm over 10 s = 1 ms fast.
        assert_eq!(c.wall_at(10_000_000), 15_001_000);
        let slow = NodeClock::new(0, -100);
        assert_eq!(slow.wall_at(10_000_000), 9_999_000);
    }

    #[test]
    fn steps_are_piecewise_and_history_is_kept() {
        let mut c = NodeClock::new(0, 0);
        c.step(10_000_000, -30_000_000);
        assert_eq!(c.wall_at(9_999_999), 9_999_999);
        assert_eq!(c.wall_at(10_000_000), -20_000_000);
        assert_eq!(c.wall_at(20_000_000), -10_000_000);
        c.step(20_000_000, 60_000_000);
        assert_eq!(c.wall_at(20_000_000), 50_000_000);
        // The past is read with the piece that was in force.
        assert_eq!(c.wall_at(15_000_000), -15_000_000);
        assert_eq!(c.offset_at(25_000_000), 30_000_000);
    }

    #[test]
    fn monotonic_restarts_at_boot() {
        let mut c = NodeClock::new(1_000, 0);
        assert_eq!(c.mono_at(7_000_000), 7_000_000);
        c.reboot(7_000_000);
        assert_eq!(c.mono_at(7_000_000), 0);
        assert_eq!(c.mono_at(9_500_000), 2_500_000);
        // Wall carries on across a reboot.
        assert_eq!(c.wall_at(9_500_000), 9_501_000);
    }

    #[test]
    fn monotonic_reads_at_its_rate() {
        let mut c = NodeClock::new(0, 0);
        c.set_mono_rate(2_000_000, 500_000);
        assert_eq!(c.mono_at(2_000_000), 2_000_000);
        // 4 true seconds at +50 %: 6 monotonic seconds.
        assert_eq!(c.mono_at(6_000_000), 8_000_000);
        assert_eq!(c.mono_rate_ppm(), 500_000);
        // Slow clocks round toward negative infinity: 3 µs at -50 % is 1.5, read as 1.
        let mut slow = NodeClock::new(0, 0);
        slow.set_mono_rate(0, -500_000);
        assert_eq!(slow.mono_at(3), 1);
        assert_eq!(slow.mono_at(10_000_000), 5_000_000);
        // The wall clock is not affected.
        assert_eq!(c.wall_at(6_000_000), 6_000_000);
    }

    #[test]
    fn monotonic_is_continuous_across_rate_changes() {
        let mut c = NodeClock::new(0, 0);
        let changes = [(1_000_000, 250_000), (1_500_001, -900_000), (7_000_003, 37)];
        for (t, ppm) in changes {
            let before = c.mono_at(t);
            c.set_mono_rate(t, ppm);
            assert_eq!(c.mono_at(t), before, "jump at {t}");
        }
        // Never decreasing, and the past keeps the readings it had.
        let mut last = 0;
        for t in (0..9_000_000).step_by(999) {
            let m = c.mono_at(t);
            assert!(m >= last, "went back at {t}");
            last = m;
        }
        assert_eq!(c.mono_at(1_000_000), 1_000_000);
        assert_eq!(c.mono_at(1_500_001), 1_625_001);
        // A rate at or below -100 % would stop the clock: it is held just above.
        c.set_mono_rate(9_000_000, -2_000_000);
        assert_eq!(c.mono_rate_ppm(), MIN_MONO_RATE_PPM);
        assert!(c.mono_at(10_000_000) > c.mono_at(9_000_000));
    }

    #[test]
    fn monotonic_inverse_is_exact() {
        for ppm in [
            MIN_MONO_RATE_PPM,
            -500_000,
            -1,
            0,
            1,
            37,
            500_000,
            1_000_000,
            9_000_000,
        ] {
            let mut c = NodeClock::new(0, 0);
            c.reboot(3_000_000);
            c.set_mono_rate(4_000_000, ppm);
            let now_mono = c.mono_at(4_000_000);
            for target in [now_mono, now_mono + 1, now_mono + 999_999, 123_456_789] {
                let t = c.true_time_for_mono(target);
                assert!(c.mono_at(t) >= target, "ppm {ppm} target {target}");
                assert!(
                    c.mono_at(t - 1) < target,
                    "not earliest: ppm {ppm} target {target}"
                );
            }
        }
        // At the true rate since boot it is boot + reading, even for a reading already passed.
        let mut c = NodeClock::new(0, 0);
        c.reboot(5_000_000);
        assert_eq!(c.true_time_for_mono(7), 5_000_007);
        assert_eq!(c.true_time_for_mono(0), 5_000_000);
    }

    #[test]
    fn reboot_restarts_monotonic_at_the_current_rate() {
        let mut c = NodeClock::new(0, 0);
        c.set_mono_rate(1_000_000, 1_000_000);
        c.reboot(5_000_000);
        assert_eq!(c.mono_at(5_000_000), 0);
        assert_eq!(c.boot_us(), 5_000_000);
        assert_eq!(c.mono_rate_ppm(), 1_000_000);
        // Twice as fast after the reboot too.
        assert_eq!(c.mono_at(6_000_000), 2_000_000);
        // Before the reboot it read 1 s + 2 x 4 s.
        assert_eq!(c.mono_at(4_999_999), 8_999_998);
        // Back to the true rate: continuous.
        c.set_mono_rate(7_000_000, 0);
        assert_eq!(c.mono_at(8_000_000), 5_000_000);
        assert_eq!(c.true_time_for_mono(6_000_000), 9_000_000);
    }

    #[test]
    fn inverse_is_exact_with_drift() {
        for ppm in [-500, -1, 0, 1, 37, 500, 100_000] {
            let mut c = NodeClock::new(-3_000_000, 0);
            c.set_drift(1_000_000, ppm);
            for target in [0i64, 1, 999_999, 60_000_000, 123_456_789] {
                let t = c.true_time_for_wall(target, 1_000_000);
                assert!(c.wall_at(t) >= target, "ppm {ppm} target {target}");
                if t > 1_000_000 {
                    assert!(
                        c.wall_at(t - 1) < target,
                        "not earliest: ppm {ppm} target {target}"
                    );
                }
            }
        }
    }

    #[test]
    fn inverse_of_the_past_is_now() {
        let c = NodeClock::new(0, 0);
        assert_eq!(c.true_time_for_wall(5, 100), 100);
    }

    #[test]
    fn civil_round_trip() {
        for z in [-800_000, -1, 0, 1, 59, 20_454, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn rfc3339() {
        assert_eq!(format_rfc3339(0), "2026-01-01T00:00:00.000000Z");
        assert_eq!(format_rfc3339(-1), "2025-12-31T23:59:59.999999Z");
        assert_eq!(
            format_rfc3339(86_400_000_000 * 59 + 3_723_000_001),
            "2026-03-01T01:02:03.000001Z"
        );
    }
}
