//! The model: replicas that elect a leader through etcd leases and write to a storage service.
//!
//! Each replica runs two tasks, as such services usually do: an elector (grant a lease, create the
//! lock key with it if absent, keep the lease alive every third of its TTL, give up on the first
//! failed keep-alive) and a writer (every second, if it believes it leads, write to the storage).
//! The writer trusts the elector's belief, and the belief can be stale: a replica that was paused
//! or cut off from etcd for longer than the TTL still believes it leads until its next keep-alive
//! fails, and its writer may run first. With fencing, each write carries the lock's revision (the
//! revision at which its key was created: it grows with every new leader) and the storage refuses
//! a token lower than one it has accepted; without (`--bug unfenced`), the storage takes every
//! write.

use serde::{Deserialize, Serialize};
use sim::etcd::{Etcd, Txn};
use sim::net::{Call, Endpoint};
use sim::world::Host;
use sim::{NodeIx, World};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The lock's key in etcd; its value is the leader's name.
pub const LOCK_KEY: &str = "/fenced-lock/leader";
/// The lease's TTL (s).
pub const TTL_S: i64 = 6;
/// How often a leader writes.
pub const WRITE_EVERY: Duration = Duration::from_secs(1);
/// How long a replica waits for the storage.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the fenced lock reports on the bus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LockEvent {
    /// A replica created the lock key: it leads, with `token` (the key's revision).
    LockWon { token: i64 },
    /// A replica's keep-alive failed: it no longer believes it leads.
    LockLost { token: i64 },
    /// The storage handled a write from `writer` (fenced: with `token`).
    StorageWrite {
        writer: String,
        token: Option<i64>,
        accepted: bool,
    },
}

sim::system_event!(LockEvent);

/// A write to the storage: who writes, with which fencing token (none: unfenced).
#[derive(Clone, Debug)]
pub struct Write {
    pub writer: String,
    pub token: Option<i64>,
}

/// The storage's address; it answers whether it took the write.
pub type Storage = Endpoint<Write, bool>;

/// Installs the storage service on `node`: it refuses a token lower than the highest it has
/// accepted, and takes every unfenced write.
pub fn install_storage(world: &World, node: NodeIx) -> Storage {
    let ep: Storage = Endpoint::tcp(node);
    let e = ep.clone();
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let proc = host.spawn_process("storage");
            let mut inbox = e.open();
            let p = proc.clone();
            proc.spawn("server", async move {
                let mut highest = i64::MIN;
                while let Some(Call { req, reply, .. }) = inbox.recv().await {
                    let accepted = req.token.is_none_or(|t| t >= highest);
                    if let (true, Some(t)) = (accepted, req.token) {
                        highest = t;
                    }
                    p.emit(LockEvent::StorageWrite {
                        writer: req.writer,
                        token: req.token,
                        accepted,
                    });
                    reply.send(accepted);
                }
            });
        }),
    );
    ep
}

/// Installs a replica on `node`; `fenced`: its writes carry the lock's revision.
pub fn install_replica(world: &World, node: NodeIx, etcd: &Etcd, storage: &Storage, fenced: bool) {
    let (etcd, storage) = (etcd.clone(), storage.clone());
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let proc = host.spawn_process("replica");
            // The token of the lock this replica believes it holds.
            let leading: Rc<Cell<Option<i64>>> = Rc::new(Cell::new(None));
            let (p, client, l) = (proc.clone(), etcd.client(&proc), leading.clone());
            proc.spawn("elector", async move {
                loop {
                    if let Some((lease, token)) = acquire(&p, &client).await {
                        l.set(Some(token));
                        p.emit(LockEvent::LockWon { token });
                        hold(&p, &client, lease).await;
                        l.set(None);
                        p.emit(LockEvent::LockLost { token });
                    }
                    p.sleep(WRITE_EVERY).await;
                }
            });
            let (p, storage) = (proc.clone(), storage.clone());
            proc.spawn("writer", async move {
                loop {
                    p.sleep(WRITE_EVERY).await;
                    let Some(token) = leading.get() else { continue };
                    let write = Write {
                        writer: p.host_name(),
                        token: fenced.then_some(token),
                    };
                    let _ = p.call(&storage, write, WRITE_TIMEOUT).await;
                }
            });
        }),
    );
}

/// One attempt to take the lock: a fresh lease, then the key if it is absent. Answers the lease
/// and the token: the revision of the transaction that created the key.
async fn acquire(p: &sim::Proc, client: &sim::etcd::Client) -> Option<(i64, i64)> {
    let (lease, _) = client.grant(TTL_S).await.ok()?;
    let txn = Txn::put_if_absent(LOCK_KEY, &p.host_name(), lease);
    match client.txn(txn).await {
        Ok(r) if r.succeeded => Some((lease, r.revision)),
        _ => None,
    }
}

/// Keeps the lease alive every third of its TTL until a keep-alive fails (or finds it expired).
async fn hold(p: &sim::Proc, client: &sim::etcd::Client, lease: i64) {
    loop {
        p.sleep(Duration::from_secs(TTL_S as u64) / 3).await;
        if !matches!(client.keep_alive(lease).await, Ok(ttl) if ttl > 0) {
            return;
        }
    }
}
