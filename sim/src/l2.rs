//! The layer-2 segment: the client side of service IPs (a Linux router behind a switch) and the
//! frames speakers exchange with it.
//!
//! The router keeps one neighbour entry per service IP, a Linux neighbour cache entry
//! ([`crate::neigh`]): the entry's cached address is the ground truth of which node receives a
//! service's traffic. Clients send traffic to every service IP through the router, one packet
//! every [`TRAFFIC_GAP_MIN`] to [`TRAFFIC_GAP_MAX`] (drawn per IP from the router's seeded
//! generator, with a random phase): it is what creates the entries, turns a STALE one into DELAY
//! and PROBE, and what goes to the wrong node while an entry is wrong. Only packets that change an
//! entry's state wake the router (a packet to a REACHABLE entry changes nothing). Requests are
//! broadcast (one datagram to every port) or unicast to the cached node's port; frames travel as
//! datagrams over the simulated network, so partitions, latency and crashes apply to them.

use crate::event::{Event, NodeIx};
use crate::neigh::{Entry, Heard, Solicit, LINUX_DEFAULTS, REACHABLE_REDRAW_US};
use crate::net::Datagrams;
use crate::sync::Notify;
use crate::world::{Host, Proc, World};
use rand::Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// The shortest gap between two client packets to one service IP.
pub const TRAFFIC_GAP_MIN: Duration = Duration::from_millis(100);
/// The longest (a service with at least one request every 2 s).
pub const TRAFFIC_GAP_MAX: Duration = Duration::from_secs(2);

/// The longest the router keeps sending a service's traffic to a node that stopped answering for
/// it, when no gratuitous ARP corrects it: see [`crate::neigh::Params::stale_entry_max_us`].
pub const STALE_ENTRY_MAX: Duration =
    Duration::from_micros(LINUX_DEFAULTS.stale_entry_max_us(TRAFFIC_GAP_MAX.as_micros() as u64));

/// A frame on the segment.
#[derive(Clone, Debug)]
pub enum Frame {
    /// Unsolicited "`ip` is at my MAC".
    Garp(String),
    /// An answer to a request for `ip`.
    Reply(String),
    /// "Who has `ip`?" (from the router, broadcast or unicast).
    Request(String),
}

struct Inner {
    ips: Vec<String>,
    to_router: Datagrams<Frame>,
    ports: BTreeMap<NodeIx, Datagrams<Frame>>,
    entries: RefCell<BTreeMap<String, Entry>>,
    /// The table's current `reachable_time` (µs).
    reachable_us: Cell<u64>,
    /// An entry changed outside the router's timer task (it may need a packet's wake-up).
    changed: Notify,
}

/// The segment (cheap to clone).
#[derive(Clone)]
pub struct Segment(Rc<Inner>);

/// A service IP's client traffic: a packet every `gap_us`, the next at `next_us`.
struct Traffic {
    gap_us: u64,
    next_us: u64,
}

impl Segment {
    /// Installs the router as the services of `router`, sending traffic to `ips`, with a port for
    /// each of `hosts`.
    pub fn install(world: &World, router: NodeIx, hosts: &[NodeIx], ips: Vec<String>) -> Segment {
        let seg = Segment(Rc::new(Inner {
            ips,
            to_router: Datagrams::new(router),
            ports: hosts.iter().map(|&h| (h, Datagrams::new(h))).collect(),
            entries: RefCell::default(),
            reachable_us: Cell::new(LINUX_DEFAULTS.base_reachable_us),
            changed: Notify::new(),
        }));
        let s = seg.clone();
        world.set_services(router, Rc::new(move |host: &Host| s.start(host)));
        seg
    }

    /// Where the router sends traffic for `ip` now (ground truth; `None` while unresolved).
    pub fn entry(&self, ip: &str) -> Option<NodeIx> {
        self.0.entries.borrow().get(ip).and_then(Entry::next_hop)
    }

    /// A host's port: opens its inbox (call once per boot of the process that owns it).
    pub fn port(&self, proc: &Proc) -> Port {
        let inbox = self.0.ports[&proc.node()].clone();
        inbox.open();
        Port {
            seg: self.clone(),
            proc: proc.clone(),
            inbox,
        }
    }

    fn start(&self, host: &Host) {
        let proc = host.spawn_process("router");
        self.0.to_router.open();
        self.0.entries.borrow_mut().clear();
        let (s, p) = (self.clone(), proc.clone());
        proc.spawn("arp-listener", async move {
            loop {
                let (from, frame) = s.0.to_router.recv(&p).await;
                let (ip, heard) = match frame {
                    Frame::Garp(ip) => (ip, Heard::Garp),
                    Frame::Reply(ip) => (ip, Heard::Reply),
                    Frame::Request(_) => continue,
                };
                let (now, reach) = (p.mono_us(), s.0.reachable_us.get());
                let mut took = false;
                s.update(&p, &ip, |e| {
                    took = e.heard(now, from, heard, reach, &LINUX_DEFAULTS);
                });
                if took {
                    let via = if heard == Heard::Garp {
                        "garp"
                    } else {
                        "reply"
                    };
                    p.emit(Event::ArpEntry {
                        ip,
                        node: p.world().node_name(from),
                        via: via.into(),
                    });
                }
                s.0.changed.notify();
            }
        });
        let (s, p) = (self.clone(), proc.clone());
        proc.spawn("neighbour", async move { s.run_neighbours(&p).await });
    }

    /// Applies `f` to `ip`'s entry if it exists (unsolicited ARP creates none) and emits its new
    /// state if it changed.
    fn update(&self, p: &Proc, ip: &str, f: impl FnOnce(&mut Entry)) {
        let mut entries = self.0.entries.borrow_mut();
        let Some(e) = entries.get_mut(ip) else {
            return;
        };
        let before = (e.state, e.ha);
        f(e);
        let after = (e.state, e.ha);
        drop(entries);
        if before != after {
            p.emit(Event::Neighbour {
                ip: ip.to_string(),
                state: after.0,
                node: after.1.map(|n| p.world().node_name(n)),
            });
        }
    }

    fn solicit(&self, p: &Proc, ip: &str, s: Option<Solicit>) {
        match s {
            Some(Solicit::Broadcast) => {
                for port in self.0.ports.values() {
                    port.send(p, Frame::Request(ip.to_string()));
                }
            }
            Some(Solicit::Unicast(n)) => {
                if let Some(port) = self.0.ports.get(&n) {
                    port.send(p, Frame::Request(ip.to_string()));
                }
            }
            None => {}
        }
    }

    /// The router's timer task: client packets, entry timers, `reachable_time` draws.
    async fn run_neighbours(&self, p: &Proc) {
        let mut rng = p.rng("neighbour");
        let params = LINUX_DEFAULTS;
        let draw_reach = |rng: &mut rand_chacha::ChaCha8Rng| {
            rng.random_range(params.reachable_min_us()..params.reachable_max_us())
        };
        let start = p.mono_us();
        let mut redraw_at = start + REACHABLE_REDRAW_US;
        self.0.reachable_us.set(draw_reach(&mut rng));
        let (lo, hi) = (us(TRAFFIC_GAP_MIN), us(TRAFFIC_GAP_MAX));
        let mut traffic: Vec<(String, Traffic)> = self
            .0
            .ips
            .iter()
            .map(|ip| {
                let gap_us = rng.random_range(lo..=hi);
                let next_us = start + rng.random_range(0..gap_us);
                (ip.clone(), Traffic { gap_us, next_us })
            })
            .collect();
        loop {
            let now = p.mono_us();
            if now >= redraw_at {
                self.0.reachable_us.set(draw_reach(&mut rng));
                redraw_at += REACHABLE_REDRAW_US;
            }
            let reach = self.0.reachable_us.get();
            for (ip, t) in &mut traffic {
                let due = self
                    .0
                    .entries
                    .borrow()
                    .get(ip.as_str())
                    .and_then(|e| e.timer);
                if due.is_some_and(|d| d <= now) {
                    let mut out = None;
                    self.update(p, ip, |e| out = e.fire(now, reach, &params));
                    self.solicit(p, ip, out);
                }
                while t.next_us <= now {
                    t.next_us += t.gap_us;
                    let mut out = None;
                    self.0.entries.borrow_mut().entry(ip.clone()).or_default();
                    self.update(p, ip, |e| {
                        if e.packet_changes_state() {
                            out = e.send(now, &params);
                        }
                    });
                    self.solicit(p, ip, out);
                }
            }
            let wake = self.next_wake(&traffic).min(redraw_at);
            let g = self.0.changed.generation();
            let sleep = p.sleep(Duration::from_micros(wake.saturating_sub(now)));
            futures::future::select(std::pin::pin!(sleep), self.0.changed.changed_since(g)).await;
        }
    }

    /// The earliest entry timer, or packet that changes an entry's state.
    fn next_wake(&self, traffic: &[(String, Traffic)]) -> u64 {
        let entries = self.0.entries.borrow();
        traffic
            .iter()
            .filter_map(|(ip, t)| {
                let e = entries.get(ip.as_str());
                let packet = e
                    .is_none_or(Entry::packet_changes_state)
                    .then_some(t.next_us);
                let timer = e.and_then(|e| e.timer);
                packet.into_iter().chain(timer).min()
            })
            .min()
            .unwrap_or(u64::MAX / 2)
    }
}

/// A duration in microseconds.
fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// A host's attachment to the segment.
pub struct Port {
    seg: Segment,
    proc: Proc,
    inbox: Datagrams<Frame>,
}

impl Port {
    /// Sends a gratuitous ARP for `ip`.
    pub fn garp(&self, ip: &str) {
        self.to_router(Frame::Garp(ip.into()));
    }

    /// Answers a request for `ip`.
    pub fn reply(&self, ip: &str) {
        self.to_router(Frame::Reply(ip.into()));
    }

    fn to_router(&self, f: Frame) {
        self.seg.0.to_router.send(&self.proc, f);
    }

    /// The next ARP request heard: the IP asked for.
    pub async fn request(&self) -> String {
        loop {
            if let (_, Frame::Request(ip)) = self.inbox.recv(&self.proc).await {
                return ip;
            }
        }
    }
}
