//! How a client's kept-alive connections meet a crash of etcd's host (simulated runs): the
//! first request on a connection kept from before the crash is reset by the rebooted host,
//! while a restart of the etcd process alone leaves nothing stale (see the `session` module).

use super::tests::service::{etcd_crash, etcd_restart, note, run, Log};
use super::{EtcdConfig, EtcdError};
use crate::Proc;
use std::time::Duration;

fn failed() -> String {
    format!("{:?}", Err::<i64, _>(EtcdError::Unavailable))
}

/// Puts `key` and notes `key: ok` or `key: <error>`.
async fn put(c: &super::Client, p: &Proc, log: &Log, key: &str) {
    let r = c.put(key, "x", 0).await;
    let what = match r {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{:?}", Err::<i64, _>(e)),
    };
    note(p, log, format!("{key}: {what}"));
}

fn notes(run: &super::tests::service::Run) -> Vec<&str> {
    run.log.iter().map(|(_, s)| s.as_str()).collect()
}

/// A request before the crash, then two at 5 s, long after etcd's host came back: the first
/// reuses the kept connection, which the rebooted host resets one network latency after it was
/// sent (a connection failure, nothing applied; `requests` retries nothing); the second opens a
/// new connection and works.
#[test]
fn etcd_host_crash_resets_the_first_request_on_a_kept_connection_after_the_reboot() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_crash(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            put(&c, &p, &log, "/before").await;
            p.sleep(Duration::from_secs(5)).await;
            put(&c, &p, &log, "/first").await;
            put(&c, &p, &log, "/second").await;
        },
    );
    assert_eq!(
        notes(&run),
        [
            "/before: ok",
            &format!("/first: {}", failed()),
            "/second: ok"
        ]
    );
    let reset_us = run.log[1].0;
    assert!(
        (5_002_000..=5_004_000).contains(&reset_us),
        "reset at {reset_us} µs"
    );
    assert_eq!(run.put_at("/first"), None);
}

/// The same requests around a restart of the etcd process alone: its host's kernel closed the
/// kept connection (a FIN), which urllib3 sees before reusing it and replaces: nothing fails.
#[test]
fn etcd_restart_resets_no_kept_connection_left_idle() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_restart(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            put(&c, &p, &log, "/before").await;
            p.sleep(Duration::from_secs(5)).await;
            put(&c, &p, &log, "/first").await;
        },
    );
    assert_eq!(notes(&run), ["/before: ok", "/first: ok"]);
}

/// The pool is a LIFO queue: after the reboot, the reset of the top connection puts an empty
/// slot back, the next request opens a new connection and gives it back on top, and sequential
/// requests keep using it; the older kept connection stays buried, stale, until two requests
/// at once reach it.
#[test]
fn etcd_host_crash_leaves_a_buried_kept_connection_stale_until_concurrent_requests_reach_it() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_crash(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            futures::join!(put(&c, &p, &log, "/a"), put(&c, &p, &log, "/b"));
            p.sleep(Duration::from_secs(5)).await;
            put(&c, &p, &log, "/x").await;
            put(&c, &p, &log, "/y").await;
            put(&c, &p, &log, "/z").await;
            p.sleep(Duration::from_secs(60)).await;
            futures::join!(put(&c, &p, &log, "/u"), put(&c, &p, &log, "/v"));
        },
    );
    let fail = failed();
    assert_eq!(
        notes(&run),
        [
            "/a: ok".to_string(),
            "/b: ok".into(),
            format!("/x: {fail}"),
            "/y: ok".into(),
            "/z: ok".into(),
            format!("/v: {fail}"),
            "/u: ok".into(),
        ]
    );
}

/// A watch's creation takes the top kept connection too: after the reboot it is reset (etcd3gw
/// raises `requests`' `ConnectionError` from the `Watcher`); the next request works.
#[test]
fn etcd_host_crash_resets_a_watch_created_on_a_kept_connection() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_crash(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            put(&c, &p, &log, "/before").await;
            p.sleep(Duration::from_secs(5)).await;
            let w = c.watch("/w", false, 0).await.map(|_| ());
            note(&p, &log, format!("watch: {w:?}"));
            put(&c, &p, &log, "/after").await;
        },
    );
    let watch_failed = format!("watch: {:?}", Err::<(), _>(EtcdError::Unavailable));
    assert_eq!(notes(&run), ["/before: ok", &watch_failed, "/after: ok"]);
}

/// Stopping a watch drops every kept connection (etcd3gw's `Watcher.stop` closes the session's
/// adapter): a client whose watch ended after its last request opens a new connection after
/// the reboot, and nothing fails.
#[test]
fn etcd_host_crash_spares_a_client_whose_watch_stopped_after_its_last_request() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_crash(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = etcd.client(&p);
            put(&c, &p, &log, "/before").await;
            put(&c, &p, &log, "/again").await;
            drop(c.watch("/w", false, 0).await.expect("etcd is up"));
            p.sleep(Duration::from_secs(5)).await;
            put(&c, &p, &log, "/after").await;
        },
    );
    assert_eq!(notes(&run), ["/before: ok", "/again: ok", "/after: ok"]);
}

/// A request on a new connection while etcd's host is down retransmits its handshake (from
/// 1 s) and is served by the rebooted host, as a request made after the reboot.
#[test]
fn etcd_host_crash_serves_a_new_connection_opened_while_it_is_down() {
    let run = run(
        EtcdConfig::default(),
        vec![etcd_crash(1_000, 1_000)],
        |p, etcd, log| async move {
            p.sleep(Duration::from_millis(1_500)).await;
            put(&etcd.client(&p), &p, &log, "/during").await;
        },
    );
    assert_eq!(notes(&run), ["/during: ok"]);
    // Handshake tries at 1.501 and 2.501 s, the second after the reboot at 2 s.
    let done_us = run.log[0].0;
    assert!(
        (2_501_000..=2_504_000).contains(&done_us),
        "served at {done_us} µs"
    );
}
