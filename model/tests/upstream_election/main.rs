//! Upstream networking-calico's elector unit tests, mirrored against the model's elector
//! (`model::calico::elector`, a model of upstream `election.py`).
//!
//! Upstream: projectcalico/calico at commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2, folder
//! `networking-calico/networking_calico/plugins/ml2/drivers/calico/`: the tests in
//! `test/test_election.py`, the code in `election.py`. Upstream's tests replace etcd with
//! `test/stub_etcd.py` (read at commit 0614562eb4e299c4c86cb4fec13fa94979ae2b6f): a queue of read
//! and write results; a call that finds the queue empty blocks, and `_wait_and_stop`
//! (test_election.py line 88) then stops the elector and checks that no result was of the wrong type and that
//! `is_master.value` is 0. Here the elector runs in a one-node simulation
//! against a scripted [`ElectionStore`](model::calico::elector::ElectionStore)
//! (`election_support`): a queue of answers to the elector's etcd calls, every call recorded with
//! its arguments, its time and whether `is_master()` held, so each test asserts the exact calls,
//! the shared mastership stamp and the elector's events, not only that the script was used up.
//!
//! The tests are in three modules: `election` (`TestElection`), `check_master_process`
//! (`TestCheckMasterProcess`) and `unexpected_errors` (code paths without an upstream test).
//!
//! | Rust test | upstream test method (line in test_election.py) |
//! |---|---|
//! | `election::upstream_election_invalid` | `TestElection.test_invalid` (62) |
//! | `election::upstream_election_basic_election` | `TestElection.test_basic_election` (107) |
//! | `election::upstream_election_become_master_first_time` | `TestElection.test_become_master_first_time` (122) |
//! | `election::upstream_election_fail_to_maintain` | `TestElection.test_fail_to_maintain` (142) |
//! | `election::upstream_election_become_master_multiple_attempts` | `TestElection.test_become_master_multiple_attempts` (159) |
//! | `election::upstream_election_become_master_implausible` | `TestElection.test_become_master_implausible` (180) |
//! | `election::upstream_election_initial_read_exceptions` | `TestElection.test_initial_read_exceptions` (199) |
//! | `election::upstream_election_exception_detail_logging` | `TestElection.test_exception_detail_logging` (217) |
//! | `election::upstream_election_later_exceptions` | `TestElection.test_later_exceptions` (243) |
//! | `election::upstream_election_master_failure` | `TestElection.test_master_failure` (265) |
//! | `check_master_process::upstream_election_same_host_live_pid_does_nothing` | `TestCheckMasterProcess.test_same_host_live_pid_does_nothing` (314) |
//! | `check_master_process::upstream_election_same_host_dead_pid_deletes_then_returns` | `TestCheckMasterProcess.test_same_host_dead_pid_deletes_then_returns` (323) |
//! | `check_master_process::upstream_election_same_host_dead_pid_cas_fail_raises` | `TestCheckMasterProcess.test_same_host_dead_pid_cas_fail_raises` (335) |
//! | `check_master_process::upstream_election_same_host_dead_pid_etcd_exception_raises` | `TestCheckMasterProcess.test_same_host_dead_pid_etcd_exception_raises` (344) |
//! | `check_master_process::upstream_election_different_host_does_nothing` | `TestCheckMasterProcess.test_different_host_does_nothing` (353) |
//! | `check_master_process::upstream_election_unparseable_value_does_nothing` | `TestCheckMasterProcess.test_unparseable_value_does_nothing` (363) |
//! | `unexpected_errors::upstream_election_unexpected_read_error_exits` | none: `_run`'s `except BaseException` (election.py 138-151) |
//! | `unexpected_errors::upstream_election_check_master_process_unexpected_error_exits` | none: `_check_master_process`'s `except Etcd3Exception` (election.py 250-254) with 138-151 |
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

#[path = "../election_support/mod.rs"]
mod election_support;

mod check_master_process;
mod election;
mod unexpected_errors;

use election_support::*;
use model::calico::elector::Timing;
use sim::etcd::{EtcdError, StoreError, Txn};
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
