//! The fields of each command's JSON object, in one place: docs/json.md is [`markdown`]'s output,
//! and the CLI tests check every command's JSON against its list here (a field added to a
//! command's output without a line here fails them).

/// A command's JSON object: the command, and each field with its meaning.
pub struct Fields {
    /// The command (`explore`, `run`, ...).
    pub command: &'static str,
    /// Each field and what it holds.
    pub fields: &'static [(&'static str, &'static str)],
}

/// The fields every run of one seed has (`run`, `replay`).
const RUN: &[(&str, &str)] = &[
    ("scenario", "the scenario's name"),
    ("seed", "the seed"),
    ("bugs", "the bug switches it ran with"),
    ("fixes", "the fix switches it ran with (`all` expanded)"),
    ("outcome", "`violation` or `pass`"),
    ("violation", "the violation (object below), or null"),
    (
        "finding",
        "the id of the known finding the violation is, or null",
    ),
    ("events", "events recorded"),
    ("sim_time_ms", "simulated time the run covered (ms)"),
    ("wall_ms", "wall-clock time it took (ms)"),
    ("trace_hash", "the trace hash (16 hex digits)"),
];

/// Every command's JSON object.
pub const ALL: &[Fields] = &[
    Fields { command: "run", fields: RUN },
    Fields {
        command: "replay",
        fields: &[
            ("(run's fields)", "as `run`, for the file's run"),
            ("reproduced", "same invariant, event index and trace hash as the file (without --fix)"),
            ("violation_gone", "with --fix: the file's invariant is no longer violated"),
        ],
    },
    Fields {
        command: "explore",
        fields: &[
            ("scenario", "the scenario's name"),
            ("bugs", "the bug switches"),
            ("fixes", "the fix switches (`all` expanded)"),
            ("profile", "the fault profile the seeds drew with: `adversarial` or `realistic`"),
            ("from", "the first seed of the range"),
            ("seeds", "the seeds asked for (--seeds; default 1000), or null with --duration alone"),
            ("seeds_run", "seeds that ran: the first `seeds_run` of the range (of the shard), the same between identical runs"),
            ("seeds_ran", "`{first, last, step}`: the seeds that ran (step N with --shard K/N), or null"),
            ("stopped", "why it ended before the last seed: `failure`, `deadline` (--duration), `interrupt` (Ctrl-C), or null"),
            ("resume_command", "the command that explores the seeds not run, after a deadline or an interrupt, else null"),
            ("failures", "failing seeds among those that ran"),
            ("failing_seeds", "all of them, ascending"),
            ("failure_groups", "one per signature: `{invariant, finding, count, first_seed, first_file}`"),
            ("first_failure", "`{seed, invariant, sim_time_ms}` of the lowest failing seed, or null"),
            ("wall_ms", "wall-clock time (ms)"),
            ("seeds_per_sec", "seeds per second (one decimal)"),
            ("sim_speedup", "simulated seconds per wall-clock second (one decimal)"),
            ("failure_file", "the lowest failing seed's replay file, or null"),
            ("shrunk_file", "its shrunk replay file (`<scenario>-<seed>.shrunk.json`), or null"),
            ("shrunk_faults", "faults the shrunk schedule keeps, or null"),
            ("shard", "`K/N` with --shard, else null"),
            ("coverage", "coverage point -> seeds that reached it"),
            ("unreached_coverage", "points no seed reached, once the seeds run reach the scenario's CI budget (a failure)"),
        ],
    },
    Fields {
        command: "merge",
        fields: &[
            ("scenario", "the scenario's name"),
            ("bugs", "the bug switches (equal in every file)"),
            ("fixes", "the fix switches (equal in every file)"),
            ("seeds_run", "seeds run, summed over the shards merged"),
            ("failures", "failures, summed"),
            ("failing_seeds", "every failing seed, ascending"),
            ("first_failure", "the lowest failing seed's `first_failure`, or null"),
            ("wall_ms", "the slowest shard's wall time (ms)"),
            ("seeds_per_sec", "summed over the shards"),
            ("sim_speedup", "summed over the shards"),
            ("failure_file", "the lowest failing seed's replay file (on its shard's machine), or null"),
            ("shards", "files merged (a repeated shard once)"),
            ("missing_shards", "shards `K/N` of the set that no file holds (a failure)"),
            ("duplicate_shards", "shards given more than once (a failure; counted once)"),
            ("coverage", "coverage point -> seeds that reached it, summed"),
            ("unreached_coverage", "points no shard reached, once the seeds run reach the CI budget"),
        ],
    },
    Fields {
        command: "shrink",
        fields: &[
            ("invariant", "the invariant the shrunk run still violates"),
            ("before_faults", "faults in the file's schedule"),
            ("after_faults", "faults in the shrunk schedule"),
            ("file", "the shrunk replay file written"),
        ],
    },
    Fields {
        command: "hunt",
        fields: &[
            ("finding", "the finding hunted"),
            ("scenario", "the scenario its seeds ran (the schedule file's with --schedule)"),
            ("with", "the switches it ran with: the finding's `shown_with`"),
            ("profile", "the fault profile the seeds drew with: `adversarial` or `realistic`"),
            ("first_seed", "the first seed of the range"),
            ("seeds", "how many seeds it ran (--seeds)"),
            ("schedule", "whether each seed ran the --schedule file's schedule instead of its own draw"),
            ("matching_seeds", "the seeds whose violation is the finding (as `run --json` names it), ascending"),
            ("other_failures", "the other failing seeds, counted by name: another finding's id, `<invariant> (no finding)`, or why the run could not run or crashed"),
        ],
    },
    Fields {
        command: "check-determinism",
        fields: &[
            ("scenario", "the scenario's name"),
            ("seeds", "seeds compared"),
            ("profile", "the fault profile the seeds drew with: `adversarial` or `realistic`"),
            ("mismatches", "seeds whose trace hash differs between one thread and several"),
        ],
    },
    Fields {
        command: "report",
        fields: &[
            ("report", "what it reports: `seed N` or `N seeds`"),
            ("dir", "the folder written"),
            ("files", "the files written"),
        ],
    },
    Fields {
        command: "hash-trace",
        fields: &[("file", "the trace file"), ("trace_hash", "its trace hash")],
    },
    Fields {
        command: "violation (object)",
        fields: &[
            ("invariant", "the invariant violated"),
            ("kind", "`safety`, `liveness` or `crash`"),
            ("event_index", "the event at which it was detected"),
            ("sim_time_ms", "true (simulated) time of detection (ms)"),
            ("node", "the node concerned, or null"),
            ("explanation", "the causal sentence"),
            ("measured", "the invariant's own measure against its bound (left out when the monitor had none)"),
        ],
    },
];

/// The fields of `command`'s JSON object (for `replay`, with `run`'s).
pub fn of(command: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for f in ALL.iter().filter(|f| f.command == command) {
        for (name, _) in f.fields {
            match *name {
                "(run's fields)" => out.extend(RUN.iter().map(|(n, _)| *n)),
                n => out.push(n),
            }
        }
    }
    out
}

/// docs/json.md's tables.
pub fn markdown() -> String {
    let mut out = String::new();
    for f in ALL {
        out += &format!("### {}\n\n| field | meaning |\n|---|---|\n", f.command);
        for (name, meaning) in f.fields {
            out += &format!("| `{name}` | {meaning} |\n");
        }
        out += "\n";
    }
    out
}
