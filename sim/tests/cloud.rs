//! The cloud API through the simulated network: fencing tokens (a check real EC2 does not have)
//! and the shared subnet seen from clients.

use sim::cloud::{eni_name, Cloud, CloudConfig, Fence};
use sim::event::TraceLine;
use sim::monitor::NullMonitor;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Event, NetSpec, NodeSpec, Proc};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

fn node(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm: 0,
    }
}

/// Runs `body` on node `client` next to a cloud (instance `i1`, two interfaces of 10, a subnet of
/// 20); returns what the body logged and the run's trace lines.
fn with_cloud<F, Fut>(body: F) -> (Vec<String>, Vec<TraceLine>)
where
    F: Fn(Proc, Cloud, Rc<RefCell<Vec<String>>>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    on_fresh_thread(move || {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l2 = log.clone();
        let cfg = SimConfig {
            seed: 11,
            nodes: vec![node("cloud"), node("client")],
            net: NetSpec::fixed(1_000),
            schedule: vec![],
            fault_window_ms: 60_000,
            liveness_ms: 1_000,
            keep_trace: true,
        };
        let out = simulate(cfg, Box::new(NullMonitor), move |world| {
            let cfg = CloudConfig {
                capacity: 10,
                subnet_size: 20,
                internal_errors_per_mille: 0,
            };
            let cloud = Cloud::install_with(world, 0, cfg);
            cloud.add_instance("i1", 2);
            let body = Rc::new(body);
            world.set_services(
                1,
                Rc::new(move |host: &Host| {
                    let p = host.spawn_process("test");
                    let fut = body(p.clone(), cloud.clone(), l2.clone());
                    p.spawn("body", fut);
                }),
            );
        });
        let trace = String::from_utf8(out.trace.expect("kept")).unwrap();
        let lines = trace
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let logged = log.borrow().clone();
        (logged, lines)
    })
    .expect("run")
}

fn fence(lock: &str, token: u64) -> Fence {
    Fence {
        lock: lock.into(),
        token,
    }
}

#[test]
fn a_stale_token_is_refused_once_a_newer_one_was_seen() {
    let (log, trace) = with_cloud(|p, cloud, log| async move {
        let eni = eni_name(0);
        let plain = cloud.client(&p);
        let old = plain.fenced(fence("lock", 1));
        let new = plain.fenced(fence("lock", 2));
        let say = |s: String| log.borrow_mut().push(s);
        // The old holder works until the new one's first request, a describe, is seen.
        say(format!(
            "old assign {:?}",
            old.assign("i1", &eni, 1).await.map(|v| v.len())
        ));
        say(format!(
            "new describe {:?}",
            new.describe("i1").await.map(|i| i[&eni].len())
        ));
        say(format!("old assign {:?}", old.assign("i1", &eni, 1).await));
        say(format!(
            "old describe {:?}",
            old.describe("i1").await.map(|_| ())
        ));
        // Nothing of the refused assign was applied.
        say(format!(
            "held {}",
            plain.describe("i1").await.unwrap()[&eni].len()
        ));
        // An equal token is accepted; an unfenced client and another lock are not concerned.
        say(format!(
            "new assign {:?}",
            new.assign("i1", &eni, 1).await.map(|v| v.len())
        ));
        say(format!(
            "plain assign {:?}",
            plain.assign("i1", &eni, 1).await.map(|v| v.len())
        ));
        let other = plain.fenced(fence("other-lock", 0));
        say(format!(
            "other assign {:?}",
            other.assign("i1", &eni, 1).await.map(|v| v.len())
        ));
        say(format!(
            "highest {} {}",
            cloud.highest_fence("lock"),
            cloud.highest_fence("none")
        ));
    });
    assert_eq!(
        log,
        vec![
            "old assign Ok(1)",
            "new describe Ok(1)",
            "old assign Err(Fenced { token: 1, highest: 2 })",
            "old describe Err(Fenced { token: 1, highest: 2 })",
            "held 1",
            "new assign Ok(1)",
            "plain assign Ok(1)",
            "other assign Ok(1)",
            "highest 2 0",
        ]
    );
    let fenced: Vec<_> = trace
        .iter()
        .filter_map(|l| match &l.ev {
            Event::CloudFenced {
                op,
                lock,
                token,
                highest,
                ..
            } => Some(format!("{op} {lock} {token} {highest}")),
            _ => None,
        })
        .collect();
    assert_eq!(fenced, vec!["assign lock 1 2", "describe lock 1 2"]);
    let assigned = trace
        .iter()
        .filter(|l| matches!(l.ev, Event::CloudAssign { .. }))
        .count();
    assert_eq!(assigned, 4, "the refused assign emitted no cloud-assign");
}

#[test]
fn unfenced_clients_see_the_same_cloud_with_or_without_fenced_ones() {
    // The same unfenced requests, once alone and once after a fenced client raised its lock's
    // token: the same answers, the same addresses, and nothing refused.
    fn run(with_fenced: bool) -> (Vec<String>, usize) {
        let (log, trace) = with_cloud(move |p, cloud, log| async move {
            let eni = eni_name(1);
            let plain = cloud.client(&p);
            if with_fenced {
                let f = plain.fenced(fence("lock", 7));
                f.describe("i1").await.unwrap();
            }
            let got = plain.assign("i1", &eni, 3).await;
            let ips = got.clone().unwrap();
            let gone = plain.unassign("i1", &eni, ips[..1].to_vec()).await;
            let held = plain.describe("i1").await.map(|i| i[&eni].clone());
            log.borrow_mut().push(format!("{got:?} {gone:?} {held:?}"));
        });
        let fenced = trace
            .iter()
            .filter(|l| matches!(l.ev, Event::CloudFenced { .. }))
            .count();
        (log, fenced)
    }
    let alone = run(false);
    assert_eq!(alone.0.len(), 1);
    assert!(alone.0[0].starts_with("Ok(["), "{alone:?}");
    assert_eq!(alone, run(true));
    assert_eq!(alone.1, 0);
}
