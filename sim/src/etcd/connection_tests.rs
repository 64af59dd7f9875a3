//! How etcd's clients see it go away (simulated runs): a restart of the etcd process closes every
//! connection at once, a crash of its host leaves them silent, and a watch's creation has no
//! timeout.

use super::tests::service::{etcd_crash, etcd_fault, etcd_restart, note, run, slow_etcd};
use super::{EtcdConfig, EtcdError, REQUEST_TIMEOUT};
use crate::FaultKind;
use std::time::Duration;

fn unavailable() -> String {
    format!("{:?}", Err::<i64, _>(EtcdError::Unavailable))
}

/// A crash of etcd's host drops the requests it had received: nothing tells their caller
/// (no reset reaches a connection with nothing left to retransmit, and etcd3gw's requests
/// use no TCP keepalive), so the call waits out its whole timeout although etcd is back long
/// before, and the request is not applied.
#[test]
fn etcd_host_crash_leaves_a_held_request_unanswered_until_its_timeout() {
    let (slow, crash) = (slow_etcd(), etcd_crash(1_000, 500));
    let run = run(
        EtcdConfig::default(),
        vec![slow, crash],
        |p, etcd, log| async move {
            let r = etcd.client(&p).put("/held", "x", 0).await;
            note(&p, &log, format!("{r:?}"));
        },
    );
    let (done_us, what) = &run.log[0];
    assert_eq!(what, &format!("{:?}", Err::<i64, _>(EtcdError::Timeout)));
    assert_eq!(*done_us, REQUEST_TIMEOUT.as_micros() as u64);
    assert_eq!(run.put_at("/held"), None);
}

/// A request sent while etcd's host is down on the connection the client kept from before the
/// crash is retransmitted (TCP's backoff from 200 ms); the first retransmission after the host
/// is back finds no connection there and is answered with a reset: the client fails at once (a
/// connection failure, nothing applied), and its next request, on a new connection, works.
#[test]
fn etcd_host_crash_resets_a_request_retransmitted_after_the_reboot() {
    let crash = etcd_crash(500, 2_500);
    let run = run(
        EtcdConfig::default(),
        vec![crash],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            c.put("/before", "x", 0).await.expect("etcd is up");
            p.sleep(Duration::from_secs(1)).await;
            let r = c.put("/during", "x", 0).await;
            note(&p, &log, format!("{r:?}"));
            let r = c.put("/after", "x", 0).await;
            note(&p, &log, format!("{}", r.is_ok()));
        },
    );
    let (reset_us, what) = &run.log[0];
    assert_eq!(
        what,
        &format!("{:?}", Err::<i64, _>(EtcdError::Unavailable))
    );
    // Sent at 1.002 s (arriving 1.003 s): tries at 1.003, 1.203, 1.603, 2.403 and 4.003 s, the
    // first after the reboot at 3 s; the reset travels back 1 ms.
    assert!(
        (4_003_000..=4_005_000).contains(reset_us),
        "reset at {reset_us} µs"
    );
    assert_eq!(run.put_at("/during"), None);
    assert_eq!(run.log[1].1, "true");
    assert!(run.put_at("/after").is_some());
}

/// A restart of the etcd process while it holds a request (here: served slowly): the host's
/// kernel closes the connection, so the client fails one network latency after the restart,
/// with a connection failure (etcd3gw's `ConnectionFailedError`), not after its timeout; the
/// request is not applied.
#[test]
fn etcd_restart_resets_a_held_request_at_once() {
    let run = run(
        EtcdConfig::default(),
        vec![slow_etcd(), etcd_restart(1_000, 3_000)],
        |p, etcd, log| async move {
            let r = etcd.client(&p).put("/held", "x", 0).await;
            note(&p, &log, format!("{r:?}"));
        },
    );
    let (done_us, what) = &run.log[0];
    assert_eq!(what, &unavailable());
    assert_eq!(*done_us, 1_001_000, "the reset travels back 1 ms");
    assert_eq!(run.put_at("/held"), None);
}

/// While the etcd process is down its host refuses connections: a request fails at once, and
/// the first one after etcd has started again works.
#[test]
fn etcd_restart_resets_requests_sent_while_it_is_down() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_restart(500, 2_500)],
        |p, etcd, log| async move {
            p.sleep(Duration::from_secs(1)).await;
            let c = etcd.client(&p);
            let r = c.put("/during", "x", 0).await;
            note(&p, &log, format!("{r:?}"));
            p.sleep(Duration::from_secs(3)).await;
            let r = c.put("/after", "x", 0).await;
            note(&p, &log, format!("{}", r.is_ok()));
        },
    );
    let (reset_us, what) = &run.log[0];
    assert_eq!(what, &unavailable());
    // Sent at 1 s, refused when it arrives at 1.001 s (the model's refusal does not add the
    // way back), far before any timeout.
    assert_eq!(*reset_us, 1_001_000);
    assert_eq!(run.put_at("/during"), None);
    assert_eq!(run.log[1].1, "true");
    assert!(run.put_at("/after").is_some());
}

/// A watch whose create request etcd's host had received when it crashed is never answered:
/// etcd3gw waits for its response with no timeout and nothing ever resets the connection (no
/// keepalive), so the call has not returned when the run ends, ten minutes after etcd came
/// back. Bounded by the client's timeout, the same creation fails after that timeout.
#[test]
fn watch_create_hangs_for_ever_when_etcd_host_crashes_holding_it() {
    let faults = vec![slow_etcd(), etcd_crash(1_000, 500)];
    let untimed = run(
        EtcdConfig::default(),
        faults.clone(),
        |p, etcd, log| async move {
            let r = etcd.client(&p).watch("/w", false, 0).await.map(|_| ());
            note(&p, &log, format!("{r:?}"));
        },
    );
    assert!(untimed.log.is_empty(), "returned: {:?}", untimed.log);
    let timed = run(EtcdConfig::default(), faults, |p, etcd, log| async move {
        let r = etcd
            .client(&p)
            .watch_timed("/w", false, 0)
            .await
            .map(|_| ());
        note(&p, &log, format!("{r:?}"));
    });
    let (done_us, what) = &timed.log[0];
    assert_eq!(what, &format!("{:?}", Err::<(), _>(EtcdError::Timeout)));
    assert_eq!(*done_us, REQUEST_TIMEOUT.as_micros() as u64);
}

/// A watch created while etcd is cut off waits as long as the cut lasts (TCP retransmits the
/// request), far past any request timeout, and is created once the path works again.
#[test]
fn watch_create_hangs_while_a_partition_lasts() {
    let cut = etcd_fault(
        500,
        100_000,
        FaultKind::Partition {
            a: vec!["etcd".into()],
            b: vec!["client".into()],
        },
    );
    let run = run(
        EtcdConfig::default(),
        vec![cut],
        |p, etcd, log| async move {
            p.sleep(Duration::from_secs(1)).await;
            let r = etcd.client(&p).watch("/w", false, 0).await.map(|_| ());
            note(&p, &log, format!("{r:?}"));
        },
    );
    let (done_us, what) = &run.log[0];
    assert_eq!(what, "Ok(())");
    assert!(
        (100_500_000..=130_000_000).contains(done_us),
        "created at {done_us} µs"
    );
}
