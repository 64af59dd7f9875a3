//! A client process's pool of kept-alive connections to etcd, as etcd3gw's `requests.Session`
//! keeps them (`docs/upstream/calico-etcd-client.md`, "Pooled connections").
//!
//! - `requests`' `HTTPAdapter` keeps a urllib3 `HTTPConnectionPool` of 10 per host
//!   (psf/requests 1f6589ec, `src/requests/adapters.py` lines 79-81, `DEFAULT_POOLSIZE`), a
//!   LIFO queue filled with 10 empty slots (urllib3 004a4d46, `src/urllib3/connectionpool.py`
//!   lines 80 and 199-208). A request takes the top entry, an empty slot or the queue running
//!   dry meaning a new connection (`_get_conn`, lines 254-295), and puts its connection back
//!   once answered (`_put_conn`, lines 297-330; beyond 10 it is closed).
//! - A failed request (timeout, reset, refused, or its greenlet killed) closes its connection
//!   and puts an empty slot back (`urlopen`'s `finally`, lines 807-822).
//! - Before reusing a connection urllib3 checks only whether its socket is readable
//!   (`is_connection_dropped`, `src/urllib3/util/connection.py` lines 11-22): one whose server
//!   process ended got a FIN and is replaced silently, but one whose server host crashed got
//!   nothing and is reused, and the rebooted host resets it. `requests` retries nothing
//!   (`Retry(0, read=False)`, adapters.py lines 205-209, and urllib3's `Retry.increment` raises
//!   a `ProtocolError` at once when reads may not be retried, `src/urllib3/util/retry.py` lines
//!   464-467); it becomes `requests.ConnectionError` (adapters.py lines 710-711), which etcd3gw
//!   turns into `ConnectionFailedError` (`etcd3gw/client.py` lines 134-135 at 30567b4c, release 2.4.2).
//! - A watch's connection stays with its stream; stopping the watch (`Watcher.stop`,
//!   `etcd3gw/watch.py` lines 69-79) calls `close()` on the response's `connection`, which is
//!   the session's adapter (adapters.py line 399), and `HTTPAdapter.close` clears the whole
//!   pool manager (lines 555-561): every kept connection is dropped and the next request opens
//!   a new one.

use crate::net::Conn;
use std::cell::RefCell;
use std::rc::Rc;

/// Kept connections per host (`requests`' `DEFAULT_POOLSIZE`).
pub const POOL_SIZE: usize = 10;

/// The pool a client process's requests share (each [`super::Client`] clone shares it).
#[derive(Clone, Default)]
pub(super) struct Session(Rc<RefCell<Pool>>);

/// The LIFO queue of slots (`None`: empty, a new connection) and how many times the session's
/// pools were cleared (a connection taken before a clear is not put back).
#[derive(Default)]
struct Pool {
    slots: Option<Vec<Option<u32>>>,
    clears: u64,
}

impl Pool {
    fn slots(&mut self) -> &mut Vec<Option<u32>> {
        self.slots.get_or_insert_with(|| vec![None; POOL_SIZE])
    }
}

impl Session {
    /// Takes the top of the pool: the connection to use and the checkout that gives it back.
    pub(super) fn take(&self) -> (Conn, Checkout) {
        let mut pool = self.0.borrow_mut();
        let conn = match pool.slots().pop().flatten() {
            Some(life) => Conn::Open(life),
            None => Conn::New,
        };
        let checkout = Checkout {
            session: self.clone(),
            clears: pool.clears,
            back: Some(None),
        };
        (conn, checkout)
    }

    /// A watch was stopped: the session's adapter closes its pools (see the module's doc).
    pub(super) fn clear(&self) {
        let mut pool = self.0.borrow_mut();
        pool.slots = None;
        pool.clears += 1;
    }

    fn put(&self, clears: u64, slot: Option<u32>) {
        let mut pool = self.0.borrow_mut();
        if pool.clears != clears {
            return;
        }
        let slots = pool.slots();
        if slots.len() < POOL_SIZE {
            slots.push(slot);
        }
    }
}

/// A connection taken from the pool: what goes back when it is dropped (an empty slot unless
/// [`Checkout::answered`] or [`Checkout::kept`] said otherwise).
pub(super) struct Checkout {
    session: Session,
    clears: u64,
    back: Option<Option<u32>>,
}

impl Checkout {
    /// The request was answered on `conn`: the connection goes back to the pool.
    pub(super) fn answered(mut self, conn: Conn) {
        if let Conn::Open(life) = conn {
            self.back = Some(Some(life));
        }
    }

    /// The connection stays with a watch's stream: nothing goes back.
    pub(super) fn kept(mut self) {
        self.back = None;
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(slot) = self.back {
            self.session.put(self.clears, slot);
        }
    }
}
