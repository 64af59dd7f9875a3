//! A simulated Kubernetes API server, on its own node.
//!
//! Objects are `(kind, name)` with a `spec` and a `status` (JSON, or a typed value kept as its
//! writer built it: [`Body`]) and a `resourceVersion` taken from one server-wide counter. Writes
//! are compare-and-swap on `resourceVersion`: a write based on a stale version is rejected with
//! `Conflict` and must be retried from a fresh read. `spec` and `status` are written separately
//! (the status subresource). Watches (informers) first replay every object
//! of the kind, then stream each change; they travel over the simulated network, so they lag and a
//! partition cuts them. The service can be unavailable, slow, or ambiguous like any service.

use crate::event::{Event, NodeIx, Text};
use crate::net::{stream, Call, Endpoint, StreamRx, StreamTx};
use crate::world::{Host, Proc, World};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

/// An API object. `spec` and `status` are shared between versions: a write of one part keeps
/// the other (`Rc::ptr_eq` tells a reader that a part did not change).
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The object's kind (`Lease`, `Node`, `Endpoints`, ...).
    pub kind: Text,
    /// Its name, unique within the kind.
    pub name: Text,
    /// `metadata.resourceVersion`.
    pub rv: u64,
    /// The desired state, written by [`Part::Spec`] updates.
    pub spec: Rc<Body>,
    /// The observed state, written by [`Part::Status`] updates (the status subresource).
    pub status: Rc<Body>,
}

/// One part of an object (`spec` or `status`): JSON, or a typed value as its writer built it.
///
/// A typed part is the value a client serialized into its request, kept unserialized: readers
/// that know the type take it as it is ([`Body::typed`]), and its JSON is made only if someone
/// reads the part as JSON (through `Deref`, once). The stored object is the same either way (the
/// JSON is a pure function of the value), so this changes the cost of a write and a read, never
/// what a reader sees.
pub struct Body {
    json: std::cell::OnceCell<Value>,
    /// A typed part: the value, and how to make its JSON (the writer's `Serialize`).
    typed: Option<(Rc<dyn std::any::Any>, ToJson)>,
}

/// Makes the JSON of a typed part's value.
type ToJson = fn(&dyn std::any::Any) -> Value;

impl Body {
    /// A part holding `value`, serialized only when read as JSON.
    pub fn of<T: Serialize + 'static>(value: Rc<T>) -> Body {
        fn to_json<T: Serialize + 'static>(v: &dyn std::any::Any) -> Value {
            let v = v
                .downcast_ref::<T>()
                .expect("a body's value has its own type");
            serde_json::to_value(v).expect("a typed body serializes")
        }
        Body {
            json: std::cell::OnceCell::new(),
            typed: Some((value, to_json::<T>)),
        }
    }

    /// The typed value, if the part was written as a `T` (a part written as JSON gives `None`:
    /// parse [`Body::json`] instead).
    pub fn typed<T: 'static>(&self) -> Option<Rc<T>> {
        self.typed.as_ref()?.0.clone().downcast::<T>().ok()
    }

    /// The part as JSON.
    pub fn json(&self) -> &Value {
        // A JSON part is created with its JSON set; only a typed part reaches the closure.
        self.json.get_or_init(|| match &self.typed {
            Some((v, to_json)) => to_json(&**v),
            None => Value::Null,
        })
    }
}

impl From<Value> for Body {
    fn from(v: Value) -> Body {
        Body {
            json: std::cell::OnceCell::from(v),
            typed: None,
        }
    }
}

impl std::ops::Deref for Body {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.json()
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.json() == other.json()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json().fmt(f)
    }
}

/// Which part of an object a write replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The object's `spec`.
    Spec,
    /// The object's `status` (the status subresource).
    Status,
}

/// A request to the API server (kinds and names are [`Text`]: most fit inline, so a request
/// and the write event it makes allocate no strings).
pub enum Request {
    /// Reads one object ([`KubeError::NotFound`] if it does not exist).
    Get {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
    },
    /// Reads every object of a kind.
    List {
        /// The kind listed.
        kind: Text,
    },
    /// Creates an object ([`KubeError::AlreadyExists`] if it exists).
    Create {
        /// The new object's kind.
        kind: Text,
        /// The new object's name.
        name: Text,
        /// Its initial spec.
        spec: Body,
        /// Its initial status.
        status: Body,
    },
    /// Replaces one part of an object, if it is still at resourceVersion `rv`
    /// ([`KubeError::Conflict`] otherwise).
    Update {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
        /// The resourceVersion the writer read (compare-and-swap).
        rv: u64,
        /// Which part is replaced (the other is kept).
        part: Part,
        /// The part's new value.
        value: Body,
    },
    /// Deletes an object, whatever its resourceVersion.
    Delete {
        /// The object's kind.
        kind: Text,
        /// The object's name.
        name: Text,
    },
    /// An informer on a kind; with `name`, only that object (the field selector
    /// `metadata.name=NAME`).
    Watch {
        /// The kind watched.
        kind: Text,
        /// Only this object, if set.
        name: Option<Text>,
        /// Where the server sends the current objects, then every change.
        tx: StreamTx<WatchEvent>,
    },
}

/// What an informer receives.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// The object exists in this version (replayed at the start, or changed). Shared: every
    /// informer of the kind gets the same copy.
    Upsert(Rc<Object>),
    /// The object was deleted.
    Deleted {
        /// The deleted object's kind.
        kind: Text,
        /// The deleted object's name.
        name: Text,
    },
}

/// API errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeError {
    /// The write was based on a stale resourceVersion.
    Conflict,
    /// No object of that kind and name exists.
    NotFound,
    /// A create named an object that already exists.
    AlreadyExists,
    /// The server refused the request (not applied).
    Unavailable,
    /// No answer in time; it may have been applied.
    Timeout,
}

type Reply = Result<Response, KubeError>;

/// A successful response.
#[derive(Clone, Debug)]
pub enum Response {
    /// The stored version itself (shared, as the store's objects are immutable).
    Object(Rc<Object>),
    /// Every object of the listed kind (shared, like [`Response::Object`]).
    Objects(Vec<Rc<Object>>),
    /// A delete was applied.
    Done,
    /// A watch is open (its events arrive on its stream): the names of the objects it replays
    /// first, i.e. the list it started from.
    Watching(Vec<Text>),
}

struct Shared {
    node: NodeIx,
    /// The store: objects are immutable once written (a write stores a new version).
    objects: RefCell<Store>,
    next_rv: RefCell<u64>,
    endpoint: Endpoint<Request, Reply>,
    /// Open informers of the current server life.
    watchers: Watchers,
    /// Grace period of the node lifecycle controller, when it runs.
    node_grace: std::cell::Cell<Option<Duration>>,
}

/// The API server (cheap to clone).
#[derive(Clone)]
pub struct Kube(Rc<Shared>);

/// Client request timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client waits for the ack of an HTTP/2 health ping before it closes the connection
/// (client-go's transport: `PingTimeout` 15 s, the ping sent after `ReadIdleTimeout` 30 s without
/// a frame, which is the informers' `idle`).
pub const PING_TIMEOUT: Duration = Duration::from_secs(15);

impl Kube {
    /// Installs the API server as the services of `node`. Objects are durable (etcd-backed).
    pub fn install(world: &World, node: NodeIx) -> Kube {
        let k = Kube(Rc::new(Shared {
            node,
            objects: RefCell::default(),
            next_rv: RefCell::new(1),
            endpoint: Endpoint::new(node),
            watchers: Watchers::default(),
            node_grace: std::cell::Cell::new(None),
        }));
        let k2 = k.clone();
        world.set_services(node, Rc::new(move |host: &Host| k2.start(host)));
        k
    }

    /// The node it runs on.
    pub fn node(&self) -> NodeIx {
        self.0.node
    }

    /// Creates an object directly (for a scenario's initial state, before anything runs).
    pub fn seed_object(&self, kind: &str, name: &str, spec: Value, status: Value) {
        let rv = self.bump();
        self.0.objects.borrow_mut().insert(Rc::new(Object {
            kind: kind.into(),
            name: name.into(),
            rv,
            spec: Rc::new(spec.into()),
            status: Rc::new(status.into()),
        }));
    }

    /// Reads an object directly (ground truth for tests and monitors' setup).
    pub fn peek(&self, kind: &str, name: &str) -> Option<Object> {
        self.0
            .objects
            .borrow()
            .get(kind, name)
            .map(|o| Object::clone(o))
    }

    /// A client for a process.
    pub fn client(&self, proc: &Proc) -> KubeClient {
        KubeClient {
            endpoint: self.0.endpoint.clone(),
            proc: proc.clone(),
        }
    }

    fn bump(&self) -> u64 {
        let mut n = self.0.next_rv.borrow_mut();
        let rv = *n;
        *n += 1;
        rv
    }

    /// Runs Kubernetes' node lifecycle controller next to the API server (kube-controller-manager,
    /// `node-monitor-period` 5 s): a node whose `Lease` (renewed by its kubelet, see
    /// [`KubeClient::run_node_heartbeat`]) has not moved forward for `grace` (`node-monitor-grace-period`,
    /// 40 s by default) gets `status.ready = false`, and the `Endpoints` objects drop it from
    /// `status.ready` (the endpoints controller's reaction to its pods turning NotReady); a renewal
    /// makes it ready again. Like upstream, a renewal counts only if its `renewTime` (the kubelet's
    /// wall clock) is after the last one seen, and the grace is measured on the controller's own
    /// clock from the moment it observed the last renewal.
    ///
    /// Object shapes: `Node` status `{"ready": bool}`; `Lease` spec `{"renew_us": i64}`;
    /// `Endpoints` spec `{"nodes": [node...]}` and status `{"ready": [node...]}`.
    pub fn enable_node_lifecycle(&self, grace: Duration) {
        self.0.node_grace.set(Some(grace));
    }

    /// The next version of `current` with `part` replaced by `value` (the other part copied).
    fn new_version(&self, current: &Object, part: Part, value: Body) -> Rc<Object> {
        let (spec, status) = match part {
            Part::Spec => (Rc::new(value), current.status.clone()),
            Part::Status => (current.spec.clone(), Rc::new(value)),
        };
        Rc::new(Object {
            kind: current.kind.clone(),
            name: current.name.clone(),
            rv: self.bump(),
            spec,
            status,
        })
    }

    /// Replaces an object's status from inside the control plane (no network hop) and tells the
    /// informers, as a write through the server would.
    fn write_status(&self, p: &Proc, kind: &str, name: &str, status: Value) {
        let Some(current) = self.0.objects.borrow().get(kind, name).cloned() else {
            return;
        };
        let obj = self.new_version(&current, Part::Status, status.into());
        self.0.objects.borrow_mut().insert(obj.clone());
        p.emit(Event::KubeWrite {
            kind: kind.into(),
            name: name.into(),
            rv: obj.rv,
            part: "status".into(),
            client: (*p.ident()).into(),
        });
        self.publish(WatchEvent::Upsert(obj));
    }

    async fn node_lifecycle(&self, p: &Proc, grace: Duration) {
        // node -> (last renewTime seen, controller's monotonic time when it was seen).
        let mut seen: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        loop {
            p.sleep(Duration::from_secs(5)).await;
            if p.service_faults().unavailable {
                continue;
            }
            let now = p.mono_us();
            let leases: Vec<(String, i64)> = self
                .0
                .objects
                .borrow()
                .of_kind("Lease")
                // A Lease never renewed has no renewTime: any renewal is newer.
                .map(|o| {
                    let renew = o.spec["renew_us"].as_i64().unwrap_or(i64::MIN);
                    (o.name.to_string(), renew)
                })
                .collect();
            for (node, renew) in leases {
                let e = seen.entry(node.clone()).or_insert((renew, now));
                if renew > e.0 {
                    *e = (renew, now);
                }
                let ready = now.saturating_sub(e.1) <= grace.as_micros() as u64;
                if ready != self.node_ready(&node) {
                    self.set_node_ready(p, &node, ready);
                }
            }
        }
    }

    /// Whether a Node object exists and is Ready (read in place, not copied).
    fn node_ready(&self, node: &str) -> bool {
        self.0
            .objects
            .borrow()
            .get("Node", node)
            .is_some_and(|o| o.status["ready"].as_bool().unwrap_or(true))
    }

    fn set_node_ready(&self, p: &Proc, node: &str, ready: bool) {
        let Some(obj) = self.peek("Node", node) else {
            return;
        };
        let mut status = Value::clone(&obj.status);
        status["ready"] = Value::Bool(ready);
        self.write_status(p, "Node", node, status);
        p.emit(Event::KubeNodeReady {
            node: node.into(),
            ready,
        });
        let endpoints: Vec<Rc<Object>> = self
            .0
            .objects
            .borrow()
            .of_kind("Endpoints")
            .cloned()
            .collect();
        for ep in endpoints {
            let nodes: Vec<&str> = ep.spec["nodes"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            if !nodes.contains(&node) {
                continue;
            }
            let ready: Vec<&str> = nodes.into_iter().filter(|n| self.node_ready(n)).collect();
            self.write_status(
                p,
                "Endpoints",
                &ep.name,
                serde_json::json!({ "ready": ready }),
            );
        }
    }

    fn start(&self, host: &Host) {
        if let Some(grace) = self.0.node_grace.get() {
            let cm = host.spawn_process("kube-controller-manager");
            let (k, p) = (self.clone(), cm.clone());
            cm.spawn("node-lifecycle", async move {
                k.node_lifecycle(&p, grace).await
            });
        }
        let proc = host.spawn_process("kube-apiserver");
        let mut inbox = self.0.endpoint.open();
        self.0.watchers.borrow_mut().clear();
        let (k, p) = (self.clone(), proc.clone());
        let mut shell = crate::net::FaultShell::new(host.world(), "kube-faults");
        proc.spawn("server", async move {
            while let Some(Call {
                caller, req, reply, ..
            }) = inbox.next().await
            {
                let Some(ambiguous) = shell.admit(&p).await else {
                    reply.send(Err(KubeError::Unavailable));
                    continue;
                };
                let resp = k.handle(&p, &caller, req);
                if ambiguous {
                    reply.lose();
                } else {
                    reply.send(resp);
                }
            }
        });
    }

    fn handle(&self, p: &Proc, caller: &str, req: Request) -> Reply {
        match req {
            Request::Get { kind, name } => self
                .0
                .objects
                .borrow()
                .get(&kind, &name)
                .map(|o| Response::Object(o.clone()))
                .ok_or(KubeError::NotFound),
            Request::List { kind } => Ok(Response::Objects(
                self.0.objects.borrow().of_kind(&kind).cloned().collect(),
            )),
            Request::Create {
                kind,
                name,
                spec,
                status,
            } => {
                if self.0.objects.borrow().get(&kind, &name).is_some() {
                    return Err(KubeError::AlreadyExists);
                }
                let obj = Rc::new(Object {
                    kind: kind.clone(),
                    name: name.clone(),
                    rv: self.bump(),
                    spec: Rc::new(spec),
                    status: Rc::new(status),
                });
                self.0.objects.borrow_mut().insert(obj.clone());
                p.emit(Event::KubeWrite {
                    kind,
                    name,
                    rv: obj.rv,
                    part: "create".into(),
                    client: caller.into(),
                });
                self.publish(WatchEvent::Upsert(obj.clone()));
                Ok(Response::Object(obj))
            }
            Request::Update {
                kind,
                name,
                rv,
                part,
                value,
            } => {
                let current = self
                    .0
                    .objects
                    .borrow()
                    .get(&kind, &name)
                    .cloned()
                    .ok_or(KubeError::NotFound)?;
                if current.rv != rv {
                    p.emit(Event::KubeConflict {
                        kind,
                        name,
                        expected_rv: rv,
                        actual_rv: current.rv,
                        client: caller.into(),
                    });
                    return Err(KubeError::Conflict);
                }
                let obj = self.new_version(&current, part, value);
                self.0.objects.borrow_mut().insert(obj.clone());
                let part = if part == Part::Spec { "spec" } else { "status" };
                p.emit(Event::KubeWrite {
                    kind,
                    name,
                    rv: obj.rv,
                    part: part.into(),
                    client: caller.into(),
                });
                self.publish(WatchEvent::Upsert(obj.clone()));
                Ok(Response::Object(obj))
            }
            Request::Delete { kind, name } => {
                self.0
                    .objects
                    .borrow_mut()
                    .remove(&kind, &name)
                    .ok_or(KubeError::NotFound)?;
                self.bump();
                p.emit(Event::KubeWrite {
                    kind: kind.clone(),
                    name: name.clone(),
                    rv: 0,
                    part: "delete".into(),
                    client: caller.into(),
                });
                self.publish(WatchEvent::Deleted { kind, name });
                Ok(Response::Done)
            }
            Request::Watch { kind, name, tx } => {
                let mut listed = Vec::new();
                for o in self.0.objects.borrow().of_kind(&kind) {
                    if name.as_ref().is_none_or(|n| *n == o.name) {
                        tx.send(WatchEvent::Upsert(o.clone()));
                        listed.push(o.name.clone());
                    }
                }
                self.0
                    .watchers
                    .borrow_mut()
                    .push(Watcher { kind, name, tx });
                Ok(Response::Watching(listed))
            }
        }
    }

    fn publish(&self, ev: WatchEvent) {
        let (kind, name) = match &ev {
            WatchEvent::Upsert(o) => (&o.kind, &o.name),
            WatchEvent::Deleted { kind, name } => (kind, name),
        };
        let mut w = self.0.watchers.borrow_mut();
        w.retain(|w| !w.tx.is_closed());
        for w in w.iter() {
            if w.kind == *kind && w.name.as_ref().is_none_or(|n| n == name) {
                w.tx.send(ev.clone());
            }
        }
    }
}

/// An open informer: its kind, its name selector, its stream.
struct Watcher {
    kind: Text,
    name: Option<Text>,
    tx: StreamTx<WatchEvent>,
}

/// Open informers.
type Watchers = RefCell<Vec<Watcher>>;

/// Objects by kind, then name (looked up by `&str`; iterated in (kind, name) order).
#[derive(Default)]
struct Store(BTreeMap<Text, BTreeMap<Text, Rc<Object>>>);

impl Store {
    fn get(&self, kind: &str, name: &str) -> Option<&Rc<Object>> {
        self.0.get(kind)?.get(name)
    }

    fn insert(&mut self, obj: Rc<Object>) {
        let names = match self.0.get_mut(obj.kind.as_str()) {
            Some(n) => n,
            None => self.0.entry(obj.kind.clone()).or_default(),
        };
        match names.get_mut(obj.name.as_str()) {
            Some(slot) => *slot = obj,
            None => {
                names.insert(obj.name.clone(), obj);
            }
        }
    }

    fn remove(&mut self, kind: &str, name: &str) -> Option<Rc<Object>> {
        self.0.get_mut(kind)?.remove(name)
    }

    /// The objects of one kind, by name.
    fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Rc<Object>> {
        self.0.get(kind).into_iter().flat_map(|n| n.values())
    }
}

/// A process's API client.
#[derive(Clone)]
pub struct KubeClient {
    endpoint: Endpoint<Request, Reply>,
    proc: Proc,
}

/// An informer's stream.
pub struct Informer {
    rx: StreamRx<WatchEvent>,
    /// The names of the objects the watch replays first (the list it started from).
    listed: Vec<Text>,
}

impl Informer {
    /// The next event; never returns once the stream broke (bound it with a timeout).
    pub async fn next(&mut self) -> WatchEvent {
        self.rx.next().await
    }
}

impl KubeClient {
    async fn call(&self, req: Request) -> Reply {
        self.proc
            .call(&self.endpoint, req, REQUEST_TIMEOUT)
            .await
            .unwrap_or(Err(KubeError::Timeout))
    }

    /// Reads an object.
    pub async fn get(&self, kind: &str, name: &str) -> Result<Rc<Object>, KubeError> {
        match self
            .call(Request::Get {
                kind: kind.into(),
                name: name.into(),
            })
            .await?
        {
            Response::Object(o) => Ok(o),
            r => unreachable!("get answered {r:?}"),
        }
    }

    /// Lists a kind.
    pub async fn list(&self, kind: &str) -> Result<Vec<Rc<Object>>, KubeError> {
        match self.call(Request::List { kind: kind.into() }).await? {
            Response::Objects(o) => Ok(o),
            r => unreachable!("list answered {r:?}"),
        }
    }

    /// Creates an object.
    pub async fn create(
        &self,
        kind: &str,
        name: &str,
        spec: impl Into<Body>,
        status: impl Into<Body>,
    ) -> Result<Rc<Object>, KubeError> {
        match self
            .call(Request::Create {
                kind: kind.into(),
                name: name.into(),
                spec: spec.into(),
                status: status.into(),
            })
            .await?
        {
            Response::Object(o) => Ok(o),
            r => unreachable!("create answered {r:?}"),
        }
    }

    /// Replaces the spec or status of the object at version `rv` (compare-and-swap).
    pub async fn update(
        &self,
        kind: &str,
        name: &str,
        rv: u64,
        part: Part,
        value: impl Into<Body>,
    ) -> Result<Rc<Object>, KubeError> {
        match self
            .call(Request::Update {
                kind: kind.into(),
                name: name.into(),
                rv,
                part,
                value: value.into(),
            })
            .await?
        {
            Response::Object(o) => Ok(o),
            r => unreachable!("update answered {r:?}"),
        }
    }

    /// Deletes an object.
    pub async fn delete(&self, kind: &str, name: &str) -> Result<(), KubeError> {
        self.call(Request::Delete {
            kind: kind.into(),
            name: name.into(),
        })
        .await
        .map(|_| ())
    }

    /// Runs an informer on a kind (with `name`: on that one object) for ever, like client-go's
    /// reflector: watch (every current object, then each change) and hand each event to
    /// `on_event`; when the watch cannot be opened retry after 5 s. A healthy watch may stay
    /// silent for ever: after `idle` without an event (the transport's `ReadIdleTimeout`) the
    /// client pings the connection (an HTTP/2 health ping, see `ping` below) and keeps watching if
    /// the ack comes back; only a dead connection makes it watch again (which replays every current
    /// object). An object the informer knew that the new watch does not replay was deleted
    /// meanwhile: it is handed a deletion first, as client-go's `DeltaFIFO.Replace` queues one for
    /// each known object missing from a re-list (`DeletedFinalStateUnknown`).
    pub async fn run_informer(
        &self,
        kind: &str,
        name: Option<&str>,
        idle: Duration,
        mut on_event: impl FnMut(WatchEvent),
    ) {
        let mut known: BTreeSet<Text> = BTreeSet::new();
        loop {
            let Ok(mut inf) = self.watch(kind, name).await else {
                self.proc.sleep(Duration::from_secs(5)).await;
                continue;
            };
            let listed: BTreeSet<Text> = std::mem::take(&mut inf.listed).into_iter().collect();
            for gone in known.difference(&listed) {
                on_event(WatchEvent::Deleted {
                    kind: kind.into(),
                    name: gone.clone(),
                });
            }
            known = listed;
            let mut on_event = |ev: WatchEvent| {
                match &ev {
                    WatchEvent::Upsert(o) => {
                        if !known.contains(&o.name) {
                            known.insert(o.name.clone());
                        }
                    }
                    WatchEvent::Deleted { name, .. } => {
                        known.remove(name);
                    }
                }
                on_event(ev)
            };
            // One idle timer per watch, pushed on by every event (no new timer per event).
            let world = self.proc.world();
            let idle_us = idle.as_micros() as u64;
            let mut silent = crate::time::sleep(idle);
            loop {
                let idle_passed = {
                    let next = std::pin::pin!(inf.next());
                    match futures::future::select(next, &mut silent).await {
                        futures::future::Either::Left((ev, _)) => {
                            on_event(ev);
                            false
                        }
                        futures::future::Either::Right(_) => true,
                    }
                };
                if idle_passed && !self.ping(&inf).await {
                    break;
                }
                silent.reset(world.instant_at(world.now_us() + idle_us));
            }
        }
    }

    /// An HTTP/2 health ping on an informer's connection: true when the ack comes back. The
    /// server's transport answers pings whatever its request handlers are doing (refusing, slow),
    /// so the ack needs only the link both ways, the server's node up and running, and the
    /// server still holding this watch (a restarted server has forgotten it; a stream that lost
    /// an event on a cut link is dead). A ping that gets no ack fails after [`PING_TIMEOUT`].
    async fn ping(&self, inf: &Informer) -> bool {
        let world = self.proc.world();
        let (client, server) = (self.proc.node(), self.endpoint.node());
        let start = world.now_us();
        crate::runtime::sleep(world.latency(client, server)).await;
        let mut acked =
            world.reachable(client, server) && world.node_running(server) && !inf.rx.is_dead();
        if acked {
            crate::runtime::sleep(world.latency(server, client)).await;
            acked = world.reachable(server, client);
        }
        if !acked {
            let waited = Duration::from_micros(world.now_us() - start);
            crate::runtime::sleep(PING_TIMEOUT.saturating_sub(waited)).await;
        }
        acked
    }

    /// The kubelet's node heartbeat: renews the node's `Lease` (`renewTime` = this node's wall
    /// clock) every `every` (10 s upstream). Failed renewals are retried at the next beat.
    pub async fn run_node_heartbeat(&self, node: &str, every: Duration) {
        let mut rv = 0;
        loop {
            let spec = serde_json::json!({ "renew_us": self.proc.wall_us() });
            match self.update("Lease", node, rv, Part::Spec, spec).await {
                Ok(o) => rv = o.rv,
                Err(KubeError::Conflict | KubeError::NotFound) => {
                    if let Ok(o) = self.get("Lease", node).await {
                        rv = o.rv;
                        continue;
                    }
                }
                Err(_) => {}
            }
            self.proc.sleep(every).await;
        }
    }

    /// Starts an informer on a kind (with `name`: on that one object, as the field selector
    /// `metadata.name=NAME` does): every current object, then every change.
    pub async fn watch(&self, kind: &str, name: Option<&str>) -> Result<Informer, KubeError> {
        let world = self.proc.world();
        let (tx, rx) = stream(world, self.endpoint.node(), self.proc.node());
        let listed = match self
            .call(Request::Watch {
                kind: kind.into(),
                name: name.map(Text::from),
                tx,
            })
            .await?
        {
            Response::Watching(names) => names,
            r => unreachable!("watch answered {r:?}"),
        };
        Ok(Informer { rx, listed })
    }
}
