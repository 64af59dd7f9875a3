//! A server's inbox: the requests sent to its endpoint, queued in the order they arrived, with
//! one sender (the [`Endpoint`](super::Endpoint)) and one reader (the server loop).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The requests queued for a server, in the order they arrived: a single-threaded unbounded
/// channel with one sender (the endpoint) and one receiver (the server loop). It behaves as
/// `futures::channel::mpsc::unbounded` did here (so wake-ups, and traces, are the same): a send
/// wakes the receiver's last waker and uses it up, so a burst of sends wakes it once; the stream
/// ends once the sender is gone and the queue is empty; a send fails once the receiver is gone,
/// and the receiver drops what was still queued when it goes. Unlike that channel it takes no
/// atomic operation and no allocation per message (a request is the busiest message of a run).
pub(super) struct Queue<T> {
    items: RefCell<VecDeque<T>>,
    waker: Cell<Option<Waker>>,
    /// The sender is gone (the server reopened its endpoint): the stream ends when empty.
    ended: Cell<bool>,
    /// The receiver is gone: sends fail.
    closed: Cell<bool>,
}

impl<T> Queue<T> {
    fn wake(&self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Queues `item` and wakes the receiver; gives it back if the receiver is gone.
    pub(super) fn send(&self, item: T) -> Result<(), T> {
        if self.closed.get() {
            return Err(item);
        }
        self.items.borrow_mut().push_back(item);
        self.wake();
        Ok(())
    }
}

/// The sending half of an inbox, held by its endpoint; dropping it ends the stream.
pub(super) struct InboxTx<T>(pub(super) Rc<Queue<T>>);

/// A new, empty inbox.
pub(super) fn inbox<T>() -> (InboxTx<T>, InboxRx<T>) {
    let q = Rc::new(Queue {
        items: RefCell::new(VecDeque::new()),
        waker: Cell::new(None),
        ended: Cell::new(false),
        closed: Cell::new(false),
    });
    (InboxTx(q.clone()), InboxRx(q))
}

impl<T> Drop for InboxTx<T> {
    fn drop(&mut self) {
        self.0.ended.set(true);
        self.0.wake();
    }
}

/// The receiving half of an inbox (see [`Requests`](super::Requests)).
pub struct InboxRx<T>(Rc<Queue<T>>);

impl<T> futures::Stream for InboxRx<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let q = &self.0;
        if let Some(call) = q.items.borrow_mut().pop_front() {
            return Poll::Ready(Some(call));
        }
        if q.ended.get() {
            return Poll::Ready(None);
        }
        q.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

impl<T> InboxRx<T> {
    /// The next item, once there is one; none once every sender is gone. (The same as
    /// `futures::StreamExt::next`, without the import.)
    pub async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| futures::Stream::poll_next(Pin::new(&mut *self), cx)).await
    }
}

impl<T> Drop for InboxRx<T> {
    fn drop(&mut self) {
        self.0.closed.set(true);
        self.0.waker.take();
        // Dropped outside the borrow: a request's parts may hold anything.
        let queued = std::mem::take(&mut *self.0.items.borrow_mut());
        drop(queued);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::ArcWake;
    use std::sync::Arc;

    /// A waker that counts its wake-ups.
    struct Count(std::sync::atomic::AtomicU32);

    impl ArcWake for Count {
        fn wake_by_ref(arc: &Arc<Self>) {
            arc.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn poll_rx(rx: &mut InboxRx<u32>, w: &Arc<Count>) -> Poll<Option<u32>> {
        use futures::Stream;
        let waker = futures::task::waker(w.clone());
        Pin::new(rx).poll_next(&mut Context::from_waker(&waker))
    }

    fn wakes(w: &Arc<Count>) -> u32 {
        w.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn an_inbox_wakes_its_reader_once_per_wait_and_keeps_order() {
        let (tx, mut rx) = inbox::<u32>();
        let w = Arc::new(Count(Default::default()));
        // A send with nobody waiting wakes nobody.
        tx.0.send(1).unwrap();
        assert_eq!(wakes(&w), 0);
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(Some(1)));
        assert_eq!(poll_rx(&mut rx, &w), Poll::Pending);
        // Two sends while the reader waits: one wake-up (the first uses the waker up).
        tx.0.send(2).unwrap();
        tx.0.send(3).unwrap();
        assert_eq!(wakes(&w), 1);
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(Some(2)));
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(Some(3)));
        assert_eq!(poll_rx(&mut rx, &w), Poll::Pending);
        // The sender gone (the endpoint reopened): the waiting reader is woken and sees the end.
        drop(tx);
        assert_eq!(wakes(&w), 2);
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(None));
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(None));
    }

    #[test]
    fn an_inbox_delivers_what_was_queued_before_its_sender_went() {
        let (tx, mut rx) = inbox::<u32>();
        let w = Arc::new(Count(Default::default()));
        tx.0.send(7).unwrap();
        drop(tx);
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(Some(7)));
        assert_eq!(poll_rx(&mut rx, &w), Poll::Ready(None));
    }

    #[test]
    fn an_inbox_refuses_sends_once_its_reader_is_gone_and_drops_what_it_held() {
        let (tx, rx) = inbox::<Rc<u32>>();
        let held = Rc::new(5);
        tx.0.send(held.clone()).unwrap();
        assert_eq!(Rc::strong_count(&held), 2);
        drop(rx);
        // What was queued is dropped with the reader, not kept by the sender.
        assert_eq!(Rc::strong_count(&held), 1);
        assert!(tx.0.send(Rc::new(6)).is_err());
    }
}
