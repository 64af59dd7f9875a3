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
//! * `node-watch`: the informer on Node objects; a change of this speaker's own Node (it became
//!   ready again) requests a join (`SetNode`).
//! * `shutdown`: on SIGTERM, leave the cluster ([`LEAVE_TIMEOUT`]) and exit.
//!
//! Bug `metallb-join-once` (before PR 662): list the IPs at start (retrying every 5 s until the API
//! server answers) and join them once; no loop, no rejoin on Node changes. Bug
//! `metallb-rejoin-via-apiserver` (the PR's first draft): every rejoin lists the IPs from the API
//! server instead of using the cache, so no rejoin happens while the API server is unreachable.

use super::announcer::{Announcer, Views};
use super::memberlist::Memberlist;
use super::*;
use crate::metallb::MetallbEvent;
use sim::kube::{KubeClient, WatchEvent};
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};

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
    // Informers: this speaker's own Node requests a rejoin when it changes; every kind feeds the
    // announcer's views.
    let (s, v, me) = (sl.clone(), views.clone(), proc.host_name());
    proc.spawn("node-watch", async move {
        let mut last_rv: Option<u64> = None;
        s.kube
            .run_informer("Node", None, INFORMER_IDLE, |ev| {
                if let WatchEvent::Upsert(o) = &ev {
                    if o.name == me && !s.switches.join_once {
                        if last_rv.is_some_and(|rv| rv != o.rv) {
                            s.slot.request();
                        }
                        last_rv = Some(o.rv);
                    }
                }
                v.apply(ev);
            })
            .await
    });
    for kind in ["Service", "Endpoints"] {
        let (k, v) = (kube.clone(), views.clone());
        let task = if kind == "Service" {
            "service-watch"
        } else {
            "endpoints-watch"
        };
        proc.spawn(task, async move {
            k.run_informer(kind, None, INFORMER_IDLE, |ev| v.apply(ev))
                .await
        });
    }
    Announcer::start(
        proc,
        ml.clone(),
        views,
        cfg.segment.port(proc),
        cfg.switches.clone(),
    );
    let (p, m) = (proc.clone(), ml);
    proc.spawn("shutdown", async move {
        p.terminated().await;
        m.leave(LEAVE_TIMEOUT).await;
        p.exit(0);
    });
}

impl SpeakerList {
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
                    self.slot.request();
                }
            } else if self.switches.mutant_cache_dropped {
                self.ips.borrow_mut().clear();
            }
            self.proc.sleep(IP_REFRESH).await;
        }
    }

    async fn join_loop(&self) {
        let mut next_tick = self.proc.mono_us() + JOIN_PERIOD.as_micros() as u64;
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
                next_tick += JOIN_PERIOD.as_micros() as u64;
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
