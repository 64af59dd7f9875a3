//! Datagrams, the layer-2 segment and the Kubernetes API server, driven through the simulated
//! network: arrival order, loss on a cut link, the router's neighbour entry through a gratuitous
//! ARP and its probes, NotReady after the grace period without Lease renewals, informers on one object, and
//! informers that keep a silent healthy watch but replace a dead one after a failed ping.

use sim::event::{Event, Record};
use sim::kube::Kube;
use sim::l2::Segment;
use sim::net::Datagrams;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Failure, Fault, FaultKind, Monitor, NetSpec, NodeSpec, Schedule};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Collects (true time s, node, event) of the events a test cares about.
struct Collect(Arc<Mutex<Vec<(f64, u16, Event)>>>);

impl Monitor for Collect {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        if matches!(
            rec.event,
            Event::ArpEntry { .. } | Event::Neighbour { .. } | Event::KubeNodeReady { .. }
        ) {
            self.0
                .lock()
                .unwrap()
                .push((rec.t_us as f64 / 1e6, rec.node, rec.event.clone()));
        }
        None
    }

    fn on_tick(&mut self, _now_us: u64) -> Option<Failure> {
        None
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// A schedule with one fault: n1 and the API server cut from each other for `dur_ms` from `at_ms`.
fn n1_cut_from_apiserver(at_ms: u64, dur_ms: u64) -> Schedule {
    vec![Fault {
        at_ms,
        dur_ms,
        kind: FaultKind::Partition {
            a: vec!["n1".into()],
            b: vec!["apiserver".into()],
        },
    }]
}

fn config(names: &[&str], schedule: Schedule, latency_us: (u64, u64)) -> SimConfig {
    SimConfig {
        seed: 11,
        nodes: NodeSpec::exact_all(names),
        net: NetSpec {
            latency_min_us: latency_us.0,
            latency_max_us: latency_us.1,
        },
        schedule,
        fault_window_ms: 120_000,
        liveness_ms: 10_000,
        keep_trace: false,
    }
}

#[test]
fn datagrams_arrive_in_arrival_order_and_are_lost_on_a_cut_link() {
    // "a" sends a datagram every 100 ms for 10 s; "b" is cut off from 3 s to 5 s.
    let got = on_fresh_thread(|| {
        let log: Rc<RefCell<Vec<(u64, u32)>>> = Rc::default();
        let l = log.clone();
        let cut = vec![Fault {
            at_ms: 3_000,
            dur_ms: 2_000,
            kind: FaultKind::Isolate { node: "b".into() },
        }];
        simulate(
            config(&["a", "b"], cut, (1_000, 30_000)),
            Box::new(sim::monitor::NullMonitor),
            move |world| {
                let inbox: Datagrams<u32> = Datagrams::new(1);
                let rx = inbox.clone();
                let l = l.clone();
                world.set_services(
                    1,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("receiver");
                        rx.open();
                        let (rx, l, p2) = (rx.clone(), l.clone(), p.clone());
                        p.spawn("recv", async move {
                            loop {
                                let (_, n) = rx.recv(&p2).await;
                                l.borrow_mut().push((p2.mono_us(), n));
                            }
                        });
                    }),
                );
                world.set_services(
                    0,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("sender");
                        let (tx, p2) = (inbox.clone(), p.clone());
                        p.spawn("send", async move {
                            for n in 0..100u32 {
                                tx.send(&p2, n);
                                p2.sleep(Duration::from_millis(100)).await;
                            }
                        });
                    }),
                );
            },
        );
        let out = log.borrow().clone();
        out
    })
    .unwrap();
    // Delivered in arrival order (times never go back) even though latencies differ per datagram.
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "{got:?}");
    // With latencies from 1 to 30 ms and sends 100 ms apart, sending order is kept here.
    assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "{got:?}");
    // Nothing arrives while the receiver is cut off; before and after, everything does.
    assert!(got.iter().all(|(t, _)| *t < 3_000_000 || *t >= 5_000_000));
    let lost: Vec<u32> = (0..100)
        .filter(|n| !got.iter().any(|g| g.1 == *n))
        .collect();
    assert!((19..=21).contains(&lost.len()), "lost {lost:?}");
    assert!(lost.iter().all(|n| (29..=50).contains(n)), "lost {lost:?}");
}

#[test]
fn neighbour_router_takes_a_gratuitous_arp_then_probes_it_and_falls_back_to_who_answers() {
    // Two hosts claim one IP: only h1 answers requests; h2 sends one gratuitous ARP at 20 s.
    // Client traffic makes the router resolve the IP (h1 answers the broadcast); h2's gratuitous
    // ARP replaces the entry (STALE); the next packet makes it DELAY, 5 s later PROBE by unicast
    // to h2, which never answers; after 3 probes 1 s apart it is FAILED, and the next packet
    // resolves by broadcast again: h1.
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    on_fresh_thread(move || {
        simulate(
            config(&["h1", "h2", "router"], vec![], (500, 500)),
            Box::new(Collect(ev)),
            |world| {
                let seg = Segment::install(world, 2, &[0, 1], vec!["192.168.10.1".into()]);
                for (node, answers) in [(0u16, true), (1, false)] {
                    let seg = seg.clone();
                    world.set_services(
                        node,
                        Rc::new(move |host: &Host| {
                            let p = host.spawn_process("speaker");
                            let port = Rc::new(seg.port(&p));
                            if answers {
                                p.spawn("arp", async move {
                                    loop {
                                        let ip = port.request().await;
                                        port.reply(&ip);
                                    }
                                });
                            } else {
                                let p2 = p.clone();
                                p.spawn("garp", async move {
                                    p2.sleep(Duration::from_secs(20)).await;
                                    port.garp("192.168.10.1");
                                });
                            }
                        }),
                    );
                }
            },
        );
    })
    .unwrap();
    let events = events.lock().unwrap();
    let entries: Vec<(f64, &str, &str)> = events
        .iter()
        .filter_map(|(t, _, e)| match e {
            Event::ArpEntry { node, via, .. } => Some((*t, node.as_str(), via.as_str())),
            _ => None,
        })
        .collect();
    let who: Vec<(&str, &str)> = entries.iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        who[..3],
        [("h1", "reply"), ("h2", "garp"), ("h1", "reply")],
        "{entries:?}"
    );
    assert!(
        entries[0].0 < 2.01,
        "the first packet within 2 s: {entries:?}"
    );
    assert!(entries[1].0 > 20.0 && entries[1].0 < 20.01, "{entries:?}");
    // A packet within 2 s, 5 s of DELAY, 3 probes, a packet within 2 s.
    assert!(entries[2].0 > 28.0 && entries[2].0 < 32.01, "{entries:?}");
    let states: Vec<sim::neigh::Nud> = events
        .iter()
        .filter(|(t, _, _)| *t > 20.0 && *t < entries[2].0 + 0.001)
        .filter_map(|(_, _, e)| match e {
            Event::Neighbour { state, .. } => Some(*state),
            _ => None,
        })
        .collect();
    use sim::neigh::Nud as N;
    assert_eq!(
        states,
        [
            N::Stale,
            N::Delay,
            N::Probe,
            N::Failed,
            N::Incomplete,
            N::Reachable
        ],
        "{events:?}"
    );
}

#[test]
fn a_node_without_lease_renewals_goes_not_ready_after_the_grace_and_comes_back() {
    // n1's kubelet renews every 10 s; n1 is cut from the API server from 20 s to 100 s.
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    on_fresh_thread(move || {
        let cut = n1_cut_from_apiserver(20_000, 80_000);
        simulate(
            config(&["n1", "apiserver"], cut, (500, 500)),
            Box::new(Collect(ev)),
            |world| {
                let kube = Kube::install(world, 1);
                kube.enable_node_lifecycle(Duration::from_secs(40));
                kube.seed_object(
                    "Node",
                    "n1",
                    serde_json::json!({}),
                    serde_json::json!({ "ready": true }),
                );
                kube.seed_object("Lease", "n1", serde_json::json!({}), serde_json::json!({}));
                world.set_services(
                    0,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("kubelet");
                        let c = kube.client(&p);
                        p.spawn("heartbeat", async move {
                            c.run_node_heartbeat("n1", Duration::from_secs(10)).await
                        });
                    }),
                );
            },
        );
    })
    .unwrap();
    let ready: Vec<(f64, bool)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(t, _, e)| match e {
            Event::KubeNodeReady { ready, .. } => Some((*t, *ready)),
            _ => None,
        })
        .collect();
    assert_eq!(ready.len(), 2, "{ready:?}");
    // Last renewal seen around 10 s; NotReady at the first 5 s check more than 40 s later.
    assert!(
        !ready[0].1 && ready[0].0 > 50.0 && ready[0].0 <= 60.0,
        "{ready:?}"
    );
    // Ready again at the first check after a renewal once the cut heals at 100 s.
    assert!(
        ready[1].1 && ready[1].0 > 100.0 && ready[1].0 <= 115.0,
        "{ready:?}"
    );
}

#[test]
fn a_watch_on_one_name_sees_only_that_object_and_a_status_write_keeps_the_spec() {
    // Two objects of a kind; a writer updates "b" then "a" (status) then "a" (spec). An informer
    // on "a" only (the field selector metadata.name=a) sees a's replay and a's two writes.
    let (seen, shared) = on_fresh_thread(|| {
        let seen: Rc<RefCell<Vec<(String, u64)>>> = Rc::default();
        let shared: Rc<RefCell<Vec<bool>>> = Rc::default();
        let (s1, s2) = (seen.clone(), shared.clone());
        simulate(
            config(&["n1", "apiserver"], vec![], (500, 500)),
            Box::new(sim::monitor::NullMonitor),
            move |world| {
                let kube = Kube::install(world, 1);
                for name in ["a", "b"] {
                    kube.seed_object(
                        "Thing",
                        name,
                        serde_json::json!({ "pool": 1 }),
                        serde_json::json!({}),
                    );
                }
                world.set_services(
                    0,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("client");
                        let (c, seen) = (kube.client(&p), s1.clone());
                        p.spawn("informer", async move {
                            c.run_informer("Thing", Some("a"), Duration::from_secs(30), |ev| {
                                if let sim::kube::WatchEvent::Upsert(o) = ev {
                                    seen.borrow_mut().push((o.name.to_string(), o.rv));
                                }
                            })
                            .await
                        });
                        let (c, p2, shared) = (kube.client(&p), p.clone(), s2.clone());
                        p.spawn("writer", async move {
                            use sim::kube::Part;
                            p2.sleep(Duration::from_secs(1)).await;
                            let b = c.get("Thing", "b").await.unwrap();
                            let st = serde_json::json!({ "n": 1 });
                            c.update("Thing", "b", b.rv, Part::Status, st)
                                .await
                                .unwrap();
                            let a = c.get("Thing", "a").await.unwrap();
                            let st = serde_json::json!({ "n": 2 });
                            let a2 = c
                                .update("Thing", "a", a.rv, Part::Status, st)
                                .await
                                .unwrap();
                            shared.borrow_mut().push(Rc::ptr_eq(&a.spec, &a2.spec));
                            let sp = serde_json::json!({ "pool": 2 });
                            let a3 = c.update("Thing", "a", a2.rv, Part::Spec, sp).await.unwrap();
                            shared.borrow_mut().push(Rc::ptr_eq(&a2.spec, &a3.spec));
                            shared.borrow_mut().push(Rc::ptr_eq(&a2.status, &a3.status));
                        });
                    }),
                );
            },
        );
        let out = (seen.borrow().clone(), shared.borrow().clone());
        out
    })
    .unwrap();
    // Versions of "a" only: the replay (rv 1), its status write (4) and its spec write (5).
    let versions: std::collections::BTreeSet<(&str, u64)> =
        seen.iter().map(|(n, rv)| (n.as_str(), *rv)).collect();
    assert_eq!(
        versions.into_iter().collect::<Vec<_>>(),
        [("a", 1), ("a", 4), ("a", 5)],
        "{seen:?}"
    );
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1), "{seen:?}");
    // A status write shares the spec; a spec write makes a new spec and shares the status.
    assert_eq!(shared, [true, false, true]);
}

/// Deliveries (true time s, resourceVersion) to an informer on n1 watching the one object of a
/// kind, while a writer on n2 updates it at each of `writes_s`, under `faults`, over 300 s.
fn informer_deliveries(faults: Schedule, writes_s: &'static [u64]) -> Vec<(f64, u64)> {
    on_fresh_thread(move || {
        let seen: Rc<RefCell<Vec<(f64, u64)>>> = Rc::default();
        let s1 = seen.clone();
        let mut cfg = config(&["n1", "apiserver", "n2"], faults, (500, 500));
        cfg.fault_window_ms = 290_000;
        simulate(cfg, Box::new(sim::monitor::NullMonitor), move |world| {
            let kube = Kube::install(world, 1);
            let obj = serde_json::json!({});
            kube.seed_object("Thing", "a", obj.clone(), obj);
            let k2 = kube.clone();
            world.set_services(
                0,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("client");
                    let (c, seen, w) = (kube.client(&p), s1.clone(), host.world().clone());
                    p.spawn("informer", async move {
                        let idle = Duration::from_secs(30);
                        c.run_informer("Thing", None, idle, |ev| {
                            if let sim::kube::WatchEvent::Upsert(o) = ev {
                                let t = w.now_us() as f64 / 1e6;
                                seen.borrow_mut().push((t, o.rv));
                            }
                        })
                        .await
                    });
                }),
            );
            world.set_services(
                2,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("writer");
                    let (c, p2) = (k2.client(&p), p.clone());
                    p.spawn("writer", async move {
                        let mut at = 0;
                        for &w in writes_s {
                            p2.sleep(Duration::from_secs(w - at)).await;
                            at = w;
                            let a = c.get("Thing", "a").await.unwrap();
                            let st = serde_json::json!({ "at": w });
                            c.update("Thing", "a", a.rv, sim::kube::Part::Status, st)
                                .await
                                .unwrap();
                        }
                    });
                }),
            );
        });
        let out = seen.borrow().clone();
        out
    })
    .unwrap()
}

#[test]
fn a_silent_healthy_watch_is_kept_and_a_dead_one_is_replaced_after_a_failed_ping() {
    // No fault: the object is replayed once and its one write arrives; 30 s silences end in a
    // ping that is acked, never in a new watch.
    let healthy = informer_deliveries(vec![], &[100]);
    assert_eq!(
        healthy.iter().map(|d| d.1).collect::<Vec<_>>(),
        [1, 2],
        "{healthy:?}"
    );
    assert!(healthy[1].0 > 100.0 && healthy[1].0 < 100.1, "{healthy:?}");

    // The write at 105 s crosses a cut link (100-110 s): the stream breaks silently. The last
    // event came at 0 s, so pings at 30, 60 and 90 s were acked; the one at 120 s finds the watch
    // dead, fails 15 s later, and the new watch replays the object at about 135 s.
    let cut = n1_cut_from_apiserver(100_000, 10_000);
    let broken = informer_deliveries(cut, &[105]);
    assert_eq!(
        broken.iter().map(|d| d.1).collect::<Vec<_>>(),
        [1, 2],
        "{broken:?}"
    );
    assert!(broken[1].0 > 135.0 && broken[1].0 < 135.1, "{broken:?}");
}

#[test]
fn a_deletion_missed_by_a_dead_watch_is_delivered_when_the_informer_watches_again() {
    // Objects "a" and "b"; "b" is deleted at 105 s while n1 is cut from the API server (100-110
    // s), so the stream breaks silently and the deletion is lost with it. The new watch (about
    // 135 s) replays "a" only: the informer hands over the deletion of "b" first, as client-go's
    // DeltaFIFO.Replace does for a known object missing from a re-list.
    let seen = on_fresh_thread(move || {
        let seen: Rc<RefCell<Vec<(f64, String)>>> = Rc::default();
        let s1 = seen.clone();
        let mut cfg = config(
            &["n1", "apiserver", "n2"],
            n1_cut_from_apiserver(100_000, 10_000),
            (500, 500),
        );
        cfg.fault_window_ms = 290_000;
        simulate(cfg, Box::new(sim::monitor::NullMonitor), move |world| {
            let kube = Kube::install(world, 1);
            for name in ["a", "b"] {
                kube.seed_object("Thing", name, serde_json::json!({}), serde_json::json!({}));
            }
            let k2 = kube.clone();
            world.set_services(
                0,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("client");
                    let (c, seen, w) = (kube.client(&p), s1.clone(), host.world().clone());
                    p.spawn("informer", async move {
                        c.run_informer("Thing", None, Duration::from_secs(30), |ev| {
                            let t = w.now_us() as f64 / 1e6;
                            let what = match ev {
                                sim::kube::WatchEvent::Upsert(o) => format!("upsert {}", o.name),
                                sim::kube::WatchEvent::Deleted { name, .. } => {
                                    format!("delete {name}")
                                }
                            };
                            seen.borrow_mut().push((t, what));
                        })
                        .await
                    });
                }),
            );
            world.set_services(
                2,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("writer");
                    let (c, p2) = (k2.client(&p), p.clone());
                    p.spawn("writer", async move {
                        p2.sleep(Duration::from_secs(105)).await;
                        c.delete("Thing", "b").await.unwrap();
                    });
                }),
            );
        });
        let out = seen.borrow().clone();
        out
    })
    .unwrap();
    let what: Vec<&str> = seen.iter().map(|(_, w)| w.as_str()).collect();
    assert_eq!(
        what,
        ["upsert a", "upsert b", "delete b", "upsert a"],
        "{seen:?}"
    );
    assert!(seen[2].0 > 135.0 && seen[2].0 < 135.1, "{seen:?}");
}
