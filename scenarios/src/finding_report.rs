//! The upstream-ready report of an active finding, `docs/findings/<id>.md`: what goes wrong for a
//! user, the version, the shortest replay, the causal chain with upstream file:line at the commit,
//! the realism class and rates, and the change upstream would make with the fix switch that models
//! it. Generated from the catalog ([`crate::findings`]), the switch registry, the recorded rates
//! ([`crate::finding_rates`]) and the finding's replay file, `docs/findings/<id>.replay.json` (the
//! failure file of a seed that shows it, a pinned one or one the rates measurement recorded under
//! either profile, shrunk by `faultline shrink`, which keeps the finding; or, for a finding no
//! drawn seed was found to show, a constructed one: a hand-written schedule run by `faultline
//! hunt --schedule --save`, marked `constructed`; at most 5 faults);
//! `.ci/regen-docs` writes every report and
//! `scenarios/tests/finding_reports.rs` checks that they are fresh.

use crate::explore::ReplayFile;
use crate::findings::{Finding, Realism};
use crate::scenario::SwitchKind;
use crate::system::Registry;
use std::path::{Path, PathBuf};

/// The repository's `docs/findings/` folder.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/findings")
}

/// Where `f`'s shrunk replay file is kept (relative to the repository's root).
pub fn replay_path(f: &Finding) -> String {
    format!("docs/findings/{}.replay.json", f.id)
}

/// `f`'s shrunk replay file, if recorded.
pub fn replay(f: &Finding) -> Option<ReplayFile> {
    let path = folder().join(format!("{}.replay.json", f.id));
    path.exists()
        .then(|| ReplayFile::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn realism_words(r: Option<Realism>) -> &'static str {
    match r {
        Some(Realism::NormalOperation) => "it shows with no fault, or with everyday ones",
        Some(Realism::RareFault) => {
            "it needs a fault with a known real cause, at a rare size or timing"
        }
        Some(Realism::HypotheticalFault) => {
            "it needs a fault that no known upstream code path produces"
        }
        None => "not judged",
    }
}

/// The report of active finding `f` (Markdown).
pub fn markdown(reg: &'static Registry, f: &Finding) -> String {
    let mut out = format!("# {}\n\n", f.title);
    out += &format!(
        "Finding `{}` of faultline's {} model. Generated from the findings catalog \
         (`faultline findings --report {}`); do not edit.\n\n",
        f.id, f.system, f.id
    );
    out += &format!("## What goes wrong\n\n{}\n\n", f.impact);
    out += &version(f);
    out += &shortest_replay(f);
    out += &format!("## How it happens\n\n{}\n\n", f.summary);
    out += &upstream(f);
    out += &odds(f);
    out += &remedy(reg, f);
    out
}

fn version(f: &Finding) -> String {
    let mut out = String::from("## Version\n\n");
    match f.upstream.first() {
        Some(c) => {
            out += &format!(
                "{} at commit `{}`: the model follows this commit's code",
                c.repo, c.commit
            )
        }
        None => out += "the system's pinned commit",
    }
    if f.shown_with.is_empty() {
        out += ".\n\n";
    } else {
        let with: Vec<String> = f.shown_with.iter().map(|w| format!("`{w}`")).collect();
        out += &format!(
            ", with the newer upstream behaviour of {} on (it shows with that change).\n\n",
            with.join(", ")
        );
    }
    out
}

/// Why a finding's replay is constructed: no drawn seed shows it, or its pinned seeds show it by
/// another path than the one the replay follows.
fn why_constructed(f: &Finding) -> &'static str {
    if f.seeds.is_empty() {
        "no seed drawn by the scenario was found to show this finding with at most 5 faults \
         (see the summary and the rates)"
    } else {
        "the pinned seeds show this finding by another path than this one, which no drawn seed \
         was found to take (see the summary)"
    }
}

fn shortest_replay(f: &Finding) -> String {
    let mut out = String::from("## Shortest replay\n\n");
    let Some(r) = replay(f) else {
        let Some(seed) = f.seeds.first() else {
            out += "Not recorded, and no seed is pinned at the moment (see the summary).\n\n";
            return out;
        };
        out += &format!(
            "Not recorded yet. The pinned seed reproduces it with its full fault schedule: \
             `faultline run {} --seed {}{}`.\n\n",
            f.scenario,
            seed,
            with_flags(f)
        );
        return out;
    };
    let faults = match r.schedule.len() {
        0 => "no fault".to_string(),
        1 => "1 fault".to_string(),
        n => format!("{n} faults"),
    };
    let colon = if r.schedule.is_empty() { "." } else { ":" };
    out +=
        &match r.constructed {
            false => format!(
            "Seed {} of scenario `{}` (profile {}) with {faults} (its drawn schedule, shrunk by \
             `faultline shrink` as long as the shrunk run still shows this finding){colon}\n\n",
            r.seed,
            r.scenario,
            r.profile.name(),
        ),
            true => format!(
            "A constructed replay, not a drawn one: {}, so \
             its {faults} were chosen by hand for the causal chain; seed {} of scenario `{}` \
             (found by running that schedule over seeds, `faultline hunt --schedule`) only \
             draws the run's own randomness (latencies, pod arrivals, the cloud's picks){}{colon}\n\n",
            why_constructed(f),
            r.seed,
            r.scenario,
            if r.options.is_null() { "" } else { " around the file's options" },
        ),
        };
    for fault in &r.schedule {
        out += &format!(
            "- at {:.1} s for {:.1} s: {}\n",
            fault.at_ms as f64 / 1000.0,
            fault.dur_ms as f64 / 1000.0,
            fault.kind.describe()
        );
    }
    out += &format!(
        "\nIt ends with invariant `{}` violated: {}\n\n```\nfaultline replay {}\n```\n\n",
        r.violation.invariant,
        r.violation.explanation,
        replay_path(f)
    );
    out
}

fn with_flags(f: &Finding) -> String {
    f.shown_with.iter().map(|w| format!(" --fix {w}")).collect()
}

fn upstream(f: &Finding) -> String {
    let mut out = String::from("Upstream code on that path:\n\n");
    for c in f.upstream {
        let anchor = match c.lines.numbers().map(|l| (l, l.split_once('-'))) {
            Some((l, Some((a, b)))) if !l.contains(',') => format!("#L{a}-L{b}"),
            Some((l, None)) if !l.contains(',') => format!("#L{l}"),
            _ => String::new(),
        };
        out += &format!(
            "- `{}` `{}`, {} at `{}` (https://github.com/{}/blob/{}/{}{anchor})\n",
            c.path,
            c.function,
            c.lines.describe(),
            &c.commit[..c.commit.len().min(12)],
            c.repo,
            c.commit,
            c.path
        );
    }
    out + "\n"
}

fn odds(f: &Finding) -> String {
    let mut out = String::from("## What it needs, and how often\n\n");
    for p in f.preconditions {
        out += &format!("- {p}\n");
    }
    out += &format!(
        "\nRealism: **{}**: {}.\n\n",
        f.realism.map_or("not judged", Realism::name),
        realism_words(f.realism)
    );
    out += &format!(
        "Rates (runs of scenario `{}`{} whose violation is this finding): {}.\n\n",
        f.scenario,
        with_flags(f),
        crate::finding_rates::markdown_of(f)
    );
    out
}

fn remedy(reg: &'static Registry, f: &Finding) -> String {
    let mut out = String::from("## The change upstream would make\n\n");
    let sw = f.fix.and_then(|n| reg.switch(n, SwitchKind::Fix));
    match sw {
        Some(sw) => {
            out += &format!(
                "{}{}. faultline models it as `--fix {}`; with it on, the pinned seeds pass.\n",
                sw.about[..1].to_uppercase(),
                &sw.about[1..],
                sw.name
            )
        }
        None => out += "No fix is modelled yet.\n",
    }
    out
}
