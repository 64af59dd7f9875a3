//! Units and summaries, in one place: every conversion of simulated microseconds to seconds for
//! people (monitors' sentences, reports, benchmarks) and the one median.

/// Seconds from microseconds.
pub fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Microseconds as seconds for a sentence: `12.345 s`.
pub fn show_secs(us: u64) -> String {
    format!("{:.3} s", secs(us))
}

/// The median: the middle value, or the mean of the two middle values (none of no values).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[1.5]), Some(1.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn seconds() {
        assert_eq!(secs(1_500_000), 1.5);
        assert_eq!(show_secs(12_345_678), "12.346 s");
    }
}
