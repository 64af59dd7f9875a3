//! The Neutron side that Calico's watchers report to: its database (MySQL/InnoDB) on its own node.
//! It stores each port's row (`ports.status` and the `standardattributes.revision_number` that
//! neutron-lib maps as SQLAlchemy's `version_id_col`) and serves the agent `report_state` RPC that
//! networking-calico casts from `on_felix_alive` (mech_calico.py line 730 at projectcalico/calico
//! 87c15906).
//!
//! It records when it last heard from each Felix agent, on ITS OWN clock at receipt (Neutron marks
//! an agent down after `agent_down_time`, 75 s, of silence), and each port's status. Like any
//! service it can be unavailable (every statement fails: a `DBConnectionError` to the client) or
//! slow (every statement takes longer).
//!
//! Transactions are concurrent, one session per client greenlet (see [`super::ml2`] for the
//! client's side): each request is served in its own task, and only a row lock orders them.
//! * [`Request::ReadTable`] is a plain `SELECT` of a whole table, as the startup resync's
//!   syncers read Neutron (see [`super::resync`]): it takes no lock.
//! * [`Request::ReadPort`] is the plain `SELECT` of neutron's `get_port_db_objects` (a reader
//!   transaction, openstack/neutron `neutron/plugins/ml2/db.py` lines 306-318 at 2131d26f): it
//!   takes no lock and returns the committed row.
//! * [`Request::WritePort`] is the writer transaction of `_update_individual_port_db_status`
//!   (`neutron/plugins/ml2/plugin.py` lines 2488-2507): the `UPDATE` of the port takes the row's
//!   exclusive lock, waiting behind earlier holders in arrival order for at most
//!   `innodb_lock_wait_timeout` ([`LOCK_WAIT_TIMEOUT`], 50 s by default: MySQL Reference Manual,
//!   "InnoDB Startup Options and System Variables"; error 1205, which oslo.db's
//!   `exc_filters._deadlock_error` turns into `DBDeadlock`); the revision bump's `UPDATE ... WHERE
//!   revision_number = <read>` (neutron `services/revisions/revision_plugin.py`
//!   `_bump_obj_revisions`, lines 170-256, with `version_check=True`) matches no row if another
//!   transaction committed since the read, and SQLAlchemy raises `StaleDataError`. The lock is held
//!   for the rest of the transaction (the slowness of a slow database) and released at `COMMIT`.
//!
//! SQLAlchemy sends `COMMIT` only after the client has the earlier answers; a client that gave up
//! before its answer came (its read timeout passed, or its process is gone) never sends it, and
//! MySQL rolls back a transaction whose connection closes uncommitted (MySQL Reference Manual,
//! 13.3.1 "START TRANSACTION, COMMIT, and ROLLBACK Statements"). So a write whose caller stopped
//! waiting is not applied: [`CalicoEvent::NeutronPortRolledBack`]. Over a partition TCP holds a
//! write up and retransmits it (`sim::net::Endpoint::tcp`), so without a client timeout (upstream
//! sets none: PyMySQL's `read_timeout` defaults to None) a write sent before a partition commits
//! after it heals, however long that took.

use crate::calico::CalicoEvent;
use rand::Rng;
use sim::net::{Call, Endpoint, Responder};
use sim::sync::Notify;
use sim::world::Host;
use sim::{NodeIx, Proc, World};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

/// Neutron's `agent_down_time`.
pub const AGENT_DOWN_TIME: Duration = Duration::from_secs(75);
/// Timeout of a DB call from a watcher.
pub const DB_TIMEOUT: Duration = Duration::from_secs(10);
/// InnoDB's `innodb_lock_wait_timeout` default.
pub const LOCK_WAIT_TIMEOUT: Duration = Duration::from_secs(50);

/// A Neutron table (or group of tables) the startup resync reads whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `subnets`, through the plugin's `get_subnets`.
    Subnets,
    /// `securitygroups`, through `get_security_groups`.
    SecurityGroups,
    /// `securitygrouprules`, through `get_security_group_rules`.
    SecurityGroupRules,
    /// `ports`, through `get_ports`.
    Ports,
    /// The ports' side data (IP allocations, floating IPs, networks, security-group bindings,
    /// QoS rules) that the endpoint syncer reads in bulk in one reader transaction.
    PortSideData,
}

/// A request to Neutron.
#[derive(Clone, Debug)]
pub enum Request {
    /// The Felix agent on `host` is alive.
    ReportAgent {
        /// The Felix host.
        host: String,
        /// The report's `first_update`: its first report since Felix started.
        first_update: bool,
    },
    /// Read every row of a table (no lock): one of the startup resync's reads.
    ReadTable {
        /// The table.
        table: Table,
    },
    /// Read a port's row (no lock).
    ReadPort {
        /// The Neutron port ID.
        port: String,
    },
    /// Store a port's status, in one writer transaction, if the row's revision is still the one
    /// read.
    WritePort {
        /// The Neutron port ID.
        port: String,
        /// The Neutron status to store: `ACTIVE`, `DOWN` or `ERROR`.
        status: String,
        /// The revision the writer read.
        revision: u64,
        /// The write's number within the writing process (for the record).
        write: u64,
    },
}

/// A port's committed row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortRow {
    /// `ports.status` (None: never written; the scenarios' ports have no status in Neutron until
    /// Calico writes one).
    pub status: Option<String>,
    /// `standardattributes.revision_number`.
    pub revision: u64,
}

/// A successful answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The statement or transaction is done.
    Done,
    /// The row read.
    Row(PortRow),
}

/// Why a statement failed (each is retriable for neutron-lib's `is_retriable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbError {
    /// The database refused the connection or statement (`DBConnectionError`).
    Unavailable,
    /// The row lock was not granted within [`LOCK_WAIT_TIMEOUT`] (`DBDeadlock`, from error 1205).
    LockWaitTimeout,
    /// The row's revision changed since the read (`StaleDataError`).
    StaleData,
}

/// Neutron's address.
pub type Neutron = Endpoint<Request, Result<Answer, DbError>>;

/// The committed rows (they outlive the server process, as a database's data does).
type Rows = Rc<RefCell<BTreeMap<String, PortRow>>>;

/// Installs Neutron's DB service as the services of `node`.
pub fn install(world: &World, node: NodeIx) -> Neutron {
    // The DB is reached over TCP (MySQL): what a cut link holds up arrives once it heals.
    let ep: Neutron = Endpoint::tcp(node);
    let e = ep.clone();
    let rows = Rows::default();
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let proc = host.spawn_process("neutron-db");
            let db = Rc::new(Db {
                proc: proc.clone(),
                rows: rows.clone(),
                locks: RefCell::default(),
                released: Notify::new(),
                tickets: Cell::new(0),
                rng: RefCell::new(sim::rng::rng_for(host.world().seed(), "neutron-faults")),
            });
            let mut inbox = e.open();
            proc.spawn("server", async move {
                use futures::StreamExt;
                while let Some(call) = inbox.next().await {
                    let n = db.tickets.get() + 1;
                    db.tickets.set(n);
                    let d = db.clone();
                    db.proc.spawn(
                        &format!("session-{n}"),
                        async move { d.serve(call, n).await },
                    );
                }
            });
        }),
    );
    ep
}

/// One boot of the database server.
struct Db {
    proc: Proc,
    rows: Rows,
    /// Port -> the transactions holding (front) or waiting for its row lock, by ticket.
    locks: RefCell<BTreeMap<String, VecDeque<u64>>>,
    released: Notify,
    tickets: Cell<u64>,
    rng: RefCell<rand_chacha::ChaCha8Rng>,
}

type DbCall = Call<Request, Result<Answer, DbError>>;

impl Db {
    /// Serves one request in its own session.
    async fn serve(&self, call: DbCall, ticket: u64) {
        let Call {
            req, reply, caller, ..
        } = call;
        if self.proc.service_faults().unavailable {
            reply.send(Err(DbError::Unavailable));
            return;
        }
        match req {
            Request::ReportAgent { host, .. } => {
                let lost = self.slow().await;
                self.proc.emit(CalicoEvent::NeutronAgentHeard { host });
                answer(reply, lost, Ok(Answer::Done));
            }
            Request::ReadTable { .. } => {
                let lost = self.slow().await;
                answer(reply, lost, Ok(Answer::Done));
            }
            Request::ReadPort { port } => {
                let lost = self.slow().await;
                let row = self.rows.borrow().get(&port).cloned().unwrap_or_default();
                answer(reply, lost, Ok(Answer::Row(row)));
            }
            Request::WritePort {
                port,
                status,
                revision,
                write,
            } => {
                if !self.lock(&port, ticket).await {
                    reply.send(Err(DbError::LockWaitTimeout));
                    return;
                }
                let result = self
                    .write(&port, status, revision, write, &reply, &caller)
                    .await;
                self.unlock(&port);
                if let Some((lost, r)) = result {
                    answer(reply, lost, r);
                }
            }
        }
    }

    /// The writer transaction, holding the row lock. None: rolled back (the client is gone).
    async fn write(
        &self,
        port: &str,
        status: String,
        revision: u64,
        write: u64,
        reply: &Responder<Result<Answer, DbError>>,
        caller: &str,
    ) -> Option<(bool, Result<Answer, DbError>)> {
        let current = self.rows.borrow().get(port).map_or(0, |r| r.revision);
        if current != revision {
            return Some((false, Err(DbError::StaleData)));
        }
        let lost = self.slow().await;
        // The client commits the transaction with its last round trip: one that gave up first
        // never commits, and the server rolls back.
        if reply.caller_gone() {
            self.proc.emit(CalicoEvent::NeutronPortRolledBack {
                port: port.to_string(),
                client: caller.to_string(),
                write,
            });
            return None;
        }
        self.rows.borrow_mut().insert(
            port.to_string(),
            PortRow {
                status: Some(status.clone()),
                revision: revision + 1,
            },
        );
        self.proc.emit(CalicoEvent::NeutronPortStatus {
            port: port.to_string(),
            status,
            client: caller.to_string(),
            write,
        });
        Some((lost, Ok(Answer::Done)))
    }

    /// Waits for `port`'s row lock in arrival order; false: the wait timed out.
    async fn lock(&self, port: &str, ticket: u64) -> bool {
        self.locks
            .borrow_mut()
            .entry(port.to_string())
            .or_default()
            .push_back(ticket);
        let granted = async {
            loop {
                let seen = self.released.generation();
                let front = self
                    .locks
                    .borrow()
                    .get(port)
                    .and_then(|q| q.front().copied());
                if front == Some(ticket) {
                    return;
                }
                self.released.changed_since(seen).await;
            }
        };
        if sim::time::timeout(LOCK_WAIT_TIMEOUT, granted).await.is_ok() {
            return true;
        }
        if let Some(q) = self.locks.borrow_mut().get_mut(port) {
            q.retain(|t| *t != ticket);
        }
        self.released.notify();
        false
    }

    /// Releases `port`'s row lock (the holder is the queue's front).
    fn unlock(&self, port: &str) {
        let mut locks = self.locks.borrow_mut();
        if let Some(q) = locks.get_mut(port) {
            q.pop_front();
            if q.is_empty() {
                locks.remove(port);
            }
        }
        drop(locks);
        self.released.notify();
    }

    /// A statement's extra time under a slow-service fault; true if its answer is to be lost.
    async fn slow(&self) -> bool {
        let faults = self.proc.service_faults();
        if faults.slow_us > 0 {
            self.proc.sleep(Duration::from_micros(faults.slow_us)).await;
        }
        faults.ambiguous_percent > 0
            && self.rng.borrow_mut().random_range(0..100) < faults.ambiguous_percent
    }
}

/// Sends the answer, or loses it.
fn answer(reply: Responder<Result<Answer, DbError>>, lost: bool, r: Result<Answer, DbError>) {
    if lost {
        reply.lose();
    } else {
        reply.send(r);
    }
}
