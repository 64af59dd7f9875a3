//! Cilium as the harness sees it: one [`System`] implementation.

use super::{CiliumOptions, Family, FAULT_WINDOW_MS};
use crate::findings::Finding;
use crate::scenario::{RunSpec, Switch};
use crate::system::{ScenarioDef, System};
use sim::{Outcome, Schedule};

/// Cilium ENI IPAM: cilium-operator's Lease election and the operator/agent release handshake for excess IPs.
pub struct Cilium;

impl System for Cilium {
    const NAME: &'static str = "cilium";
    const ABOUT: &'static str = "Cilium ENI IPAM: cilium-operator's Lease election and the operator/agent release handshake for excess IPs";
    const FAULT_WINDOW_MS: u64 = FAULT_WINDOW_MS;
    type Options = CiliumOptions;
    type Family = Family;

    fn scenarios() -> Vec<ScenarioDef<Family>> {
        vec![
            ScenarioDef {
                name: "cilium-silent-task-death",
                about: "Cilium IPAM when the agent's status writer or the operator's maintenance dies silently, stalls or restarts",
                ci_seeds: 200,
                coverage: &["ip-released", "conflict-on-write", "ack-raced-with-allocation"],
                family: Family::SilentTaskDeath,
            },
            ScenarioDef {
                name: "cilium-clock-skew",
                about: "Cilium IPAM with the operators' and agents' wall clocks skewed, drifting and stepped, and operators' monotonic clocks running fast or slow",
                ci_seeds: 200,
                coverage: &["ip-released", "conflict-on-write"],
                family: Family::ClockSkew,
            },
            ScenarioDef {
                name: "cilium-split-brain",
                about: "Cilium IPAM under partitions between agents, the API server, the operators and the cloud, paused operators, slow answers to an operator and operator clocks running fast or slow",
                ci_seeds: 200,
                coverage: &["ip-released", "conflict-on-write", "ack-raced-with-allocation"],
                family: Family::SplitBrain,
            },
            ScenarioDef {
                name: "cilium-swarm",
                about: "Every Cilium fault together, including cloud and API server failures, ambiguity and slowness",
                ci_seeds: 200,
                coverage: &["ip-released", "conflict-on-write", "ack-raced-with-allocation", "operator-restart-mid-handshake", "ambiguous-unassign", "max-allocate-capped"],
                family: Family::Swarm,
            },
        ]
    }

    fn invariants() -> &'static [crate::invariant::Invariant] {
        super::invariants::INVARIANTS
    }

    fn switches() -> &'static [Switch] {
        super::switches::SWITCHES
    }

    fn findings() -> &'static [Finding] {
        super::findings::FINDINGS
    }

    fn draw(family: Family, seed: u64) -> (CiliumOptions, Schedule) {
        super::draw(family, seed)
    }

    fn draw_in(
        family: Family,
        seed: u64,
        profile: crate::faults::Profile,
    ) -> (CiliumOptions, Schedule) {
        super::draw_in(family, seed, profile)
    }

    fn faults() -> Vec<crate::faults::FaultRow> {
        use strum::IntoEnumIterator;
        super::fault_choice::FaultChoice::iter()
            .map(|c| crate::faults::choice_row(Self::NAME, c.name(), c.facts()))
            .collect()
    }

    fn node_names(o: &CiliumOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(
        family: Family,
        spec: &RunSpec,
        options: &CiliumOptions,
        coverage: &'static [&'static str],
    ) -> Outcome {
        super::run(family, spec, options, coverage)
    }

    fn with_nodes(o: &CiliumOptions, nodes: u32) -> Option<CiliumOptions> {
        Some(o.with_nodes(nodes))
    }

    fn decode_event(v: &serde_json::Value) -> Option<sim::Event> {
        sim::event::decode::<model::cilium::CiliumEvent>(v)
    }

    fn lens() -> Box<dyn reports::ReportLens> {
        Box::new(super::report::CiliumLens::default())
    }
}
