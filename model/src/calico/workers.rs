//! neutron-server and its worker processes (see the module documentation of `calico`), as
//! networking-calico asks Neutron for them: `CalicoMechanismDriver.get_workers` and
//! `post_fork_initialize` (plugins/ml2/drivers/calico/mech_calico.py lines 478-578 at
//! projectcalico/calico 87c15906): a manager worker (elector and compaction), the agent- and
//! endpoint-status watcher workers, and the startup-resync worker (see `resync`), each its own
//! process.

use super::broker::Broker;
use super::elector::Elector;
use super::master::Shared;
use super::neutron::Neutron;
use super::port_status::PORT_WRITERS;
use super::watchers::{Driver, Kind, Peers};
use super::*;
use sim::etcd::{Etcd, Reauth};
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Worker {
    Manager,
    AgentStatus,
    EndpointStatus,
    Resync,
}

impl Worker {
    fn name(self) -> &'static str {
        match self {
            Worker::Manager => "manager",
            Worker::AgentStatus => "agent-status",
            Worker::EndpointStatus => "endpoint-status",
            Worker::Resync => "resync",
        }
    }
}

struct Server {
    parent: Proc,
    etcd: Etcd,
    neutron: Neutron,
    broker: Broker,
    cfg: Rc<Config>,
    shared: Rc<Shared>,
    stopping: Cell<bool>,
    children: RefCell<BTreeMap<Worker, Proc>>,
}

pub(super) fn start_neutron_server(
    host: &Host,
    etcd: &Etcd,
    neutron: &Neutron,
    broker: &Broker,
    cfg: &Rc<Config>,
) {
    let parent = host.spawn_process("neutron-server");
    let server = Rc::new(Server {
        parent: parent.clone(),
        etcd: etcd.clone(),
        neutron: neutron.clone(),
        broker: broker.clone(),
        cfg: cfg.clone(),
        shared: Rc::new(Shared::default()),
        stopping: Cell::new(false),
        children: RefCell::new(BTreeMap::new()),
    });
    // `get_workers` leaves the startup-resync worker out where `startup_resync = never`.
    let resync = cfg.startup_resync.runs_on(host.node());
    let workers = [Worker::Manager, Worker::AgentStatus, Worker::EndpointStatus];
    for w in workers.into_iter().chain(resync.then_some(Worker::Resync)) {
        let s = server.clone();
        parent.spawn(&format!("supervise-{}", w.name()), async move {
            s.supervise(w).await
        });
    }
    parent.spawn("main", async move { server.main().await });
}

impl Server {
    /// Runs a worker and respawns it (new pid) whenever it exits, until the server stops.
    async fn supervise(&self, w: Worker) {
        while !self.stopping.get() {
            let child = self.spawn_worker(w);
            self.children.borrow_mut().insert(w, child.clone());
            child.wait_exit().await;
            if self.stopping.get() {
                break;
            }
            self.parent.sleep(RESPAWN_DELAY).await;
        }
    }

    /// SIGTERM: stop every worker gracefully, then exit.
    async fn main(&self) {
        self.parent.terminated().await;
        self.stopping.set(true);
        let children: Vec<Proc> = self.children.borrow().values().cloned().collect();
        for c in &children {
            self.parent.terminate(c.pid());
        }
        for c in &children {
            c.wait_exit().await;
        }
        self.parent.exit(0);
    }

    fn spawn_worker(&self, w: Worker) -> Proc {
        let proc = self
            .parent
            .spawn_child(&format!("neutron-server/{}", w.name()));
        let sw = self.cfg.switches.clone();
        // One `Etcd3AuthClient` per process (etcdv3.py `_get_client`, lines 626-670 at 87c15906):
        // with etcd auth configured it re-authenticates and posts again after any etcd error
        // (`post`, lines 542-559).
        let client = self
            .etcd
            .client_with_timeout(&proc, ETCD_TIMEOUT)
            .with_reauth(Reauth::OnAnyEtcdError);
        let mut registered: Vec<String> = Vec::new();
        match w {
            Worker::Manager => {
                let elector = Elector::new(
                    &proc,
                    client.clone(),
                    self.cfg.election_key(),
                    Some(LEGACY_ELECTION_KEY.to_string()),
                    self.shared.clone(),
                    sw.clone(),
                );
                let (stop, done) = (Notify::new(), Notify::new());
                let (s, d) = (stop.clone(), done.clone());
                proc.spawn("elector", elector.run(s, d));
                let c = super::compaction::Compaction {
                    proc: proc.clone(),
                    etcd: client,
                    shared: self.shared.clone(),
                    sw: sw.clone(),
                    period: self.cfg.compaction_period,
                };
                proc.spawn("compaction", async move { c.run().await });
                registered.push("compaction".into());
                let p = proc.clone();
                proc.spawn("main", async move {
                    p.terminated().await;
                    if !sw.no_step_down_on_stop {
                        // Elector.stop(): kill the elector where it waits; its cleanup steps down.
                        let seen = done.generation();
                        stop.notify();
                        let _ =
                            sim::time::timeout(Duration::from_secs(10), done.changed_since(seen))
                                .await;
                    }
                    p.exit(0);
                });
            }
            Worker::AgentStatus | Worker::EndpointStatus => {
                let kind = if w == Worker::AgentStatus {
                    Kind::Agent
                } else {
                    Kind::Endpoint
                };
                if sw.mutant_watchdog_registers_watcher {
                    registered.push(kind.watcher_task().into());
                }
                let peers = Peers {
                    etcd: client,
                    neutron: self.neutron.clone(),
                    broker: self.broker.clone(),
                };
                let driver = Driver::new(
                    &proc,
                    peers,
                    self.shared.clone(),
                    sw,
                    kind,
                    self.cfg.felix_prefix(),
                );
                if let Some(ports) = &driver.ports {
                    for i in 1..=PORT_WRITERS {
                        let name = format!("port-writer-{i}");
                        proc.spawn(&name, ports.clone().writer());
                        registered.push(name);
                    }
                }
                proc.spawn(kind.name(), driver.watch_status_updates());
                registered.push(kind.name().into());
                self.spawn_exit_on_terminate(&proc);
            }
            Worker::Resync => {
                let region = self.cfg.region.clone();
                let resync =
                    super::resync::Resync::new(&proc, client, self.neutron.clone(), region);
                let run = resync.run(self.shared.clone(), sw.clone());
                proc.spawn("resync", run);
                // The one-shot resync is MEANT to finish: only the bug registers it.
                if sw.watchdog_counts_oneshot {
                    registered.push("resync".into());
                }
                self.spawn_exit_on_terminate(&proc);
            }
        }
        if self.cfg.watchdog {
            super::watchdog::install(&proc, &registered);
        }
        proc
    }

    fn spawn_exit_on_terminate(&self, proc: &Proc) {
        let p = proc.clone();
        proc.spawn("main", async move {
            p.terminated().await;
            p.exit(0);
        });
    }
}
