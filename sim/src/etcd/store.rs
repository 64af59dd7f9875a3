//! The etcd state machine: a synchronous, serializable MVCC key-value store with leases.
//!
//! It follows etcd 3.4's semantics (docs/upstream/etcd.md):
//! * one cluster-wide revision, starting at 1; every transaction that changes at least one key
//!   bumps it by exactly one, and all its changes share that revision (with sub-revisions for
//!   order); reads, failed compares with read-only branches, lease grants and keep-alives do not;
//! * each live key has `create_revision`, `mod_revision`, `version` (1 on create, +1 per put) and
//!   `lease`; a missing key compares as version = create = mod = lease = 0, and a value compare on
//!   it is false; deleting a key and putting it again starts over at version 1;
//! * historical reads and watches below the compacted revision fail with `Compacted`;
//! * leases expire on the etcd node's clocks with millisecond resolution (a deadline on the
//!   monotonic clock, noticed through a queue ordered by the wall clock: see [`super::lessor`]),
//!   and an expired or revoked lease deletes all its keys in one revision.
//!
//! Time enters only as [`LeaseNow`] arguments (the etcd node's monotonic and wall clocks; a plain
//! `i64` stands for both reading the same), so the store is a pure state machine that unit tests
//! and conformance tests drive directly.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::lessor::{LeaseNow, EXPIRED_LEASE_RETRY_INTERVAL_MS};

/// A key's state as etcd returns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// Key and value are shared: a put stores one copy, and every version, read, watch event and
    /// trace event refers to it.
    pub key: Arc<str>,
    /// The value as last put.
    pub value: Arc<str>,
    /// Revision of the put that created the key (since its last deletion).
    pub create_revision: i64,
    /// Revision of the key's latest change.
    pub mod_revision: i64,
    /// Puts since creation: 1 on create, +1 per put.
    pub version: i64,
    /// ID of the lease the key is attached to (0: none).
    pub lease: i64,
}

/// A change as a watcher sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// Put or delete.
    pub kind: EventKind,
    /// For a put, the key's new state; for a delete, the key with `mod_revision` = the deletion's
    /// revision and every other field zero/empty.
    pub kv: KeyValue,
    /// Sub-revision (order within the transaction).
    pub sub: i64,
    /// The value before a delete (for traces; etcd returns it with `prev_kv`).
    pub prev_value: Arc<str>,
}

/// Kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted (by a client, or with its lease).
    Delete,
}

/// Errors etcd itself returns (transport errors live in `etcd::EtcdError`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoreError {
    /// The requested revision has been compacted (`etcdserver: mvcc: required revision has been compacted`).
    Compacted {
        /// The revision up to which history was compacted.
        compact_revision: i64,
    },
    /// The requested revision is in the future.
    FutureRevision,
    /// The lease does not exist (`etcdserver: requested lease not found`).
    LeaseNotFound,
}

/// What a compare looks at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The key's value, compared as text (false on a missing key, whatever the operator).
    Value(String),
    /// The key's `version` (0 if missing).
    Version(i64),
    /// The key's `create_revision` (0 if missing).
    CreateRevision(i64),
    /// The key's `mod_revision` (0 if missing).
    ModRevision(i64),
    /// The key's lease ID (0 if missing or without a lease).
    Lease(i64),
}

/// Comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    /// The key's attribute equals the target's.
    Equal,
    /// The key's attribute differs from the target's.
    NotEqual,
    /// The key's attribute is below the target's.
    Less,
    /// The key's attribute is above the target's.
    Greater,
}

/// One guard of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compare {
    /// The key whose current state is compared.
    pub key: String,
    /// How the key's attribute must relate to the target's value.
    pub op: CmpOp,
    /// Which attribute, and the value it is compared with.
    pub target: Target,
}

/// One operation of a transaction branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Reads a key or prefix (seeing the transaction's earlier writes).
    Range {
        /// The key, or the prefix with `prefix`.
        key: String,
        /// Read every key that starts with `key`.
        prefix: bool,
    },
    /// Creates or updates a key.
    Put {
        /// The key written.
        key: String,
        /// Its new value.
        value: String,
        /// Lease to attach it to (0: none); an unknown lease fails the whole transaction.
        lease: i64,
    },
    /// Deletes a key or every key under a prefix.
    Delete {
        /// The key, or the prefix with `prefix`.
        key: String,
        /// Delete every key that starts with `key`.
        prefix: bool,
    },
}

/// Result of one operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpResult {
    /// What a [`Op::Range`] read.
    Range {
        /// The live keys in range, in key order.
        kvs: Vec<KeyValue>,
    },
    /// A [`Op::Put`] was applied.
    Put,
    /// What a [`Op::Delete`] did.
    Delete {
        /// How many live keys it deleted.
        deleted: i64,
    },
}

/// A transaction: if every compare holds, run `success`, else `failure`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txn {
    /// Guards that must all hold for `success` to run (none: always).
    pub compare: Vec<Compare>,
    /// Operations run, in order, when every guard holds.
    pub success: Vec<Op>,
    /// Operations run, in order, when some guard fails.
    pub failure: Vec<Op>,
}

impl Txn {
    /// An unconditional put.
    pub fn put(key: &str, value: &str, lease: i64) -> Txn {
        Txn {
            success: vec![Op::Put {
                key: key.into(),
                value: value.into(),
                lease,
            }],
            ..Default::default()
        }
    }

    /// An unconditional delete of a key or prefix.
    pub fn delete(key: &str, prefix: bool) -> Txn {
        Txn {
            success: vec![Op::Delete {
                key: key.into(),
                prefix,
            }],
            ..Default::default()
        }
    }

    /// A put guarded by `mod_revision == 0` (only if the key is absent).
    pub fn put_if_absent(key: &str, value: &str, lease: i64) -> Txn {
        Txn::put(key, value, lease).when(key, Target::ModRevision(0))
    }

    /// A put guarded by `value == expected`.
    pub fn put_if_value(key: &str, value: &str, lease: i64, expected: &str) -> Txn {
        Txn::put(key, value, lease).when(key, Target::Value(expected.into()))
    }

    /// A delete guarded by `value == expected`.
    pub fn delete_if_value(key: &str, expected: &str) -> Txn {
        Txn::delete(key, false).when(key, Target::Value(expected.into()))
    }

    /// Adds an equality guard.
    pub fn when(mut self, key: &str, target: Target) -> Txn {
        self.compare.push(Compare {
            key: key.into(),
            op: CmpOp::Equal,
            target,
        });
        self
    }

    /// Sets the failure branch.
    pub fn otherwise(mut self, ops: Vec<Op>) -> Txn {
        self.failure = ops;
        self
    }
}

/// Result of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnResponse {
    /// Whether every compare held (so `success` ran, not `failure`).
    pub succeeded: bool,
    /// Header revision: the store's revision after the transaction.
    pub revision: i64,
    /// One result per operation of the branch that ran, in order.
    pub results: Vec<OpResult>,
}

#[derive(Clone, Debug)]
struct Version {
    main: i64,
    sub: i64,
    kv: Option<KeyValue>,
}

#[derive(Clone, Debug)]
struct Lease {
    ttl_s: i64,
    /// The deadline on the etcd process's monotonic clock (`Lease.expiry`'s monotonic reading).
    expiry_ms: i64,
    /// When the lessor's queue next looks at the lease, on the wall clock (the queue item's
    /// `time`, a `UnixNano`).
    due_wall_ms: i64,
    keys: BTreeSet<String>,
}

/// The store. See the module documentation.
#[derive(Clone, Debug)]
pub struct Store {
    revision: i64,
    compact_revision: i64,
    keys: BTreeMap<String, Vec<Version>>,
    leases: BTreeMap<i64, Lease>,
    /// At most the earliest wall-clock time at which the lessor's queue looks at a lease
    /// (`i64::MAX` without leases), lowered by every grant or keep-alive and made exact by every
    /// scan: `expire`, asked on every request, scans only once it is reached.
    earliest_due_wall_ms: i64,
    next_lease: i64,
    min_ttl_s: i64,
}

/// etcd's minimum lease TTL with default election settings (1 s election timeout): 2 s, that is
/// 1.5 election timeouts rounded up to whole seconds (`minTTL` and `math.Ceil`, `etcd-io/etcd`
/// `v3.4.23`, `etcdserver/server.go` lines 550, 559).
pub const DEFAULT_MIN_TTL_S: i64 = 2;

impl Default for Store {
    fn default() -> Self {
        Store::new(DEFAULT_MIN_TTL_S)
    }
}

/// Whether key `k` is `key` (or, with `prefix`, starts with it).
pub fn in_range(k: &str, key: &str, prefix: bool) -> bool {
    if prefix {
        k.starts_with(key)
    } else {
        k == key
    }
}

impl Store {
    /// A fresh store (revision 1) whose leases have at least `min_ttl_s`.
    pub fn new(min_ttl_s: i64) -> Self {
        Store {
            revision: 1,
            compact_revision: 0,
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            earliest_due_wall_ms: i64::MAX,
            next_lease: 0x3a5f_0000_0000_0001,
            min_ttl_s,
        }
    }

    /// Current revision.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// Last compacted revision (0 = never).
    pub fn compact_revision(&self) -> i64 {
        self.compact_revision
    }

    fn live(&self, key: &str) -> Option<&KeyValue> {
        self.keys
            .get(key)
            .and_then(|v| v.last())
            .and_then(|v| v.kv.as_ref())
    }

    fn keys_in<'a>(
        &'a self,
        key: &'a str,
        prefix: bool,
    ) -> impl Iterator<Item = (&'a String, &'a Vec<Version>)> + 'a {
        use std::ops::Bound;
        self.keys
            .range::<str, _>((Bound::Included(key), Bound::Unbounded))
            .take_while(move |(k, _)| in_range(k, key, prefix))
    }

    /// Reads a key (or a prefix) at `revision` (0 = current). Returns the key-values and the header
    /// revision.
    pub fn range(
        &self,
        key: &str,
        prefix: bool,
        revision: i64,
    ) -> Result<(Vec<KeyValue>, i64), StoreError> {
        let at = if revision <= 0 {
            self.revision
        } else {
            revision
        };
        if at > self.revision {
            return Err(StoreError::FutureRevision);
        }
        if at < self.compact_revision {
            return Err(StoreError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        let kvs = self
            .keys_in(key, prefix)
            .filter_map(|(_, versions)| {
                let i = versions.partition_point(|v| v.main <= at);
                versions[..i].last().and_then(|v| v.kv.clone())
            })
            .collect();
        Ok((kvs, self.revision))
    }

    fn compare(&self, c: &Compare) -> bool {
        let kv = self.live(&c.key);
        let ord = match (&c.target, kv) {
            (Target::Value(_), None) => return false,
            (Target::Value(v), Some(kv)) => (*kv.value).cmp(v.as_str()),
            (Target::Version(n), kv) => kv.map_or(0, |k| k.version).cmp(n),
            (Target::CreateRevision(n), kv) => kv.map_or(0, |k| k.create_revision).cmp(n),
            (Target::ModRevision(n), kv) => kv.map_or(0, |k| k.mod_revision).cmp(n),
            (Target::Lease(n), kv) => kv.map_or(0, |k| k.lease).cmp(n),
        };
        match c.op {
            CmpOp::Equal => ord.is_eq(),
            CmpOp::NotEqual => ord.is_ne(),
            CmpOp::Less => ord.is_lt(),
            CmpOp::Greater => ord.is_gt(),
        }
    }

    /// Runs a transaction. Returns the response and the changes it made (for watchers).
    pub fn txn(&mut self, txn: &Txn) -> Result<(TxnResponse, Vec<WatchEvent>), StoreError> {
        let succeeded = txn.compare.iter().all(|c| self.compare(c));
        let ops = if succeeded {
            &txn.success
        } else {
            &txn.failure
        };
        // Validate first: an unknown lease fails the whole transaction with nothing applied.
        for op in ops {
            if let Op::Put { lease, .. } = op {
                if *lease != 0 && !self.leases.contains_key(lease) {
                    return Err(StoreError::LeaseNotFound);
                }
            }
        }
        let rev = self.revision + 1;
        let mut sub = 0i64;
        let mut events = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            match op {
                Op::Range { key, prefix } => {
                    // Reads inside a transaction see the transaction's earlier writes.
                    let kvs = self
                        .keys_in(key, *prefix)
                        .filter_map(|(_, v)| v.last().and_then(|v| v.kv.clone()))
                        .collect();
                    results.push(OpResult::Range { kvs });
                }
                Op::Put { key, value, lease } => {
                    events.push(self.put_at(rev, sub, key, value, *lease));
                    sub += 1;
                    results.push(OpResult::Put);
                }
                Op::Delete { key, prefix } => {
                    let doomed: Vec<String> = self
                        .keys_in(key, *prefix)
                        .filter(|(_, v)| v.last().is_some_and(|v| v.kv.is_some()))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in &doomed {
                        events.push(self.delete_at(rev, sub, k));
                        sub += 1;
                    }
                    results.push(OpResult::Delete {
                        deleted: doomed.len() as i64,
                    });
                }
            }
        }
        if !events.is_empty() {
            self.revision = rev;
        }
        Ok((
            TxnResponse {
                succeeded,
                revision: self.revision,
                results,
            },
            events,
        ))
    }

    fn put_at(&mut self, rev: i64, sub: i64, key: &str, value: &str, lease: i64) -> WatchEvent {
        // The live key (a cheap copy: its key and value are shared).
        let prev = self.live(key).cloned();
        if let Some(p) = &prev {
            if p.lease != 0 && p.lease != lease {
                if let Some(l) = self.leases.get_mut(&p.lease) {
                    l.keys.remove(key);
                }
            }
        }
        if lease != 0 {
            let keys = &mut self.leases.get_mut(&lease).expect("validated").keys;
            if !keys.contains(key) {
                keys.insert(key.to_string());
            }
        }
        let kv = KeyValue {
            key: prev
                .as_ref()
                .map_or_else(|| Arc::from(key), |p| p.key.clone()),
            value: Arc::from(value),
            create_revision: prev.as_ref().map_or(rev, |p| p.create_revision),
            mod_revision: rev,
            version: prev.as_ref().map_or(1, |p| p.version + 1),
            lease,
        };
        let version = Version {
            main: rev,
            sub,
            kv: Some(kv.clone()),
        };
        match self.keys.get_mut(key) {
            Some(versions) => versions.push(version),
            None => {
                self.keys.insert(key.to_string(), vec![version]);
            }
        }
        WatchEvent {
            kind: EventKind::Put,
            kv,
            sub,
            prev_value: prev.map(|p| p.value).unwrap_or_default(),
        }
    }

    fn delete_at(&mut self, rev: i64, sub: i64, key: &str) -> WatchEvent {
        let prev = self.live(key).cloned().expect("deleting a live key");
        if prev.lease != 0 {
            if let Some(l) = self.leases.get_mut(&prev.lease) {
                l.keys.remove(key);
            }
        }
        self.keys.get_mut(key).expect("live key").push(Version {
            main: rev,
            sub,
            kv: None,
        });
        let kv = KeyValue {
            key: prev.key.clone(),
            mod_revision: rev,
            ..Default::default()
        };
        WatchEvent {
            kind: EventKind::Delete,
            kv,
            sub,
            prev_value: prev.value,
        }
    }

    /// `put` as a one-operation transaction.
    pub fn put(
        &mut self,
        key: &str,
        value: &str,
        lease: i64,
    ) -> Result<(i64, Vec<WatchEvent>), StoreError> {
        let txn = Txn::put(key, value, lease);
        self.txn(&txn).map(|(r, e)| (r.revision, e))
    }

    /// `delete` (of a key or a prefix) as a one-operation transaction; returns how many were deleted.
    pub fn delete(&mut self, key: &str, prefix: bool) -> (i64, i64, Vec<WatchEvent>) {
        let txn = Txn::delete(key, prefix);
        let (r, e) = self.txn(&txn).expect("deletes cannot fail");
        let deleted = match r.results[0] {
            OpResult::Delete { deleted } => deleted,
            _ => unreachable!(),
        };
        (deleted, r.revision, e)
    }

    /// Grants a lease of `ttl_s` (raised to the minimum TTL) at `now`. Returns (id, ttl).
    pub fn grant(&mut self, ttl_s: i64, now: impl Into<LeaseNow>) -> (i64, i64) {
        let now = now.into();
        let ttl_s = ttl_s.max(self.min_ttl_s);
        let id = self.next_lease;
        self.next_lease += 1;
        self.leases.insert(
            id,
            Lease {
                ttl_s,
                expiry_ms: 0,
                due_wall_ms: 0,
                keys: BTreeSet::new(),
            },
        );
        self.refresh(id, now, 0);
        (id, ttl_s)
    }

    /// etcd's `Lease.refresh(extend)` and the queue update after it: the deadline is the granted
    /// TTL plus `extend_ms` from now, on both clocks.
    fn refresh(&mut self, id: i64, now: LeaseNow, extend_ms: i64) {
        let l = self.leases.get_mut(&id).expect("a known lease");
        let ms = extend_ms + l.ttl_s * 1000;
        l.expiry_ms = now.mono_ms + ms;
        l.due_wall_ms = now.wall_ms + ms;
        self.earliest_due_wall_ms = self.earliest_due_wall_ms.min(l.due_wall_ms);
    }

    /// Keeps a lease alive: resets its remaining TTL to the granted TTL and returns it; an unknown
    /// or already expired lease (on the monotonic clock, whether or not it has been revoked yet)
    /// returns 0. (etcd's `Renew` waits for such a lease's revocation and then answers "not
    /// found", `lease/lessor.go` lines 412-426; the model answers at once.)
    pub fn keep_alive(&mut self, id: i64, now: impl Into<LeaseNow>) -> i64 {
        let now = now.into();
        match self.leases.get(&id) {
            Some(l) if l.expiry_ms > now.mono_ms => {
                let ttl_s = l.ttl_s;
                self.refresh(id, now, 0);
                ttl_s
            }
            _ => 0,
        }
    }

    /// Remaining and granted TTL of a lease (remaining rounded up to whole seconds, on the
    /// monotonic clock). An unknown or expired lease answers TTL -1 and granted TTL 0, without an
    /// error (etcd 3.4).
    pub fn time_to_live(&self, id: i64, now: impl Into<LeaseNow>) -> (i64, i64) {
        let now = now.into();
        match self.leases.get(&id) {
            Some(l) if l.expiry_ms > now.mono_ms => {
                ((l.expiry_ms - now.mono_ms + 999) / 1000, l.ttl_s)
            }
            _ => (-1, 0),
        }
    }

    fn drop_lease(&mut self, id: i64) -> Vec<WatchEvent> {
        let Some(lease) = self.leases.remove(&id) else {
            return Vec::new();
        };
        let rev = self.revision + 1;
        let events: Vec<WatchEvent> = lease
            .keys
            .iter()
            .filter(|k| self.live(k).is_some_and(|kv| kv.lease == id))
            .cloned()
            .collect::<Vec<_>>()
            .iter()
            .enumerate()
            .map(|(sub, k)| self.delete_at(rev, sub as i64, k))
            .collect();
        if !events.is_empty() {
            self.revision = rev;
        }
        events
    }

    /// Revokes a lease, deleting its keys in one revision.
    pub fn revoke(&mut self, id: i64) -> Result<(i64, Vec<WatchEvent>), StoreError> {
        if !self.leases.contains_key(&id) {
            return Err(StoreError::LeaseNotFound);
        }
        let events = self.drop_lease(id);
        Ok((self.revision, events))
    }

    /// A check of the lessor at `now` (etcd's `findExpiredLeases`, see [`super::lessor`]): every
    /// lease due on the wall clock is looked at; one expired on the monotonic clock is revoked,
    /// one that expires within `grace_ms` is left due (the next check revokes it), and any other
    /// is looked at again [`EXPIRED_LEASE_RETRY_INTERVAL_MS`] later on the wall clock. Returns
    /// each revoked lease with the deletions it caused (one revision per lease).
    pub fn expire_with_grace(
        &mut self,
        now: impl Into<LeaseNow>,
        grace_ms: i64,
    ) -> Vec<(i64, Vec<WatchEvent>)> {
        let now = now.into();
        if now.wall_ms < self.earliest_due_wall_ms {
            return Vec::new();
        }
        let mut expired = Vec::new();
        let due: Vec<i64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.due_wall_ms <= now.wall_ms)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let remaining_ms = self.leases[&id].expiry_ms - now.mono_ms;
            if remaining_ms <= 0 {
                expired.push((id, self.drop_lease(id)));
            } else if remaining_ms > grace_ms {
                let l = self.leases.get_mut(&id).expect("a due lease");
                l.due_wall_ms = now.wall_ms + EXPIRED_LEASE_RETRY_INTERVAL_MS;
            }
        }
        self.earliest_due_wall_ms = self.next_expiry_ms().unwrap_or(i64::MAX);
        expired
    }

    /// [`Store::expire_with_grace`] without grace: a check that sees exactly `now`.
    pub fn expire(&mut self, now: impl Into<LeaseNow>) -> Vec<(i64, Vec<WatchEvent>)> {
        self.expire_with_grace(now, 0)
    }

    /// The earliest wall-clock time (etcd clock, ms) at which the lessor's queue looks at a lease,
    /// if any lease exists: its deadline unless a check or a wall-clock step moved it.
    pub fn next_expiry_ms(&self) -> Option<i64> {
        self.leases.values().map(|l| l.due_wall_ms).min()
    }

    /// When the next check can revoke a lease, as of `now` (just after a check at `now`): the
    /// earliest wall-clock time at which a lease not yet due is looked at, and the earliest
    /// monotonic deadline of a lease already due (one left due by the grace of
    /// [`Store::expire_with_grace`]).
    pub fn next_wake(&self, now: impl Into<LeaseNow>) -> (Option<i64>, Option<i64>) {
        let now = now.into();
        let (due, waiting): (Vec<&Lease>, Vec<&Lease>) = self
            .leases
            .values()
            .partition(|l| l.due_wall_ms <= now.wall_ms);
        (
            waiting.iter().map(|l| l.due_wall_ms).min(),
            due.iter().map(|l| l.expiry_ms).min(),
        )
    }

    /// The member becomes leader again after a restart, without lease checkpointing (etcd 3.4):
    /// every lease gets its full TTL again, plus `extend_ms` (the election timeout), from `now`.
    ///
    /// This is etcd's `lessor.Promote(extend)` (`etcd-io/etcd` `v3.4.23`, `lease/lessor.go` lines
    /// 467-519: `l.refresh(extend)` at line 475, `expiry = now + extend + RemainingTTL()` at lines
    /// 876-881, `RemainingTTL()` = the granted TTL without a checkpoint, lines 868-873), called
    /// with `s.Cfg.electionTimeout()` (`etcdserver/server.go` line 2219); see [`super::lessor`].
    pub fn promote(&mut self, now: impl Into<LeaseNow>, extend_ms: i64) {
        let now = now.into();
        self.earliest_due_wall_ms = i64::MAX;
        let ids: Vec<i64> = self.leases.keys().copied().collect();
        for id in ids {
            self.refresh(id, now, extend_ms);
        }
    }

    /// A restart that keeps every lease's deadline on the wall clock (a hypothetical etcd that
    /// persisted them; etcd 3.4 does not, see [`Store::promote`]). The restarted process's
    /// monotonic clock starts afresh, so each deadline is carried over as the time left until
    /// it on the wall clock.
    pub fn keep_deadlines_across_restart(&mut self, now: impl Into<LeaseNow>) {
        let now = now.into();
        for l in self.leases.values_mut() {
            l.expiry_ms = now.mono_ms + (l.due_wall_ms - now.wall_ms).max(0);
        }
    }

    /// Compacts history up to `rev`: older versions become unreadable.
    pub fn compact(&mut self, rev: i64) -> Result<i64, StoreError> {
        if rev > self.revision {
            return Err(StoreError::FutureRevision);
        }
        if rev <= self.compact_revision {
            return Err(StoreError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        self.compact_revision = rev;
        self.keys.retain(|_, versions| {
            let i = versions.partition_point(|v| v.main <= rev);
            // Keep the version in force at `rev` (unless it is a deletion) and everything newer.
            let keep_from = if i > 0 && versions[i - 1].kv.is_some() {
                i - 1
            } else {
                i
            };
            versions.drain(..keep_from);
            !versions.is_empty()
        });
        Ok(self.revision)
    }

    /// Every change to `key` (or the prefix) with revision `>= start`, in revision order; fails if
    /// `start` is below the compacted revision.
    pub fn events_since(
        &self,
        key: &str,
        prefix: bool,
        start: i64,
    ) -> Result<Vec<WatchEvent>, StoreError> {
        if start < self.compact_revision {
            return Err(StoreError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        let mut out = Vec::new();
        for (k, versions) in self.keys_in(key, prefix) {
            let i = versions.partition_point(|v| v.main < start);
            for (j, v) in versions.iter().enumerate().skip(i) {
                let prev_value = if j > 0 {
                    versions[j - 1]
                        .kv
                        .as_ref()
                        .map(|p| p.value.clone())
                        .unwrap_or_default()
                } else {
                    Arc::from("")
                };
                out.push(match &v.kv {
                    Some(kv) => WatchEvent {
                        kind: EventKind::Put,
                        kv: kv.clone(),
                        sub: v.sub,
                        prev_value,
                    },
                    None => WatchEvent {
                        kind: EventKind::Delete,
                        kv: KeyValue {
                            key: Arc::from(k.as_str()),
                            mod_revision: v.main,
                            ..Default::default()
                        },
                        sub: v.sub,
                        prev_value,
                    },
                });
            }
        }
        out.sort_by_key(|e| (e.kv.mod_revision, e.sub));
        Ok(out)
    }
}
