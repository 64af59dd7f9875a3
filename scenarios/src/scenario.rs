//! The scenario catalog and the bug/fix switch registry.

use crate::system::{AnyOptions, Scenario};
use serde::Serialize;
use sim::{Outcome, Schedule};

/// Swarm testing: each fault kind is on with probability 1/2, and at least one is (drawn from `rng`
/// in a fixed order, so the options are a function of the seed).
pub fn draw_fault_kinds<T: Copy>(rng: &mut rand_chacha::ChaCha8Rng, kinds: &[T]) -> Vec<T> {
    use rand::seq::IndexedRandom;
    use rand::Rng;
    let mut on: Vec<T> = kinds
        .iter()
        .filter(|_| rng.random_bool(0.5))
        .copied()
        .collect();
    if on.is_empty() {
        on.push(*kinds.choose(rng).unwrap());
    }
    on
}

/// Wall clock offsets (ms) and drifts (ppm) of `n` nodes: with `skew`, offsets up to
/// `max_offset_ms` either way and drifts up to 500 ppm; without, offsets within 0.5 s and no drift.
pub fn draw_clocks(
    rng: &mut rand_chacha::ChaCha8Rng,
    n: usize,
    skew: bool,
    max_offset_ms: i64,
) -> (Vec<i64>, Vec<i64>) {
    use rand::Rng;
    let offsets = (0..n)
        .map(|_| {
            if skew {
                rng.random_range(-max_offset_ms..=max_offset_ms)
            } else {
                rng.random_range(-500..=500)
            }
        })
        .collect();
    let drifts = (0..n)
        .map(|_| {
            if skew {
                rng.random_range(-500..=500)
            } else {
                0
            }
        })
        .collect();
    (offsets, drifts)
}

/// Everything that determines a run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The scenario.
    pub scenario: &'static Scenario,
    /// The seed.
    pub seed: u64,
    /// Bug switches (`--bug`).
    pub bugs: Vec<String>,
    /// Fix switches (`--fix`).
    pub fixes: Vec<String>,
    /// Options (drawn from the seed unless replayed or shrunk).
    pub options: AnyOptions,
    /// Fault schedule (likewise).
    pub schedule: Schedule,
    /// Keep the JSON-lines trace.
    pub keep_trace: bool,
    /// Run a longer (or shorter) fault window than the scenario's (cost measurements).
    pub fault_window_ms: Option<u64>,
    /// The profile the seed drew its faults with.
    pub profile: crate::faults::Profile,
}

impl RunSpec {
    /// The spec a seed draws (the adversarial profile).
    pub fn from_seed(
        scenario: &'static Scenario,
        seed: u64,
        bugs: &[String],
        fixes: &[String],
    ) -> RunSpec {
        Self::from_seed_in(
            scenario,
            seed,
            bugs,
            fixes,
            crate::faults::Profile::Adversarial,
        )
    }

    /// The spec a seed draws under `profile`.
    pub fn from_seed_in(
        scenario: &'static Scenario,
        seed: u64,
        bugs: &[String],
        fixes: &[String],
        profile: crate::faults::Profile,
    ) -> RunSpec {
        let (options, schedule) = scenario.draw_in(seed, profile);
        RunSpec {
            profile,
            scenario,
            seed,
            bugs: bugs.to_vec(),
            fixes: fixes.to_vec(),
            options,
            schedule,
            keep_trace: false,
            fault_window_ms: None,
        }
    }

    /// The simulation settings of this spec for a scenario's nodes, latencies and phase lengths.
    pub fn sim_config(
        &self,
        nodes: Vec<sim::NodeSpec>,
        latency_us: (u64, u64),
        fault_window_ms: u64,
        liveness_ms: u64,
    ) -> sim::SimConfig {
        sim::SimConfig {
            seed: self.seed,
            nodes,
            net: sim::NetSpec {
                latency_min_us: latency_us.0,
                latency_max_us: latency_us.1,
            },
            schedule: self.schedule.clone(),
            fault_window_ms: self.fault_window_ms.unwrap_or(fault_window_ms),
            liveness_ms,
            keep_trace: self.keep_trace,
        }
    }

    /// Runs it on the current thread (use `sim::runtime::on_fresh_thread`).
    pub fn run(&self) -> Outcome {
        self.scenario.run(self)
    }

    /// The `run` command line that reproduces this seed (with its switches), through the
    /// command that runs the scenario's registry (`faultline` or a user's own binary:
    /// [`crate::Registry::invoked_as`]).
    pub fn command(&self) -> String {
        let mut c = format!(
            "{} run {} --seed {}",
            self.scenario.command(),
            self.scenario.name,
            self.seed
        );
        if !self.profile.is_default() {
            c += &format!(" --profile {}", self.profile.name());
        }
        for b in &self.bugs {
            c += &format!(" --bug {b}");
        }
        for f in &self.fixes {
            c += &format!(" --fix {f}");
        }
        c
    }
}

/// Bug (restores historic behaviour), fix (a remedy for a finding) or mutant (a deliberately
/// broken model that shows an invariant can fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchKind {
    /// `--bug`: the model restores a historic behaviour, which the switch's scenario finds.
    Bug,
    /// `--fix`: the model applies a remedy for a finding of the switch's scenario.
    Fix,
    /// `--bug` too: a small deliberate break of the model (no upstream behaviour), which the
    /// switch's scenario catches through the invariant the switch `trips`
    /// (`scenarios/tests/mutants.rs`).
    Mutant,
}

fn invariant_name<S: serde::Serializer>(
    i: &Option<&'static crate::invariant::Invariant>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(i.map_or("", |i| i.name))
}

/// A `--bug` or `--fix` switch.
#[derive(Debug, Serialize)]
pub struct Switch {
    /// Its name on the command line (`calico-watchdog`).
    pub name: &'static str,
    /// Bug or fix.
    pub kind: SwitchKind,
    /// The system it belongs to.
    pub system: &'static str,
    /// The scenario that finds the bug (or whose finding the fix remedies).
    pub scenario: &'static str,
    /// For a mutant: the invariant that catches it.
    #[serde(serialize_with = "invariant_name")]
    pub trips: Option<&'static crate::invariant::Invariant>,
    /// One line: what it changes.
    pub about: &'static str,
}

impl Switch {
    /// A `--bug` switch of system `S` (its name from the type, not repeated as a string), shown by
    /// `scenario`: `Switch::bug::<FencedLock>("unfenced", "fenced-lock-pauses", "...")`.
    pub const fn bug<S: crate::System>(
        name: &'static str,
        scenario: &'static str,
        about: &'static str,
    ) -> Switch {
        Switch::of::<S>(SwitchKind::Bug, name, scenario, about)
    }

    /// A `--fix` switch of system `S`, remedying a finding of `scenario`.
    pub const fn fix<S: crate::System>(
        name: &'static str,
        scenario: &'static str,
        about: &'static str,
    ) -> Switch {
        Switch::of::<S>(SwitchKind::Fix, name, scenario, about)
    }

    /// A mutant of system `S`, which `scenario` catches through `trips`.
    pub const fn mutant<S: crate::System>(
        name: &'static str,
        scenario: &'static str,
        trips: &'static crate::invariant::Invariant,
        about: &'static str,
    ) -> Switch {
        Switch {
            trips: Some(trips),
            ..Switch::of::<S>(SwitchKind::Mutant, name, scenario, about)
        }
    }

    const fn of<S: crate::System>(
        kind: SwitchKind,
        name: &'static str,
        scenario: &'static str,
        about: &'static str,
    ) -> Switch {
        Switch {
            name,
            kind,
            system: S::NAME,
            scenario,
            trips: None,
            about,
        }
    }
}

/// The switches of `reg` as a Markdown table (docs/scenarios.md's switch table is this output:
/// `faultline bugs --markdown`).
pub fn switches_markdown(reg: &crate::Registry) -> String {
    let mut out = String::from(
        "| switch | kind | found by | trips | what it does |\n|---|---|---|---|---|\n",
    );
    for s in reg.switches() {
        out += &format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.name,
            format!("{:?}", s.kind).to_lowercase(),
            s.scenario,
            s.trips.map(|i| format!("`{}`", i.name)).unwrap_or_default(),
            s.about
        );
    }
    out
}
