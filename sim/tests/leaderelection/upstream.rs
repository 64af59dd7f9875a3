//! One scripted process next to the API server: the mirrors of client-go's own tests (the crate
//! documentation names the upstream commit, file and lines of each).

use super::{near, sim_config, Write, Writes, API, MS, S};
use serde_json::Value::Null;
use sim::kube::Kube;
use sim::leaderelection::{
    peek_lease, seed_lease, ConfigError, LeaderElectionConfig, LeaderElectionRecord, LeaderElector,
    LeaseSpec, ReleaseStyle, CILIUM_OPERATOR_LOCK, LEASE_KIND,
};
use sim::runtime::{on_fresh_thread, simulate};
use sim::world::Host;
use sim::{Proc, World};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// Runs `body` as a process on node `n1` next to the API server, with `seeds` (name, spec JSON)
/// in the store; returns what the body logged, then the Lease writes.
fn script<F, Fut>(
    seeds: Vec<(&'static str, Option<LeaseSpec>)>,
    body: F,
) -> (Vec<String>, Vec<Write>)
where
    F: Fn(Proc, Kube, World, Rc<RefCell<Vec<String>>>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    on_fresh_thread(move || {
        let log = Rc::new(RefCell::new(Vec::new()));
        let writes = Rc::new(RefCell::new(Vec::new()));
        let l2 = log.clone();
        let cfg = sim_config(7, &[API, "n1"], vec![], 120_000);
        simulate(cfg, Box::new(Writes(writes.clone())), move |world| {
            let kube = Kube::install(world, 0);
            for (name, spec) in seeds {
                match spec {
                    Some(spec) => seed_lease(&kube, name, &spec),
                    // A Lease without a spec.
                    None => kube.seed_object(LEASE_KIND, name, Null, Null),
                }
            }
            let w = world.clone();
            let body = Rc::new(body);
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("test");
                    let fut = body(p.clone(), kube.clone(), w.clone(), l2.clone());
                    p.spawn("body", fut);
                }),
            );
        });
        let out = (log.borrow().clone(), writes.borrow().clone());
        out
    })
    .expect("run")
}

/// client-go's unit-test configuration: identity "baz", lock "bar", LeaseDuration 10 s (the
/// other durations are only validated here: 5 s and 2 s), releasing as client-go @cg does.
fn baz(kube: &Kube, p: &Proc) -> LeaderElector {
    baz_releasing(kube, p, ReleaseStyle::ReadThenUpdate)
}

/// [`baz`] with the release of `style`.
fn baz_releasing(kube: &Kube, p: &Proc, style: ReleaseStyle) -> LeaderElector {
    let cfg = LeaderElectionConfig {
        lease_duration: Duration::from_secs(10),
        renew_deadline: Duration::from_secs(5),
        retry_period: Duration::from_secs(2),
        release_style: style,
        ..LeaderElectionConfig::new("bar", "baz")
    };
    LeaderElector::new(kube, p, cfg).expect("valid")
}

fn held_by(holder: &str, lease_duration_seconds: i32) -> Option<LeaseSpec> {
    Some(
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds,
            ..Default::default()
        }
        .to_spec(),
    )
}

/// The end of a script: the body ran to completion.
const DONE: &str = "done";

fn ok(log: &[String]) {
    assert_eq!(log.last().map(|s| s.as_str()), Some(DONE), "{log:?}");
}

fn writes_of(writes: &[Write]) -> Vec<&str> {
    writes.iter().map(|w| w.what.as_str()).collect()
}

#[test]
fn upstream_leaderelection_acquire_from_no_object() {
    let (log, writes) = script(vec![], |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        let s = le.snapshot();
        assert_eq!(s.observed.holder_identity, "baz");
        assert_eq!(s.observed.leader_transitions, 0);
        assert_eq!(s.observed.lease_duration_seconds, 10);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "baz");
        let stored = peek_lease(&kube, "bar").expect("created");
        assert_eq!(stored.holder_identity.as_deref(), Some("baz"));
        assert_eq!(stored.lease_transitions, Some(0));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    // Get (not found), then Create: one write.
    assert_eq!(writes_of(&writes), ["create"]);
}

#[test]
fn upstream_leaderelection_acquire_from_object_without_annotations() {
    // A Lease with no spec at all: an empty record, taken at once (transition 1).
    let seeds = vec![("bar", None)];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        assert_eq!(le.get_leader(), "baz");
        assert_eq!(le.snapshot().observed.leader_transitions, 1);
        assert_eq!(peek_lease(&kube, "bar").unwrap().lease_transitions, Some(1));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
}

#[test]
fn upstream_leaderelection_acquire_from_led_object_with_the_lease_duration_seconds() {
    // Held by "bing" with leaseDurationSeconds 3: the candidate waits 3 s (the record's duration,
    // not its own 10 s) from when it first saw the record, on its own clock.
    let seeds = vec![("bar", held_by("bing", 3))];
    let (log, writes) = script(seeds, |p, kube, w, log| async move {
        let le = baz(&kube, &p);
        assert!(!le.try_acquire_or_renew().await);
        let seen_at = le.snapshot().observed_time_mono_us;
        assert_eq!(le.get_leader(), "bing");
        p.sleep(Duration::from_millis(2_900)).await;
        assert!(!le.try_acquire_or_renew().await, "taken before 3 s");
        // Unchanged record: not observed again.
        assert_eq!(le.snapshot().observed_time_mono_us, seen_at);
        p.sleep(Duration::from_millis(200)).await;
        assert!(le.try_acquire_or_renew().await, "not taken after 3 s");
        assert_eq!(le.get_leader(), "baz");
        assert_eq!(le.snapshot().observed.leader_transitions, 1);
        log.borrow_mut().push(format!("{}", w.now_us() / MS));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
    // Tries at 0, 2.902 and 3.104 s (2 ms a request).
    assert_eq!(log[0], "3108");
}

#[test]
fn upstream_leaderelection_acquire_from_unled_object() {
    let seeds = vec![("bar", Some(LeaderElectionRecord::default().to_spec()))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        assert_eq!(le.get_leader(), "baz");
        assert_eq!(le.snapshot().observed.leader_transitions, 1);
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
}

#[test]
fn upstream_leaderelection_acquire_from_led_unacked_object() {
    // Upstream presets the observed record {holder "bing"} observed long ago; the Get returns the
    // same record (leaseDurationSeconds 0), so it is not observed again and has expired. Here the
    // first try observes it (and refuses: observed after `now`, so still valid at `now`); the
    // second, at once, finds the same record and takes it.
    let seeds = vec![("bar", held_by("bing", 0))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(!le.try_acquire_or_renew().await);
        assert_eq!(le.get_leader(), "bing");
        assert!(le.try_acquire_or_renew().await);
        assert_eq!(le.get_leader(), "baz");
        assert_eq!(le.snapshot().observed.leader_transitions, 1);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "baz");
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
}

#[test]
fn upstream_leaderelection_acquire_from_empty_led_acked_object() {
    // An empty holder is free to take even if its record was just observed.
    let seeds = vec![("bar", held_by("", 10))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        assert_eq!(le.get_leader(), "baz");
        assert_eq!(le.snapshot().observed.leader_transitions, 1);
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
}

#[test]
fn upstream_leaderelection_dont_acquire_from_led_acked_object() {
    let seeds = vec![("bar", held_by("bing", 10))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(!le.try_acquire_or_renew().await);
        le.maybe_report_transition();
        let s = le.snapshot();
        assert_eq!(s.observed.holder_identity, "bing");
        assert_eq!(s.reported_leader, "bing");
        assert!(!s.is_leader);
        // Still held 9.9 s later (the record has not changed, so the first sighting counts).
        p.sleep(Duration::from_millis(9_900)).await;
        assert!(!le.try_acquire_or_renew().await);
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert!(writes.is_empty(), "{writes:?}");
}

#[test]
fn upstream_leaderelection_renew_already_acquired_object() {
    // The record already names "baz" (say, a restart with the same identity): renewed, no
    // transition, acquireTime kept.
    let acquired = LeaderElectionRecord {
        holder_identity: "baz".into(),
        lease_duration_seconds: 10,
        acquire_time_us: Some(-7 * S as i64),
        renew_time_us: Some(-(S as i64)),
        leader_transitions: 0,
    };
    let seeds = vec![("bar", Some(acquired.to_spec()))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        p.sleep(Duration::from_secs(1)).await;
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        let stored = peek_lease(&kube, "bar").unwrap();
        assert_eq!(stored.holder_identity.as_deref(), Some("baz"));
        assert_eq!(stored.lease_transitions, Some(0));
        assert_eq!(stored.acquire_time, Some(-7 * S as i64));
        // renewTime: the wall clock when the try began (1 s; 0 offset).
        assert_eq!(stored.renew_time, Some(S as i64));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["spec"]);
}

#[test]
fn upstream_leaderelection_release_lease() {
    let (log, writes) = script(vec![], |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "baz");
        assert!(le.release().await);
        let s = le.snapshot();
        assert_eq!(s.observed.holder_identity, "");
        assert_eq!(s.observed.leader_transitions, 0);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "");
        let stored = peek_lease(&kube, "bar").unwrap();
        assert_eq!(stored.holder_identity.as_deref(), Some(""));
        assert_eq!(stored.lease_duration_seconds, Some(1));
        assert_eq!(stored.lease_transitions, Some(0));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["create", "spec"]);
}

#[test]
fn upstream_leaderelection_release_reads_and_leaves_a_lease_it_does_not_hold() {
    // TestReleaseMethodCallsGet: release reads the lock; not the holder, it writes nothing.
    let seeds = vec![("bar", held_by("bing", 10))];
    let (log, writes) = script(seeds, |p, kube, _w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.release().await);
        assert_eq!(
            peek_lease(&kube, "bar").unwrap().holder_identity.as_deref(),
            Some("bing")
        );
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert!(writes.is_empty(), "{writes:?}");
}

#[test]
fn upstream_leaderelection_release_retries_on_conflict() {
    // A write lands between release's read (at the server at T+1 ms) and its update (T+3 ms):
    // the update conflicts, release reads again and succeeds.
    let (log, writes) = script(vec![], |p, kube, w, log| async move {
        let le = baz(&kube, &p);
        assert!(le.try_acquire_or_renew().await);
        p.sleep(Duration::from_secs(1)).await;
        let t = w.now_us();
        let (k2, p2, w2) = (kube.clone(), p.clone(), w.clone());
        p.spawn("writer", async move {
            sleep_until_true(&w2, t + MS).await;
            let cur = k2.peek(LEASE_KIND, "bar").unwrap();
            let same = LeaseSpec::of(&cur).unwrap();
            let body = serde_json::to_value(&same).unwrap();
            k2.client(&p2)
                .update(LEASE_KIND, "bar", cur.rv, sim::kube::Part::Spec, body)
                .await
                .expect("the interleaved write");
        });
        assert!(le.release().await);
        assert_eq!(
            peek_lease(&kube, "bar").unwrap().holder_identity.as_deref(),
            Some("")
        );
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["create", "spec", "conflict", "spec"]);
}

/// Sleeps until true time `t_us` (tests only: model code sleeps on its node's clock).
async fn sleep_until_true(w: &World, t_us: u64) {
    sim::time::sleep_until(w.instant_at(t_us)).await;
}

/// testReleaseOnCancellation's script with the release of `style`: 15 s / 2 s / 1 s,
/// ReleaseOnCancel; lead, stop at 3.5 s, and wait for the stopped-leading hook, after which the
/// Lease has an empty holder and a 1 s lease whichever way it was released. Returns when the
/// hook ran (ms of true time) and the Lease writes.
fn release_on_cancellation(style: ReleaseStyle) -> (u64, Vec<Write>) {
    let (log, writes) = script(vec![], move |p, kube, w, log| async move {
        let cfg = LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_secs(1),
            release_on_cancel: true,
            release_style: style,
            ..LeaderElectionConfig::new("bar", "baz")
        };
        let le = LeaderElector::new(&kube, &p, cfg).unwrap();
        let runner = le.clone();
        p.spawn("run", async move { runner.run().await });
        assert!(le.started_leading().await);
        p.sleep(Duration::from_millis(3_500)).await;
        assert!(le.leading());
        le.stop();
        // The leader context ends with the stop, before the release.
        assert!(!le.leading());
        le.stopped_leading().await;
        log.borrow_mut().push(format!("{}", w.now_us() / MS));
        let stored = peek_lease(&kube, "bar").unwrap();
        assert_eq!(stored.holder_identity.as_deref(), Some(""));
        assert_eq!(stored.lease_duration_seconds, Some(1));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    // Create at 3 ms, renewals at 5 ms, 1.007, 2.009 and 3.011 s, then the release's update.
    assert_eq!(
        writes_of(&writes),
        ["create", "spec", "spec", "spec", "spec", "spec"]
    );
    (log[0].parse().unwrap(), writes)
}

#[test]
fn upstream_leaderelection_release_on_cancellation() {
    let (stopped_ms, writes) = release_on_cancellation(ReleaseStyle::ReadThenUpdate);
    // Leading from 4 ms, stopped at 3.504 s; the release's read and write take 4 ms.
    assert_eq!(stopped_ms, 3508);
    near(writes.last().unwrap().t_us, 3_507 * MS);
}

#[test]
fn upstream_leaderelection_config_validation() {
    let (log, _) = script(vec![], |p, kube, _w, log| async move {
        let base = LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_secs(1),
            release_on_cancel: true,
            ..LeaderElectionConfig::new("bar", "baz")
        };
        assert!(LeaderElector::new(&kube, &p, base.clone()).is_ok());
        let bad = |f: &dyn Fn(&mut LeaderElectionConfig)| {
            let mut c = base.clone();
            f(&mut c);
            LeaderElector::new(&kube, &p, c).err()
        };
        assert_eq!(
            bad(&|c| c.identity.clear())
                .map(|e| e.to_string())
                .as_deref(),
            Some("Lock identity is empty")
        );
        assert_eq!(
            bad(&|c| c.lease_duration = Duration::from_secs(2)),
            Some(ConfigError::LeaseDurationNotAboveRenewDeadline)
        );
        // RenewDeadline must exceed 1.2 x RetryPeriod: 1.2 s is refused, 1.2 s + 1 ns is not.
        assert_eq!(
            bad(&|c| c.renew_deadline = Duration::from_millis(1_200)),
            Some(ConfigError::RenewDeadlineNotAboveJitteredRetry)
        );
        assert_eq!(
            bad(&|c| c.renew_deadline = Duration::from_nanos(1_200_000_001)),
            None
        );
        assert_eq!(
            bad(&|c| c.retry_period = Duration::ZERO),
            Some(ConfigError::ZeroRetryPeriod)
        );
        // The defaults are cilium-operator's and valid; the lock's requests time out after
        // max(1 s, RenewDeadline / 2).
        let cilium = LeaderElectionConfig::cilium_operator("op-1");
        assert_eq!(cilium.lock_name, CILIUM_OPERATOR_LOCK);
        assert_eq!(
            (
                cilium.lease_duration,
                cilium.renew_deadline,
                cilium.retry_period
            ),
            (
                Duration::from_secs(15),
                Duration::from_secs(10),
                Duration::from_secs(2)
            )
        );
        assert!(cilium.release_on_cancel);
        assert_eq!(cilium.lock_request_timeout(), Duration::from_secs(5));
        assert_eq!(base.lock_request_timeout(), Duration::from_secs(1));
        assert!(LeaderElector::new(&kube, &p, cilium).is_ok());
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
}

#[test]
fn upstream_leaderelection_fast_path_after_lock_acquired() {
    // TestFastPathLeaderElection: after the create, every renewal is one update of the cached
    // Lease (no read); a conflicting write sends the next renewal down the slow path (read,
    // update), and leadership stays.
    let (log, writes) = script(vec![], |p, kube, w, log| async move {
        let cfg = LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_secs(1),
            ..LeaderElectionConfig::new("bar", "baz")
        };
        let le = LeaderElector::new(&kube, &p, cfg).unwrap();
        let runner = le.clone();
        p.spawn("run", async move { runner.run().await });
        assert!(le.started_leading().await);
        // Renewals at 0.005, 1.007, 2.009 s; an identical write at 2.5 s.
        sleep_until_true(&w, 2_500 * MS).await;
        let cur = kube.peek(LEASE_KIND, "bar").unwrap();
        let body = serde_json::to_value(LeaseSpec::of(&cur).unwrap()).unwrap();
        kube.client(&p)
            .update(LEASE_KIND, "bar", cur.rv, sim::kube::Part::Spec, body)
            .await
            .unwrap();
        sleep_until_true(&w, 5_000 * MS).await;
        assert!(le.leading());
        assert_eq!(le.snapshot().observed.leader_transitions, 0);
        le.stop();
        le.stopped_leading().await;
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    let elector: Vec<(u64, &str)> = writes
        .iter()
        .map(|w| (w.t_us / MS, w.what.as_str()))
        .collect();
    assert_eq!(
        elector,
        [
            // Get (not found) 0-2 ms, Create 2-4 ms; the first round at once.
            (3, "create"),
            (5, "spec"),
            // Each round RetryPeriod after the last one's answer.
            (1_007, "spec"),
            (2_009, "spec"),
            // the test's own write
            (2_501, "spec"),
            // fast path refused, then the slow path's read and update
            (3_011, "conflict"),
            (3_015, "spec"),
            (4_017, "spec"),
        ]
    );
}

/// client-go v0.30.3, the version the pinned cilium-operator vendors (`ReleaseStyle::UpdateCached`):
/// `testReleaseLease` at tag v0.30.3 (leaderelection_test.go l. 401-534) scripts exactly three
/// API calls (get and create for the acquire, one update for the release) and fails on any
/// other: the release reads nothing and updates the cached Lease once (leaderelection.go
/// `release` l. 296-314 at v0.30.3).
#[test]
fn upstream_leaderelection_v0_30_3_release_lease() {
    let (log, writes) = script(vec![], |p, kube, w, log| async move {
        let le = baz_releasing(&kube, &p, ReleaseStyle::UpdateCached);
        assert!(le.try_acquire_or_renew().await);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "baz");
        let t = w.now_us();
        assert!(le.release_cached().await);
        // One request (2 ms), not a read and an update (4 ms): no API call but the update.
        near(w.now_us() - t, 2 * MS);
        let s = le.snapshot();
        assert_eq!(s.observed.holder_identity, "");
        assert_eq!(s.observed.leader_transitions, 0);
        le.maybe_report_transition();
        assert_eq!(le.snapshot().reported_leader, "");
        let stored = peek_lease(&kube, "bar").unwrap();
        assert_eq!(stored.holder_identity.as_deref(), Some(""));
        assert_eq!(stored.lease_duration_seconds, Some(1));
        assert_eq!(stored.lease_transitions, Some(0));
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["create", "spec"]);
}

#[test]
fn v0_30_3_release_gives_up_on_a_conflict() {
    // No upstream test: v0.30.3's `release` returns false on any Update error (l. 308-311), with
    // no read and no second attempt, where master's `tryRelease` reads again after a conflict
    // (TestReleaseRetriesOnConflict, mirrored above). A write moves the Lease's version first.
    let (log, writes) = script(vec![], |p, kube, _w, log| async move {
        let le = baz_releasing(&kube, &p, ReleaseStyle::UpdateCached);
        assert!(le.try_acquire_or_renew().await);
        let cur = kube.peek(LEASE_KIND, "bar").unwrap();
        let body = serde_json::to_value(LeaseSpec::of(&cur).unwrap()).unwrap();
        kube.client(&p)
            .update(LEASE_KIND, "bar", cur.rv, sim::kube::Part::Spec, body)
            .await
            .expect("the interleaved write");
        assert!(!le.release_cached().await);
        // Still this elector's: it expires instead of being handed over.
        assert_eq!(
            peek_lease(&kube, "bar").unwrap().holder_identity.as_deref(),
            Some("baz")
        );
        log.borrow_mut().push(DONE.into());
    });
    ok(&log);
    assert_eq!(writes_of(&writes), ["create", "spec", "conflict"]);
}

#[test]
fn upstream_leaderelection_v0_30_3_release_on_cancellation() {
    // testReleaseOnCancellation at v0.30.3 (l. 544-766): after the cancel the lock is released
    // by the next update, with no read before it.
    let (stopped_ms, writes) = release_on_cancellation(ReleaseStyle::UpdateCached);
    // Stopped at 3.504 s as with master's release, which then needs 4 ms (a read, an update);
    // this one writes at once: 2 ms.
    assert_eq!(stopped_ms, 3506);
    near(writes.last().unwrap().t_us, 3_505 * MS);
}
