//! Calico as the harness sees it: one [`System`] implementation.

use super::{CalicoOptions, Family, FAULT_WINDOW_MS};
use crate::findings::Finding;
use crate::scenario::{RunSpec, Switch};
use crate::system::{ScenarioDef, System};
use sim::{Outcome, Schedule};

/// Calico's OpenStack driver (networking-calico): the etcd-lease elector, the mastership stamp, master-only workers, status watchers and port-status writers.
pub struct Calico;

impl System for Calico {
    const NAME: &'static str = "calico";
    const ABOUT: &'static str = "Calico's OpenStack driver (networking-calico): the etcd-lease elector, the mastership stamp, master-only workers, status watchers and port-status writers";
    const FAULT_WINDOW_MS: u64 = FAULT_WINDOW_MS;
    type Options = CalicoOptions;
    type Family = Family;

    fn scenarios() -> Vec<ScenarioDef<Family>> {
        vec![
            ScenarioDef {
                name: "calico-silent-task-death",
                about: "Calico election under silent deaths and stalls of the elector, compaction and status-watcher tasks",
                ci_seeds: 300,
                coverage: &["elector-died-while-master", "handover", "stale-stamp-observed", "election-lease-expired"],
                family: Family::SilentTaskDeath,
            },
            ScenarioDef {
                name: "calico-clock-skew",
                about: "Calico election with skewed, drifting and stepped wall clocks on the hosts and etcd, plus elector stalls",
                ci_seeds: 300,
                coverage: &["backward-step-on-master", "stale-stamp-observed", "handover"],
                family: Family::ClockSkew,
            },
            ScenarioDef {
                name: "calico-split-brain",
                about: "Calico election under partitions, pauses, latency and etcd unavailability, ambiguity and slowness",
                ci_seeds: 300,
                coverage: &["master-paused", "master-cut-from-etcd", "two-hosts-acting-as-master", "etcd-ambiguous-applied", "etcd-ambiguous-lost", "handover"],
                family: Family::SplitBrain,
            },
            ScenarioDef {
                name: "calico-restart",
                about: "Calico election across graceful restarts, manager crashes, host reboots, etcd restarts and garbled replies",
                ci_seeds: 300,
                coverage: &["graceful-step-down", "dead-pid-cleanup", "elector-exit-on-unexpected-error", "handover"],
                family: Family::Restart,
            },
            ScenarioDef {
                name: "calico-status-backlog",
                about: "Calico status watchers under a slow Neutron DB, snapshot replays, every timestamp format, skewed and rebooting hosts",
                ci_seeds: 300,
                coverage: &["warning-on-young-host", "naive-timestamp-processed", "snapshot-replayed", "unparsable-time-skipped", "compaction-under-mastership-change"],
                family: Family::StatusBacklog,
            },
            ScenarioDef {
                name: "calico-watchdog",
                about: "Calico's mutual watchdog (PR 12456) under silent deaths of every worker task, with the one-shot startup resync",
                ci_seeds: 300,
                coverage: &["watchdog-restart", "oneshot-resync-finished", "handover"],
                family: Family::Watchdog,
            },
            ScenarioDef {
                name: "calico-swarm",
                about: "Every Calico fault together: tasks, clocks, partitions, pauses, restarts, etcd and Neutron faults",
                ci_seeds: 300,
                coverage: &["handover", "two-hosts-acting-as-master", "snapshot-replayed", "stale-stamp-observed", "watchdog-restart"],
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

    fn draw(family: Family, seed: u64) -> (CalicoOptions, Schedule) {
        super::draw(family, seed)
    }

    fn draw_in(
        family: Family,
        seed: u64,
        profile: crate::faults::Profile,
    ) -> (CalicoOptions, Schedule) {
        super::draw_in(family, seed, profile)
    }

    fn faults() -> Vec<crate::faults::FaultRow> {
        use strum::IntoEnumIterator;
        super::fault_choice::FaultChoice::iter()
            .map(|c| crate::faults::choice_row(Self::NAME, c.name(), c.facts()))
            .collect()
    }

    fn node_names(o: &CalicoOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(
        family: Family,
        spec: &RunSpec,
        options: &CalicoOptions,
        coverage: &'static [&'static str],
    ) -> Outcome {
        super::run(family, spec, options, coverage)
    }

    fn smaller_options(o: &CalicoOptions, schedule: &Schedule) -> Vec<CalicoOptions> {
        super::smaller_options(o, schedule)
    }

    fn with_nodes(o: &CalicoOptions, nodes: u32) -> Option<CalicoOptions> {
        Some(o.with_hosts(nodes))
    }

    fn decode_event(v: &serde_json::Value) -> Option<sim::Event> {
        sim::event::decode::<model::calico::CalicoEvent>(v)
    }

    fn lens() -> Box<dyn reports::ReportLens> {
        Box::new(super::report::CalicoLens::default())
    }
}
