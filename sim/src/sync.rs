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
