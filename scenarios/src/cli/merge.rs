//! `merge`: the `--json` outputs of sharded explorations, as one.

use super::exit::Exit;
use crate::explore::BadInput;
use crate::system::Registry;
use serde_json::json;
use std::path::PathBuf;

/// Merges sharded explore outputs: totals, the lowest failing seed, the slowest shard's wall time,
/// and the coverage points no shard reached (a failure once the shards together ran the
/// scenario's CI budget).
pub(super) fn merge(reg: &Registry, files: &[PathBuf], json: bool) -> Result<Exit, BadInput> {
    if files.is_empty() {
        return Err(BadInput(
            "give the files holding each shard's `explore --json` output".into(),
        ));
    }
    let mut parts = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| BadInput(format!("cannot read {}: {e}", f.display())))?;
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(last).map_err(|_| {
            BadInput(format!(
                "{} does not end with an explore --json line",
                f.display()
            ))
        })?;
        if v.get("seeds_run").is_none() {
            return Err(BadInput(format!(
                "{} does not end with an explore --json line",
                f.display()
            )));
        }
        parts.push((f, v));
    }
    let set = ShardSet::check(&parts)?;
    let parts: Vec<serde_json::Value> = parts
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !set.dropped.contains(i))
        .map(|(_, (_, v))| v)
        .collect();
    let scenario = parts[0]["scenario"].clone();
    if parts.iter().any(|p| {
        p["scenario"] != scenario
            || p["bugs"] != parts[0]["bugs"]
            || p["fixes"] != parts[0]["fixes"]
    }) {
        return Err(BadInput(
            "the files come from explorations of different scenarios or switches".into(),
        ));
    }
    let sum = |k: &str| {
        parts
            .iter()
            .map(|p| p[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let first = parts
        .iter()
        .filter(|p| !p["first_failure"].is_null())
        .min_by_key(|p| p["first_failure"]["seed"].as_u64().unwrap_or(u64::MAX));
    let wall_ms = parts
        .iter()
        .map(|p| p["wall_ms"].as_u64().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let seeds_per_sec: f64 = parts
        .iter()
        .map(|p| p["seeds_per_sec"].as_f64().unwrap_or(0.0))
        .sum();
    let sim_speedup: f64 = parts
        .iter()
        .map(|p| p["sim_speedup"].as_f64().unwrap_or(0.0))
        .sum();
    let failures = sum("failures");
    let mut failing_seeds: Vec<u64> = parts
        .iter()
        .flat_map(|p| p["failing_seeds"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s.as_u64())
        .collect();
    failing_seeds.sort_unstable();
    let (coverage, unreached) = merged_coverage(reg, &parts, sum("seeds_run"))?;
    if !json {
        println!(
            "{}: {} shard(s), {} seeds, {} failure(s){}",
            scenario.as_str().unwrap_or_default(),
            parts.len(),
            sum("seeds_run"),
            failures,
            first
                .map(|p| format!(", the first at seed {}", p["first_failure"]["seed"]))
                .unwrap_or_default()
        );
        for p in &unreached {
            println!("FAILURE coverage-unreached: no seed reached coverage point {p}");
        }
    }
    println!(
        "{}",
        json!({
            "scenario": scenario, "bugs": parts[0]["bugs"], "fixes": parts[0]["fixes"],
            "seeds_run": sum("seeds_run"), "failures": failures, "failing_seeds": failing_seeds,
            "first_failure": first.map(|p| p["first_failure"].clone()),
            "wall_ms": wall_ms, "seeds_per_sec": seeds_per_sec, "sim_speedup": sim_speedup,
            "failure_file": first.map(|p| p["failure_file"].clone()),
            "shards": parts.len(),
            "missing_shards": set.missing, "duplicate_shards": set.duplicates,
            "coverage": coverage, "unreached_coverage": unreached,
        })
    );
    for line in set.problems() {
        eprintln!("faultline: {line}");
    }
    Ok(Exit::failed_if(
        failures > 0 || !unreached.is_empty() || !set.complete(),
    ))
}

/// Which shards the merged files are (each explore `--json` line records `"shard": "K/N"`): the
/// shards missing from `1..=N`, and the files that repeat a shard already given (merged once).
struct ShardSet {
    /// Shards of `1..=N` no file holds, as `K/N`.
    missing: Vec<String>,
    /// Shards given more than once, as `K/N` (once per extra file).
    duplicates: Vec<String>,
    /// Indices of the files left out of the sums: the repeats.
    dropped: Vec<usize>,
}

impl ShardSet {
    fn check(parts: &[(&PathBuf, serde_json::Value)]) -> Result<ShardSet, BadInput> {
        let mut set = ShardSet {
            missing: Vec::new(),
            duplicates: Vec::new(),
            dropped: Vec::new(),
        };
        let shards: Vec<Option<(u64, u64)>> = parts
            .iter()
            .map(|(f, v)| match v["shard"].as_str() {
                None => Ok(None),
                Some(s) => super::shard::parse_shard(s)
                    .map(Some)
                    .map_err(|e| BadInput(format!("{}: {e}", f.display()))),
            })
            .collect::<Result<_, _>>()?;
        if shards.iter().all(Option::is_none) {
            return Ok(set);
        }
        let Some(n) = shards.iter().flatten().map(|(_, n)| *n).next() else {
            return Ok(set);
        };
        if let Some(((f, _), _)) = parts
            .iter()
            .zip(&shards)
            .find(|(_, s)| s.is_none_or(|(_, m)| m != n))
        {
            return Err(BadInput(format!(
                "{} is not one of {n} shards: merge the outputs of one `explore --shard K/{n}` \
                 each",
                f.display()
            )));
        }
        let range = |v: &serde_json::Value| (v["from"].clone(), v["seeds"].clone());
        if let Some((f, _)) = parts.iter().find(|(_, v)| range(v) != range(&parts[0].1)) {
            return Err(BadInput(format!(
                "{} explored another seed range (--from, --seeds) than {}",
                f.display(),
                parts[0].0.display()
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, (k, _)) in shards.iter().flatten().enumerate() {
            if !seen.insert(*k) {
                set.duplicates.push(format!("{k}/{n}"));
                set.dropped.push(i);
            }
        }
        // Name at most a screenful of missing shards.
        set.missing = (1..=n)
            .filter(|k| !seen.contains(k))
            .take(100)
            .map(|k| format!("{k}/{n}"))
            .collect();
        Ok(set)
    }

    fn complete(&self) -> bool {
        self.missing.is_empty() && self.duplicates.is_empty()
    }

    /// One line for each problem, naming the shards.
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.missing.is_empty() {
            out.push(format!(
                "incomplete merge: shard(s) {} missing; their seeds were not run",
                self.missing.join(", ")
            ));
        }
        if !self.duplicates.is_empty() {
            out.push(format!(
                "shard(s) {} given more than once; each counted once",
                self.duplicates.join(", ")
            ));
        }
        out
    }
}

/// Each coverage point's seeds summed over the shards, and those none reached once the shards ran
/// at least the scenario's CI budget.
fn merged_coverage(
    reg: &Registry,
    parts: &[serde_json::Value],
    seeds_run: u64,
) -> Result<(serde_json::Map<String, serde_json::Value>, Vec<String>), BadInput> {
    let name = parts[0]["scenario"].as_str().unwrap_or_default();
    let sc = reg.scenario(name)?;
    let mut coverage = serde_json::Map::new();
    let mut unreached = Vec::new();
    for p in sc.coverage {
        let n: u64 = parts
            .iter()
            .map(|s| s["coverage"][*p].as_u64().unwrap_or(0))
            .sum();
        coverage.insert(p.to_string(), json!(n));
        if n == 0 && seeds_run >= sc.ci_seeds {
            unreached.push(p.to_string());
        }
    }
    Ok((coverage, unreached))
}
