//! A simulated Kubernetes API server, on its own node.
//!
//! Objects are `(kind, name)` with a `spec` and a `status` (JSON, or a typed value kept as its
//! writer built it: [`Body`]) and a `resourceVersion` taken from one server-wide counter. Writes
//! are compare-and-swap on `resourceVersion`: a write based on a stale version is rejected with
//! `Conflict` and must be retried from a fresh read. `spec` and `status` are written separately
//! (the status subresource). Watches (informers) first replay every object
//! of the kind, then stream each change; they travel over the simulated network, so they lag and a
//! partition cuts them. The service can be unavailable, slow, or ambiguous like any service.

mod api;
mod client;
mod lifecycle;
mod object;
mod store;

pub use api::{KubeError, Request, Response, WatchEvent};
pub use client::{Informer, KubeClient};
pub use object::{Body, Object, Part};

use crate::event::{Event, KubeObject, NodeIx, Text};
use crate::net::{Call, Endpoint};
use crate::world::{Host, Proc, World};
use api::Reply;
use futures::StreamExt;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use store::{Store, Watcher, Watchers};

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
    /// Kinds whose objects the write events carry.
    recorded: RefCell<BTreeSet<Text>>,
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
            recorded: RefCell::default(),
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

    /// Makes every [`Event::KubeWrite`] of objects of `kind` carry the object as the write left
    /// it (`object`), so that a monitor reads it as ground truth from the event stream: a Lease's
    /// holder, say (`kube.record_objects(sim::leaderelection::LEASE_KIND)`). Off by default: the
    /// object's JSON is made and hashed into the trace on every write of the kind.
    pub fn record_objects(&self, kind: &str) {
        self.0.recorded.borrow_mut().insert(kind.into());
    }

    /// The write event of `obj` (`part`: `create`, `spec`, `status`), with the object if its kind
    /// is recorded.
    fn write_event(&self, obj: &Object, part: &str, client: Text) -> Event {
        let object = self.0.recorded.borrow().contains(&obj.kind).then(|| {
            Arc::new(KubeObject {
                spec: obj.spec.json().clone(),
                status: obj.status.json().clone(),
            })
        });
        Event::KubeWrite {
            kind: obj.kind.clone(),
            name: obj.name.clone(),
            rv: obj.rv,
            part: part.into(),
            client,
            object,
        }
    }

    fn bump(&self) -> u64 {
        let mut n = self.0.next_rv.borrow_mut();
        let rv = *n;
        *n += 1;
        rv
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
                p.emit(self.write_event(&obj, "create", caller.into()));
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
                p.emit(self.write_event(&obj, part, caller.into()));
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
                    object: None,
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
