//! The agent-status and endpoint-status watchers, master-only, as networking-calico runs them
//! (projectcalico/calico 87c15906, folder networking-calico/networking_calico/):
//!
//! * The master-only loop, `watch_status_updates` (plugins/ml2/drivers/calico/mech_calico.py line
//!   678), one greenlet per worker process: every `MASTER_CHECK_INTERVAL_SECS` (5 s) it asks
//!   `is_master()`. Master and no watcher: it makes a new `StatusWatcher` and spawns a greenlet
//!   running its `start()` (line 704). Master with a watcher whose greenlet is dead (it returned or
//!   raised): it calls `stop()` and forgets it (lines 710-717), so the next poll makes a new one.
//!   Not master with a watcher: `stop()` (line 724). Nothing else repairs anything: if this loop itself
//!   dies, or the watcher's greenlet blocks forever, no watcher runs again in this process.
//! * The watcher's greenlet, `EtcdWatcher.start` (etcdutils.py line 150): while not stopped, read
//!   the cluster status (revision), run the pre-snapshot hook, read the whole subtree at that
//!   revision and dispatch every key (without looking at `_stopped`), run the post-snapshot hook,
//!   open a watch from revision + 1, spawn `_cancel_watch_if_broken`, and dispatch watch events,
//!   returning at the first event that finds `_stopped` set (line 342). A connection failure
//!   (`ConnectionFailedError`) sleeps 5 s and starts over; any other exception from the status or
//!   snapshot read (a timeout, `ConnectionTimeoutError`; an etcd error; an undecodable reply)
//!   ends the greenlet, and the loop above replaces it. A failure to open the watch starts over.
//! * `_cancel_watch_if_broken` (line 286), a greenlet per watch: every `WATCH_TIMEOUT_SECS / 3`
//!   it writes the round-trip key (`<status dir>/round-trip-check`), and once 10 s pass without an
//!   event, or the watcher is stopped, it cancels the watch, which ends the event loop (etcdv3.py
//!   lines 589-621: queued events first, then the end). It catches only `ConnectionFailedError`:
//!   any other error of the round-trip write ends it, and then nothing cancels a broken watch.
//! * The handlers (plugins/ml2/drivers/calico/status.py): `StatusWatcher.__init__` (line 77) makes
//!   a fresh rate limiter (`_last_stale_warn = -inf`), de-duplication map and endpoint sets per
//!   watcher instance. Agent status, `_on_status_set` (line 202): the stale check on every report,
//!   then `on_felix_alive` unless the key's mod_revision equals the last one handled for the host;
//!   `on_felix_alive` (mech_calico.py line 730) sends the report to Neutron as an RPC cast
//!   (`use_call=False`) on the watcher's greenlet: no answer awaited, but the publish itself
//!   blocks, retried for ever, while the message broker is unreachable (see [`super::broker`]). Endpoint status, `_report_status` /
//!   `_on_ep_delete` (status.py lines 260, 279): the port's status (None for a deletion or bad
//!   JSON) goes to `on_port_status_changed` with priority low during a snapshot and high otherwise;
//!   the post-snapshot hook (line 111) reports None for endpoints missing from the new snapshot.
//!
//! Fix `calico-canceller-catches-all`: the canceller catches every exception of its round-trip
//! write (logs it and goes on), as the watcher's own loop does for a failed watch.
//!
//! Fix `calico-snapshot-checks-stopped`: the snapshot loop (etcdutils.py lines 194-204) looks at
//! `_stopped` before dispatching each key, as the event loop does (line 342). Upstream it does
//! not: a watcher stopped while its snapshot read was held up (a partition, a slow etcd) still
//! dispatches the old snapshot when the read returns, into the port-status cache the process
//! shares with the newer watcher, and queues the old statuses for writing.
//!
//! After a pause the loop's overdue 5 s timer runs before the watcher greenlet sees an event that
//! arrived meanwhile (eventlet's hub, see `hub`).

use super::broker::{self, Broker};
use super::hub::Hub;
use super::master::{MasterCheck, Shared};
use super::neutron::{Neutron, Request};
use super::port_status::{PortKey, PortStatus, Priority};
use super::status::{check, Limiter, Stale};
use super::{Switches, MASTER_CHECK_INTERVAL};
use crate::calico::CalicoEvent;
use futures::future::{select, Either};
use sim::etcd::{Client, EtcdError, EventKind, KeyValue, WatchMsg};
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// `WATCH_TIMEOUT_SECS` (etcdutils.py line 41): a watch with no event for this long is cancelled.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The round-trip write interval, `WATCH_TIMEOUT_SECS / 3`.
pub const ROUND_TRIP_INTERVAL: Duration = Duration::from_micros(10_000_000 / 3);
/// Retry delay when etcd is unreachable (etcdutils.py lines 181, 208).
pub const RETRY: Duration = Duration::from_secs(5);

/// Which watcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The agent-status watcher: Felix liveness reports, forwarded to Neutron.
    Agent,
    /// The endpoint-status watcher: port statuses, queued for the port-status writers.
    Endpoint,
}

impl Kind {
    /// Worker name, and the name of its master-only loop's task.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Agent => "agent-status",
            Kind::Endpoint => "endpoint-status",
        }
    }

    /// The task name of the watcher greenlet.
    pub fn watcher_task(self) -> &'static str {
        match self {
            Kind::Agent => "agent-status-watcher",
            Kind::Endpoint => "endpoint-status-watcher",
        }
    }

    fn canceller_task(self) -> &'static str {
        match self {
            Kind::Agent => "agent-status-watch-canceller",
            Kind::Endpoint => "endpoint-status-watch-canceller",
        }
    }
}

/// What one watcher worker process holds: the mechanism driver's state for that worker.
pub struct Driver {
    proc: Proc,
    etcd: Client,
    broker: Broker,
    shared: Rc<Shared>,
    sw: Switches,
    kind: Kind,
    prefix: String,
    hub: Hub,
    check: MasterCheck,
    /// The port-status cache, queue and writers (endpoint worker only).
    pub ports: Option<Rc<PortStatus>>,
    /// How many `StatusWatcher` instances this process has made.
    watchers: Cell<u32>,
}

/// The services a watcher worker talks to.
pub struct Peers {
    /// The process's etcd client.
    pub etcd: Client,
    /// The Neutron database, which the port-status writers update.
    pub neutron: Neutron,
    /// The message broker, through which `on_felix_alive` casts.
    pub broker: Broker,
}

impl Driver {
    /// The driver of watcher worker `proc`, watching `prefix` (the status directory).
    pub fn new(
        proc: &Proc,
        peers: Peers,
        shared: Rc<Shared>,
        sw: Switches,
        kind: Kind,
        prefix: String,
    ) -> Rc<Driver> {
        let Peers {
            etcd,
            neutron,
            broker,
        } = peers;
        let ports = (kind == Kind::Endpoint)
            .then(|| PortStatus::new(proc, neutron, shared.clone(), sw.clone()));
        Rc::new(Driver {
            proc: proc.clone(),
            etcd,
            broker,
            shared,
            sw,
            kind,
            prefix,
            hub: Hub::default(),
            check: MasterCheck::new(),
            ports,
            watchers: Cell::new(0),
        })
    }

    fn is_master(&self) -> bool {
        self.check.check(&self.proc, &self.shared, &self.sw)
    }

    fn announce(&self, running: bool) {
        self.proc.emit(CalicoEvent::CalicoWatcher {
            worker: self.kind.name().into(),
            running,
        });
    }

    /// `watch_status_updates`: the master-only loop (never returns).
    pub async fn watch_status_updates(self: Rc<Self>) {
        let mut current: Option<Rc<EtcdWatcher>> = None;
        loop {
            if self.is_master() {
                match &current {
                    None => {
                        let w = EtcdWatcher::new(self.clone());
                        if let Some(p) = &self.ports {
                            p.on_watcher_start();
                        }
                        self.proc
                            .spawn(self.kind.watcher_task(), w.clone().run_greenlet());
                        self.announce(true);
                        current = Some(w);
                    }
                    Some(w) if w.dead.get() => {
                        w.stop();
                        current = None;
                        self.announce(false);
                    }
                    Some(_) => {}
                }
            } else if self.sw.mutant_watcher_not_stopped {
                // The watcher is left running.
            } else if let Some(w) = current.take() {
                w.stop();
                self.announce(false);
            }
            self.hub.sleep(&self.proc, MASTER_CHECK_INTERVAL).await;
        }
    }

    /// Records a master-only side effect for the monitor.
    fn master_only(&self, action: &str, in_snapshot: bool) {
        self.proc.emit(CalicoEvent::CalicoMasterOnly {
            pid: self.proc.pid(),
            worker: self.kind.name().into(),
            action: action.into(),
            in_snapshot,
        });
    }

    /// `on_felix_alive` (mech_calico.py lines 730-740 at projectcalico/calico 87c15906): the RPC
    /// cast of the agent's report, sent on the watcher's own greenlet. It returns once the broker
    /// has taken it; while the broker is unreachable oslo.messaging retries it for ever, so this
    /// watcher handles no further event meanwhile (see [`broker::cast`]).
    async fn on_felix_alive(&self, cast: Cast) {
        let req = Request::ReportAgent {
            host: cast.host.clone(),
            first_update: cast.first_update,
        };
        let publishes = broker::cast(&self.proc, &self.broker, req).await;
        if publishes > 1 {
            self.proc.emit(CalicoEvent::CalicoCastDelayed {
                worker: self.kind.name().into(),
                host: cast.host,
                publishes,
            });
        }
    }
}

/// A report `_on_status_set` forwards: the cast it sends once the handler is done.
pub struct Cast {
    host: String,
    first_update: bool,
}

/// Why a watch session ended without the greenlet returning.
enum SessionEnd {
    /// Start over at once (the watch was cancelled, or could not be opened).
    Restart,
    /// A connection failure: sleep 5 s, then start over.
    Retry,
}

/// How the greenlet ends.
enum GreenletEnd {
    /// `stop()` was seen.
    Stopped,
    /// An exception it does not catch.
    Raised(String),
}

/// One `StatusWatcher` instance and its greenlet's state.
pub struct EtcdWatcher {
    driver: Rc<Driver>,
    /// Which instance of its process (for the record).
    id: u32,
    stopped: Cell<bool>,
    /// The greenlet is dead (returned, raised, or was dropped).
    dead: Cell<bool>,
    limiter: RefCell<Limiter>,
    felix_live_rev: RefCell<BTreeMap<String, i64>>,
    processing_snapshot: Cell<bool>,
    endpoints_by_host: RefCell<BTreeMap<String, BTreeSet<String>>>,
}

/// Marks the watcher's greenlet dead however it ends (a silent death drops it mid-await).
struct DeadOnDrop(Rc<EtcdWatcher>);

impl Drop for DeadOnDrop {
    fn drop(&mut self) {
        self.0.dead.set(true);
    }
}

impl EtcdWatcher {
    fn new(driver: Rc<Driver>) -> Rc<EtcdWatcher> {
        let id = driver.watchers.get() + 1;
        driver.watchers.set(id);
        Rc::new(EtcdWatcher {
            id,
            limiter: RefCell::new(Limiter::new(&driver.sw)),
            driver,
            stopped: Cell::new(false),
            dead: Cell::new(false),
            felix_live_rev: RefCell::default(),
            processing_snapshot: Cell::new(false),
            endpoints_by_host: RefCell::default(),
        })
    }

    /// `stop()`: sets `_stopped`, nothing more.
    fn stop(&self) {
        self.stopped.set(true);
    }

    async fn run_greenlet(self: Rc<Self>) {
        let _dead = DeadOnDrop(self.clone());
        if let GreenletEnd::Raised(error) = self.start().await {
            let d = &self.driver;
            d.proc.emit(CalicoEvent::CalicoWatcherRaised {
                pid: d.proc.pid(),
                task: d.kind.watcher_task().into(),
                error,
                watcher: self.id,
            });
        }
    }

    /// `EtcdWatcher.start`.
    async fn start(self: &Rc<Self>) -> GreenletEnd {
        while !self.stopped.get() {
            match self.session().await {
                Ok(SessionEnd::Restart) => {}
                Ok(SessionEnd::Retry) => self.driver.proc.sleep(RETRY).await,
                Err(end) => return end,
            }
        }
        GreenletEnd::Stopped
    }

    /// One pass of `start`'s loop: status, snapshot, watch.
    async fn session(self: &Rc<Self>) -> Result<SessionEnd, GreenletEnd> {
        let d = self.driver.clone();
        let rev = match d.etcd.status().await {
            Ok((rev, _)) => rev,
            Err(e) => return uncaught(e),
        };
        let old = self.pre_snapshot_hook();
        let kvs = match d.etcd.range(&d.prefix, true, rev).await {
            Ok((kvs, _)) => kvs,
            Err(e) => return uncaught(e),
        };
        self.snapshot_event(kvs.len(), rev, false);
        for (handled, kv) in kvs.iter().enumerate() {
            if self.driver.sw.snapshot_checks_stopped && self.stopped.get() {
                d.proc.emit(CalicoEvent::CalicoSnapshotDropped {
                    worker: d.kind.name().into(),
                    handled: handled as u32,
                    watcher: self.id,
                });
                return Err(GreenletEnd::Stopped);
            }
            if let Some(cast) = self.dispatch(EventKind::Put, kv)? {
                d.on_felix_alive(cast).await;
            }
        }
        self.snapshot_event(kvs.len(), rev, true);
        self.post_snapshot_hook(old);
        // `etcdv3.watch_subtree`: etcd3gw's `Watcher` waits for etcd's answer with no timeout
        // (see `sim::etcd::Client::watch`): a creation etcd's crashed host never answers hangs
        // this greenlet for ever, before its canceller exists (etcdutils.py lines 216-221, the
        // canceller spawned at line 334). A failed one is caught by `except Exception` (line 274).
        let created = if d.sw.watch_create_timeout {
            d.etcd.watch_timed(&d.prefix, true, rev + 1).await
        } else {
            d.etcd.watch(&d.prefix, true, rev + 1).await
        };
        let Ok(mut watch) = created else {
            return Ok(SessionEnd::Restart);
        };
        let session = Rc::new(WatchSession {
            last_event_us: Cell::new(d.proc.mono_us()),
            cancelled: Notify::new(),
        });
        let seen = session.cancelled.generation();
        d.proc.spawn(
            d.kind.canceller_task(),
            cancel_watch_if_broken(d.clone(), self.clone(), session.clone()),
        );
        loop {
            let next = std::pin::pin!(watch.next());
            let cancelled = std::pin::pin!(session.cancelled.changed_since(seen));
            let msg = match select(next, cancelled).await {
                Either::Left((msg, _)) => msg,
                Either::Right(_) => return Ok(SessionEnd::Restart),
            };
            // etcd3gw swallows a cancellation for compaction: nothing reaches the iterator.
            let WatchMsg::Events(events) = msg else {
                continue;
            };
            d.hub.io_ready(&d.proc).await;
            for e in events {
                session.last_event_us.set(d.proc.mono_us());
                if self.stopped.get() {
                    return Err(GreenletEnd::Stopped);
                }
                if let Some(cast) = self.dispatch(e.kind, &e.kv)? {
                    d.on_felix_alive(cast).await;
                }
            }
        }
    }

    fn snapshot_event(&self, keys: usize, rev: i64, done: bool) {
        self.driver.proc.emit(CalicoEvent::CalicoSnapshot {
            worker: self.driver.kind.name().into(),
            keys: keys as u32,
            rev,
            done,
            watcher: self.id,
        });
    }

    fn pre_snapshot_hook(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.processing_snapshot
            .set(!self.driver.sw.mutant_snapshot_flag_unset);
        std::mem::take(&mut *self.endpoints_by_host.borrow_mut())
    }

    fn post_snapshot_hook(&self, old: BTreeMap<String, BTreeSet<String>>) {
        if let Some(ports) = &self.driver.ports {
            for (host, eps) in old {
                let gone: Vec<String> = {
                    let now = self.endpoints_by_host.borrow();
                    let empty = BTreeSet::new();
                    let current = now.get(&host).unwrap_or(&empty);
                    eps.difference(current).cloned().collect()
                };
                for ep in gone {
                    self.driver.master_only("queue-port-status", true);
                    ports.on_changed((host.clone(), ep), None, Priority::Low);
                }
            }
        }
        self.processing_snapshot.set(false);
    }

    /// `PathDispatcher.handle_event`: the handler the key matches, if any, and the cast it sends
    /// (awaited by the caller, on this greenlet). Err: it raised.
    fn dispatch(&self, kind: EventKind, kv: &KeyValue) -> Result<Option<Cast>, GreenletEnd> {
        let rest = kv.key.strip_prefix(&self.driver.prefix).unwrap_or("");
        let parts: Vec<&str> = rest.split('/').collect();
        match (self.driver.kind, parts.as_slice(), kind) {
            (Kind::Agent, [host, "status"], EventKind::Put) => {
                self.on_status_set(host, &kv.value, kv.mod_revision)
            }
            (Kind::Endpoint, [host, "workload", _, _, "endpoint", ep], _) => {
                let status = match kind {
                    EventKind::Put => self.report_status(host, ep, &kv.value),
                    EventKind::Delete => self.forget_endpoint(host, ep),
                };
                let priority = if self.processing_snapshot.get() {
                    Priority::Low
                } else {
                    Priority::High
                };
                self.driver
                    .master_only("queue-port-status", self.processing_snapshot.get());
                let ports = self.driver.ports.as_ref().expect("endpoint worker");
                let key: PortKey = (host.to_string(), ep.to_string());
                ports.on_changed(key, status.as_deref(), priority);
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// `_report_status`: the endpoint's status (None: bad JSON), remembering the endpoint.
    fn report_status(&self, host: &str, ep: &str, value: &str) -> Option<String> {
        match serde_json::from_str::<serde_json::Value>(value) {
            Ok(v) => {
                self.endpoints_by_host
                    .borrow_mut()
                    .entry(host.to_string())
                    .or_default()
                    .insert(ep.to_string());
                v["status"].as_str().map(str::to_string)
            }
            Err(_) => {
                self.forget_endpoint(host, ep);
                None
            }
        }
    }

    fn forget_endpoint(&self, host: &str, ep: &str) -> Option<String> {
        let mut by_host = self.endpoints_by_host.borrow_mut();
        if let Some(eps) = by_host.get_mut(host) {
            eps.remove(ep);
            if eps.is_empty() {
                by_host.remove(host);
            }
        }
        None
    }

    /// `_on_status_set`: the stale check, then `on_felix_alive` for a new mod_revision (the cast
    /// to send). The handler records the revision after the cast returns; only this greenlet
    /// reads it, so recording it first changes nothing.
    fn on_status_set(
        &self,
        host: &str,
        value: &str,
        rev: i64,
    ) -> Result<Option<Cast>, GreenletEnd> {
        let Some(report) = AgentReport::parse(value) else {
            return Ok(None); // "Bad JSON data": logged
        };
        self.stale_check(host, report.time.as_deref())?;
        let seen = self.felix_live_rev.borrow().get(host).copied();
        if seen == Some(rev) || (seen.is_some() && self.driver.sw.mutant_agent_dedup_by_host) {
            return Ok(None);
        }
        let d = &self.driver;
        d.master_only("report-agent-alive", self.processing_snapshot.get());
        d.proc.emit(CalicoEvent::CalicoAgentForward {
            host: host.to_string(),
            rev,
            in_snapshot: self.processing_snapshot.get(),
            time: report.time.clone().unwrap_or_default(),
            watcher: self.id,
        });
        self.felix_live_rev
            .borrow_mut()
            .insert(host.to_string(), rev);
        Ok(Some(Cast {
            host: host.to_string(),
            first_update: report.first_update,
        }))
    }

    /// `_check_for_stale_status`, recorded as events. Err: it raised (`calico-stale-warn-naive-crash`).
    fn stale_check(&self, host: &str, time: Option<&str>) -> Result<(), GreenletEnd> {
        let p = &self.driver.proc;
        let verdict = check(
            time,
            sim::clock::EPOCH_UNIX_US + p.wall_us(),
            p.mono_us(),
            self.processing_snapshot.get(),
            &mut self.limiter.borrow_mut(),
            &self.driver.sw,
        );
        let host = host.to_string();
        match verdict {
            Stale::Raised(error) => {
                p.emit(CalicoEvent::CalicoTaskCrash {
                    pid: p.pid(),
                    task: self.driver.kind.watcher_task().into(),
                    error: error.clone(),
                    watcher: self.id,
                });
                return Err(GreenletEnd::Raised(error));
            }
            Stale::Unparsable => p.emit(CalicoEvent::CalicoUnparsableTime {
                host,
                time: time.unwrap_or_default().to_string(),
            }),
            Stale::Stale {
                lag_us,
                warned: true,
            } => p.emit(CalicoEvent::CalicoStaleWarning {
                host,
                lag_ms: lag_us / 1000,
                in_snapshot: self.processing_snapshot.get(),
                watcher: self.id,
            }),
            Stale::Stale {
                lag_us,
                warned: false,
            } => p.emit(CalicoEvent::CalicoStaleSuppressed {
                host,
                lag_ms: lag_us / 1000,
            }),
            Stale::Skipped | Stale::Fresh => {}
        }
        Ok(())
    }
}

/// An etcd error that `EtcdWatcher.start` does not catch, as the greenlet's end; a connection
/// failure (`ConnectionFailedError`, here `Unavailable`) is caught: retry after 5 s.
fn uncaught(e: EtcdError) -> Result<SessionEnd, GreenletEnd> {
    match e {
        EtcdError::Unavailable => Ok(SessionEnd::Retry),
        EtcdError::Timeout => Err(GreenletEnd::Raised("ConnectionTimeoutError".into())),
        other => Err(GreenletEnd::Raised(format!("{other:?}"))),
    }
}

/// What one watch's canceller shares with the event loop.
struct WatchSession {
    /// `last_event_time` on the monotonic clock.
    last_event_us: Cell<u64>,
    /// `cancel()`: the event loop ends after the events already delivered.
    cancelled: Notify,
}

/// `_cancel_watch_if_broken`.
async fn cancel_watch_if_broken(d: Rc<Driver>, watcher: Rc<EtcdWatcher>, s: Rc<WatchSession>) {
    let round_trip_key = format!("{}round-trip-check", d.prefix);
    while !watcher.stopped.get() {
        let now = d.proc.mono_us();
        if now > s.last_event_us.get() + WATCH_TIMEOUT.as_micros() as u64 {
            break;
        }
        let written = if d.sw.mutant_no_round_trip {
            Ok(0)
        } else {
            d.etcd.put(&round_trip_key, &now.to_string(), 0).await
        };
        match written {
            Ok(_) | Err(EtcdError::Unavailable) => {}
            Err(_) if d.sw.canceller_catches_all => {}
            Err(e) => {
                // Only ConnectionFailedError is caught: the canceller dies, the watch stays.
                d.proc.emit(CalicoEvent::CalicoWatcherRaised {
                    pid: d.proc.pid(),
                    task: d.kind.canceller_task().into(),
                    error: format!("{e:?}"),
                    watcher: watcher.id,
                });
                return;
            }
        }
        d.hub.sleep(&d.proc, ROUND_TRIP_INTERVAL).await;
    }
    s.cancelled.notify();
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
        // the JSON tree, with the same answer.
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
        }
    }
}
