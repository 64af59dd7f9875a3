//! The message broker (RabbitMQ) between networking-calico and Neutron's RPC servers, and the
//! blocking RPC cast that `on_felix_alive` sends through it.
//!
//! `on_felix_alive` (mech_calico.py lines 730-740 at projectcalico/calico 87c15906) calls
//! `report_state(..., use_call=False)`: an oslo.messaging cast, published on the status watcher's
//! own greenlet. oslo.messaging's rabbit driver publishes with publisher confirms
//! (`confirm_publish: True`, impl_rabbit.py lines 826-842 at openstack/oslo.messaging
//! 8ea2d5b486b5), so the publish returns once the broker has taken the message: one round trip.
//! The publish runs inside `Connection.ensure` (lines 1035-1153) with the RPC client's default
//! `retry=None`, which it turns into `float('inf')` (lines 1054-1055: retry for ever; the client's
//! docstring, `rpc/client.py` lines 354-356). A connection error calls kombu's
//! `Connection.ensure._ensured` (kombu 9ee8595b, `kombu/connection.py` lines 516-621): the errback
//! (oslo's `on_error`, which sleeps `kombu_reconnect_delay`, 1 s: impl_rabbit.py lines 113-118
//! and 1109-1112), then `_ensure_connection` (`kombu/connection.py` lines 426-486), which retries the connection through
//! `retry_over_time` (`kombu/utils/functional.py` lines 276-335, `fxrange` lines 251-260): before each new connection
//! attempt the errback's 1 s again and the next interval of `fxrange(rabbit_retry_interval,
//! rabbit_interval_max + rabbit_retry_interval, rabbit_retry_backoff, repeatlast=True)`, that is
//! 1, 3, 5, ..., 31 s and then 31 s for ever (defaults 1, 30 and 2: impl_rabbit.py lines
//! 145-157). Once connected, the publish is sent again.
//!
//! Each attempt has its own bound: a connection attempt kombu's `connect_timeout` (5 s,
//! connection.py line 150), a publish the socket timeout oslo sets around it (impl_rabbit.py `_publish`, lines
//! 1558-1597, and impl_rabbit.py `set_transport_socket_timeout`, lines 1245-1290): the smaller
//! of the cast's timeout and `heartbeat_timeout_threshold` (60 s, impl_rabbit.py lines 233-236). neutron's
//! `PluginReportStateAPI` prepares the cast with `timeout=report_interval` (openstack/neutron
//! 2131d26f `neutron/agent/rpc.py` lines 84-106; `report_interval` defaults to 30 s,
//! `neutron/conf/agent/common.py` line 90), so 30 s.
//!
//! So while the broker is unreachable the watcher greenlet that cast does not return: it processes
//! no further event until the broker takes the message. Other greenlets of the process (the
//! watch canceller, the port-status writers, the master-only loop) go on running (eventlet).
//!
//! The broker's side: an RPC server of neutron-server consumes the message and runs
//! `report_state`, which records the agent's heartbeat in the Neutron database. The model
//! delivers the message to the database at once from the broker's node ([`Request::ReportAgent`]
//! with [`DB_TIMEOUT`]), as the consumer would. Simplifications: the broker keeps no connection
//! state (a publish after an outage goes through, where upstream the first one may meet the dead
//! connection and reconnect after 1 s), and a broker that refuses (a restart, a memory or disk
//! alarm) refuses at once.

use super::neutron::{Neutron, Request, DB_TIMEOUT};
use sim::net::{Endpoint, RpcError};
use sim::world::Host;
use sim::{NodeIx, Proc, World};
use std::rc::Rc;
use std::time::Duration;

/// `kombu_reconnect_delay` (impl_rabbit.py lines 113-118): oslo's errback sleeps it on every
/// connection error.
pub const RECONNECT_DELAY: Duration = Duration::from_secs(1);
/// `rabbit_retry_interval`: kombu's first interval between connection attempts.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// `rabbit_retry_backoff`: the interval grows by this much per attempt.
pub const RETRY_BACKOFF: Duration = Duration::from_secs(2);
/// `rabbit_interval_max`: the interval's cap, reached as `rabbit_interval_max +
/// rabbit_retry_interval` (fxrange's `stop`), 31 s.
pub const INTERVAL_MAX: Duration = Duration::from_secs(30);
/// kombu's `connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The publish's socket timeout: `min(report_interval, heartbeat_timeout_threshold)`.
pub const PUBLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// What a client sends the broker.
#[derive(Clone, Debug)]
pub enum Message {
    /// Open an AMQP connection (and channel).
    Connect,
    /// Publish a cast; the broker confirms once it has taken it.
    Cast(Request),
}

/// The broker refused: its node listens but does not accept (restarting, alarmed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused;

/// The broker's address.
pub type Broker = Endpoint<Message, Result<(), Refused>>;

/// Installs the broker as the services of `node`; what it takes goes to `neutron`'s database.
pub fn install(world: &World, node: NodeIx, neutron: Neutron) -> Broker {
    // AMQP runs over TCP: what a cut link holds up arrives once it heals.
    let ep: Broker = Endpoint::tcp(node);
    let e = ep.clone();
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let proc = host.spawn_process("rabbitmq");
            let mut inbox = e.open();
            let neutron = neutron.clone();
            let p = proc.clone();
            proc.spawn("server", async move {
                use futures::StreamExt;
                let mut taken = 0u64;
                while let Some(call) = inbox.next().await {
                    if p.service_faults().unavailable {
                        call.reply.send(Err(Refused));
                        continue;
                    }
                    if let Message::Cast(req) = call.req {
                        taken += 1;
                        let (q, db) = (p.clone(), neutron.clone());
                        p.spawn(&format!("deliver-{taken}"), async move {
                            let _ = q.call(&db, req, DB_TIMEOUT).await;
                        });
                    }
                    call.reply.send(Ok(()));
                }
            });
        }),
    );
    ep
}

/// kombu's intervals between connection attempts (`fxrange(1, 31, 2, repeatlast=True)`): 1, 3,
/// ..., 31 s, then 31 s for ever.
pub fn interval(attempt: u32) -> Duration {
    let stop = INTERVAL_MAX + RETRY_INTERVAL;
    (RETRY_INTERVAL + RETRY_BACKOFF * attempt).min(stop)
}

/// The cast as `Connection.ensure` sends it with `retry=None`: publish, and on any connection
/// error (a refusal, a reset, a timeout) wait `kombu_reconnect_delay`, reconnect with kombu's
/// growing intervals until the broker accepts, and publish again; it returns only once the broker
/// has taken the message. Returns how many publishes it took.
pub async fn cast(proc: &Proc, broker: &Broker, req: Request) -> u32 {
    let mut publishes = 1;
    while !accepted(
        proc.call(broker, Message::Cast(req.clone()), PUBLISH_TIMEOUT)
            .await,
    ) {
        proc.sleep(RECONNECT_DELAY).await;
        let mut attempt = 0;
        while !accepted(proc.call(broker, Message::Connect, CONNECT_TIMEOUT).await) {
            proc.sleep(RECONNECT_DELAY + interval(attempt)).await;
            attempt += 1;
        }
        publishes += 1;
    }
    publishes
}

fn accepted(r: Result<Result<(), Refused>, RpcError>) -> bool {
    matches!(r, Ok(Ok(())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kombu_intervals_grow_by_two_to_thirty_one_and_stay() {
        let secs: Vec<u64> = (0..19).map(|a| interval(a).as_secs()).collect();
        assert_eq!(
            secs,
            [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 31, 31, 31]
        );
    }
}
