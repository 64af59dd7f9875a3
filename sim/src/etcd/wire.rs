//! What crosses the wire between a client and the simulated etcd: requests, their responses and
//! the errors a client can see.

use super::{KeyValue, StoreError, StreamTx, Txn, TxnResponse, WatchMsg};

/// What a client can see go wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdError {
    /// No answer in time; the request may have been applied.
    Timeout,
    /// The server refused the request (not applied).
    Unavailable,
    /// The reply could not be decoded (the request was applied). Client libraries raise a
    /// non-etcd exception here, which callers treat as unexpected.
    Garbled,
    /// etcd returned an error.
    Store(StoreError),
    /// etcd rejected the request's auth token (invalid, expired or missing; see [`auth`](super::auth)).
    Unauthenticated,
}

impl EtcdError {
    /// True for the errors an etcd client library reports as its own exception type (timeouts,
    /// connection failures and server errors), false for unexpected ones.
    pub fn is_etcd_exception(&self) -> bool {
        !matches!(self, EtcdError::Garbled)
    }
}

/// A request to the server.
pub enum Request {
    /// Reads a key or a prefix, now or at a past revision.
    Range {
        /// The key, or the prefix with `prefix`.
        key: String,
        /// Read every key that starts with `key`.
        prefix: bool,
        /// Revision to read at (0: the current one).
        revision: i64,
    },
    /// Runs a transaction (every put and delete goes through one).
    Txn(Txn),
    /// Grants a new lease.
    Grant {
        /// Requested TTL (s), raised to the server's minimum.
        ttl_s: i64,
    },
    /// Renews a lease to its full TTL.
    KeepAlive {
        /// The lease's ID.
        lease: i64,
    },
    /// Revokes a lease, deleting its keys.
    Revoke {
        /// The lease's ID.
        lease: i64,
    },
    /// Asks for a lease's remaining and granted TTL.
    TimeToLive {
        /// The lease's ID.
        lease: i64,
    },
    /// Compacts history up to a revision.
    Compact {
        /// Versions older than this become unreadable.
        revision: i64,
    },
    /// Asks for the store's current and compacted revisions.
    Status,
    /// Authenticates a user (the model has one, whose password clients know): a new token.
    Authenticate,
    /// Opens a watch on a key or a prefix.
    Watch {
        /// The key, or the prefix with `prefix`.
        key: String,
        /// Watch every key that starts with `key`.
        prefix: bool,
        /// Send the changes from this revision on first (0: only changes from now on).
        start_revision: i64,
        /// Where the server sends the watch's messages.
        tx: StreamTx<WatchMsg>,
    },
}

impl Request {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Request::Range { .. } => "range",
            Request::Txn(_) => "txn",
            Request::Grant { .. } => "lease-grant",
            Request::KeepAlive { .. } => "lease-keepalive",
            Request::Revoke { .. } => "lease-revoke",
            Request::TimeToLive { .. } => "lease-ttl",
            Request::Compact { .. } => "compact",
            Request::Status => "status",
            Request::Authenticate => "authenticate",
            Request::Watch { .. } => "watch",
        }
    }
}

/// A successful response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// Answer to [`Request::Range`].
    Range {
        /// The live keys in range at the revision read, in key order.
        kvs: Vec<KeyValue>,
        /// Header revision: the store's current revision.
        revision: i64,
    },
    /// Answer to [`Request::Txn`].
    Txn(TxnResponse),
    /// Answer to [`Request::Grant`].
    Grant {
        /// The new lease's ID.
        lease: i64,
        /// The TTL granted (s), at least the server's minimum.
        ttl_s: i64,
    },
    /// Answer to [`Request::KeepAlive`].
    KeepAlive {
        /// The lease's TTL (s) from now; 0 if it was unknown or had already expired.
        ttl_s: i64,
    },
    /// Answer to [`Request::Revoke`].
    Revoke {
        /// The store's revision after the revocation's deletions.
        revision: i64,
    },
    /// Answer to [`Request::TimeToLive`].
    TimeToLive {
        /// Remaining TTL (s, rounded up); -1 for an unknown or expired lease.
        ttl_s: i64,
        /// The TTL the lease was granted with (s); 0 for an unknown or expired lease.
        granted_ttl_s: i64,
    },
    /// Answer to [`Request::Compact`].
    Compact {
        /// The store's current revision (header revision).
        revision: i64,
    },
    /// Answer to [`Request::Status`].
    Status {
        /// The store's current revision.
        revision: i64,
        /// The revision up to which history was compacted (0: never).
        compact_revision: i64,
    },
    /// The watch is open; its messages arrive on the request's stream.
    Watch,
    /// Answer to [`Request::Authenticate`].
    Authenticate {
        /// The new simple token.
        token: u64,
    },
}
