//! The layer-2 segment: the client side of service IPs (a router behind a switch) and the frames
//! speakers exchange with it.
//!
//! The router keeps one ARP entry per service IP and it follows the last answer it heard, from a
//! gratuitous ARP or a reply to its own request: that entry is the ground truth of which node
//! receives a service's traffic. The router asks for every IP every [`ARP_REFRESH`] while it has an
//! entry (its neighbour cache going stale) and every [`ARP_RETRY`] while it has none (traffic waiting
//! on resolution). Requests are broadcast: one datagram to every port. Frames travel as datagrams
//! over the simulated network, so partitions, latency and crashes apply to them.

use crate::event::{Event, NodeIx};
use crate::net::Datagrams;
use crate::world::{Host, Proc, World};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// How often the router re-resolves an IP it has an entry for.
pub const ARP_REFRESH: Duration = Duration::from_secs(30);
/// How often it asks while it has no entry.
pub const ARP_RETRY: Duration = Duration::from_secs(3);

/// A frame on the segment.
#[derive(Clone, Debug)]
pub enum Frame {
    /// Unsolicited "`ip` is at my MAC".
    Garp(String),
    /// An answer to a request for `ip`.
    Reply(String),
    /// "Who has `ip`?" (broadcast by the router).
    Request(String),
}

struct Inner {
    ips: Vec<String>,
    to_router: Datagrams<Frame>,
    ports: BTreeMap<NodeIx, Datagrams<Frame>>,
    entries: RefCell<BTreeMap<String, NodeIx>>,
}

/// The segment (cheap to clone).
#[derive(Clone)]
pub struct Segment(Rc<Inner>);

impl Segment {
    /// Installs the router as the services of `router`, resolving `ips`, with a port for each of
    /// `hosts`.
    pub fn install(world: &World, router: NodeIx, hosts: &[NodeIx], ips: Vec<String>) -> Segment {
        let seg = Segment(Rc::new(Inner {
            ips,
            to_router: Datagrams::new(router),
            ports: hosts.iter().map(|&h| (h, Datagrams::new(h))).collect(),
            entries: RefCell::default(),
        }));
        let s = seg.clone();
        world.set_services(router, Rc::new(move |host: &Host| s.start(host)));
        seg
    }

    /// Where the router sends traffic for `ip` now (ground truth).
    pub fn entry(&self, ip: &str) -> Option<NodeIx> {
        self.0.entries.borrow().get(ip).copied()
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
                let (ip, via) = match frame {
                    Frame::Garp(ip) => (ip, "garp"),
                    Frame::Reply(ip) => (ip, "reply"),
                    Frame::Request(_) => continue,
                };
                let old = s.0.entries.borrow_mut().insert(ip.clone(), from);
                if old != Some(from) {
                    p.emit(Event::ArpEntry {
                        ip,
                        node: p.world().node_name(from),
                        via: via.into(),
                    });
                }
            }
        });
        let (s, p) = (self.clone(), proc.clone());
        proc.spawn("arp-client", async move {
            // IP -> monotonic time of its next request.
            let mut next: BTreeMap<String, u64> = BTreeMap::new();
            loop {
                let now = p.mono_us();
                for ip in &s.0.ips {
                    let due = next.entry(ip.clone()).or_insert(0);
                    if *due > now {
                        continue;
                    }
                    for port in s.0.ports.values() {
                        port.send(&p, Frame::Request(ip.clone()));
                    }
                    let every = if s.0.entries.borrow().contains_key(ip) {
                        ARP_REFRESH
                    } else {
                        ARP_RETRY
                    };
                    *due = now + every.as_micros() as u64;
                }
                p.sleep(ARP_RETRY).await;
            }
        });
    }
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
