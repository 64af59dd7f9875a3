//! Every bug switch is found by exploring its scenario from fixed starting seeds within 2,000 seeds,
//! with every fix of its system on (so that a failure is the bug's, not a finding's), and its
//! failure file replays exactly (same invariant, event index and trace hash).

mod common;
use common::{all_fixes, sweep};
use scenarios::explore::ReplayFile;
use scenarios::scenario::SwitchKind;
use scenarios::{builtin, run_spec, scenario};

const STARTS: [u64; 3] = [0, 10_000, 1_000_000];

#[test]
fn every_bug_switch_is_found_and_replays_exactly() {
    let dir = std::env::temp_dir().join(format!("faultline-bugs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for sw in builtin().switches().filter(|s| s.kind == SwitchKind::Bug) {
        let sc = scenario(sw.scenario).unwrap();
        for from in STARTS {
            let s = sweep(sc, from, 2_000, &[sw.name], &all_fixes(sc.system), false);
            let f = s.failures.first().unwrap_or_else(|| {
                panic!(
                    "{} not found by {} in 2000 seeds from {from}",
                    sw.name, sc.name
                )
            });
            // Write, read back and replay the failure file.
            let path = dir.join(format!("{}-{from}.json", sw.name));
            ReplayFile::new(&f.spec, &f.outcome)
                .unwrap()
                .write(&path)
                .unwrap();
            let r = ReplayFile::load(&path).unwrap();
            let again = run_spec(r.spec(builtin()).unwrap());
            let (v1, v2) = (
                f.outcome.violation.as_ref().unwrap(),
                again
                    .violation
                    .as_ref()
                    .expect("replay reproduces a violation"),
            );
            assert_eq!(
                (&v1.invariant, v1.event_index),
                (&v2.invariant, v2.event_index),
                "{}",
                f.spec.command()
            );
            assert_eq!(
                f.outcome.trace_hash,
                again.trace_hash,
                "{}",
                f.spec.command()
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn split_brain_under_the_local_master_flag_is_explained() {
    let sc = scenario("calico-silent-task-death").unwrap();
    let s = sweep(
        sc,
        0,
        2_000,
        &["calico-local-master-flag"],
        &all_fixes("calico"),
        false,
    );
    let v = s.failures[0].outcome.violation.as_ref().unwrap();
    // The flag never ages: the host goes on believing after its stamp's true age passed
    // MASTER_TIMEOUT, while another host holds the key (before the 125 s legitimacy bound).
    assert_eq!(v.invariant, "master-only-work-on-fresh-stamp");
    assert!(
        v.explanation.contains("old in true time")
            && v.explanation
                .contains("was master (it holds the election key since"),
        "{}",
        v.explanation
    );
}
