//! Unit tests of the etcd state machine (revision rules, compares on missing keys, leases, watch
//! history across compaction).

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
fn restart_resets_lease_ttls() {
    let mut s = Store::default();
    let (id, _) = s.grant(60, 0);
    s.reset_lease_ttls(50_000);
    assert_eq!(s.time_to_live(id, 100_000), (10, 60));
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
                        s.reset_lease_ttls(now);
                        for (ttl, at) in deadlines.values_mut() { *at = now + *ttl * 1000; }
                    }
                }
            }
        }
    }
}
