//! The monitor's own reading of a Felix report's `time`, written from the spec and upstream, not
//! taken from the model: upstream replaces `Z` by `+00:00` and calls Python's
//! `datetime.fromisoformat`, and treats a time without a zone as UTC (status.py
//! `StatusWatcher._check_for_stale_status`, lines 150-167 at projectcalico/calico 87c15906).
//!
//! It reads the extended ISO 8601 shape Felix writes (`datetime.isoformat()`):
//! `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 6 digits, then `Z`, `+HH:MM`, `-HH:MM` or
//! nothing. Anything else is unreadable (`None`), as `fromisoformat` finds Felix's garbage.
//!
//! Reads nothing but the string; calls no model function.

/// Days from 1970-01-01 to the proleptic Gregorian date `y`-`m`-`d` (Howard Hinnant's
/// `days_from_civil`).
fn days(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The decimal number `s` if it is exactly `len` ASCII digits.
fn digits(s: &str, len: usize) -> Option<i64> {
    (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// Days in month `m` of year `y`.
fn month_days(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The UTC offset `+HH:MM` / `-HH:MM` in µs.
fn offset_us(zone: &str) -> Option<i64> {
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = zone[1..].split_once(':')?;
    let (h, m) = (digits(h, 2)?, digits(m, 2)?);
    (h < 24 && m < 60).then_some(sign * (h * 3600 + m * 60) * 1_000_000)
}

/// The report's `time` as Unix µs, a zone-less time taken as UTC; `None` if unreadable.
pub(super) fn unix_us(time: &str) -> Option<i64> {
    let (date, clock) = time.split_once('T')?;
    let mut d = date.split('-');
    let (y, mo, da) = (
        digits(d.next()?, 4)?,
        digits(d.next()?, 2)?,
        digits(d.next()?, 2)?,
    );
    if d.next().is_some() || !(1..=12).contains(&mo) || da < 1 || da > month_days(y, mo) {
        return None;
    }
    let (clock, zone_us) = if let Some(c) = clock.strip_suffix('Z') {
        (c, 0)
    } else if let Some(i) = clock.find(['+', '-']) {
        (&clock[..i], offset_us(&clock[i..])?)
    } else {
        (clock, 0)
    };
    let (hms, frac_us) = match clock.split_once('.') {
        Some((hms, f)) if (1..=6).contains(&f.len()) => {
            (hms, digits(f, f.len())? * 10i64.pow(6 - f.len() as u32))
        }
        Some(_) => return None,
        None => (clock, 0),
    };
    let mut p = hms.split(':');
    let (h, mi, s) = (
        digits(p.next()?, 2)?,
        digits(p.next()?, 2)?,
        digits(p.next()?, 2)?,
    );
    if p.next().is_some() || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let local_us = (days(y, mo, da) * 86_400 + h * 3600 + mi * 60 + s) * 1_000_000 + frac_us;
    Some(local_us - zone_us)
}

/// Whether `time` is readable and carries no zone (upstream takes it as UTC).
pub(super) fn is_naive(time: &str) -> bool {
    unix_us(time).is_some()
        && time
            .split_once('T')
            .is_some_and(|(_, clock)| !clock.contains(['Z', '+', '-']))
}

#[cfg(test)]
mod tests {
    use super::unix_us;

    #[test]
    fn reads_felix_shapes() {
        // 2026-01-01T00:00:00Z is 1767225600 s after the epoch.
        let base = 1_767_225_600_000_000i64;
        assert_eq!(unix_us("2026-01-01T00:00:00.000000Z"), Some(base));
        assert_eq!(unix_us("2026-01-01T00:00:00"), Some(base));
        assert_eq!(unix_us("2026-01-01T05:30:00.5+05:30"), Some(base + 500_000));
        assert_eq!(unix_us("2025-12-31T19:00:00-05:00"), Some(base));
        assert!(unix_us("2024-02-29T00:00:00Z").is_some());
        assert!(super::is_naive("2026-01-01T00:00:00.000000"));
        assert!(!super::is_naive("2026-01-01T00:00:00.000000Z"));
        for bad in [
            "garbled-time",
            "",
            "2025-02-29T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:00.1234567Z",
            "2026-01-01 00:00:00Z",
            "2026-01-01T00:00:00+5:30",
        ] {
            assert_eq!(unix_us(bad), None, "{bad}");
        }
    }

    /// A cross-check (the monitor itself never calls the model): every shape Felix writes reads
    /// back as the instant it was written at.
    #[test]
    fn reads_what_felix_writes() {
        use model::calico::status::{format_time, TimeFormat};
        for k in 0..5_000i64 {
            let wall = -86_400_000_000 * 400 + k * 77_777_777_777 + k * k * 1_234;
            for fmt in [
                TimeFormat::Zulu,
                TimeFormat::Naive,
                TimeFormat::Offset { minutes: 330 },
                TimeFormat::Offset { minutes: -300 },
            ] {
                let s = format_time(wall, fmt);
                assert_eq!(unix_us(&s), Some(sim::clock::EPOCH_UNIX_US + wall), "{s}");
                assert_eq!(super::is_naive(&s), fmt == TimeFormat::Naive, "{s}");
            }
        }
    }
}
