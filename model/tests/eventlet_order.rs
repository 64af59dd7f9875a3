//! eventlet's order after a pause, as `model::calico::hub` models it: a greenlet whose `sleep(5)`
//! expired while the process was stopped runs before a greenlet that I/O made ready meanwhile
//! (eventlet `hubs/hub.py` `BaseHub.run` fires due timers before polling; `queue.py` hands a
//! blocked `get()` its item through a zero-delay timer). madsim alone runs a resumed node's ready
//! tasks in random order; the control case shows that order differs without the hub.

use model::calico::hub::Hub;
use sim::etcd::{Etcd, EtcdConfig, WatchMsg};
use sim::monitor::NullMonitor;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Fault, FaultKind, NetSpec, NodeSpec};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

fn node(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm: 0,
    }
}

/// Which of the two greenlets ran first after a 20 s pause: the 5 s poller ("poll") or the
/// watcher handed an event that arrived during the pause ("event").
fn first_after_pause(seed: u64, through_hub: bool) -> String {
    on_fresh_thread(move || {
        let log = Rc::new(RefCell::new(Vec::<String>::new()));
        let cfg = SimConfig {
            seed,
            nodes: vec![node("etcd"), node("host"), node("writer")],
            net: NetSpec::fixed(1_000),
            schedule: vec![Fault {
                at_ms: 20_500,
                dur_ms: 20_000,
                kind: FaultKind::Pause {
                    node: "host".into(),
                },
            }],
            fault_window_ms: 60_000,
            liveness_ms: 1_000,
            keep_trace: false,
        };
        let l = log.clone();
        simulate(cfg, Box::new(NullMonitor), move |world| {
            let etcd = Etcd::install(world, 0, EtcdConfig::default());
            let e = etcd.clone();
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("watcher-worker");
                    let hub = Rc::new(Hub::default());
                    let (p1, h1, l1) = (p.clone(), hub.clone(), l.clone());
                    p.spawn("poll", async move {
                        loop {
                            h1.sleep(&p1, Duration::from_secs(5)).await;
                            l1.borrow_mut()
                                .push(format!("poll {}", p1.mono_us() / 1000));
                        }
                    });
                    let (p2, l2, c) = (p.clone(), l.clone(), e.client(&p));
                    p.spawn("watch", async move {
                        let mut w = c.watch("/k", false, 0).await.expect("watch");
                        loop {
                            if let WatchMsg::Events(_) = w.next().await {
                                if through_hub {
                                    hub.io_ready(&p2).await;
                                }
                                l2.borrow_mut()
                                    .push(format!("event {}", p2.mono_us() / 1000));
                            }
                        }
                    });
                }),
            );
            world.set_services(
                2,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("felix");
                    let c = etcd.client(&p);
                    let p1 = p.clone();
                    p.spawn("put", async move {
                        p1.sleep(Duration::from_millis(23_000)).await;
                        let _ = c.put("/k", "v", 0).await;
                    });
                }),
            );
        });
        let log = log.borrow();
        // The first entry logged at or after the resume (40.5 s).
        log.iter()
            .find(|e| e.split(' ').nth(1).unwrap().parse::<u64>().unwrap() >= 40_500)
            .map(|e| e.split(' ').next().unwrap().to_string())
            .unwrap_or_default()
    })
    .expect("run")
}

#[test]
fn overdue_timers_run_before_io_after_a_pause() {
    for seed in 0..40 {
        assert_eq!(first_after_pause(seed, true), "poll", "seed {seed}");
    }
}

#[test]
fn without_the_hub_madsim_may_run_the_io_first() {
    let firsts: Vec<String> = (0..40).map(|s| first_after_pause(s, false)).collect();
    assert!(firsts.iter().any(|f| f == "event"), "{firsts:?}");
    assert!(firsts.iter().any(|f| f == "poll"), "{firsts:?}");
}
