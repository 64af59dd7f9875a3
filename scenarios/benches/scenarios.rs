//! `cargo bench`: the same measurement as `faultline bench` (seeds per second per core, simulated-
//! time speedup, events per second, peak memory, `--jobs` scaling and the raw-madsim baseline
//! ratio) for every scenario, or for the scenarios named in `FAULTLINE_BENCH` (comma-separated);
//! `FAULTLINE_BENCH_SEEDS` sets the seeds per measurement (default 200), `FAULTLINE_BENCH_REPEAT`
//! how often each is taken, keeping the fastest (default 1).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let seeds: u64 = std::env::var("FAULTLINE_BENCH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let repeat: u32 = std::env::var("FAULTLINE_BENCH_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let names: Vec<String> = std::env::var("FAULTLINE_BENCH")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let jobs = scenarios::bench::cores();
    for sc in scenarios::builtin()
        .scenarios()
        .iter()
        .filter(|s| names.is_empty() || names.iter().any(|n| n == s.name))
    {
        println!(
            "{}",
            scenarios::bench::bench_scenario(sc, seeds, jobs, repeat).line()
        );
    }
}
