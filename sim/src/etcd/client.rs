//! The client models use: a process's requests to the etcd service, each bounded by a timeout.

use super::auth::{Credentials, Reauth};
use super::session::Session;
use super::{
    Envelope, EtcdError, KeyValue, OpResult, Reply, Request, Response, Txn, TxnResponse, WatchMsg,
};
use crate::net::{stream_tcp, Endpoint, RpcError, StreamRx};
use crate::world::Proc;
use std::time::Duration;

/// A process's etcd client (like `etcd3gw`): every call but a watch's creation is bounded by a
/// timeout, and calls share the client's pool of kept-alive connections (clones share it), which
/// a crash of etcd's host leaves stale (see the `session` module).
#[derive(Clone)]
pub struct Client {
    pub(super) endpoint: Endpoint<Envelope, Reply>,
    pub(super) proc: Proc,
    pub(super) timeout: Duration,
    pub(super) session: Session,
    /// With auth on: the credentials and the session's token.
    pub(super) credentials: Option<Credentials>,
}

/// An open watch. Dropping it stops it, as etcd3gw's `Watcher.stop`, which also drops every
/// connection the client's pool keeps (see the `session` module).
pub struct Watch {
    rx: StreamRx<WatchMsg>,
    session: Session,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.session.clear();
    }
}

impl Watch {
    /// The next message; never returns if the stream broke (bound it with a timeout).
    pub async fn next(&mut self) -> WatchMsg {
        self.rx.next().await
    }
}

impl Client {
    /// The same client re-authenticating as `reauth` says (no effect without auth).
    pub fn with_reauth(mut self, reauth: Reauth) -> Client {
        if let Some(c) = &mut self.credentials {
            c.reauth = reauth;
        }
        self
    }

    /// A request bounded by the client's timeout, built by `req` (twice if the client
    /// re-authenticates and sends it again, see [`Reauth`]).
    async fn call(&self, req: impl Fn() -> Request) -> Reply {
        let first = self.call_within(req(), Some(self.timeout)).await;
        let Some(c) = &self.credentials else {
            return first;
        };
        let again = match (&first, c.reauth) {
            (Err(e), Reauth::OnAnyEtcdError) => e.is_etcd_exception(),
            (Err(EtcdError::Unauthenticated), Reauth::OnAuthError) => true,
            _ => false,
        };
        if !again {
            return first;
        }
        self.authenticate(c).await?;
        self.call_within(req(), Some(self.timeout)).await
    }

    /// `Etcd3AuthClient.authenticate` (etcdv3.py lines 505-528 at 87c15906): drops the session's
    /// token first (etcd would reject the authentication with a stale one), then posts, bounded
    /// by the client's timeout; its failure is the caller's.
    async fn authenticate(&self, c: &Credentials) -> Result<(), EtcdError> {
        c.token.set(None);
        match self
            .call_within(Request::Authenticate, Some(self.timeout))
            .await?
        {
            Response::Authenticate { token } => {
                c.token.set(Some(token));
                Ok(())
            }
            r => unreachable!("authenticate answered {r:?}"),
        }
    }

    /// A request bounded by `timeout`, or by nothing (`None`: it waits for an answer or a reset,
    /// for ever if neither comes).
    async fn call_within(&self, req: Request, timeout: Option<Duration>) -> Reply {
        self.call_keeping(req, timeout, false).await
    }

    /// A request on the top connection of the client's pool: once answered, the connection
    /// goes back to the pool, or stays with the watch the request created (`keep`); a failed
    /// one is closed.
    async fn call_keeping(&self, req: Request, timeout: Option<Duration>, keep: bool) -> Reply {
        let world = self.proc.world();
        let envelope = Envelope {
            req,
            client_deadline_us: timeout.map(|t| world.now_us() + t.as_micros() as u64),
            token: self.credentials.as_ref().and_then(|c| c.token.get()),
        };
        let (from, caller) = (self.proc.node(), self.proc.ident());
        let (conn, checkout) = self.session.take();
        let answer = self
            .endpoint
            .call_on(world, from, caller, envelope, conn, timeout)
            .await;
        match answer {
            Ok((r, conn)) => {
                if keep {
                    checkout.kept();
                } else {
                    checkout.answered(conn);
                }
                r
            }
            // A reset connection is a connection failure: nothing was applied.
            Err(RpcError::Reset) => Err(EtcdError::Unavailable),
            Err(RpcError::Timeout) => Err(EtcdError::Timeout),
        }
    }

    /// Reads one key.
    pub async fn get(&self, key: &str) -> Result<Option<KeyValue>, EtcdError> {
        match self
            .call(|| Request::Range {
                key: key.into(),
                prefix: false,
                revision: 0,
            })
            .await?
        {
            Response::Range { mut kvs, .. } => Ok(kvs.pop()),
            r => unreachable!("range answered {r:?}"),
        }
    }

    /// Reads a key or prefix at a revision (0 = current); returns the key-values and the header revision.
    pub async fn range(
        &self,
        key: &str,
        prefix: bool,
        revision: i64,
    ) -> Result<(Vec<KeyValue>, i64), EtcdError> {
        match self
            .call(|| Request::Range {
                key: key.into(),
                prefix,
                revision,
            })
            .await?
        {
            Response::Range { kvs, revision } => Ok((kvs, revision)),
            r => unreachable!("range answered {r:?}"),
        }
    }

    /// Runs a transaction.
    pub async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        match self.call(|| Request::Txn(txn.clone())).await? {
            Response::Txn(r) => Ok(r),
            r => unreachable!("txn answered {r:?}"),
        }
    }

    /// Puts a key (lease 0 = none); returns the new revision.
    pub async fn put(&self, key: &str, value: &str, lease: i64) -> Result<i64, EtcdError> {
        let txn = Txn::put(key, value, lease);
        Ok(self.txn(txn).await?.revision)
    }

    /// Deletes a key; returns how many keys were deleted.
    pub async fn delete(&self, key: &str) -> Result<i64, EtcdError> {
        let txn = Txn::delete(key, false);
        match self.txn(txn).await?.results.first() {
            Some(OpResult::Delete { deleted }) => Ok(*deleted),
            r => unreachable!("delete answered {r:?}"),
        }
    }

    /// Grants a lease; returns (id, ttl).
    pub async fn grant(&self, ttl_s: i64) -> Result<(i64, i64), EtcdError> {
        match self.call(|| Request::Grant { ttl_s }).await? {
            Response::Grant { lease, ttl_s } => Ok((lease, ttl_s)),
            r => unreachable!("grant answered {r:?}"),
        }
    }

    /// Keeps a lease alive; returns its TTL (0 if it no longer exists).
    pub async fn keep_alive(&self, lease: i64) -> Result<i64, EtcdError> {
        match self.call(|| Request::KeepAlive { lease }).await? {
            Response::KeepAlive { ttl_s } => Ok(ttl_s),
            r => unreachable!("keep-alive answered {r:?}"),
        }
    }

    /// Revokes a lease.
    pub async fn revoke(&self, lease: i64) -> Result<i64, EtcdError> {
        match self.call(|| Request::Revoke { lease }).await? {
            Response::Revoke { revision } => Ok(revision),
            r => unreachable!("revoke answered {r:?}"),
        }
    }

    /// Remaining and granted TTL of a lease.
    pub async fn time_to_live(&self, lease: i64) -> Result<(i64, i64), EtcdError> {
        match self.call(|| Request::TimeToLive { lease }).await? {
            Response::TimeToLive {
                ttl_s,
                granted_ttl_s,
            } => Ok((ttl_s, granted_ttl_s)),
            r => unreachable!("ttl answered {r:?}"),
        }
    }

    /// Compacts history up to `revision`.
    pub async fn compact(&self, revision: i64) -> Result<i64, EtcdError> {
        match self.call(|| Request::Compact { revision }).await? {
            Response::Compact { revision } => Ok(revision),
            r => unreachable!("compact answered {r:?}"),
        }
    }

    /// Current and compacted revision.
    pub async fn status(&self) -> Result<(i64, i64), EtcdError> {
        match self.call(|| Request::Status).await? {
            Response::Status {
                revision,
                compact_revision,
            } => Ok((revision, compact_revision)),
            r => unreachable!("status answered {r:?}"),
        }
    }

    /// Opens a watch on a key or prefix from `start_revision` (0 = from now), waiting for etcd's
    /// answer with no timeout, as etcd3gw does: its `Watcher.__init__` (etcd3gw 2.4.2, 30567b4c,
    /// `etcd3gw/watch.py` lines 61-63) posts the create request through the client's `requests`
    /// session with `stream=True` and no `timeout`, bypassing the client's timed `post`
    /// (`etcd3gw/client.py` `_request`, lines 115-136); `watch_once` creates its watch the same
    /// way before its own timeout starts (lines 433-451). A watch created while etcd's host is
    /// down or cut off waits until the path works; one whose request etcd's host had received
    /// when it crashed is never answered: the call never returns.
    pub async fn watch(
        &self,
        key: &str,
        prefix: bool,
        start_revision: i64,
    ) -> Result<Watch, EtcdError> {
        self.open_watch(key, prefix, start_revision, None).await
    }

    /// [`Client::watch`] with the creation bounded by the client's timeout (a client that passes
    /// its timeout to the watch's create request).
    pub async fn watch_timed(
        &self,
        key: &str,
        prefix: bool,
        start_revision: i64,
    ) -> Result<Watch, EtcdError> {
        self.open_watch(key, prefix, start_revision, Some(self.timeout))
            .await
    }

    async fn open_watch(
        &self,
        key: &str,
        prefix: bool,
        start_revision: i64,
        timeout: Option<Duration>,
    ) -> Result<Watch, EtcdError> {
        let world = self.proc.world();
        let (tx, rx) = stream_tcp(world, self.endpoint.node(), self.proc.node());
        let req = Request::Watch {
            key: key.into(),
            prefix,
            start_revision,
            tx,
        };
        let session = self.session.clone();
        match self.call_keeping(req, timeout, true).await {
            Ok(_) => Ok(Watch { rx, session }),
            // etcd3gw's `Watcher` does not look at the answer: its reader thread parses it, and
            // an undecodable line ends that thread (`_watch`'s `json.loads`, watch.py lines
            // 21-28) while the watch looks created. Nothing more ever comes out of it.
            Err(EtcdError::Garbled) => {
                drop(rx);
                let (_, dead) = stream_tcp(world, self.endpoint.node(), self.proc.node());
                Ok(Watch { rx: dead, session })
            }
            Err(e) => Err(e),
        }
    }
}
