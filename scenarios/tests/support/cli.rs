//! Running the `faultline` binary from the CLI test files: its output, its last JSON line, and
//! the shape of bad input (one line on stderr, exit 2, never a panic).
#![allow(dead_code)] // each test file uses some of these

use std::process::{Command, Output};

pub fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

/// `faultline` with these environment variables set (and the CI engines' own cleared).
pub fn faultline_env(args: &[&str], vars: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_faultline"));
    for v in [
        "JOB_COMPLETION_INDEX",
        "FAULTLINE_SHARDS",
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
    ] {
        c.env_remove(v);
    }
    c.args(args)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("faultline runs")
}

pub fn last_json(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().expect("some output")).expect("last line is JSON")
}

/// The last JSON line of a command that must have exited with `code` (else its stderr is shown).
pub fn json_with_status(o: &Output, code: i32) -> serde_json::Value {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    last_json(o)
}

pub fn assert_bad_input(args: &[&str], needle: &str) {
    let o = faultline(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: expected one line, got {err:?}"
    );
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?}: {err}"
    );
}

pub fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("faultline-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Starts `faultline args`, sends it SIGINT after `after`, and waits for it.
pub fn interrupted(args: &[&str], after: std::time::Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("faultline starts");
    std::thread::sleep(after);
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    child.wait_with_output().expect("faultline ends")
}

/// `explore SCENARIO --seeds SEEDS --shard K/OF` with `extra` arguments, writing its failures to
/// `dir`: its output, and the file its stdout is saved in (`dir/shard-K.json`, as a CI job
/// uploads it for `merge`).
pub fn explore_shard(
    dir: &std::path::Path,
    scenario: &str,
    seeds: u64,
    (k, of): (u64, u64),
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let (seeds, shard) = (seeds.to_string(), format!("{k}/{of}"));
    let mut args = vec!["explore", scenario, "--seeds", &seeds, "--shard", &shard];
    args.extend_from_slice(extra);
    args.extend(["--out", dir.to_str().unwrap(), "--json"]);
    let o = faultline(&args);
    let f = dir.join(format!("shard-{k}.json"));
    std::fs::write(&f, &o.stdout).unwrap();
    (o, f)
}

/// `faultline merge FILES`.
pub fn merge<P: AsRef<std::path::Path>>(files: &[P]) -> Output {
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.as_ref().display().to_string()));
    faultline(&args.iter().map(String::as_str).collect::<Vec<_>>())
}
