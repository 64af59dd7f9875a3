//! Steering a long exploration: Ctrl-C (SIGINT) and the command that resumes where it stopped,
//! and failures grouped by signature so thousands of failing seeds print as a few blocks.

use crate::explore::{ExploreConfig, Found, StopWhen};
use crate::system::Registry;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What the SIGINT handler needs: the flag it sets, the seeds finished from the first (updated by
/// the progress callback), and how to turn that into a resume command.
struct Interrupt {
    flag: Arc<AtomicBool>,
    prefix: Arc<AtomicU64>,
    resume: Box<dyn Fn(u64) -> Option<String> + Send + Sync>,
}

static HANDLER: OnceLock<Mutex<Option<Interrupt>>> = OnceLock::new();

/// Installs the SIGINT handler (once per process) for this exploration and returns what stops it.
/// The first Ctrl-C stops dispatching seeds (those under way finish, then the summary and the
/// resume command print); a second one stops at once, printing the resume command from the
/// lowest seed not finished.
pub(super) fn on_interrupt(
    resume: impl Fn(u64) -> Option<String> + Send + Sync + 'static,
) -> (StopWhen, Arc<AtomicU64>) {
    let stop = StopWhen::default();
    let prefix = Arc::new(AtomicU64::new(0));
    let cell = HANDLER.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            let Some(cell) = HANDLER.get() else { return };
            let guard = cell.lock().unwrap_or_else(|e| e.into_inner());
            let Some(i) = guard.as_ref() else {
                std::process::exit(130)
            };
            if !i.flag.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "\nfaultline: interrupted: finishing the seeds under way (Ctrl-C again to \
                     stop at once)"
                );
                return;
            }
            eprintln!("\nfaultline: stopped at once; failure files found so far are written");
            if let Some(cmd) = (i.resume)(i.prefix.load(Ordering::SeqCst)) {
                eprintln!("resume: {cmd}");
            }
            std::process::exit(130);
        });
        Mutex::new(None)
    });
    *cell.lock().unwrap_or_else(|e| e.into_inner()) = Some(Interrupt {
        flag: stop.interrupt.clone(),
        prefix: prefix.clone(),
        resume: Box::new(resume),
    });
    (stop, prefix)
}

/// After the seeds: a Ctrl-C (during the shrink, say) stops the process at once.
pub(super) fn seeds_done() {
    if let Some(cell) = HANDLER.get() {
        *cell.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The options a resumed exploration repeats (all but `--from` and `--seeds`).
pub(super) struct Resume {
    pub command: &'static str,
    pub scenario: &'static str,
    pub bugs: Vec<String>,
    pub fixes: Vec<String>,
    pub keep_going: bool,
    pub no_shrink: bool,
    pub out: Option<String>,
    pub jobs: Option<usize>,
    /// The original `--duration`, as given.
    pub duration: Option<String>,
    /// Whether `--seeds` was given (else the range runs to the end of the seeds, with a duration).
    pub seeds_given: bool,
}

impl Resume {
    /// The command that explores the seeds of `cfg` not run by an exploration whose first
    /// `prefix` seeds (in dispatch order) finished; `None` if none is left.
    pub fn command(&self, cfg: &ExploreConfig, prefix: u64) -> Option<String> {
        if prefix >= cfg.len() {
            return None;
        }
        // A shard's seeds sit at offsets k-1, k-1+n, ...: the resumed range starts k-1 before
        // the next one, so the same --shard K/N picks it first.
        let next = cfg.seed_at(prefix) - cfg.shard.map_or(0, |(k, _)| k - 1);
        let mut c = format!("{} explore {} --from {next}", self.command, self.scenario);
        if self.seeds_given {
            c += &format!(" --seeds {}", cfg.from + cfg.seeds - next);
        }
        if let Some(d) = &self.duration {
            c += &format!(" --duration {d}");
        }
        for b in &self.bugs {
            c += &format!(" --bug {b}");
        }
        for f in &self.fixes {
            c += &format!(" --fix {f}");
        }
        if !cfg.profile.is_default() {
            c += &format!(" --profile {}", cfg.profile.name());
        }
        if let Some((k, n)) = cfg.shard {
            c += &format!(" --shard {k}/{n}");
        }
        if let Some(j) = self.jobs {
            c += &format!(" --jobs {j}");
        }
        if self.keep_going {
            c += " --keep-going";
        }
        if self.no_shrink {
            c += " --no-shrink";
        }
        if let Some(o) = &self.out {
            c += &format!(" --out {o}");
        }
        Some(c)
    }
}

/// Failures with one signature: the invariant violated and the known finding it is (if any).
pub(super) struct Group<'a> {
    pub invariant: &'a str,
    pub finding: Option<&'static str>,
    /// Its failures, by seed.
    pub failures: Vec<&'a Found>,
}

/// The failures grouped by signature, in the order of their first seed.
pub(super) fn groups<'a>(reg: &Registry, failures: &'a [Found]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    for f in failures {
        let v = f
            .outcome
            .violation
            .as_ref()
            .expect("a failure has a violation");
        let finding = reg.finding_in(&f.spec, v).map(|x| x.id);
        match out
            .iter_mut()
            .find(|g| g.invariant == v.invariant && g.finding == finding)
        {
            Some(g) => g.failures.push(f),
            None => out.push(Group {
                invariant: &v.invariant,
                finding,
                failures: vec![f],
            }),
        }
    }
    out
}

/// The groups as the JSON's `failure_groups`.
pub(super) fn groups_json(groups: &[Group]) -> serde_json::Value {
    groups
        .iter()
        .map(|g| {
            let first = g.failures[0];
            json!({
                "invariant": g.invariant, "finding": g.finding, "count": g.failures.len(),
                "first_seed": first.spec.seed,
                "first_file": first.file.as_ref().map(|p| p.display().to_string()),
            })
        })
        .collect()
}

/// How many seeds of a group its block lists.
pub(super) const LISTED_SEEDS: usize = 10;

/// The line under a group's block: how many seeds fail that way, and the first few.
pub(super) fn group_line(g: &Group) -> String {
    let seeds: Vec<String> = g
        .failures
        .iter()
        .take(LISTED_SEEDS)
        .map(|f| f.spec.seed.to_string())
        .collect();
    let more = g.failures.len().saturating_sub(LISTED_SEEDS);
    let rest = if more > 0 {
        format!(" and {more} more (all in the JSON's failing_seeds and the failure folder)")
    } else {
        String::new()
    };
    format!(
        "  {} seed(s) fail this way ({}{}): {}{rest}",
        g.failures.len(),
        g.invariant,
        g.finding
            .map(|f| format!(", finding {f}"))
            .unwrap_or_default(),
        seeds.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resume() -> Resume {
        Resume {
            command: "faultline",
            scenario: "calico-split-brain",
            bugs: vec![],
            fixes: vec!["all".into()],
            keep_going: true,
            no_shrink: false,
            out: None,
            jobs: None,
            duration: None,
            seeds_given: true,
        }
    }

    fn cfg(from: u64, seeds: u64, shard: Option<(u64, u64)>) -> ExploreConfig {
        ExploreConfig {
            scenario: crate::builtin().scenario("calico-split-brain").unwrap(),
            from,
            seeds,
            bugs: vec![],
            fixes: vec![],
            jobs: 1,
            keep_going: true,
            out_dir: None,
            shard,
            profile: Default::default(),
        }
    }

    #[test]
    fn the_resume_command_starts_at_the_lowest_seed_not_finished() {
        let c = resume().command(&cfg(100, 50, None), 7).unwrap();
        assert_eq!(
            c,
            "faultline explore calico-split-brain --from 107 --seeds 43 --fix all --keep-going"
        );
        assert!(resume().command(&cfg(100, 50, None), 50).is_none());
        // Shard 2 of 3 from 100 runs 101, 104, 107, ...: after 3 of them, 110 is next, and
        // resuming from 109 with the same shard picks 110 first.
        let sharded = cfg(100, 50, Some((2, 3)));
        assert_eq!(sharded.seed_at(3), 110);
        let c = resume().command(&sharded, 3).unwrap();
        assert!(
            c.contains("--from 109 --seeds 41") && c.contains("--shard 2/3"),
            "{c}"
        );
        let resumed = cfg(109, 41, Some((2, 3)));
        assert_eq!(resumed.seed_at(0), 110);
        assert_eq!(resumed.len(), sharded.len() - 3);
    }
}
