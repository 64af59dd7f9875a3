//! etcd's authentication with simple tokens, and how a client re-authenticates
//! (`docs/upstream/calico-etcd-client.md`, "etcd auth").
//!
//! **Server** (etcd-io/etcd c34dc7ee): with auth enabled, `Authenticate` with a user's name and
//! password assigns a new simple token (`server/auth/simple_token.go`, `assign` and
//! `assignSimpleTokenToUser`, lines 125-144 and 215-227). The tokens live in the server process's
//! memory only (`simpleTokens`, a map the TTL keeper prunes), so a restart of etcd, or a crash of
//! its host, forgets every one. A token lives `--auth-token-ttl` (default 300 s,
//! `server/embed/config.go` lines 540 and 732) after it was assigned
//! or last used: every request that presents it resets its deadline (`server/auth/simple_token.go`
//! `info`, lines 202-213, and `resetSimpleToken`, lines 67-71), on the server's monotonic clock
//! (Go's `time.Now()`). The keeper deletes expired tokens once a second (simple_token.go lines
//! 77-99; the model rejects a token from the
//! instant its deadline passes). A request with an unknown or expired token fails with
//! `etcdserver: invalid auth token` (`ErrInvalidAuthToken`, `server/auth/store.go` lines
//! 1056-1084; gRPC `Unauthenticated`, `api/v3rpc/rpctypes/error.go` line 73), one with none with
//! `etcdserver: user name is empty` (`isOpPermitted`, store.go); both are
//! [`super::EtcdError::Unauthenticated`] here. A watch created with such a token is answered
//! `created` and `canceled` on an open stream that then stays silent
//! (`server/etcdserver/api/v3rpc/watch.go` lines 287-310): etcd3gw's reader skips the `created`
//! line and never sees anything else (`etcd3gw/watch.py` `_watch`, lines 21-39 at etcd3gw 30567b4c). Established
//! watches are not re-checked in the model.
//!
//! **Clients** keep one token per process, shared by the process's requests (the `requests`
//! session's `Authorization` header), and re-authenticate as their library does ([`Reauth`]).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// etcd's default `--auth-token-ttl` (s).
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(300);

/// Authentication on an etcd server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// `--auth-token-ttl`: how long a simple token lives after it was assigned or last used.
    pub token_ttl: Duration,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            token_ttl: DEFAULT_TOKEN_TTL,
        }
    }
}

/// The simple tokens one etcd server process has assigned: token → deadline on the server's
/// monotonic clock (µs). A new process starts with none.
#[derive(Default)]
pub(super) struct Tokens {
    deadlines: BTreeMap<u64, u64>,
}

impl Tokens {
    /// Assigns `token` at monotonic time `now_us`.
    pub(in crate::etcd) fn assign(&mut self, token: u64, now_us: u64, ttl: Duration) {
        self.prune(now_us);
        self.deadlines
            .insert(token, now_us + ttl.as_micros() as u64);
    }

    /// Whether `token` is valid at `now_us`; a valid token's deadline starts again.
    pub(in crate::etcd) fn check(
        &mut self,
        token: Option<u64>,
        now_us: u64,
        ttl: Duration,
    ) -> bool {
        self.prune(now_us);
        match token.and_then(|t| self.deadlines.get_mut(&t)) {
            Some(deadline) => {
                *deadline = now_us + ttl.as_micros() as u64;
                true
            }
            None => false,
        }
    }

    fn prune(&mut self, now_us: u64) {
        self.deadlines.retain(|_, d| *d > now_us);
    }
}

/// When a client with credentials authenticates again and re-sends a failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reauth {
    /// After any error its library reports as its own exception (timeouts, connection failures,
    /// server errors, a rejected token): networking-calico's `Etcd3AuthClient.post`
    /// (projectcalico/calico 87c15906, `networking-calico/networking_calico/etcdv3.py` lines
    /// 542-559) catches any `Etcd3Exception`, drops its token, authenticates (a timed post;
    /// its failure is raised to the caller, lines 505-528) and posts the request once more. A
    /// request blocked by an unreachable etcd thus fails after two timeouts, not one.
    OnAnyEtcdError,
    /// Only after etcd rejected the token: Go's clientv3 refreshes its token on
    /// `ErrInvalidAuthToken`, `ErrAuthOldRevision` or `ErrUserEmpty` and retries
    /// (etcd-io/etcd c34dc7ee, `client/v3/retry_interceptor.go` `shouldRefreshToken`, lines
    /// 150-166, called at lines 84-85).
    OnAuthError,
}

/// A client's credentials and the token its session holds (shared by the client's clones).
#[derive(Clone)]
pub(super) struct Credentials {
    pub(super) reauth: Reauth,
    pub(super) token: Rc<Cell<Option<u64>>>,
}

impl super::Server {
    /// The etcd node's monotonic clock (µs), which Go's `time.Now()` deadlines follow.
    fn token_now_us(&self) -> u64 {
        self.world.mono_us(self.node())
    }

    /// Checks a request's token when auth is on: the request to serve, or the reply that rejects
    /// it. `Authenticate` needs none. A rejected watch is answered as created (its stream, dropped
    /// here, stays silent for the client).
    pub(super) fn admit(
        &self,
        req: super::Request,
        token: Option<u64>,
    ) -> Result<super::Request, super::Reply> {
        let Some(cfg) = self.etcd.0.cfg.auth else {
            return Ok(req);
        };
        if matches!(req, super::Request::Authenticate) {
            return Ok(req);
        }
        let now = self.token_now_us();
        if self.tokens.borrow_mut().check(token, now, cfg.token_ttl) {
            return Ok(req);
        }
        match req {
            super::Request::Watch { .. } => Err(Ok(super::Response::Watch)),
            _ => Err(Err(super::EtcdError::Unauthenticated)),
        }
    }

    /// `Authenticate`: a new token, unknown to every other server process.
    pub(super) fn authenticate(&self) -> super::Response {
        let shared = &self.etcd.0;
        let token = shared.tokens_assigned.get() + 1;
        shared.tokens_assigned.set(token);
        let ttl = shared.cfg.auth.unwrap_or_default().token_ttl;
        let now = self.token_now_us();
        self.tokens.borrow_mut().assign(token, now, ttl);
        super::Response::Authenticate { token }
    }
}
