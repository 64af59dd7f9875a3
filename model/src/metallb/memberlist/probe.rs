//! Probing, the failure detector: one member per [`PROBE_INTERVAL`] round robin over a shuffled
//! list, a direct ping, then indirect pings through [`INDIRECT_CHECKS`] alive members until the
//! end of the interval, and suspicion if no ack came; and the acks this member awaits, for its own
//! probe or for an indirect ping it forwards.

use super::*;

/// Who waits for an ack.
enum AckWaiter {
    /// A probe of ours (it waits on [`Memberlist::probe_wait`]).
    Local,
    /// An indirect probe we run for `to`: forward the ack with its sequence number.
    Forward { to: NodeIx, seq: u32, since_us: u64 },
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

/// The probe under way: its sequence number, whether its ack came, and the probing task's waker
/// (what a oneshot channel would hold, without allocating one per probe).
#[derive(Default)]
pub(super) struct ProbeWait {
    seq: Option<u32>,
    acked: bool,
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
    /// An indirect ping: ping `target` (`name`) for the member at `from`, and forward its ack
    /// under `seq`.
    pub(super) fn forward_indirect_ping(&self, from: NodeIx, seq: u32, target: NodeIx, name: Name) {
        let mine = self.next_seq();
        let now = self.now();
        let mut acks = self.acks.borrow_mut();
        // Forgotten forwards (their probe ended long ago) are dropped.
        let probing = self.probe_wait.borrow().seq;
        acks.0.retain(|(s, w)| match w {
            AckWaiter::Forward { since_us, .. } => now - *since_us < 5_000_000,
            AckWaiter::Local => probing == Some(*s),
        });
        acks.insert(
            mine,
            AckWaiter::Forward {
                to: from,
                seq,
                since_us: now,
            },
        );
        drop(acks);
        self.send(
            target,
            Packet::Ping {
                seq: mine,
                target: name,
            },
        );
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
            Some(AckWaiter::Forward { to, seq, .. }) => self.send(to, Packet::Ack { seq }),
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

    async fn probe(&self, target: NodeState) {
        let start = self.now();
        let seq = self.next_seq();
        let _waiting = ProbeGuard::new(self, seq);
        self.acks.borrow_mut().insert(seq, AckWaiter::Local);
        self.send(
            target.addr,
            Packet::Ping {
                seq,
                target: target.name,
            },
        );
        let acked = sim::time::timeout(PROBE_TIMEOUT, self.ack()).await.is_ok();
        if !acked {
            let helpers = self.random_members(INDIRECT_CHECKS, |m| {
                m.st.state == State::Alive && m.st.name != target.name
            });
            for h in &helpers {
                self.send(
                    h.addr,
                    Packet::IndirectPing {
                        seq,
                        target: target.addr,
                        name: target.name,
                    },
                );
            }
            let left = (start + PROBE_INTERVAL.as_micros() as u64).saturating_sub(self.now());
            let acked = sim::time::timeout(Duration::from_micros(left), self.ack())
                .await
                .is_ok();
            self.acks.borrow_mut().remove(seq);
            if !acked {
                self.suspect_node(target.name, target.incarnation, self.name);
            }
        }
    }
}
