//! Invariants declared once: each system's monitor reports a violation by one of these, and the
//! docs' invariant tables and `faultline invariants` are generated from them.
//!
//! An invariant is one promise a system makes to its users (the invariant catalog): its kind (safety:
//! at every instant; liveness: once faults stop, within a bound), the bound as a number computed
//! from the model's constants (`bound_us`, with the derivation in words), what it checks, and the
//! upstream behaviour it stands for. Every invariant has at least one `mutant` switch (a
//! deliberately broken model) that trips it from random seeds (`scenarios/tests/mutants.rs`).

use serde::{Serialize, Serializer};
use sim::Kind;

/// One promise a system makes to its users, as its monitor checks it.
#[derive(Debug, Serialize)]
pub struct Invariant {
    /// Its name (kebab-case), as violations carry it.
    pub name: &'static str,
    /// Safety (must hold at every instant) or liveness (must happen within `bound` once faults
    /// stop).
    pub kind: Kind,
    /// The bound in simulated microseconds, computed from the model's constants (for a system whose
    /// bound grows with the cluster: at the scenarios' smallest cluster). Serialized as `bound_s`.
    #[serde(rename = "bound_s", serialize_with = "as_secs")]
    pub bound_us: Option<u64>,
    /// The bound in words: how it is derived from the model's constants.
    pub bound: &'static str,
    /// What it checks, in one sentence.
    pub meaning: &'static str,
    /// The upstream behaviour it stands for (what users of the real system rely on).
    pub upstream: &'static str,
    /// Its headline measure: what a report of its violation shows first, with the bound (the
    /// monitor fills in the value, [`sim::Measured`]).
    pub measure: &'static str,
    /// How the measure relates to the bound when the invariant is violated.
    pub breach: Breach,
}

/// How a violated invariant's measure relates to its bound (checked against every mutant's
/// violation in `tests/mutants.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Breach {
    /// Unbounded: any occurrence is a violation; the measure is its context.
    Occurs,
    /// Violated when the measure reaches the bound (a deadline passed: something took or lasted
    /// too long).
    Exceeds,
    /// Violated when the measure is at most the bound (two things too close together, a lag too
    /// small to justify a warning).
    Within,
}

impl Breach {
    /// Whether `value_us` against `bound_us` is a violation of this kind.
    pub fn breached(self, value_us: u64, bound_us: Option<u64>) -> bool {
        match (self, bound_us) {
            (Breach::Occurs, None) => true,
            (Breach::Exceeds, Some(b)) => value_us >= b,
            (Breach::Within, Some(b)) => value_us <= b,
            _ => false,
        }
    }
}

fn as_secs<S: Serializer>(us: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match us {
        Some(us) => s.serialize_f64(*us as f64 / 1e6),
        None => s.serialize_none(),
    }
}

impl Invariant {
    /// A safety invariant without a bound.
    pub const fn safety(name: &'static str, meaning: &'static str) -> Invariant {
        Invariant {
            name,
            kind: Kind::Safety,
            bound_us: None,
            bound: "",
            meaning,
            upstream: "",
            measure: "",
            breach: Breach::Occurs,
        }
    }

    /// Its headline measure and how a violation relates it to the bound.
    pub const fn measure(self, breach: Breach, measure: &'static str) -> Invariant {
        Invariant {
            measure,
            breach,
            ..self
        }
    }

    /// The same with a bound in words (see [`Invariant::bound_us`] for the number).
    pub const fn bounded(self, bound: &'static str) -> Invariant {
        Invariant { bound, ..self }
    }

    /// The bound as a number (simulated microseconds), computed from the model's constants.
    pub const fn bound_us(self, us: u64) -> Invariant {
        Invariant {
            bound_us: Some(us),
            ..self
        }
    }

    /// The upstream behaviour it stands for.
    pub const fn upstream(self, upstream: &'static str) -> Invariant {
        Invariant { upstream, ..self }
    }

    /// A liveness invariant and its bound in words (give the number with
    /// [`Invariant::bound_us`]).
    pub const fn liveness(
        name: &'static str,
        bound: &'static str,
        meaning: &'static str,
    ) -> Invariant {
        Invariant {
            name,
            kind: Kind::Liveness,
            bound_us: None,
            bound,
            meaning,
            upstream: "",
            measure: "",
            breach: Breach::Occurs,
        }
    }

    /// The bound for a table: the number (when there is one) and its derivation.
    pub fn bound_text(&self) -> String {
        match (self.bound_us, self.bound) {
            (Some(us), "") => sim::units::show_secs(us),
            (Some(us), words) => format!("{}: {words}", sim::units::show_secs(us)),
            (None, words) => words.to_string(),
        }
    }
}

/// A violation's measure as its invariant names it, with the bound it was held to:
/// `time from the host last holding the election key to its master-only work: 142.933 s (bound
/// 125.000 s)`. None when the violated invariant is not in `invariants` or the monitor had no value.
pub fn describe_measure(invariants: &[Invariant], v: &sim::Violation) -> Option<String> {
    let i = invariants.iter().find(|i| i.name == v.invariant)?;
    let m = v.measured?;
    let bound = m
        .bound_us
        .map(|b| format!(" (bound {})", sim::units::show_secs(b)))
        .unwrap_or_default();
    Some(format!(
        "{}: {}{bound}",
        i.measure,
        sim::units::show_secs(m.value_us)
    ))
}

/// The invariants section of docs/scenarios.md: each system's table (`faultline invariants
/// --markdown`).
pub fn docs(reg: &crate::Registry) -> String {
    let mut out = String::new();
    for s in reg.systems() {
        let list: Vec<&Invariant> = s.invariants.iter().collect();
        out += &format!(
            "{} (`scenarios/src/{}/invariants.rs`):\n\n{}\n",
            s.name,
            s.name,
            markdown(&list)
        );
    }
    out
}

/// The invariants of `invariants` as a Markdown table (the docs' tables are this output).
pub fn markdown(invariants: &[&Invariant]) -> String {
    let mut out = String::from(
        "| invariant | kind | bound | what it checks | headline measure | upstream behaviour |\n|---|---|---|---|---|---|\n",
    );
    for i in invariants {
        out += &format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            i.name,
            i.kind,
            i.bound_text(),
            i.meaning,
            i.measure,
            i.upstream
        );
    }
    out
}
