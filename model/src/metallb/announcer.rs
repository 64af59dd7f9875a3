//! MetalLB's layer-2 controller and announcer (metallb/metallb at 7938d3f89 unless a commit is
//! named).
//!
//! For each service with an IP, a speaker computes the candidates from its own views: current
//! memberlist members, minus nodes with `NetworkUnavailable`, minus nodes labelled to be excluded
//! from external load balancers, and (traffic policy Local) only nodes with a serving endpoint; with
//! no serving endpoint anywhere nobody announces. A member whose Node object this speaker has not
//! seen is not a candidate (nothing is known about its labels). The candidates are ordered by
//! [`announce_order`]; if this node is first it announces, and answers every ARP request for the IP.
//! A speaker that stops being first, or whose informer reports the Service deleted, withdraws
//! (stops answering). The controller re-evaluates every service whenever the member list or an
//! informer view changes.
//!
//! Resyncs and the gratuitous-ARP burst. Upstream, every reconcile of a service this node wins calls
//! the announcer's `SetBalancer`, and every `SetBalancer` (re)starts the IP's gratuitous-ARP burst,
//! not only the first (`defer a.doSpam(adv)` runs before the early return for an IP already
//! announced). A service is reconciled (a "resync", [`Views`] records which):
//!
//! * all of them on a memberlist `NotifyJoin`/`NotifyLeave` (`speakerlist.go`
//!   `memberlistWatchEvents` l. 339-349 calls `ForceSync`, which queues the reload event;
//!   `internal/k8s/controllers/service_controller_reload.go` `reprocessAll` l. 62-119 calls the
//!   handler for every Service) and when a known Node's NetworkUnavailable condition or exclusion
//!   label changes (`speaker/main.go` `SetNode` l. 637-653 returns `SyncStateReprocessAll`;
//!   `internal/k8s/controllers/node_controller.go` `Reconcile` l. 60-63 forces the reload);
//! * one of them on every informer event of its Service or its endpoints, re-lists of unchanged
//!   objects included (`service_controller.go` `SetupWithManager` l. 118-145 enqueues the Service
//!   for each, with no predicate; `reconcileService` l. 63-116), and on its deletion (`serviceFor`
//!   l. 147-157 then hands the handler a nil Service).
//!
//! The handler, `speaker/main.go` `SetBalancer` (l. 400-459), withdraws a deleted Service
//! (`deleteBalancer(l, name, "serviceDeleted")`, l. 401-403, then `layer2_controller.go`
//! `DeleteBalancer` l. 157-170 and `announcer.go` `DeleteBalancer` l. 291-315), and otherwise
//! calls `handleService` (`speaker/main.go` l. 461-499): `ShouldAnnounce`, then for the winner the layer-2
//! controller's `SetBalancer` (`layer2_controller.go` l. 135-155), which calls the announcer's
//! `SetBalancer` (`announcer.go` l. 257-288, `defer a.doSpam(adv)` at l. 260).
//!
//! The spam loop (`announcer.go` `spamLoop` l. 157-197) keeps one deadline per IP and one ticker
//! for all of them: a `doSpam` sets the IP's deadline to now + [`GARP_FOR`] and, if the IP was not
//! already in the loop's map, sends a gratuitous ARP at once (l. 174-182); a ticker started at
//! [`GARP_EVERY`] when the map was empty (l. 170-173) sends one for every IP whose deadline has not
//! passed and drops the others (l. 183-194), and stops once the map is empty. A gratuitous ARP is
//! sent only for an IP still announced (`gratuitous` l. 203-212), but a withdrawn IP stays in the
//! map until its deadline passes: announced again before that, it gets no immediate gratuitous
//! ARP, only the next tick's.
//!
//! Bug `metallb-garp-first-only`: the announcer before metallb 0c1ae8cc3 ("Rework how gratuitous
//! advertisements (ARP/NDP) work", which fixed metallb/metallb#584 after PR 586, 709 and 730
//! proposed other fixes). At its parent 124f6beb, `internal/layer2/announcer.go` `SetBalancer`
//! (l. 183-209) returns at once for a service it already announces (l. 188-190) and otherwise
//! starts `go a.spam(name)` (l. 207): a goroutine per service that sends a gratuitous ARP, sleeps
//! 1.1 s and repeats while less than 5 s have passed since it started (`spam` l. 134-143 at
//! 124f6beb), each one only while the service is still announced (`gratuitous` l. 145-154 at
//! 124f6beb). There is no spam loop,
//! so fix `metallb-garp-while-announced`, a change to that loop, has nothing to act on there.
//!
//! Upstream (metallb/metallb at 7938d3f): `speaker/layer2_controller.go` `ShouldAnnounce`
//! (l. 88-133) and `sortL2Candidates` (l. 187-197); `internal/layer2/announcer.go` `SetBalancer`
//! (l. 257-288), `spamLoop` (l. 157-197), `DeleteBalancer` (l. 291-315) and `shouldAnnounce`
//! (l. 237-255); `internal/layer2/arp.go` `processRequest` (l. 100-107).
//!
//! Not modelled: the evaluation itself is not limited to the services resynced (every view change
//! re-evaluates every service; the decisions agree with upstream's as long as a change that makes
//! upstream re-evaluate a service is one [`Views`] or memberlist reports, which holds for every
//! object the scenarios change), controller-runtime's 10-hour cache resync, and the per-item
//! rate-limited requeue of a failed reconcile (nothing here fails).

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

/// The services the next evaluation resyncs (calls `SetBalancer` for, where this node wins).
#[derive(Default, Debug, PartialEq)]
pub struct Resync {
    /// Every service (a Node's availability changed).
    pub all: bool,
    /// These services (an event of their Service or Endpoints).
    pub services: BTreeSet<String>,
}

/// The speaker's informer views.
#[derive(Default)]
pub struct Views {
    nodes: RefCell<BTreeMap<String, NodeView>>,
    /// Service -> (IP, traffic policy Local).
    services: RefCell<BTreeMap<String, (String, bool)>>,
    /// Service -> nodes with a serving (ready) endpoint.
    endpoints: RefCell<BTreeMap<String, BTreeSet<String>>>,
    /// What the informer events since the last evaluation make upstream reconcile.
    resync: RefCell<Resync>,
    changed: Notify,
    /// Mutant `metallb-mutant-keeps-deleted-service` (test-only): a Service's deletion is ignored.
    mutant_keeps_deleted_service: bool,
}

impl Views {
    /// Empty views (`mutant_keeps_deleted_service`: see
    /// [`Switches::mutant_keeps_deleted_service`]; false upstream).
    pub fn new(mutant_keeps_deleted_service: bool) -> Views {
        Views {
            mutant_keeps_deleted_service,
            ..Views::default()
        }
    }

    /// Applies an informer event of any kind. Waiters are woken when a view changed or a service
    /// is due for a resync: a Node event only when the fields the speaker reads changed (a re-list
    /// or a status update changes nothing it decides on, and upstream's Node predicate filters
    /// those out too); every Service or Endpoints event, a re-list's included, resyncs its
    /// service, as controller-runtime enqueues it (see the module documentation).
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
                    // `SetNode` forces a reload only when a node it knew changed availability.
                    let known = self.nodes.borrow().contains_key(o.name.as_str());
                    let changed = put(&self.nodes, &o.name, v);
                    if changed && known {
                        self.resync.borrow_mut().all = true;
                    }
                    changed
                }
                "Service" => {
                    let ip = o.spec["ip"].as_str().unwrap_or_default().to_string();
                    let local = o.spec["local"].as_bool().unwrap_or(false);
                    put(&self.services, &o.name, (ip, local));
                    self.mark(&o.name)
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
                    put(&self.endpoints, &o.name, ready);
                    self.mark(&o.name)
                }
                _ => false,
            },
            WatchEvent::Deleted { kind, name } => match kind.as_str() {
                "Node" => self.nodes.borrow_mut().remove(name.as_str()).is_some(),
                "Service" if self.mutant_keeps_deleted_service => false,
                "Service" => {
                    self.services.borrow_mut().remove(name.as_str());
                    self.mark(&name)
                }
                "Endpoints" => {
                    self.endpoints.borrow_mut().remove(name.as_str());
                    self.mark(&name)
                }
                _ => false,
            },
        };
        if changed {
            self.changed.notify();
        }
    }

    /// Whether the Node informer view has Node `name`.
    pub fn has_node(&self, name: &str) -> bool {
        self.nodes.borrow().contains_key(name)
    }

    /// Queues a resync of `service` (always a reason to wake the announcer).
    fn mark(&self, service: &str) -> bool {
        self.resync
            .borrow_mut()
            .services
            .insert(service.to_string());
        true
    }

    /// Takes the resyncs queued since the last call.
    fn take_resync(&self) -> Resync {
        std::mem::take(&mut *self.resync.borrow_mut())
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
}

/// The spam loop's state (`announcer.go` `spamLoop` l. 157-197).
#[derive(Default)]
struct Spam {
    /// IP -> monotonic time its gratuitous ARPs stop (the loop's map `m`).
    until: BTreeMap<String, u64>,
    /// The ticker's next tick (`None`: stopped).
    tick: Option<u64>,
    /// Bug `metallb-garp-first-only`: the running per-service `spam(name)` goroutines.
    bursts: Vec<Burst>,
}

impl Spam {
    /// When the `layer2` task must next wake for a gratuitous ARP.
    fn next_wake(&self) -> Option<u64> {
        self.bursts.iter().map(|b| b.next).chain(self.tick).min()
    }
}

/// One pre-0c1ae8cc3 `spam(name)` goroutine (bug `metallb-garp-first-only`).
struct Burst {
    service: String,
    /// Monotonic time it started.
    start: u64,
    /// Monotonic time its sleep ends.
    next: u64,
}

/// The layer-2 controller of one speaker.
pub struct Announcer {
    proc: Proc,
    ml: Rc<Memberlist>,
    views: Rc<Views>,
    port: Port,
    announced: RefCell<BTreeMap<String, Announced>>,
    spam: RefCell<Spam>,
    /// [`announce_key`] by IP, then node (the same few pairs are ordered on every evaluation).
    keys: RefCell<KeyMemo>,
    /// The run's switches (only mutants matter here).
    sw: Switches,
    /// IPs withdrawn but still answered (mutant `metallb-mutant-answers-after-withdraw` only;
    /// always empty otherwise).
    stale: RefCell<BTreeSet<String>>,
    /// The controllers have stopped (shutdown): no more evaluations, while the ARP responder and
    /// the spam loop go on until the process exits.
    stopped: std::cell::Cell<bool>,
}

impl Announcer {
    /// Starts the `layer2` (evaluation and gratuitous ARPs) and `arp-responder` tasks.
    pub fn start(
        proc: &Proc,
        ml: Rc<Memberlist>,
        views: Rc<Views>,
        port: Port,
        sw: Switches,
    ) -> Rc<Announcer> {
        let a = Rc::new(Announcer {
            proc: proc.clone(),
            ml,
            views,
            port,
            announced: RefCell::default(),
            spam: RefCell::default(),
            keys: RefCell::default(),
            sw,
            stale: RefCell::default(),
            stopped: Default::default(),
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
        a
    }

    /// The speaker's controllers stop (`client.Run` returned on SIGTERM): nothing is evaluated
    /// from now on, so nothing is withdrawn either; what is announced stays answered, and its
    /// gratuitous ARPs go on, until the process exits (`announcer.go`'s goroutines live as long as
    /// the process).
    pub fn stop_controllers(&self) {
        self.stopped.set(true);
    }

    /// The candidates for a service, in this speaker's views (unordered). `announcing`: this
    /// speaker announces it (mutant `metallb-mutant-local-ignores-readiness` keeps its own node a
    /// candidate of a Local service then, ready endpoint or not).
    fn candidates(&self, service: &str, local: bool, announcing: bool) -> Vec<String> {
        let keep_me = (local && announcing && self.sw.mutant_local_ignores_readiness)
            .then(|| self.proc.host_name());
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
            .filter(|n| !local || serving.contains(&**n) || keep_me.as_deref() == Some(&**n))
            .map(|n| n.to_string())
            .collect()
    }

    /// Re-evaluates every service; `resync` says which ones upstream reconciles now (a winner's
    /// `SetBalancer` restarts its IP's gratuitous-ARP burst).
    /// `members_only`: only the member list changed since the last evaluation (mutant
    /// `metallb-mutant-lazy-withdraw` withdraws nothing then).
    fn evaluate(&self, resync: &Resync, members_only: bool) {
        let me = self.proc.host_name();
        let services = self.views.services.borrow().clone();
        for (svc, (ip, local)) in &services {
            let announcing = self.announced.borrow().contains_key(svc);
            let candidates = self.candidates(svc, *local, announcing);
            let first = if self.sw.mutant_wrong_order && !announcing {
                candidates
                    .iter()
                    .max_by_key(|c| announce_key(c, ip))
                    .cloned()
            } else {
                first_in_order(&candidates, ip, &mut self.keys.borrow_mut()).cloned()
            };
            if first.as_deref() == Some(me.as_str()) {
                if !announcing {
                    self.proc.emit(MetallbEvent::L2Announce {
                        service: svc.clone(),
                        ip: ip.clone(),
                        candidates,
                    });
                    self.announced
                        .borrow_mut()
                        .insert(svc.clone(), Announced { ip: ip.clone() });
                    if self.sw.garp_first_only {
                        self.start_burst(svc);
                    } else {
                        self.do_spam(ip);
                    }
                } else if !self.sw.garp_first_only && (resync.all || resync.services.contains(svc))
                {
                    // `SetBalancer` of an IP already announced: a no-op but for its deferred
                    // `doSpam` (metallb 7938d3f89 announcer.go l. 260, l. 264-271).
                    self.do_spam(ip);
                }
            } else if announcing
                && !self.sw.mutant_never_withdraws
                && !(self.sw.mutant_lazy_withdraw && members_only)
            {
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

    /// `doSpam`: the IP's burst lasts [`GARP_FOR`] from now; a gratuitous ARP at once if the spam
    /// loop did not hold the IP; the ticker starts if it held nothing (`spamLoop` l. 169-182).
    fn do_spam(&self, ip: &str) {
        let now = self.proc.mono_us();
        let fresh = {
            let mut spam = self.spam.borrow_mut();
            if spam.until.is_empty() {
                spam.tick = Some(now + GARP_EVERY.as_micros() as u64);
            }
            spam.until
                .insert(ip.to_string(), now + GARP_FOR.as_micros() as u64)
                .is_none()
        };
        if fresh && !self.sw.mutant_no_garp {
            self.gratuitous(ip);
        }
    }

    /// A tick of the spam loop's ticker due at `t` and delivered now (`spamLoop` l. 183-194: the
    /// tick carries the time it fires, late if the node was paused): a gratuitous ARP for each IP
    /// whose burst has not ended, the others dropped; the ticker stops once none is left.
    fn spam_tick(&self, t: u64) {
        let now = self.proc.mono_us();
        let due: Vec<String> = {
            let mut spam = self.spam.borrow_mut();
            if self.sw.garp_while_announced {
                // Fix: an announced IP's burst never ends.
                for a in self.announced.borrow().values() {
                    spam.until
                        .insert(a.ip.clone(), now + GARP_FOR.as_micros() as u64);
                }
            }
            spam.until.retain(|_, until| now <= *until);
            let every = GARP_EVERY.as_micros() as u64;
            spam.tick = if spam.until.is_empty() {
                None
            } else {
                // A Go ticker drops the ticks its reader missed.
                Some(t + every + (now - t) / every * every)
            };
            if self.sw.mutant_no_spam_ticks {
                return;
            }
            spam.until.keys().cloned().collect()
        };
        for ip in due {
            self.gratuitous(&ip);
        }
    }

    /// Bug `metallb-garp-first-only`: `go a.spam(name)` (124f6beb `announcer.go` l. 207); its
    /// first gratuitous ARP goes out at once.
    fn start_burst(&self, svc: &str) {
        let now = self.proc.mono_us();
        self.spam.borrow_mut().bursts.push(Burst {
            service: svc.to_string(),
            start: now,
            next: now,
        });
        self.burst_ticks();
    }

    /// Bug `metallb-garp-first-only`: every `spam(name)` goroutine whose sleep has ended sends a
    /// gratuitous ARP for its service if less than [`GARP_FOR`] has passed since it started (and
    /// the service is still announced), then sleeps [`GARP_EVERY`]; otherwise it ends (124f6beb
    /// `announcer.go` `spam` l. 134-143, `gratuitous` l. 145-154).
    fn burst_ticks(&self) {
        let now = self.proc.mono_us();
        let (every, span) = (GARP_EVERY.as_micros() as u64, GARP_FOR.as_micros() as u64);
        let due: Vec<String> = {
            let mut spam = self.spam.borrow_mut();
            let mut due = Vec::new();
            spam.bursts.retain_mut(|b| {
                if b.next > now {
                    return true;
                }
                if now - b.start >= span {
                    return false;
                }
                due.push(b.service.clone());
                b.next = now + every;
                true
            });
            due
        };
        for svc in due {
            let ip = self.announced.borrow().get(&svc).map(|a| a.ip.clone());
            if let Some(ip) = ip {
                self.port.garp(&ip);
            }
        }
    }

    /// `gratuitous`: sent only while the IP is announced (`announcer.go` l. 203-212).
    fn gratuitous(&self, ip: &str) {
        if !self.announced.borrow().values().any(|a| a.ip == ip) {
            return;
        }
        self.port.garp(ip);
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
            // The spam loop's tick, if due (a timer that fired while the node was paused is
            // delivered first when it resumes).
            let now = self.proc.mono_us();
            let tick = self.spam.borrow().tick;
            if let Some(t) = tick.filter(|t| *t <= now) {
                self.spam_tick(t);
            }
            self.burst_ticks();
            let (gm, gv) = (
                self.ml.changed.generation(),
                self.views.changed.generation(),
            );
            // Evaluation is idempotent while the member list and the views stay the same: a wake-up
            // for a gratuitous ARP alone does not repeat it. A memberlist event since the last one
            // resyncs every service (`ForceSync`).
            if evaluated != Some((gm, gv)) && !self.stopped.get() {
                let mut resync = self.views.take_resync();
                if evaluated.is_none_or(|(m, _)| m != gm) {
                    resync.all = true;
                }
                let members_only = evaluated.is_some_and(|(_, v)| v == gv);
                self.evaluate(&resync, members_only);
                evaluated = Some((gm, gv));
            }
            // Wait for the next tick (an evaluation may have started the ticker) or a change.
            let next = self.spam.borrow().next_wake();
            let changed = futures::future::select(
                self.ml.changed.changed_since(gm),
                self.views.changed.changed_since(gv),
            );
            match next {
                Some(t) => {
                    let wait = Duration::from_micros(t.saturating_sub(now));
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

    fn service(name: &str, rv: u64) -> WatchEvent {
        WatchEvent::Upsert(Rc::new(Object {
            kind: "Service".into(),
            name: name.into(),
            rv,
            spec: Rc::new(serde_json::json!({ "ip": "192.168.10.1" }).into()),
            status: Rc::new(serde_json::json!({}).into()),
        }))
    }

    #[test]
    fn every_service_event_resyncs_its_service_and_node_availability_resyncs_all() {
        let v = Views::new(false);
        let g = v.changed.generation();
        v.apply(service("svc-1", 1));
        // A re-list of the same version resyncs it too (controller-runtime enqueues every event).
        v.apply(service("svc-1", 1));
        assert_eq!(v.changed.generation(), g + 2);
        v.apply(node("n1", false, 1));
        assert_eq!(
            v.take_resync(),
            Resync {
                all: false,
                services: BTreeSet::from(["svc-1".to_string()])
            },
            "a node seen for the first time forces no reload"
        );
        v.apply(node("n1", true, 2));
        assert!(
            v.take_resync().all,
            "a known node's exclusion label changed"
        );
        v.apply(WatchEvent::Deleted {
            kind: "Service".into(),
            name: "svc-1".into(),
        });
        assert!(v.services.borrow().is_empty());
        assert!(v.take_resync().services.contains("svc-1"));
        // The mutant ignores the deletion.
        let m = Views::new(true);
        m.apply(service("svc-1", 1));
        m.apply(WatchEvent::Deleted {
            kind: "Service".into(),
            name: "svc-1".into(),
        });
        assert_eq!(m.services.borrow().len(), 1);
    }

    #[test]
    fn node_views_wake_the_announcer_only_when_they_change() {
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
