//! The agent-status and endpoint-status watchers (networking-calico `status.py`), master-only.
//!
//! spec/calico.md, "Status watchers":
//! * a master-only loop polls `is_master()` every 5 s; when it becomes master it starts the watcher,
//!   and when it stops being master the watcher winds down within the round-trip check (~3.3 s);
//! * the watcher loads a snapshot of `/calico/felix/v2/<region>/host/` (processed in chunks of 200
//!   keys with `processing_snapshot` set), then watches from the snapshot revision + 1; it writes a
//!   round-trip-check key every ~3.3 s and restarts with a new snapshot when no event arrives for
//!   10 s; when etcd is unreachable it retries after 5 s; events are de-duplicated per key on
//!   `mod_revision`;
//! * agent status: each report is checked for staleness (`status::check`) and forwarded to Neutron
//!   as "agent alive"; the forwarding waits for Neutron's DB, so a slow DB builds a backlog;
//! * endpoint status: port updates go into a priority queue (live events ahead of snapshot events)
//!   served by 4 writers; a DB error retries after 5 s.

use super::master::{MasterCheck, Shared};
use super::neutron::{Neutron, Request, DB_TIMEOUT};
use super::status::{check, Limiter, Stale};
use super::{Switches, MASTER_CHECK_INTERVAL, ROUND_TRIP_CHECK};
use futures::future::{select, Either};
use rand::Rng;
use sim::etcd::{Client, EventKind, WatchMsg};
use sim::sync::Notify;
use sim::{Event, Proc};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// Snapshot chunk size.
pub const SNAPSHOT_CHUNK: usize = 200;
/// A watch with no event for this long is restarted.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Retry delay when etcd is unreachable, and after a DB error.
pub const RETRY: Duration = Duration::from_secs(5);
/// Number of port-status writers.
pub const PORT_WRITERS: usize = 4;

/// Which watcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Agent,
    Endpoint,
}

impl Kind {
    /// Worker and task name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Agent => "agent-status",
            Kind::Endpoint => "endpoint-status",
        }
    }
}

/// Port updates waiting for a writer: live (priority 0) ahead of snapshot (1), then FIFO.
#[derive(Default)]
pub struct PortQueue {
    items: RefCell<BTreeMap<(u8, u64), (String, String)>>,
    seq: Cell<u64>,
    added: Notify,
}

impl PortQueue {
    fn push(&self, live: bool, port: String, status: String) {
        self.seq.set(self.seq.get() + 1);
        self.items
            .borrow_mut()
            .insert((u8::from(!live), self.seq.get()), (port, status));
        self.added.notify();
    }

    async fn pop(&self) -> (String, String) {
        loop {
            let seen = self.added.generation();
            if let Some((_, item)) = self.items.borrow_mut().pop_first() {
                return item;
            }
            self.added.changed_since(seen).await;
        }
    }
}

/// Why a watch session ended.
enum End {
    /// etcd unreachable or errored: retry after 5 s.
    Etcd,
    /// Idle or cancelled: restart with a new snapshot at once.
    Restart,
    /// The handler raised: the task dies.
    Raised,
}

/// One status watcher.
pub struct Watcher {
    proc: Proc,
    etcd: Client,
    neutron: Neutron,
    shared: Rc<Shared>,
    sw: Switches,
    kind: Kind,
    prefix: String,
    roundtrip_key: String,
    limiter: RefCell<Limiter>,
    seen: RefCell<BTreeMap<String, i64>>,
    check: MasterCheck,
    running: Cell<bool>,
    /// Port updates (endpoint watcher only).
    pub queue: Rc<PortQueue>,
}

impl Watcher {
    /// A watcher of `kind` for process `proc`, watching `prefix`.
    pub fn new(
        proc: &Proc,
        etcd: Client,
        neutron: Neutron,
        shared: Rc<Shared>,
        sw: Switches,
        kind: Kind,
        prefix: String,
    ) -> Rc<Watcher> {
        let roundtrip_key = format!("{prefix}{}/roundtrip-{}", proc.host_name(), kind.name());
        Rc::new(Watcher {
            proc: proc.clone(),
            etcd,
            neutron,
            limiter: RefCell::new(Limiter::new(&sw)),
            shared,
            sw,
            kind,
            prefix,
            roundtrip_key,
            seen: RefCell::default(),
            check: MasterCheck::new(),
            running: Cell::new(false),
            queue: Rc::default(),
        })
    }

    fn is_master(&self) -> bool {
        self.check.check(&self.proc, &self.shared, &self.sw)
    }

    /// The master-only loop. Returns only if the handler raised (the task dies).
    pub async fn run(self: Rc<Self>) {
        let mut rng = self.proc.rng(self.kind.name());
        loop {
            while !self.is_master() {
                self.proc.sleep(MASTER_CHECK_INTERVAL).await;
            }
            self.running.set(true);
            self.proc.emit(Event::CalicoWatcher {
                worker: self.kind.name().into(),
                running: true,
            });
            let wind_down = rng.random_range(0..=ROUND_TRIP_CHECK.as_millis() as u64);
            let stop = async {
                loop {
                    self.proc.sleep(MASTER_CHECK_INTERVAL).await;
                    if !self.is_master() {
                        self.proc.sleep(Duration::from_millis(wind_down)).await;
                        return;
                    }
                }
            };
            let raised = match select(Box::pin(self.watch_forever()), Box::pin(stop)).await {
                Either::Left(_) => true,
                Either::Right(_) => false,
            };
            self.running.set(false);
            self.queue.items.borrow_mut().clear();
            self.proc.emit(Event::CalicoWatcher {
                worker: self.kind.name().into(),
                running: false,
            });
            if raised {
                return;
            }
        }
    }

    /// Returns only when the handler raised.
    async fn watch_forever(&self) {
        loop {
            match self.session().await {
                End::Raised => return,
                End::Etcd => self.proc.sleep(RETRY).await,
                End::Restart => {}
            }
        }
    }

    async fn session(&self) -> End {
        let Ok((kvs, rev)) = self.etcd.range(&self.prefix, true, 0).await else {
            return End::Etcd;
        };
        self.proc.emit(Event::CalicoSnapshot {
            worker: self.kind.name().into(),
            keys: kvs.len() as u32,
            rev,
            done: false,
        });
        for chunk in kvs.chunks(SNAPSHOT_CHUNK) {
            for kv in chunk {
                if !self.handle(&kv.key, &kv.value, kv.mod_revision, true).await {
                    return End::Raised;
                }
            }
        }
        self.proc.emit(Event::CalicoSnapshot {
            worker: self.kind.name().into(),
            keys: kvs.len() as u32,
            rev,
            done: true,
        });
        let Ok(mut watch) = self.etcd.watch(&self.prefix, true, rev + 1).await else {
            return End::Etcd;
        };
        let rt_every = ROUND_TRIP_CHECK.as_micros() as u64;
        let mut next_rt = self.proc.mono_us() + rt_every;
        let mut idle_at = self.proc.mono_us() + IDLE_TIMEOUT.as_micros() as u64;
        // One timer kept across messages: the idle deadline moves on with every message, and
        // pushing a deadline later does not register a new timer (see `sim::time::Sleep`).
        let mut timer = self.proc.sleep_until_mono(next_rt.min(idle_at));
        loop {
            timer.reset(self.proc.mono_instant(next_rt.min(idle_at)));
            match select(std::pin::pin!(watch.next()), &mut timer).await {
                Either::Left((WatchMsg::Events(events), _)) => {
                    idle_at = self.proc.mono_us() + IDLE_TIMEOUT.as_micros() as u64;
                    for e in events {
                        if e.kind == EventKind::Put
                            && !self
                                .handle(&e.kv.key, &e.kv.value, e.kv.mod_revision, false)
                                .await
                        {
                            return End::Raised;
                        }
                    }
                }
                Either::Left((WatchMsg::Canceled { .. }, _)) => return End::Restart,
                Either::Right(_) => {
                    let now = self.proc.mono_us();
                    if now >= idle_at {
                        return End::Restart;
                    }
                    if now >= next_rt {
                        next_rt = now + rt_every;
                        let stamp = self.proc.wall_us().to_string();
                        if self.etcd.put(&self.roundtrip_key, &stamp, 0).await.is_err() {
                            return End::Etcd;
                        }
                    }
                }
            }
        }
    }

    /// Handles one key; false if the handler raised.
    async fn handle(&self, key: &str, value: &str, mod_revision: i64, in_snapshot: bool) -> bool {
        let rest = key.strip_prefix(&self.prefix).unwrap_or(key);
        let relevant = match self.kind {
            Kind::Agent => rest.ends_with("/status"),
            Kind::Endpoint => rest.contains("/endpoint/"),
        };
        // Other keys under the prefix (the round-trip keys, most of the traffic) are ignored, so
        // de-duplicating them would change nothing; only the keys acted on are remembered.
        if !relevant {
            return true;
        }
        {
            let mut seen = self.seen.borrow_mut();
            match seen.get_mut(key) {
                Some(r) if *r >= mod_revision => return true,
                Some(r) => *r = mod_revision,
                None => {
                    seen.insert(key.to_string(), mod_revision);
                }
            }
        }
        match self.kind {
            Kind::Agent => {
                let host = rest.split('/').next().unwrap_or("").to_string();
                self.on_agent_status(host, value, mod_revision, in_snapshot)
                    .await
            }
            Kind::Endpoint => {
                if let Some(status) = port_status(value) {
                    let port = rest.rsplit('/').next().unwrap_or("").to_string();
                    self.queue.push(!in_snapshot, port, status);
                }
                true
            }
        }
    }

    async fn on_agent_status(
        &self,
        host: String,
        value: &str,
        rev: i64,
        in_snapshot: bool,
    ) -> bool {
        let Some(report) = AgentReport::parse(value) else {
            return true;
        };
        let time = report.time;
        let now_unix = sim::clock::EPOCH_UNIX_US + self.proc.wall_us();
        let verdict = check(
            time.as_deref(),
            now_unix,
            self.proc.mono_us(),
            in_snapshot,
            &mut self.limiter.borrow_mut(),
            &self.sw,
        );
        match verdict {
            Stale::Raised(error) => {
                self.proc.emit(Event::CalicoTaskCrash {
                    pid: self.proc.pid(),
                    task: self.kind.name().into(),
                    error,
                });
                return false;
            }
            Stale::Unparsable => self.proc.emit(Event::CalicoUnparsableTime {
                host: host.clone(),
                time: time.clone().unwrap_or_default(),
            }),
            Stale::Stale {
                lag_us,
                warned: true,
            } => self.proc.emit(Event::CalicoStaleWarning {
                host: host.clone(),
                lag_ms: lag_us / 1000,
                in_snapshot,
            }),
            Stale::Stale {
                lag_us,
                warned: false,
            } => self.proc.emit(Event::CalicoStaleSuppressed {
                host: host.clone(),
                lag_ms: lag_us / 1000,
            }),
            Stale::Skipped | Stale::Fresh => {}
        }
        if self.sw.recheck_before_act && !self.is_master() {
            return true;
        }
        self.proc.emit(Event::CalicoMasterOnly {
            pid: self.proc.pid(),
            worker: self.kind.name().into(),
            action: "report-agent-alive".into(),
        });
        self.proc.emit(Event::CalicoAgentForward {
            host: host.clone(),
            rev,
            in_snapshot,
            time: time.unwrap_or_default(),
        });
        let first_update = report.first_update;
        // A DB error is logged and the report dropped; Neutron's own timeout covers it.
        let _ = self
            .proc
            .call(
                &self.neutron,
                Request::ReportAgent { host, first_update },
                DB_TIMEOUT,
            )
            .await;
        true
    }

    /// One of the 4 port-status writers (endpoint watcher).
    pub async fn port_writer(self: Rc<Self>) {
        loop {
            let (port, status) = self.queue.pop().await;
            if !self.running.get() || (self.sw.recheck_before_act && !self.is_master()) {
                continue;
            }
            self.proc.emit(Event::CalicoMasterOnly {
                pid: self.proc.pid(),
                worker: self.kind.name().into(),
                action: "write-port-status".into(),
            });
            let ok = matches!(
                self.proc
                    .call(
                        &self.neutron,
                        Request::PortStatus {
                            port: port.clone(),
                            status: status.clone()
                        },
                        DB_TIMEOUT
                    )
                    .await,
                Ok(Ok(()))
            );
            self.proc.emit(Event::CalicoPortWrite {
                port: port.clone(),
                status: status.clone(),
                ok,
            });
            if !ok {
                self.proc.sleep(RETRY).await;
                self.queue.push(true, port, status);
            }
        }
    }
}

/// What the agent-status handler reads from a Felix report: `time` if it is a string,
/// `first_update` if it is true; `None` if the value is not JSON.
#[derive(Debug, PartialEq)]
struct AgentReport {
    time: Option<String>,
    first_update: bool,
}

/// The usual shape, read without building a JSON tree.
#[derive(serde::Deserialize)]
struct TypedReport {
    time: Option<String>,
    first_update: Option<bool>,
}

impl AgentReport {
    fn parse(value: &str) -> Option<AgentReport> {
        // An object whose `time` is a string (or null) and `first_update` a boolean (or null):
        // read directly. Anything else (another type, duplicate keys, not an object) through
        // the JSON tree, with the same answer as before.
        if value.trim_start().starts_with('{') {
            if let Ok(r) = serde_json::from_str::<TypedReport>(value) {
                return Some(AgentReport {
                    time: r.time,
                    first_update: r.first_update.unwrap_or(false),
                });
            }
        }
        let v = serde_json::from_str::<serde_json::Value>(value).ok()?;
        Some(AgentReport {
            time: v["time"].as_str().map(str::to_string),
            first_update: v["first_update"].as_bool().unwrap_or(false),
        })
    }
}

/// The `status` string of an endpoint's status value, if it has one.
fn port_status(value: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed {
        status: Option<String>,
    }
    if value.trim_start().starts_with('{') {
        if let Ok(t) = serde_json::from_str::<Typed>(value) {
            return t.status;
        }
    }
    serde_json::from_str::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v["status"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON-tree reading the typed one shortcuts.
    fn by_tree(value: &str) -> Option<AgentReport> {
        let v = serde_json::from_str::<serde_json::Value>(value).ok()?;
        Some(AgentReport {
            time: v["time"].as_str().map(str::to_string),
            first_update: v["first_update"].as_bool().unwrap_or(false),
        })
    }

    #[test]
    fn reports_read_as_the_json_tree_reads_them() {
        for value in [
            r#"{"first_update":true,"time":"2026-01-01T00:00:01.984004Z","uptime":0}"#,
            r#"{"first_update":false,"time":"garbled-time","uptime":12}"#,
            r#"{"time":null}"#,
            r#"{"time":5,"first_update":true}"#,
            r#"{"time":"a","first_update":"yes"}"#,
            r#"{"time":"a","time":"b"}"#,
            r#"{"first_update":null}"#,
            r#" {"time":"x","extra":{"nested":[1,2]}}"#,
            r#"["2026-01-01T00:00:00Z",true]"#,
            r#""just a string""#,
            "{}",
            "not json",
            "",
        ] {
            assert_eq!(AgentReport::parse(value), by_tree(value), "{value}");
            let tree = serde_json::from_str::<serde_json::Value>(value)
                .ok()
                .and_then(|v| v["status"].as_str().map(str::to_string));
            let as_status = value.replace("\"time\"", "\"status\"");
            let tree_status = serde_json::from_str::<serde_json::Value>(&as_status)
                .ok()
                .and_then(|v| v["status"].as_str().map(str::to_string));
            assert_eq!(port_status(value), tree, "{value}");
            assert_eq!(port_status(&as_status), tree_status, "{as_status}");
        }
    }
}
