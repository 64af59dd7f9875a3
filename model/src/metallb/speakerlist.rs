//! MetalLB's `speakerlist` after PR 662, and the speaker process around it.
//!
//! Upstream (metallb/metallb at 7938d3f): `internal/speakerlist/speakerlist.go` `updateSpeakerIPs`
//! (l. 181-200: a failed refresh keeps the old cache), `joinMembers` (l. 225-242), `mlJoin`
//! (l. 258-287), `UsableSpeakers` (l. 303-320) and `memberlistWatchEvents` (l. 339-349: a join or
//! leave forces a resync of every service).
//!
//! * `ip-refresh`: lists the speaker pods' IPs from the API server into a cache, at start and then
//!   every [`IP_REFRESH`] (a separate task so that a slow or down API server never blocks joining);
//!   the first successful list asks for a join.
//! * `join-loop`: every [`JOIN_PERIOD`] (a ticker), and whenever a join is requested, joins the
//!   cached IPs that are NOT current members (joining members is not free). Requests coalesce in a
//!   one-slot channel.
//! * `node-watch`: the informer on Node objects; this speaker's own Node first listed, or its
//!   exclusion label or NetworkUnavailable condition changing, requests a join (`SetNode`; a
//!   Ready flip does not, as upstream's Node predicate filters it out).
//! * `shutdown`: on SIGTERM, stop evaluating (the controllers stopped), leave the cluster
//!   ([`LEAVE_TIMEOUT`]) while still answering ARP for what is announced, and exit.
//!
//! Bug `metallb-join-once` (before PR 662): list the IPs at start (retrying every 5 s until the API
//! server answers) and join them once; no loop, no rejoin on Node changes. Bug
//! `metallb-rejoin-via-apiserver` (the PR's first draft): every rejoin lists the IPs from the API
//! server instead of using the cache, so no rejoin happens while the API server is unreachable.

use super::announcer::{Announcer, Views};
use super::memberlist::Memberlist;
use super::*;
use crate::metallb::MetallbEvent;
use sim::kube::{KubeClient, Object, WatchEvent};
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// The one-slot channel of join requests.
#[derive(Default)]
struct Slot {
    full: Cell<bool>,
    notify: Notify,
}

impl Slot {
    /// A non-blocking send: a request already waiting absorbs this one.
    fn request(&self) {
        if !self.full.replace(true) {
            self.notify.notify();
        }
    }
}

struct SpeakerList {
    proc: Proc,
    kube: KubeClient,
    ml: Rc<Memberlist>,
    peers: Rc<Peers>,
    ips: RefCell<Vec<String>>,
    slot: Slot,
    switches: Switches,
}

/// Starts the speaker in `proc`: memberlist, speaker list, informers and the layer-2 announcer.
pub fn start(proc: &Proc, cfg: &SpeakerConfig) {
    let kube = cfg.kube.client(proc);
    let ml = Memberlist::start(proc, cfg.peers.clone(), &cfg.switches);
    let sl = Rc::new(SpeakerList {
        proc: proc.clone(),
        kube: kube.clone(),
        ml: ml.clone(),
        peers: cfg.peers.clone(),
        ips: RefCell::default(),
        slot: Slot::default(),
        switches: cfg.switches.clone(),
    });
    let views = Rc::new(Views::new(cfg.switches.mutant_keeps_deleted_service));
    if cfg.switches.join_once {
        let s = sl.clone();
        proc.spawn("join-once", async move { s.join_once().await });
    } else {
        let s = sl.clone();
        proc.spawn("ip-refresh", async move { s.refresh_loop().await });
        let s = sl.clone();
        proc.spawn("join-loop", async move { s.join_loop().await });
    }
    // Informers: this speaker's own Node requests a rejoin when it is created (first listed) or its
    // labels or NetworkUnavailable condition change, the only updates upstream's Node predicate
    // passes (`internal/k8s/controllers/node_controller.go` `NodeReconcilerPredicate` l. 71-108;
    // `speaker/layer2_controller.go` `SetNode` l. 172-178 calls `Rejoin`); a Ready flip or any
    // other status update does not, and a deletion reconciles nothing (`node_controller.go`
    // `Reconcile` l. 50-53 returns on NotFound). Every kind feeds the announcer's views.
    let (s, v, me) = (sl.clone(), views.clone(), proc.host_name());
    proc.spawn("node-watch", async move {
        let mut last: Option<NodeSignal> = None;
        s.kube
            .run_informer("Node", None, INFORMER_IDLE, |ev| {
                let name = match &ev {
                    WatchEvent::Upsert(o) => o.name.to_string(),
                    WatchEvent::Deleted { name, .. } => name.to_string(),
                };
                let had = v.has_node(&name);
                if let WatchEvent::Upsert(o) = &ev {
                    if o.name == me && !s.switches.join_once {
                        let seen = NodeSignal::of(o);
                        let event = match last {
                            None => NodeEvent::Create,
                            Some(old) => NodeEvent::Update { old, new: seen },
                        };
                        if node_predicate(event) {
                            s.request_join();
                        }
                        last = Some(seen);
                    }
                }
                v.apply(ev);
                if v.has_node(&name) != had {
                    s.proc.emit(MetallbEvent::L2Node {
                        node: name,
                        present: !had,
                    });
                }
            })
            .await
    });
    let (k, v) = (kube.clone(), views.clone());
    proc.spawn("service-watch", async move {
        k.run_informer("Service", None, INFORMER_IDLE, |ev| v.apply(ev))
            .await
    });
    // The Endpoints informer reports each change of what it delivered (the ready nodes per
    // Service), read from the delivered object itself, so that an oracle can hold the announcer's
    // decisions to the view they were made on.
    let (k, v, p) = (kube.clone(), views.clone(), proc.clone());
    proc.spawn("endpoints-watch", async move {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        k.run_informer("Endpoints", None, INFORMER_IDLE, |ev| {
            let (name, ready) = delivered_ready(&ev);
            v.apply(ev);
            if seen.get(&name) != Some(&ready) {
                seen.insert(name.clone(), ready.clone());
                p.emit(MetallbEvent::L2Endpoints {
                    service: name,
                    ready,
                });
            }
        })
        .await
    });
    let announcer = Announcer::start(
        proc,
        ml.clone(),
        views,
        cfg.segment.port(proc),
        cfg.switches.clone(),
    );
    // SIGTERM closes stopCh: `client.Run` returns (the controllers stop), and only then does the
    // deferred `sList.Stop()` leave the cluster (`speaker/main.go` l. 289-292; speakerlist.go
    // `Stop` l. 323-334); the announcer's ARP responders answer until the process exits.
    let (p, m) = (proc.clone(), ml);
    proc.spawn("shutdown", async move {
        p.terminated().await;
        announcer.stop_controllers();
        m.leave(LEAVE_TIMEOUT).await;
        p.exit(0);
    });
}

/// An Endpoints informer event's Service name and the nodes it says have a ready endpoint
/// (sorted; none for a deletion).
fn delivered_ready(ev: &WatchEvent) -> (String, Vec<String>) {
    match ev {
        WatchEvent::Upsert(o) => {
            let mut ready: Vec<String> = o.status["ready"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(String::from))
                .collect();
            ready.sort();
            ready.dedup();
            (o.name.to_string(), ready)
        }
        WatchEvent::Deleted { name, .. } => (name.to_string(), Vec::new()),
    }
}

/// What upstream's Node predicate reads of a Node: its labels (the model's Nodes carry one, the
/// exclude-from-external-load-balancers label) and its NetworkUnavailable condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NodeSignal {
    exclude: bool,
    network_unavailable: bool,
}

impl NodeSignal {
    fn of(o: &Object) -> NodeSignal {
        NodeSignal {
            exclude: o.spec["exclude"].as_bool().unwrap_or(false),
            network_unavailable: o.spec["network_unavailable"].as_bool().unwrap_or(false),
        }
    }
}

/// An event the Node controller's informer delivers.
#[derive(Clone, Copy, Debug)]
enum NodeEvent {
    /// The Node is first seen.
    Create,
    /// The Node changed.
    Update { old: NodeSignal, new: NodeSignal },
}

/// `NodeReconcilerPredicate` (metallb 7938d3f internal/k8s/controllers/node_controller.go
/// l. 71-108): creations pass (deletions too, but `Reconcile` then finds no Node and returns,
/// l. 50-53, so they are no event here); an update passes when the NetworkUnavailable
/// condition's status or the labels changed (controller-runtime's `LabelChangedPredicate`).
/// Everything else a Node update carries (Ready and the other conditions, heartbeats, spec) is
/// filtered out.
fn node_predicate(e: NodeEvent) -> bool {
    match e {
        NodeEvent::Create => true,
        NodeEvent::Update { old, new } => old != new,
    }
}

impl SpeakerList {
    /// `Rejoin`: asks the join loop for a join now (mutant `metallb-mutant-lazy-join`: ignored).
    fn request_join(&self) {
        if !self.switches.mutant_lazy_join {
            self.slot.request();
        }
    }

    /// The speaker pods' IPs from the API server.
    async fn list_ips(&self) -> Option<Vec<String>> {
        let pods = self.kube.list("Pod").await.ok()?;
        Some(
            pods.iter()
                .filter_map(|p| p.status["ip"].as_str().map(String::from))
                .collect(),
        )
    }

    async fn refresh_loop(&self) {
        loop {
            if let Some(ips) = self.list_ips().await {
                let first = self.ips.borrow().is_empty();
                self.proc
                    .emit(MetallbEvent::SpeakerIps { ips: ips.clone() });
                *self.ips.borrow_mut() = ips;
                if first {
                    self.request_join();
                }
            } else if self.switches.mutant_cache_dropped {
                self.ips.borrow_mut().clear();
            }
            self.proc.sleep(IP_REFRESH).await;
        }
    }

    async fn join_loop(&self) {
        let period = if self.switches.mutant_lazy_join {
            5 * JOIN_PERIOD
        } else {
            JOIN_PERIOD
        };
        let mut next_tick = self.proc.mono_us() + period.as_micros() as u64;
        loop {
            // Wait for the ticker or a request, whichever comes first.
            while !self.slot.full.get() && self.proc.mono_us() < next_tick {
                let g = self.slot.notify.generation();
                let wait = Duration::from_micros(next_tick - self.proc.mono_us());
                futures::future::select(
                    std::pin::pin!(self.proc.sleep(wait)),
                    self.slot.notify.changed_since(g),
                )
                .await;
            }
            let cause = if self.slot.full.replace(false) {
                "request"
            } else {
                next_tick += period.as_micros() as u64;
                "tick"
            };
            let ips = if self.switches.rejoin_via_apiserver {
                match self.list_ips().await {
                    Some(ips) => ips,
                    None => continue,
                }
            } else {
                self.ips.borrow().clone()
            };
            self.join_non_members(ips, cause).await;
        }
    }

    async fn join_once(&self) {
        let ips = loop {
            if let Some(ips) = self.list_ips().await {
                break ips;
            }
            self.proc.sleep(Duration::from_secs(5)).await;
        };
        self.proc
            .emit(MetallbEvent::SpeakerIps { ips: ips.clone() });
        self.join_non_members(ips, "start").await;
    }

    /// Joins the IPs that are not members (this node is always one).
    async fn join_non_members(&self, ips: Vec<String>, cause: &str) {
        let members: Vec<NodeIx> = self.ml.members().into_iter().map(|(_, a)| a).collect();
        let targets: Vec<(String, NodeIx)> = ips
            .into_iter()
            .filter_map(|ip| self.peers.node_of(&ip).map(|n| (ip, n)))
            .filter(|(_, n)| !members.contains(n))
            .collect();
        if targets.is_empty() {
            return;
        }
        let addrs: Vec<NodeIx> = targets.iter().map(|(_, n)| *n).collect();
        let joined = self.ml.join(&addrs).await;
        self.proc.emit(MetallbEvent::MlJoin {
            addresses: targets.into_iter().map(|(ip, _)| ip).collect(),
            joined,
            cause: cause.into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Node as the API server holds it, with `spec` and `status` as given.
    fn node(spec: serde_json::Value, status: serde_json::Value) -> NodeSignal {
        NodeSignal::of(&Object {
            kind: "Node".into(),
            name: "n1".into(),
            rv: 1,
            spec: Rc::new(spec.into()),
            status: Rc::new(status.into()),
        })
    }

    /// metallb 7938d3f internal/k8s/controllers/node_controller_test.go
    /// `TestNodeReconcilerPredicate` (l. 127-215): creations pass; of updates, only a label
    /// change and a NetworkUnavailable status change pass. Its deletion case has no counterpart
    /// (a deletion reconciles nothing, see [`node_predicate`]), nor have its "wrong event object"
    /// cases: the model's events are typed.
    #[test]
    fn upstream_node_reconciler_predicate() {
        use serde_json::json;
        assert!(node_predicate(NodeEvent::Create), "allow create event pass");
        let plain = node(json!({}), json!({ "ready": true }));
        let cases = [
            ("default", plain, false),
            (
                "label change",
                node(json!({ "exclude": true }), json!({})),
                true,
            ),
            (
                "spec schedulable change",
                node(json!({ "unschedulable": true }), json!({})),
                false,
            ),
            (
                "condition NodeNetworkUnavailable status change",
                node(json!({ "network_unavailable": true }), json!({})),
                true,
            ),
            (
                "condition other change (Ready, heartbeats)",
                node(json!({}), json!({ "ready": false, "heartbeat": 10 })),
                false,
            ),
        ];
        for (name, new, expected) in cases {
            let got = node_predicate(NodeEvent::Update { old: plain, new });
            assert_eq!(got, expected, "{name}");
        }
    }

    /// The `l2-endpoints` event reads what the informer delivered: an Endpoints object's ready
    /// nodes, sorted and without repeats; a deletion reads as none.
    #[test]
    fn delivered_ready_reads_the_object_and_a_deletion_as_none() {
        let ep = WatchEvent::Upsert(Rc::new(Object {
            kind: "Endpoints".into(),
            name: "svc-1".into(),
            rv: 3,
            spec: Rc::new(serde_json::json!({ "nodes": ["n3", "n1", "n2"] }).into()),
            status: Rc::new(serde_json::json!({ "ready": ["n3", "n1", "n3"] }).into()),
        }));
        assert_eq!(
            delivered_ready(&ep),
            (
                "svc-1".to_string(),
                vec!["n1".to_string(), "n3".to_string()]
            )
        );
        let gone = WatchEvent::Deleted {
            kind: "Endpoints".into(),
            name: "svc-1".into(),
        };
        assert_eq!(delivered_ready(&gone), ("svc-1".to_string(), Vec::new()));
    }
}
