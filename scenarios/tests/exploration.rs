//! Exploration power: shrinking keeps the invariant, never grows the schedule and is deterministic;
//! swarm options are reproducible from the seed; the coverage gate rejects an unreachable point;
//! proptest-generated schedules against the fixed model (failures print a replay command).

mod common;
#[path = "support/strategies.rs"]
mod strategies;
use common::sweep;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use scenarios::calico::{self, Family};
use scenarios::explore::{coverage_gate, unreached_coverage, ReplayFile};
use scenarios::shrink::{shrink, FailureSignature};
use scenarios::system::{Registry, ScenarioDef, System};
use scenarios::{builtin, scenario};
use scenarios::{run_spec, RunSpec};

#[test]
fn shrinking_keeps_the_invariant_never_grows_and_is_deterministic() {
    let cases = [
        ("calico-silent-task-death", "calico-local-master-flag"),
        ("calico-restart", "calico-no-step-down-on-stop"),
    ];
    for (name, bug) in cases {
        let sc = scenario(name).unwrap();
        let s = sweep(sc, 0, 2_000, &[bug], &[], false);
        let f = &s.failures[0];
        let inv = &f.outcome.violation.as_ref().unwrap().invariant;
        let a = shrink(builtin(), &f.spec, &f.outcome, 2);
        let b = shrink(builtin(), &f.spec, &f.outcome, 1);
        assert_eq!(&a.outcome.violation.as_ref().unwrap().invariant, inv);
        assert!(
            a.after_faults <= a.before_faults && a.after_faults <= 5,
            "{bug}: {} -> {}",
            a.before_faults,
            a.after_faults
        );
        // Same result on a different number of threads, and again from the shrunk spec's own file.
        assert_eq!(
            a.spec.schedule, b.spec.schedule,
            "{bug}: shrinking is not deterministic"
        );
        assert_eq!(a.spec.options, b.spec.options);
        assert_eq!(a.outcome.trace_hash, b.outcome.trace_hash);
        let again = run_spec(a.spec.clone());
        assert_eq!(again.trace_hash, a.outcome.trace_hash);
        // The shrunk replay file round-trips.
        let path = std::env::temp_dir().join(format!(
            "faultline-shrunk-{bug}-{}.json",
            std::process::id()
        ));
        ReplayFile::new(&a.spec, &a.outcome)
            .unwrap()
            .write(&path)
            .unwrap();
        let r = ReplayFile::load(&path).unwrap();
        assert_eq!(
            run_spec(r.spec(builtin()).unwrap()).trace_hash,
            a.outcome.trace_hash
        );
        let _ = std::fs::remove_file(path);
    }
}

/// Shrinking keeps the finding it started from, not only its invariant. The pinned seed of
/// calico-port-status-late-write (a master's write held up by a partition) breaks
/// port-status-converges, as calico-port-status-stale-write does; a shrink that kept only the
/// invariant drifted to two faults showing the stale write instead (an etcd outage and garbled
/// replies, no partition), so that finding had no shrunk replay of its own.
#[test]
fn shrinking_keeps_the_finding_not_only_the_invariant() {
    let reg = builtin();
    let f = reg
        .findings()
        .find(|f| f.id == "calico-port-status-late-write")
        .unwrap();
    let spec = RunSpec::from_seed(scenario(f.scenario).unwrap(), f.seeds[0], &[], &[]);
    let outcome = run_spec(spec.clone());
    let before = FailureSignature::of(reg, &spec, &outcome).expect("the pinned seed fails");
    assert_eq!(before.finding, Some(f.id), "{before:?}");
    let s = shrink(reg, &spec, &outcome, 2);
    assert!(s.after_faults < s.before_faults, "nothing shrunk");
    let v = s.outcome.violation.as_ref().unwrap();
    assert!(f.signature.matches(v), "drifted: {}", v.explanation);
    assert_eq!(FailureSignature::of(reg, &s.spec, &s.outcome), Some(before));
}

#[test]
fn swarm_options_are_reproducible_from_the_seed() {
    for sc in builtin().scenarios() {
        let a = sc.draw(77);
        let b = sc.draw(77);
        assert_eq!(a, b, "{}", sc.name);
        let others: Vec<_> = (0..8).map(|s| sc.draw(s).0).collect();
        let mut distinct = others.clone();
        distinct.dedup();
        assert!(
            distinct.len() > 4,
            "{}: options should vary with the seed",
            sc.name
        );
    }
}

/// Calico with one scenario, calico-restart plus a coverage point no run can reach (tests the
/// gate): a system of its own, registered only here.
struct Impossible;

impl System for Impossible {
    const NAME: &'static str = "calico";
    const ABOUT: &'static str = "calico-restart with an unreachable coverage point";
    const FAULT_WINDOW_MS: u64 = calico::FAULT_WINDOW_MS;
    type Options = calico::CalicoOptions;
    type Family = Family;

    fn scenarios() -> Vec<ScenarioDef<Family>> {
        vec![ScenarioDef {
            name: "test-impossible-coverage",
            about: "calico-restart with a coverage point no run can reach (tests the gate)",
            ci_seeds: 20,
            coverage: &["handover", "a-point-nothing-emits"],
            family: Family::Restart,
        }]
    }

    fn invariants() -> &'static [scenarios::invariant::Invariant] {
        calico::invariants::INVARIANTS
    }

    fn draw(family: Family, seed: u64) -> (calico::CalicoOptions, sim::Schedule) {
        calico::draw(family, seed)
    }

    fn node_names(o: &calico::CalicoOptions) -> Vec<String> {
        o.node_names()
    }

    fn run(
        family: Family,
        spec: &RunSpec,
        o: &calico::CalicoOptions,
        coverage: &'static [&'static str],
    ) -> sim::Outcome {
        calico::run(family, spec, o, coverage)
    }
}

#[test]
fn an_unreachable_coverage_point_fails_the_gate() {
    let reg = Registry::new().with::<Impossible>().leak();
    let impossible = reg.scenario("test-impossible-coverage").unwrap();
    let s = sweep(impossible, 0, impossible.ci_seeds, &[], &[], true);
    assert_eq!(coverage_gate(&s), vec!["a-point-nothing-emits"]);
    // As an oracle, it counts only once the exploration ran the scenario's CI budget.
    assert_eq!(
        unreached_coverage(impossible, &s),
        vec!["a-point-nothing-emits"]
    );
    let short = sweep(impossible, 0, impossible.ci_seeds - 1, &[], &[], true);
    assert!(unreached_coverage(impossible, &short).is_empty());
    // And a reachable catalog passes it.
    let ok = sweep(scenario("calico-restart").unwrap(), 0, 60, &[], &[], true);
    assert!(coverage_gate(&ok).is_empty(), "{:?}", ok.coverage);
}

/// proptest searches schedules (with its own shrinking) against the model with every fix: no
/// invariant may fail. The RNG seed is fixed so CI is reproducible; regressions are persisted in
/// `proptest-regressions/`. A failure prints the `faultline replay` command of a written file.
#[test]
fn generated_schedules_against_the_fixed_model() {
    let fixes: Vec<String> = [
        "calico-watchdog",
        "calico-monotonic-stamp",
        "calico-canceller-catches-all",
        "calico-port-status-recheck",
    ]
    .map(String::from)
    .to_vec();
    for (name, family, cases) in [
        ("calico-split-brain", Family::SplitBrain, 24),
        ("calico-status-backlog", Family::StatusBacklog, 8),
    ] {
        let sc = scenario(name).unwrap();
        let (drawn, _) = sc.draw(5);
        let opts: &calico::CalicoOptions = drawn.get().expect("calico options");
        let persist = FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/exploration.txt"
        ));
        let config = Config {
            cases,
            rng_seed: RngSeed::Fixed(0xfa17),
            failure_persistence: Some(Box::new(persist)),
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let fixes = fixes.clone();
        let result = runner.run(&strategies::schedule(family, opts, 8), |schedule| {
            let spec = RunSpec {
                schedule,
                ..RunSpec::from_seed(sc, 5, &[], &fixes)
            };
            let out = run_spec(spec.clone());
            if let Some(v) = &out.violation {
                let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target/faultline-failures");
                let _ = std::fs::create_dir_all(&dir);
                let path = dir.join(format!("proptest-{name}-{}.json", out.trace_hash));
                ReplayFile::new(&spec, &out).unwrap().write(&path).unwrap();
                return Err(TestCaseError::fail(format!(
                    "{}: {}\n  replay: cargo run --release --bin faultline -- replay {}",
                    v.invariant,
                    v.explanation,
                    path.display()
                )));
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
    }
}
