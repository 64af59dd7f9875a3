//! The startup resync as networking-calico runs it at projectcalico/calico 87c15906 (see
//! `model::calico::resync`): one resync per `CalicoStartupResyncWorker` process, on each host whose
//! `[calico] startup_resync` is `always`, master or not; none where it is `never`; a failed resync
//! is abandoned, not retried; and nothing periodic.

use model::calico::resync::StartupResync;
use model::calico::{CalicoEvent, Config};
use sim::etcd::{Etcd, EtcdConfig};
use sim::event::Event;
use sim::monitor::{Failure, Monitor};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::{Fault, FaultKind, NetSpec, NodeIx, NodeSpec, Record};
use std::cell::RefCell;
use std::rc::Rc;

/// What a run saw: resync-worker starts (node) and resyncs (node, ok, true time in s), and each
/// resync's failed step and true time in ms.
#[derive(Default, Debug)]
struct Seen {
    workers: Vec<NodeIx>,
    resyncs: Vec<(NodeIx, bool, u64)>,
    ends: Vec<(Option<String>, u64)>,
}

struct Recorder(Rc<RefCell<Seen>>);

impl Monitor for Recorder {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let mut seen = self.0.borrow_mut();
        match &rec.event {
            Event::ProcessStart { name, .. } if name == "neutron-server/resync" => {
                seen.workers.push(rec.node);
            }
            _ => {
                if let Some(CalicoEvent::CalicoResync { ok, failed, .. }) = rec.event.system() {
                    seen.resyncs.push((rec.node, *ok, rec.t_us / 1_000_000));
                    seen.ends.push((failed.clone(), rec.t_us / 1_000));
                }
            }
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

/// Three neutron-server hosts, etcd and the Neutron DB, 1 ms each way, for 10 minutes under
/// `faults`.
fn run(startup_resync: StartupResync, faults: Vec<Fault>) -> Seen {
    on_fresh_thread(move || {
        let seen: Rc<RefCell<Seen>> = Rc::default();
        let cfg = SimConfig {
            seed: 3,
            nodes: NodeSpec::exact_all(["h1", "h2", "h3", "etcd", "neutron-db", "rabbitmq"]),
            net: NetSpec::fixed(1_000),
            schedule: faults,
            fault_window_ms: 600_000,
            liveness_ms: 0,
            keep_trace: false,
        };
        simulate(cfg, Box::new(Recorder(seen.clone())), move |world| {
            let etcd = Etcd::install(world, 3, EtcdConfig::default());
            let neutron = model::calico::neutron::install(world, 4);
            let broker = model::calico::broker::install(world, 5, neutron.clone());
            let cfg = Config {
                startup_resync,
                ..Config::default()
            };
            model::calico::install(world, &[0, 1, 2], &etcd, &neutron, &broker, cfg);
        });
        Rc::try_unwrap(seen).expect("the run is over").into_inner()
    })
    .expect("the run ends")
}

/// `test_startup_resync_disabled` (test_plugin_etcd.py line 1791 at 87c15906): with
/// `startup_resync = never` nothing resyncs. Here only h2's is `always`: h1 and h3 fork no resync
/// worker and resync nothing; h2 resyncs once, at its start, though only one host is master.
#[test]
fn upstream_startup_resync_disabled_on_the_hosts_set_to_never() {
    let seen = run(StartupResync::OnlyOn(1), Vec::new());
    assert_eq!(seen.workers, vec![1], "{seen:?}");
    assert_eq!(seen.resyncs, vec![(1, true, 0)], "{seen:?}");
}

/// Every host with the default resyncs once at its start, master or not, and never again in ten
/// minutes: no periodic resync (upstream 80d666fd13 removed it).
#[test]
fn every_host_resyncs_once_at_start_and_never_again() {
    let seen = run(StartupResync::Everywhere, Vec::new());
    // The hosts start in the order their start delays fall, so only which ones is checked.
    let mut workers = seen.workers.clone();
    workers.sort();
    assert_eq!(workers, vec![0, 1, 2], "{seen:?}");
    assert_eq!(
        seen.resyncs,
        vec![(0, true, 0), (1, true, 0), (2, true, 0)],
        "{seen:?}"
    );
}

/// A resync that fails (etcd cut off from h1 at start) is abandoned: it is reported failed once,
/// and not retried when etcd comes back (`_do_startup_resync`: "Failures are logged loudly but
/// not retried", mech_calico.py lines 1284-1322 at 87c15906).
#[test]
fn a_failed_startup_resync_is_not_retried() {
    let cut = Fault {
        at_ms: 0,
        dur_ms: 120_000,
        kind: FaultKind::Isolate { node: "h1".into() },
    };
    let seen = run(StartupResync::OnlyOn(0), vec![cut]);
    assert_eq!(seen.workers, vec![0], "{seen:?}");
    assert_eq!(seen.resyncs.len(), 1, "{seen:?}");
    let (node, ok, _) = seen.resyncs[0];
    assert_eq!((node, ok), (0, false), "{seen:?}");
}

/// A Neutron DB fault of `kind` on `neutron-db` from `at_ms` for `dur_ms`.
fn db_fault(at_ms: u64, dur_ms: u64, kind: fn(String) -> FaultKind) -> Fault {
    Fault {
        at_ms,
        dur_ms,
        kind: kind("neutron-db".into()),
    }
}

/// The Neutron DB taking 5 s more a statement from the start for `dur_ms`.
fn db_slow_5s(dur_ms: u64) -> Fault {
    db_fault(0, dur_ms, |node| FaultKind::ServiceSlow {
        node,
        extra_ms: 5_000,
    })
}

/// A run with h1's resync worker only, under `faults`: its one resync's failed step and true
/// time in ms, and what the run saw.
fn h1_resync_under(faults: Vec<Fault>) -> (Option<String>, u64, Seen) {
    let seen = run(StartupResync::OnlyOn(0), faults);
    assert_eq!(seen.ends.len(), 1, "one resync, never retried: {seen:?}");
    let (failed, ms) = seen.ends[0].clone();
    (failed, ms, seen)
}

/// The resync reads the Neutron DB through the plugin's getters, which retry a database error
/// with neutron-lib's backoff (`@retry_if_session_inactive`; syncer.py lines 165-172 at
/// 87c15906): a 20 s outage from the start delays the resync past it, and it then succeeds.
#[test]
fn resync_waits_out_a_short_neutron_db_outage() {
    let down = db_fault(0, 20_000, |node| FaultKind::ServiceUnavailable { node });
    let (failed, ms, seen) = h1_resync_under(vec![down]);
    assert_eq!(failed, None, "{seen:?}");
    // Past the outage, and within one backoff step (at most 10 s) of its end.
    assert!((20_000..=31_000).contains(&ms), "{seen:?}");
}

/// An outage that outlasts the getter's 20 retries (about two minutes of backoff at most) fails
/// the resync at its first Neutron read, and it is not retried when the database comes back.
#[test]
fn resync_fails_when_a_neutron_db_outage_outlasts_the_retries() {
    let down = db_fault(0, 400_000, |node| FaultKind::ServiceUnavailable { node });
    let (failed, ms, seen) = h1_resync_under(vec![down]);
    let failed = failed.expect("the resync fails");
    assert!(
        failed.starts_with("Get(Subnets)") && failed.contains("Unavailable"),
        "{failed}"
    );
    // oslo.db's sleeps: 0.5 s, then jittered draws below 1, 2, 4, 8 s and 16 at most 10 s each.
    assert!(ms <= 166_000, "{seen:?}");
    assert_eq!(seen.resyncs, vec![(0, false, ms / 1_000)], "{seen:?}");
}

/// A slow database delays every read: with 5 s a statement the resync's seven Neutron reads take
/// 35 s, and it succeeds.
#[test]
fn resync_is_delayed_by_a_slow_neutron_db() {
    let slow = db_slow_5s(120_000);
    let (failed, ms, seen) = h1_resync_under(vec![slow]);
    assert_eq!(failed, None, "{seen:?}");
    assert!((35_000..=37_000).contains(&ms), "{seen:?}");
}

/// The endpoint syncer's bulk read of the ports' side data runs inside its own reader
/// transaction, where no retry decorator applies (endpoints.py `_prefetch_bulk_port_data`, line
/// 214 at 87c15906): an outage that begins while `get_ports` is being served fails the resync at
/// that read, at once, though a getter would have waited it out. Each statement takes 5 s, so
/// `get_ports` is sent at about 15 s and answered at 20 s; the outage runs from 17.5 s to 30 s.
#[test]
fn resync_fails_at_once_when_the_unretried_side_data_read_meets_an_outage() {
    let slow = db_slow_5s(60_000);
    let down = db_fault(17_500, 12_500, |node| FaultKind::ServiceUnavailable {
        node,
    });
    let (failed, ms, seen) = h1_resync_under(vec![slow, down]);
    let failed = failed.expect("the resync fails");
    assert!(
        failed.starts_with("Query(PortSideData)") && failed.contains("Unavailable"),
        "{failed}"
    );
    assert!((20_000..=21_000).contains(&ms), "{seen:?}");
}
