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
use crate::explore::{check_switches, parse_seed, BadInput, ReplayFile, ScheduleFile};
use crate::faults::Profile;
use crate::findings::{Finding, Status};
use crate::scenario::RunSpec;
use crate::system::{Registry, Scenario};
use clap::Args;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
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
    /// Run this hand-written schedule file (as `run --schedule` takes it; its seed is replaced
    /// by each seed hunted, and without `options` each seed draws its own) instead of each seed's
    /// drawn schedule: finds the seeds with which a constructed replay shows the finding.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    /// Write each matching seed's run as a replay file, `<finding>-<seed>.json`, into this folder
    /// the moment it is found (for `faultline shrink` and `faultline replay`).
    #[arg(long)]
    pub save: Option<PathBuf>,
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
    /// The hand-written schedule run instead of each seed's drawn one.
    template: Option<ScheduleFile>,
    save: Option<PathBuf>,
}

impl Hunt {
    /// The run of `seed` (an error: the template's schedule does not fit the seed's options).
    fn spec(&self, reg: &'static Registry, seed: u64) -> Result<RunSpec, BadInput> {
        match &self.template {
            None => Ok(RunSpec::from_seed_in(
                self.scenario,
                seed,
                &[],
                &self.with,
                self.profile,
            )),
            Some(t) => ScheduleFile { seed, ..t.clone() }.spec(reg, &[], &self.with),
        }
    }

    /// The command that runs a matching seed.
    fn command(&self, reg: &'static Registry, seed: u64) -> String {
        match (&self.template, self.spec(reg, seed)) {
            (None, Ok(spec)) => spec.command(),
            _ => format!("the schedule file with seed {seed}"),
        }
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
    let template = a.schedule.as_deref().map(ScheduleFile::load).transpose()?;
    let scenario = match &template {
        Some(t) => template_scenario(reg, finding, &t.scenario)?,
        None => scenario,
    };
    if let Some(dir) = &a.save {
        super::output::prepare_dir(dir, "--save folder")?;
    }
    let h = Arc::new(Hunt {
        finding,
        scenario,
        with,
        profile: Profile::parse(&a.profile)?,
        first: parse_seed(&a.first_seed)?,
        seeds: super::count(&a.seeds, "seed count")?,
        template,
        save: a.save,
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

/// The scenario of a template for `f`: one of `f`'s system (the finding is named by its
/// system's signatures).
fn template_scenario(
    reg: &'static Registry,
    f: &Finding,
    name: &str,
) -> Result<&'static Scenario, BadInput> {
    let sc = reg.scenario(name)?;
    if sc.system != f.system {
        return Err(BadInput(format!(
            "the schedule file's scenario {name} runs {}; finding {} is of {}",
            sc.system, f.id, f.system
        )));
    }
    Ok(sc)
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
        move |i| run_one(reg, &h2, h2.first + i as u64),
        move |i, r| {
            let h = &h1;
            let seed = h.first + i as u64;
            let name = r.unwrap_or_else(|panic| Some((format!("crashed ({panic})"), None)));
            let mut t = t2.lock().unwrap_or_else(|e| e.into_inner());
            match name {
                Some((n, file)) if n == h.finding.id => {
                    t.matching.push(seed);
                    let saved = save(h, seed, file);
                    if !json {
                        let line = format!("seed {seed}: {}{saved}", h.command(reg, seed));
                        match &b2 {
                            Some(b) => b.println(line),
                            None => println!("{line}"),
                        }
                        let _ = std::io::stdout().flush();
                    }
                }
                Some((n, _)) => *t.others.entry(n).or_default() += 1,
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

/// Runs `seed`: the name of its failure (a finding's id, or the invariant), and its replay file
/// when it is the hunted finding and `--save` asks for it. None: it passed.
fn run_one(reg: &'static Registry, h: &Hunt, seed: u64) -> Option<(String, Option<ReplayFile>)> {
    let spec = match h.spec(reg, seed) {
        Ok(s) => s,
        Err(_) => return Some(("the schedule does not fit the seed's options".into(), None)),
    };
    let out = spec.run();
    let v = out.violation.as_ref()?;
    let name = reg
        .finding_in(&spec, v)
        .map_or_else(|| format!("{} (no finding)", v.invariant), |f| f.id.into());
    let file = (name == h.finding.id && h.save.is_some())
        .then(|| ReplayFile::new(&spec, &out))
        .flatten()
        .map(|f| ReplayFile {
            constructed: h.template.is_some(),
            ..f
        });
    Some((name, file))
}

/// Writes a matching seed's replay file into the `--save` folder: what the line says of it.
fn save(h: &Hunt, seed: u64, file: Option<ReplayFile>) -> String {
    let (Some(dir), Some(file)) = (&h.save, file) else {
        return String::new();
    };
    let path = dir.join(format!("{}-{seed}.json", h.finding.id));
    match file.write(&path) {
        Ok(()) => format!(" (saved {})", path.display()),
        Err(e) => format!(" (cannot write {}: {e})", path.display()),
    }
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
            "schedule": h.template.is_some(),
            "matching_seeds": t.matching, "other_failures": t.others,
        })
    );
    Ok(Exit::failed_if(!t.matching.is_empty()))
}
