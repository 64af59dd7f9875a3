//! ML2's `update_port_status` as a neutron-server worker runs it for Calico's port-status writers,
//! and the plugin's table reads as the startup resync makes them (openstack/neutron `neutron/plugins/ml2/plugin.py` at 2131d26f, the Neutron of
//! networking-calico 87c15906's time), with neutron-lib's database retry around it.
//!
//! * `update_port_statuses` (lines 2442-2456) is decorated `@db_api.retry_if_session_inactive()`:
//!   called outside a transaction (as the writer greenlet calls it), every attempt runs under
//!   neutron-lib's `_retry_db_errors` (openstack/neutron-lib `neutron_lib/db/api.py` lines
//!   148-154 at 6cd671a8), oslo.db's `wrap_db_retry` with `max_retries=20`,
//!   `retry_interval=0.5`, `inc_retry_interval=True`, `jitter=True` and oslo.db's default
//!   `max_retry_interval=10` (openstack/oslo.db `oslo_db/api.py` lines 113-198 at 5530cb96):
//!   the first retry sleeps 0.5 s, each next one a uniform draw below twice the last bound,
//!   capped at 10 s; after 20 retries the error goes to the caller. neutron-lib's `is_retriable`
//!   (`neutron_lib/db/api.py` lines 109-122 at 6cd671a8) retries `DBDeadlock`, `StaleDataError` and `DBConnectionError`, the three
//!   [`DbError`]s.
//! * An attempt reads the port in a reader transaction (`get_port_db_objects`), and
//!   `_update_individual_port_db_status` (`neutron/plugins/ml2/plugin.py` lines 2469-2507) compares the status READ with the one
//!   to store: equal, it writes nothing; different, its writer transaction stores it (see
//!   [`super::neutron`] for the row lock and the revision check).
//!
//! So two writers of one port interleave: the one whose writer transaction commits last wins,
//! and a writer whose read came before another's commit may find the status it wants already
//! stored and write nothing, although the other then commits a different one.
//!
//! Not modelled: `partial_port_ids_to_full_ids`'s extra lookup, the `BEFORE_UPDATE` and
//! `AFTER_UPDATE` callbacks and the mechanism drivers' pre- and post-commit hooks (Calico's do not
//! touch the port row).

use super::neutron::{Answer, DbError, Neutron, PortRow, Request, Table};
use crate::calico::CalicoEvent;
use rand::Rng;
use sim::net::RpcError;
use sim::Proc;
use std::cell::RefCell;
use std::time::Duration;

/// oslo.db's `max_retries` as neutron-lib sets it (`MAX_RETRIES`).
pub const MAX_RETRIES: u32 = 20;
/// neutron-lib's `retry_interval`.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(500);
/// oslo.db's default `max_retry_interval`.
pub const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// How long a plugin call waits for the database. Upstream's plugin calls are synchronous
/// SQLAlchemy calls with no timeout of Calico's (the MySQL driver's read timeout is unset), so a
/// call waits as long as the database takes; the bound only keeps a run from hanging on a lost
/// answer, and when it is reached the call raises as an unexpected error would.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why a plugin call (`update_port_status`, or one of the startup resync's reads) raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// A database error (after the retries ran out, for a retried call): a `DBError`.
    Db(DbError),
    /// No answer within the call's bound ([`CALL_TIMEOUT`]).
    Timeout,
}

/// One neutron-server worker's ML2 plugin, as the port-status writers call it.
pub struct Ml2 {
    proc: Proc,
    neutron: Neutron,
    /// The jitter of oslo.db's backoff (Python's `random.uniform`).
    rng: RefCell<rand_chacha::ChaCha8Rng>,
}

/// The retry loop's sleep before the next attempt: `(sleep, next bound)` after one of `bound`.
pub fn next_interval(bound: Duration, draw: f64) -> (Duration, Duration) {
    let next = bound * 2;
    (next.mul_f64(draw).min(MAX_RETRY_INTERVAL), next)
}

impl Ml2 {
    /// The plugin of process `proc`.
    pub fn new(proc: &Proc, neutron: Neutron) -> Self {
        Ml2 {
            proc: proc.clone(),
            neutron,
            rng: RefCell::new(proc.rng("ml2-db-retry")),
        }
    }

    /// `update_port_status(context, port, status)`: each database call bounded by
    /// `call_timeout`. `write` numbers the write for the record.
    pub async fn update_port_status(
        &self,
        port: &str,
        status: &str,
        write: u64,
        call_timeout: Duration,
    ) -> Result<(), CallError> {
        self.retrying(|| self.attempt(port, status, write, call_timeout))
            .await
    }

    /// A `@retry_if_session_inactive` getter (`get_subnets`, `get_ports`,
    /// `get_security_groups`, `get_security_group_rules`: openstack/neutron 2131d26f
    /// `neutron/db/db_base_plugin_v2.py` lines 1213-1214 and 1731-1733,
    /// `neutron/db/securitygroups_db.py` lines 164-165 and 1044-1045) called outside a
    /// transaction, as the startup resync's syncers call it: reads `table` whole, retried as
    /// `update_port_status` is.
    pub async fn get_all(&self, table: Table, call_timeout: Duration) -> Result<(), CallError> {
        self.retrying(|| self.query(table, call_timeout)).await
    }

    /// A raw `session.query` of `table` inside the caller's own `CONTEXT_READER` transaction:
    /// no retry decorator applies, so its first error raises.
    pub async fn query(&self, table: Table, call_timeout: Duration) -> Result<(), CallError> {
        let req = Request::ReadTable { table };
        self.call(req, call_timeout).await.map(|_| ())
    }

    /// oslo.db's `wrap_db_retry` as neutron-lib configures it, around `attempt`.
    async fn retrying<F, Fut>(&self, mut attempt: F) -> Result<(), CallError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), CallError>>,
    {
        let (mut sleep, mut bound) = (RETRY_INTERVAL, RETRY_INTERVAL);
        let mut remaining = MAX_RETRIES;
        loop {
            match attempt().await {
                Ok(()) => return Ok(()),
                Err(CallError::Db(_)) if remaining > 0 => {
                    self.proc.sleep(sleep).await;
                    let draw = self.rng.borrow_mut().random::<f64>();
                    (sleep, bound) = next_interval(bound, draw);
                    remaining -= 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt: read, compare, write if different.
    async fn attempt(
        &self,
        port: &str,
        status: &str,
        write: u64,
        call_timeout: Duration,
    ) -> Result<(), CallError> {
        let read = Request::ReadPort {
            port: port.to_string(),
        };
        let row = match self.call(read, call_timeout).await? {
            Answer::Row(row) => row,
            Answer::Done => PortRow::default(),
        };
        if row.status.as_deref() == Some(status) {
            self.proc.emit(CalicoEvent::NeutronPortUnchanged {
                port: port.to_string(),
                client: self.proc.ident().to_string(),
                write,
                revision: row.revision,
            });
            return Ok(());
        }
        let req = Request::WritePort {
            port: port.to_string(),
            status: status.to_string(),
            revision: row.revision,
            write,
        };
        self.call(req, call_timeout).await.map(|_| ())
    }

    async fn call(&self, req: Request, timeout: Duration) -> Result<Answer, CallError> {
        match self.proc.call(&self.neutron, req, timeout).await {
            Ok(Ok(a)) => Ok(a),
            Ok(Err(e)) => Err(CallError::Db(e)),
            // A reset connection: PyMySQL's `OperationalError` (2013), a `DBConnectionError`.
            Err(RpcError::Reset) => Err(CallError::Db(DbError::Unavailable)),
            Err(RpcError::Timeout) => Err(CallError::Timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// oslo.db's `_get_inc_interval` with jitter: a draw of the doubled bound, capped at 10 s.
    #[test]
    fn upstream_inc_interval_with_jitter() {
        let (sleep, next) = next_interval(Duration::from_millis(500), 0.5);
        assert_eq!(
            (sleep, next),
            (Duration::from_millis(500), Duration::from_secs(1))
        );
        let (sleep, next) = next_interval(Duration::from_secs(8), 0.99);
        assert_eq!(next, Duration::from_secs(16));
        assert_eq!(sleep, MAX_RETRY_INTERVAL);
    }
}
