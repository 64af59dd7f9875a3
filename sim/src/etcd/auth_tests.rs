//! etcd with auth on (simulated runs): tokens, what etcd forgets, and how each client policy
//! re-authenticates (see the `auth` module).

use super::auth::{AuthConfig, Reauth, Tokens};
use super::tests::service::{etcd_fault, etcd_restart, note, run, Log};
use super::{Client, EtcdConfig, EtcdError, WatchMsg};
use crate::{FaultKind, Proc};
use std::time::Duration;

const S: u64 = 1_000_000;
/// networking-calico's `etcd_timeout`.
const TIMEOUT: Duration = Duration::from_secs(60);

fn with_auth() -> EtcdConfig {
    EtcdConfig {
        auth: Some(AuthConfig::default()),
        ..EtcdConfig::default()
    }
}

fn client(p: &Proc, etcd: &super::Etcd, reauth: Reauth) -> Client {
    etcd.client_with_timeout(p, TIMEOUT).with_reauth(reauth)
}

/// Puts `key` and notes `key: ok` or `key: <error>`.
async fn put(c: &Client, p: &Proc, log: &Log, key: &str) {
    let what = match c.put(key, "x", 0).await {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{e:?}"),
    };
    note(p, log, format!("{key}: {what}"));
}

fn notes(run: &super::tests::service::Run) -> Vec<&str> {
    run.log.iter().map(|(_, s)| s.as_str()).collect()
}

/// A token lives its TTL after it was assigned or last used; an unknown one is never valid.
#[test]
fn etcd_auth_token_lives_its_ttl_from_its_last_use() {
    let ttl = Duration::from_secs(300);
    let mut t = Tokens::default();
    t.assign(1, 0, ttl);
    assert!(t.check(Some(1), 299 * S, ttl), "used within its TTL");
    assert!(t.check(Some(1), 598 * S, ttl), "its use renewed it");
    assert!(!t.check(Some(1), 898 * S, ttl), "idle for its TTL");
    assert!(!t.check(Some(2), S, ttl), "never assigned");
    assert!(!t.check(None, S, ttl), "no token at all");
}

/// Without a token a request is rejected; both client policies then authenticate and send it
/// again, and it is applied once.
#[test]
fn etcd_auth_first_request_authenticates_and_reposts() {
    for reauth in [Reauth::OnAnyEtcdError, Reauth::OnAuthError] {
        let run = run(with_auth(), vec![], move |p, etcd, log| async move {
            put(&client(&p, &etcd, reauth), &p, &log, "/a").await;
        });
        assert_eq!(notes(&run), ["/a: ok"], "{reauth:?}");
        // Rejected, authenticated, applied: three round trips of 2 ms.
        assert_eq!(run.log[0].0, 6_000, "{reauth:?}");
    }
}

/// A restart of etcd forgets every token: the next request is rejected and the client
/// authenticates again.
#[test]
fn etcd_restart_forgets_auth_tokens() {
    let run = run(
        with_auth(),
        vec![etcd_restart(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = client(&p, &etcd, Reauth::OnAuthError);
            put(&c, &p, &log, "/before").await;
            p.sleep(Duration::from_secs(5)).await;
            let start = p.world().now_us();
            put(&c, &p, &log, "/after").await;
            note(&p, &log, format!("{}", p.world().now_us() - start));
        },
    );
    assert_eq!(notes(&run)[..2], ["/before: ok", "/after: ok"]);
    // Rejected, authenticated, applied: three round trips of 2 ms (one without auth).
    let took: u64 = run.log[2].1.parse().unwrap();
    assert!((6_000..6_100).contains(&took), "took {took} µs");
}

/// etcd cut off from the client: networking-calico's client takes the first timeout for a
/// token problem, authenticates, and fails only when that times out too, after two timeouts;
/// Go's client fails after one.
#[test]
fn etcd_auth_blocked_request_fails_after_two_timeouts_with_networking_calicos_client() {
    let cut = etcd_fault(
        1_000,
        300_000,
        FaultKind::Partition {
            a: vec!["etcd".into()],
            b: vec!["client".into()],
        },
    );
    for (reauth, fails_at) in [
        (Reauth::OnAnyEtcdError, 122 * S),
        (Reauth::OnAuthError, 62 * S),
    ] {
        let run = run(
            with_auth(),
            vec![cut.clone()],
            move |p, etcd, log| async move {
                let c = client(&p, &etcd, reauth);
                put(&c, &p, &log, "/before").await;
                p.sleep(Duration::from_secs(2)).await;
                put(&c, &p, &log, "/blocked").await;
            },
        );
        assert_eq!(
            notes(&run),
            [
                "/before: ok",
                &format!("/blocked: {:?}", EtcdError::Timeout)
            ]
        );
        let at = run.log[1].0;
        assert!(
            (fails_at..fails_at + 10_000).contains(&at),
            "{reauth:?} failed at {at} µs"
        );
    }
}

/// A watch created with a token etcd no longer knows is answered as created and stays silent;
/// one created after the client authenticated again sees the change.
#[test]
fn etcd_auth_watch_with_a_forgotten_token_stays_silent() {
    let run = run(
        with_auth(),
        vec![etcd_restart(1_000, 1_000)],
        |p, etcd, log| async move {
            let c = client(&p, &etcd, Reauth::OnAnyEtcdError);
            put(&c, &p, &log, "/w").await;
            p.sleep(Duration::from_secs(5)).await;
            let mut stale = c.watch("/w", false, 0).await.expect("created");
            put(&c, &p, &log, "/w").await;
            let mut fresh = c.watch("/w", false, 0).await.expect("created");
            put(&c, &p, &log, "/w").await;
            let wait = Duration::from_secs(10);
            for (name, w) in [("stale", &mut stale), ("fresh", &mut fresh)] {
                let got = crate::time::timeout(wait, w.next()).await;
                let events = matches!(got, Ok(WatchMsg::Events(_)));
                note(&p, &log, format!("{name}: {events}"));
            }
        },
    );
    assert_eq!(
        notes(&run),
        ["/w: ok", "/w: ok", "/w: ok", "stale: false", "fresh: true"]
    );
}
