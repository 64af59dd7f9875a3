//! A finding's realism class agrees with the faults it was shown with: a finding whose shortest
//! replay (docs/findings/<id>.replay.json) keeps a fault that `faultline faults` marks
//! hypothetical needs that fault, so its realism is `hypothetical-fault`; and the other way round,
//! a finding judged `hypothetical-fault` has a shortest replay that keeps such a fault.

use scenarios::builtin;
use scenarios::faults::{rows, FaultRow};
use scenarios::findings::Realism;
use sim::{Fault, FaultKind};

/// Whether `fault`, scheduled in a run of `system`, is hypothetical: a silent death of a task
/// that no fault choice of the system with a known cause kills (`death-<task>`). Every other
/// kind has a known cause (checked below), so it is never hypothetical.
fn is_hypothetical(catalog: &[FaultRow], system: &str, fault: &Fault) -> bool {
    let FaultKind::TaskDeath { task, .. } = &fault.kind else {
        return false;
    };
    !catalog.iter().any(|r| {
        r.system == system
            && !r.hypothetical
            && r.kinds == ["task-death"]
            && r.name.strip_prefix("death-") == Some(task.as_str())
    })
}

#[test]
fn a_finding_is_hypothetical_exactly_when_its_replay_needs_a_hypothetical_fault() {
    let reg = builtin();
    let catalog = rows(reg);
    // The rule above reads only silent deaths: every hypothetical fault choice is one.
    for r in catalog.iter().filter(|r| r.hypothetical) {
        assert_eq!(
            r.kinds,
            ["task-death"],
            "{} {}: a hypothetical fault that is not a task death; extend is_hypothetical",
            r.system,
            r.name
        );
    }
    let mut checked = 0;
    for f in reg.findings().filter(|f| f.is_active()) {
        let Some(replay) = scenarios::finding_report::replay(f) else {
            continue;
        };
        checked += 1;
        let hypothetical: Vec<String> = replay
            .schedule
            .iter()
            .filter(|x| is_hypothetical(&catalog, f.system, x))
            .map(|x| x.kind.describe())
            .collect();
        if hypothetical.is_empty() {
            assert_ne!(
                f.realism,
                Some(Realism::HypotheticalFault),
                "{}: judged hypothetical, but its shortest replay keeps no hypothetical fault",
                f.id
            );
        } else {
            assert_eq!(
                f.realism,
                Some(Realism::HypotheticalFault),
                "{}: its shortest replay needs {hypothetical:?}, which no upstream path produces",
                f.id
            );
        }
    }
    assert!(checked > 0, "no finding has a recorded replay");
}

/// The rule recognises the silent deaths the catalog judges (a Calico elector's death is
/// hypothetical; a fault that is not a death never is).
#[test]
fn the_rule_reads_the_catalog() {
    let catalog = rows(builtin());
    let death = |task: &str| Fault {
        at_ms: 0,
        dur_ms: 0,
        kind: FaultKind::TaskDeath {
            node: "h1".into(),
            task: task.into(),
        },
    };
    assert!(is_hypothetical(&catalog, "calico", &death("elector")));
    assert!(is_hypothetical(&catalog, "cilium", &death("status-writer")));
    let pause = Fault {
        at_ms: 0,
        dur_ms: 1_000,
        kind: FaultKind::Pause { node: "h1".into() },
    };
    assert!(!is_hypothetical(&catalog, "calico", &pause));
}
