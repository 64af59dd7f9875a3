//! Code paths without an upstream test: an exception that is not an `Etcd3Exception` ends the
//! elector.

use super::*;
use sim::etcd::EtcdError;

/// No upstream test: a read failing with an exception that is not an `Etcd3Exception` escapes
/// `_vote`; `_run`'s `except BaseException` (election.py lines 138-147) calls `sys.exit(1)` and its
/// `finally` steps down (lines 150-151, 370-377). The model: the crash event, the step-down (stamp
/// cleared, guarded delete), then the process exits with 1, and no retry.
#[test]
fn upstream_election_unexpected_read_error_exits() {
    let run = run_elector(Setup {
        key: BLOOP,
        old_key: None,
        timing: UPSTREAM,
        script: Box::new(|_| vec![get_err(EtcdError::Garbled), txn(false)]),
        ending: Ending::Exit,
    });
    assert!(run.exhausted, "{run:#?}");
    assert_eq!(run.failure, None);
    assert!(!run.master_after);
    let id = &run.ids.id;
    assert_eq!(run.calls(), vec![get(BLOOP), cas_delete(BLOOP, id)]);
    assert_eq!(
        run.events(),
        vec!["crash Garbled", "step-down deleted=false", "exit 1"]
    );
    assert_eq!(run.exit, Some(sim::event::ExitStatus::Code { code: 1 }));
}

/// No upstream test: `_check_master_process` catches only `Etcd3Exception` around its delete
/// (election.py lines 250-254), so an exception that is not one escapes `_vote` and ends the
/// elector as in `upstream_election_unexpected_read_error_exits` (lines 138-151), where an etcd
/// exception restarts the election (`upstream_election_same_host_dead_pid_etcd_exception_raises`).
/// The model used to treat it as "not deleted" and restart; it now follows upstream.
#[test]
fn upstream_election_check_master_process_unexpected_error_exits() {
    let stale = format!("{HOST}:{DEAD_PID}");
    let run = run_elector(check(
        stale.clone(),
        vec![Answer::Txn(Err(EtcdError::Garbled)), txn(false)],
        Ending::Exit,
    ));
    assert!(run.exhausted, "{run:#?}");
    assert_eq!(run.failure, None);
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![get(KEY), cas_delete(KEY, &stale), cas_delete(KEY, id)]
    );
    assert_eq!(
        run.events(),
        vec!["crash Garbled", "step-down deleted=false", "exit 1"]
    );
    assert_eq!(run.exit, Some(sim::event::ExitStatus::Code { code: 1 }));
}
