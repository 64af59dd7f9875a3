//! Upstream networking-calico's elector unit tests, mirrored against the model's elector
//! (`model::calico::elector`, a model of upstream `election.py`).
//!
//! Upstream: projectcalico/calico at commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2, folder
//! `networking-calico/networking_calico/plugins/ml2/drivers/calico/`: the tests in
//! `test/test_election.py`, the code in `election.py`. Upstream's tests replace etcd with
//! `test/stub_etcd.py` (read at commit 0614562eb4e299c4c86cb4fec13fa94979ae2b6f): a queue of read
//! and write results; a call that finds the queue empty blocks, and `_wait_and_stop` (line 88)
//! then stops the elector and checks that no result was of the wrong type and that
//! `is_master.value` is 0. Here the elector runs in a one-node simulation
//! against a scripted [`ElectionStore`](model::calico::elector::ElectionStore)
//! (`election_support`): a queue of answers to the elector's etcd calls, every call recorded with
//! its arguments, its time and whether `is_master()` held, so each test asserts the exact calls,
//! the shared mastership stamp and the elector's events, not only that the script was used up.
//!
//! | Rust test | upstream test method (line in test_election.py) |
//! |---|---|
//! | `upstream_election_invalid` | `TestElection.test_invalid` (62) |
//! | `upstream_election_basic_election` | `TestElection.test_basic_election` (107) |
//! | `upstream_election_become_master_first_time` | `TestElection.test_become_master_first_time` (122) |
//! | `upstream_election_fail_to_maintain` | `TestElection.test_fail_to_maintain` (142) |
//! | `upstream_election_become_master_multiple_attempts` | `TestElection.test_become_master_multiple_attempts` (159) |
//! | `upstream_election_become_master_implausible` | `TestElection.test_become_master_implausible` (180) |
//! | `upstream_election_initial_read_exceptions` | `TestElection.test_initial_read_exceptions` (199) |
//! | `upstream_election_exception_detail_logging` | `TestElection.test_exception_detail_logging` (217) |
//! | `upstream_election_later_exceptions` | `TestElection.test_later_exceptions` (243) |
//! | `upstream_election_master_failure` | `TestElection.test_master_failure` (265) |
//! | `upstream_election_same_host_live_pid_does_nothing` | `TestCheckMasterProcess.test_same_host_live_pid_does_nothing` (314) |
//! | `upstream_election_same_host_dead_pid_deletes_then_returns` | `TestCheckMasterProcess.test_same_host_dead_pid_deletes_then_returns` (323) |
//! | `upstream_election_same_host_dead_pid_cas_fail_raises` | `TestCheckMasterProcess.test_same_host_dead_pid_cas_fail_raises` (335) |
//! | `upstream_election_same_host_dead_pid_etcd_exception_raises` | `TestCheckMasterProcess.test_same_host_dead_pid_etcd_exception_raises` (344) |
//! | `upstream_election_different_host_does_nothing` | `TestCheckMasterProcess.test_different_host_does_nothing` (353) |
//! | `upstream_election_unparseable_value_does_nothing` | `TestCheckMasterProcess.test_unparseable_value_does_nothing` (363) |
//! | `upstream_election_unexpected_read_error_exits` | none: `_run`'s `except BaseException` (election.py 138-151) |
//! | `upstream_election_check_master_process_unexpected_error_exits` | none: `_check_master_process`'s `except Etcd3Exception` (election.py 250-254) with 138-151 |
//!
//! How the upstream vocabulary maps onto the model's:
//! * `stub_etcd` answers reads and writes; the model's store answers the calls themselves: `get`
//!   (`etcdv3.get`; `KeyNotFound` is `Ok(None)`), `watch_once`, `grant` (`etcdv3.get_lease`, which
//!   the stub answers without using a result), `keep_alive` (`Lease.refresh`, a stub write),
//!   `txn` (a guarded `etcdv3.put` or `etcdv3.delete`, a stub write) and `put` (the old key's
//!   unguarded put, a stub write). The stub's step-down delete always fails (its `transaction`
//!   only knows puts) and is never asserted upstream; here it is scripted and asserted.
//! * etcd3gw's exceptions: `ConnectionFailedError` is `EtcdError::Unavailable` (refused, not
//!   applied); `ConnectionTimeoutError` and `WatchTimedOut` are `EtcdError::Timeout`; an error etcd
//!   itself answered (`Etcd3Exception` with a detail, `InternalServerError`,
//!   `PreconditionFailedError`) is `EtcdError::Store(_)`, with a `StoreError` variant standing in
//!   (the model's store has no authorisation, HTTP 500 or 412 errors; the elector treats every
//!   `Store` error alike, as upstream treats every `Etcd3Exception` alike). An exception that is
//!   not an `Etcd3Exception` is `EtcdError::Garbled`.
//! * `mock_is_master.value` is the shared stamp (`model::calico::master::Shared`), read through
//!   `is_master()` at every call and at the end; its writes are the `stamp>0` / `stamp=0` events.
//! * `eventlet.sleep` is not mocked: the retry sleep (1-2 s) and the refresh interval are
//!   simulated time, so the tests assert them from the call times.
//! * Upstream's tests use `interval=5, ttl=15` (so a 10 s watch timeout, a 15 s lease); so do these.
//!
//! No upstream case is wholly inexpressible. Those that cannot be expressed exactly (each test
//! says what differs):
//! * the warning text `test_exception_detail_logging` and `test_unparseable_value_does_nothing`
//!   assert: the model does not log; those tests assert the behaviour around the log instead;
//! * `etcdv3.watch_once` raising `KeyNotFound` (`test_become_master_implausible`): the model's
//!   watch has no such error (nor does etcd3gw's with a real etcd: upstream calls it
//!   "implausible"); the test drives the vanished key through the path etcd can take;
//! * an event with neither a delete type nor a value (`test_become_master_multiple_attempts`,
//!   action "something"): the model's events are PUT (always with a value) or DELETE; see there.
//! * `test_same_host_live_pid_does_nothing` asserts `os.path.exists("/proc/12345")` was called;
//!   the model's `/proc` check (`Proc::pid_alive`) cannot be observed, so the test uses a pid that
//!   is really alive on the host and asserts that nothing was deleted.
//!
//! Upstream's `TestCheckMasterProcess` calls `_check_master_process` directly; these tests drive
//! it through `_vote` (a `get` answering the value), which the model keeps private, and assert
//! what follows it: a returning check is followed by the watch, `RestartElection` by the retry
//! sleep and a new `get`.

mod election_support;

use election_support::*;
use model::calico::elector::{Elector, InvalidTiming, Timing};
use model::calico::master::Shared;
use model::calico::Switches;
use sim::etcd::{EtcdError, StoreError, Txn};
use std::rc::Rc;
use std::time::Duration;

/// `/bloop`, `TestElection`'s election key.
const BLOOP: &str = "/bloop";
/// `/legacy`, `test_become_master_first_time`'s old key.
const LEGACY: &str = "/legacy";
/// `TestCheckMasterProcess.KEY`.
const KEY: &str = "/calico/v2/no-region/neutron_election";
/// A pid no process on the host has (upstream's `99999`, with `os.path.exists` mocked false).
const DEAD_PID: u32 = 99999;

/// `interval=5, ttl=15`, as every upstream test that starts an elector.
const UPSTREAM: Timing = Timing {
    interval_s: 5,
    ttl_s: 15,
};
const SEC: u64 = 1_000_000;

// ---------------------------------------------------------------- expected calls

fn get(key: &str) -> Call {
    Call::Get { key: key.into() }
}

/// `watch_once(key, timeout=interval * 2, start_revision=start)`.
fn watch(key: &str, start_revision: i64) -> Call {
    Call::WatchOnce {
        key: key.into(),
        start_revision,
        timeout: Duration::from_secs(10),
    }
}

fn grant() -> Call {
    Call::Grant { ttl_s: 15 }
}

fn keep_alive() -> Call {
    Call::KeepAlive { lease: LEASE }
}

/// `_become_master`'s `put(key, id, lease=lease, mod_revision="0")`.
fn campaign(key: &str, id: &str) -> Call {
    Call::Txn(Txn::put_if_absent(key, id, LEASE))
}

/// The refresh's `put(key, id, lease=lease, existing_value=id)`.
fn refresh(key: &str, id: &str) -> Call {
    Call::Txn(Txn::put_if_value(key, id, LEASE, id))
}

/// `delete(key, existing_value=value)` (the dead-pid cleanup and `_attempt_step_down`).
fn cas_delete(key: &str, value: &str) -> Call {
    Call::Txn(Txn::delete_if_value(key, value))
}

/// `_write_old_key`'s `put(old_key, id, lease=lease)`.
fn old_key_put(id: &str) -> Call {
    Call::Put {
        key: LEGACY.into(),
        value: id.into(),
        lease: LEASE,
    }
}

fn get_err(e: EtcdError) -> Answer {
    Answer::Get(Err(e))
}

fn watch_err(e: EtcdError) -> Answer {
    Answer::WatchOnce(Err(e))
}

fn store_err(e: StoreError) -> EtcdError {
    EtcdError::Store(e)
}

/// Asserts that every `get` but the first comes one retry sleep (`1 + random.random()` seconds,
/// election.py line 132) after the call that ended the previous round.
fn assert_retry_sleeps(run: &Run) {
    for w in run.log.windows(2) {
        if matches!(w[1].call, Call::Get { .. }) {
            let gap = w[1].t_us - w[0].t_us;
            assert!(
                (SEC..2 * SEC).contains(&gap),
                "a retry slept {gap} µs before {:?}",
                w[1].call
            );
        }
    }
}

/// The setup of a `TestElection` run on `/bloop`, stopped once the script is used up.
fn bloop(script: impl FnOnce(&Ids) -> Vec<Answer> + Send + 'static, step_down: Answer) -> Setup {
    Setup {
        key: BLOOP,
        old_key: None,
        timing: UPSTREAM,
        script: Box::new(script),
        ending: Ending::StopWhenExhausted(step_down),
    }
}

/// The setup of a `TestCheckMasterProcess` run: `get` answers `value` at revision 10.
fn check(value: String, rest: Vec<Answer>, ending: Ending) -> Setup {
    Setup {
        key: KEY,
        old_key: None,
        timing: UPSTREAM,
        script: Box::new(move |_| {
            let mut s = vec![found(KEY, &value, 10)];
            s.extend(rest);
            s
        }),
        ending,
    }
}

// ---------------------------------------------------------------- TestElection

/// `test_invalid` (line 62): `interval=-1, ttl=15` and `interval=10, ttl=5` raise `ValueError`
/// (election.py lines 102-106). Beyond upstream: the boundaries `interval=0` and
/// `ttl == interval`, that a rejected elector leaves the shared value alone (upstream raises
/// before `self._is_master.value = 0`, line 109) and makes no etcd call, and that an accepted one
/// clears it.
#[test]
fn upstream_election_invalid() {
    let (errors, master_after_invalid, calls, master_after_valid) = in_process(|proc, world| {
        let shared = Rc::new(Shared::default());
        let sw = Switches::default();
        shared.set(proc, &sw); // the stamp a predecessor left
        let store = Scripted::new(world, vec![]);
        let make = |interval_s, ttl_s| {
            Elector::with_timing(
                proc,
                store.clone(),
                BLOOP.into(),
                None,
                shared.clone(),
                sw.clone(),
                Timing { interval_s, ttl_s },
            )
        };
        let errors: Vec<Option<InvalidTiming>> = [(-1, 15), (10, 5), (0, 15), (10, 10)]
            .into_iter()
            .map(|(i, t)| make(i, t).err())
            .collect();
        let master_after_invalid = shared.verdict(proc, &sw).is_master();
        let valid = make(5, 15).is_ok();
        assert!(valid, "interval=5, ttl=15 is valid");
        let master_after_valid = shared.verdict(proc, &sw).is_master();
        (
            errors,
            master_after_invalid,
            store.log().len(),
            master_after_valid,
        )
    });
    assert_eq!(
        errors,
        vec![
            Some(InvalidTiming::IntervalNotPositive { interval_s: -1 }),
            Some(InvalidTiming::TtlNotAboveInterval {
                ttl_s: 5,
                interval_s: 10
            }),
            Some(InvalidTiming::IntervalNotPositive { interval_s: 0 }),
            Some(InvalidTiming::TtlNotAboveInterval {
                ttl_s: 10,
                interval_s: 10
            }),
        ]
    );
    assert!(master_after_invalid, "a rejected elector cleared the stamp");
    assert_eq!(calls, 0, "a rejected elector called etcd");
    assert!(!master_after_valid, "a new elector must clear the stamp");
}

/// `test_basic_election` (line 107): the key holds "value", so the elector is not elected: it
/// reads the key (`_check_master_process` ignores the unparseable value) and watches it from the
/// next revision, where the script runs out. Stopping it clears the stamp and tries the step-down
/// delete, which finds another value.
#[test]
fn upstream_election_basic_election() {
    let run = run_elector(bloop(
        |_| vec![found(BLOOP, "value", 10)],
        txn(false), // the key holds "value", not our id
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![get(BLOOP), watch(BLOOP, 11), cas_delete(BLOOP, id)]
    );
    assert!(run.log.iter().all(|l| !l.master), "{:#?}", run.log);
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_become_master_first_time` (line 122): the key is absent, so the elector campaigns and
/// wins, and writes the old key (`client.assert_key_written("/legacy")`). Upstream's script ends
/// at the first refresh's put; this one answers one refresh round more, so it also shows the old
/// key rewritten after a refresh (election.py line 329) and the `interval` sleep between refreshes
/// (line 331), and runs out at the second `Lease.refresh`.
#[test]
fn upstream_election_become_master_first_time() {
    let run = run_elector(Setup {
        key: BLOOP,
        old_key: Some(LEGACY),
        timing: UPSTREAM,
        script: Box::new(|_| {
            vec![
                not_found(),
                granted(15),
                txn(true),
                Answer::Put(Ok(12)),
                Answer::KeepAlive(Ok(15)),
                txn(true),
                Answer::Put(Ok(14)),
            ]
        }),
        ending: Ending::StopWhenExhausted(txn(true)),
    });
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(BLOOP),
            grant(),
            campaign(BLOOP, id),
            old_key_put(id),
            keep_alive(),
            refresh(BLOOP, id),
            old_key_put(id),
            keep_alive(), // the script runs out here
            cas_delete(BLOOP, id),
        ]
    );
    let master: Vec<bool> = run.log.iter().map(|l| l.master).collect();
    assert_eq!(
        master,
        vec![false, false, false, true, true, true, true, true, false],
        "is_master() at each call"
    );
    let refreshes = run.times(|c| matches!(c, Call::KeepAlive { .. }));
    assert_eq!(refreshes[1] - refreshes[0], 5 * SEC, "refresh interval");
    assert_eq!(
        run.events(),
        vec![
            "campaign",
            "stamp>0",
            "won lease=100000",
            "stamp>0",
            "refresh",
            "stamp=0",
            "step-down deleted=true",
        ]
    );
}

/// `test_fail_to_maintain` (line 142): the elector wins, then `Lease.refresh` fails with
/// `ConnectionFailedError`: it stops being master (the stamp is cleared, the key is NOT deleted),
/// sleeps 1-2 s and reads the key again, where the script runs out.
#[test]
fn upstream_election_fail_to_maintain() {
    let run = run_elector(bloop(
        |_| {
            vec![
                not_found(),
                granted(15),
                txn(true),
                Answer::KeepAlive(Err(EtcdError::Unavailable)),
            ]
        },
        txn(true),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(BLOOP),
            grant(),
            campaign(BLOOP, id),
            keep_alive(),
            get(BLOOP), // the script runs out here
            cas_delete(BLOOP, id),
        ]
    );
    assert!(run.log[3].master, "master while refreshing");
    assert!(!run.log[4].master, "still master after the failed refresh");
    assert_retry_sleeps(&run);
    assert_eq!(
        run.events(),
        vec![
            "campaign",
            "stamp>0",
            "won lease=100000",
            "stamp=0",
            "lost: refresh failed: Unavailable",
            "step-down deleted=true",
        ]
    );
}

/// `test_become_master_multiple_attempts` (line 159): the key holds "value"; the watch first sees
/// a PUT of "value" (keep watching), then the key goes away, and the elector campaigns and wins;
/// the script runs out at the first refresh's put.
///
/// Upstream loops over the etcd v2 actions "delete", "expire", "compareAndDelete" and "something",
/// but its stub's `watch_once` returns none of them: every iteration's event has no type (so the
/// action reads "set") and no value, and the elector campaigns because `value is None`
/// (election.py line 216). In etcd v3 the first three are all a DELETE event (a client delete, a
/// lease expiry, a guarded delete), which has no value; here they are DELETE events.
///
/// "something" (a non-delete event without a value) has no exact counterpart: a v3 event that is
/// not a DELETE is a PUT, and the model's PUT always has a value. Its closest is a PUT of the
/// empty value, which etcd's JSON gateway sends without a `value` field (zero values are
/// omitted), so etcd3gw's event has no value and upstream would campaign. DIFFERENCE: the model
/// campaigns on DELETE only, so on that PUT it keeps watching from the PUT's revision; this part
/// asserts the model's behaviour as it is and marks the difference (see the report).
#[test]
fn upstream_election_become_master_multiple_attempts() {
    for action in ["delete", "expire", "compareAndDelete"] {
        let run = run_elector(bloop(
            move |_| {
                vec![
                    found(BLOOP, "value", 10),
                    put_event(BLOOP, "value", 12),
                    delete_event(BLOOP, 14, "value"),
                    granted(15),
                    txn(true),
                    Answer::KeepAlive(Ok(15)),
                ]
            },
            txn(true),
        ));
        run.assert_wait_and_stop();
        let id = &run.ids.id;
        assert_eq!(
            run.calls(),
            vec![
                get(BLOOP),
                watch(BLOOP, 11),
                watch(BLOOP, 13),
                grant(),
                campaign(BLOOP, id),
                keep_alive(),
                refresh(BLOOP, id), // the script runs out here
                cas_delete(BLOOP, id),
            ],
            "{action}"
        );
        assert!(run.log[6].master, "{action}: not master after winning");
        assert_eq!(
            run.events(),
            vec![
                "campaign",
                "stamp>0",
                "won lease=100000",
                "stamp=0",
                "step-down deleted=true"
            ],
            "{action}"
        );
    }

    // "something": see the doc comment. Upstream campaigns here; the model keeps watching.
    let run = run_elector(bloop(
        |_| {
            vec![
                found(BLOOP, "value", 10),
                put_event(BLOOP, "value", 12),
                put_event(BLOOP, "", 14),
            ]
        },
        txn(false),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(BLOOP),
            watch(BLOOP, 11),
            watch(BLOOP, 13),
            watch(BLOOP, 15), // DIFFERENCE: upstream would grant a lease and campaign here
            cas_delete(BLOOP, id),
        ]
    );
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_become_master_implausible` (line 180): the key holds "value", the watch sees a PUT, then
/// the key vanishes without the watch reporting a delete; the elector becomes master.
///
/// Upstream's stub makes `watch_once` raise `KeyNotFound`, on which `_vote` campaigns at once
/// (election.py lines 206-210). Neither etcd3gw's watch nor the model's has that error (upstream
/// calls the case "implausible"). The way a key can vanish without a delete event in etcd is the
/// compaction window upstream's comment in `_vote` describes: the watch reports nothing and times
/// out (`WatchTimedOut`, after `interval * 2`); `_run` sleeps and `_vote` reads the key again,
/// finds it absent and campaigns. That is the closest path, so this test scripts it: one retry
/// and one `get` more than upstream's, the same campaign after. The script runs out at the first
/// refresh's put, as upstream's does.
#[test]
fn upstream_election_become_master_implausible() {
    let run = run_elector(bloop(
        |_| {
            vec![
                found(BLOOP, "value", 10),
                put_event(BLOOP, "value", 12),
                watch_err(EtcdError::Timeout),
                not_found(),
                granted(15),
                txn(true),
                Answer::KeepAlive(Ok(15)),
            ]
        },
        txn(true),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(BLOOP),
            watch(BLOOP, 11),
            watch(BLOOP, 13),
            get(BLOOP),
            grant(),
            campaign(BLOOP, id),
            keep_alive(),
            refresh(BLOOP, id), // the script runs out here
            cas_delete(BLOOP, id),
        ]
    );
    assert_retry_sleeps(&run);
    assert!(run.log[7].master, "not master after winning");
    assert_eq!(
        run.events(),
        vec![
            "campaign",
            "stamp>0",
            "won lease=100000",
            "stamp=0",
            "step-down deleted=true"
        ]
    );
}

/// `test_initial_read_exceptions` (line 199): the read fails with `Etcd3Exception("Unauthorised
/// user")`, `InternalServerError`, `ConnectionFailedError` and `PreconditionFailedError`; each
/// time the elector logs, sleeps 1-2 s and reads again, never campaigning. Beyond upstream: a
/// timeout, and every `StoreError` variant (etcd answering an error).
#[test]
fn upstream_election_initial_read_exceptions() {
    let errors = [
        store_err(StoreError::FutureRevision), // Etcd3Exception(detail_text="Unauthorised user")
        store_err(StoreError::Compacted {
            compact_revision: 5,
        }), // InternalServerError
        EtcdError::Unavailable,                // ConnectionFailedError
        store_err(StoreError::LeaseNotFound),  // PreconditionFailedError
        EtcdError::Timeout,                    // ConnectionTimeoutError (beyond upstream)
    ];
    let n = errors.len();
    let run = run_elector(bloop(
        move |_| errors.into_iter().map(get_err).collect(),
        txn(false),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    let mut expected = vec![get(BLOOP); n + 1]; // the last one runs out
    expected.push(cas_delete(BLOOP, id));
    assert_eq!(run.calls(), expected);
    assert!(run.log.iter().all(|l| !l.master), "{:#?}", run.log);
    assert_retry_sleeps(&run);
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_exception_detail_logging` (line 217): a read failing with `Etcd3Exception("Unauthorised
/// user")` is logged as a warning with the exception's detail text (`_log_exception`,
/// election.py lines 352-361), not as an unexpected error.
///
/// The model does not log, so the warning's text cannot be asserted. What can be is the
/// classification the log reflects: an etcd exception is an expected failure of the round (no
/// crash, no exit: the elector sleeps 1-2 s and reads again), unlike an unexpected one
/// (`upstream_election_unexpected_read_error_exits`).
#[test]
fn upstream_election_exception_detail_logging() {
    let run = run_elector(bloop(
        |_| vec![get_err(store_err(StoreError::FutureRevision))],
        txn(false),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![get(BLOOP), get(BLOOP), cas_delete(BLOOP, id)]
    );
    assert_retry_sleeps(&run);
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
    assert_eq!(run.exit, None, "the elector's process exited");
}

/// `test_later_exceptions` (line 243): the key holds "value" and each watch fails
/// (`Etcd3Exception`, `InternalServerError`, `ConnectionFailedError`, `PreconditionFailedError`);
/// each time the elector goes back to `_run`, sleeps and reads again, never campaigning. Beyond
/// upstream: a watch timing out (`WatchTimedOut`, the compaction-window case). Every watch starts
/// at the read's revision + 1 with a timeout of `interval * 2`.
#[test]
fn upstream_election_later_exceptions() {
    let errors = [
        store_err(StoreError::FutureRevision), // Etcd3Exception()
        store_err(StoreError::Compacted {
            compact_revision: 5,
        }), // InternalServerError
        EtcdError::Unavailable,                // ConnectionFailedError
        store_err(StoreError::LeaseNotFound),  // PreconditionFailedError
        EtcdError::Timeout,                    // WatchTimedOut (beyond upstream)
    ];
    let n = errors.len();
    let run = run_elector(bloop(
        move |_| {
            errors
                .into_iter()
                .flat_map(|e| [found(BLOOP, "value", 10), watch_err(e)])
                .collect()
        },
        txn(false),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    let mut expected = Vec::new();
    for _ in 0..n {
        expected.extend([get(BLOOP), watch(BLOOP, 11)]);
    }
    expected.extend([get(BLOOP), cas_delete(BLOOP, id)]);
    assert_eq!(run.calls(), expected);
    assert!(run.log.iter().all(|l| !l.master), "{:#?}", run.log);
    assert_retry_sleeps(&run);
    assert_eq!(run.events(), vec!["step-down deleted=false"]);
}

/// `test_master_failure` (line 265): the key is absent, but the campaign's put fails
/// (`ConnectionFailedError`); next round the key holds "value" and is deleted, but the campaign's
/// put fails again (`InternalServerError`); the third round the campaign succeeds. A failed
/// campaign never sets the stamp and deletes nothing; every round after a failure starts with a
/// retry sleep. The script runs out at the first refresh's put.
#[test]
fn upstream_election_master_failure() {
    let run = run_elector(bloop(
        |_| {
            vec![
                not_found(),
                granted(15),
                Answer::Txn(Err(EtcdError::Unavailable)),
                found(BLOOP, "value", 20),
                delete_event(BLOOP, 22, "value"),
                granted(15),
                Answer::Txn(Err(store_err(StoreError::LeaseNotFound))),
                found(BLOOP, "value", 30),
                delete_event(BLOOP, 32, "value"),
                granted(15),
                txn(true),
                Answer::KeepAlive(Ok(15)),
            ]
        },
        txn(true),
    ));
    run.assert_wait_and_stop();
    let id = &run.ids.id;
    assert_eq!(
        run.calls(),
        vec![
            get(BLOOP),
            grant(),
            campaign(BLOOP, id),
            get(BLOOP),
            watch(BLOOP, 21),
            grant(),
            campaign(BLOOP, id),
            get(BLOOP),
            watch(BLOOP, 31),
            grant(),
            campaign(BLOOP, id),
            keep_alive(),
            refresh(BLOOP, id), // the script runs out here
            cas_delete(BLOOP, id),
        ]
    );
    let master: Vec<bool> = run.log.iter().map(|l| l.master).collect();
    assert_eq!(
        master,
        vec![
            false, false, false, false, false, false, false, false, false, false, false, true,
            true, false
        ]
    );
    assert_retry_sleeps(&run);
    assert_eq!(
        run.events(),
        vec![
            "campaign",
            "campaign",
            "campaign",
            "stamp>0",
            "won lease=100000",
            "stamp=0",
            "step-down deleted=true",
        ]
    );
}

// ---------------------------------------------------------------- TestCheckMasterProcess

/// `test_same_host_live_pid_does_nothing` (line 314): the key names a live process of this host:
/// no delete, no restart; `_vote` goes on to watch the key. (Upstream mocks `os.path.exists` and
/// asserts it was asked about `/proc/12345`; here the pid is a process really alive on the host.)
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

/// `test_same_host_dead_pid_deletes_then_returns` (line 323): the key names a dead process of this
/// host: the check deletes it guarded by the value it read (`m_delete.assert_called_once_with(KEY,
/// existing_value="this-host:99999")`) and returns. Beyond upstream (which calls the method
/// alone): what its comment promises next, the watch sees the delete and the elector campaigns
/// through the normal path; and two more values the regex of election.py line 233 parses as a
/// dead pid of this host: a pid above any real one (`int()` has no bound, `/proc/99999999999`
/// does not exist) and a value ending in a newline (`$` matches before a final newline).
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

/// `test_same_host_dead_pid_cas_fail_raises` (line 335): the guarded delete finds another value
/// (somebody moved the election on): `RestartElection`, so no watch; `_run` sleeps 1-2 s and
/// `_vote` reads the key again.
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

/// `test_same_host_dead_pid_etcd_exception_raises` (line 344): the guarded delete fails with an
/// etcd exception (`ConnectionFailedError`): logged, `RestartElection`, as for a failed compare.
/// Beyond upstream: the other etcd exceptions (a timeout, an error etcd answered) do the same.
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

/// `test_different_host_does_nothing` (line 353): the key names a process of another host: no
/// `/proc` check, no delete; `_vote` goes on to watch the key.
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

/// `test_unparseable_value_does_nothing` (line 363): a value that does not match
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

// ---------------------------------------------------------------- code paths without an upstream test

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
