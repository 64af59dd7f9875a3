//! hashicorp/memberlist v0.5.1 (SWIM with Lifeguard), the version metallb 7938d3f pins in its
//! go.mod, as MetalLB's speakers run it with `DefaultLANConfig` (constants in the parent module).
//!
//! * Probing (submodule `probe`): one member per [`PROBE_INTERVAL`] round robin over a shuffled
//!   list; a ping unanswered after [`PROBE_TIMEOUT`] is retried through [`INDIRECT_CHECKS`] alive
//!   members (each nacks if the target stays silent) and over TCP until the end of the
//!   awareness-scaled interval; still no ack: the member becomes suspect. A ping to a suspect
//!   carries the suspicion, so that it can refute at once. When the round robin wraps, members dead
//!   or left for [`GOSSIP_TO_THE_DEAD`] are forgotten (removed from the list: nobody probes or
//!   gossips to them again) and the list is reshuffled.
//! * Lifeguard's awareness (submodule `awareness`): a health score raised by failed probes with
//!   missing nacks and by refutations, lowered by successful probes, scales the probe interval.
//! * Suspicion: timeout from `suspicion_timeout`, starting at [`SUSPICION_MAX_TIMEOUT_MULT`] times
//!   that and shrinking as other members confirm (`k = SuspicionMult - 2` confirmations expected, 0
//!   with fewer than `k + 2` members); on expiry the member is declared dead. A member that hears it
//!   is suspected or dead refutes with a higher incarnation.
//! * Gossip: every [`GOSSIP_INTERVAL`] the queued broadcasts (alive, suspect, dead; a newer one about
//!   a member replaces an older) go to [`GOSSIP_NODES`] random members (alive, suspect, or dead, not
//!   left, for less than [`GOSSIP_TO_THE_DEAD`]), each broadcast at most `retransmit_limit` times. While nothing
//!   is queued the ticker's empty rounds are skipped (they send nothing upstream either).
//! * Random members are drawn as v0.5.1's `kRandomNodes` does (util.go l. 129-160): at most `3n`
//!   random draws over the node list, so fewer than `k` may come back.
//! * Push/pull: every [`PUSH_PULL_INTERVAL`] a full state exchange with one random alive member;
//!   `join(addresses)` is the same exchange with each address. Merging a remote state: alive is
//!   applied as alive, left as dead-by-itself, suspect and dead as a suspicion.
//! * `leave`: broadcast "dead, from myself" (left) and wait up to [`LEAVE_TIMEOUT`] for it to go out.
//!
//! * Piggybacking: every ping, indirect ping, ack and nack sent to one member carries the queued
//!   broadcasts in the same datagram, each counted as a transmission toward the retransmit limit
//!   (v0.5.1 net.go `sendMsg` l. 788-811). A ping to a suspect carries the suspicion instead, with
//!   nothing else (state.go `probeNode` l. 357-382), as does a TCP ping.
//!
//! Not modelled (documented deviations): the 1400-byte limit of a datagram (a handful of members'
//! messages always fit), and metadata/protocol versions (every speaker runs the same version, so every peer understands TCP
//! pings and nacks: `ProtocolVersionMax` 5, net.go l. 25-42).

use super::*;
use crate::metallb::MetallbEvent;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sim::net::{Call, Endpoint};
use sim::short::Short;
use sim::sync::Notify;
use sim::Proc;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

mod awareness;
mod k_random;
mod probe;

pub use awareness::Awareness;
pub use k_random::k_random;
use probe::{Acks, ProbeWait};

/// A member's name: a node name, inline and `Copy`. It travels in every probe and gossip message,
/// sits in every member record and keys the member and suspicion maps; an inline string compares
/// in registers (a shared `Rc<str>` went through `memcmp` on every map step and counted references
/// on every copy). Node names are short (`n1`.. in the MetalLB scenarios; at most [`Short::MAX`]
/// bytes, checked when the memberlist starts).
pub type Name = Short;

/// A member's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Answers probes (or was last heard to be alive at its incarnation).
    Alive,
    /// Missed a probe; declared dead when its suspicion times out unless it refutes.
    Suspect,
    /// Declared dead by another member (its suspicion expired).
    Dead,
    /// Left gracefully (declared dead by itself).
    Left,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Alive => "alive",
            State::Suspect => "suspect",
            State::Dead => "dead",
            State::Left => "left",
        }
    }

    /// Alive and suspect members both count as members.
    pub fn is_member(self) -> bool {
        matches!(self, State::Alive | State::Suspect)
    }
}

/// What a push/pull exchange carries about one member.
#[derive(Clone, Copy, Debug)]
pub struct NodeState {
    /// The member's name (its node's).
    pub name: Name,
    /// The node its speaker runs on (where its datagrams go).
    pub addr: NodeIx,
    /// The incarnation the state is about (a member raises its own to refute a suspicion).
    pub incarnation: u32,
    /// The member's state as the sender sees it.
    pub state: State,
}

/// A gossiped broadcast.
#[derive(Clone, Copy, Debug)]
pub enum Broadcast {
    /// `name` is alive at incarnation `inc` (a join, or a refutation).
    Alive {
        /// The member.
        name: Name,
        /// The node its speaker runs on.
        addr: NodeIx,
        /// Its incarnation.
        inc: u32,
    },
    /// `from` suspects `name` at incarnation `inc` (a first suspicion or a confirmation).
    Suspect {
        /// The suspected member.
        name: Name,
        /// The incarnation suspected.
        inc: u32,
        /// The member that suspects it.
        from: Name,
    },
    /// `from` declares `name` dead at incarnation `inc` (`from == name`: it left).
    Dead {
        /// The dead (or departing) member.
        name: Name,
        /// The incarnation declared dead.
        inc: u32,
        /// The member that declares it.
        from: Name,
    },
}

impl Broadcast {
    fn subject(&self) -> Name {
        match self {
            Broadcast::Alive { name, .. }
            | Broadcast::Suspect { name, .. }
            | Broadcast::Dead { name, .. } => *name,
        }
    }
}

/// A UDP packet.
#[derive(Clone, Debug)]
pub enum Packet {
    /// A probe: the receiver acks it if it is `target`.
    Ping {
        /// The sender's sequence number, echoed in the ack.
        seq: u32,
        /// The member the probe is for.
        target: Name,
        /// A ping to a member the sender holds suspect carries the suspicion in the same
        /// (compound) datagram, so the member can refute at once (v0.5.1 state.go `probeNode`
        /// l. 357-382); the receiver acks, then handles it.
        suspect: Option<Broadcast>,
    },
    /// Asks the receiver to ping `name` at `target` for the sender and forward the ack.
    IndirectPing {
        /// The sender's sequence number, echoed in the forwarded ack.
        seq: u32,
        /// The node to ping.
        target: NodeIx,
        /// The member expected there.
        name: Name,
        /// Whether the sender wants a nack if the target stays silent (every peer that
        /// understands protocol version 4 does: v0.5.1 state.go `probeNode` l. 439-445).
        nack: bool,
    },
    /// The target of an indirect ping did not answer within [`PROBE_TIMEOUT`] (v0.5.1 net.go
    /// `handleIndirectPing` l. 646-663).
    Nack {
        /// The sequence number of the indirect ping.
        seq: u32,
    },
    /// Answers a ping (or forwards the answer to an indirect one).
    Ack {
        /// The sequence number of the ping it answers.
        seq: u32,
    },
    /// Queued broadcasts, each applied in order by the receiver.
    Gossip(Vec<Broadcast>),
    /// A probe message (ping, indirect ping, ack or nack) with the queued broadcasts piggybacked
    /// in the same compound datagram (v0.5.1 net.go `sendMsg` l. 788-811); the receiver handles
    /// the message, then each broadcast in order (`handleCompound` l. 532-549).
    Piggybacked(Box<Packet>, Vec<Broadcast>),
}

/// What a TCP stream carries to a member.
#[derive(Clone, Debug)]
pub enum TcpReq {
    /// Push/pull: my state for yours.
    PushPull(Vec<NodeState>),
    /// The fallback ping of a probe (v0.5.1 net.go `sendPingAndWaitForAck` l. 1331-1375): the
    /// receiver acks if it is `target` (net.go `handleConn` l. 320-345).
    Ping {
        /// The probe's sequence number.
        seq: u32,
        /// The member the ping is for.
        target: Name,
    },
}

/// A member's answer on a TCP stream.
#[derive(Clone, Debug)]
pub enum TcpResp {
    /// Its state, for a push/pull.
    State(Vec<NodeState>),
    /// The ack of a fallback ping (`None`: the ping was for another member).
    Ack(Option<u32>),
}

/// A member's TCP listener (push/pull and fallback pings). TCP retransmits: a lossy link delays
/// its messages instead of losing them (see `sim::net`).
pub type Tcp = Endpoint<TcpReq, TcpResp>;

struct Member {
    st: NodeState,
    /// Monotonic time of the last state change.
    change_us: u64,
}

struct Suspicion {
    start_us: u64,
    k: u32,
    min: Duration,
    max: Duration,
    /// Who reported it (the first reporter does not count as a confirmation).
    confirmers: BTreeSet<Name>,
}

impl Suspicion {
    fn deadline_us(&self) -> u64 {
        let c = self.confirmers.len() as u32 - 1;
        self.start_us + suspicion_remaining(self.min, self.max, self.k, c).as_micros() as u64
    }
}

/// One speaker's memberlist.
pub struct Memberlist {
    proc: Proc,
    name: Name,
    addr: NodeIx,
    peers: Rc<Peers>,
    incarnation: Cell<u32>,
    members: RefCell<BTreeMap<Name, Member>>,
    order: RefCell<Vec<Name>>,
    probe_ix: Cell<usize>,
    suspicions: RefCell<BTreeMap<Name, Suspicion>>,
    suspicions_changed: Notify,
    queue: RefCell<Vec<(Broadcast, u32)>>,
    queued: Notify,
    /// Acks awaited, by sequence number (a handful at most: a list, no map node per probe).
    acks: RefCell<Acks>,
    /// The probe under way (the probe loop runs one at a time) and whether its ack came.
    probe_wait: RefCell<ProbeWait>,
    seq: Cell<u32>,
    rng: RefCell<ChaCha8Rng>,
    leaving: Cell<bool>,
    /// Lifeguard's health score (v0.5.1 awareness.go).
    awareness: Awareness,
    /// Mutant `metallb-mutant-slow-suspicion` (test-only): suspicion lasts ten times upstream's.
    mutant_slow_suspicion: bool,
    /// Mutant `metallb-mutant-no-refute` (test-only): a member never refutes a suspicion of itself.
    mutant_no_refute: bool,
    /// Notified when memberlist would call its event delegate's `NotifyJoin` (a new member, or a
    /// dead or left one alive again) or `NotifyLeave` (a member declared dead or left): exactly
    /// when [`Memberlist::members`] gains or loses a name. Suspicion and its refutation notify
    /// nothing, as upstream (hashicorp/memberlist v0.5.1 state.go `aliveNode` l. 1136-1146,
    /// `deadNode` l. 1297-1300). The speaker turns each event into a resync of every service
    /// (metallb 7938d3f internal/speakerlist/speakerlist.go `memberlistWatchEvents` l. 339-349:
    /// `ForceSync`).
    pub changed: Notify,
}

impl Memberlist {
    /// Creates the local node and starts the protocol's tasks (`memberlist-udp`, `memberlist-tcp`,
    /// `probe`, `gossip`, `push-pull`, `suspicion`) in `proc`; of `switches` it reads the
    /// memberlist mutants ([`Switches::mutant_slow_suspicion`], [`Switches::mutant_no_refute`]).
    /// As v0.5.1's `Create` (memberlist.go l. 248-258): the node listening (`newMemberlist`), then
    /// the periodic tasks (`schedule`, state.go l. 122-160).
    pub fn start(proc: &Proc, peers: Rc<Peers>, switches: &Switches) -> Rc<Memberlist> {
        Memberlist::host(proc, peers, switches, true)
    }

    /// The local node listening (`memberlist-udp`, `memberlist-tcp`) and timing its suspicions
    /// (`suspicion`); with `schedule`, also probing, gossiping and pushing/pulling. Without it:
    /// v0.5.1's `newMemberlist` (memberlist.go l. 100-245), what upstream's own tests build
    /// (state_test.go `HostMemberlist` l. 24-41).
    fn host(proc: &Proc, peers: Rc<Peers>, switches: &Switches, schedule: bool) -> Rc<Memberlist> {
        let addr = proc.node();
        let ml = Rc::new(Memberlist {
            proc: proc.clone(),
            name: Short::new(&proc.host_name())
                .expect("a speaker's node name fits a Short (at most 23 bytes)"),
            addr,
            peers,
            incarnation: Cell::new(0),
            members: RefCell::default(),
            order: RefCell::default(),
            probe_ix: Cell::new(0),
            suspicions: RefCell::default(),
            suspicions_changed: Notify::new(),
            queue: RefCell::default(),
            queued: Notify::new(),
            acks: RefCell::default(),
            probe_wait: RefCell::default(),
            seq: Cell::new(0),
            rng: RefCell::new(proc.rng("memberlist")),
            leaving: Cell::new(false),
            awareness: Awareness::new(AWARENESS_MAX_MULTIPLIER),
            mutant_slow_suspicion: switches.mutant_slow_suspicion,
            mutant_no_refute: switches.mutant_no_refute,
            changed: Notify::new(),
        });
        ml.alive_node(ml.name, addr, 0);
        ml.peers.udp[&addr].open();
        let mut tcp_inbox = ml.peers.tcp[&addr].open();
        let m = ml.clone();
        proc.spawn("memberlist-udp", async move {
            loop {
                let (from, packet) = m.peers.udp[&m.addr].recv(&m.proc).await;
                Memberlist::handle_packet(&m, from, packet);
            }
        });
        let m = ml.clone();
        proc.spawn("memberlist-tcp", async move {
            use futures::StreamExt;
            while let Some(Call { req, reply, .. }) = tcp_inbox.next().await {
                match req {
                    TcpReq::PushPull(remote) => {
                        reply.send(TcpResp::State(m.local_state()));
                        m.merge_state(remote);
                    }
                    TcpReq::Ping { seq, target } => {
                        reply.send(TcpResp::Ack((target == m.name).then_some(seq)))
                    }
                }
            }
        });
        if schedule {
            let m = ml.clone();
            proc.spawn("probe", async move { m.probe_loop().await });
            let m = ml.clone();
            proc.spawn("gossip", async move { m.gossip_loop().await });
            let m = ml.clone();
            proc.spawn("push-pull", async move { m.push_pull_loop().await });
        }
        let m = ml.clone();
        proc.spawn("suspicion", async move { m.suspicion_loop().await });
        ml
    }

    /// `Members()`: alive and suspect members, this node included: (name, address).
    pub fn members(&self) -> Vec<(Name, NodeIx)> {
        self.members
            .borrow()
            .values()
            .filter(|m| m.st.state.is_member())
            .map(|m| (m.st.name, m.st.addr))
            .collect()
    }

    /// `Join(addresses)`: a push/pull exchange with each, one after the other; how many answered.
    pub async fn join(&self, addrs: &[NodeIx]) -> u32 {
        let mut ok = 0;
        for &a in addrs {
            if self.push_pull(a).await {
                ok += 1;
            }
        }
        ok
    }

    /// `Leave(timeout)`: announce that this node left and wait for the message to go out.
    pub async fn leave(&self, timeout: Duration) {
        self.leaving.set(true);
        let inc = self.incarnation.get();
        let me = self.name;
        self.dead_node(me, inc, me);
        let deadline = self.proc.mono_us() + timeout.as_micros() as u64;
        while self.proc.mono_us() < deadline
            && self.queue.borrow().iter().any(|(b, _)| b.subject() == me)
        {
            self.proc.sleep(GOSSIP_INTERVAL).await;
        }
    }

    // ------------------------------------------------------------------ state changes

    fn now(&self) -> u64 {
        self.proc.mono_us()
    }

    fn set_state(&self, name: Name, state: State, inc: u32) {
        let now = self.now();
        let (changed, joined_or_left) = {
            let mut members = self.members.borrow_mut();
            let m = members.get_mut(&name).expect("known member");
            let changed = m.st.state != state;
            let flips = m.st.state.is_member() != state.is_member();
            m.st.incarnation = inc;
            if changed {
                m.st.state = state;
                m.change_us = now;
            }
            (changed, flips)
        };
        if changed {
            self.emit(name, state.name(), inc);
        }
        if joined_or_left {
            self.changed.notify();
        }
    }

    fn emit(&self, member: Name, state: &str, inc: u32) {
        self.proc.emit(MetallbEvent::MlMember {
            member: member.as_str().to_string(),
            state: state.to_string(),
            incarnation: inc,
        });
    }

    fn broadcast(&self, b: Broadcast) {
        let mut q = self.queue.borrow_mut();
        q.retain(|(old, _)| old.subject() != b.subject());
        q.push((b, 0));
        drop(q);
        self.queued.notify();
    }

    /// v0.5.1 state.go `refute` l. 918-942: a higher incarnation, and the health score rises (a
    /// member asked to refute may be the slow one).
    fn refute(&self, accused: u32) {
        if self.mutant_no_refute {
            return;
        }
        self.awareness.apply_delta(1);
        let inc = (self.incarnation.get() + 1).max(accused + 1);
        self.incarnation.set(inc);
        self.proc.emit(MetallbEvent::MlRefute { incarnation: inc });
        let me = self.name;
        self.set_state(me, State::Alive, inc);
        self.broadcast(Broadcast::Alive {
            name: me,
            addr: self.addr,
            inc,
        });
    }

    fn alive_node(&self, name: Name, addr: NodeIx, inc: u32) {
        let known = self.members.borrow().get(&name).map(|m| m.st.incarnation);
        if name == self.name {
            match known {
                // Another life of ours is remembered with a newer incarnation: refute it.
                Some(mine) if inc > mine => self.refute(inc),
                Some(_) => {}
                None => {
                    self.insert(name, addr, inc);
                }
            }
            return;
        }
        match known {
            None => {
                self.insert(name, addr, inc);
                self.broadcast(Broadcast::Alive { name, addr, inc });
            }
            Some(k) if inc <= k => {}
            Some(_) => {
                self.suspicions.borrow_mut().remove(&name);
                self.members.borrow_mut().get_mut(&name).unwrap().st.addr = addr;
                self.set_state(name, State::Alive, inc);
                self.broadcast(Broadcast::Alive { name, addr, inc });
            }
        }
    }

    fn insert(&self, name: Name, addr: NodeIx, inc: u32) {
        self.members.borrow_mut().insert(
            name,
            Member {
                st: NodeState {
                    name,
                    addr,
                    incarnation: inc,
                    state: State::Alive,
                },
                change_us: self.now(),
            },
        );
        // A new member goes to a random place of the probe list.
        let mut order = self.order.borrow_mut();
        let at = self.rng.borrow_mut().random_range(0..=order.len());
        order.insert(at, name);
        drop(order);
        self.emit(name, "alive", inc);
        // NotifyJoin: memberlist creates a new member's state as dead and then makes it alive.
        self.changed.notify();
    }

    /// The state of a known member, unless `inc` is older than what we know (then the message is
    /// stale and ignored).
    fn current(&self, name: Name, inc: u32) -> Option<State> {
        let members = self.members.borrow();
        let m = members.get(&name)?;
        (inc >= m.st.incarnation).then_some(m.st.state)
    }

    fn suspect_node(&self, name: Name, inc: u32, from: Name) {
        let Some(state) = self.current(name, inc) else {
            return;
        };
        let confirmed = self
            .suspicions
            .borrow_mut()
            .get_mut(&name)
            .map(|s| s.confirmers.insert(from));
        if let Some(new) = confirmed {
            if new {
                self.suspicions_changed.notify();
                self.broadcast(Broadcast::Suspect { name, inc, from });
            }
            return;
        }
        if state != State::Alive {
            return;
        }
        if name == self.name {
            self.refute(inc);
            return;
        }
        self.set_state(name, State::Suspect, inc);
        self.broadcast(Broadcast::Suspect { name, inc, from });
        let n = self.members.borrow().len();
        let k = SUSPICION_MULT - 2;
        let k = if (n as u32) < k + 2 { 0 } else { k };
        let mut min = suspicion_timeout(SUSPICION_MULT, n, PROBE_INTERVAL);
        if self.mutant_slow_suspicion {
            min *= 10;
        }
        self.suspicions.borrow_mut().insert(
            name,
            Suspicion {
                start_us: self.now(),
                k,
                min,
                max: min * SUSPICION_MAX_TIMEOUT_MULT,
                confirmers: BTreeSet::from([from]),
            },
        );
        self.suspicions_changed.notify();
    }

    fn dead_node(&self, name: Name, inc: u32, from: Name) {
        let Some(state) = self.current(name, inc) else {
            return;
        };
        self.suspicions.borrow_mut().remove(&name);
        if matches!(state, State::Dead | State::Left) {
            return;
        }
        if name == self.name && !self.leaving.get() {
            self.refute(inc);
            return;
        }
        let st = if from == name {
            State::Left
        } else {
            State::Dead
        };
        self.set_state(name, st, inc);
        self.broadcast(Broadcast::Dead { name, inc, from });
    }

    fn apply(&self, b: Broadcast) {
        match b {
            Broadcast::Alive { name, addr, inc } => self.alive_node(name, addr, inc),
            Broadcast::Suspect { name, inc, from } => self.suspect_node(name, inc, from),
            Broadcast::Dead { name, inc, from } => self.dead_node(name, inc, from),
        }
    }

    fn local_state(&self) -> Vec<NodeState> {
        self.members.borrow().values().map(|m| m.st).collect()
    }

    fn merge_state(&self, remote: Vec<NodeState>) {
        let me = self.name;
        for r in remote {
            match r.state {
                State::Alive => self.alive_node(r.name, r.addr, r.incarnation),
                State::Left => self.dead_node(r.name, r.incarnation, r.name),
                // A remote "dead" is only a suspicion here.
                State::Dead | State::Suspect => self.suspect_node(r.name, r.incarnation, me),
            }
        }
    }

    // ------------------------------------------------------------------ messages

    fn send(&self, to: NodeIx, p: Packet) {
        if let Some(inbox) = self.peers.udp.get(&to) {
            inbox.send(&self.proc, p);
        }
    }

    /// `encodeAndSendMsg`/`sendMsg` (v0.5.1 net.go l. 775-811): a probe message with whatever
    /// broadcasts are queued piggybacked on it, each counted as one transmission
    /// ([`Memberlist::take_broadcasts`]); with none queued, the message alone.
    fn send_msg(&self, to: NodeIx, p: Packet) {
        let extra = self.take_broadcasts();
        if extra.is_empty() {
            self.send(to, p);
        } else {
            self.send(to, Packet::Piggybacked(Box::new(p), extra));
        }
    }

    /// The queued broadcasts for one datagram (`TransmitLimitedQueue.GetBroadcasts`, v0.5.1
    /// queue.go l. 291-376): every one (a handful of members' messages fit the 1400-byte
    /// `UDPBufferSize`), each counted as transmitted once more and dropped from the queue at the
    /// retransmit limit, `RetransmitMult x ceil(log10(n + 1))` for `n` known members.
    fn take_broadcasts(&self) -> Vec<Broadcast> {
        let limit = retransmit_limit(RETRANSMIT_MULT, self.members.borrow().len());
        let mut q = self.queue.borrow_mut();
        let msgs = q.iter().map(|(b, _)| *b).collect();
        for (_, n) in q.iter_mut() {
            *n += 1;
        }
        q.retain(|(_, n)| *n < limit);
        msgs
    }

    fn handle_packet(this: &Rc<Memberlist>, from: NodeIx, p: Packet) {
        match p {
            Packet::Ping {
                seq,
                target,
                suspect,
            } => {
                if target == this.name {
                    this.send_msg(from, Packet::Ack { seq });
                }
                if let Some(b) = suspect {
                    this.apply(b);
                }
            }
            Packet::IndirectPing {
                seq,
                target,
                name,
                nack,
            } => Memberlist::forward_indirect_ping(this, from, seq, (target, name), nack),
            Packet::Ack { seq } => this.ack_received(seq),
            Packet::Nack { seq } => this.nack_received(seq),
            Packet::Gossip(bs) => {
                for b in bs {
                    this.apply(b);
                }
            }
            Packet::Piggybacked(p, bs) => {
                Memberlist::handle_packet(this, from, *p);
                for b in bs {
                    this.apply(b);
                }
            }
        }
    }

    /// Up to `k` random members passing `keep`, never this node: v0.5.1's `kRandomNodes` (util.go
    /// l. 129-160), at most `3n` random draws over the node list (`n` its length, this node and
    /// dead members included), skipping excluded and already drawn members. It may return fewer
    /// than `k` members even when `k` pass `keep`.
    fn random_members(&self, k: usize, keep: impl Fn(&Member) -> bool) -> Vec<NodeState> {
        let order = self.order.borrow();
        let members = self.members.borrow();
        let mut rng = self.rng.borrow_mut();
        k_random(k, order.len(), &mut *rng, |i| {
            members
                .get(&order[i])
                .filter(|m| m.st.name != self.name && keep(m))
                .map(|m| m.st)
        })
    }

    async fn stagger(&self, interval: Duration) {
        let us = self
            .rng
            .borrow_mut()
            .random_range(0..interval.as_micros() as u64);
        self.proc.sleep(Duration::from_micros(us)).await;
    }

    // ------------------------------------------------------------------ loops

    async fn gossip_loop(&self) {
        self.stagger(GOSSIP_INTERVAL).await;
        loop {
            if self.queue.borrow().is_empty() {
                let g = self.queued.generation();
                self.queued.changed_since(g).await;
            }
            self.proc.sleep(GOSSIP_INTERVAL).await;
            self.gossip();
        }
    }

    fn gossip(&self) {
        let now = self.now();
        let dead_window = GOSSIP_TO_THE_DEAD.as_micros() as u64;
        // Alive and suspect members, and members dead (not left) for at most the retention
        // (v0.5.1 state.go `gossip` l. 596-613).
        let targets = self.random_members(GOSSIP_NODES, |m| {
            m.st.state.is_member()
                || (m.st.state == State::Dead && now - m.change_us <= dead_window)
        });
        for t in targets {
            let msgs = self.take_broadcasts();
            if msgs.is_empty() {
                return;
            }
            self.send(t.addr, Packet::Gossip(msgs));
        }
    }

    async fn push_pull_loop(&self) {
        self.stagger(PUSH_PULL_INTERVAL).await;
        loop {
            if let Some(t) = self.random_members(1, |m| m.st.state == State::Alive).pop() {
                self.push_pull(t.addr).await;
            }
            self.proc.sleep(PUSH_PULL_INTERVAL).await;
        }
    }

    /// One push/pull exchange (the join handshake too); whether the peer answered.
    async fn push_pull(&self, to: NodeIx) -> bool {
        let Some(ep) = self.peers.tcp.get(&to) else {
            return false;
        };
        match self
            .proc
            .call(ep, TcpReq::PushPull(self.local_state()), TCP_TIMEOUT)
            .await
        {
            Ok(TcpResp::State(remote)) => {
                self.merge_state(remote);
                true
            }
            Ok(TcpResp::Ack(_)) | Err(_) => false,
        }
    }

    async fn suspicion_loop(&self) {
        loop {
            let g = self.suspicions_changed.generation();
            let next = self
                .suspicions
                .borrow()
                .iter()
                .map(|(n, s)| (s.deadline_us(), *n))
                .min();
            match next {
                None => self.suspicions_changed.changed_since(g).await,
                Some((at, name)) if at <= self.now() => {
                    let inc = self.members.borrow().get(&name).map(|m| m.st.incarnation);
                    self.suspicions.borrow_mut().remove(&name);
                    if let Some(inc) = inc {
                        // This member's own declaration (the no-false-death oracle reads it).
                        self.proc.emit(MetallbEvent::MlDeclareDead {
                            member: name.as_str().to_string(),
                            incarnation: inc,
                        });
                        self.dead_node(name, inc, self.name);
                    }
                }
                Some((at, _)) => {
                    let wait = Duration::from_micros(at - self.now());
                    futures::future::select(
                        std::pin::pin!(self.proc.sleep(wait)),
                        self.suspicions_changed.changed_since(g),
                    )
                    .await;
                }
            }
        }
    }
}
