//! The exit statuses of every command, in one place: `faultline --help` lists them from here, and
//! docs/ci.md's table is this module's output (tested).

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing failed.
    Clean,
    /// A failure: an invariant violated (for `replay`: reproduced; for `shrink`: the shrunk
    /// violation), a coverage point no seed of a full budget reached (`explore`, `merge`), or a
    /// shard missing from (or repeated in) the files `merge` was given.
    Failed,
    /// Bad usage or bad input: one line on standard error, nothing run.
    BadInput,
    /// Nondeterminism: a replay that does not reproduce its file, a file `shrink` cannot
    /// reproduce, or trace hashes that differ between thread counts.
    Nondeterminism,
    /// Interrupted (SIGINT) before the last seed, with no failure among the seeds that ran.
    Interrupted,
}

impl Exit {
    /// Every status, in code order.
    pub const ALL: [Exit; 5] = [
        Exit::Clean,
        Exit::Failed,
        Exit::BadInput,
        Exit::Nondeterminism,
        Exit::Interrupted,
    ];

    /// Its numeric code.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::Failed => 1,
            Exit::BadInput => 2,
            Exit::Nondeterminism => 3,
            Exit::Interrupted => 130,
        }
    }

    /// What it means, in one line.
    pub const fn meaning(self) -> &'static str {
        match self {
            Exit::Clean => "no failure",
            Exit::Failed => "a failure: an invariant violated (replay: reproduced; shrink: the shrunk violation), a coverage point that no seed of a full budget reached (explore, merge), or a shard missing or repeated (merge)",
            Exit::BadInput => "bad usage or bad input: one line on standard error, nothing run",
            Exit::Nondeterminism => "nondeterminism: a replay that does not reproduce its file, a file shrink cannot reproduce, or trace hashes that differ between thread counts",
            Exit::Interrupted => "interrupted (Ctrl-C, explore) with no failure among the seeds that ran: the summary gives the command that resumes",
        }
    }

    /// `Failed` if `failed`, else `Clean`.
    pub const fn failed_if(failed: bool) -> Exit {
        if failed {
            Exit::Failed
        } else {
            Exit::Clean
        }
    }
}

/// The statuses as a Markdown table (docs/ci.md holds this text).
pub fn markdown() -> String {
    let mut out = String::from("| status | meaning |\n|---|---|\n");
    for e in Exit::ALL {
        out += &format!("| {} | {} |\n", e.code(), e.meaning());
    }
    out
}

/// The statuses as `--help` shows them.
pub(super) fn help() -> String {
    let mut out = String::from("Exit status:\n");
    for e in Exit::ALL {
        out += &format!("  {}  {}\n", e.code(), e.meaning());
    }
    out
}
