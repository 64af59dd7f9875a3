//! `TestCheckMasterProcess`: `_check_master_process`, driven through `_vote` on the election key.

use super::*;
use sim::etcd::{EtcdError, StoreError};

/// `test_same_host_live_pid_does_nothing` (test_election.py line 314): the key names a live process
/// of this host: no delete, no restart; `_vote` goes on to watch the key. (Upstream mocks
/// `os.path.exists` and asserts it was asked about `/proc/12345`; here the pid is a process really
/// alive on the host.)
#[test]
fn upstream_election_same_host_live_pid_does_nothing() {
    let run = run_elector(Setup {
        key: KEY,
        old_key: None,
        timing: UPSTREAM,
        script: Box::new(|ids| vec![found(KEY, &format!("{HOST}:{}", ids.live_pid), 10)]),
        ending: Ending::StopWhenExhausted(txn(false)),
    });
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![get(KEY), watch(KEY, 11), cas_delete(KEY, id)]
    );
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_same_host_dead_pid_deletes_then_returns` (test_election.py line 323): the key names a dead
/// process of this host: the check deletes it guarded by the value it read
/// (`m_delete.assert_called_once_with(KEY, existing_value="this-host:99999")`) and returns. Beyond
/// upstream (which calls the method alone): what its comment promises next, the watch sees the
/// delete and the elector campaigns through the normal path; and two more values the regex of
/// election.py line 233 parses as a dead pid of this host: a pid above any real one (`int()` has no
/// bound, `/proc/99999999999` does not exist) and a value ending in a newline (`$` matches before a
/// final newline).
#[test]
fn upstream_election_same_host_dead_pid_deletes_then_returns() {
    let stale = format!("{HOST}:{DEAD_PID}");
    let run = run_elector(check(
        stale.clone(),
        vec![
            txn(true),
            delete_event(KEY, 11, &stale),
            granted(15),
            txn(true),
            Answer::KeepAlive(Ok(15)),
        ],
        Ending::StopWhenExhausted(txn(true)),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(KEY),
            cas_delete(KEY, &stale),
            watch(KEY, 11),
            grant(),
            campaign(KEY, id),
            keep_alive(),
            refresh(KEY, id), // the script runs out here
            cas_delete(KEY, id),
        ]
    );
    assert_eq!(
        run.events(),
        vec![
            format!("dead-pid-cleanup {stale}").as_str(),
            "campaign",
            "stamp>0",
            "won lease=100000",
            "stamp=0",
            "step-down deleted=true",
        ]
    );

    for stale in [
        format!("{HOST}:99999999999"),
        format!("{HOST}:{DEAD_PID}\n"),
    ] {
        let run = run_elector(check(
            stale.clone(),
            vec![txn(true)],
            Ending::StopWhenExhausted(txn(false)),
        ));
        run.assert_wait_and_stop();
        let id = &run.ids.id;
        assert_eq!(
            run.calls(),
            vec![
                get(KEY),
                cas_delete(KEY, &stale),
                watch(KEY, 11),
                cas_delete(KEY, id)
            ],
            "{stale:?}"
        );
        assert_eq!(
            run.events(),
            vec![
                format!("dead-pid-cleanup {stale}"),
                "step-down deleted=false".into()
            ],
            "{stale:?}"
        );
    }
}

/// `test_same_host_dead_pid_cas_fail_raises` (test_election.py line 335): the guarded delete finds
/// another value (somebody moved the election on): `RestartElection`, so no watch; `_run` sleeps
/// 1-2 s and `_vote` reads the key again.
#[test]
fn upstream_election_same_host_dead_pid_cas_fail_raises() {
    let stale = format!("{HOST}:{DEAD_PID}");
    let run = run_elector(check(
        stale.clone(),
        vec![txn(false)],
        Ending::StopWhenExhausted(txn(false)),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(KEY),
            cas_delete(KEY, &stale),
            get(KEY), // the script runs out here
            cas_delete(KEY, id),
        ]
    );
    assert_retry_sleeps(&run);
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_same_host_dead_pid_etcd_exception_raises` (test_election.py line 344): the guarded delete
/// fails with an etcd exception (`ConnectionFailedError`): logged, `RestartElection`, as for a
/// failed compare. Beyond upstream: the other etcd exceptions (a timeout, an error etcd answered)
/// do the same.
#[test]
fn upstream_election_same_host_dead_pid_etcd_exception_raises() {
    let stale = format!("{HOST}:{DEAD_PID}");
    for e in [
        EtcdError::Unavailable,
        EtcdError::Timeout,
        store_err(StoreError::FutureRevision),
    ] {
        let run = run_elector(check(
            stale.clone(),
            vec![Answer::Txn(Err(e.clone()))],
            Ending::StopWhenExhausted(txn(false)),
        ));
        run.assert_wait_and_stop();
        let id = &run.ids.id;
        assert_eq!(
            run.calls(),
            vec![
                get(KEY),
                cas_delete(KEY, &stale),
                get(KEY),
                cas_delete(KEY, id)
            ],
            "{e:?}"
        );
        assert_retry_sleeps(&run);
        assert_eq!(run.events(), vec!["step-down deleted=false"], "{e:?}");
        assert_eq!(run.exit, None, "{e:?}");
    }
}

/// `test_different_host_does_nothing` (test_election.py line 353): the key names a process of
/// another host: no `/proc` check, no delete; `_vote` goes on to watch the key.
#[test]
fn upstream_election_different_host_does_nothing() {
    let run = run_elector(check(
        "other-host:12345".into(),
        vec![],
        Ending::StopWhenExhausted(txn(false)),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![get(KEY), watch(KEY, 11), cas_delete(KEY, id)]
    );
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_unparseable_value_does_nothing` (test_election.py line 363): a value that does not match
/// `^(?P<host>[^:]+):(?P<pid>\d+)$` (election.py line 233) is left alone: no `/proc` check, no
/// delete; `_vote` goes on to watch. Upstream also asserts one warning ("Unable to parse master
/// ID"), which the model does not log. Beyond upstream's "not-a-valid-id": values that come close
/// to the pattern and name this host with a pid that is not alive, so a lax parse would delete
/// them (a sign, an empty pid or host, a second colon, a non-digit, two final newlines).
#[test]
fn upstream_election_unparseable_value_does_nothing() {
    for value in [
        "not-a-valid-id".to_string(),
        format!("{HOST}:+{DEAD_PID}"),
        format!("{HOST}:"),
        format!(":{DEAD_PID}"),
        format!("{HOST}:{DEAD_PID}:1"),
        format!("{HOST}:{DEAD_PID}a"),
        format!("{HOST}:{DEAD_PID}\n\n"),
    ] {
        let run = run_elector(check(
            value.clone(),
            vec![],
            Ending::StopWhenExhausted(txn(false)),
        ));
        run.assert_wait_and_stop();
        let id = &run.ids.id;
        assert_eq!(
            run.calls(),
            vec![get(KEY), watch(KEY, 11), cas_delete(KEY, id)],
            "{value:?}"
        );
        assert_eq!(run.events(), vec!["step-down deleted=false"], "{value:?}");
    }
}
