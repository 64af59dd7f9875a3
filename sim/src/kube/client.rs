//! A process's API client and its informers.

use super::{Body, KubeError, Object, Part, Reply, Request, Response, Text, WatchEvent};
use super::{PING_TIMEOUT, REQUEST_TIMEOUT};
use crate::net::{stream, Endpoint, StreamRx};
use crate::world::Proc;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

/// A process's API client.
#[derive(Clone)]
pub struct KubeClient {
    pub(super) endpoint: Endpoint<Request, Reply>,
    pub(super) proc: Proc,
}

/// An informer's stream.
pub struct Informer {
    pub(super) rx: StreamRx<WatchEvent>,
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
