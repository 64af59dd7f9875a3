//! Small single-threaded synchronisation primitives for code running inside one simulation.
//!
//! A whole run executes on one OS thread (madsim's executor), so these use `Rc`/`Cell` rather than
//! atomics. They are runtime-agnostic futures; timers come from madsim.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

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

/// A slot for the waker of the task that waits on something, for a wake-up that must reach it
/// through a `Waker` of its own (a madsim timer's callback is `Send + Sync`, so it holds an
/// `Arc`-based waker): `futures`' `AtomicWaker` without the atomic operations.
///
/// A run's tasks and timers all execute on the thread that runs its madsim runtime, so the slot
/// is only ever used there; it remembers that thread and panics if used from another, which makes
/// sharing it between threads (`Sync`) sound. The atomic read-modify-writes it saves (two or three
/// per registration and per wake-up, on every sleep and message arrival) cost more time than
/// their instruction count suggests: measured, 3-7 % of a run's CPU time.
pub struct ThreadWaker {
    /// The thread that created it (the address of a thread-local: distinct among live threads).
    owner: usize,
    slot: RefCell<Option<Waker>>,
}

// SAFETY: `slot` is the only field that is not `Sync`, and every method that reaches it through
// `&self` first checks that the caller runs on `owner`, the thread that created it (panicking
// otherwise, before touching it). So it is only ever accessed from one thread. Dropping needs
// `&mut self`, which excludes every other access. (`Send` holds without help: a `Waker` is `Send`.)
unsafe impl Sync for ThreadWaker {}

fn thread_tag() -> usize {
    thread_local! {
        static TAG: u8 = const { 0 };
    }
    TAG.with(|t| t as *const u8 as usize)
}

impl Default for ThreadWaker {
    fn default() -> Self {
        Self::new()
    }
}

impl ThreadWaker {
    /// An empty slot, bound to the calling thread.
    pub fn new() -> Self {
        ThreadWaker {
            owner: thread_tag(),
            slot: RefCell::new(None),
        }
    }

    fn check(&self) {
        assert_eq!(
            self.owner,
            thread_tag(),
            "a ThreadWaker was used from a thread other than its simulation's"
        );
    }

    /// The task of `waker` is the one to wake next (keeps the waker it has if that one would wake
    /// the same task).
    pub fn register(&self, waker: &Waker) {
        self.check();
        let mut slot = self.slot.borrow_mut();
        match &*slot {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    /// Takes the registered waker out.
    pub fn take(&self) -> Option<Waker> {
        self.check();
        self.slot.borrow_mut().take()
    }

    /// Wakes the registered task, if any (once: the waker is used up).
    pub fn wake(&self) {
        if let Some(w) = self.take() {
            w.wake();
        }
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

    #[test]
    fn a_thread_waker_wakes_the_last_registered_task_once() {
        let (a, b) = (
            Arc::new(Count(AtomicU32::new(0))),
            Arc::new(Count(AtomicU32::new(0))),
        );
        let w = ThreadWaker::new();
        w.wake(); // nobody registered: nothing happens
        w.register(&futures::task::waker(a.clone()));
        w.register(&futures::task::waker(b.clone()));
        w.wake();
        w.wake(); // used up
        assert_eq!(a.0.load(Ordering::Relaxed), 0);
        assert_eq!(b.0.load(Ordering::Relaxed), 1);
        w.register(&futures::task::waker(a.clone()));
        assert!(w.take().is_some());
        assert!(w.take().is_none());
    }

    #[test]
    fn a_thread_waker_refuses_other_threads() {
        let w = Arc::new(ThreadWaker::new());
        let w2 = w.clone();
        let r = std::thread::spawn(move || {
            w2.wake();
        })
        .join();
        assert!(r.is_err(), "using it from another thread must panic");
        // It still works on its own thread, and can be dropped anywhere.
        w.wake();
        std::thread::spawn(move || drop(w)).join().unwrap();
    }
}
