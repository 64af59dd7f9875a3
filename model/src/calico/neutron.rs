//! The Neutron side that Calico's watchers report to: a database service on its own node. It
//! stands for ML2's `update_port_status` (openstack/neutron `neutron/plugins/ml2/plugin.py`, which
//! stores the status it is given when it differs from the stored one, whoever wrote it last) and
//! for the agent `report_state` RPC that networking-calico casts from `on_felix_alive`
//! (mech_calico.py line 730 at projectcalico/calico 87c15906).
//!
//! It records when it last heard from each Felix agent, on ITS OWN clock at receipt (Neutron marks
//! an agent down after `agent_down_time`, 75 s, of silence), and each port's status. Like any
//! service it can be unavailable (the DB write fails) or slow (requests queue behind each other;
//! the "processing-rate limit" that lets a watcher's backlog build up).
//!
//! A port-status write is one request here, but upstream it is a transaction of several round
//! trips (`update_port_status` reads the port and updates it inside `CONTEXT_WRITER.using`, and
//! SQLAlchemy sends `COMMIT` only after the client has the earlier answers). A client that gave
//! up before its answer came (its read timeout passed, or its process is gone) never sends the
//! `COMMIT`, and MySQL rolls back a transaction whose connection closes uncommitted (MySQL
//! Reference Manual, 13.3.1 "START TRANSACTION, COMMIT, and ROLLBACK Statements": a session that
//! ends with a transaction open rolls it back). So a write whose caller stopped waiting is not
//! applied: [`CalicoEvent::NeutronPortRolledBack`]. Over a partition TCP holds a write up and
//! retransmits it (`sim::net::Endpoint::tcp`), so without a client timeout (upstream sets none:
//! PyMySQL's `read_timeout` defaults to None) a write sent before a partition commits after it
//! heals, however long that took.

use crate::calico::CalicoEvent;
use sim::net::{Call, Endpoint};
use sim::world::Host;
use sim::{NodeIx, World};
use std::rc::Rc;
use std::time::Duration;

/// Neutron's `agent_down_time`.
pub const AGENT_DOWN_TIME: Duration = Duration::from_secs(75);
/// Timeout of a DB call from a watcher.
pub const DB_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// A port's status changed.
    PortStatus {
        /// The Neutron port ID.
        port: String,
        /// The Neutron status to store: `ACTIVE`, `DOWN` or `ERROR`.
        status: String,
        /// The write's number within the writing process (for the record).
        write: u64,
    },
}

/// The DB write failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError;

/// Neutron's address.
pub type Neutron = Endpoint<Request, Result<(), DbError>>;

/// Installs Neutron's DB service as the services of `node`.
pub fn install(world: &World, node: NodeIx) -> Neutron {
    // The DB is reached over TCP (MySQL): what a cut link holds up arrives once it heals.
    let ep: Neutron = Endpoint::tcp(node);
    let e = ep.clone();
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let proc = host.spawn_process("neutron-db");
            let mut inbox = e.open();
            let p = proc.clone();
            let mut shell = sim::net::FaultShell::new(host.world(), "neutron-faults");
            proc.spawn("server", async move {
                use futures::StreamExt;
                while let Some(Call {
                    req, reply, caller, ..
                }) = inbox.next().await
                {
                    let Some(lost) = shell.admit(&p).await else {
                        reply.send(Err(DbError));
                        continue;
                    };
                    match req {
                        Request::ReportAgent { host, .. } => {
                            p.emit(CalicoEvent::NeutronAgentHeard { host })
                        }
                        // The client commits the transaction with its last round trip: one
                        // that gave up first never commits, and the server rolls back.
                        Request::PortStatus { port, write, .. } if reply.caller_gone() => {
                            p.emit(CalicoEvent::NeutronPortRolledBack {
                                port,
                                client: caller.to_string(),
                                write,
                            });
                            continue;
                        }
                        Request::PortStatus {
                            port,
                            status,
                            write,
                        } => p.emit(CalicoEvent::NeutronPortStatus {
                            port,
                            status,
                            client: caller.to_string(),
                            write,
                        }),
                    }
                    if lost {
                        reply.lose();
                    } else {
                        reply.send(Ok(()));
                    }
                }
            });
        }),
    );
    ep
}
