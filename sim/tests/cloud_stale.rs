//! The cloud's stale reads through the simulated network: under a stale-reads fault a describe
//! made right after an assign may not show it (EC2's eventual consistency), never shows a view
//! older than the lag, and once the fault ends every describe shows the present.

use sim::cloud::{eni_name, Cloud, CloudConfig};
use sim::monitor::NullMonitor;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Fault, FaultKind, NetSpec, NodeSpec};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// The lag of the fault (ms), in force from 0 to 20 s.
const LAG_MS: u64 = 2_000;

fn node(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm: 0,
    }
}

/// What each describe of the client saw: `(true time ms, IPs held on eni-0)`, and the count the
/// assign returned. The client assigns 3 IPs at 1 s, then describes every 50 ms until 4 s, and
/// once more at 25 s, after the fault ended.
fn run(seed: u64) -> Vec<(u64, usize)> {
    on_fresh_thread(move || {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s2 = seen.clone();
        let cfg = SimConfig {
            seed,
            nodes: vec![node("cloud"), node("client")],
            net: NetSpec::fixed(1_000),
            schedule: vec![Fault {
                at_ms: 100,
                dur_ms: 20_000,
                kind: FaultKind::StaleReads {
                    node: "cloud".into(),
                    lag_ms: LAG_MS,
                },
            }],
            fault_window_ms: 30_000,
            liveness_ms: 1_000,
            keep_trace: false,
        };
        simulate(cfg, Box::new(NullMonitor), move |world| {
            let cfg = CloudConfig {
                capacity: 10,
                subnet_size: 20,
                internal_errors_per_mille: 0,
            };
            let cloud = Cloud::install_with(world, 0, cfg);
            cloud.add_instance("i1", 1);
            let seen = s2.clone();
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("test");
                    let (c, w, seen) = (cloud.client(&p), host.world().clone(), seen.clone());
                    let p2 = p.clone();
                    p.spawn("body", async move {
                        let eni = eni_name(0);
                        p2.sleep(Duration::from_secs(1)).await;
                        let got = c.assign("i1", &eni, 3).await.unwrap();
                        seen.borrow_mut().push((0, got.len()));
                        while w.now_us() < 4_000_000 {
                            let n = c.describe("i1").await.unwrap()[&eni].len();
                            seen.borrow_mut().push((w.now_us() / 1000, n));
                            p2.sleep(Duration::from_millis(50)).await;
                        }
                        p2.sleep(Duration::from_secs(21)).await;
                        let n = c.describe("i1").await.unwrap()[&eni].len();
                        seen.borrow_mut().push((w.now_us() / 1000, n));
                    });
                }),
            );
        });
        let out = seen.borrow().clone();
        out
    })
    .expect("run")
}

#[test]
fn a_describe_under_stale_reads_may_miss_a_recent_assign_but_not_an_older_one() {
    let seen = run(5);
    assert_eq!(seen[0], (0, 3), "the assign acts on the present");
    // The assign was applied at about 1,001 ms (1 ms each way).
    let reads = &seen[1..seen.len() - 1];
    let missed = reads.iter().filter(|(_, n)| *n == 0).count();
    assert!(missed > 0, "some describe saw the view before the assign");
    assert!(missed < reads.len(), "some describe saw the assign");
    for (t, n) in reads {
        assert!(
            *n == 0 || *n == 3,
            "a view is of one moment: {n} IPs at {t} ms"
        );
        // A read at t may be up to LAG_MS old: it shows the assign if it served after that.
        if *t > 1_002 + LAG_MS {
            assert_eq!(*n, 3, "a view older than the lag at {t} ms");
        }
    }
    let (t, n) = seen[seen.len() - 1];
    assert!(t > 20_100, "{t}");
    assert_eq!(n, 3, "once the fault is over, reads see the present");
}

#[test]
fn stale_reads_are_the_seeds() {
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6), "another seed draws other ages");
}
