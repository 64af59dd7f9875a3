//! The `faultline` command line: list scenarios and switches, run a seed, explore many seeds,
//! replay and shrink a failure, check determinism, report, and benchmark. Exit status: 0 no
//! violation, 1 violation found, 2 bad usage or bad input (one line on stderr), 3 nondeterminism
//! detected. With `--json` standard output is one JSON object on one line and nothing else;
//! without it, the text for people, and the commands that run or merge seeds (run, replay,
//! explore, shrink, check-determinism, merge, report) still end with that JSON line.
//!
//! One module per command (group); [`main`] serves any [`Registry`], so a user's own system gets
//! the same command line from a three-line `main` (see `examples/fenced_lock`).

mod args;
mod bench;
pub mod exit;
mod explore;
pub mod fields;
mod findings;
mod hunt;
mod junit;
mod list;
mod merge;
mod output;
pub use exit::Exit;
mod report;
mod run;
mod scale;
mod shard;
mod steer;

use crate::explore::{parse_seed, BadInput};
use crate::system::Registry;
use args::{Cli, Cmd};
use clap::Parser;
use std::process::ExitCode;

/// Runs the command line over the systems of `reg` (the `faultline` binary passes
/// [`crate::builtin`]; a user's own binary passes a registry with its own systems).
pub fn main(reg: &'static Registry) -> ExitCode {
    // Like any Unix filter: when the reader goes away (`faultline ... | head`), stop quietly.
    // Rust ignores SIGPIPE, so a print to a closed pipe panics with "Broken pipe": that panic
    // ends the process with success and no message (no signal handler needed).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    if std::env::var_os("RUST_LOG").is_some() {
        // A second call (a user's binary that set up its own subscriber) is harmless.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            eprintln!(
                "faultline: {} (see --help)",
                one_line(&e.render().to_string())
            );
            return ExitCode::from(Exit::BadInput.code());
        }
    };
    match dispatch(reg, cli.cmd) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(BadInput(msg)) => {
            eprintln!("faultline: {msg}");
            ExitCode::from(Exit::BadInput.code())
        }
    }
}

/// clap's error as one line: its message with the indented lines under it (a missing argument's
/// names, like `--seed <SEED>`, come on the lines after "the following required arguments were
/// not provided:"), up to the usage and tips.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
        .collect();
    match words.join(" ") {
        s if s.is_empty() => "bad usage".into(),
        s => s.trim_start_matches("error: ").to_string(),
    }
}

pub(super) fn count(s: &str, what: &str) -> Result<u64, BadInput> {
    let n = parse_seed(s)
        .map_err(|_| BadInput(format!("malformed {what} '{s}': give a whole number")))?;
    if n == 0 {
        return Err(BadInput(format!("{what} must be at least 1")));
    }
    Ok(n)
}

fn dispatch(reg: &'static Registry, cmd: Cmd) -> Result<Exit, BadInput> {
    match cmd {
        Cmd::List(a) => list::list(reg, a),
        Cmd::Bugs(a) => list::bugs(reg, a),
        Cmd::Invariants(a) => list::invariants(reg, a),
        Cmd::Findings(a) => list::findings(reg, a),
        Cmd::Faults(a) => list::faults(reg, a),
        Cmd::Run(a) => run::run(reg, a),
        Cmd::Replay(a) => run::replay(reg, a),
        Cmd::HashTrace(a) => run::hash_trace(reg, a),
        Cmd::CheckDeterminism(a) => run::check_determinism(reg, a),
        Cmd::Explore(a) => explore::run_explore(reg, a),
        Cmd::Hunt(a) => hunt::hunt(reg, a),
        Cmd::Shrink(a) => explore::shrink(reg, a),
        Cmd::Report(a) => report::report(reg, a),
        Cmd::Measure(a) => bench::measure(
            reg,
            count(&a.starts, "start count")?,
            count(&a.seeds, "seed count")?,
            crate::faults::Profile::parse(&a.profile.profile)?,
            a.json,
        ),
        Cmd::Merge(a) => merge::merge(reg, &a.files, a.json),
        Cmd::Bench(a) if a.scale => {
            let profile = crate::faults::Profile::parse(&a.profile.profile)?;
            if !profile.is_default() {
                return Err(BadInput(
                    "--profile does not apply to bench --scale (its runs draw no faults)".into(),
                ));
            }
            scale::scale(
                reg,
                count(&a.seeds, "seed count")?,
                &a.out.unwrap_or_else(|| "target/faultline-bench".into()),
                a.json,
            )
        }
        Cmd::Bench(a) => bench::bench(
            reg,
            &a.scenarios,
            count(&a.seeds, "seed count")?,
            count(&a.repeat, "repeat count")? as u32,
            crate::faults::Profile::parse(&a.profile.profile)?,
            a.json,
        ),
    }
}
