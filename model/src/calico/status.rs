//! Felix status timestamps and the stale-update warning (projectcalico/calico PR 13024).
//!
//! Felix writes `{"time": ..., "uptime": ..., "first_update": ...}` every 30 s. `time` comes from
//! the compute host's WALL clock, in one of the formats seen in practice: with `Z`, with a UTC
//! offset, without a timezone (naive), or, rarely, garbage. The agent-status handler parses it like
//! Python's `datetime.fromisoformat` (3.11: `Z` accepted), treats a naive time as UTC, skips an
//! unparsable one ("could not parse"), and warns when `now_utc - time` exceeds 300 s, at most once
//! per 300 s of the monotonic clock, never while replaying a snapshot. The limiter starts at minus
//! infinity so the first warning always fires.
//!
//! Bug switches: `calico-stale-warn-zero-sentinel` (limiter starts at 0.0, so on a host up for less
//! than 300 s the first warning is suppressed), `calico-stale-warn-naive-crash` (a naive time is not
//! treated as UTC: subtracting it from an aware time raises, killing the handler's task),
//! `calico-stale-warn-in-snapshot` (the check also runs during snapshot replay).

use super::Switches;
use serde::{Deserialize, Serialize};
use sim::clock::{civil_from_days, days_from_civil, EPOCH_UNIX_US};

/// Stale threshold.
pub const STALE_THRESHOLD_US: i64 = 300_000_000;
/// Warning rate limit (monotonic clock).
pub const STALE_WARN_INTERVAL_US: u64 = 300_000_000;

/// How a Felix host formats its timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeFormat {
    /// `2026-01-01T00:00:05.123456Z`
    Zulu,
    /// `2026-01-01T05:30:05.123456+05:30` (local time with its offset, in minutes east of UTC)
    Offset {
        /// The host's offset from UTC (minutes east).
        minutes: i32,
    },
    /// `2026-01-01T00:00:05.123456` (UTC, no timezone)
    Naive,
}

/// Formats a wall reading (µs, see `sim::clock`) as Felix would: `datetime.isoformat()`,
/// `YYYY-MM-DDTHH:MM:SS.ffffff` and the zone (`Z`, `+HH:MM` or none). Written digit by digit:
/// Felix reports are the busiest strings of a Calico run.
pub fn format_time(wall_us: i64, fmt: TimeFormat) -> String {
    let shift_us = match fmt {
        TimeFormat::Offset { minutes } => minutes as i64 * 60_000_000,
        TimeFormat::Zulu | TimeFormat::Naive => 0,
    };
    let unix = EPOCH_UNIX_US + wall_us + shift_us;
    let (secs, micros) = (unix.div_euclid(1_000_000), unix.rem_euclid(1_000_000));
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let mut s = String::with_capacity(32);
    if y < 0 {
        // Not a year Felix can report; `{:04}` puts the sign first.
        s.push_str(&format!("{y:04}"));
    } else {
        push_padded(&mut s, y as u64, 4);
    }
    for (sep, v, width) in [
        ('-', mo as u64, 2),
        ('-', d as u64, 2),
        ('T', (sod / 3600) as u64, 2),
        (':', ((sod / 60) % 60) as u64, 2),
        (':', (sod % 60) as u64, 2),
        ('.', micros as u64, 6),
    ] {
        s.push(sep);
        push_padded(&mut s, v, width);
    }
    match fmt {
        TimeFormat::Zulu => s.push('Z'),
        TimeFormat::Naive => {}
        TimeFormat::Offset { minutes } => {
            s.push(if minutes < 0 { '-' } else { '+' });
            let m = minutes.unsigned_abs() as u64;
            push_padded(&mut s, m / 60, 2);
            s.push(':');
            push_padded(&mut s, m % 60, 2);
        }
    }
    s
}

/// Appends `v` in decimal with at least `width` digits (zeros in front), as `{:0width$}`.
fn push_padded(s: &mut String, v: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut n = v;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = (digits.len() - i).max(width);
    s.push_str(std::str::from_utf8(&digits[digits.len() - len..]).expect("ASCII digits"));
}

/// A parsed timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Timezone-aware: Unix µs.
    Aware(i64),
    /// No timezone: Unix µs if it were UTC.
    Naive(i64),
    /// `fromisoformat` raises ValueError.
    Invalid,
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Parses like Python 3.11's `datetime.fromisoformat` for the shapes Felix produces.
pub fn parse_time(s: &str) -> Parsed {
    felix_shape(s).unwrap_or_else(|| parse_general(s))
}

/// The exact shape [`format_time`] writes (`YYYY-MM-DDTHH:MM:SS.ffffff`, then `Z`, `±HH:MM` or
/// nothing), read by position; `None` for anything else, which the general parser reads (the
/// two agree wherever this one answers: tested).
fn felix_shape(s: &str) -> Option<Parsed> {
    let b = s.as_bytes();
    if b.len() < 26 {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + (c - b'0') as i64)
        })
    };
    let seps = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ];
    if seps.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, se, micros) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 26)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let local = ((days * 86_400 + h * 3600 + mi * 60 + se) * 1_000_000) + micros;
    match &b[26..] {
        [] => Some(Parsed::Naive(local)),
        [b'Z'] => Some(Parsed::Aware(local)),
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(27, 29)?, num(30, 32)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let sign = if *sign == b'-' { -1 } else { 1 };
            Some(Parsed::Aware(
                local - sign * (oh * 3600 + om * 60) * 1_000_000,
            ))
        }
        _ => None,
    }
}

/// `fromisoformat` for every shape the model accepts.
fn parse_general(s: &str) -> Parsed {
    let parse = || -> Option<Parsed> {
        let (date, rest) = s.split_once('T')?;
        let mut d = date.split('-');
        let (y, mo, da) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
        if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&da) {
            return None;
        }
        let (clock, tz) = match rest.find(['Z', '+', '-']) {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (hms, frac) = match clock.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (clock, None),
        };
        let mut t = hms.split(':');
        let (h, mi, se) = (num(t.next()?)?, num(t.next()?)?, num(t.next()?)?);
        if t.next().is_some() || h > 23 || mi > 59 || se > 59 {
            return None;
        }
        let micros = match frac {
            None => 0,
            Some(f) if (1..=6).contains(&f.len()) => num(f)? * 10i64.pow(6 - f.len() as u32),
            Some(_) => return None,
        };
        let days = days_from_civil(y, mo as u32, da as u32);
        let local = ((days * 86_400 + h * 3600 + mi * 60 + se) * 1_000_000) + micros;
        Some(match tz {
            None => Parsed::Naive(local),
            Some("Z") => Parsed::Aware(local),
            Some(off) => {
                let sign = if off.starts_with('-') { -1 } else { 1 };
                let (oh, om) = off[1..].split_once(':')?;
                let (oh, om) = (num(oh)?, num(om)?);
                if oh > 23 || om > 59 {
                    return None;
                }
                Parsed::Aware(local - sign * (oh * 3600 + om * 60) * 1_000_000)
            }
        })
    };
    parse().unwrap_or(Parsed::Invalid)
}

/// The warning's rate limiter (per watcher process).
#[derive(Clone, Debug)]
pub struct Limiter {
    /// Monotonic time of the last warning; `None` is minus infinity.
    last_warned_us: Option<u64>,
}

impl Limiter {
    /// A fresh limiter: minus infinity upstream, 0.0 under `calico-stale-warn-zero-sentinel`.
    pub fn new(sw: &Switches) -> Self {
        Limiter {
            last_warned_us: sw.stale_warn_zero_sentinel.then_some(0),
        }
    }

    /// True (and remembers) if a warning may be logged at monotonic time `mono_us`.
    pub fn allow(&mut self, mono_us: u64) -> bool {
        let ok = self
            .last_warned_us
            .is_none_or(|last| mono_us.saturating_sub(last) >= STALE_WARN_INTERVAL_US);
        if ok {
            self.last_warned_us = Some(mono_us);
        }
        ok
    }
}

/// What the stale check decided for one report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stale {
    /// Not checked (snapshot replay, or no `time`).
    Skipped,
    /// `time` could not be parsed: logged and skipped.
    Unparsable,
    /// Younger than the threshold.
    Fresh,
    /// Older than the threshold (`lag_us` is the whole age); `warned` if the limiter let the
    /// warning through.
    Stale {
        /// The report's age: the checking host's Unix wall time minus the report's `time` (µs;
        /// above [`STALE_THRESHOLD_US`]).
        lag_us: i64,
        /// Whether the rate limiter let the warning through.
        warned: bool,
    },
    /// The handler raised (naive minus aware): the task dies.
    Raised(String),
}

/// The stale-update check of `_on_status_set` (see the module documentation).
pub fn check(
    time: Option<&str>,
    now_unix_us: i64,
    mono_us: u64,
    in_snapshot: bool,
    limiter: &mut Limiter,
    sw: &Switches,
) -> Stale {
    if in_snapshot && !sw.stale_warn_in_snapshot {
        return Stale::Skipped;
    }
    let Some(time) = time else {
        return Stale::Skipped;
    };
    let then = match parse_time(time) {
        Parsed::Aware(t) => t,
        Parsed::Naive(_) if sw.stale_warn_naive_crash => {
            return Stale::Raised(
                "TypeError: can't subtract offset-naive and offset-aware datetimes".into(),
            )
        }
        Parsed::Naive(t) => t,
        Parsed::Invalid if sw.mutant_watcher_dies_on_unparsable => {
            return Stale::Raised(format!("ValueError: Invalid isoformat string: '{time}'"))
        }
        Parsed::Invalid => return Stale::Unparsable,
    };
    let lag_us = now_unix_us - then;
    let threshold_us = if sw.mutant_stale_threshold_ms {
        STALE_THRESHOLD_US / 1000
    } else {
        STALE_THRESHOLD_US
    };
    if lag_us <= threshold_us || sw.mutant_stale_warn_missing {
        return Stale::Fresh;
    }
    Stale::Stale {
        lag_us,
        warned: sw.mutant_stale_warn_unlimited || limiter.allow(mono_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward `format!` of the same fields.
    fn format_time_reference(wall_us: i64, fmt: TimeFormat) -> String {
        let (shift_us, suffix) = match fmt {
            TimeFormat::Zulu => (0, "Z".to_string()),
            TimeFormat::Naive => (0, String::new()),
            TimeFormat::Offset { minutes } => {
                let sign = if minutes < 0 { '-' } else { '+' };
                let m = minutes.unsigned_abs();
                (
                    minutes as i64 * 60_000_000,
                    format!("{sign}{:02}:{:02}", m / 60, m % 60),
                )
            }
        };
        let unix = EPOCH_UNIX_US + wall_us + shift_us;
        let (secs, micros) = (unix.div_euclid(1_000_000), unix.rem_euclid(1_000_000));
        let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
        let sod = secs.rem_euclid(86_400);
        format!(
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}{suffix}",
            sod / 3600,
            (sod / 60) % 60,
            sod % 60
        )
    }

    /// Every zone shape, with an offset of more than 99 hours for the widths.
    const FORMATS: [TimeFormat; 5] = [
        TimeFormat::Zulu,
        TimeFormat::Naive,
        TimeFormat::Offset { minutes: -765 },
        TimeFormat::Offset { minutes: 330 },
        TimeFormat::Offset { minutes: 6_000 },
    ];

    /// Walls from 1970 to about 2110 at uneven steps (every field takes many values), then from
    /// long before the epoch (negative years) to far after it.
    fn walls() -> impl Iterator<Item = i64> {
        let near =
            (0..2_000i64).map(|k| -EPOCH_UNIX_US + k * (EPOCH_UNIX_US / 640) + k * k * 7_919);
        let far = std::iter::successors(Some((-EPOCH_UNIX_US * 40, 1_234_567i64)), |&(w, step)| {
            Some((w + step, step * 3 / 2 + 7))
        })
        .map(|(w, _)| w)
        .take_while(|w| *w < EPOCH_UNIX_US * 200);
        near.chain(far)
    }

    #[test]
    fn formatting_matches_format_everywhere() {
        for wall in walls() {
            for fmt in FORMATS {
                assert_eq!(format_time(wall, fmt), format_time_reference(wall, fmt));
            }
        }
    }

    #[test]
    fn the_felix_shape_reads_as_the_general_parser_does() {
        let mut checked = 0;
        for wall in walls() {
            for fmt in FORMATS {
                let t = format_time(wall, fmt);
                // The string, and variants with one byte changed or cut short.
                let mut variants = vec![t.clone(), t[..t.len() - 1].to_string(), format!("{t}0")];
                // Invalid ones (month 2x, day 4x, hour 3x, ...), then valid ones (other digits).
                for (i, c) in [
                    (5, '2'),
                    (8, '4'),
                    (11, '3'),
                    (14, '7'),
                    (17, '9'),
                    (21, 'x'),
                    (26, '*'),
                    (3, '7'),
                    (9, '1'),
                    (12, '1'),
                    (15, '3'),
                    (18, '5'),
                    (25, '9'),
                    (28, '1'),
                ] {
                    if i < t.len() {
                        let mut v = t.clone().into_bytes();
                        v[i] = c as u8;
                        variants.push(String::from_utf8(v).unwrap());
                    }
                }
                for v in variants {
                    if let Some(p) = felix_shape(&v) {
                        assert_eq!(p, parse_general(&v), "{v}");
                        checked += 1;
                    } else {
                        assert_eq!(parse_time(&v), parse_general(&v), "{v}");
                    }
                }
            }
        }
        assert!(checked > 60_000, "{checked}");
    }

    #[test]
    fn formats_round_trip() {
        let wall = 123_456_789_012;
        let unix = EPOCH_UNIX_US + wall;
        assert_eq!(
            parse_time(&format_time(wall, TimeFormat::Zulu)),
            Parsed::Aware(unix)
        );
        assert_eq!(
            parse_time(&format_time(wall, TimeFormat::Naive)),
            Parsed::Naive(unix)
        );
        for minutes in [-480, -30, 0, 330, 765] {
            assert_eq!(
                parse_time(&format_time(wall, TimeFormat::Offset { minutes })),
                Parsed::Aware(unix),
                "{minutes}"
            );
        }
        assert_eq!(
            format_time(0, TimeFormat::Offset { minutes: 330 }),
            "2026-01-01T05:30:00.000000+05:30"
        );
        assert_eq!(
            format_time(0, TimeFormat::Naive),
            "2026-01-01T00:00:00.000000"
        );
    }

    #[test]
    fn fromisoformat_shapes() {
        assert_eq!(
            parse_time("2015-08-14T10:37:54"),
            Parsed::Naive((days_from_civil(2015, 8, 14) * 86_400 + 38_274) * 1_000_000)
        );
        assert!(matches!(
            parse_time("2015-08-14T10:37:54.5Z"),
            Parsed::Aware(_)
        ));
        for bad in [
            "",
            "garbage",
            "2015-08-14",
            "2015-13-01T00:00:00",
            "2015-08-14T25:00:00Z",
            "2015-08-14T10:37:54.1234567Z",
            "2015-08-14T10:37:54+0x:00",
        ] {
            assert_eq!(parse_time(bad), Parsed::Invalid, "{bad}");
        }
    }

    fn sw() -> Switches {
        Switches::default()
    }

    #[test]
    fn limiter_first_warning_always_fires_upstream() {
        let mut l = Limiter::new(&sw());
        assert!(l.allow(5_000_000)); // a host up for 5 s
        assert!(!l.allow(200_000_000));
        assert!(l.allow(305_000_000));
    }

    #[test]
    fn zero_sentinel_suppresses_the_first_warning_on_a_young_host() {
        let bug = Switches {
            stale_warn_zero_sentinel: true,
            ..sw()
        };
        let mut l = Limiter::new(&bug);
        assert!(!l.allow(5_000_000));
        assert!(l.allow(300_000_000));
    }

    #[test]
    fn stale_check_rules() {
        let now = EPOCH_UNIX_US + 1_000_000_000;
        let old = format_time(1_000_000_000 - 400_000_000, TimeFormat::Naive);
        let fresh = format_time(1_000_000_000 - 10_000_000, TimeFormat::Zulu);
        let mut l = Limiter::new(&sw());
        assert_eq!(
            check(Some(&old), now, 1, true, &mut l, &sw()),
            Stale::Skipped
        );
        assert_eq!(check(None, now, 1, false, &mut l, &sw()), Stale::Skipped);
        assert_eq!(
            check(Some("not a time"), now, 1, false, &mut l, &sw()),
            Stale::Unparsable
        );
        assert_eq!(
            check(Some(&fresh), now, 1, false, &mut l, &sw()),
            Stale::Fresh
        );
        assert_eq!(
            check(Some(&old), now, 1, false, &mut l, &sw()),
            Stale::Stale {
                lag_us: 400_000_000,
                warned: true
            }
        );
        assert_eq!(
            check(Some(&old), now, 2, false, &mut l, &sw()),
            Stale::Stale {
                lag_us: 400_000_000,
                warned: false
            }
        );
        let naive_bug = Switches {
            stale_warn_naive_crash: true,
            ..sw()
        };
        assert!(matches!(
            check(Some(&old), now, 1, false, &mut l, &naive_bug),
            Stale::Raised(_)
        ));
        let snap_bug = Switches {
            stale_warn_in_snapshot: true,
            ..sw()
        };
        let mut l2 = Limiter::new(&sw());
        assert!(matches!(
            check(Some(&old), now, 1, true, &mut l2, &snap_bug),
            Stale::Stale { warned: true, .. }
        ));
    }
}
