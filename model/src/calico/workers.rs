//! neutron-server and its worker processes (see the module documentation of `calico`).

use super::elector::Elector;
use super::master::{Shared, Verdict};
use super::*;
use rand::Rng;
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
}

impl Worker {
    fn name(self) -> &'static str {
        match self {
            Worker::Manager => "manager",
            Worker::AgentStatus => "agent-status",
            Worker::EndpointStatus => "endpoint-status",
        }
    }
}

struct Server {
    parent: Proc,
    etcd: Etcd,
    cfg: Rc<Config>,
    shared: Rc<Shared>,
    stopping: Cell<bool>,
    children: RefCell<BTreeMap<Worker, Proc>>,
}

pub(super) fn start_neutron_server(host: &Host, etcd: &Etcd, cfg: &Rc<Config>) {
    let parent = host.spawn_process("neutron-server");
    let server = Rc::new(Server {
        parent: parent.clone(),
        etcd: etcd.clone(),
        cfg: cfg.clone(),
        shared: Rc::new(Shared::default()),
        stopping: Cell::new(false),
        children: RefCell::new(BTreeMap::new()),
    });
    for w in [Worker::Manager, Worker::AgentStatus, Worker::EndpointStatus] {
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
        match w {
            Worker::Manager => {
                let client = self.etcd.client(&proc);
                let elector = Elector::new(
                    &proc,
                    client.clone(),
                    self.cfg.election_key(),
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
                };
                proc.spawn("compaction", async move { c.run().await });
                let p = proc.clone();
                proc.spawn("main", async move {
                    p.terminated().await;
                    if !sw.no_step_down_on_stop {
                        // Elector.stop(): kill the elector where it waits; its cleanup steps down.
                        let seen = done.generation();
                        stop.notify();
                        let _ = madsim::time::timeout(
                            Duration::from_secs(10),
                            done.changed_since(seen),
                        )
                        .await;
                    }
                    p.exit(0);
                });
            }
            Worker::AgentStatus | Worker::EndpointStatus => {
                let watcher = Watcher {
                    proc: proc.clone(),
                    shared: self.shared.clone(),
                    sw,
                    worker: w,
                };
                proc.spawn(w.name(), async move { watcher.run().await });
                let p = proc.clone();
                proc.spawn("main", async move {
                    p.terminated().await;
                    p.exit(0);
                });
            }
        }
        proc
    }
}

/// Polls `is_master()` as a master-only loop does, reporting stale stamps once per episode.
struct MasterCheck {
    last: Cell<Option<Verdict>>,
}

impl MasterCheck {
    fn new() -> Self {
        MasterCheck {
            last: Cell::new(None),
        }
    }

    fn check(&self, proc: &Proc, shared: &Shared, sw: &Switches) -> bool {
        let v = shared.verdict(proc, sw);
        if let Verdict::Stale { age_us } = v {
            if !matches!(self.last.get(), Some(Verdict::Stale { .. })) {
                proc.emit(Event::CalicoStaleStamp {
                    age_ms: age_us / 1000,
                });
            }
        }
        self.last.set(Some(v));
        v.is_master()
    }
}

/// A master-only status watcher, reduced to its side effects.
struct Watcher {
    proc: Proc,
    shared: Rc<Shared>,
    sw: Switches,
    worker: Worker,
}

impl Watcher {
    fn action(&self) -> &'static str {
        match self.worker {
            Worker::AgentStatus => "report-agent-alive",
            _ => "write-port-status",
        }
    }

    async fn run(&self) {
        let mut rng = self.proc.rng(self.worker.name());
        let check = MasterCheck::new();
        let mut running = false;
        let mut wind_down_until: Option<u64> = None;
        let mut next_check = self.proc.mono_us();
        let mut next_report = next_check + rng.random_range(500_000..3_000_000);
        loop {
            let now = self.proc.mono_us();
            if now >= next_check {
                if check.check(&self.proc, &self.shared, &self.sw) {
                    wind_down_until = None;
                    if !running {
                        running = true;
                        self.proc.emit(Event::CalicoWatcher {
                            worker: self.worker.name().into(),
                            running,
                        });
                    }
                } else if running && wind_down_until.is_none() {
                    wind_down_until =
                        Some(now + rng.random_range(0..=ROUND_TRIP_CHECK.as_micros() as u64));
                }
                next_check = now + MASTER_CHECK_INTERVAL.as_micros() as u64;
            }
            if wind_down_until.is_some_and(|w| now >= w) {
                wind_down_until = None;
                running = false;
                self.proc.emit(Event::CalicoWatcher {
                    worker: self.worker.name().into(),
                    running,
                });
            }
            if now >= next_report {
                if running
                    && (!self.sw.recheck_before_act
                        || check.check(&self.proc, &self.shared, &self.sw))
                {
                    self.proc.emit(Event::CalicoMasterOnly {
                        pid: self.proc.pid(),
                        worker: self.worker.name().into(),
                        action: self.action().into(),
                    });
                }
                next_report = now + rng.random_range(500_000..3_000_000);
            }
            let wake = next_check
                .min(next_report)
                .min(wind_down_until.unwrap_or(u64::MAX));
            self.proc
                .sleep(Duration::from_micros(wake.saturating_sub(now)))
                .await;
        }
    }
}

/// The compaction task of the manager worker (spec/calico.md, "Compaction").
struct Compaction {
    proc: Proc,
    etcd: Client,
    shared: Rc<Shared>,
    sw: Switches,
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
        let (lease, _) = self.etcd.grant(COMPACTION_PERIOD.as_secs() as i64).await?;
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
