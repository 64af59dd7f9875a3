//! The findings catalog: every violation of a model's default (upstream) logic that exploration
//! found, active or retired, with the upstream code that produces it. `faultline findings` prints
//! it; docs/findings.md is generated from it ([`markdown`]); the tests reproduce every
//! active finding at its pinned seeds through its exact [`Signature`] and check that its fix
//! removes it.

use serde::Serialize;
use sim::Violation;

/// Where upstream's code does it: repository, path, function, lines, at a commit.
#[derive(Debug, Serialize)]
pub struct Citation {
    /// The GitHub repository, `owner/name`.
    pub repo: &'static str,
    /// The file, from the repository's root.
    pub path: &'static str,
    /// The function or method, as upstream names it.
    pub function: &'static str,
    /// Where in that file at `commit`: a line range, or the function as a whole.
    pub lines: Lines,
    /// The full commit hash the lines refer to.
    pub commit: &'static str,
}

/// The lines a [`Citation`] points at. In `findings --json` a string of line numbers (`336-344`,
/// `17-20, 267-293`), or null for a whole function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Line numbers at the citation's commit: one line, a range, or ranges separated by commas.
    At(&'static str),
    /// The function as a whole, with no line numbers (a commit read only for the function, whose
    /// lines were not pinned).
    FunctionOnly,
}

impl Lines {
    /// The line numbers, if any.
    pub fn numbers(self) -> Option<&'static str> {
        match self {
            Lines::At(l) => Some(l),
            Lines::FunctionOnly => None,
        }
    }

    /// How a reader sees it after the function's name: `(lines 336-344)` or `(the whole
    /// function)`.
    pub fn describe(self) -> String {
        match self {
            Lines::At(l) if l.contains(['-', ',']) => format!("lines {l}"),
            Lines::At(l) => format!("line {l}"),
            Lines::FunctionOnly => "the whole function".to_string(),
        }
    }
}

impl Serialize for Lines {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.numbers() {
            Some(l) => s.serialize_str(l),
            None => s.serialize_none(),
        }
    }
}

/// How to recognise a finding's violation: its invariant, and a test on the causal sentence that
/// tells it apart from other findings on the same invariant.
#[derive(Serialize)]
pub struct Signature {
    /// The invariants it shows as (one finding can break more than one promise).
    pub invariants: &'static [&'static str],
    /// What the sentence must say, in words.
    pub describe: &'static str,
    /// The test itself, on the violation's causal sentence (true: this finding).
    #[serde(skip)]
    pub test: fn(&str) -> bool,
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.invariants.join(" | "), self.describe)
    }
}

impl Signature {
    /// Whether `v` is this finding's violation.
    pub fn matches(&self, v: &Violation) -> bool {
        self.invariants.contains(&v.invariant.as_str()) && (self.test)(&v.explanation)
    }
}

/// How a finding can arise in production: the rarest fault or timing it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Realism {
    /// It shows with no fault, or with everyday ones (restarts, upgrades, a handover).
    NormalOperation,
    /// It needs a fault with a known real cause (a crash, a pause, a clock step, a lost answer), at
    /// a rare size or timing.
    RareFault,
    /// It needs a fault that no known upstream code path produces (a loop whose body cannot raise
    /// dying silently).
    HypotheticalFault,
}

impl Realism {
    /// Its name in `findings --json` and the docs (`rare-fault`).
    pub fn name(self) -> &'static str {
        match self {
            Realism::NormalOperation => "normal-operation",
            Realism::RareFault => "rare-fault",
            Realism::HypotheticalFault => "hypothetical-fault",
        }
    }
}

/// Active, or retired (with the reason).
#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Status {
    /// The current model still shows it at its pinned seeds.
    Active,
    /// No longer a finding of the model.
    Retired {
        /// Why it was retired (an artefact of the model, narrowed into other findings, ...).
        reason: &'static str,
    },
}

/// One finding.
#[derive(Debug, Serialize)]
pub struct Finding {
    /// Its stable identifier, prefixed with its system (`calico-wall-clock-stamp`).
    pub id: &'static str,
    /// The system it is a finding of (`calico`, `cilium`, ...).
    pub system: &'static str,
    /// One line: what goes wrong.
    pub title: &'static str,
    /// The scenario whose seeds show it.
    pub scenario: &'static str,
    /// Seeds of `scenario` that show it with the default model.
    pub seeds: &'static [u64],
    /// How to recognise its violation among others.
    pub signature: Signature,
    /// The causal sentence: what happens, step by step.
    pub summary: &'static str,
    /// The upstream code that produces it.
    pub upstream: &'static [Citation],
    /// The `--fix` switch that removes it.
    pub fix: Option<&'static str>,
    /// Switches (newer upstream behaviours) that must be on for `seeds` to show it; empty: the
    /// default model (the pinned upstream commit) shows it.
    pub shown_with: &'static [&'static str],
    /// What goes wrong for a user of the system, in their words (empty for a retired finding).
    pub impact: &'static str,
    /// The faults and timing windows it needs, each in words ("a Neutron DB backlog that outlasts
    /// a handover"); empty only for a retired finding.
    pub preconditions: &'static [&'static str],
    /// How it can arise in production (None only for a retired finding).
    pub realism: Option<Realism>,
    /// Active or retired (flattened into the JSON as `status` and `reason`).
    #[serde(flatten)]
    pub status: Status,
}

impl Finding {
    /// Still a finding of the current model.
    pub fn is_active(&self) -> bool {
        matches!(self.status, Status::Active)
    }

    /// A retired finding: what it was and why it was retired, with no impact, preconditions,
    /// realism or switches it needs (those describe an active finding).
    pub const fn retired(r: RetiredFinding) -> Finding {
        Finding {
            id: r.id,
            system: r.system,
            title: r.title,
            scenario: r.scenario,
            seeds: r.seeds,
            signature: r.signature,
            summary: r.summary,
            upstream: r.upstream,
            fix: r.fix,
            shown_with: &[],
            impact: "",
            preconditions: &[],
            realism: None,
            status: Status::Retired { reason: r.reason },
        }
    }
}

/// What a retired finding keeps ([`Finding::retired`]): the fields of [`Finding`] that say what it
/// was, and the reason it was retired.
pub struct RetiredFinding {
    /// As [`Finding::id`].
    pub id: &'static str,
    /// As [`Finding::system`].
    pub system: &'static str,
    /// As [`Finding::title`].
    pub title: &'static str,
    /// As [`Finding::scenario`].
    pub scenario: &'static str,
    /// The seeds that showed it when it was active.
    pub seeds: &'static [u64],
    /// As [`Finding::signature`].
    pub signature: Signature,
    /// As [`Finding::summary`].
    pub summary: &'static str,
    /// As [`Finding::upstream`].
    pub upstream: &'static [Citation],
    /// The fix switch that removed it, when it was active.
    pub fix: Option<&'static str>,
    /// Why it was retired (an artefact of the model, narrowed into other findings, ...).
    pub reason: &'static str,
}

/// Every finding of the built-in systems, active or retired.
pub fn all() -> impl Iterator<Item = &'static Finding> {
    crate::builtin().findings()
}

/// The active finding of built-in `scenario` that `v` is, if any.
pub fn finding_for(scenario: &str, v: &Violation) -> Option<&'static Finding> {
    crate::builtin().finding_for(scenario, v)
}

/// The ids of the active findings whose signature `v` matches: exactly one for a violation a
/// finding explains, since no two active findings share a signature.
pub fn matching(v: &Violation) -> Vec<&'static str> {
    all()
        .filter(|f| f.is_active() && f.signature.matches(v))
        .map(|f| f.id)
        .collect()
}

/// The findings section of docs/findings.md.
pub fn markdown() -> String {
    let mut out = String::new();
    for (i, f) in all().filter(|f| f.is_active()).enumerate() {
        let seeds: Vec<String> = f.seeds.iter().map(u64::to_string).collect();
        let seeds = match seeds.len() {
            0 => "no seed pinned".to_string(),
            1 => format!("seed {}", seeds[0]),
            _ => format!("seeds {}", seeds.join(", ")),
        };
        let with: String = f.shown_with.iter().map(|w| format!(" --fix {w}")).collect();
        out += &format!(
            "{}. **{}** (`{}`; `{}`{with}, {seeds}). {}",
            i + 1,
            f.title,
            f.id,
            f.scenario,
            f.summary
        );
        if !f.upstream.is_empty() {
            let cites: Vec<String> = f
                .upstream
                .iter()
                .map(|c| {
                    let file = c
                        .path
                        .strip_prefix("networking-calico/networking_calico/")
                        .unwrap_or(c.path);
                    let at = match c.commit == f.upstream[0].commit {
                        true => String::new(),
                        false => format!(" at {}", &c.commit[..8]),
                    };
                    format!("`{file}` `{}` ({}){at}", c.function, c.lines.describe())
                })
                .collect();
            out += &format!(
                " Upstream ({} at {}): {}.",
                f.upstream[0].repo,
                &f.upstream[0].commit[..8],
                cites.join("; ")
            );
        }
        if let Some(fix) = f.fix {
            out += &format!(" Remedy: `--fix {fix}`.");
        }
        out += &format!(
            " Needs: {}. Realism: {}. Rates: {}. Report: [findings/{}.md](findings/{}.md).",
            f.preconditions.join("; "),
            f.realism.map_or("not judged", Realism::name),
            crate::finding_rates::markdown_of(f),
            f.id,
            f.id
        );
        out += "\n";
    }
    out += "\nRetired (model artefacts, kept with the reason):\n\n";
    for f in all() {
        if let Status::Retired { reason } = &f.status {
            out += &format!("- **{}** (`{}`): {}\n", f.title, f.id, reason);
        }
    }
    out
}
