//! Fault profiles and the fault catalog as `faultline faults` lists it.
//!
//! The facts of the simulated world's fault kinds (causes, realistic sizes and rates, sources) live
//! in [`sim::catalog`]; each system's fault choices (`<system>::fault_choice`) add which kinds they
//! draw, their own causes and whether a known upstream code path produces them ([`ChoiceFacts`]).
//! The realistic [`Profile`] draws only choices that are not hypothetical, at the kinds' realistic
//! sizes.

use serde::{Deserialize, Serialize};
use sim::catalog::{Facts, Source};

/// How a seed draws its faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Wide draws that find bugs sooner: every fault choice, sizes beyond what production shows
    /// (the default, and what every pinned seed and golden hash was drawn with).
    #[default]
    Adversarial,
    /// Only faults with a known real cause (no hypothetical choice), at the catalog's realistic
    /// sizes and rates.
    Realistic,
}

impl Profile {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Adversarial => "adversarial",
            Profile::Realistic => "realistic",
        }
    }

    /// Reads `--profile`'s value, or says which exist.
    pub fn parse(s: &str) -> Result<Profile, crate::explore::BadInput> {
        match s {
            "adversarial" => Ok(Profile::Adversarial),
            "realistic" => Ok(Profile::Realistic),
            _ => Err(crate::explore::BadInput(format!(
                "unknown profile '{s}' (known: adversarial, realistic)"
            ))),
        }
    }

    /// True for the default profile (replay files and reports leave it out of commands).
    pub fn is_default(&self) -> bool {
        *self == Profile::Adversarial
    }
}

/// What a system's fault choice adds to the catalog of the kinds it draws.
#[derive(Clone, Copy, Debug)]
pub struct ChoiceFacts {
    /// The simulated fault kinds it draws (their causes, sizes and sources apply).
    pub draws: &'static [&'static Facts],
    /// Its own causes, in this system (empty: the kinds' causes).
    pub causes: &'static [&'static str],
    /// True when no known upstream code path produces it.
    pub hypothetical: bool,
    /// Why (the upstream code read), in one sentence; empty when the kinds' facts say it all.
    pub note: &'static str,
}

impl ChoiceFacts {
    /// A choice with a known cause.
    pub const fn real(draws: &'static [&'static Facts], causes: &'static [&'static str]) -> Self {
        ChoiceFacts {
            draws,
            causes,
            hypothetical: false,
            note: "",
        }
    }

    /// The same with a note on the upstream code.
    pub const fn noted(self, note: &'static str) -> Self {
        ChoiceFacts { note, ..self }
    }

    /// A choice no known upstream code path produces (`note`: why).
    pub const fn hypothetical(draws: &'static [&'static Facts], note: &'static str) -> Self {
        ChoiceFacts {
            draws,
            causes: &[],
            hypothetical: true,
            note,
        }
    }
}

/// One line of `faultline faults`.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRow {
    /// `sim` for a kind of the simulated world, else the system whose choice it is.
    pub system: &'static str,
    /// The kind's or the choice's name.
    pub name: &'static str,
    /// The simulated kinds it draws (a kind lists itself).
    pub kinds: Vec<&'static str>,
    /// Real-world causes.
    pub causes: Vec<&'static str>,
    /// Realistic sizes and rates, one per quantity (empty: the fault has no size).
    pub realistic: Vec<String>,
    /// How often it happens.
    pub frequency: Vec<&'static str>,
    /// Where the facts come from.
    pub sources: Vec<&'static str>,
    /// True when no known upstream code path produces it (never drawn by the realistic profile).
    pub hypothetical: bool,
    /// The upstream code read for the judgement.
    pub note: &'static str,
}

fn sources(facts: &[&'static Facts]) -> Vec<&'static str> {
    let mut out: Vec<Source> = Vec::new();
    for s in facts.iter().flat_map(|f| f.sources) {
        if !out.contains(s) {
            out.push(*s);
        }
    }
    out.into_iter().map(Source::citation).collect()
}

/// The row of one simulated fault kind.
pub fn kind_row(f: &'static Facts) -> FaultRow {
    FaultRow {
        system: "sim",
        name: f.name,
        kinds: vec![f.name],
        causes: f.causes.to_vec(),
        realistic: f.realistic.iter().map(|r| r.describe()).collect(),
        frequency: vec![f.frequency],
        sources: sources(&[f]),
        hypothetical: false,
        note: "",
    }
}

/// The row of a system's fault choice `name`.
pub fn choice_row(system: &'static str, name: &'static str, c: ChoiceFacts) -> FaultRow {
    let causes = if c.causes.is_empty() {
        c.draws
            .iter()
            .flat_map(|f| f.causes.iter().copied())
            .collect()
    } else {
        c.causes.to_vec()
    };
    FaultRow {
        system,
        name,
        kinds: c.draws.iter().map(|f| f.name).collect(),
        causes,
        realistic: c
            .draws
            .iter()
            .flat_map(|f| {
                f.realistic
                    .iter()
                    .map(move |r| format!("{}: {}", f.name, r.describe()))
            })
            .collect(),
        frequency: c.draws.iter().map(|f| f.frequency).collect(),
        sources: sources(c.draws),
        hypothetical: c.hypothetical,
        note: c.note,
    }
}

/// Every row: the simulated kinds, then each system's choices.
pub fn rows(reg: &crate::Registry) -> Vec<FaultRow> {
    let mut out: Vec<FaultRow> = sim::catalog::every_kind()
        .iter()
        .map(|k| kind_row(sim::catalog::facts(k)))
        .collect();
    for s in reg.systems() {
        out.extend((s.faults)());
    }
    out
}

/// The catalog as docs/faults.md shows it (`faultline faults --markdown`).
pub fn markdown(reg: &crate::Registry) -> String {
    let mut out = String::from(
        "| system | fault | draws | causes | realistic sizes | hypothetical |\n\
         |---|---|---|---|---|---|\n",
    );
    let rows = rows(reg);
    for r in &rows {
        let causes = if r.hypothetical && !r.note.is_empty() {
            r.note.to_string()
        } else {
            r.causes.join("; ")
        };
        out += &format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            r.system,
            r.name,
            r.kinds.join(", "),
            causes,
            r.realistic.join("; "),
            if r.hypothetical { "yes" } else { "no" }
        );
    }
    out += "\nSources:\n\n";
    let mut seen: Vec<&str> = Vec::new();
    for s in rows.iter().flat_map(|r| r.sources.iter()) {
        if !seen.contains(s) {
            seen.push(s);
            out += &format!("- {s}\n");
        }
    }
    out
}

/// The choices of `kinds` with a known cause (the realistic profile draws only these).
pub fn known_causes<T: Copy>(kinds: &[T], facts: fn(T) -> ChoiceFacts) -> Vec<T> {
    kinds
        .iter()
        .copied()
        .filter(|k| !facts(*k).hypothetical)
        .collect()
}

/// Brings a drawn schedule to the catalog's realistic sizes ([`sim::catalog::realize`]), in time
/// order.
pub fn realize_schedule(s: &mut sim::Schedule, rng: &mut rand_chacha::ChaCha8Rng) {
    for f in s.iter_mut() {
        sim::catalog::realize(f, rng);
    }
    s.sort_by_key(|f| f.at_ms);
}

/// Brings drawn initial clock offsets (ms) and oscillator drifts (ppm) to those of synchronised
/// hosts ([`sim::catalog::SYNCED_OFFSET_MS`], [`sim::catalog::OSCILLATOR_PPM`]).
pub fn realize_clocks(
    offsets_ms: &mut [i64],
    drifts_ppm: &mut [i64],
    rng: &mut rand_chacha::ChaCha8Rng,
) {
    for v in offsets_ms.iter_mut() {
        *v = sim::catalog::SYNCED_OFFSET_MS.fit_magnitude(*v, rng);
    }
    for v in drifts_ppm.iter_mut() {
        *v = sim::catalog::OSCILLATOR_PPM.fit_magnitude(*v, rng);
    }
}
