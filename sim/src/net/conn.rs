//! Requests on a chosen TCP connection: a new one, or one a client kept alive in its pool.
//!
//! A kept-alive connection outlives the life of the server's host it was opened in: a host that
//! crashed sent nothing, so the client's socket still looks connected, and the rebooted host,
//! which knows nothing of it, answers its next segment with a reset (RFC 9293 section 3.5.2,
//! "reset generation": a segment for a connection that does not exist). A new connection first
//! exchanges a handshake, retransmitted while the host is down or cut off, and belongs to the
//! life of the host that answers it.

use super::{Endpoint, RpcError};
use crate::event::NodeIx;
use crate::world::World;
use std::rc::Rc;
use std::time::Duration;

/// Linux's initial retransmission timeout of a connection's handshake (`TCP_TIMEOUT_INIT`,
/// 1 s, as RFC 6298 section 2.1); it doubles at each retransmission.
pub const SYN_RTO_INIT: Duration = Duration::from_secs(1);

/// The TCP connection a request travels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conn {
    /// A connection opened for the request (a handshake first).
    New,
    /// A connection opened earlier, in the server host's life with this boot number
    /// ([`World::boots`]): reset by the server's host if it has rebooted since.
    Open(u32),
}

impl<Req, Resp> Endpoint<Req, Resp> {
    /// Sends `req` from `from` on `conn` and waits up to `timeout` for the answer (`None`: with
    /// no timeout, see [`Endpoint::call_untimed`]); with the answer, the connection as it can be
    /// kept for a later request ([`Conn::Open`] with the boot number of the server's host in
    /// whose life it was opened). Only for TCP endpoints ([`Endpoint::tcp`]).
    pub async fn call_on(
        &self,
        world: &World,
        from: NodeIx,
        caller: Rc<str>,
        req: Req,
        conn: Conn,
        timeout: Option<Duration>,
    ) -> Result<(Resp, Conn), RpcError> {
        debug_assert!(self.tcp, "connections are TCP's");
        let exchange = self.exchange(world, from, caller, req, Some(conn));
        let answer = match timeout {
            Some(t) => crate::time::timeout(t, exchange)
                .await
                .map_err(|_| RpcError::Timeout)?,
            None => exchange.await,
        };
        answer.map(|(resp, life)| (resp, Conn::Open(life)))
    }
}
