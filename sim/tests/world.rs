//! The world and the etcd service driven through the simulated network: lease expiry on a skewed
//! or stepped etcd clock, ambiguous timeouts (applied and not), watches across compaction, partitions,
//! pauses, task stalls and silent deaths.

use sim::etcd::{Etcd, EtcdConfig, EtcdError, EventKind, WatchMsg};
use sim::monitor::NullMonitor;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Fault, FaultKind, NetSpec, NodeSpec, Proc, Schedule, World};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

fn node(name: &str, drift_ppm: i64) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm,
    }
}

/// Runs `body` as a process on node `client` next to an etcd node, with `schedule`; returns what
/// the body logged.
fn with_etcd<F, Fut>(etcd_drift_ppm: i64, schedule: Schedule, body: F) -> Vec<String>
where
    F: Fn(Proc, Etcd, World, Rc<RefCell<Vec<String>>>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    on_fresh_thread(move || {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l2 = log.clone();
        let cfg = SimConfig {
            seed: 7,
            nodes: vec![node("etcd", etcd_drift_ppm), node("client", 0)],
            net: NetSpec::fixed(1_000),
            schedule,
            fault_window_ms: 200_000,
            liveness_ms: 30_000,
            keep_trace: false,
        };
        simulate(cfg, Box::new(NullMonitor), move |world| {
            let etcd = Etcd::install(world, 0, EtcdConfig::default());
            let w = world.clone();
            let body = Rc::new(body);
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("test");
                    let fut = body(p.clone(), etcd.clone(), w.clone(), l2.clone());
                    p.spawn("body", fut);
                }),
            );
        });
        let out = log.borrow().clone();
        out
    })
    .expect("run")
}

fn secs(w: &World) -> f64 {
    w.now_us() as f64 / 1e6
}

/// Grants a 60 s lease at about 0 s and attaches `/k`; returns what a keep-alive at `renew_at_s`
/// (if any) got and whether `/k` was still there then, and when `/k` was deleted (true seconds).
fn lease_end(etcd_drift_ppm: i64, schedule: Schedule, renew_at_s: Option<u64>) -> (String, f64) {
    let log = with_etcd(
        etcd_drift_ppm,
        schedule,
        move |p, etcd, w, log| async move {
            let c = etcd.client(&p);
            let (lease, _) = c.grant(60).await.unwrap();
            c.put("/k", "v", lease).await.unwrap();
            let mut watch = c.watch("/k", false, 0).await.unwrap();
            let (w2, log2) = (w.clone(), log.clone());
            p.spawn("watch", async move {
                if let WatchMsg::Events(ev) = watch.next().await {
                    assert_eq!(ev[0].kind, EventKind::Delete);
                    log2.borrow_mut().push(format!("deleted {:.3}", secs(&w2)));
                }
            });
            if let Some(s) = renew_at_s {
                p.sleep(Duration::from_secs(s)).await;
                let ttl = c.keep_alive(lease).await;
                let kv = c.get("/k").await.unwrap().is_some();
                log.borrow_mut().push(format!("renew {ttl:?} {kv}"));
            }
        },
    );
    let find = |prefix: &str| {
        log.iter()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_default()
            .to_string()
    };
    (find("renew "), find("deleted ").parse().unwrap())
}

fn etcd_step(at_ms: u64, delta_ms: i64) -> Fault {
    Fault {
        at_ms,
        dur_ms: 0,
        kind: FaultKind::ClockStep {
            node: "etcd".into(),
            delta_ms,
        },
    }
}

#[test]
fn etcd_lease_expiry_follows_the_monotonic_clock_not_a_fast_wall_clock() {
    // etcd's wall clock runs 10% fast: the 60 s lease (granted at 1 ms, deadline 60.001 s on the
    // monotonic clock) is due on the wall clock at 54.546 s, found unexpired and looked at again
    // 7 wall seconds (6.364 true s) later, at 60.910 s, when it has expired.
    let (_, t) = lease_end(100_000, vec![], None);
    assert!((60.90..60.92).contains(&t), "deleted at {t}");
}

#[test]
fn etcd_lease_ignores_wall_step_forward_and_is_looked_at_again_every_7_s() {
    // At 10 s etcd's wall clock jumps 30 s forward. The lease does not end early: due on the wall
    // clock at 30.001 s, it is looked at again every 7 s (37.001, ..., 58.001 s) and revoked at
    // the first look after its monotonic deadline (60.001 s): 65.001 s. A keep-alive at 40 s
    // still renews it (deadline 100.002 s).
    let (renew, t) = lease_end(0, vec![etcd_step(10_000, 30_000)], Some(40));
    assert_eq!(renew, "Ok(60) true");
    assert!((100.0..100.1).contains(&t), "deleted at {t}");
    let (_, t) = lease_end(0, vec![etcd_step(10_000, 30_000)], None);
    assert!((65.00..65.01).contains(&t), "deleted at {t}");
}

#[test]
fn etcd_lease_wall_step_backward_delays_the_revocation_not_the_deadline() {
    // At 10 s etcd's wall clock steps 30 s back: the lease is due on the wall clock only at
    // 90.001 s, so its key outlives its monotonic deadline (60.001 s) until then, while a
    // keep-alive at 70 s is already refused.
    let (renew, t) = lease_end(0, vec![etcd_step(10_000, -30_000)], Some(70));
    assert_eq!(renew, "Ok(0) true");
    assert!((90.00..90.01).contains(&t), "deleted at {t}");
}

#[test]
fn ambiguous_timeouts_are_sometimes_applied_and_sometimes_not() {
    let amb = Fault {
        at_ms: 0,
        dur_ms: 100_000,
        kind: FaultKind::ServiceAmbiguous {
            node: "etcd".into(),
            percent: 100,
        },
    };
    let log = with_etcd(0, vec![amb], |p, etcd, _w, log| async move {
        let c = etcd.client(&p);
        for i in 0..16 {
            let r = c.put(&format!("/a/{i}"), "x", 0).await;
            assert_eq!(r, Err(EtcdError::Timeout));
        }
        p.sleep(Duration::from_secs(100)).await;
        let (kvs, _) = c.range("/a/", true, 0).await.unwrap();
        log.borrow_mut().push(kvs.len().to_string());
    });
    let applied: usize = log[0].parse().unwrap();
    assert!(
        applied > 0 && applied < 16,
        "{applied} of 16 ambiguous puts applied"
    );
}

#[test]
fn unavailable_requests_are_not_applied() {
    let down = Fault {
        at_ms: 0,
        dur_ms: 10_000,
        kind: FaultKind::ServiceUnavailable {
            node: "etcd".into(),
        },
    };
    let log = with_etcd(0, vec![down], |p, etcd, _w, log| async move {
        let c = etcd.client(&p);
        assert_eq!(c.put("/u", "x", 0).await, Err(EtcdError::Unavailable));
        p.sleep(Duration::from_secs(11)).await;
        let got = format!("{:?}", c.get("/u").await.unwrap());
        log.borrow_mut().push(got);
    });
    assert_eq!(log, vec!["None"]);
}

#[test]
fn watch_from_a_compacted_revision_is_cancelled() {
    let log = with_etcd(0, vec![], |p, etcd, _w, log| async move {
        let c = etcd.client(&p);
        for i in 0..5 {
            c.put("/w", &i.to_string(), 0).await.unwrap();
        }
        let (rev, _) = c.status().await.unwrap();
        c.compact(rev - 1).await.unwrap();
        let mut w = c.watch("/w", false, 2).await.unwrap();
        let first = format!("{:?}", w.next().await);
        log.borrow_mut().push(first);
        let mut w = c.watch("/w", false, rev).await.unwrap();
        if let WatchMsg::Events(ev) = w.next().await {
            log.borrow_mut()
                .push(format!("{:?} {}", ev[0].kind, ev[0].kv.value));
        }
        assert!(matches!(c.compact(rev - 2).await, Err(EtcdError::Store(_))));
    });
    assert_eq!(log[0], "Canceled { compact_revision: 5 }");
    assert_eq!(log[1], "Put 4");
}

#[test]
fn a_partition_times_requests_out_and_healing_restores_them() {
    let cut = Fault {
        at_ms: 1_000,
        dur_ms: 20_000,
        kind: FaultKind::Partition {
            a: vec!["client".into()],
            b: vec!["etcd".into()],
        },
    };
    let log = with_etcd(0, vec![cut], |p, etcd, w, log| async move {
        let c = etcd.client(&p);
        p.sleep(Duration::from_secs(2)).await;
        let r = c.get("/x").await;
        log.borrow_mut().push(format!("{r:?} {:.1}", secs(&w)));
        p.sleep(Duration::from_secs(20)).await;
        let healed = format!("{:?}", c.get("/x").await);
        log.borrow_mut().push(healed);
    });
    assert_eq!(log, vec!["Err(Timeout) 7.0", "Ok(None)"]);
}

#[test]
fn etcd_restart_keeps_data_and_resets_lease_ttls() {
    let crash = Fault {
        at_ms: 30_000,
        dur_ms: 5_000,
        kind: FaultKind::Crash {
            node: "etcd".into(),
        },
    };
    let log = with_etcd(0, vec![crash], |p, etcd, w, log| async move {
        let c = etcd.client(&p);
        let (lease, _) = c.grant(60).await.unwrap();
        c.put("/r", "kept", lease).await.unwrap();
        c.put("/d", "durable", 0).await.unwrap();
        p.sleep(Duration::from_secs(40)).await;
        // Back at 35 s with a fresh 60 s TTL: the key lives until ~95 s instead of ~60 s. The
        // connection the client kept from before the crash is reset by the rebooted host.
        let stale = c.get("/d").await;
        assert_eq!(stale, Err(sim::etcd::EtcdError::Unavailable));
        let durable = c.get("/d").await.unwrap().unwrap().value.to_string();
        log.borrow_mut().push(durable);
        let mut watch = c.watch("/r", false, 0).await.unwrap();
        let msg = watch.next().await;
        if let WatchMsg::Events(ev) = msg {
            assert_eq!(ev[0].kind, EventKind::Delete);
            log.borrow_mut().push(format!("{:.0}", secs(&w)));
        }
    });
    assert_eq!(log[0], "durable");
    let t: f64 = log[1].parse().unwrap();
    assert!((94.0..=96.0).contains(&t), "expired at {t}");
}

#[test]
fn pauses_stalls_and_silent_deaths() {
    let faults = vec![
        Fault {
            at_ms: 10_500,
            dur_ms: 10_000,
            kind: FaultKind::TaskStall {
                node: "client".into(),
                task: "ticker".into(),
            },
        },
        Fault {
            at_ms: 30_500,
            dur_ms: 10_000,
            kind: FaultKind::Pause {
                node: "client".into(),
            },
        },
        Fault {
            at_ms: 60_500,
            dur_ms: 0,
            kind: FaultKind::TaskDeath {
                node: "client".into(),
                task: "ticker".into(),
            },
        },
    ];
    let log = with_etcd(0, faults, |p, _etcd, w, log| async move {
        let l = log.clone();
        let w2 = w.clone();
        let p2 = p.clone();
        p.spawn("ticker", async move {
            loop {
                p2.sleep(Duration::from_secs(1)).await;
                l.borrow_mut().push(format!("{:.1}", secs(&w2)));
            }
        });
    });
    let ticks: Vec<f64> = log.iter().map(|s| s.parse().unwrap()).collect();
    // No tick while stalled (10.5-20.5) or paused (30.5-40.5); the held-back tick comes on release.
    assert!(!ticks.iter().any(|t| *t > 10.6 && *t < 20.5), "{ticks:?}");
    assert!(!ticks.iter().any(|t| *t > 30.6 && *t < 40.5), "{ticks:?}");
    assert!(ticks.contains(&20.5) && ticks.contains(&40.5), "{ticks:?}");
    // Dead after 60.5 s: nothing more, ever.
    let last = ticks.iter().cloned().fold(0.0, f64::max);
    assert!((59.5..=60.5).contains(&last), "last tick {last}");
}

#[test]
fn the_liveness_phase_ends_a_long_stall_at_once() {
    // A 1000 s stall from 150 s; the fault window ends at 200 s and heals it: ticks resume then.
    let stall = Fault {
        at_ms: 150_500,
        dur_ms: 1_000_000,
        kind: FaultKind::TaskStall {
            node: "client".into(),
            task: "ticker".into(),
        },
    };
    let log = with_etcd(0, vec![stall], |p, _etcd, w, log| async move {
        let (l, w2, p2) = (log.clone(), w.clone(), p.clone());
        p.spawn("ticker", async move {
            loop {
                p2.sleep(Duration::from_secs(1)).await;
                l.borrow_mut().push(format!("{:.1}", secs(&w2)));
            }
        });
    });
    let ticks: Vec<f64> = log.iter().map(|s| s.parse().unwrap()).collect();
    assert!(!ticks.iter().any(|t| *t > 150.6 && *t < 200.0), "{ticks:?}");
    assert!(
        ticks.iter().any(|t| (200.0..201.5).contains(t)),
        "the stall did not end with the fault window: {ticks:?}"
    );
}

#[test]
fn a_sleep_lasts_its_duration_of_the_nodes_monotonic_clock() {
    // From 1 s to 21 s the client's monotonic clock runs at +100 %: twice the true rate.
    let fast = Fault {
        at_ms: 1_000,
        dur_ms: 20_000,
        kind: FaultKind::ClockRate {
            node: "client".into(),
            ppm: 1_000_000,
        },
    };
    let log = with_etcd(0, vec![fast], |p, _etcd, w, log| async move {
        let at =
            |p: &Proc, w: &World| format!("{:.3} mono {:.3}", secs(w), p.mono_us() as f64 / 1e6);
        p.sleep(Duration::from_secs(2)).await;
        log.borrow_mut().push(at(&p, &w));
        // 10 s of a clock at twice the rate: 5 s of true time.
        p.sleep(Duration::from_secs(10)).await;
        log.borrow_mut().push(at(&p, &w));
        // Sleeping until a monotonic reading uses the rate too: 4 s on the clock, 2 s true.
        p.sleep_until_mono(p.mono_us() + 4_000_000).await;
        log.borrow_mut().push(at(&p, &w));
        // Armed at 9 s for 30 s on the clock, 15 s true at the rate then: due at 24 s. The rate
        // ends at 21 s and the armed sleep keeps its deadline (the documented approximation), so
        // it lasts 41 - 17 + 3 = 27 s on the clock, not 30.
        p.sleep(Duration::from_secs(30)).await;
        log.borrow_mut().push(at(&p, &w));
        // At the true rate again: 10 s is 10 s.
        p.sleep(Duration::from_secs(10)).await;
        log.borrow_mut().push(at(&p, &w));
    });
    assert_eq!(
        log,
        vec![
            "2.000 mono 3.000",
            "7.000 mono 13.000",
            "9.000 mono 17.000",
            "24.000 mono 44.000",
            "34.000 mono 54.000",
        ]
    );
}

/// A graceful service restart of `restart_s` seconds from 10 s; the client's process takes
/// `stop_s` to act on SIGTERM (`None`: ignores it, and is killed after the grace period). Returns
/// the times (true seconds) its process started.
fn starts_around_a_restart(restart_s: u64, stop_s: Option<u64>) -> Vec<f64> {
    let restart = Fault {
        at_ms: 10_000,
        dur_ms: restart_s * 1_000,
        kind: FaultKind::ServiceRestart {
            node: "client".into(),
        },
    };
    let log = with_etcd(0, vec![restart], move |p, _etcd, w, log| async move {
        log.borrow_mut().push(format!("{:.1}", secs(&w)));
        p.terminated().await;
        match stop_s {
            Some(s) => {
                p.sleep(Duration::from_secs(s)).await;
                p.exit(0);
            }
            None => std::future::pending::<()>().await,
        }
    });
    log.iter().map(|s| s.parse().unwrap()).collect()
}

/// `systemctl restart` is a stop then a start: processes slower to stop than the restart's own
/// time delay the start until the last one exits, or until SIGKILL ends the stop.
#[test]
fn a_service_restart_starts_the_services_once_their_stop_is_over() {
    // Stopped at once: the start comes when the restart's time is up.
    assert_eq!(starts_around_a_restart(3, Some(0)), vec![0.0, 13.0]);
    // A 5 s stop outlasts a 2 s restart: the start follows the exit.
    assert_eq!(starts_around_a_restart(2, Some(5)), vec![0.0, 15.0]);
    // SIGTERM ignored: killed at the end of the 10 s grace period, then started.
    assert_eq!(starts_around_a_restart(2, None), vec![0.0, 20.0]);
}
