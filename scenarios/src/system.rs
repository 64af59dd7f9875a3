//! The extension point: a [`System`] is everything the harness knows about one system under test,
//! and a [`Registry`] lists the systems one command line serves.
//!
//! The harness (exploration, replay, shrinking, the command line, reports) works on [`Scenario`]s
//! and type-erased [`AnyOptions`]; it never names a system. A system implements [`System`] once:
//! its options, its scenario families, its switches and findings, the draw of options and fault
//! schedule from a seed, the run (deploying the model into a world with its monitor), how its
//! options shrink, and its report lens. The built-in registry has one line per system
//! ([`crate::builtin()`]); a user's own system (see `examples/fenced_lock`) builds its own registry and hands
//! it to [`crate::cli::main`].

use crate::explore::BadInput;
use crate::findings::Finding;
use crate::invariant::Invariant;
use crate::scenario::{RunSpec, Switch, SwitchKind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sim::{Outcome, Schedule};
use std::any::Any;
use std::fmt::Debug;

/// One system under test.
pub trait System: Send + Sync + 'static {
    /// Its name (`calico`): the prefix of its scenarios', switches' and findings' names.
    const NAME: &'static str;
    /// One line about it.
    const ABOUT: &'static str;
    /// Length of its scenarios' fault window (ms): faults fall in it, liveness is checked after.
    const FAULT_WINDOW_MS: u64;
    /// What a seed draws besides the fault schedule (printed with a seed, kept in replay files).
    type Options: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What tells its scenarios apart (the fault vocabulary a seed draws from).
    type Family: Copy + Debug + Send + Sync + 'static;

    /// Its scenarios.
    fn scenarios() -> Vec<ScenarioDef<Self::Family>>;
    /// Its `--bug` and `--fix` switches.
    fn switches() -> &'static [Switch] {
        &[]
    }
    /// Its invariants: every violation its monitor reports names one of them.
    fn invariants() -> &'static [Invariant] {
        &[]
    }
    /// Its findings catalog (active and retired).
    fn findings() -> &'static [Finding] {
        &[]
    }
    /// The options and fault schedule a seed draws (a function of the seed alone).
    fn draw(family: Self::Family, seed: u64) -> (Self::Options, Schedule);
    /// The same under `profile` (a function of the seed and the profile). The adversarial profile
    /// must be [`System::draw`]. By default a system has no fault catalog and draws the same under
    /// both profiles.
    fn draw_in(
        family: Self::Family,
        seed: u64,
        _profile: crate::faults::Profile,
    ) -> (Self::Options, Schedule) {
        Self::draw(family, seed)
    }
    /// Its fault choices as `faultline faults` lists them (none by default).
    fn faults() -> Vec<crate::faults::FaultRow> {
        Vec::new()
    }
    /// The names of the nodes a run with these options has (a fault schedule may name only these).
    fn node_names(options: &Self::Options) -> Vec<String>;
    /// Runs one spec on the current thread: builds the world, deploys the model, checks the
    /// monitor (`coverage`: the scenario's "sometimes" points).
    fn run(
        family: Self::Family,
        spec: &RunSpec,
        options: &Self::Options,
        coverage: &'static [&'static str],
    ) -> Outcome;
    /// Smaller options to try while shrinking a failure (fewer nodes, say), given the schedule
    /// (which must keep naming only nodes that exist). None by default.
    fn smaller_options(_options: &Self::Options, _schedule: &Schedule) -> Vec<Self::Options> {
        Vec::new()
    }
    /// The same options with `nodes` nodes of the kind that scales (cost measurements), if the
    /// system can be resized.
    fn with_nodes(_options: &Self::Options, _nodes: u32) -> Option<Self::Options> {
        None
    }
    /// Reads one of this system's events from its JSON in a trace (for `hash-trace`); systems
    /// with events of their own answer with [`sim::event::decode`] of their type.
    fn decode_event(_v: &serde_json::Value) -> Option<sim::Event> {
        None
    }
    /// What a report draws from this system's events (bands, marks, its headline number).
    fn lens() -> Box<dyn reports::ReportLens> {
        Box::new(reports::NoLens)
    }
}

/// A scenario as a system declares it.
#[derive(Clone, Debug)]
pub struct ScenarioDef<F> {
    /// Name (`calico-split-brain`); it starts with the system's name and a dash.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Seeds the default model must pass in `cargo test`.
    pub ci_seeds: u64,
    /// Coverage ("sometimes") points it must reach within its CI budget.
    pub coverage: &'static [&'static str],
    /// Its family.
    pub family: F,
}

/// A system's options, type-erased for the harness (it serializes as `{"<system>": options}`).
#[derive(Debug)]
pub struct AnyOptions {
    system: &'static str,
    value: Box<dyn OptionsValue>,
}

trait OptionsValue: Any + Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn OptionsValue>;
    fn eq_dyn(&self, other: &dyn OptionsValue) -> bool;
    fn to_json(&self) -> serde_json::Value;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Clone + Debug + PartialEq + Serialize + Send + Sync + 'static> OptionsValue for T {
    fn clone_box(&self) -> Box<dyn OptionsValue> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn OptionsValue) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("options serialize")
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl AnyOptions {
    /// Wraps a system's options.
    pub fn new<S: System>(options: S::Options) -> AnyOptions {
        AnyOptions {
            system: S::NAME,
            value: Box::new(options),
        }
    }

    /// The system they belong to.
    pub fn system(&self) -> &'static str {
        self.system
    }

    /// The options, if they are of type `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.value.as_any().downcast_ref()
    }

    /// The options for changing, if they are of type `T`.
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.value.as_any_mut().downcast_mut()
    }

    /// As JSON, without the system's name around them.
    pub fn to_json(&self) -> serde_json::Value {
        self.value.to_json()
    }
}

impl Clone for AnyOptions {
    fn clone(&self) -> Self {
        AnyOptions {
            system: self.system,
            value: self.value.clone_box(),
        }
    }
}

impl PartialEq for AnyOptions {
    fn eq(&self, other: &Self) -> bool {
        self.system == other.system && self.value.eq_dyn(&*other.value)
    }
}

impl Serialize for AnyOptions {
    fn serialize<Se: serde::Serializer>(&self, s: Se) -> Result<Se::Ok, Se::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.system, &self.value.to_json())?;
        m.end()
    }
}

/// A scenario: what it deploys, how a seed draws its options and faults, what it checks.
pub struct Scenario {
    /// Name (`calico-split-brain`).
    pub name: &'static str,
    /// The system it exercises.
    pub system: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Seeds the default model must pass in `cargo test`.
    pub ci_seeds: u64,
    /// Coverage points this scenario must reach within its CI budget.
    pub coverage: &'static [&'static str],
    /// Length of the fault window (ms).
    pub fault_window_ms: u64,
    /// The invariants its system declares.
    pub invariants: &'static [Invariant],
    /// The command that runs its registry's command line ([`Registry::invoked_as`]).
    command: &'static str,
    imp: Box<dyn ScenarioImpl>,
}

impl Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Scenario {
    /// The command that runs the command line serving this scenario (its registry's
    /// [`Registry::command`]), as replay and run commands print it.
    pub fn command(&self) -> &'static str {
        self.command
    }

    /// The options and fault schedule a seed draws (the adversarial profile).
    pub fn draw(&self, seed: u64) -> (AnyOptions, Schedule) {
        self.imp.draw(seed, crate::faults::Profile::Adversarial)
    }

    /// The options and fault schedule a seed draws under `profile`.
    pub fn draw_in(&self, seed: u64, profile: crate::faults::Profile) -> (AnyOptions, Schedule) {
        self.imp.draw(seed, profile)
    }

    /// Runs a spec of this scenario on the current thread. A violation names one of the
    /// system's declared invariants (checked in debug builds: every test).
    pub fn run(&self, spec: &RunSpec) -> Outcome {
        let outcome = self.imp.run(spec, self.coverage);
        if let Some(v) = &outcome.violation {
            debug_assert!(
                self.invariants.iter().any(|i| i.name == v.invariant),
                "{} reported {}, which {} does not declare (System::invariants)",
                self.name,
                v.invariant,
                self.system
            );
        }
        outcome
    }

    /// Reads options as written in a replay file (`{"<system>": options}`).
    pub fn options_from_json(&self, v: serde_json::Value) -> Result<AnyOptions, String> {
        let inner = match v {
            serde_json::Value::Object(mut m) if m.len() == 1 => m
                .remove(self.system)
                .ok_or_else(|| format!("options are not {} options", self.system))?,
            _ => return Err(format!("options are not {{\"{}\": ...}}", self.system)),
        };
        self.imp.options_from_json(inner)
    }

    /// Checks that every node `schedule` names exists in a run with options `o`: a schedule from a
    /// file may name a node the run does not have, which the world would silently ignore.
    pub fn check_schedule(&self, o: &AnyOptions, schedule: &Schedule) -> Result<(), String> {
        let names = self.imp.node_names(o);
        for f in schedule {
            if let Some(n) = f
                .kind
                .nodes()
                .into_iter()
                .find(|n| !names.iter().any(|m| m == n))
            {
                return Err(format!(
                    "the fault at {} ms ({}) names node '{n}', which this run does not have \
                     (nodes: {})",
                    f.at_ms,
                    f.kind.describe(),
                    names.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The names of the nodes a run with options `o` has.
    pub fn node_names(&self, o: &AnyOptions) -> Vec<String> {
        self.imp.node_names(o)
    }

    /// Smaller options to try while shrinking.
    pub fn smaller_options(&self, o: &AnyOptions, schedule: &Schedule) -> Vec<AnyOptions> {
        self.imp.smaller_options(o, schedule)
    }

    /// The options resized to `nodes` nodes, if the system scales.
    pub fn with_nodes(&self, o: &AnyOptions, nodes: u32) -> Option<AnyOptions> {
        self.imp.with_nodes(o, nodes)
    }

    /// A fresh report lens for a run of this scenario.
    pub fn lens(&self) -> Box<dyn reports::ReportLens> {
        self.imp.lens()
    }
}

trait ScenarioImpl: Send + Sync {
    fn draw(&self, seed: u64, profile: crate::faults::Profile) -> (AnyOptions, Schedule);
    fn run(&self, spec: &RunSpec, coverage: &'static [&'static str]) -> Outcome;
    fn options_from_json(&self, v: serde_json::Value) -> Result<AnyOptions, String>;
    fn smaller_options(&self, o: &AnyOptions, schedule: &Schedule) -> Vec<AnyOptions>;
    fn node_names(&self, o: &AnyOptions) -> Vec<String>;
    fn with_nodes(&self, o: &AnyOptions, nodes: u32) -> Option<AnyOptions>;
    fn lens(&self) -> Box<dyn reports::ReportLens>;
}

struct Typed<S: System> {
    family: S::Family,
}

impl<S: System> Typed<S> {
    fn options<'a>(&self, o: &'a AnyOptions) -> &'a S::Options {
        o.get::<S::Options>()
            .unwrap_or_else(|| panic!("a {} scenario was given {} options", S::NAME, o.system()))
    }
}

impl<S: System> ScenarioImpl for Typed<S> {
    fn draw(&self, seed: u64, profile: crate::faults::Profile) -> (AnyOptions, Schedule) {
        let (o, s) = match profile {
            crate::faults::Profile::Adversarial => S::draw(self.family, seed),
            p => S::draw_in(self.family, seed, p),
        };
        (AnyOptions::new::<S>(o), s)
    }
    fn run(&self, spec: &RunSpec, coverage: &'static [&'static str]) -> Outcome {
        S::run(self.family, spec, self.options(&spec.options), coverage)
    }
    fn options_from_json(&self, v: serde_json::Value) -> Result<AnyOptions, String> {
        serde_json::from_value::<S::Options>(v)
            .map(AnyOptions::new::<S>)
            .map_err(|e| e.to_string())
    }
    fn smaller_options(&self, o: &AnyOptions, schedule: &Schedule) -> Vec<AnyOptions> {
        S::smaller_options(self.options(o), schedule)
            .into_iter()
            .map(AnyOptions::new::<S>)
            .collect()
    }
    fn node_names(&self, o: &AnyOptions) -> Vec<String> {
        S::node_names(self.options(o))
    }
    fn with_nodes(&self, o: &AnyOptions, nodes: u32) -> Option<AnyOptions> {
        S::with_nodes(self.options(o), nodes).map(AnyOptions::new::<S>)
    }
    fn lens(&self) -> Box<dyn reports::ReportLens> {
        S::lens()
    }
}

/// A system as the registry lists it.
#[derive(Debug)]
pub struct SystemInfo {
    /// Its name.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Its switches.
    pub switches: &'static [Switch],
    /// Its findings.
    pub findings: &'static [Finding],
    /// Its invariants.
    pub invariants: &'static [Invariant],
    /// Reads its events from a trace's JSON.
    pub decode_event: fn(&serde_json::Value) -> Option<sim::Event>,
    /// Its fault choices' catalog rows.
    pub faults: fn() -> Vec<crate::faults::FaultRow>,
}

/// The systems one command line serves, with their scenarios.
#[derive(Debug)]
pub struct Registry {
    systems: Vec<SystemInfo>,
    scenarios: Vec<Scenario>,
    command: &'static str,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            systems: Vec::new(),
            scenarios: Vec::new(),
            command: "cargo run --release --bin faultline --",
        }
    }
}

impl Registry {
    /// A registry with no system.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// How a user runs the command line of this registry, as printed in replay commands
    /// (default: `cargo run --release --bin faultline --`).
    pub fn invoked_as(mut self, command: &'static str) -> Registry {
        self.command = command;
        for s in &mut self.scenarios {
            s.command = command;
        }
        self
    }

    /// The command that runs this registry's command line.
    pub fn command(&self) -> &'static str {
        self.command
    }

    /// Adds a system and its scenarios.
    ///
    /// Panics if a switch of `S` names another system or a scenario `S` does not have (a
    /// mistake in the system's declarations, caught the first time it is registered).
    pub fn with<S: System>(mut self) -> Registry {
        for sw in S::switches() {
            assert!(
                sw.system == S::NAME && S::scenarios().iter().any(|d| d.name == sw.scenario),
                "switch {} of {} names system {} and scenario {}, which {} does not have",
                sw.name,
                S::NAME,
                sw.system,
                sw.scenario,
                S::NAME
            );
        }
        self.systems.push(SystemInfo {
            name: S::NAME,
            about: S::ABOUT,
            switches: S::switches(),
            findings: S::findings(),
            invariants: S::invariants(),
            decode_event: S::decode_event,
            faults: S::faults,
        });
        for d in S::scenarios() {
            self.scenarios.push(Scenario {
                name: d.name,
                system: S::NAME,
                about: d.about,
                ci_seeds: d.ci_seeds,
                coverage: d.coverage,
                fault_window_ms: S::FAULT_WINDOW_MS,
                invariants: S::invariants(),
                command: self.command,
                imp: Box::new(Typed::<S> { family: d.family }),
            });
        }
        self
    }

    /// Makes it live for the rest of the process (runs refer to their scenario by reference).
    pub fn leak(self) -> &'static Registry {
        Box::leak(Box::new(self))
    }

    /// The systems.
    pub fn systems(&self) -> &[SystemInfo] {
        &self.systems
    }

    /// Every scenario, system by system.
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// Every switch.
    pub fn switches(&self) -> impl Iterator<Item = &'static Switch> + '_ {
        self.systems.iter().flat_map(|s| s.switches.iter())
    }

    /// Every finding, active or retired.
    pub fn findings(&self) -> impl Iterator<Item = &'static Finding> + '_ {
        self.systems.iter().flat_map(|s| s.findings.iter())
    }

    /// Looks a scenario up by name, or says which exist.
    pub fn scenario(&self, name: &str) -> Result<&Scenario, BadInput> {
        self.scenarios
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.scenarios.iter().map(|s| s.name).collect();
                BadInput(format!(
                    "unknown scenario '{name}' (known: {})",
                    names.join(", ")
                ))
            })
    }

    /// The active finding of `scenario`'s system that `v` is, if any.
    pub fn finding_for(&self, scenario: &str, v: &sim::Violation) -> Option<&'static Finding> {
        self.finding_without(scenario, &[], v)
    }

    /// The active finding that `v`, seen in a run of `spec`, is: as [`Registry::finding_for`],
    /// but never one whose fix the run has on. That fix removes the finding, so a violation
    /// with it on is something else, even when it looks the same.
    pub fn finding_in(&self, spec: &RunSpec, v: &sim::Violation) -> Option<&'static Finding> {
        self.finding_without(spec.scenario.name, &spec.fixes, v)
    }

    fn finding_without(
        &self,
        scenario: &str,
        fixes: &[String],
        v: &sim::Violation,
    ) -> Option<&'static Finding> {
        let system = self.scenarios.iter().find(|s| s.name == scenario)?.system;
        let fixed = |f: &Finding| f.fix.is_some_and(|x| fixes.iter().any(|on| on == x));
        self.systems
            .iter()
            .filter(|s| s.name == system)
            .flat_map(|s| s.findings.iter())
            .find(|f| f.is_active() && !fixed(f) && f.signature.matches(v))
    }

    /// Reads a system event of any of its systems from a trace's JSON.
    pub fn decode_event(&self, v: &serde_json::Value) -> Option<sim::Event> {
        self.systems.iter().find_map(|s| (s.decode_event)(v))
    }

    /// Looks a switch up by name and kind.
    pub fn switch(&self, name: &str, kind: SwitchKind) -> Option<&'static Switch> {
        self.switches().find(|s| s.name == name && s.kind == kind)
    }

    /// A switch `--bug` accepts by name: a bug or a mutant.
    pub fn bug_or_mutant(&self, name: &str) -> Option<&'static Switch> {
        self.switch(name, SwitchKind::Bug)
            .or_else(|| self.switch(name, SwitchKind::Mutant))
    }
}
