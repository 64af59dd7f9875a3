//! Invariants declared once: each system's monitor reports a violation by one of these, and the
//! docs' invariant tables and `faultline invariants` are generated from them.

use serde::Serialize;
use sim::Kind;

/// One promise a system makes to its users, as its monitor checks it.
#[derive(Debug, Serialize)]
pub struct Invariant {
    /// Its name (kebab-case), as violations carry it.
    pub name: &'static str,
    /// Safety (must hold at every instant) or liveness (must happen within `bound` once faults
    /// stop).
    pub kind: Kind,
    /// The bound in words, where one applies (how it is derived from the model's constants).
    pub bound: &'static str,
    /// What it checks, in one sentence.
    pub meaning: &'static str,
}

impl Invariant {
    /// A safety invariant without a bound.
    pub const fn safety(name: &'static str, meaning: &'static str) -> Invariant {
        Invariant {
            name,
            kind: Kind::Safety,
            bound: "",
            meaning,
        }
    }

    /// The same with a bound.
    pub const fn bounded(self, bound: &'static str) -> Invariant {
        Invariant { bound, ..self }
    }

    /// A liveness invariant and its bound.
    pub const fn liveness(
        name: &'static str,
        bound: &'static str,
        meaning: &'static str,
    ) -> Invariant {
        Invariant {
            name,
            kind: Kind::Liveness,
            bound,
            meaning,
        }
    }
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
    let mut out =
        String::from("| invariant | kind | bound | what it checks |\n|---|---|---|---|\n");
    for i in invariants {
        out += &format!(
            "| `{}` | {} | {} | {} |\n",
            i.name, i.kind, i.bound, i.meaning
        );
    }
    out
}
