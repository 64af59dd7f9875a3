//! Probing, the failure detector (memberlist v0.5.1 state.go `probe` l. 232-274, `probeNode`
//! l. 306-524): one member per [`PROBE_INTERVAL`] round robin over a shuffled list, a direct ping,
//! then indirect pings through [`INDIRECT_CHECKS`] alive members and a TCP ping until the end of
//! the awareness-scaled interval, and suspicion if no ack came; and the acks (and nacks) this
//! member awaits, for its own probe or for an indirect ping it forwards.

use super::*;
use futures::future::Either;
use rand::seq::SliceRandom;

#[cfg(test)]
mod tests;

/// Who waits for an ack.
enum AckWaiter {
    /// A probe of ours (it waits on [`Memberlist::probe_wait`]).
    Local,
    /// An indirect probe we run for `to`: forward the ack with its sequence number.
    Forward { to: NodeIx, seq: u32 },
}

/// The acks a member awaits: (sequence number, waiter) pairs with distinct numbers, in no
/// particular order (nothing iterates them in order).
#[derive(Default)]
pub(super) struct Acks(Vec<(u32, AckWaiter)>);

impl Acks {
    /// Awaits `seq` (replacing a waiter for the same number, as a map would).
    fn insert(&mut self, seq: u32, w: AckWaiter) {
        match self.0.iter_mut().find(|(s, _)| *s == seq) {
            Some(slot) => slot.1 = w,
            None => self.0.push((seq, w)),
        }
    }

    /// Stops awaiting `seq`, returning its waiter.
    fn remove(&mut self, seq: u32) -> Option<AckWaiter> {
        let i = self.0.iter().position(|(s, _)| *s == seq)?;
        Some(self.0.swap_remove(i).1)
    }
}

/// The probe under way: its sequence number, whether its ack came, how many nacks came, and the
/// probing task's waker (what a oneshot channel would hold, without allocating one per probe).
#[derive(Default)]
pub(super) struct ProbeWait {
    seq: Option<u32>,
    acked: bool,
    nacks: usize,
    waker: Option<std::task::Waker>,
}

/// Marks a probe as under way for as long as it lives (a probe dropped with its task is no longer
/// waited for: its ack wakes nobody, and an indirect ping's clean-up forgets its entry).
struct ProbeGuard<'a>(&'a Memberlist);

impl<'a> ProbeGuard<'a> {
    fn new(ml: &'a Memberlist, seq: u32) -> Self {
        *ml.probe_wait.borrow_mut() = ProbeWait {
            seq: Some(seq),
            ..Default::default()
        };
        ProbeGuard(ml)
    }
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        *self.0.probe_wait.borrow_mut() = ProbeWait::default();
    }
}

impl Memberlist {
    /// An indirect ping (v0.5.1 net.go `handleIndirectPing` l. 584-664): ping `target` for the
    /// member at `from` and forward its ack under `seq`. The ack is awaited for [`PROBE_TIMEOUT`]
    /// (`setAckHandler` reaps it then, state.go l. 874-887); if none came and a nack was asked
    /// for, a nack goes back to the requester (net.go `handleIndirectPing` l. 646-663).
    pub(super) fn forward_indirect_ping(
        this: &Rc<Memberlist>,
        from: NodeIx,
        seq: u32,
        (target, name): (NodeIx, Name),
        nack: bool,
    ) {
        let mine = this.next_seq();
        this.acks
            .borrow_mut()
            .insert(mine, AckWaiter::Forward { to: from, seq });
        this.send_msg(
            target,
            Packet::Ping {
                seq: mine,
                target: name,
                suspect: None,
            },
        );
        let m = this.clone();
        this.proc.spawn("indirect-ping", async move {
            m.proc.sleep(PROBE_TIMEOUT).await;
            // Still awaited: no ack came (an ack removes the entry).
            if m.acks.borrow_mut().remove(mine).is_some() && nack {
                m.send_msg(from, Packet::Nack { seq });
            }
        });
    }

    /// A nack for the probe under way (`invokeNackHandler`, v0.5.1 state.go l. 902-911); a nack
    /// for an earlier probe finds no handler.
    pub(super) fn nack_received(&self, seq: u32) {
        let mut w = self.probe_wait.borrow_mut();
        if w.seq == Some(seq) {
            w.nacks += 1;
        }
    }

    /// An ack: wakes our probe waiting for it, or forwards it to whom we pinged for.
    pub(super) fn ack_received(&self, seq: u32) {
        match self.acks.borrow_mut().remove(seq) {
            Some(AckWaiter::Local) => {
                let mut w = self.probe_wait.borrow_mut();
                if w.seq == Some(seq) {
                    w.acked = true;
                    if let Some(k) = w.waker.take() {
                        k.wake();
                    }
                }
            }
            Some(AckWaiter::Forward { to, seq, .. }) => self.send_msg(to, Packet::Ack { seq }),
            None => {}
        }
    }

    /// Until the ack of the probe under way has come.
    fn ack(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            let mut w = self.probe_wait.borrow_mut();
            if w.acked {
                return std::task::Poll::Ready(());
            }
            match &w.waker {
                Some(k) if k.will_wake(cx.waker()) => {}
                _ => w.waker = Some(cx.waker().clone()),
            }
            std::task::Poll::Pending
        })
    }

    fn next_seq(&self) -> u32 {
        let s = self.seq.get().wrapping_add(1);
        self.seq.set(s);
        s
    }

    pub(super) async fn probe_loop(&self) {
        self.stagger(PROBE_INTERVAL).await;
        loop {
            let start = self.now();
            if let Some(target) = self.next_probe_target() {
                self.probe(target).await;
            }
            let spent = Duration::from_micros(self.now() - start);
            self.proc.sleep(PROBE_INTERVAL.saturating_sub(spent)).await;
        }
    }

    fn next_probe_target(&self) -> Option<NodeState> {
        let rounds = self.order.borrow().len() + 1;
        for _ in 0..rounds {
            if self.probe_ix.get() >= self.order.borrow().len() {
                self.reset_nodes();
                self.probe_ix.set(0);
                if self.order.borrow().is_empty() {
                    return None;
                }
            }
            let order = self.order.borrow();
            let name = &order[self.probe_ix.get()];
            self.probe_ix.set(self.probe_ix.get() + 1);
            if *name == self.name {
                continue;
            }
            match self.members.borrow().get(name) {
                Some(m) if m.st.state.is_member() => return Some(m.st),
                _ => continue,
            }
        }
        None
    }

    /// memberlist's `resetNodes`: forget members dead for [`GOSSIP_TO_THE_DEAD`], reshuffle.
    fn reset_nodes(&self) {
        let now = self.now();
        let retention = GOSSIP_TO_THE_DEAD.as_micros() as u64;
        let gone: Vec<(Name, u32)> = self
            .members
            .borrow()
            .values()
            .filter(|m| {
                matches!(m.st.state, State::Dead | State::Left) && now - m.change_us >= retention
            })
            .map(|m| (m.st.name, m.st.incarnation))
            .collect();
        for &(name, inc) in &gone {
            self.members.borrow_mut().remove(&name);
            self.emit(name, "forgotten", inc);
        }
        let mut order = self.order.borrow_mut();
        order.clear();
        order.extend(self.members.borrow().keys().copied());
        order.shuffle(&mut *self.rng.borrow_mut());
    }

    /// `probeNode` (v0.5.1 state.go l. 306-524). The probe waits for indirect acks until the
    /// awareness-scaled interval (the ack handler's timeout, l. 312, 328, 487-492) is over; the
    /// probe loop's ticker stays at [`PROBE_INTERVAL`], so a slow probe is followed by the next at
    /// once (l. 309-311). The health score falls by one for a probe answered (by UDP, directly or
    /// indirectly, or by the TCP fallback) and rises by the nacks missing, or by one if no helper
    /// was asked (l. 384-389, 504-518).
    async fn probe(&self, target: NodeState) {
        let interval = self.awareness.scale(PROBE_INTERVAL);
        let start = self.now();
        let seq = self.next_seq();
        let _waiting = ProbeGuard::new(self, seq);
        {
            let mut acks = self.acks.borrow_mut();
            // Entries of probes whose task was dropped mid-way are nobody's.
            acks.0
                .retain(|(_, w)| matches!(w, AckWaiter::Forward { .. }));
            acks.insert(seq, AckWaiter::Local);
        }
        // A suspect is pinged with the suspicion attached and nothing else (l. 337-382); an alive
        // member's ping carries the queued broadcasts (`encodeAndSendMsg`).
        let suspect = (target.state != State::Alive).then_some(Broadcast::Suspect {
            name: target.name,
            inc: target.incarnation,
            from: self.name,
        });
        let ping = Packet::Ping {
            seq,
            target: target.name,
            suspect,
        };
        match suspect {
            Some(_) => self.send(target.addr, ping),
            None => self.send_msg(target.addr, ping),
        }
        if sim::time::timeout(PROBE_TIMEOUT, self.ack()).await.is_ok() {
            self.awareness.apply_delta(-1);
            return;
        }
        let helpers = self.random_members(INDIRECT_CHECKS, |m| {
            m.st.state == State::Alive && m.st.name != target.name
        });
        for h in &helpers {
            let ping = Packet::IndirectPing {
                seq,
                target: target.addr,
                name: target.name,
                nack: true,
            };
            self.send_msg(h.addr, ping);
        }
        let left =
            Duration::from_micros((start + interval.as_micros() as u64).saturating_sub(self.now()));
        let answered = self.indirect_or_tcp(target, seq, left).await;
        self.acks.borrow_mut().remove(seq);
        if answered {
            self.awareness.apply_delta(-1);
            return;
        }
        let expected = helpers.len();
        let delta = match expected {
            0 => 1,
            _ => expected.saturating_sub(self.probe_wait.borrow().nacks),
        };
        self.awareness.apply_delta(delta as i32);
        self.suspect_node(target.name, target.incarnation, self.name);
    }

    /// Waits `left` for a UDP ack (direct or forwarded) while a TCP ping to the target runs
    /// alongside (v0.5.1 state.go `probeNode` l. 451-502: every peer speaks protocol version 5 and
    /// `DisableTcpPings` is false in `DefaultLANConfig`, config.go l. 319); whether either answered.
    async fn indirect_or_tcp(&self, target: NodeState, seq: u32, left: Duration) -> bool {
        let ack = std::pin::pin!(sim::time::timeout(left, self.ack()));
        let tcp = std::pin::pin!(self.tcp_ping(target, seq, left));
        match futures::future::select(ack, tcp).await {
            Either::Left((Ok(()), _)) => true,
            // Both end at the deadline: the fallback's result is ready or nearly so.
            Either::Left((Err(_), tcp)) => tcp.await,
            Either::Right((contact, ack)) => ack.await.is_ok() || contact,
        }
    }

    /// `sendPingAndWaitForAck` (v0.5.1 net.go l. 1331-1375): a ping over TCP, answered before
    /// the deadline `left` from now.
    async fn tcp_ping(&self, target: NodeState, seq: u32, left: Duration) -> bool {
        let Some(ep) = self.peers.tcp.get(&target.addr) else {
            return false;
        };
        let req = TcpReq::Ping {
            seq,
            target: target.name,
        };
        matches!(
            self.proc.call(ep, req, left).await,
            Ok(TcpResp::Ack(Some(s))) if s == seq
        )
    }
}
