//! Small single-threaded synchronisation primitives for code running inside one simulation.
//!
//! A whole run executes on one OS thread (madsim's executor), so these use `Rc`/`Cell` rather than
//! atomics. They are runtime-agnostic futures; timers come from madsim.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::rc::Rc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// A broadcast "something changed" signal: waiters learn that the generation moved on.
#[derive(Clone, Default)]
pub struct Notify {
    inner: Rc<NotifyInner>,
}

#[derive(Default)]
struct NotifyInner {
    generation: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Notify {
    /// A fresh signal at generation 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current generation; pass it to [`Notify::changed_since`].
    pub fn generation(&self) -> u64 {
        self.inner.generation.get()
    }

    /// Advance the generation and wake every waiter.
    pub fn notify(&self) {
        self.inner.generation.set(self.inner.generation.get() + 1);
        for w in self.inner.wakers.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Resolves once the generation differs from `seen`.
    pub fn changed_since(&self, seen: u64) -> Changed {
        Changed {
            notify: self.clone(),
            seen,
        }
    }
}

/// Future returned by [`Notify::changed_since`].
pub struct Changed {
    notify: Notify,
    seen: u64,
}

impl Future for Changed {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.notify.generation() != self.seen {
            return Poll::Ready(());
        }
        let mut wakers = self.notify.inner.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Wraps a future that is only ever polled on the simulation's single thread so that madsim's
/// `NodeHandle::spawn` (which asks for `Send`) accepts it.
pub(crate) struct AssertSend<F>(pub F);

// SAFETY: a run's runtime, world and every task live on the one OS thread that calls `block_on`;
// madsim's executor never moves a task to another thread, and the future is dropped on that thread
// when the runtime is dropped.
unsafe impl<F> Send for AssertSend<F> {}

impl<F: Future> Future for AssertSend<F> {
    type Output = F::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning of the only field.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }.poll(cx)
    }
}

/// A waker of its own that passes each wake-up on to the task last registered with it: what a
/// madsim timer's callback (which holds a `Waker`, `Send + Sync` by type) wakes when the task to
/// wake may change before the timer goes off (whichever task last polled a sleep, or last waited at
/// an inbox), or when the wake-up must be able to go nowhere (a sleep dropped before its timer).
///
/// `futures`' `ArcWake` with an `AtomicWaker` inside does this with an `Arc`: every clone, wake-up
/// and drop of its waker, and every registration, is an atomic read-modify-write (5-9 ns each on
/// the machines measured, several per timer). A run's tasks and timers all execute on the thread
/// that runs its madsim runtime, so a relay counts its references and keeps the task's waker in
/// plain cells. It remembers the thread that made it, and every use of it or of its waker checks
/// that it runs there and panics otherwise, before touching a cell: that is what makes the `Waker`
/// it hands out sound to send or share. `Relay` itself is neither `Send` nor `Sync`.
pub struct Relay(NonNull<RelayCell>);

struct RelayCell {
    /// The thread that made it (see [`thread_tag`]).
    owner: usize,
    /// References: the `Relay` handles and the wakers made from them.
    refs: Cell<usize>,
    /// The task to wake next.
    slot: Cell<Option<Waker>>,
    /// Wake-ups go nowhere from now on.
    closed: Cell<bool>,
    /// A wake-up came.
    woken: Cell<bool>,
}

/// The address of a thread-local: distinct among live threads.
fn thread_tag() -> usize {
    thread_local! {
        static TAG: u8 = const { 0 };
    }
    TAG.with(|t| t as *const u8 as usize)
}

/// Relays no longer referenced, kept for the thread's next ones (an allocation saved per sleep; a
/// spare relay holds nothing, so reuse is invisible). Freed with the thread.
struct Spares(Vec<NonNull<RelayCell>>);

/// Spare relays kept per thread at most (a burst of finished sleeps cannot grow the list without
/// limit; beyond it a relay is freed).
const SPARE_MAX: usize = 64;

impl Drop for Spares {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            // SAFETY: a spare cell is owned by the list alone (no references remain).
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

thread_local! {
    static SPARES: RefCell<Spares> = const { RefCell::new(Spares(Vec::new())) };
}

/// Spare relays on this thread (for tests of the reuse).
#[cfg(test)]
pub(crate) fn spare_relays() -> usize {
    SPARES.with(|s| s.borrow().0.len())
}

impl RelayCell {
    fn check(&self) {
        assert_eq!(
            self.owner,
            thread_tag(),
            "a relay was used from a thread other than its simulation's"
        );
    }

    fn wake(&self) {
        self.woken.set(true);
        if !self.closed.get() {
            if let Some(w) = self.slot.take() {
                w.wake();
            }
        }
    }
}

/// Drops one reference to the cell at `p`; the last one spares or frees it.
///
/// # Safety
/// `p` is a live cell and the caller gives up one of its references.
unsafe fn release(p: NonNull<RelayCell>) {
    // SAFETY: live, as the caller holds a reference.
    let c = unsafe { p.as_ref() };
    c.check();
    let refs = c.refs.get() - 1;
    c.refs.set(refs);
    if refs > 0 {
        return;
    }
    drop(c.slot.take());
    c.closed.set(false);
    c.woken.set(false);
    let spared = SPARES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            if s.0.len() < SPARE_MAX {
                s.0.push(p);
                true
            } else {
                false
            }
        })
        .unwrap_or(false);
    if !spared {
        // SAFETY: the last reference is gone, and no list holds it.
        drop(unsafe { Box::from_raw(p.as_ptr()) });
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(vt_clone, vt_wake, vt_wake_by_ref, vt_drop);

unsafe fn vt_clone(p: *const ()) -> RawWaker {
    // SAFETY: `p` is a live cell (the waker being cloned holds a reference to it).
    let c = unsafe { &*(p as *const RelayCell) };
    c.check();
    c.refs.set(c.refs.get() + 1);
    RawWaker::new(p, &VTABLE)
}

unsafe fn vt_wake(p: *const ()) {
    // SAFETY: as above; the waker's reference is given up after the wake-up.
    unsafe {
        vt_wake_by_ref(p);
        vt_drop(p);
    }
}

unsafe fn vt_wake_by_ref(p: *const ()) {
    // SAFETY: as above.
    let c = unsafe { &*(p as *const RelayCell) };
    c.check();
    c.wake();
}

unsafe fn vt_drop(p: *const ()) {
    // SAFETY: the waker being dropped gives up its reference.
    unsafe { release(NonNull::new_unchecked(p as *mut RelayCell)) }
}

impl Default for Relay {
    fn default() -> Self {
        Self::new()
    }
}

impl Relay {
    /// A relay bound to the calling thread, with no task registered.
    pub fn new() -> Self {
        let spare = SPARES.try_with(|s| s.borrow_mut().0.pop()).ok().flatten();
        let p = spare.unwrap_or_else(|| {
            NonNull::from(Box::leak(Box::new(RelayCell {
                owner: thread_tag(),
                refs: Cell::new(0),
                slot: Cell::new(None),
                closed: Cell::new(false),
                woken: Cell::new(false),
            })))
        });
        let r = Relay(p);
        r.cell().refs.set(1);
        r
    }

    fn cell(&self) -> &RelayCell {
        // SAFETY: this handle holds a reference, so the cell is live.
        let c = unsafe { self.0.as_ref() };
        c.check();
        c
    }

    /// The task of `waker` is the one to wake next (the waker it has is kept if that one would
    /// wake the same task).
    pub fn register(&self, waker: &Waker) {
        let slot = &self.cell().slot;
        match slot.take() {
            Some(w) if w.will_wake(waker) => slot.set(Some(w)),
            _ => slot.set(Some(waker.clone())),
        }
    }

    /// Wakes the registered task, if any and unless closed (once: the waker is used up).
    pub fn wake(&self) {
        self.cell().wake();
    }

    /// Whether a wake-up has come (through [`Relay::wake`] or a waker of it).
    pub fn woken(&self) -> bool {
        self.cell().woken.get()
    }

    /// From now on wake-ups go nowhere; the registered waker is dropped.
    pub fn close(&self) {
        let c = self.cell();
        c.closed.set(true);
        drop(c.slot.take());
    }

    /// Its waker, lent: a clone (madsim's timer keeps one) takes a reference.
    pub fn waker(&self) -> futures::task::WakerRef<'_> {
        let raw = RawWaker::new(self.cell() as *const RelayCell as *const (), &VTABLE);
        // SAFETY: the vtable's functions keep the contract of `RawWaker` for a cell that this
        // handle keeps alive while the lent waker exists; being lent, it is never dropped.
        let waker = unsafe { Waker::from_raw(raw) };
        futures::task::WakerRef::new_unowned(std::mem::ManuallyDrop::new(waker))
    }
}

impl Clone for Relay {
    fn clone(&self) -> Self {
        let c = self.cell();
        c.refs.set(c.refs.get() + 1);
        Relay(self.0)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // SAFETY: this handle holds a reference, given up here.
        unsafe { release(self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    struct Count(AtomicU32);

    impl futures::task::ArcWake for Count {
        fn wake_by_ref(arc: &Arc<Self>) {
            arc.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn counted() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicU32::new(0)));
        (c.clone(), futures::task::waker(c))
    }

    fn count(c: &Count) -> u32 {
        c.0.load(Ordering::Relaxed)
    }

    #[test]
    fn a_relay_wakes_the_last_registered_task_once() {
        let ((a, wa), (b, wb)) = (counted(), counted());
        let r = Relay::new();
        r.wake(); // nobody registered: nothing happens, but it was woken
        assert!(r.woken());
        r.register(&wa);
        r.register(&wb);
        let w = r.waker().clone();
        w.wake_by_ref();
        w.wake_by_ref(); // used up
        assert_eq!((count(&a), count(&b)), (0, 1));
        r.register(&wa);
        w.wake(); // through a waker given up as it wakes
        assert_eq!((count(&a), count(&b)), (1, 1));
        r.register(&wb);
        r.close();
        r.wake();
        r.register(&wb);
        r.waker().wake_by_ref();
        assert_eq!(
            (count(&a), count(&b)),
            (1, 1),
            "a closed relay wakes nobody"
        );
    }

    #[test]
    fn a_relay_is_reused_once_its_last_reference_is_gone() {
        let at = |r: &Relay| r.waker().data();
        let r = Relay::new();
        let first = at(&r);
        // madsim's timer keeps a clone of the waker: the relay lives on without its handle.
        let kept = r.waker().clone();
        drop(r);
        let other = Relay::new();
        assert_ne!(at(&other), first);
        kept.wake();
        let again = Relay::new();
        assert_eq!(at(&again), first, "the spare is reused");
        assert!(!again.woken(), "and starts afresh");
        let (a, wa) = counted();
        again.register(&wa);
        again.wake();
        assert_eq!(count(&a), 1);
    }

    #[test]
    fn a_relay_refuses_other_threads() {
        let r = Relay::new();
        let (a, wa) = counted();
        r.register(&wa);
        let w = r.waker().clone();
        let refused = std::thread::spawn(move || {
            let woke = std::panic::catch_unwind(|| w.wake_by_ref()).is_err();
            let cloned = std::panic::catch_unwind(|| drop(w.clone())).is_err();
            // Dropping it here would panic too; hand it back instead.
            (woke, cloned, w)
        })
        .join()
        .expect("the thread itself ends");
        assert!(refused.0, "a wake-up from another thread must panic");
        assert!(refused.1, "a clone on another thread must panic");
        assert_eq!(count(&a), 0, "and reach nothing");
        // It still works on its own thread.
        refused.2.wake();
        assert_eq!(count(&a), 1);
    }
}
