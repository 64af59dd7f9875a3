//! `faultline findings`' measuring and reporting options: `--measure-rates` (each active
//! finding's failures per 100,000 seeds of its scenario) and `--report ID` (its upstream-ready
//! report); and the rates that `findings --json` adds to each finding.

use super::exit::Exit;
use crate::explore::BadInput;
use crate::finding_rates::{self, Measurement, Recorded};
use crate::system::Registry;
use clap::Args;
use serde_json::{json, Value};

/// `findings --measure-rates` and `--report`.
#[derive(Args, Debug)]
pub struct MoreFindingsArgs {
    /// Run every active finding's scenario (default model, plus its `shown_with` switches) over
    /// a seed range and print the recorded rates file (scenarios/data/finding-rates.json) with
    /// this profile's measurements replaced.
    #[arg(long)]
    pub measure_rates: bool,
    /// With --measure-rates: how many seeds per scenario.
    #[arg(long, default_value = "2000", requires = "measure_rates")]
    pub seeds: u64,
    /// With --measure-rates: the first seed.
    #[arg(long, default_value = "0", requires = "measure_rates")]
    pub first_seed: u64,
    /// With --measure-rates: the fault profile (adversarial or realistic).
    #[arg(long, default_value = "adversarial", requires = "measure_rates")]
    pub profile: String,
    /// With --measure-rates: the commit measured at, recorded with the rates.
    #[arg(long, requires = "measure_rates")]
    pub commit: Option<String>,
    /// Print the upstream-ready report of this active finding (docs/findings/ID.md).
    #[arg(long, value_name = "ID", conflicts_with = "measure_rates")]
    pub report: Option<String>,
}

impl MoreFindingsArgs {
    /// Whether one of these options was given.
    pub fn requested(&self) -> bool {
        self.measure_rates || self.report.is_some()
    }
}

/// Runs `--measure-rates` or `--report`.
pub(super) fn run(reg: &'static Registry, a: MoreFindingsArgs) -> Result<Exit, BadInput> {
    if let Some(id) = a.report {
        let f = reg
            .findings()
            .find(|f| f.id == id && f.is_active())
            .ok_or_else(|| {
                BadInput(format!(
                    "no active finding '{id}' (see `faultline findings`)"
                ))
            })?;
        print!("{}", crate::finding_report::markdown(reg, f));
        return Ok(Exit::Clean);
    }
    let profile = crate::faults::Profile::parse(&a.profile)?;
    let commit = a.commit.ok_or_else(|| {
        BadInput("--measure-rates needs --commit (the commit measured at)".into())
    })?;
    if a.seeds == 0 {
        return Err(BadInput("--seeds must be at least 1".into()));
    }
    let new = finding_rates::measure(reg, profile, a.first_seed, a.seeds, &commit)?;
    // The rates with the interval the sample allows, for the person measuring (standard output
    // is the rates file).
    for line in new.iter().flat_map(finding_rates::summary_lines) {
        eprintln!("{line}");
    }
    let mut measurements: Vec<Measurement> = finding_rates::recorded()
        .iter()
        .filter(|m| {
            !new.iter()
                .any(|n| n.scenario == m.scenario && n.with == m.with && n.profile == m.profile)
        })
        .cloned()
        .collect();
    measurements.extend(new);
    measurements.sort_by(|a, b| {
        (&a.scenario, &a.with, a.profile.name()).cmp(&(&b.scenario, &b.with, b.profile.name()))
    });
    let out = serde_json::to_string_pretty(&Recorded { measurements }).expect("serializable");
    println!("{out}");
    Ok(Exit::Clean)
}

/// Every finding of `reg` as `findings --json` shows it: the catalog entry plus its `rates`.
pub(super) fn with_rates(reg: &'static Registry) -> Vec<Value> {
    reg.findings()
        .map(|f| {
            let mut v = serde_json::to_value(f).expect("serializable");
            v["rates"] = json!(finding_rates::rates_of(f));
            v
        })
        .collect()
}
