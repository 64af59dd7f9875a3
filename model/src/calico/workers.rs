//! neutron-server and its worker processes (see the module documentation of `calico`).

use super::elector::Elector;
use super::master::{MasterCheck, Shared};
use super::neutron::Neutron;
use super::watchers::{Kind, Watcher, PORT_WRITERS};
use super::*;
use sim::etcd::{Client, Etcd};
use sim::sync::Notify;
use sim::{Event, Proc};
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
    cfg: Rc<Config>,
    shared: Rc<Shared>,
    stopping: Cell<bool>,
    children: RefCell<BTreeMap<Worker, Proc>>,
}

pub(super) fn start_neutron_server(host: &Host, etcd: &Etcd, neutron: &Neutron, cfg: &Rc<Config>) {
    let parent = host.spawn_process("neutron-server");
    let server = Rc::new(Server {
        parent: parent.clone(),
        etcd: etcd.clone(),
        neutron: neutron.clone(),
        cfg: cfg.clone(),
        shared: Rc::new(Shared::default()),
        stopping: Cell::new(false),
        children: RefCell::new(BTreeMap::new()),
    });
    for w in [
        Worker::Manager,
        Worker::AgentStatus,
        Worker::EndpointStatus,
        Worker::Resync,
    ] {
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
        let client = self.etcd.client_with_timeout(&proc, ETCD_TIMEOUT);
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
                let c = Compaction {
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
                let watcher = Watcher::new(
                    &proc,
                    client,
                    self.neutron.clone(),
                    self.shared.clone(),
                    sw,
                    kind,
                    self.cfg.felix_prefix(),
                );
                if kind == Kind::Endpoint {
                    for i in 1..=PORT_WRITERS {
                        let name = format!("port-writer-{i}");
                        proc.spawn(&name, watcher.clone().port_writer());
                        registered.push(name);
                    }
                }
                proc.spawn(kind.name(), watcher.run());
                registered.push(kind.name().into());
                self.spawn_exit_on_terminate(&proc);
            }
            Worker::Resync => {
                let (p, interval) = (proc.clone(), self.cfg.resync_interval);
                let prefix = self.cfg.felix_prefix();
                proc.spawn("resync", async move {
                    loop {
                        // A resync reads the Calico data and reconciles it with Neutron's.
                        let keys = client
                            .range(&prefix, true, 0)
                            .await
                            .map_or(0, |(kvs, _)| kvs.len() as u32);
                        p.emit(Event::CalicoResync { pid: p.pid(), keys });
                        if interval.is_zero() {
                            return; // one-shot: this task is MEANT to finish
                        }
                        p.sleep(interval).await;
                    }
                });
                if !interval.is_zero() || sw.watchdog_counts_oneshot {
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

/// The compaction task of the manager worker (spec/calico.md, "Compaction").
struct Compaction {
    proc: Proc,
    etcd: Client,
    shared: Rc<Shared>,
    sw: Switches,
    period: Duration,
}

impl Compaction {
    async fn run(&self) {
        let check = MasterCheck::new();
        loop {
            self.proc.sleep(MASTER_CHECK_INTERVAL).await;
            if check.check(&self.proc, &self.shared, &self.sw) {
                // Any etcd error: try again at the next poll.
                let _ = self.check_compaction().await;
            }
        }
    }

    async fn check_compaction(&self) -> Result<(), sim::etcd::EtcdError> {
        if self.etcd.get(COMPACTION_TRIGGER_KEY).await?.is_some() {
            return Ok(()); // someone compacted within the last period
        }
        self.proc.emit(Event::CalicoMasterOnly {
            pid: self.proc.pid(),
            worker: "manager".into(),
            action: "compaction-check".into(),
        });
        let (current, _) = self.etcd.status().await?;
        let (last_check, mut last_compacted) = match self.etcd.get(COMPACTION_LAST_KEY).await? {
            Some(kv) => parse_last(&kv.value),
            None => (0, 0),
        };
        let keep = COMPACTION_MIN_KEEP.max(current - last_check);
        let compact_at = current - keep;
        if compact_at > last_compacted {
            // An error here means somebody else compacted at or beyond this point.
            if self.etcd.compact(compact_at).await.is_ok() {
                last_compacted = compact_at;
            }
        }
        let (lease, _) = self.etcd.grant(self.period.as_secs() as i64).await?;
        self.etcd.put(COMPACTION_TRIGGER_KEY, "", lease).await?;
        self.etcd
            .put(
                COMPACTION_LAST_KEY,
                &format!("{current},{last_compacted}"),
                0,
            )
            .await?;
        Ok(())
    }
}

fn parse_last(v: &str) -> (i64, i64) {
    let mut it = v.split(',').map(|x| x.trim().parse::<i64>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}
