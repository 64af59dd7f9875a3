//! How often each active finding shows: failures per 100,000 seeds of its scenario, under a fault
//! profile, with the default model (plus the finding's `shown_with` switches). A seed counts for a
//! finding when its run's violation matches the finding's exact [`Signature`](crate::findings::Signature).
//!
//! The measurements are recorded in `scenarios/data/finding-rates.json` (every failing seed, the
//! seed range, the profile and the commit measured at), written by `faultline findings
//! --measure-rates` (`just measure-rates`); `findings --json` and docs/findings.md read them, and
//! `scenarios/tests/finding_rates.rs` re-runs a sub-range and the recorded failing seeds.

use crate::explore::{run_spec, BadInput};
use crate::faults::Profile;
use crate::findings::Finding;
use crate::system::Registry;
use crate::RunSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The recorded measurements (`scenarios/data/finding-rates.json`).
pub const RECORDED_JSON: &str = include_str!("../data/finding-rates.json");

/// The fault profiles the measurements may name (the scenarios' draws).
pub const PROFILES: &[&str] = &["adversarial"];

/// Checks a profile's name: one of [`PROFILES`].
pub fn check_profile(name: &str) -> Result<&'static str, BadInput> {
    PROFILES
        .iter()
        .copied()
        .find(|p| *p == name)
        .ok_or_else(|| {
            BadInput(format!(
                "unknown profile '{name}' (profiles: {})",
                PROFILES.join(", ")
            ))
        })
}

/// One scenario (with switches) run over a seed range under one profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measurement {
    /// The scenario run.
    pub scenario: String,
    /// The switches on (the findings' `shown_with`; empty: the default model).
    pub with: Vec<String>,
    /// The fault profile.
    pub profile: Profile,
    /// The first seed of the range.
    pub first_seed: u64,
    /// How many consecutive seeds were run.
    pub seeds: u64,
    /// The commit of this repository measured at.
    pub commit: String,
    /// For each active finding of the scenario (with these switches): the seeds whose violation is
    /// that finding.
    pub failing: BTreeMap<String, Vec<u64>>,
}

/// The recorded file: its measurements.
#[derive(Debug, Serialize, Deserialize)]
pub struct Recorded {
    /// One per scenario, switch set and profile.
    pub measurements: Vec<Measurement>,
}

/// The recorded measurements (parsed once).
pub fn recorded() -> &'static [Measurement] {
    static R: OnceLock<Vec<Measurement>> = OnceLock::new();
    R.get_or_init(|| {
        serde_json::from_str::<Recorded>(RECORDED_JSON)
            .expect("scenarios/data/finding-rates.json parses")
            .measurements
    })
}

/// A finding's rate under one profile, as `findings --json` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Rate {
    /// The fault profile.
    pub profile: Profile,
    /// Seeds whose violation is this finding.
    pub failures: usize,
    /// Seeds run.
    pub seeds: u64,
    /// The first seed run.
    pub first_seed: u64,
    /// Failures per 100,000 seeds (rounded).
    pub per_100k: u64,
    /// The low end of the 95 % Wilson score interval of the rate, per 100,000 seeds (rounded
    /// down): the sample of `seeds` bounds the estimate no closer ([`interval_per_100k`]).
    pub per_100k_low: u64,
    /// The high end of that interval, per 100,000 seeds (rounded up).
    pub per_100k_high: u64,
    /// The commit measured at.
    pub commit: String,
}

/// The 95 % Wilson score interval of a rate of `failures` in `seeds` runs, per 100,000 seeds:
/// (low rounded down, high rounded up). Unlike the normal approximation it stays inside 0..1 and
/// means something for 0 failures, where its high end, 3.84/(n+3.84), is close to the rule of
/// three's one-sided 3/n. No seeds: (0, 100,000), nothing known.
pub fn interval_per_100k(failures: u64, seeds: u64) -> (u64, u64) {
    if seeds == 0 {
        return (0, 100_000);
    }
    const Z: f64 = 1.959_963_984_540_054; // the 97.5th percentile of the standard normal
    let (k, n) = (failures.min(seeds) as f64, seeds as f64);
    let p = k / n;
    let z2 = Z * Z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    let low = ((centre - half).max(0.0) * 100_000.0 + 1e-9).floor();
    let high = ((centre + half).min(1.0) * 100_000.0 - 1e-9).ceil();
    (low as u64, high as u64)
}

/// The recorded rates of `f`, one per profile measured.
pub fn rates_of(f: &Finding) -> Vec<Rate> {
    recorded()
        .iter()
        .filter(|m| m.scenario == f.scenario && m.with == shown_with(f))
        .filter_map(|m| {
            let failures = m.failing.get(f.id)?.len();
            let (per_100k_low, per_100k_high) = interval_per_100k(failures as u64, m.seeds);
            Some(Rate {
                profile: m.profile,
                failures,
                seeds: m.seeds,
                first_seed: m.first_seed,
                per_100k: (failures as u64 * 100_000 + m.seeds / 2) / m.seeds.max(1),
                per_100k_low,
                per_100k_high,
                commit: m.commit.clone(),
            })
        })
        .collect()
}

fn shown_with(f: &Finding) -> Vec<String> {
    f.shown_with.iter().map(|s| s.to_string()).collect()
}

/// The active findings of `reg` grouped by what their scenario is run with: (scenario, switches).
pub fn groups(reg: &'static Registry) -> BTreeMap<(String, Vec<String>), Vec<&'static Finding>> {
    let mut out: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for f in reg.findings().filter(|f| f.is_active()) {
        out.entry((f.scenario.to_string(), shown_with(f)))
            .or_default()
            .push(f);
    }
    out
}

/// Runs `seeds` of `scenario` with switches `with` under `profile` and gives, for each of
/// `findings`, the seeds whose violation is that finding.
pub fn failing_seeds(
    reg: &'static Registry,
    scenario: &str,
    with: &[String],
    profile: Profile,
    seeds: impl Iterator<Item = u64>,
    findings: &[&'static Finding],
) -> Result<BTreeMap<String, Vec<u64>>, BadInput> {
    let sc = reg.scenario(scenario)?;
    let mut failing: BTreeMap<String, Vec<u64>> = findings
        .iter()
        .map(|f| (f.id.to_string(), vec![]))
        .collect();
    for seed in seeds {
        let out = run_spec(RunSpec::from_seed_in(sc, seed, &[], with, profile));
        let Some(v) = out.violation else { continue };
        if let Some(f) = findings.iter().find(|f| f.signature.matches(&v)) {
            failing.entry(f.id.to_string()).or_default().push(seed);
        }
    }
    Ok(failing)
}

/// Measures every active finding's group over `first_seed .. first_seed + seeds` under
/// `profile`, recording `commit`.
pub fn measure(
    reg: &'static Registry,
    profile: Profile,
    first_seed: u64,
    seeds: u64,
    commit: &str,
) -> Result<Vec<Measurement>, BadInput> {
    let mut out = vec![];
    for ((scenario, with), findings) in groups(reg) {
        let range = first_seed..first_seed.saturating_add(seeds);
        let failing = failing_seeds(reg, &scenario, &with, profile, range, &findings)?;
        out.push(Measurement {
            scenario,
            with,
            profile,
            first_seed,
            seeds,
            commit: commit.to_string(),
            failing,
        });
    }
    Ok(out)
}

/// One line for docs/findings.md: the rates of `f` under each profile measured.
pub fn markdown_of(f: &Finding) -> String {
    let rates = rates_of(f);
    if rates.is_empty() {
        return "not measured".to_string();
    }
    let parts: Vec<String> = rates
        .iter()
        .map(|r| {
            format!(
                "{} {} per 100,000 (95 % interval {}-{}; {} of {} seeds from {}, at {})",
                r.profile.name(),
                r.per_100k,
                r.per_100k_low,
                r.per_100k_high,
                r.failures,
                r.seeds,
                r.first_seed,
                &r.commit[..r.commit.len().min(8)]
            )
        })
        .collect();
    parts.join("; ")
}

/// One line per finding of `m` for a person reading `--measure-rates`: its rate and interval.
pub fn summary_lines(m: &Measurement) -> Vec<String> {
    m.failing
        .iter()
        .map(|(id, seeds)| {
            let k = seeds.len() as u64;
            let (low, high) = interval_per_100k(k, m.seeds);
            format!(
                "{id}: {} {} of {} seeds from {}: {} per 100,000 (95 % interval {low}-{high})",
                m.profile.name(),
                k,
                m.seeds,
                m.first_seed,
                (k * 100_000 + m.seeds / 2) / m.seeds.max(1)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::interval_per_100k;

    #[test]
    fn the_interval_bounds_the_rate_by_the_sample_size() {
        // 0 of n: only an upper bound, near the rule of three's 3/n (150 per 100,000 for 2,000).
        assert_eq!(interval_per_100k(0, 2_000), (0, 192));
        assert_eq!(interval_per_100k(0, 100_000), (0, 4));
        // One failure in 2,000 seeds is 50 per 100,000, but anything from 8 to 283 fits it.
        assert_eq!(interval_per_100k(1, 2_000), (8, 283));
        // Fifty times the seeds, fifty times the failures: the same rate, a narrower interval.
        assert_eq!(interval_per_100k(50, 100_000), (37, 66));
        assert_eq!(interval_per_100k(2_000, 2_000), (99_808, 100_000));
        assert_eq!(interval_per_100k(3, 0), (0, 100_000));
    }
}
