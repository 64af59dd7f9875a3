//! The simulated network: latency, partitions, request/response calls and server-push streams.
//!
//! madsim's own network has one global latency range and no partial partitions, so faultline carries
//! messages itself. A message from A to B takes the run's base latency (drawn per message) plus the
//! extra latency of any `Latency` fault on A or B, and is dropped if a partition rule cuts A->B at
//! the instant it would arrive. Nothing is retransmitted: like a TCP connection whose peer has gone
//! silent, a caller learns about a loss only through its own timeout.
//!
//! A `Loss` fault makes a node's link lossy (submodule `loss`): a datagram crossing it may be
//! lost; a call's or a stream's message is not (TCP retransmits) but arrives a retransmission
//! timeout later per lost transmission.

use crate::event::NodeIx;
use crate::sync::Relay;
use crate::world::World;
use inbox::{inbox, InboxTx};
use rand::Rng;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

mod conn;
mod inbox;
mod loss;

pub use conn::{Conn, SYN_RTO_INIT};
pub use inbox::InboxRx;
pub use loss::LossyLink;

impl World {
    /// Whether a message from `from` to `to` gets through now.
    pub fn reachable(&self, from: NodeIx, to: NodeIx) -> bool {
        if from == to {
            return true;
        }
        let net = self.0.net.borrow();
        !net.rules.values().any(|r| {
            (r.from.contains(&from) && r.to.contains(&to))
                || (r.both_ways && r.from.contains(&to) && r.to.contains(&from))
        })
    }

    /// One-way latency for a message of a TCP stream (a call, its answer, a stream item) from
    /// `from` to `to` sent now: a datagram's, plus TCP's retransmission delay if lossy links lose
    /// transmissions (see [`LossyLink`]).
    pub fn latency(&self, from: NodeIx, to: NodeIx) -> Duration {
        let base = self.datagram_latency(from, to);
        base + self.retransmission_delay(from, to)
    }

    /// One-way latency for a datagram from `from` to `to` sent now.
    pub fn datagram_latency(&self, from: NodeIx, to: NodeIx) -> Duration {
        self.0.messages.set(self.0.messages.get() + 1);
        let mut net = self.0.net.borrow_mut();
        let (lo, hi) = (
            net.spec.latency_min_us,
            net.spec.latency_max_us.max(net.spec.latency_min_us),
        );
        let base = net.rng.random_range(lo..=hi);
        let extra: u64 = net
            .extra_us
            .values()
            .filter(|(n, _)| *n == from || *n == to)
            .map(|(_, e)| e)
            .sum();
        Duration::from_micros(base + extra)
    }
}

/// The task waiting for messages at one place (an inbox, a stream, a call's answer). The sender
/// arms a timer for each message's arrival that wakes whichever task last waited, so a reader is
/// woken once per message, when it arrives, and not also when it is sent.
struct Reader(Relay);

impl Reader {
    fn new() -> Self {
        Reader(Relay::new())
    }

    /// Wakes the reader at true time `at_us` (at least 1 ms from now, as any sleep).
    fn wake_at(&self, world: &World, at_us: u64) {
        crate::time::wake_at(world.instant_at(at_us), &self.0.waker());
    }

    /// The task of `cx` waits for the next arrival.
    fn wait(&self, cx: &std::task::Context<'_>) {
        self.0.register(cx.waker());
    }
}

/// A request as a server sees it.
pub struct Call<Req, Resp> {
    /// The caller's identity (`host:pid`).
    pub caller: Rc<str>,
    /// The caller's node.
    pub from: NodeIx,
    /// The request.
    pub req: Req,
    /// Where the response goes.
    pub reply: Responder<Resp>,
}

/// The way back to a caller. The response travels back over the network: its latency is drawn
/// when the server answers, and the server arms the timer for its arrival, so the caller's task is
/// woken once, when the answer arrives (and not also when the server sends it).
pub struct Responder<Resp> {
    slot: Rc<ReplySlot<Resp>>,
    world: World,
    /// The server's node and the caller's.
    server: NodeIx,
    caller: NodeIx,
    /// Over TCP: the server node's boot number when the request arrived (see [`Responder`]'s
    /// `Drop`); `None` for a plain endpoint.
    tcp_boots: Option<u32>,
    /// Answered or deliberately lost: nothing more to do when dropped.
    settled: bool,
}

/// Where a response waits for its caller: (arrival µs, response).
struct ReplySlot<Resp> {
    answer: RefCell<Option<(u64, Resp)>>,
    /// The server's connection was closed without an answer (see [`Responder`]'s `Drop`); the
    /// caller learns it one network latency later.
    reset: Cell<bool>,
    /// The caller's task, waiting. A call has one answer and one waiting task, registered before
    /// the server can run (the caller waits as soon as it has sent), so the answer's arrival timer
    /// can wake that task directly: the relay a [`Reader`] puts between a timer and whichever task
    /// waits last, needed where many messages and timers share one reader, would wake the same task.
    waiter: Cell<Option<Waker>>,
}

impl<Resp> Responder<Resp> {
    /// Sends the response back (it travels over the network and may be lost).
    pub fn send(mut self, resp: Resp) {
        self.settled = true;
        let at =
            self.world.now_us() + self.world.latency(self.server, self.caller).as_micros() as u64;
        *self.slot.answer.borrow_mut() = Some((at, resp));
        let waiter = self.slot.waiter.take();
        debug_assert!(waiter.is_some(), "a caller waits as soon as it has sent");
        // (One timer per answer in any case, as the run's timer count expects.)
        let waker = waiter.as_ref().unwrap_or(Waker::noop());
        crate::time::wake_at(self.world.instant_at(at), waker);
    }

    /// Drops the response on the floor: the caller times out (used for ambiguous failures).
    pub fn lose(mut self) {
        self.settled = true;
    }

    /// Whether the caller has stopped waiting (its timeout passed, or its task or process is
    /// gone): nothing can reach it any more. A server whose request is a database transaction
    /// committed by the client's last round trip uses this to roll back a transaction whose
    /// client gave up before the commit.
    pub fn caller_gone(&self) -> bool {
        // The caller's exchange holds the slot while it waits; only this responder is left once
        // the caller's future has been dropped.
        Rc::strong_count(&self.slot) == 1
    }
}

/// A TCP server process that ends holding a request (killed, or exiting on a terminate signal)
/// on a host that stays up: the kernel closes its sockets, sending a FIN (or a reset where unread
/// data is left, tcp(7) and RFC 2525 section 2.17), so the caller's read ends at once with an
/// error instead of waiting out its timeout (Python's `http.client` raises `RemoteDisconnected`
/// or `ConnectionResetError`, which `requests` reports as `ConnectionError`). A host that crashed
/// sends nothing: its callers hear nothing until their own timeout.
impl<Resp> Drop for Responder<Resp> {
    fn drop(&mut self) {
        let Some(boots) = self.tcp_boots else {
            return;
        };
        if self.settled || !self.world.same_life(self.server, boots) {
            return;
        }
        self.slot.reset.set(true);
        if let Some(w) = self.slot.waiter.take() {
            w.wake();
        }
    }
}

/// The fault shell in front of a simulated service (the split madsim and TigerBeetle use: an async
/// shell owning faults and timing before a synchronous state machine). For each request it applies
/// the service faults of its node: refuse it while unavailable, make it wait while slow, and draw
/// whether its answer is lost (ambiguous failures).
pub struct FaultShell {
    rng: rand_chacha::ChaCha8Rng,
}

impl FaultShell {
    /// A shell whose ambiguity draws come from the run's generator for `label`.
    pub fn new(world: &World, label: &str) -> Self {
        FaultShell {
            rng: crate::rng::rng_for(world.seed(), label),
        }
    }

    /// `None`: refuse the request (not applied). `Some(lost)`: serve it (after any slowness);
    /// `lost` says whether the caller must not get the answer.
    pub async fn admit(&mut self, proc: &crate::world::Proc) -> Option<bool> {
        let faults = proc.service_faults();
        if faults.unavailable {
            return None;
        }
        if faults.slow_us > 0 {
            proc.sleep(Duration::from_micros(faults.slow_us)).await;
        }
        Some(
            faults.ambiguous_percent > 0
                && self.rng.random_range(0..100) < faults.ambiguous_percent,
        )
    }
}

/// The address of a request/response service on a node. The server side calls [`Endpoint::open`]
/// at every boot; requests sent while it is down are lost.
pub struct Endpoint<Req, Resp> {
    node: NodeIx,
    inbox: Inbox<Req, Resp>,
    /// Calls behave as over TCP (see [`Endpoint::tcp`]).
    tcp: bool,
}

/// The sending side of a server's current inbox (none while it is down).
type Inbox<Req, Resp> = Rc<RefCell<Option<InboxTx<Call<Req, Resp>>>>>;

/// A server's inbox: the stream of requests sent to its endpoint since it opened it (see
/// [`Endpoint::open`]). It ends when the endpoint is opened again.
pub type Requests<Req, Resp> = InboxRx<Call<Req, Resp>>;

impl<Req, Resp> Clone for Endpoint<Req, Resp> {
    fn clone(&self) -> Self {
        Endpoint {
            node: self.node,
            inbox: self.inbox.clone(),
            tcp: self.tcp,
        }
    }
}

/// Why a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpcError {
    /// No response arrived in time (the request or the response was lost, or the server is down,
    /// paused or slow). The request may or may not have been applied.
    Timeout,
    /// The connection was refused or reset (TCP endpoints: the server's node came back from a
    /// crash, nothing listens, or the server's process ended holding the request on a host that
    /// stays up): the request was not applied.
    Reset,
}

/// TCP's first retransmission timeout (Linux `TCP_RTO_MIN`, 200 ms); it doubles at each
/// retransmission up to [`RTO_MAX`] (`TCP_RTO_MAX`, 120 s).
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// See [`RTO_MIN`].
pub const RTO_MAX: Duration = Duration::from_secs(120);

impl<Req, Resp> Endpoint<Req, Resp> {
    /// A service address on `node`.
    pub fn new(node: NodeIx) -> Self {
        Endpoint {
            node,
            inbox: Rc::new(RefCell::new(None)),
            tcp: false,
        }
    }

    /// A service address whose calls behave as requests over a TCP connection: a request or
    /// response that cannot get through (a cut link, a crashed node) is retransmitted with
    /// exponential backoff from [`RTO_MIN`] and arrives once the path works again, within the
    /// caller's timeout; a node that crashed and came back, or a node where nothing listens,
    /// answers with a reset ([`RpcError::Reset`]). A server process that ends holding a request
    /// while its host stays up has its connection closed by the kernel: the caller gets a reset
    /// at once (see [`Responder`]'s `Drop`). A server whose host crashes holding a request never
    /// answers: the caller times out. (A plain [`Endpoint::new`] loses what cannot get through.)
    pub fn tcp(node: NodeIx) -> Self {
        Endpoint {
            tcp: true,
            ..Self::new(node)
        }
    }

    /// The node serving it.
    pub fn node(&self) -> NodeIx {
        self.node
    }

    /// Opens a fresh inbox (dropping any previous one): the server loop reads requests from it.
    pub fn open(&self) -> Requests<Req, Resp> {
        let (tx, rx) = inbox();
        // The previous inbox's sender is dropped after the borrow ends (it wakes its reader).
        let old = self.inbox.borrow_mut().replace(tx);
        drop(old);
        rx
    }

    /// Sends `req` from `from` and waits up to `timeout` for the response.
    pub async fn call(
        &self,
        world: &World,
        from: NodeIx,
        caller: Rc<str>,
        req: Req,
        timeout: Duration,
    ) -> Result<Resp, RpcError> {
        crate::time::timeout(timeout, self.exchange(world, from, caller, req, None))
            .await
            .map_err(|_| RpcError::Timeout)?
            .map(|(resp, _)| resp)
    }

    /// Sends `req` from `from` and waits for the response with no timeout of its own, as an HTTP
    /// request made without one (`requests` waits for ever by default): it ends only with an
    /// answer or a reset, and never if the server's host crashed holding it.
    pub async fn call_untimed(
        &self,
        world: &World,
        from: NodeIx,
        caller: Rc<str>,
        req: Req,
    ) -> Result<Resp, RpcError> {
        self.exchange(world, from, caller, req, None)
            .await
            .map(|(resp, _)| resp)
    }

    /// One request and its answer (see [`Endpoint::call`]) on `conn` (`None`: a TCP connection
    /// of the server host's life when the request is sent, see [`Conn`]); with the answer, the
    /// boot number of the server's host in whose life the connection was opened.
    async fn exchange(
        &self,
        world: &World,
        from: NodeIx,
        caller: Rc<str>,
        req: Req,
        conn: Option<Conn>,
    ) -> Result<(Resp, u32), RpcError> {
        let to = self.node;
        crate::time::sleep(world.latency(from, to)).await;
        let conn = conn.unwrap_or_else(|| Conn::Open(world.boots(to)));
        let slot = Rc::new(ReplySlot {
            answer: RefCell::new(None),
            reset: Cell::new(false),
            waiter: Cell::new(None),
        });
        let call = |req| Call {
            caller: caller.clone(),
            from,
            req,
            reply: Responder {
                slot: slot.clone(),
                world: world.clone(),
                server: to,
                caller: from,
                tcp_boots: self.tcp.then(|| world.boots(to)),
                settled: false,
            },
        };
        let life = if self.tcp {
            Some(self.send_tcp(world, from, call(req), conn).await?)
        } else {
            self.deliver(world, from, call(req))
                .is_ok()
                .then(|| world.boots(to))
        };
        let Some(life) = life else {
            return futures::future::pending().await;
        };
        // The answer, once it has arrived; never if it is lost or the server never answers.
        // A connection the server's process closed without answering (TCP) ends the call with
        // a reset one network latency after it closed.
        let mut reset_at: Option<u64> = None;
        let resp = std::future::poll_fn(|cx| {
            let now = world.now_us();
            if slot.reset.get() {
                let at = *reset_at
                    .get_or_insert_with(|| now + world.latency(to, from).as_micros() as u64);
                if at <= now {
                    return Poll::Ready(Err(RpcError::Reset));
                }
                crate::time::wake_at(world.instant_at(at), cx.waker());
                return Poll::Pending;
            }
            let arrived = matches!(&*slot.answer.borrow(), Some((at, _)) if *at <= now);
            if arrived && (self.tcp || world.reachable(to, from)) {
                let (_, resp) = slot.answer.borrow_mut().take().expect("arrived");
                return Poll::Ready(Ok(resp));
            }
            if !arrived {
                slot.waiter.set(Some(cx.waker().clone()));
            }
            Poll::Pending
        })
        .await;
        if self.tcp {
            // The response (or the FIN) is retransmitted until the way back works.
            let mut rto = RTO_MIN;
            while !world.reachable(to, from) {
                crate::time::sleep(rto).await;
                rto = (rto * 2).min(RTO_MAX);
            }
        }
        resp.map(|r| (r, life))
    }

    /// Queues `call` at the server if the path works and the server listens; gives it back if not.
    fn deliver(
        &self,
        world: &World,
        from: NodeIx,
        call: Call<Req, Resp>,
    ) -> Result<(), Call<Req, Resp>> {
        if !(world.reachable(from, self.node) && world.node_up(self.node)) {
            return Err(call);
        }
        let sender = self.inbox.borrow().as_ref().map(|tx| tx.0.clone());
        match sender {
            Some(s) => s.send(call),
            None => Err(call),
        }
    }

    /// Sends over TCP (see [`Endpoint::tcp`]) on `conn`: retransmits until the path works;
    /// once queued at the server, the boot number of the life of its host the connection
    /// belongs to; Err(Reset) if the connection was opened in an earlier life of the server's
    /// host, or if nothing listens. A new connection ([`Conn::New`]) first retransmits its
    /// handshake (from [`SYN_RTO_INIT`]) and belongs to the life that answers it.
    async fn send_tcp(
        &self,
        world: &World,
        from: NodeIx,
        mut call: Call<Req, Resp>,
        conn: Conn,
    ) -> Result<u32, RpcError> {
        let mut rto = match conn {
            Conn::New => SYN_RTO_INIT,
            Conn::Open(_) => RTO_MIN,
        };
        loop {
            let through = world.reachable(from, self.node) && world.node_up(self.node);
            let life = world.boots(self.node);
            if through && matches!(conn, Conn::Open(b) if b != life) {
                return Err(RpcError::Reset);
            }
            match self.deliver(world, from, call) {
                Ok(()) => return Ok(life),
                Err(_) if through => return Err(RpcError::Reset),
                Err(back) => call = back,
            }
            crate::time::sleep(rto).await;
            rto = (rto * 2).min(RTO_MAX);
        }
    }
}

/// The sending half of a server-push stream (for example a watch). Items arrive in order, each
/// after a network delay; if the link is cut when an item would arrive, the stream breaks silently
/// and delivers nothing more (the receiver only notices through its own timeout). The sender arms
/// each item's arrival timer, so the receiving task is woken when an item arrives, not when it is
/// sent.
pub struct StreamTx<T> {
    world: World,
    shared: Rc<StreamShared<T>>,
    from: NodeIx,
    to: NodeIx,
    last_us: Cell<u64>,
}

/// The receiving half of a server-push stream.
pub struct StreamRx<T> {
    world: World,
    shared: Rc<StreamShared<T>>,
    from: NodeIx,
    to: NodeIx,
    broken: bool,
    /// TCP ([`stream_tcp`]): the retransmission timeout of the item held up by a cut link.
    tcp_rto: Option<Cell<Duration>>,
}

/// Items in flight or arrived and not yet read: (arrival µs, item), in order.
struct StreamShared<T> {
    queue: RefCell<std::collections::VecDeque<(u64, T)>>,
    sender_alive: Cell<bool>,
    receiver_alive: Cell<bool>,
    reader: Reader,
}

/// A stream from `from` (the server) to `to` (the client) over TCP: an item that finds the link cut
/// is retransmitted (backoff from [`RTO_MIN`]) and arrives once the link heals; nothing breaks the
/// stream but its sender going away (a server that crashed: the client is never told).
pub fn stream_tcp<T>(world: &World, from: NodeIx, to: NodeIx) -> (StreamTx<T>, StreamRx<T>) {
    let (tx, mut rx) = stream(world, from, to);
    rx.tcp_rto = Some(Cell::new(RTO_MIN));
    (tx, rx)
}

/// A stream from `from` (the server) to `to` (the client).
pub fn stream<T>(world: &World, from: NodeIx, to: NodeIx) -> (StreamTx<T>, StreamRx<T>) {
    let shared = Rc::new(StreamShared {
        queue: RefCell::default(),
        sender_alive: Cell::new(true),
        receiver_alive: Cell::new(true),
        reader: Reader::new(),
    });
    (
        StreamTx {
            world: world.clone(),
            shared: shared.clone(),
            from,
            to,
            last_us: Cell::new(0),
        },
        StreamRx {
            world: world.clone(),
            shared,
            from,
            to,
            broken: false,
            tcp_rto: None,
        },
    )
}

impl<T> StreamTx<T> {
    /// Sends an item; false if the receiver is gone (the client dropped the stream).
    pub fn send(&self, item: T) -> bool {
        if !self.shared.receiver_alive.get() {
            return false;
        }
        let at = (self.world.now_us() + self.world.latency(self.from, self.to).as_micros() as u64)
            .max(self.last_us.get());
        self.last_us.set(at);
        self.shared.queue.borrow_mut().push_back((at, item));
        self.shared.reader.wake_at(&self.world, at);
        true
    }

    /// Whether the receiver has gone away.
    pub fn is_closed(&self) -> bool {
        !self.shared.receiver_alive.get()
    }
}

impl<T> Drop for StreamTx<T> {
    fn drop(&mut self) {
        // Items already on the wire still arrive; then the stream is broken.
        self.shared.sender_alive.set(false);
    }
}

impl<T> StreamRx<T> {
    /// Whether nothing can come any more: the stream broke, or its sender is gone and nothing is
    /// left in flight.
    pub fn is_dead(&self) -> bool {
        self.broken || (!self.shared.sender_alive.get() && self.shared.queue.borrow().is_empty())
    }

    /// The next item. Never returns once the stream is broken or its sender is gone: callers
    /// bound it with a timeout, as real clients do.
    pub async fn next(&mut self) -> T {
        std::future::poll_fn(|cx| {
            if self.broken {
                return Poll::Pending;
            }
            let now = self.world.now_us();
            let arrived = match self.shared.queue.borrow().front() {
                Some((at, _)) => *at <= now,
                None => {
                    // A sender gone with nothing left in flight: nothing will ever come.
                    self.broken = !self.shared.sender_alive.get();
                    false
                }
            };
            if !arrived {
                if !self.broken {
                    self.shared.reader.wait(cx);
                }
                return Poll::Pending;
            }
            if let Some(rto) = &self.tcp_rto {
                if !self.world.reachable(self.from, self.to) {
                    // Held up: the next retransmission may get through.
                    let wait = rto.get();
                    rto.set((wait * 2).min(RTO_MAX));
                    self.shared.reader.wait(cx);
                    self.shared
                        .reader
                        .wake_at(&self.world, now + wait.as_micros() as u64);
                    return Poll::Pending;
                }
                rto.set(RTO_MIN);
            }
            let (_, item) = self.shared.queue.borrow_mut().pop_front().expect("arrived");
            if !self.world.reachable(self.from, self.to) {
                self.broken = true;
                self.shared.queue.borrow_mut().clear();
                return Poll::Pending;
            }
            Poll::Ready(item)
        })
        .await
    }
}

impl<T> Drop for StreamRx<T> {
    fn drop(&mut self) {
        self.shared.receiver_alive.set(false);
        self.shared.queue.borrow_mut().clear();
    }
}

/// A node's UDP-like inbox. A datagram arrives after its own latency (so a later, faster one can
/// overtake it); it is lost if the link is cut or the node is down when it would arrive, or if
/// nobody listens (the receiving service has not opened the inbox since the node booted). Nothing
/// is retransmitted and the sender learns nothing: the protocol above must time out on its own.
///
/// One task reads an inbox. The sender arms the timer for the datagram's arrival, so the reader
/// is woken once per datagram, when it arrives (and not also when it is queued).
pub struct Datagrams<T>(Rc<DatagramsInner<T>>);

struct DatagramsInner<T> {
    node: NodeIx,
    /// Datagrams on the wire, delivered in arrival order (ties: sending order). A heap, which
    /// does less work per datagram than the sorted map it replaced.
    queue: RefCell<std::collections::BinaryHeap<Queued<T>>>,
    seq: Cell<u64>,
    listening: Cell<bool>,
    reader: Reader,
}

/// A datagram on the wire. Ordered so that the heap's top is the earliest arrival (the earliest
/// sent among those arriving at the same instant): `BinaryHeap` is a max-heap.
struct Queued<T> {
    at: u64,
    seq: u64,
    from: NodeIx,
    item: T,
}

impl<T> Queued<T> {
    fn key(&self) -> std::cmp::Reverse<(u64, u64)> {
        std::cmp::Reverse((self.at, self.seq))
    }
}

impl<T> PartialEq for Queued<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Queued<T> {}

impl<T> PartialOrd for Queued<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Queued<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl<T> Clone for Datagrams<T> {
    fn clone(&self) -> Self {
        Datagrams(self.0.clone())
    }
}

impl<T> Datagrams<T> {
    /// The inbox of `node` (closed until its service opens it).
    pub fn new(node: NodeIx) -> Self {
        Datagrams(Rc::new(DatagramsInner {
            node,
            queue: RefCell::default(),
            seq: Cell::new(0),
            listening: Cell::new(false),
            reader: Reader::new(),
        }))
    }

    /// The node it belongs to.
    pub fn node(&self) -> NodeIx {
        self.0.node
    }

    /// Starts listening (call at every boot): datagrams queued for an earlier life are dropped.
    pub fn open(&self) {
        self.0.queue.borrow_mut().clear();
        self.0.listening.set(true);
    }

    /// Sends `item` from the node of `proc`; it is on the wire at once.
    pub fn send(&self, proc: &crate::world::Proc, item: T) {
        let (world, from) = (proc.world(), proc.node());
        let at = world.now_us() + world.datagram_latency(from, self.0.node).as_micros() as u64;
        if !self.0.listening.get() || world.datagram_lost(from, self.0.node) {
            return;
        }
        let seq = self.0.seq.get();
        self.0.seq.set(seq + 1);
        self.0.queue.borrow_mut().push(Queued {
            at,
            seq,
            from,
            item,
        });
        // At its arrival (at least 1 ms from now, as any sleep) the reader looks again.
        self.0.reader.wake_at(world, at);
    }

    /// The next datagram that gets through: (sender, payload).
    pub async fn recv(&self, proc: &crate::world::Proc) -> (NodeIx, T) {
        let world = proc.world();
        std::future::poll_fn(|cx| loop {
            let first = self.0.queue.borrow().peek().map(|q| q.at);
            match first {
                Some(at) if at <= world.now_us() => {
                    let Queued { from, item, .. } = self.0.queue.borrow_mut().pop().unwrap();
                    if world.reachable(from, self.0.node) && world.node_up(self.0.node) {
                        return Poll::Ready((from, item));
                    }
                }
                // Nothing has arrived: the timer of the next arrival wakes this task.
                _ => {
                    self.0.reader.wait(cx);
                    return Poll::Pending;
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_leave_the_wire_by_arrival_then_sending_order() {
        // (arrival, sequence) pushed out of order, with ties on arrival.
        let sent = [(30, 0), (10, 1), (20, 2), (10, 3), (30, 4), (5, 5)];
        let mut heap: std::collections::BinaryHeap<Queued<u64>> = sent
            .iter()
            .map(|&(at, seq)| Queued {
                at,
                seq,
                from: 0,
                item: seq,
            })
            .collect();
        let mut out = Vec::new();
        while let Some(q) = heap.pop() {
            out.push((q.at, q.item));
        }
        assert_eq!(out, [(5, 5), (10, 1), (10, 3), (20, 2), (30, 0), (30, 4)]);
    }
}
