//! The command line's arguments: one struct per command, and the groups they share.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "faultline",
    version,
    about = "Deterministic simulation testing of cluster-coordination logic",
    after_help = super::exit::help()
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The commands.
#[derive(Subcommand)]
pub(super) enum Cmd {
    /// List the scenarios, one a line.
    List(ListArgs),
    /// List the bug and fix switches, with the scenario that finds each.
    Bugs(BugsArgs),
    /// List the invariants each system's monitor checks: name, kind, bound, meaning.
    Invariants(InvariantsArgs),
    /// List the fault catalog: causes, realistic sizes, sources, hypothetical or not.
    Faults(FaultsArgs),
    /// List the findings (violations of upstream logic), active and retired, with the upstream code
    /// that produces each.
    Findings(FindingsArgs),
    /// Run one seed of a scenario, or a schedule file as written (--schedule).
    Run(RunArgs),
    /// Run many seeds in parallel; stop at the first failure unless --keep-going.
    Explore(ExploreArgs),
    /// Run an active finding's scenario (with its switches) over a seed range and print the seeds
    /// whose violation is that finding, as they are found.
    Hunt(super::hunt::HuntArgs),
    /// Merge the `--json` outputs of sharded explorations (files holding each one's output).
    Merge(MergeArgs),
    /// Print the trace hash of a trace file written by `run --trace` or `replay --trace`.
    HashTrace(HashTraceArgs),
    /// Shrink a failure file to a smaller schedule that still violates the same invariant.
    Shrink(ShrinkArgs),
    /// Re-run a failure file; it must reproduce the same violation at the same event with the same trace hash.
    Replay(ReplayArgs),
    /// Run seeds twice (one thread, then all cores) and compare trace hashes.
    CheckDeterminism(CheckDeterminismArgs),
    /// Write a report (index.html, summary.md, report.json) of one seed, many seeds, or a replay file.
    Report(ReportArgs),
    /// For every bug switch: seeds and wall time to the first failure (one core) over several
    /// starting seeds, and the size of the shrunk schedule; medians in a table.
    Measure(MeasureArgs),
    /// Measure each scenario's speed, memory and cost against raw madsim.
    ///
    /// Seeds per second per core, simulated-time speedup, events per second, peak memory, `--jobs`
    /// scaling, and the time ratio to two raw-madsim programs with the run's nodes, timers and
    /// messages: `baseline_ratio` (messages handed over in memory) and `baseline_net_ratio`
    /// (messages sent over madsim's network).
    Bench(BenchArgs),
}

/// List the invariants each system's monitor checks: name, kind, bound, meaning.
#[derive(Args, Debug)]
pub struct InvariantsArgs {
    #[arg(long)]
    pub json: bool,
    /// Print docs/scenarios.md's invariants section (generated from the registry).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

/// `--bug` and `--fix`, shared by every command that runs seeds.
#[derive(Args, Debug, Default)]
pub struct SwitchArgs {
    /// Restore a historic bug (repeatable).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
    /// Apply a fix (repeatable); `all`: every fix of the scenario's system.
    #[arg(long = "fix")]
    pub fixes: Vec<String>,
}

/// `--profile`, shared by every command that draws runs from seeds.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// How seeds draw their faults: `adversarial` (wide draws, the default) or `realistic`
    /// (only faults with a known cause, at realistic sizes; see `faultline faults`).
    #[arg(long, default_value = "adversarial")]
    pub profile: String,
}

/// List the fault catalog: every fault kind and each system's fault choices, with causes,
/// realistic sizes, sources and whether it is hypothetical.
#[derive(Args, Debug)]
pub struct FaultsArgs {
    #[arg(long)]
    pub json: bool,
    /// Print docs/faults.md's catalog section (generated from the catalog).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

/// List the scenarios, one a line.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    pub json: bool,
}

/// List the bug and fix switches, with the scenario that finds each.
#[derive(Args, Debug)]
pub struct BugsArgs {
    #[arg(long)]
    pub json: bool,
    /// The docs' Markdown table instead.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

/// List the findings (violations of upstream logic), active and retired, with the upstream code
/// that produces each.
#[derive(Args, Debug)]
pub struct FindingsArgs {
    #[arg(long)]
    pub json: bool,
    /// Print docs/findings.md's findings section (generated from the catalog).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    #[command(flatten)]
    pub more: super::findings::MoreFindingsArgs,
}

/// Run one seed of a scenario, or a schedule file as written.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario (with --schedule: optional, and must be the file's).
    #[arg(required_unless_present = "schedule")]
    pub scenario: Option<String>,
    /// Seed (decimal or 0x-hex).
    #[arg(
        long,
        required_unless_present = "schedule",
        conflicts_with = "schedule"
    )]
    pub seed: Option<String>,
    /// Run this schedule file as written: a replay file (perhaps hand-edited) or a hand-written
    /// one with `scenario`, `seed` and `schedule`. No determinism verdict: exit 0 or 1.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    #[command(flatten)]
    pub switches: SwitchArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Write the JSON-lines trace to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// Run many seeds in parallel; stop at the first failure unless --keep-going.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    pub scenario: String,
    /// How many seeds [default: 1000; with --duration: as many as the time allows].
    #[arg(long)]
    pub seeds: Option<String>,
    /// First seed.
    #[arg(long, default_value = "0")]
    pub from: String,
    /// Stop starting seeds after this long (e.g. 90s, 10m, 2h); the seeds under way finish. The
    /// clock decides only which seeds run, never a seed's result; the JSON's `seeds_ran` says
    /// which ran, and the summary gives the command that resumes.
    #[arg(long)]
    pub duration: Option<String>,
    #[command(flatten)]
    pub switches: SwitchArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Worker threads (default: the number of cores).
    #[arg(long, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    #[arg(long)]
    pub keep_going: bool,
    /// Where failure (replay) files are written.
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// Do not shrink the first failure.
    #[arg(long)]
    pub no_shrink: bool,
    /// Explore only shard K of N (e.g. 2/8): N machines cover the seeds with disjoint shards;
    /// merge their `--json` outputs with `faultline merge`. `auto`: from a Kubernetes Indexed
    /// Job's JOB_COMPLETION_INDEX (with --shards N or FAULTLINE_SHARDS) or GitLab's
    /// CI_NODE_INDEX and CI_NODE_TOTAL.
    #[arg(long)]
    pub shard: Option<String>,
    /// The number of shards, for `--shard auto` in a Kubernetes Indexed Job.
    #[arg(long)]
    pub shards: Option<String>,
    /// Also write the results as JUnit XML to this file (for CI systems' test views).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// Merge the `--json` outputs of sharded explorations (files holding each one's output).
#[derive(Args, Debug)]
pub struct MergeArgs {
    pub files: Vec<PathBuf>,
    /// Print only the JSON object (without: a summary line first).
    #[arg(long)]
    pub json: bool,
}

/// Print the trace hash of a trace file written by `run --trace` or `replay --trace`.
#[derive(Args, Debug)]
pub struct HashTraceArgs {
    pub file: PathBuf,
    /// Print `{"file", "trace_hash"}` instead of the bare hash.
    #[arg(long)]
    pub json: bool,
}

/// Shrink a failure file to a smaller schedule that still violates the same invariant.
#[derive(Args, Debug)]
pub struct ShrinkArgs {
    pub file: PathBuf,
    /// Where to write the shrunk replay file (default: FILE with `.shrunk.json`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: the number of cores); the result does not depend on it.
    #[arg(long, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    #[arg(long)]
    pub json: bool,
}

/// Re-run a failure file; it must reproduce the same violation at the same event with the same trace hash.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    pub file: PathBuf,
    /// Re-run the failure with this fix on too (repeatable; `all`: every fix of its system) and
    /// say whether the violation is gone: exit 0 if the run passes, 1 if not (no determinism
    /// verdict: the fix changes the run).
    #[arg(long = "fix")]
    pub fixes: Vec<String>,
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Also write the results as JUnit XML to this file (for CI systems' test views).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// Run seeds twice (one thread, then all cores) and compare trace hashes.
#[derive(Args, Debug)]
pub struct CheckDeterminismArgs {
    pub scenario: String,
    #[arg(long, default_value = "20")]
    pub seeds: String,
    #[arg(long, default_value = "0")]
    pub from: String,
    #[command(flatten)]
    pub switches: SwitchArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Also write the results as JUnit XML to this file (for CI systems' test views).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Print only the JSON object (without: a summary line first).
    #[arg(long)]
    pub json: bool,
}

/// Write a report (index.html, summary.md, report.json) of one seed, many seeds, or a replay file.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The scenario (with --replay: optional, and must be the file's).
    pub scenario: Option<String>,
    /// Report this seed.
    #[arg(long)]
    pub seed: Option<String>,
    /// Report the distribution over this many seeds (from --from).
    #[arg(long)]
    pub seeds: Option<String>,
    #[arg(long, default_value = "0")]
    pub from: String,
    #[command(flatten)]
    pub switches: SwitchArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Report the run of a replay file.
    #[arg(long)]
    pub replay: Option<PathBuf>,
    /// Output directory (default: target/faultline-reports/<scenario>/seed-<N>/, or
    /// .../seeds-<from>-<count>/ for --seeds).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// For every bug switch: seeds and wall time to the first failure (one core) over several
/// starting seeds, and the size of the shrunk schedule; medians in a table.
#[derive(Args, Debug)]
pub struct MeasureArgs {
    /// How many starting seeds per bug.
    #[arg(long, default_value = "10")]
    pub starts: String,
    /// Seed budget per start.
    #[arg(long, default_value = "1000")]
    pub seeds: String,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[arg(long)]
    pub json: bool,
}

/// Measure each scenario's speed, memory and cost against raw madsim.
///
/// Seeds per second per core, simulated-time speedup, events per second, peak memory, `--jobs`
/// scaling, and the time ratio to two raw-madsim programs with the run's nodes, timers and
/// messages: `baseline_ratio` (messages handed over in memory) and `baseline_net_ratio`
/// (messages sent over madsim's network).
#[derive(Args, Debug)]
pub struct BenchArgs {
    pub scenarios: Vec<String>,
    /// Seeds per measurement.
    #[arg(long, default_value = "200")]
    pub seeds: String,
    /// Take each measurement this many times (interleaved) and keep the fastest.
    #[arg(long, default_value = "1")]
    pub repeat: String,
    /// Instead: how cost grows with nodes (3, 5, 9) and time (10, 60 simulated minutes) on the
    /// first scenario of each system; writes scale.json and scale.svg to --out.
    #[arg(long, alias = "growth")]
    pub scale: bool,
    /// Where `--scale` writes its JSON and plot (default target/faultline-bench).
    #[arg(long, requires = "scale")]
    pub out: Option<PathBuf>,
    /// The fault profile the measured seeds draw with (not with `--scale`, whose runs draw no
    /// faults of their own choice).
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[arg(long)]
    pub json: bool,
}

/// Where `explore` writes failure files unless `--out` says otherwise.
pub(super) const DEFAULT_OUT: &str = "target/faultline-failures";

/// `--jobs`: a whole number of at least 1.
pub(super) fn at_least_one(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{v}' is not a number of worker threads (1 or more)"
        )),
    }
}
