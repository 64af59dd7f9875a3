//! `faultline hunt FINDING`: run a finding's scenario (with its `shown_with` switches) over a
//! seed range and print the seeds whose violation is that finding, named exactly as `run --json`
//! names it ([`Registry::finding_in`]). What re-pins a finding after a model change moved its
//! seeds.
//!
//! Each matching seed is printed (and flushed) the moment its run ends, and without a terminal a
//! line on standard error says every so often how far the seeds are all done, so a hunt that is
//! killed loses nothing: its output says which seeds matched and where to go on from.

use super::exit::Exit;
use crate::bench::cores;
use crate::explore::{check_switches, parse_seed, BadInput};
use crate::faults::Profile;
use crate::findings::{Finding, Status};
use crate::scenario::RunSpec;
use crate::system::{Registry, Scenario};
use clap::Args;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Without a terminal: a progress line on standard error each time this many more seeds, from
/// the first, are all done.
const CHECKPOINT: u64 = 1_000;

/// `faultline hunt`.
#[derive(Args, Debug)]
pub struct HuntArgs {
    /// The active finding to hunt (see `faultline findings`).
    pub finding: String,
    /// How many seeds to run.
    #[arg(long, default_value = "1000")]
    pub seeds: String,
    /// The first seed.
    #[arg(long, alias = "from", default_value = "0")]
    pub first_seed: String,
    /// How seeds draw their faults: `adversarial` (the default) or `realistic`.
    #[arg(long, default_value = "adversarial")]
    pub profile: String,
    /// Worker threads (default: the number of cores); the seeds found do not depend on it.
    #[arg(long, value_parser = super::args::at_least_one)]
    pub jobs: Option<usize>,
    /// Print only the JSON object at the end (no streamed lines).
    #[arg(long)]
    pub json: bool,
}

/// What a hunt runs: the finding, its scenario and switches, the seeds and the profile.
struct Hunt {
    finding: &'static Finding,
    scenario: &'static Scenario,
    with: Vec<String>,
    profile: Profile,
    first: u64,
    seeds: u64,
}

impl Hunt {
    fn spec(&self, seed: u64) -> RunSpec {
        RunSpec::from_seed_in(self.scenario, seed, &[], &self.with, self.profile)
    }
}

/// What the seeds showed so far: the matching seeds, the other failures by name, and which seeds
/// are done (for the checkpoint lines).
#[derive(Default)]
struct Tally {
    matching: Vec<u64>,
    others: BTreeMap<String, u64>,
    /// Seeds (as offsets from the first) done beyond `prefix`.
    done: BTreeSet<u64>,
    /// Every seed offset below it is done.
    prefix: u64,
}

/// The active finding `id` of `reg`, or one line saying why there is none to hunt.
fn active_finding(reg: &'static Registry, id: &str) -> Result<&'static Finding, BadInput> {
    let f = reg.findings().find(|f| f.id == id).ok_or_else(|| {
        BadInput(format!(
            "unknown finding '{id}' (see `{} findings`)",
            reg.command()
        ))
    })?;
    match &f.status {
        Status::Active => Ok(f),
        Status::Retired { .. } => Err(BadInput(format!(
            "finding '{id}' is retired: the model no longer shows it, so there is nothing to hunt \
             (see `{} findings`)",
            reg.command()
        ))),
    }
}

/// `faultline hunt`.
pub(super) fn hunt(reg: &'static Registry, a: HuntArgs) -> Result<Exit, BadInput> {
    let finding = active_finding(reg, &a.finding)?;
    let scenario = reg.scenario(finding.scenario)?;
    let with: Vec<String> = finding.shown_with.iter().map(|s| s.to_string()).collect();
    check_switches(reg, scenario, &[], &with)?;
    let h = Arc::new(Hunt {
        finding,
        scenario,
        with,
        profile: Profile::parse(&a.profile)?,
        first: parse_seed(&a.first_seed)?,
        seeds: super::count(&a.seeds, "seed count")?,
    });
    if h.first.checked_add(h.seeds - 1).is_none() {
        return Err(BadInput(format!(
            "--first-seed {} with --seeds {} runs past the last seed (2^64 - 1)",
            h.first, h.seeds
        )));
    }
    if !a.json {
        println!(
            "hunting {} in {} seeds of {} from {} ({}{})",
            finding.id,
            h.seeds,
            scenario.name,
            h.first,
            h.profile.name(),
            flags(&h.with)
        );
    }
    let tally = run_seeds(reg, &h, a.jobs.unwrap_or_else(cores), a.json);
    finish(&h, tally, a.json)
}

/// ` --fix X` for each switch.
fn flags(with: &[String]) -> String {
    with.iter().map(|w| format!(" --fix {w}")).collect()
}

/// Runs every seed of `h` on `jobs` threads, printing each matching seed as it is found.
fn run_seeds(reg: &'static Registry, h: &Arc<Hunt>, jobs: usize, json: bool) -> Tally {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let bar = (!json && std::io::stderr().is_terminal()).then(|| progress_bar(h.seeds));
    let checkpoints = !json && bar.is_none();
    let (h1, h2, t2, b2) = (h.clone(), h.clone(), tally.clone(), bar.clone());
    sim::runtime::pool(
        h.seeds as usize,
        jobs,
        Arc::new(AtomicBool::new(false)),
        move |i| {
            let spec = h2.spec(h2.first + i as u64);
            let out = spec.run();
            out.violation.map(|v| {
                reg.finding_in(&spec, &v)
                    .map_or_else(|| format!("{} (no finding)", v.invariant), |f| f.id.into())
            })
        },
        move |i, r| {
            let h = &h1;
            let seed = h.first + i as u64;
            let name = r.unwrap_or_else(|panic| Some(format!("crashed ({panic})")));
            let mut t = t2.lock().unwrap_or_else(|e| e.into_inner());
            match name {
                Some(n) if n == h.finding.id => {
                    t.matching.push(seed);
                    if !json {
                        let line = format!("seed {seed}: {}", h.spec(seed).command());
                        match &b2 {
                            Some(b) => b.println(line),
                            None => println!("{line}"),
                        }
                        let _ = std::io::stdout().flush();
                    }
                }
                Some(n) => *t.others.entry(n).or_default() += 1,
                None => {}
            }
            t.done.insert(i as u64);
            let before = t.prefix;
            while t.done.first() == Some(&t.prefix) {
                t.done.pop_first();
                t.prefix += 1;
            }
            if let Some(b) = &b2 {
                b.inc(1);
                b.set_message(format!("{} found", t.matching.len()));
            }
            if checkpoints && before / CHECKPOINT != t.prefix / CHECKPOINT {
                eprintln!(
                    "hunt: seeds {}..{} done, {} found",
                    h.first,
                    h.first + t.prefix - 1,
                    t.matching.len()
                );
            }
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut t = std::mem::take(&mut *tally.lock().unwrap_or_else(|e| e.into_inner()));
    t.matching.sort_unstable();
    t
}

fn progress_bar(len: u64) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos}/{len} seeds [{elapsed_precise}] {wide_bar} {msg} eta {eta}",
        )
        .expect("a valid template"),
    );
    b
}

/// The summary for people (unless `json`), the JSON line, and the exit status: 1 when a seed
/// shows the finding (its violation found), 0 when none does.
fn finish(h: &Hunt, t: Tally, json: bool) -> Result<Exit, BadInput> {
    if !json {
        let seeds: Vec<String> = t.matching.iter().map(u64::to_string).collect();
        println!(
            "{}: {} of {} seeds of {} from {} show it{}",
            h.finding.id,
            t.matching.len(),
            h.seeds,
            h.scenario.name,
            h.first,
            match seeds.is_empty() {
                true => String::new(),
                false => format!(": {}", seeds.join(", ")),
            }
        );
        for (name, n) in &t.others {
            println!("  other failures: {name}: {n}");
        }
    }
    println!(
        "{}",
        json!({
            "finding": h.finding.id, "scenario": h.scenario.name, "with": h.with,
            "profile": h.profile, "first_seed": h.first, "seeds": h.seeds,
            "matching_seeds": t.matching, "other_failures": t.others,
        })
    );
    Ok(Exit::failed_if(!t.matching.is_empty()))
}
