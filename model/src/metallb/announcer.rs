//! MetalLB's layer-2 controller and announcer.
//!
//! For each service with an IP, a speaker computes the candidates from its own views: current
//! memberlist members, minus nodes with `NetworkUnavailable`, minus nodes labelled to be excluded
//! from external load balancers, and (traffic policy Local) only nodes with a serving endpoint; with
//! no serving endpoint anywhere nobody announces. A member whose Node object this speaker has not
//! seen is not a candidate (nothing is known about its labels). The candidates are ordered by
//! [`announce_order`]; if this node is first it announces: a gratuitous ARP at once and every
//! [`GARP_EVERY`] for [`GARP_FOR`], and an answer to every ARP request for the IP. A speaker that
//! stops being first withdraws (stops answering). The controller re-evaluates every service whenever
//! the member list or an informer view changes.
//!
//! Upstream (metallb/metallb at 7938d3f): `speaker/layer2_controller.go` `ShouldAnnounce`
//! (l. 88-133) and `sortL2Candidates` (l. 187-197); `internal/layer2/announcer.go` `SetBalancer`
//! (l. 258-260), `spamLoop` (l. 169-182: the first gratuitous ARP right away), `DeleteBalancer`
//! (l. 291-299) and `shouldAnnounce` (l. 237-255); `internal/layer2/arp.go` `processRequest`
//! (l. 100-107). One known difference: upstream restarts the gratuitous-ARP burst on every
//! `SetBalancer` of an announced IP (every resync), the model only when it starts announcing.

use super::memberlist::Memberlist;
use super::*;
use crate::metallb::MetallbEvent;
use sim::kube::WatchEvent;
use sim::l2::Port;
use sim::sync::Notify;
use sim::Proc;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A Node as the speaker sees it.
#[derive(Clone, Debug, Default, PartialEq)]
struct NodeView {
    exclude: bool,
    network_unavailable: bool,
}

/// The speaker's informer views.
#[derive(Default)]
pub struct Views {
    nodes: RefCell<BTreeMap<String, NodeView>>,
    /// Service -> (IP, traffic policy Local).
    services: RefCell<BTreeMap<String, (String, bool)>>,
    /// Service -> nodes with a serving (ready) endpoint.
    endpoints: RefCell<BTreeMap<String, BTreeSet<String>>>,
    changed: Notify,
}

impl Views {
    /// Applies an informer event of any kind. Waiters are woken only when a view changed: a
    /// re-list, or an update of fields the speaker does not read, changes nothing it decides on.
    pub fn apply(&self, ev: WatchEvent) {
        let changed = match ev {
            WatchEvent::Upsert(o) => match o.kind.as_str() {
                "Node" => {
                    let v = NodeView {
                        exclude: o.spec["exclude"].as_bool().unwrap_or(false),
                        network_unavailable: o.spec["network_unavailable"]
                            .as_bool()
                            .unwrap_or(false),
                    };
                    put(&self.nodes, &o.name, v)
                }
                "Service" => {
                    let ip = o.spec["ip"].as_str().unwrap_or_default().to_string();
                    let local = o.spec["local"].as_bool().unwrap_or(false);
                    put(&self.services, &o.name, (ip, local))
                }
                "Endpoints" => {
                    let ready = o.status["ready"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|v| v.as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default();
                    put(&self.endpoints, &o.name, ready)
                }
                _ => false,
            },
            WatchEvent::Deleted { kind, name } => match kind.as_str() {
                "Node" => self.nodes.borrow_mut().remove(name.as_str()).is_some(),
                "Service" => self.services.borrow_mut().remove(name.as_str()).is_some(),
                "Endpoints" => self.endpoints.borrow_mut().remove(name.as_str()).is_some(),
                _ => false,
            },
        };
        if changed {
            self.changed.notify();
        }
    }
}

/// Stores `v` under `name`; whether the map changed.
fn put<V: PartialEq>(map: &RefCell<BTreeMap<String, V>>, name: &str, v: V) -> bool {
    let mut m = map.borrow_mut();
    if m.get(name) == Some(&v) {
        return false;
    }
    m.insert(name.to_string(), v);
    true
}

/// A service this speaker announces.
struct Announced {
    ip: String,
    /// Monotonic times of the remaining gratuitous ARPs.
    garps: Vec<u64>,
}

/// The layer-2 controller of one speaker.
pub struct Announcer {
    proc: Proc,
    ml: Rc<Memberlist>,
    views: Rc<Views>,
    port: Port,
    announced: RefCell<BTreeMap<String, Announced>>,
    /// [`announce_key`] by IP, then node (the same few pairs are ordered on every evaluation).
    keys: RefCell<KeyMemo>,
    /// The run's switches (only mutants matter here).
    sw: Switches,
    /// IPs withdrawn but still answered (mutant `metallb-mutant-answers-after-withdraw` only;
    /// always empty otherwise).
    stale: RefCell<BTreeSet<String>>,
}

impl Announcer {
    /// Starts the `layer2` (evaluation and gratuitous ARPs) and `arp-responder` tasks.
    pub fn start(proc: &Proc, ml: Rc<Memberlist>, views: Rc<Views>, port: Port, sw: Switches) {
        let a = Rc::new(Announcer {
            proc: proc.clone(),
            ml,
            views,
            port,
            announced: RefCell::default(),
            keys: RefCell::default(),
            sw,
            stale: RefCell::default(),
        });
        let b = a.clone();
        proc.spawn("layer2", async move { b.run().await });
        let b = a.clone();
        proc.spawn("arp-responder", async move {
            loop {
                let ip = b.port.request().await;
                if b.announced.borrow().values().any(|x| x.ip == ip)
                    || b.stale.borrow().contains(&ip)
                {
                    b.port.reply(&ip);
                }
            }
        });
    }

    /// The candidates for a service, in this speaker's views (unordered).
    fn candidates(&self, service: &str, local: bool) -> Vec<String> {
        let nodes = self.views.nodes.borrow();
        let endpoints = self.views.endpoints.borrow();
        let serving = endpoints.get(service).cloned().unwrap_or_default();
        if serving.is_empty() {
            return Vec::new();
        }
        self.ml
            .members()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|n| {
                nodes.get(&**n).is_some_and(|v| {
                    self.sw.mutant_ignore_exclusion || (!v.exclude && !v.network_unavailable)
                })
            })
            .filter(|n| !local || serving.contains(&**n))
            .map(|n| n.to_string())
            .collect()
    }

    fn evaluate(&self) {
        let me = self.proc.host_name();
        let services = self.views.services.borrow().clone();
        for (svc, (ip, local)) in &services {
            let candidates = self.candidates(svc, *local);
            let first = if self.sw.mutant_wrong_order {
                candidates
                    .iter()
                    .max_by_key(|c| announce_key(c, ip))
                    .cloned()
            } else {
                first_in_order(&candidates, ip, &mut self.keys.borrow_mut()).cloned()
            };
            let announcing = self.announced.borrow().contains_key(svc);
            if first.as_deref() == Some(me.as_str()) {
                if !announcing {
                    self.proc.emit(MetallbEvent::L2Announce {
                        service: svc.clone(),
                        ip: ip.clone(),
                        candidates,
                    });
                    let now = self.proc.mono_us();
                    let step = GARP_EVERY.as_micros() as u64;
                    let mut garps: Vec<u64> = (0..)
                        .map(|i| now + i * step)
                        .take_while(|t| *t < now + GARP_FOR.as_micros() as u64)
                        .collect();
                    if self.sw.mutant_no_garp {
                        garps.clear();
                    }
                    self.announced.borrow_mut().insert(
                        svc.clone(),
                        Announced {
                            ip: ip.clone(),
                            garps,
                        },
                    );
                }
            } else if announcing && !self.sw.mutant_never_withdraws {
                self.withdraw(svc);
            }
        }
        let gone: Vec<String> = self
            .announced
            .borrow()
            .keys()
            .filter(|s| !services.contains_key(*s))
            .cloned()
            .collect();
        for svc in gone {
            self.withdraw(&svc);
        }
    }

    fn withdraw(&self, svc: &str) {
        if let Some(a) = self.announced.borrow_mut().remove(svc) {
            if self.sw.mutant_answers_after_withdraw {
                self.stale.borrow_mut().insert(a.ip.clone());
            }
            self.proc.emit(MetallbEvent::L2Withdraw {
                service: svc.to_string(),
                ip: a.ip,
            });
        }
    }

    async fn run(&self) {
        let mut evaluated = None;
        loop {
            let (gm, gv) = (
                self.ml.changed.generation(),
                self.views.changed.generation(),
            );
            // Evaluation is idempotent while the member list and the views stay the same: a wake-up
            // for a gratuitous ARP alone does not repeat it.
            if evaluated != Some((gm, gv)) {
                self.evaluate();
                evaluated = Some((gm, gv));
            }
            // Gratuitous ARPs that are due, then wait for the next one or a change.
            let now = self.proc.mono_us();
            let mut next: Option<u64> = None;
            for a in self.announced.borrow_mut().values_mut() {
                while a.garps.first().is_some_and(|t| *t <= now) {
                    a.garps.remove(0);
                    self.port.garp(&a.ip);
                }
                if let Some(t) = a.garps.first() {
                    next = Some(next.map_or(*t, |n: u64| n.min(*t)));
                }
            }
            let changed = futures::future::select(
                self.ml.changed.changed_since(gm),
                self.views.changed.changed_since(gv),
            );
            match next {
                Some(t) => {
                    let wait = Duration::from_micros(t - now);
                    futures::future::select(std::pin::pin!(self.proc.sleep(wait)), changed).await;
                }
                None => {
                    changed.await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::kube::Object;

    fn node(name: &str, exclude: bool, rv: u64) -> WatchEvent {
        WatchEvent::Upsert(Rc::new(Object {
            kind: "Node".into(),
            name: name.into(),
            rv,
            spec: Rc::new(serde_json::json!({ "exclude": exclude }).into()),
            status: Rc::new(serde_json::json!({ "ready": true }).into()),
        }))
    }

    #[test]
    fn views_wake_the_announcer_only_when_they_change() {
        let v = Views::default();
        let g = v.changed.generation();
        v.apply(node("n1", false, 1));
        assert_eq!(v.changed.generation(), g + 1, "a new node is a change");
        // A re-list, or a new version that changes nothing the speaker reads.
        v.apply(node("n1", false, 1));
        v.apply(node("n1", false, 2));
        assert_eq!(v.changed.generation(), g + 1);
        v.apply(node("n1", true, 3));
        assert_eq!(v.changed.generation(), g + 2, "the exclusion label changed");
        v.apply(WatchEvent::Deleted {
            kind: "Node".into(),
            name: "n2".into(),
        });
        assert_eq!(v.changed.generation(), g + 2, "deleting an unknown node");
        v.apply(WatchEvent::Deleted {
            kind: "Node".into(),
            name: "n1".into(),
        });
        assert_eq!(v.changed.generation(), g + 3);
    }
}
