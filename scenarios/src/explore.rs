//! Running seeds: one run, many runs in parallel (explore), replay files, determinism checks.

use crate::builtin;
use crate::faults::Profile;
use crate::scenario::{RunSpec, SwitchKind};
use crate::system::{Registry, Scenario};
use serde::Serialize;
use sim::runtime::{on_fresh_thread, pool};
use sim::{Kind, Outcome, Violation};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::replay_file::{write_atomic, ReplayFile, ScheduleFile, REPLAY_VERSION};

/// A user-facing error: one line, exit status 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses a seed: decimal or `0x` hex, within u64.
pub fn parse_seed(s: &str) -> Result<u64, BadInput> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    r.map_err(|e| {
        BadInput(format!(
            "malformed seed '{s}': {e} (give a decimal or 0x-hex number below 2^64)"
        ))
    })
}

/// Validates switch names against the registry and the scenario's system, and gives the fixes
/// with `all` expanded to every fix of the scenario's system.
pub fn check_switches(
    reg: &Registry,
    sc: &Scenario,
    bugs: &[String],
    fixes: &[String],
) -> Result<Vec<String>, BadInput> {
    let mut expanded = Vec::new();
    for f in fixes {
        if f == "all" {
            expanded.extend(
                reg.switches()
                    .filter(|s| s.kind == SwitchKind::Fix && s.system == sc.system)
                    .map(|s| s.name.to_string()),
            );
        } else {
            expanded.push(f.clone());
        }
    }
    let fixes = &expanded[..];
    for (names, flag) in [(bugs, "--bug"), (fixes, "--fix")] {
        for n in names {
            let sw = match flag {
                "--bug" => reg.bug_or_mutant(n),
                _ => reg.switch(n, SwitchKind::Fix),
            };
            let Some(sw) = sw else {
                return Err(BadInput(format!(
                    "unknown {flag} switch '{n}' (see `faultline bugs`)"
                )));
            };
            if sw.system != sc.system {
                return Err(BadInput(format!(
                    "{flag} {n} is a {} switch; scenario {} runs {}",
                    sw.system, sc.name, sc.system
                )));
            }
        }
    }
    Ok(expanded)
}

/// Looks a built-in scenario up, or says which exist.
pub fn find_scenario(name: &str) -> Result<&'static Scenario, BadInput> {
    builtin().scenario(name)
}

/// Runs a spec on a fresh thread. A panic in the harness becomes a `crash` violation.
pub fn run_spec(spec: RunSpec) -> Outcome {
    on_fresh_thread(move || spec.run()).unwrap_or_else(crash_outcome)
}

/// Parameters of an exploration.
#[derive(Clone, Debug)]
pub struct ExploreConfig {
    /// The scenario explored.
    pub scenario: &'static Scenario,
    /// The first seed.
    pub from: u64,
    /// How many consecutive seeds, from `from`.
    pub seeds: u64,
    /// Bug switches every seed runs with.
    pub bugs: Vec<String>,
    /// Fix switches every seed runs with.
    pub fixes: Vec<String>,
    /// Threads running seeds in parallel.
    pub jobs: usize,
    /// Run every seed even after a failure (otherwise the first failure stops the exploration).
    pub keep_going: bool,
    /// Where failure files go (created if missing); `None` writes none.
    pub out_dir: Option<PathBuf>,
    /// Explore only shard `k` of `n` (1-based): the seeds whose offset from `from` is `k-1` modulo
    /// `n`, so `n` machines cover the range with disjoint seeds.
    pub shard: Option<(u64, u64)>,
    /// The profile seeds draw their faults with.
    pub profile: crate::faults::Profile,
}

impl ExploreConfig {
    /// The defaults for `scenario`, as the command line's: seeds 0 to 999, no switches, one
    /// thread per core, stop at the first failure, no failure files, no sharding, the adversarial
    /// profile. The methods
    /// below change one setting each:
    ///
    /// ```no_run
    /// # let scenario = scenarios::builtin().scenario("calico-split-brain").unwrap();
    /// let cfg = scenarios::ExploreConfig::new(scenario).seeds(2_000).bug("calico-watchdog").jobs(2);
    /// ```
    pub fn new(scenario: &'static Scenario) -> ExploreConfig {
        ExploreConfig {
            scenario,
            from: 0,
            seeds: 1_000,
            bugs: Vec::new(),
            fixes: Vec::new(),
            jobs: crate::bench::cores(),
            keep_going: false,
            out_dir: None,
            shard: None,
            profile: crate::faults::Profile::Adversarial,
        }
    }

    /// Draws every seed's faults under `profile`.
    pub fn profile(mut self, profile: crate::faults::Profile) -> ExploreConfig {
        self.profile = profile;
        self
    }

    /// Starts at seed `from`.
    pub fn from(mut self, from: u64) -> ExploreConfig {
        self.from = from;
        self
    }

    /// Explores `seeds` seeds.
    pub fn seeds(mut self, seeds: u64) -> ExploreConfig {
        self.seeds = seeds;
        self
    }

    /// Adds a `--bug` switch (a bug or a mutant, by name).
    pub fn bug(mut self, name: &str) -> ExploreConfig {
        self.bugs.push(name.to_string());
        self
    }

    /// Adds a `--fix` switch (by name).
    pub fn fix(mut self, name: &str) -> ExploreConfig {
        self.fixes.push(name.to_string());
        self
    }

    /// Runs seeds on `jobs` threads (at least 1).
    pub fn jobs(mut self, jobs: usize) -> ExploreConfig {
        self.jobs = jobs.max(1);
        self
    }

    /// Runs every seed even after a failure.
    pub fn keep_going(mut self) -> ExploreConfig {
        self.keep_going = true;
        self
    }

    /// Writes failure files into `dir` (created if missing).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> ExploreConfig {
        self.out_dir = Some(dir.into());
        self
    }

    /// Explores only shard `k` of `n` (1-based).
    pub fn shard(mut self, k: u64, n: u64) -> ExploreConfig {
        self.shard = Some((k, n));
        self
    }
}

/// A failure found by an exploration.
#[derive(Clone, Debug)]
pub struct Found {
    /// The failing seed's spec (options and schedule as drawn).
    pub spec: RunSpec,
    /// Its outcome, with the violation (a panic is a `no-panic` crash violation).
    pub outcome: Outcome,
    /// Its replay file, if one was written.
    pub file: Option<PathBuf>,
}

/// What an exploration saw.
#[derive(Clone, Debug, Default)]
pub struct ExploreSummary {
    /// Seeds whose run finished or panicked: the first `seeds_run` seeds of the range (of the
    /// shard), fewer than asked when the exploration stopped early (see `stopped`).
    pub seeds_run: u64,
    /// Failures, by seed.
    pub failures: Vec<Found>,
    /// Simulated time summed over the seeds (ms).
    pub sim_time_ms: u64,
    /// Events summed over the seeds.
    pub events: u64,
    /// Coverage point -> seeds that reached it.
    pub coverage: Vec<(&'static str, u64)>,
    /// Errors writing failure files.
    pub write_errors: Vec<String>,
    /// Load summed over the seeds: timers, messages, nodes.
    pub timers: u64,
    /// Messages carried, summed over the seeds.
    pub messages: u64,
    /// Nodes, summed over the seeds.
    pub nodes: u64,
    /// Why the exploration ended before its last seed, if it did.
    pub stopped: Option<Stopped>,
}

/// Explores `seeds` seeds from `from`, in parallel. Each failure's replay file is written the moment
/// it is found, so an exploration killed half-way keeps every failure it saw. `progress` is called
/// after each seed with the number done.
pub fn explore(
    cfg: &ExploreConfig,
    progress: impl Fn(u64) + Send + Sync + 'static,
) -> Result<ExploreSummary, BadInput> {
    explore_until(cfg, &StopWhen::default(), move |p| progress(p.done))
}

/// When an exploration stops dispatching seeds early, besides at its first failure.
#[derive(Clone, Debug, Default)]
pub struct StopWhen {
    /// Dispatch no seed after this instant. The real clock is read only here, between seeds, to
    /// decide whether to start another: never inside a run, whose result stays the seed's alone.
    pub deadline: Option<std::time::Instant>,
    /// Set (by a SIGINT handler, say) to dispatch no further seed.
    pub interrupt: Arc<AtomicBool>,
}

/// Why an exploration ended before its last seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// A failure, without `keep_going`.
    Failure,
    /// [`StopWhen::deadline`] passed.
    Deadline,
    /// [`StopWhen::interrupt`] was set.
    Interrupt,
}

/// An exploration's progress, after each seed.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Seeds finished.
    pub done: u64,
    /// Failures found so far (also those past a first failure that ends the exploration).
    pub failures: u64,
    /// Seeds from the first (in dispatch order) that have all finished: where a run stopped at
    /// once resumes.
    pub prefix: u64,
}

impl ExploreConfig {
    /// How many seeds the exploration covers (its shard's share of `seeds`).
    pub fn len(&self) -> u64 {
        match self.shard {
            Some((k, n)) => self.seeds.saturating_sub(k - 1).div_ceil(n),
            None => self.seeds,
        }
    }

    /// Whether it covers no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its `i`-th seed (in dispatch order).
    pub fn seed_at(&self, i: u64) -> u64 {
        match self.shard {
            Some((k, n)) => self.from + (k - 1) + i * n,
            None => self.from + i,
        }
    }
}

/// [`explore`], stopping early as `stop` says. The summary covers a prefix of the seeds in
/// dispatch order, whatever the threads: up to and including the first failure without
/// `keep_going`, else every seed dispatched (all of which finish), so `seeds_run` seeds from the
/// first are the seeds that ran, and identical runs give identical summaries.
pub fn explore_until(
    cfg: &ExploreConfig,
    stop: &StopWhen,
    progress: impl Fn(Progress) + Send + Sync + 'static,
) -> Result<ExploreSummary, BadInput> {
    if cfg.from.checked_add(cfg.seeds.saturating_sub(1)).is_none() {
        return Err(BadInput(format!(
            "seed range {}..+{} overflows 64 bits",
            cfg.from, cfg.seeds
        )));
    }
    if let Some(dir) = &cfg.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            BadInput(format!(
                "cannot create output directory {}: {e}",
                dir.display()
            ))
        })?;
        let probe = dir.join(".faultline-write-test");
        std::fs::write(&probe, b"").map_err(|e| {
            BadInput(format!(
                "output directory {} is not writable: {e}",
                dir.display()
            ))
        })?;
        let _ = std::fs::remove_file(probe);
    }
    let fold = Arc::new(Mutex::new(Fold {
        summary: ExploreSummary {
            coverage: cfg.scenario.coverage.iter().map(|p| (*p, 0)).collect(),
            ..Default::default()
        },
        ..Default::default()
    }));
    let halt = Arc::new(AtomicBool::new(false));
    let (c1, c2, f2, halt2, stop) = (
        cfg.clone(),
        cfg.clone(),
        fold.clone(),
        halt.clone(),
        stop.clone(),
    );
    pool(
        usize::try_from(cfg.len()).unwrap_or(usize::MAX),
        cfg.jobs,
        halt,
        move |i| {
            let spec = RunSpec::from_seed_in(
                c1.scenario,
                c1.seed_at(i as u64),
                &c1.bugs,
                &c1.fixes,
                c1.profile,
            );
            let outcome = spec.run();
            (spec, outcome)
        },
        move |i, result| {
            // The spec comes back with its outcome (one draw per seed); only a panic, which loses
            // it, draws it again.
            let (spec, outcome) = match result {
                Ok(r) => r,
                Err(msg) => (
                    RunSpec::from_seed_in(
                        c2.scenario,
                        c2.seed_at(i as u64),
                        &c2.bugs,
                        &c2.fixes,
                        c2.profile,
                    ),
                    crash_outcome(msg),
                ),
            };
            let mut f = f2.lock().unwrap_or_else(|e| e.into_inner());
            let failed = outcome.violation.is_some();
            let file = failed.then(|| write_failure(&c2, &spec, &outcome, &mut f.summary));
            f.add(
                &c2,
                i,
                Found {
                    spec,
                    outcome,
                    file: file.flatten(),
                },
            );
            let reason = if failed && !c2.keep_going {
                Some(Stopped::Failure)
            } else if stop.interrupt.load(Ordering::SeqCst) {
                Some(Stopped::Interrupt)
            } else if stop
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
            {
                Some(Stopped::Deadline)
            } else {
                None
            };
            if let Some(r) = reason {
                f.summary.stopped.get_or_insert(r);
                halt2.store(true, Ordering::SeqCst);
            }
            let p = Progress {
                done: f.done,
                failures: f.failures,
                prefix: f.next as u64,
            };
            drop(f);
            progress(p);
        },
    );
    let f = Arc::try_unwrap(fold)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_else(|a| a.lock().unwrap().clone());
    let mut s = f.summary;
    if s.seeds_run == cfg.len() && s.stopped != Some(Stopped::Failure) {
        s.stopped = None;
    }
    Ok(s)
}

/// Writes a failure's replay file into the output folder (if any), at once.
fn write_failure(
    cfg: &ExploreConfig,
    spec: &RunSpec,
    outcome: &Outcome,
    s: &mut ExploreSummary,
) -> Option<PathBuf> {
    let path = cfg
        .out_dir
        .as_ref()?
        .join(failure_file_name(spec.scenario.name, spec.seed));
    match ReplayFile::new(spec, outcome)?.write(&path) {
        Ok(()) => Some(path),
        Err(e) => {
            s.write_errors
                .push(format!("cannot write {}: {e}", path.display()));
            None
        }
    }
}

/// A failure file's name: `<scenario>-<seed>.json`.
pub fn failure_file_name(scenario: &str, seed: u64) -> String {
    format!("{scenario}-{seed}.json")
}

/// The name of the shrunk version of a failure file: `<stem>.shrunk.json` (what `explore` and
/// `shrink` both write).
pub fn shrunk_file_name(failure: &Path) -> PathBuf {
    let stem = failure
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("failure");
    failure.with_file_name(format!("{stem}.shrunk.json"))
}

/// The seeds finished so far, folded into the summary in dispatch order.
#[derive(Clone, Default)]
struct Fold {
    summary: ExploreSummary,
    /// Finished seeds not yet folded (an earlier one is still running), by dispatch index.
    pending: BTreeMap<usize, Found>,
    /// The next dispatch index to fold.
    next: usize,
    /// A failure was folded without `keep_going`: nothing after it counts.
    closed: bool,
    /// Seeds finished, and failures among them.
    done: u64,
    failures: u64,
}

impl Fold {
    fn add(&mut self, cfg: &ExploreConfig, i: usize, found: Found) {
        self.done += 1;
        self.failures += found.outcome.violation.is_some() as u64;
        self.pending.insert(i, found);
        while !self.closed {
            let Some(found) = self.pending.remove(&self.next) else {
                break;
            };
            self.next += 1;
            self.closed = found.outcome.violation.is_some() && !cfg.keep_going;
            fold_seed(&mut self.summary, found);
        }
    }
}

/// Adds one seed's run to the summary.
fn fold_seed(s: &mut ExploreSummary, found: Found) {
    let o = &found.outcome;
    s.seeds_run += 1;
    s.timers += o.timers;
    s.messages += o.messages;
    s.nodes += o.nodes as u64;
    s.sim_time_ms += o.sim_time_ms;
    s.events += o.events;
    for (p, hit) in &o.coverage {
        if *hit {
            if let Some(e) = s.coverage.iter_mut().find(|(q, _)| q == p) {
                e.1 += 1;
            }
        }
    }
    if o.violation.is_some() {
        s.failures.push(found);
    }
}

fn crash_outcome(msg: String) -> Outcome {
    Outcome {
        violation: Some(Violation {
            invariant: "no-panic".into(),
            kind: Kind::Crash,
            event_index: 0,
            sim_time_ms: 0,
            node: None,
            explanation: format!("the harness panicked: {msg}"),
            measured: None,
        }),
        events: 0,
        sim_time_ms: 0,
        trace_hash: "0000000000000000".into(),
        trace: None,
        records: None,
        coverage: Vec::new(),
        timers: 0,
        messages: 0,
        nodes: 0,
    }
}

/// Coverage as an oracle: the scenario's "sometimes" points that no seed reached, once
/// the exploration ran at least the scenario's CI budget (fewer seeds prove nothing). Each is a
/// failure of its own kind (`coverage-unreached`): a change that silently stops, say, every IP
/// release is caught by exploration, not only by `cargo test`.
pub fn unreached_coverage(sc: &Scenario, summary: &ExploreSummary) -> Vec<&'static str> {
    if summary.seeds_run < sc.ci_seeds {
        return Vec::new();
    }
    coverage_gate(summary)
}

/// The coverage gate: the scenario's "sometimes" points that no seed of an exploration reached.
pub fn coverage_gate(summary: &ExploreSummary) -> Vec<&'static str> {
    summary
        .coverage
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(p, _)| *p)
        .collect()
}

/// Trace hashes of seeds `from..from+seeds` computed with `jobs` threads, in seed order.
pub fn hashes(
    sc: &'static Scenario,
    from: u64,
    seeds: u64,
    bugs: &[String],
    fixes: &[String],
    jobs: usize,
) -> Vec<String> {
    hashes_in(sc, from, seeds, bugs, fixes, jobs, Profile::default())
}

/// [`hashes`] with the seeds drawing their faults under `profile`.
pub fn hashes_in(
    sc: &'static Scenario,
    from: u64,
    seeds: u64,
    bugs: &[String],
    fixes: &[String],
    jobs: usize,
    profile: Profile,
) -> Vec<String> {
    let out = Arc::new(Mutex::new(vec![String::new(); seeds as usize]));
    let (o2, bugs, fixes) = (out.clone(), bugs.to_vec(), fixes.to_vec());
    pool(
        seeds as usize,
        jobs,
        Arc::new(AtomicBool::new(false)),
        move |i| {
            RunSpec::from_seed_in(sc, from + i as u64, &bugs, &fixes, profile)
                .run()
                .trace_hash
        },
        move |i, r| o2.lock().unwrap()[i] = r.unwrap_or_else(|m| format!("panic: {m}")),
    );
    Arc::try_unwrap(out).unwrap().into_inner().unwrap()
}
