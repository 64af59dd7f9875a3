//! The simulated etcd: a [`store::Store`] state machine behind a thin async service that owns
//! faults and timing (the split madsim and TigerBeetle both use), and the [`Client`] models use.
//!
//! The service runs as process `etcd` on its own node, so partitions, pauses and crashes hit it like
//! a real server. The store is durable across crashes (etcd is a replicated store); watches and
//! in-flight requests are not.
//!
//! Two ways etcd goes away differ for its clients (see `sim::net::Endpoint::tcp`):
//! * **a restart of the process** (`systemctl restart`, an upgrade, the OOM killer and systemd's
//!   `Restart=`; the `ServiceRestart` fault, or `ProcessCrash` of `etcd`): the host's kernel closes
//!   every connection at once, so every request etcd held fails at once with a reset
//!   ([`EtcdError::Unavailable`], etcd3gw's `ConnectionFailedError`), and requests sent while
//!   it is down are refused at once. On a terminate signal the model's etcd exits at once (a
//!   SIGTERM'd etcd first closes its client listeners and connections, which its clients see
//!   the same way);
//! * **a crash of its host** (the `Crash` fault): nothing is sent. A request etcd had received is
//!   never answered and its caller waits out its own timeout (for ever without one); a request
//!   sent while the host is down is retransmitted and reset by the rebooted host.
//!
//! On recovery, with `lease_ttl_reset_on_restart` (etcd 3.4 without lease checkpointing, the
//! default), every lease gets its full TTL again plus one election timeout, as etcd's `Promote`
//! does (see [`lessor`] for what etcd 3.4 does and what the model keeps of it).
//!
//! Service faults (see `fault::FaultKind`): unavailable (refused, not applied), ambiguous timeout
//! (the client times out; the request is not applied, applied before the client's timeout fires,
//! or applied after it, see [`Fate`]), slow (extra service time, requests queue), garbled (applied,
//! but the client cannot decode the reply).

pub mod auth;
mod client;
pub mod lessor;
mod session;
pub mod store;
mod wire;

use crate::event::{DeleteCause, Event, NodeIx};
use crate::net::{Call, Endpoint, StreamTx};
use crate::rng;
use crate::sync::Notify;
use crate::world::{Host, Proc, World};
pub use auth::{AuthConfig, Reauth};
pub use client::{Client, Watch};
use futures::StreamExt;
use lessor::{ExpiryChecks, LeaseNow};
use rand::Rng;
pub use session::POOL_SIZE;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
pub use store::{
    CmpOp, Compare, EventKind, KeyValue, Op, OpResult, Store, StoreError, Target, Txn, TxnResponse,
    WatchEvent,
};
pub use wire::{EtcdError, Request, Response};

/// Options of the simulated server.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Reset every lease's remaining TTL to its full TTL plus `election_timeout_ms` when the server
    /// recovers (etcd 3.4's `Promote` without lease checkpointing). Off: leases keep the deadlines
    /// they had before the crash (an idealised checkpointing).
    pub lease_ttl_reset_on_restart: bool,
    /// Minimum lease TTL (s).
    pub min_ttl_s: i64,
    /// The election timeout (ms): the `extend` every lease gets on recovery.
    pub election_timeout_ms: i64,
    /// How often the lessor looks for expired leases (ms); 0 = exactly at each deadline (the
    /// default), [`lessor::ETCD_EXPIRY_CHECK_INTERVAL_MS`] = etcd 3.4's loop. See [`lessor`].
    pub expiry_check_interval_ms: i64,
    /// Authentication with simple tokens (`None`: off, etcd's default). See [`auth`].
    pub auth: Option<AuthConfig>,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            lease_ttl_reset_on_restart: true,
            min_ttl_s: store::DEFAULT_MIN_TTL_S,
            election_timeout_ms: lessor::DEFAULT_ELECTION_TIMEOUT_MS,
            expiry_check_interval_ms: 0,
            auth: None,
        }
    }
}

type Reply = Result<Response, EtcdError>;

/// A request on the wire, with the instant (true time, µs) its client gives up: gRPC sends a
/// call's deadline along (`grpc-timeout`), and the server uses it to hold an ambiguous request
/// until just after its client has timed out ([`Fate::AppliedLate`]). `None`: the client set no
/// timeout. Such a request cannot be ambiguous: TCP delivers its answer however late it is.
struct Envelope {
    req: Request,
    client_deadline_us: Option<u64>,
    /// The session's auth token (the `Authorization` header), if it has one.
    token: Option<u64>,
}

/// A message on a watch stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchMsg {
    /// Changes, in revision order (shared by every watcher they match, not copied for each).
    Events(Vec<Rc<WatchEvent>>),
    /// The watch was cancelled because its start revision was compacted.
    Canceled {
        /// The revision up to which history was compacted.
        compact_revision: i64,
    },
}

struct Watcher {
    key: String,
    prefix: bool,
    tx: StreamTx<WatchMsg>,
}

struct Shared {
    node: NodeIx,
    cfg: EtcdConfig,
    store: RefCell<Store>,
    endpoint: Endpoint<Envelope, Reply>,
    booted: Cell<bool>,
    leases_changed: Notify,
    /// Tokens assigned so far, by every process (a restarted server knows none of them).
    tokens_assigned: Cell<u64>,
}

/// The simulated etcd service (cheap to clone).
#[derive(Clone)]
pub struct Etcd(Rc<Shared>);

/// Default client request timeout (the models' etcd client libraries use bounded HTTP requests).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

impl Etcd {
    /// Installs etcd as the services of `node` (it starts at every boot of that node).
    pub fn install(world: &World, node: NodeIx, cfg: EtcdConfig) -> Etcd {
        let min_ttl = cfg.min_ttl_s;
        let etcd = Etcd(Rc::new(Shared {
            node,
            cfg,
            store: RefCell::new(Store::new(min_ttl)),
            endpoint: Endpoint::tcp(node),
            booted: Cell::new(false),
            leases_changed: Notify::new(),
            tokens_assigned: Cell::new(0),
        }));
        let e = etcd.clone();
        world.set_services(node, Rc::new(move |host: &Host| e.start(host)));
        etcd
    }

    /// The node etcd runs on.
    pub fn node(&self) -> NodeIx {
        self.0.node
    }

    /// Read access to the store (for tests and inspection).
    pub fn with_store<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&self.0.store.borrow())
    }

    /// A client for a process.
    pub fn client(&self, proc: &Proc) -> Client {
        self.client_with_timeout(proc, REQUEST_TIMEOUT)
    }

    /// A client whose every request is bounded by `timeout` (a client library's configured
    /// request timeout, e.g. networking-calico's `etcd_timeout`). With auth on, it has the
    /// credentials and re-authenticates as Go's clientv3 does ([`Client::with_reauth`] changes
    /// that).
    pub fn client_with_timeout(&self, proc: &Proc, timeout: Duration) -> Client {
        Client {
            endpoint: self.0.endpoint.clone(),
            proc: proc.clone(),
            timeout,
            session: session::Session::default(),
            credentials: self.0.cfg.auth.map(|_| auth::Credentials {
                reauth: Reauth::OnAuthError,
                token: Rc::default(),
            }),
        }
    }

    fn start(&self, host: &Host) {
        let world = host.world().clone();
        let proc = host.spawn_process("etcd");
        let now = self.lease_now(&world);
        if self.0.booted.replace(true) {
            self.recover(&proc, now);
        }
        let watchers: Rc<RefCell<Vec<Watcher>>> = Rc::default();
        let inbox = self.0.endpoint.open();
        let server = Server {
            etcd: self.clone(),
            world: world.clone(),
            watchers,
            rng: RefCell::new(rng::rng_for(world.seed(), "etcd-faults")),
            checks: ExpiryChecks {
                phase_ms: now.mono_ms,
                interval_ms: self.0.cfg.expiry_check_interval_ms,
            },
            proc: proc.clone(),
            held: Held::default(),
            tokens: RefCell::default(),
        };
        let server = Rc::new(server);
        let s = server.clone();
        proc.spawn("server", async move { s.serve(inbox).await });
        proc.spawn("lessor", async move { server.lessor().await });
        let p = proc.clone();
        proc.spawn("signals", async move {
            p.terminated().await;
            p.exit(0);
        });
        self.0.leases_changed.notify();
    }

    /// A reboot (the store is durable): the member is leader again at once (the boot instant
    /// stands for the end of etcd's start-up and election), and with `lease_ttl_reset_on_restart`
    /// every lease gets its full TTL plus the election timeout from now, as etcd 3.4's
    /// `Promote(electionTimeout)` does (see [`lessor`] and [`Store::promote`]); without it
    /// every lease keeps its deadline on the wall clock.
    fn recover(&self, proc: &Proc, now: LeaseNow) {
        let cfg = &self.0.cfg;
        let mut store = self.0.store.borrow_mut();
        if cfg.lease_ttl_reset_on_restart {
            store.promote(now, cfg.election_timeout_ms);
        } else {
            store.keep_deadlines_across_restart(now);
        }
        drop(store);
        proc.emit(Event::EtcdRecover {
            lease_ttl_reset: cfg.lease_ttl_reset_on_restart,
        });
    }

    /// The etcd node's clocks as its lessor reads them (`time.Now()`: monotonic and wall).
    fn lease_now(&self, world: &World) -> LeaseNow {
        let node = self.0.node;
        LeaseNow {
            mono_ms: (world.mono_us(node) / 1000) as i64,
            wall_ms: world.wall_us(node).div_euclid(1000),
        }
    }
}

/// What happens to a request hit by an ambiguous timeout (its client times out in every case).
///
/// etcd serves requests concurrently and a request that has entered the raft log is applied
/// whether or not its client is still waiting: it can be applied before the client's timeout
/// fires (only the answer is lost or late), or after it, when the server gets to it (the request
/// reached the server late, or waited in it, was proposed just before its deadline and applied
/// just after). Other requests go on meanwhile, so later ones may be applied first; a request
/// that never answered may take effect at any time after it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Never applied (half of the ambiguous requests).
    Lost,
    /// Applied at once, before the client's timeout fires; the answer is lost (a quarter).
    AppliedInTime,
    /// Held until just after the client's timeout has fired, then applied (a quarter).
    AppliedLate,
}

/// A request held until just after its client gave up.
struct HeldRequest {
    caller: Rc<str>,
    from: NodeIx,
    req: Request,
    token: Option<u64>,
}

/// The requests a server holds ([`Fate::AppliedLate`]), applied by a `late` task started on first
/// use (so runs without ambiguous timeouts have no extra task).
#[derive(Default)]
struct Held {
    /// By (true µs at which to apply, arrival order).
    queue: RefCell<BTreeMap<(u64, u64), HeldRequest>>,
    arrivals: Cell<u64>,
    changed: Notify,
    task_started: Cell<bool>,
}

/// How long after its client's deadline an [`Fate::AppliedLate`] request is applied (µs): just
/// after the client's timeout has fired, and before anything the client sends after its timeout
/// can arrive (the scenarios' one-way latency is at least 200 µs), so a client's own requests
/// keep their order.
const LATE_APPLY_AFTER_DEADLINE_US: u64 = 100;

struct Server {
    etcd: Etcd,
    world: World,
    watchers: Rc<RefCell<Vec<Watcher>>>,
    rng: RefCell<rand_chacha::ChaCha8Rng>,
    /// When this server's lessor looks for expired leases.
    checks: ExpiryChecks,
    /// The etcd process (its tasks die with it).
    proc: Proc,
    held: Held,
    /// The simple tokens this process assigned (see [`auth`]).
    tokens: RefCell<auth::Tokens>,
}

impl Server {
    fn node(&self) -> NodeIx {
        self.etcd.0.node
    }

    fn chance(&self, percent: u32) -> bool {
        percent > 0 && self.rng.borrow_mut().random_range(0..100) < percent
    }

    async fn serve(self: Rc<Self>, mut inbox: crate::net::Requests<Envelope, Reply>) {
        while let Some(call) = inbox.next().await {
            let faults = self.world.service_faults(self.node());
            let Call {
                caller,
                from,
                req:
                    Envelope {
                        req,
                        client_deadline_us,
                        token,
                    },
                reply,
            } = call;
            if faults.unavailable {
                reply.send(Err(EtcdError::Unavailable));
                continue;
            }
            if faults.slow_us > 0 {
                crate::time::sleep(Duration::from_micros(faults.slow_us)).await;
            }
            self.expire_due();
            let deadline = client_deadline_us.filter(|_| self.chance(faults.ambiguous_percent));
            if let Some(deadline) = deadline {
                match self.draw_fate() {
                    Fate::AppliedLate => {
                        let held = HeldRequest {
                            caller,
                            from,
                            req,
                            token,
                        };
                        self.hold(held, deadline + LATE_APPLY_AFTER_DEADLINE_US);
                    }
                    fate => self.apply_ambiguous(fate, &caller, from, req, token),
                }
                reply.lose();
                continue;
            }
            let garbled = self.chance(faults.garbled_percent);
            let resp = self.handle(&caller, from, req, token);
            reply.send(if garbled {
                Err(EtcdError::Garbled)
            } else {
                resp
            });
        }
    }

    /// Half of the ambiguous requests are lost, a quarter applied in time, a quarter late.
    fn draw_fate(&self) -> Fate {
        let mut rng = self.rng.borrow_mut();
        if !rng.random_bool(0.5) {
            Fate::Lost
        } else if rng.random_bool(0.5) {
            Fate::AppliedInTime
        } else {
            Fate::AppliedLate
        }
    }

    /// Applies (or not, if `fate` is [`Fate::Lost`]) a request whose client times out (its answer
    /// is never sent), and records the ambiguity.
    fn apply_ambiguous(
        &self,
        fate: Fate,
        caller: &str,
        from: NodeIx,
        req: Request,
        token: Option<u64>,
    ) {
        let op = req.name().to_string();
        if fate != Fate::Lost {
            let _ = self.handle(caller, from, req, token);
        }
        self.world.emit(
            self.node(),
            Event::EtcdAmbiguous {
                op,
                applied: fate != Fate::Lost,
                client: caller.to_string(),
            },
        );
    }

    /// Holds a request until true time `at_us` (just after its client's deadline); the `late`
    /// task applies it then.
    fn hold(self: &Rc<Self>, req: HeldRequest, at_us: u64) {
        let arrival = self.held.arrivals.get();
        self.held.arrivals.set(arrival + 1);
        self.held.queue.borrow_mut().insert((at_us, arrival), req);
        self.held.changed.notify();
        if !self.held.task_started.replace(true) {
            let s = self.clone();
            self.proc.spawn("late", async move { s.apply_held().await });
        }
    }

    /// Applies each held request at its time, in (time, arrival) order.
    async fn apply_held(&self) {
        loop {
            let seen = self.held.changed.generation();
            let first = self.held.queue.borrow().keys().next().map(|k| k.0);
            match first {
                Some(at) if at <= self.world.now_us() => {
                    let (_, held) = self.held.queue.borrow_mut().pop_first().expect("first");
                    self.expire_due();
                    let h = held;
                    self.apply_ambiguous(Fate::AppliedLate, &h.caller, h.from, h.req, h.token);
                }
                Some(at) => {
                    let sleep = crate::time::sleep_until(self.world.instant_at(at));
                    futures::future::select(sleep, self.held.changed.changed_since(seen)).await;
                }
                None => self.held.changed.changed_since(seen).await,
            }
        }
    }

    fn lease_now(&self) -> LeaseNow {
        self.etcd.lease_now(&self.world)
    }

    fn handle(&self, caller: &str, from: NodeIx, req: Request, token: Option<u64>) -> Reply {
        let req = match self.admit(req, token) {
            Ok(req) => req,
            Err(reply) => return reply,
        };
        let now_ms = self.lease_now();
        let store_err = EtcdError::Store;
        match req {
            Request::Range {
                key,
                prefix,
                revision,
            } => {
                let (kvs, revision) = self
                    .etcd
                    .0
                    .store
                    .borrow()
                    .range(&key, prefix, revision)
                    .map_err(store_err)?;
                Ok(Response::Range { kvs, revision })
            }
            Request::Txn(txn) => self.txn(caller, &txn),
            Request::Grant { ttl_s } => Ok(self.grant(caller, ttl_s, now_ms)),
            Request::KeepAlive { lease } => {
                let ttl_s = self.etcd.0.store.borrow_mut().keep_alive(lease, now_ms);
                // A renewal can move the lease's turn earlier (after a backward step).
                self.etcd.0.leases_changed.notify();
                Ok(Response::KeepAlive { ttl_s })
            }
            Request::Revoke { lease } => self.revoke(caller, lease),
            Request::TimeToLive { lease } => {
                let (ttl_s, granted_ttl_s) = self.etcd.0.store.borrow().time_to_live(lease, now_ms);
                Ok(Response::TimeToLive {
                    ttl_s,
                    granted_ttl_s,
                })
            }
            Request::Compact { revision } => self.compact(caller, revision),
            Request::Authenticate => Ok(self.authenticate()),
            Request::Status => {
                let s = self.etcd.0.store.borrow();
                Ok(Response::Status {
                    revision: s.revision(),
                    compact_revision: s.compact_revision(),
                })
            }
            Request::Watch {
                key,
                prefix,
                start_revision,
                tx,
            } => {
                let _ = from;
                self.watch(key, prefix, start_revision, tx)
            }
        }
    }

    /// Applies a transaction and publishes its changes (deletes caused by `caller`).
    fn txn(&self, caller: &str, txn: &Txn) -> Reply {
        let (resp, events) = self
            .etcd
            .0
            .store
            .borrow_mut()
            .txn(txn)
            .map_err(EtcdError::Store)?;
        self.publish(
            events,
            |_| DeleteCause::Client {
                client: caller.to_string(),
            },
            caller,
        );
        Ok(Response::Txn(resp))
    }

    /// Grants a lease and wakes the lessor (a new deadline).
    fn grant(&self, caller: &str, ttl_s: i64, now_ms: LeaseNow) -> Response {
        let (lease, ttl_s) = self.etcd.0.store.borrow_mut().grant(ttl_s, now_ms);
        self.world.emit(
            self.node(),
            Event::EtcdLeaseGrant {
                lease,
                ttl_s,
                client: caller.to_string(),
            },
        );
        self.etcd.0.leases_changed.notify();
        Response::Grant { lease, ttl_s }
    }

    /// Revokes a lease and publishes the deletes of its keys.
    fn revoke(&self, caller: &str, lease: i64) -> Reply {
        let (revision, events) = self
            .etcd
            .0
            .store
            .borrow_mut()
            .revoke(lease)
            .map_err(EtcdError::Store)?;
        self.publish(
            events,
            |_| DeleteCause::LeaseRevoked {
                lease,
                client: caller.to_string(),
            },
            caller,
        );
        Ok(Response::Revoke { revision })
    }

    /// Compacts history up to `revision`.
    fn compact(&self, caller: &str, revision: i64) -> Reply {
        let r = self
            .etcd
            .0
            .store
            .borrow_mut()
            .compact(revision)
            .map_err(EtcdError::Store)?;
        self.world.emit(
            self.node(),
            Event::EtcdCompact {
                rev: revision,
                client: caller.to_string(),
            },
        );
        Ok(Response::Compact { revision: r })
    }

    /// Opens a watch: sends the changes since `start_revision` (if not 0) at once, or cancels the
    /// watch if that revision was compacted, then registers the watcher for what comes next.
    fn watch(
        &self,
        key: String,
        prefix: bool,
        start_revision: i64,
        tx: StreamTx<WatchMsg>,
    ) -> Reply {
        let past = if start_revision > 0 {
            match self
                .etcd
                .0
                .store
                .borrow()
                .events_since(&key, prefix, start_revision)
            {
                Ok(e) => e,
                Err(StoreError::Compacted { compact_revision }) => {
                    tx.send(WatchMsg::Canceled { compact_revision });
                    return Ok(Response::Watch);
                }
                Err(e) => return Err(EtcdError::Store(e)),
            }
        } else {
            Vec::new()
        };
        if !past.is_empty() {
            tx.send(WatchMsg::Events(past.into_iter().map(Rc::new).collect()));
        }
        self.watchers.borrow_mut().push(Watcher { key, prefix, tx });
        Ok(Response::Watch)
    }

    /// Emits trace events for changes and pushes them to matching watchers.
    fn publish(
        &self,
        events: Vec<WatchEvent>,
        cause: impl Fn(&WatchEvent) -> DeleteCause,
        client: &str,
    ) {
        if events.is_empty() {
            return;
        }
        for e in &events {
            let ev = match e.kind {
                EventKind::Put => Event::EtcdPut {
                    key: e.kv.key.clone(),
                    value: e.kv.value.clone(),
                    rev: e.kv.mod_revision,
                    version: e.kv.version,
                    lease: e.kv.lease,
                    client: client.to_string(),
                },
                EventKind::Delete => Event::EtcdDelete {
                    key: e.kv.key.clone(),
                    rev: e.kv.mod_revision,
                    prev_value: e.prev_value.clone(),
                    cause: cause(e),
                },
            };
            self.world.emit(self.node(), ev);
        }
        let mut watchers = self.watchers.borrow_mut();
        watchers.retain(|w| !w.tx.is_closed());
        let events: Vec<Rc<WatchEvent>> = events.into_iter().map(Rc::new).collect();
        for w in watchers.iter() {
            let mine: Vec<Rc<WatchEvent>> = events
                .iter()
                .filter(|e| store::in_range(&e.kv.key, &w.key, w.prefix))
                .cloned()
                .collect();
            if !mine.is_empty() {
                w.tx.send(WatchMsg::Events(mine));
            }
        }
    }
}

#[cfg(test)]
mod auth_tests;
#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod pool_tests;
#[cfg(test)]
mod tests;
