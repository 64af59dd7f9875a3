//! The benchmark behind `faultline bench` and `cargo bench`: for one scenario, seeds per second
//! on one core, the simulated-time speedup, events per second, peak memory, the `--jobs N` speedup,
//! and the ratio to a raw madsim program with the same nodes, timers and messages (no world,
//! monitor, trace or model logic), measured in the same process: `baseline_ratio` against the
//! program handing its messages over in memory, `baseline_net_ratio` against the same program
//! sending them over madsim's own network.

use crate::explore::{explore, ExploreConfig};
use crate::Scenario;
use serde_json::json;
use sim::units::median;
use std::time::Instant;

/// One scenario's figures.
#[derive(Clone, Debug)]
pub struct BenchRow {
    /// The scenario's name.
    pub scenario: &'static str,
    /// Seeds per second on one thread (fastest round).
    pub seeds_per_sec: f64,
    /// Simulated seconds per wall-clock second on one thread.
    pub sim_speedup: f64,
    /// Events recorded per wall-clock second on one thread.
    pub events_per_sec: f64,
    /// Peak resident memory of the process after the measurement (MB).
    pub peak_rss_mb: f64,
    /// Median over the rounds of the scenario's time over the raw-madsim program's, with its
    /// messages handed over in memory.
    pub baseline_ratio: f64,
    /// The ratio to the same raw-madsim program with its messages over madsim's network.
    pub baseline_net_ratio: f64,
    /// Wall-clock milliseconds per seed on one thread.
    pub ms_per_seed: f64,
    /// Timers armed per seed, on average (the baseline's load).
    pub timers_per_seed: u64,
    /// Messages carried per seed, on average (the baseline's load).
    pub messages_per_seed: u64,
    /// Threads of the parallel measurement (`--jobs`).
    pub jobs: usize,
    /// One-thread time over `jobs`-thread time for the same seeds.
    pub jobs_speedup: f64,
}

/// The machine's cores.
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Peak resident memory of this process so far (MB).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Measures `seeds` seeds of `sc` (from seed 1,000,000) on one thread and on `jobs` threads, and
/// the raw-madsim baseline with the same average load on one thread.
///
/// After one warm-up run of the scenario (which also counts its timers and messages for the
/// baseline), the measurements are taken in `repeat` rounds, each timing the scenario on one
/// thread, then the two baselines, then the scenario on `jobs` threads. Times are the fastest of
/// the rounds (on a shared or busy machine the minimum is the best estimate of the work itself).
/// The baseline ratios are the median over the rounds of each round's own ratio: the two runs of a
/// round are back to back, so a slow spell of the machine (a noisy neighbour, a frequency change)
/// that lasts longer than a round weighs on both sides of the ratio alike instead of on one.
pub fn bench_scenario(sc: &'static Scenario, seeds: u64, jobs: usize, repeat: u32) -> BenchRow {
    bench_scenario_in(sc, seeds, jobs, repeat, Default::default())
}

/// [`bench_scenario`] with the measured seeds drawing their faults under `profile`.
pub fn bench_scenario_in(
    sc: &'static Scenario,
    seeds: u64,
    jobs: usize,
    repeat: u32,
    profile: crate::faults::Profile,
) -> BenchRow {
    let measure = |jobs: usize| {
        let cfg = ExploreConfig {
            scenario: sc,
            from: 1_000_000,
            seeds,
            bugs: vec![],
            fixes: vec![],
            jobs,
            keep_going: true,
            out_dir: None,
            shard: None,
            profile,
        };
        let t0 = Instant::now();
        let s = explore(&cfg, |_| {}).expect("bench config is valid");
        (t0.elapsed().as_secs_f64(), s)
    };
    let (_, s1) = measure(1);
    let n = s1.seeds_run.max(1);
    let (nodes, sim_ms, timers, messages) = (
        (s1.nodes / n) as usize,
        s1.sim_time_ms / n,
        s1.timers / n,
        s1.messages / n,
    );
    let baseline = |program: fn(u64, usize, u64, u64, u64) -> u64| {
        let t0 = Instant::now();
        sim::runtime::pool(
            seeds as usize,
            1,
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            move |i| program(i as u64, nodes, sim_ms, timers, messages),
            |_, _| {},
        );
        t0.elapsed().as_secs_f64()
    };
    let (mut w1, mut wn) = (f64::INFINITY, f64::INFINITY);
    let (mut ratios, mut net_ratios) = (Vec::new(), Vec::new());
    for _ in 0..repeat.max(1) {
        let h = measure(1).0;
        let (b, bn) = (
            baseline(sim::runtime::baseline),
            baseline(sim::runtime::baseline_net),
        );
        w1 = w1.min(h);
        ratios.push(h / b);
        net_ratios.push(h / bn);
        wn = wn.min(measure(jobs).0);
    }
    BenchRow {
        scenario: sc.name,
        seeds_per_sec: seeds as f64 / w1,
        sim_speedup: s1.sim_time_ms as f64 / 1000.0 / w1,
        events_per_sec: s1.events as f64 / w1,
        peak_rss_mb: peak_rss_mb(),
        baseline_ratio: median(&ratios).unwrap_or(f64::NAN),
        baseline_net_ratio: median(&net_ratios).unwrap_or(f64::NAN),
        ms_per_seed: w1 * 1000.0 / seeds as f64,
        timers_per_seed: timers,
        messages_per_seed: messages,
        jobs,
        jobs_speedup: w1 / wn,
    }
}

impl BenchRow {
    /// The row of `--json` output.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "scenario": self.scenario,
            "seeds_per_sec": self.seeds_per_sec,
            "sim_speedup": self.sim_speedup,
            "events_per_sec": self.events_per_sec,
            "peak_rss_mb": self.peak_rss_mb,
            "baseline_ratio": self.baseline_ratio,
            "baseline_net_ratio": self.baseline_net_ratio,
            "ms_per_seed": self.ms_per_seed,
            "timers_per_seed": self.timers_per_seed,
            "messages_per_seed": self.messages_per_seed,
            "jobs": self.jobs,
            "jobs_speedup": self.jobs_speedup,
        })
    }

    /// One human-readable line.
    pub fn line(&self) -> String {
        format!(
            "{:<28} {:>6.0} seeds/s/core {:>8.0}x real time {:>8.0} events/s {:>6.2} ms/seed  baseline x{:.2} (over madsim's network x{:.2}; {} timers, {} messages)  --jobs {}: {:.2}x",
            self.scenario,
            self.seeds_per_sec,
            self.sim_speedup,
            self.events_per_sec,
            self.ms_per_seed,
            self.baseline_ratio,
            self.baseline_net_ratio,
            self.timers_per_seed,
            self.messages_per_seed,
            self.jobs,
            self.jobs_speedup
        )
    }
}
