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

/// What a run saw: resync-worker starts (node) and resyncs (node, ok, true time in s).
#[derive(Default, Debug)]
struct Seen {
    workers: Vec<NodeIx>,
    resyncs: Vec<(NodeIx, bool, u64)>,
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
                if let Some(CalicoEvent::CalicoResync { ok, .. }) = rec.event.system() {
                    seen.resyncs.push((rec.node, *ok, rec.t_us / 1_000_000));
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
