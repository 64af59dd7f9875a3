//! Metallb as the harness sees it: one [`System`] implementation.

use super::{Family, MetallbOptions, FAULT_WINDOW_MS};
use crate::scenario::{RunSpec, Switch};
use crate::system::{ScenarioDef, System};
use sim::{Outcome, Schedule};

/// MetalLB layer 2: memberlist membership, the rejoin loop and the announcer choice.
pub struct Metallb;

impl System for Metallb {
    const NAME: &'static str = "metallb";
    const ABOUT: &'static str =
        "MetalLB layer 2: memberlist membership, the rejoin loop and the announcer choice";
    const FAULT_WINDOW_MS: u64 = FAULT_WINDOW_MS;
    type Options = MetallbOptions;
    type Family = Family;

    fn scenarios() -> Vec<ScenarioDef<Family>> {
        vec![
            ScenarioDef {
                name: "metallb-silent-task-death",
                about: "MetalLB speakers when the join loop or the IP cache refresh dies silently or stalls, with speaker crashes and partitions",
                ci_seeds: 300,
                coverage: &["join-loop-died", "partition-outlived-retention", "duplicate-announcer-resolved", "announcer-taken-over"],
                family: Family::SilentTaskDeath,
            },
            ScenarioDef {
                name: "metallb-clock-skew",
                about: "MetalLB speakers with skewed, drifting and stepped wall clocks, paused nodes and latency spikes",
                ci_seeds: 300,
                coverage: &["node-not-ready"],
                family: Family::ClockSkew,
            },
            ScenarioDef {
                name: "metallb-split-brain",
                about: "MetalLB speakers under complete, partial and simplex partitions of 3 to 7 speakers, with and without an API server outage",
                ci_seeds: 300,
                coverage: &["partition-outlived-retention", "rejoin-while-apiserver-down", "duplicate-announcer-resolved"],
                family: Family::SplitBrain,
            },
            ScenarioDef {
                name: "metallb-swarm",
                about: "Every MetalLB fault together: task deaths, clocks, pauses, partitions, API server outages, crashes and graceful restarts; some seeds delete Services (and create them again)",
                ci_seeds: 300,
                coverage: &["partition-outlived-retention", "rejoin-while-apiserver-down", "duplicate-announcer-resolved", "node-not-ready", "announcer-taken-over", "service-deleted"],
                family: Family::Swarm,
            },
        ]
    }

    fn invariants() -> &'static [crate::invariant::Invariant] {
        super::invariants::INVARIANTS
    }

    fn findings() -> &'static [crate::findings::Finding] {
        super::findings::FINDINGS
    }

    fn switches() -> &'static [Switch] {
        super::switches::SWITCHES
    }

    fn draw(family: Family, seed: u64) -> (MetallbOptions, Schedule) {
        super::draw(family, seed)
    }

    fn draw_in(
        family: Family,
        seed: u64,
        profile: crate::faults::Profile,
    ) -> (MetallbOptions, Schedule) {
        super::draw_in(family, seed, profile)
    }

    fn faults() -> Vec<crate::faults::FaultRow> {
        use strum::IntoEnumIterator;
        super::fault_choice::FaultChoice::iter()
            .map(|c| crate::faults::choice_row(Self::NAME, c.name(), c.facts()))
            .collect()
    }

    fn node_names(o: &MetallbOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(
        family: Family,
        spec: &RunSpec,
        options: &MetallbOptions,
        coverage: &'static [&'static str],
    ) -> Outcome {
        super::run(family, spec, options, coverage)
    }

    fn with_nodes(o: &MetallbOptions, nodes: u32) -> Option<MetallbOptions> {
        Some(o.with_speakers(nodes))
    }

    fn decode_event(v: &serde_json::Value) -> Option<sim::Event> {
        sim::event::decode::<model::metallb::MetallbEvent>(v)
    }

    fn lens() -> Box<dyn reports::ReportLens> {
        Box::new(super::report::MetallbLens::default())
    }
}
