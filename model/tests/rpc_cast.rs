//! The agent-status watcher's RPC cast blocks its greenlet while the message broker is down:
//! oslo.messaging retries the publish for ever (`retry=None`) with kombu's growing intervals, so
//! the watcher handles no Felix report during a broker outage, and handles the ones held up, in
//! order, once the broker takes the cast (see `model::calico::broker`).

use model::calico::broker::{self, RECONNECT_DELAY};
use model::calico::felix::FelixConfig;
use model::calico::status::TimeFormat;
use model::calico::{CalicoEvent, Config};
use sim::etcd::{Etcd, EtcdConfig};
use sim::event::{Event, Record};
use sim::monitor::{Failure, Monitor};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::{Fault, FaultKind, NetSpec, NodeSpec};
use std::cell::RefCell;
use std::rc::Rc;

const S: u64 = 1_000_000;

/// What a run saw, each with its true time (µs).
#[derive(Default, Debug)]
struct Seen {
    /// Felix's status puts: the key's revision.
    puts: Vec<(u64, i64)>,
    /// The watcher's forwards: the key's revision.
    forwards: Vec<(u64, i64)>,
    /// Neutron heard the agent.
    heard: Vec<u64>,
    /// Casts that took more than one publish: how many.
    delayed: Vec<(u64, u32)>,
}

struct Recorder(Rc<RefCell<Seen>>);

impl Monitor for Recorder {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let mut s = self.0.borrow_mut();
        let t = rec.t_us;
        if let Event::EtcdPut { key, rev, .. } = &rec.event {
            if key.ends_with("/c1/status") {
                s.puts.push((t, *rev));
            }
        }
        match rec.event.system::<CalicoEvent>() {
            Some(CalicoEvent::CalicoAgentForward { rev, .. }) => s.forwards.push((t, *rev)),
            Some(CalicoEvent::NeutronAgentHeard { .. }) => s.heard.push(t),
            Some(CalicoEvent::CalicoCastDelayed { publishes, .. }) => {
                s.delayed.push((t, *publishes))
            }
            _ => {}
        }
        None
    }
    fn on_tick(&mut self, _: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// One neutron-server host, one Felix, etcd, the Neutron DB and the broker, 1 ms each way, for
/// 400 s under `faults`.
fn run(faults: Vec<Fault>) -> Seen {
    on_fresh_thread(move || {
        let seen: Rc<RefCell<Seen>> = Rc::default();
        let cfg = SimConfig {
            seed: 11,
            nodes: NodeSpec::exact_all(["h1", "c1", "etcd", "neutron-db", "rabbitmq"]),
            net: NetSpec::fixed(1_000),
            schedule: faults,
            fault_window_ms: 400_000,
            liveness_ms: 0,
            keep_trace: false,
        };
        simulate(cfg, Box::new(Recorder(seen.clone())), move |world| {
            let model_cfg = Config::default();
            let etcd = Etcd::install(world, 2, EtcdConfig::default());
            let neutron = model::calico::neutron::install(world, 3);
            let broker = broker::install(world, 4, neutron.clone());
            let felix = FelixConfig {
                format: TimeFormat::Zulu,
                garbage_percent: 0,
                ports: 1,
            };
            let region = model_cfg.region.clone();
            let sw = model_cfg.switches.clone();
            model::calico::felix::install(world, &[(1, felix)], &etcd, &region, &sw);
            model::calico::install(world, &[0], &etcd, &neutron, &broker, model_cfg);
        });
        Rc::try_unwrap(seen).expect("the run is over").into_inner()
    })
    .expect("the simulation ran")
}

fn outage(from_s: u64, for_s: u64) -> Fault {
    Fault {
        at_ms: from_s * 1000,
        dur_ms: for_s * 1000,
        kind: FaultKind::ServiceUnavailable {
            node: "rabbitmq".into(),
        },
    }
}

fn within(v: &[(u64, i64)], from: u64, to: u64) -> Vec<i64> {
    v.iter()
        .filter(|(t, _)| (from..to).contains(t))
        .map(|(_, r)| *r)
        .collect()
}

/// With the broker up, each report is forwarded as Felix writes it and Neutron hears it within a
/// few round trips; no cast is retried.
#[test]
fn rpc_cast_blocks_watcher_never_with_the_broker_up() {
    let seen = run(Vec::new());
    assert!(seen.puts.len() >= 10, "{seen:?}");
    assert!(seen.delayed.is_empty(), "{seen:?}");
    for &(t, rev) in seen.forwards.iter().filter(|(t, _)| *t > 60 * S) {
        let put = seen.puts.iter().find(|(_, r)| *r == rev).expect("a put").0;
        assert!(t - put < S, "rev {rev} put at {put} forwarded at {t}");
        assert!(
            seen.heard.iter().any(|&h| h >= t && h - t < S),
            "rev {rev} forwarded at {t} not heard: {seen:?}"
        );
    }
}

/// A 100 s broker outage from 120 s: the watcher forwards the first report written in it, blocks
/// on its cast, and forwards nothing more, though Felix goes on writing; Neutron hears nothing.
/// Once the broker is back the cast goes through at kombu's next connection attempt (within its
/// longest interval plus oslo's reconnect delay), and then every report held up is forwarded, in
/// the order Felix wrote them.
#[test]
fn rpc_cast_blocks_watcher_during_a_broker_outage_and_resumes_in_order() {
    let (from, to) = (120 * S, 220 * S);
    let seen = run(vec![outage(120, 100)]);
    let written = within(&seen.puts, from, to);
    assert!(written.len() >= 3, "Felix writes on: {seen:?}");
    let during = within(&seen.forwards, from, to);
    assert_eq!(during, written[..1], "one forward, then blocked: {seen:?}");
    let heard_during = seen
        .heard
        .iter()
        .filter(|&&h| h > from + S && h < to)
        .count();
    assert_eq!(heard_during, 0, "{seen:?}");
    let &(back, publishes) = seen.delayed.first().expect("a delayed cast");
    assert!(publishes >= 2, "{publishes}");
    let longest = broker::interval(u32::MAX) + RECONNECT_DELAY * 2;
    assert!(
        back >= to && back <= to + longest.as_micros() as u64,
        "cast returned at {back}"
    );
    let after: Vec<i64> = seen
        .forwards
        .iter()
        .filter(|(t, _)| *t >= back)
        .map(|(_, r)| *r)
        .collect();
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "forwarded in order: {after:?}"
    );
    for rev in &written[1..] {
        assert!(after.contains(rev), "rev {rev} forwarded after: {after:?}");
    }
    assert!(seen.heard.iter().any(|&h| h >= back), "{seen:?}");
}
