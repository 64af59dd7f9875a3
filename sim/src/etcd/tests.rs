//! Unit tests of the etcd state machine (revision rules, compares on missing keys, leases, watch
//! history across compaction), and of the service's timing (lease expiry after a restart, the
//! lessor's checks, the two orders of an ambiguous timeout) in simulated runs.

use super::store::*;

fn put_if_absent(key: &str, value: &str, lease: i64) -> Txn {
    Txn::put_if_absent(key, value, lease).otherwise(vec![Op::Range {
        key: key.into(),
        prefix: false,
    }])
}

#[test]
fn revisions_start_at_one_and_bump_once_per_changing_txn() {
    let mut s = Store::default();
    assert_eq!(s.revision(), 1);
    let (rev, ev) = s.put("/a", "1", 0).unwrap();
    assert_eq!((rev, ev.len()), (2, 1));
    // A txn with two writes shares one revision.
    let txn = Txn {
        success: vec![
            Op::Put {
                key: "/b".into(),
                value: "x".into(),
                lease: 0,
            },
            Op::Put {
                key: "/c".into(),
                value: "y".into(),
                lease: 0,
            },
        ],
        ..Default::default()
    };
    let (r, ev) = s.txn(&txn).unwrap();
    assert_eq!(r.revision, 3);
    assert!(ev.iter().all(|e| e.kv.mod_revision == 3));
    assert_eq!(ev.iter().map(|e| e.sub).collect::<Vec<_>>(), vec![0, 1]);
    // Reads, failed compares with read-only branches, deletes of nothing: no bump.
    s.range("/a", false, 0).unwrap();
    let (r, ev) = s.txn(&put_if_absent("/a", "2", 0)).unwrap();
    assert!(!r.succeeded && ev.is_empty());
    assert_eq!(s.delete("/nothing", false).1, 3);
    // Lease grants and keep-alives: no bump.
    let (id, _) = s.grant(10, 0);
    s.keep_alive(id, 1);
    assert_eq!(s.revision(), 3);
}

#[test]
fn versions_and_recreation() {
    let mut s = Store::default();
    s.put("/k", "a", 0).unwrap();
    s.put("/k", "b", 0).unwrap();
    let kv = s.range("/k", false, 0).unwrap().0.pop().unwrap();
    assert_eq!((kv.version, kv.create_revision, kv.mod_revision), (2, 2, 3));
    s.delete("/k", false);
    s.put("/k", "c", 0).unwrap();
    let kv = s.range("/k", false, 0).unwrap().0.pop().unwrap();
    assert_eq!((kv.version, kv.create_revision, kv.mod_revision), (1, 5, 5));
}

#[test]
fn compares_on_missing_keys() {
    let s = Store::default();
    let check = |target: Target, op: CmpOp| {
        let mut s = s.clone();
        let t = Txn {
            compare: vec![Compare {
                key: "/missing".into(),
                op,
                target,
            }],
            ..Default::default()
        };
        s.txn(&t).unwrap().0.succeeded
    };
    assert!(check(Target::Version(0), CmpOp::Equal));
    assert!(check(Target::CreateRevision(0), CmpOp::Equal));
    assert!(check(Target::ModRevision(0), CmpOp::Equal));
    assert!(check(Target::Lease(0), CmpOp::Equal));
    assert!(check(Target::ModRevision(1), CmpOp::Less));
    // A value compare on a missing key is false, whatever the operator.
    assert!(!check(Target::Value(String::new()), CmpOp::Equal));
    assert!(!check(Target::Value("x".into()), CmpOp::NotEqual));
}

#[test]
fn put_if_absent_only_once() {
    let mut s = Store::default();
    assert!(s.txn(&put_if_absent("/e", "h1:1", 0)).unwrap().0.succeeded);
    let (r, _) = s.txn(&put_if_absent("/e", "h2:1", 0)).unwrap();
    assert!(!r.succeeded);
    match &r.results[0] {
        OpResult::Range { kvs } => assert_eq!(&*kvs[0].value, "h1:1"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_lease_fails_the_whole_txn() {
    let mut s = Store::default();
    let txn = Txn {
        success: vec![
            Op::Put {
                key: "/ok".into(),
                value: "1".into(),
                lease: 0,
            },
            Op::Put {
                key: "/bad".into(),
                value: "1".into(),
                lease: 42,
            },
        ],
        ..Default::default()
    };
    assert_eq!(s.txn(&txn), Err(StoreError::LeaseNotFound));
    assert_eq!(s.revision(), 1);
    assert!(s.range("/ok", false, 0).unwrap().0.is_empty());
}

#[test]
fn ttl_below_minimum_is_raised() {
    let mut s = Store::default();
    let (_, ttl) = s.grant(1, 0);
    assert_eq!(ttl, DEFAULT_MIN_TTL_S);
}

#[test]
fn lease_expiry_deletes_all_keys_in_one_revision() {
    let mut s = Store::default();
    let (id, _) = s.grant(60, 1_000);
    s.put("/x", "1", id).unwrap();
    s.put("/y", "1", id).unwrap();
    assert_eq!(s.next_expiry_ms(), Some(61_000));
    assert!(s.expire(60_999).is_empty());
    let expired = s.expire(61_000);
    assert_eq!(expired.len(), 1);
    let (lid, events) = &expired[0];
    assert_eq!(*lid, id);
    assert_eq!(events.len(), 2);
    assert!(events
        .iter()
        .all(|e| e.kind == EventKind::Delete && e.kv.mod_revision == 4));
    assert_eq!(s.revision(), 4);
    assert_eq!(s.keep_alive(id, 61_000), 0);
    assert_eq!(s.time_to_live(id, 61_000), (-1, 0));
}

#[test]
fn keep_alive_resets_to_granted_ttl_and_expired_leases_answer_zero() {
    let mut s = Store::default();
    let (id, _) = s.grant(10, 0);
    assert_eq!(s.keep_alive(id, 9_000), 10);
    assert_eq!(s.time_to_live(id, 9_000), (10, 10));
    assert_eq!(s.time_to_live(id, 9_001), (10, 10));
    assert_eq!(s.time_to_live(id, 10_000), (9, 10));
    // Not yet reaped but past its deadline: keep-alive must not resurrect it.
    assert_eq!(s.keep_alive(id, 19_000), 0);
}

#[test]
fn restart_gives_every_lease_its_full_ttl_plus_the_election_timeout() {
    let mut s = Store::default();
    let (long, _) = s.grant(60, 0);
    // A 2 s lease whose deadline passed while the server was down lives again.
    let (short, _) = s.grant(2, 0);
    s.put("/s", "1", short).unwrap();
    s.promote(50_000, 1_000);
    assert_eq!(s.time_to_live(long, 100_000), (11, 60));
    assert_eq!(s.next_expiry_ms(), Some(53_000));
    assert!(s.expire(52_999).is_empty());
    assert_eq!(s.expire(53_000).len(), 1);
    assert_eq!(s.keep_alive(long, 110_999), 60);
}

#[test]
fn expiry_checks_fall_on_the_lessor_period() {
    use super::lessor::ExpiryChecks;
    let every_500 = ExpiryChecks {
        phase_ms: 250,
        interval_ms: 500,
    };
    assert_eq!(every_500.first_at_or_after(2_001), 2_250);
    assert_eq!(every_500.first_at_or_after(2_250), 2_250);
    assert_eq!(every_500.first_at_or_after(-100), 250);
    assert_eq!(every_500.first_at_or_after(-300), -250);
    assert_eq!(every_500.last_at_or_before(2_249), 1_750);
    assert_eq!(every_500.last_at_or_before(2_250), 2_250);
    assert_eq!(every_500.last_at_or_before(-300), -750);
    let exact = ExpiryChecks {
        phase_ms: 250,
        interval_ms: 0,
    };
    assert_eq!(exact.first_at_or_after(2_001), 2_001);
    assert_eq!(exact.last_at_or_before(2_001), 2_001);
}

#[test]
fn watch_history_and_compaction() {
    let mut s = Store::default();
    s.put("/w/a", "1", 0).unwrap(); // rev 2
    s.put("/w/b", "1", 0).unwrap(); // rev 3
    s.delete("/w/a", false); // rev 4
    s.put("/other", "1", 0).unwrap(); // rev 5
    let ev = s.events_since("/w/", true, 3).unwrap();
    assert_eq!(
        ev.iter()
            .map(|e| (e.kind, e.kv.mod_revision))
            .collect::<Vec<_>>(),
        vec![(EventKind::Put, 3), (EventKind::Delete, 4)]
    );
    assert_eq!(&*ev[1].prev_value, "1");
    // Compaction: below it, reads and watches fail; at it they work.
    assert_eq!(s.compact(4), Ok(5));
    assert_eq!(
        s.events_since("/w/", true, 3),
        Err(StoreError::Compacted {
            compact_revision: 4
        })
    );
    assert!(s.events_since("/w/", true, 4).is_ok());
    assert_eq!(
        s.range("/w/", true, 3),
        Err(StoreError::Compacted {
            compact_revision: 4
        })
    );
    let (kvs, _) = s.range("/w/", true, 4).unwrap();
    assert_eq!(
        kvs.iter().map(|k| &*k.key).collect::<Vec<_>>(),
        vec!["/w/b"]
    );
    // Compaction never goes backwards or into the future.
    assert_eq!(
        s.compact(4),
        Err(StoreError::Compacted {
            compact_revision: 4
        })
    );
    assert_eq!(s.compact(99), Err(StoreError::FutureRevision));
}

#[test]
fn historical_reads_see_old_values() {
    let mut s = Store::default();
    s.put("/h", "old", 0).unwrap(); // 2
    s.put("/h", "new", 0).unwrap(); // 3
    assert_eq!(s.range("/h", false, 2).unwrap().0[0].value.as_ref(), "old");
    assert_eq!(s.range("/h", false, 3).unwrap().0[0].value.as_ref(), "new");
    assert_eq!(s.range("/h", false, 4), Err(StoreError::FutureRevision));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        Put(u8, u8),
        Del(u8),
        PutIfAbsent(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0u8..4, 0u8..3).prop_map(|(k, v)| Step::Put(k, v)),
            (0u8..4).prop_map(Step::Del),
            (0u8..4).prop_map(Step::PutIfAbsent),
        ]
    }

    #[derive(Clone, Debug)]
    enum LeaseStep {
        Grant(i64),
        KeepAlive(usize),
        Expire,
        Restart,
    }

    /// A lease step at an etcd clock reading that may go back (a stepped clock).
    fn lease_step() -> impl Strategy<Value = (LeaseStep, i64)> {
        (
            prop_oneof![
                (1i64..8).prop_map(LeaseStep::Grant),
                (0usize..6).prop_map(LeaseStep::KeepAlive),
                Just(LeaseStep::Expire),
                Just(LeaseStep::Restart),
            ],
            -3_000i64..3_000,
        )
    }

    proptest! {
        // A fixed RNG seed: the same cases in every run (determinism is the product).
        #![proptest_config(ProptestConfig { rng_seed: proptest::test_runner::RngSeed::Fixed(0xe7cd), ..ProptestConfig::default() })]

        /// The revision moves by exactly one per changing transaction and never otherwise, and a
        /// key's version counts the puts since it was (re)created.
        #[test]
        fn revision_and_version_rules(steps in proptest::collection::vec(step(), 0..40)) {
            let mut s = Store::default();
            let mut versions = [0i64; 4];
            for st in steps {
                let before = s.revision();
                let changed = match st {
                    Step::Put(k, v) => { s.put(&format!("/{k}"), &v.to_string(), 0).unwrap(); versions[k as usize] += 1; true }
                    Step::Del(k) => { let (n, _, _) = s.delete(&format!("/{k}"), false); versions[k as usize] = 0; n > 0 }
                    Step::PutIfAbsent(k) => {
                        let ok = s.txn(&put_if_absent(&format!("/{k}"), "p", 0)).unwrap().0.succeeded;
                        prop_assert_eq!(ok, versions[k as usize] == 0);
                        if ok { versions[k as usize] = 1; }
                        ok
                    }
                };
                prop_assert_eq!(s.revision(), before + changed as i64);
                for (k, v) in versions.iter().enumerate() {
                    let got = s.range(&format!("/{k}"), false, 0).unwrap().0.first().map_or(0, |kv| kv.version);
                    prop_assert_eq!(got, *v);
                }
            }
        }

        /// `expire` expires exactly the leases whose deadline has passed, whatever the order of
        /// grants, keep-alives and restarts and however the etcd clock moves (it skips its scan
        /// while no deadline can have passed).
        #[test]
        fn expire_takes_exactly_the_due_leases(steps in proptest::collection::vec(lease_step(), 0..60)) {
            let mut s = Store::new(2);
            let mut deadlines: std::collections::BTreeMap<i64, (i64, i64)> = Default::default();
            let mut granted = Vec::new();
            let mut now = 10_000i64;
            for (st, dt) in steps {
                now += dt;
                match st {
                    LeaseStep::Grant(ttl) => {
                        let (id, ttl) = s.grant(ttl, now);
                        deadlines.insert(id, (ttl, now + ttl * 1000));
                        granted.push(id);
                    }
                    LeaseStep::KeepAlive(i) => {
                        let Some(&id) = granted.get(i) else { continue };
                        let got = s.keep_alive(id, now);
                        match deadlines.get_mut(&id) {
                            Some((ttl, at)) if *at > now => { *at = now + *ttl * 1000; prop_assert_eq!(got, *ttl); }
                            _ => prop_assert_eq!(got, 0),
                        }
                    }
                    LeaseStep::Expire => {
                        let got: Vec<i64> = s.expire(now).into_iter().map(|(id, _)| id).collect();
                        let due: Vec<i64> = deadlines.iter().filter(|(_, (_, at))| *at <= now).map(|(id, _)| *id).collect();
                        for id in &due { deadlines.remove(id); }
                        prop_assert_eq!(got, due);
                    }
                    LeaseStep::Restart => {
                        s.promote(now, 1_000);
                        for (ttl, at) in deadlines.values_mut() { *at = now + 1_000 + *ttl * 1000; }
                    }
                }
            }
        }
    }
}

/// The service in simulated runs: an etcd node and a client node, 1 ms one-way latency.
pub(super) mod service {
    use crate::etcd::lessor::ETCD_EXPIRY_CHECK_INTERVAL_MS;
    use crate::etcd::{Etcd, EtcdConfig, EtcdError, REQUEST_TIMEOUT};
    use crate::event::{Event, Record};
    use crate::monitor::{Failure, Monitor};
    use crate::runtime::{on_fresh_thread, simulate, SimConfig};
    use crate::{Fault, FaultKind, Host, NetSpec, NodeSpec, Proc, Schedule};
    use std::cell::RefCell;
    use std::future::Future;
    use std::rc::Rc;
    use std::time::Duration;

    /// Every event of a run with its true time (µs).
    type Events = Rc<RefCell<Vec<(u64, Event)>>>;

    struct Recorder(Events);

    impl Monitor for Recorder {
        fn on_event(&mut self, rec: &Record) -> Option<Failure> {
            self.0.borrow_mut().push((rec.t_us, rec.event.clone()));
            None
        }
        fn on_tick(&mut self, _: u64) -> Option<Failure> {
            None
        }
        fn coverage(&self) -> Vec<(&'static str, bool)> {
            Vec::new()
        }
    }

    /// What a run left: the events and the body's log of (true µs, note).
    pub(in crate::etcd) struct Run {
        pub(in crate::etcd) events: Vec<(u64, Event)>,
        pub(in crate::etcd) log: Vec<(u64, String)>,
    }

    impl Run {
        /// True time (µs) of the put of `key`, if one happened.
        pub(in crate::etcd) fn put_at(&self, key: &str) -> Option<u64> {
            self.events.iter().find_map(|(t, e)| match e {
                Event::EtcdPut { key: k, .. } if &**k == key => Some(*t),
                _ => None,
            })
        }

        /// Position in the event stream of the put of `key`, if one happened.
        fn put_index(&self, key: &str) -> Option<usize> {
            self.events
                .iter()
                .position(|(_, e)| matches!(e, Event::EtcdPut { key: k, .. } if &**k == key))
        }

        /// True time (µs) of the first deletion of `key`.
        fn deleted_at(&self, key: &str) -> Option<u64> {
            self.events.iter().find_map(|(t, e)| match e {
                Event::EtcdDelete { key: k, .. } if &**k == key => Some(*t),
                _ => None,
            })
        }
    }

    pub(in crate::etcd) type Log = Rc<RefCell<Vec<(u64, String)>>>;

    /// Runs `body` as a process on the client node next to etcd (configured by `cfg`).
    pub(in crate::etcd) fn run<F, Fut>(cfg: EtcdConfig, schedule: Schedule, body: F) -> Run
    where
        F: Fn(Proc, Etcd, Log) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        on_fresh_thread(move || {
            let events: Events = Rc::default();
            let log: Log = Rc::default();
            let l2 = log.clone();
            let node = |name: &str| NodeSpec {
                name: name.into(),
                offset_us: 0,
                drift_ppm: 0,
            };
            let sim = SimConfig {
                seed: 7,
                nodes: vec![node("etcd"), node("client")],
                net: NetSpec::fixed(1_000),
                schedule,
                fault_window_ms: 600_000,
                liveness_ms: 10_000,
                keep_trace: false,
            };
            simulate(sim, Box::new(Recorder(events.clone())), move |world| {
                let etcd = Etcd::install(world, 0, cfg);
                let body = Rc::new(body);
                world.set_services(
                    1,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("test");
                        p.spawn("body", body(p.clone(), etcd.clone(), l2.clone()));
                    }),
                );
            });
            let events = events.borrow().clone();
            let log = log.borrow().clone();
            Run { events, log }
        })
        .expect("run")
    }

    pub(in crate::etcd) fn note(p: &Proc, log: &Log, what: String) {
        log.borrow_mut().push((p.world().now_us(), what));
    }

    pub(in crate::etcd) fn etcd_fault(at_ms: u64, dur_ms: u64, kind: FaultKind) -> Fault {
        Fault {
            at_ms,
            dur_ms,
            kind,
        }
    }

    /// etcd's host crashes at `at_ms` and boots `dur_ms` later.
    pub(in crate::etcd) fn etcd_crash(at_ms: u64, dur_ms: u64) -> Fault {
        let node = "etcd".into();
        etcd_fault(at_ms, dur_ms, FaultKind::Crash { node })
    }

    /// The etcd process restarts at `at_ms` and is back `dur_ms` later, its host up.
    pub(in crate::etcd) fn etcd_restart(at_ms: u64, dur_ms: u64) -> Fault {
        let node = "etcd".into();
        etcd_fault(at_ms, dur_ms, FaultKind::ServiceRestart { node })
    }

    /// etcd serves every request 2 s late for the whole run (requests queue).
    pub(in crate::etcd) fn slow_etcd() -> Fault {
        let node = "etcd".into();
        etcd_fault(
            0,
            600_000,
            FaultKind::ServiceSlow {
                node,
                extra_ms: 2_000,
            },
        )
    }

    /// An ambiguous timeout applies the request before the client's timeout fires or after it
    /// (the server gets to it late), or not at all; the client sees `Timeout` every time.
    #[test]
    fn an_ambiguous_request_is_applied_before_or_after_the_clients_timeout() {
        let ambiguous = etcd_fault(
            0,
            600_000,
            FaultKind::ServiceAmbiguous {
                node: "etcd".into(),
                percent: 100,
            },
        );
        let run = run(
            EtcdConfig::default(),
            vec![ambiguous],
            |p, etcd, log| async move {
                let c = etcd.client(&p);
                for i in 0..24 {
                    let r = c.put(&format!("/amb/{i}"), "x", 0).await;
                    note(&p, &log, format!("{i} {r:?}"));
                }
            },
        );
        assert_eq!(run.log.len(), 24);
        let (mut before, mut after, mut lost) = (0, 0, 0);
        let mut sent_us = 0;
        for (i, (timed_out_us, what)) in run.log.iter().enumerate() {
            assert_eq!(what, &format!("{i} Err(Timeout)"));
            // Each call waits out the whole client timeout.
            let waited = timed_out_us - sent_us;
            assert!(
                (5_000_000..5_001_000).contains(&waited),
                "waited {waited} µs"
            );
            match run.put_at(&format!("/amb/{i}")) {
                None => lost += 1,
                Some(t) if t < *timed_out_us => before += 1,
                Some(t) => {
                    assert!(t > *timed_out_us, "applied at the timeout instant");
                    after += 1;
                }
            }
            sent_us = *timed_out_us;
        }
        assert!(
            before > 0 && after > 0 && lost > 0,
            "{before} applied before the timeout, {after} after, {lost} never"
        );
    }

    /// A late request does not hold the others (etcd serves requests concurrently): another
    /// client's request sent while it waits is answered at once, and so applied before it.
    #[test]
    fn a_late_request_does_not_hold_the_others() {
        let ambiguous = etcd_fault(
            0,
            600_000,
            FaultKind::ServiceAmbiguous {
                node: "etcd".into(),
                percent: 50,
            },
        );
        let run = run(
            EtcdConfig::default(),
            vec![ambiguous],
            |p, etcd, log| async move {
                let first = etcd.client(&p);
                let second = etcd.client(&p);
                for i in 0..ROUNDS {
                    let (a, b) = (format!("/q/{i}/a"), format!("/q/{i}/b"));
                    let sent_us = p.world().now_us();
                    let later = async {
                        p.sleep(Duration::from_millis(100)).await;
                        let r = second.put(&b, "x", 0).await;
                        (r, p.world().now_us())
                    };
                    let (ra, (rb, b_done_us)) = futures::join!(first.put(&a, "x", 0), later);
                    note(&p, &log, format!("{i} {sent_us} {b_done_us} {ra:?} {rb:?}"));
                }
            },
        );
        assert_eq!(run.log.len(), ROUNDS);
        let mut overtaken = 0;
        for (i, (_, what)) in run.log.iter().enumerate() {
            let words: Vec<&str> = what.split(' ').collect();
            let sent_us: u64 = words[1].parse().unwrap();
            let b_done_us: u64 = words[2].parse().unwrap();
            let a_deadline = sent_us + REQUEST_TIMEOUT.as_micros() as u64;
            let (a, b) = (format!("/q/{i}/a"), format!("/q/{i}/b"));
            if let (Some(a_at), Some(b_at)) = (run.put_at(&a), run.put_at(&b)) {
                // A applied late, B answered.
                if a_at > a_deadline && words[4].starts_with("Ok(") {
                    assert!(run.put_index(&b) < run.put_index(&a), "round {i}");
                    assert!(
                        b_at < a_deadline && b_done_us < sent_us + 200_000,
                        "round {i}: {what}"
                    );
                    overtaken += 1;
                }
            }
        }
        assert!(
            overtaken > 0,
            "no request was answered while a late one waited"
        );
    }

    const ROUNDS: usize = 48;

    /// After a restart a lease gets its full TTL plus the election timeout (1 s) from the recovery,
    /// as etcd 3.4's `Promote` gives it; without the reset it keeps its old deadline.
    #[test]
    fn a_restart_renews_leases_with_their_ttl_plus_the_election_timeout() {
        let crash = etcd_crash(30_000, 5_000);
        let body = |p: Proc, etcd: Etcd, _log: Log| async move {
            let c = etcd.client(&p);
            let (lease, _) = c.grant(60).await.unwrap();
            c.put("/r", "kept", lease).await.unwrap();
        };
        let reset = run(EtcdConfig::default(), vec![crash.clone()], body);
        // Recovered at 35 s: 35 + 1 + 60 = 96 s.
        assert_eq!(reset.deleted_at("/r"), Some(96_000_000));
        let kept = EtcdConfig {
            lease_ttl_reset_on_restart: false,
            ..EtcdConfig::default()
        };
        let no_reset = run(kept, vec![crash], body);
        // Granted when the request arrived (1 ms): the deadline stays 60.001 s.
        assert_eq!(no_reset.deleted_at("/r"), Some(60_001_000));
    }

    /// With etcd's 500 ms lessor period a lease ends at the first check after its deadline (checks
    /// from the server's boot at 0): until then its key is still there, and a keep-alive already
    /// answers 0. By default it ends at its deadline.
    #[test]
    fn the_lessor_period_delays_expiry_to_the_next_check() {
        let body = |p: Proc, etcd: Etcd, log: Log| async move {
            let c = etcd.client(&p);
            let (lease, _) = c.grant(2).await.unwrap();
            c.put("/t", "v", lease).await.unwrap();
            p.sleep(Duration::from_millis(2_100)).await;
            let ttl = c.keep_alive(lease).await;
            let kv = c.get("/t").await.unwrap().map(|kv| kv.value.to_string());
            note(&p, &log, format!("{ttl:?} {kv:?}"));
        };
        let ticking = EtcdConfig {
            expiry_check_interval_ms: ETCD_EXPIRY_CHECK_INTERVAL_MS,
            ..EtcdConfig::default()
        };
        let run_ticking = run(ticking, vec![], body);
        // Granted at 1 ms: deadline 2.001 s, noticed at the check at 2.5 s.
        assert_eq!(run_ticking.deleted_at("/t"), Some(2_500_000));
        assert_eq!(run_ticking.log[0].1, r#"Ok(0) Some("v")"#);
        let exact = run(EtcdConfig::default(), vec![], body);
        assert_eq!(exact.deleted_at("/t"), Some(2_001_000));
        assert_eq!(exact.log[0].1, "Ok(0) None");
    }

    #[test]
    fn an_unavailable_server_is_not_ambiguous() {
        let down = etcd_fault(
            0,
            10_000,
            FaultKind::ServiceUnavailable {
                node: "etcd".into(),
            },
        );
        let run = run(
            EtcdConfig::default(),
            vec![down],
            |p, etcd, log| async move {
                let r = etcd.client(&p).put("/u", "x", 0).await;
                note(&p, &log, format!("{r:?}"));
            },
        );
        assert_eq!(
            run.log[0].1,
            format!("{:?}", Err::<i64, _>(EtcdError::Unavailable))
        );
        assert_eq!(run.put_at("/u"), None);
    }
}
