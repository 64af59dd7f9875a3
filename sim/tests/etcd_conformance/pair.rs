//! One sequence run on both sides: the simulated store and the real server, each answer
//! normalised to an [`Obs`] so the two compare.

use crate::server::{b64, int, prefix_end, unb64, Server};
use crate::steps::{real_err, store_err, Kv, Obs, Step};
use serde_json::{json, Value};
use sim::etcd::store::{CmpOp, Compare, EventKind, Op, OpResult, Store, Target, Txn};
use std::time::Instant;

/// One sequence's two sides.
pub(crate) struct Pair<'a> {
    real: &'a Server,
    sim: Store,
    ns: String,
    real_base: i64,
    sim_base: i64,
    leases: Vec<(i64, i64)>,
    compacted_d: i64,
    t0: Instant,
}

impl<'a> Pair<'a> {
    pub(crate) fn new(real: &'a Server, ns: String) -> Self {
        let real_base = real.revision();
        let sim = Store::default();
        let sim_base = sim.revision();
        Pair {
            real,
            sim,
            ns,
            real_base,
            sim_base,
            leases: Vec::new(),
            compacted_d: 0,
            t0: Instant::now(),
        }
    }

    fn key(&self, k: u8) -> String {
        format!("{}{}", self.ns, ["a", "b", "a/x", "c"][k as usize % 4])
    }

    fn now_ms(&self) -> i64 {
        self.t0.elapsed().as_millis() as i64
    }

    fn sim_kv(&self, kv: &sim::etcd::KeyValue) -> Kv {
        Kv {
            key: kv.key.to_string(),
            value: kv.value.to_string(),
            create: kv.create_revision - self.sim_base,
            modr: kv.mod_revision - self.sim_base,
            version: kv.version,
            has_lease: kv.lease != 0,
        }
    }

    fn real_kv(&self, kv: &Value) -> Kv {
        Kv {
            key: unb64(&kv["key"]),
            value: unb64(&kv["value"]),
            create: int(&kv["create_revision"]) - self.real_base,
            modr: int(&kv["mod_revision"]) - self.real_base,
            version: int(&kv["version"]),
            has_lease: int(&kv["lease"]) != 0,
        }
    }

    fn lease(&self, l: u8) -> Option<(i64, i64)> {
        (!self.leases.is_empty()).then(|| self.leases[l as usize % self.leases.len()])
    }

    fn current_d(&self) -> i64 {
        self.sim.revision() - self.sim_base
    }

    /// Runs one step on both sides and returns (sim, real).
    pub(crate) fn step(&mut self, s: &Step) -> (Obs, Obs) {
        let now = self.now_ms();
        self.sim.expire(now);
        match s {
            Step::Put { k, v, lease } => self.put(*k, *v, *lease),
            Step::PutUnknownLease { k } => self.put_unknown_lease(*k),
            Step::Get { k } => self.range(&self.key(*k), false, 0),
            Step::GetPrefix => self.range(&self.ns.clone(), true, 0),
            Step::GetAt { k, back } => {
                let d = (self.current_d() - *back as i64).max(1);
                self.range(&self.key(*k), false, d)
            }
            Step::Delete { k } => self.delete(&self.key(*k), false),
            Step::DeletePrefix => self.delete(&self.ns.clone(), true),
            Step::Txn {
                k,
                target,
                op,
                arg,
                then_put,
                else_read,
            } => self.txn(*k, *target, *op, *arg, *then_put, *else_read),
            Step::Grant { ttl } => self.grant(*ttl, now),
            Step::KeepAlive { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => self.keep_alive(s, r, now),
            },
            Step::Revoke { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => self.revoke(s, r),
            },
            Step::Ttl { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => self.ttl(s, r, now),
            },
            Step::UnknownTtl => self.ttl(0x7777, 30583, now),
            Step::Compact { back } => self.compact(*back),
            Step::Watch { k, prefix, back } => self.watch(*k, *prefix, *back),
        }
    }

    fn put(&mut self, k: u8, v: u8, lease: Option<u8>) -> (Obs, Obs) {
        let (sl, rl) = lease.and_then(|l| self.lease(l)).unwrap_or((0, 0));
        let key = self.key(k);
        let sim = match self.sim.put(&key, &v.to_string(), sl) {
            Ok((r, _)) => Obs::Rev(r - self.sim_base),
            Err(e) => Obs::Err(store_err(&e)),
        };
        let real = match self.real.call(
            "/v3/kv/put",
            json!({"key": b64(&key), "value": b64(&v.to_string()), "lease": rl.to_string()}),
        ) {
            Ok(r) => Obs::Rev(int(&r["header"]["revision"]) - self.real_base),
            Err(e) => Obs::Err(real_err(&e)),
        };
        (sim, real)
    }

    fn put_unknown_lease(&mut self, k: u8) -> (Obs, Obs) {
        let key = self.key(k);
        let sim = self
            .sim
            .put(&key, "u", 0x7777)
            .map(|_| Obs::Skip)
            .unwrap_or_else(|e| Obs::Err(store_err(&e)));
        let real = self
            .real
            .call(
                "/v3/kv/put",
                json!({"key": b64(&key), "value": b64("u"), "lease": "30583"}),
            )
            .map(|_| Obs::Skip)
            .unwrap_or_else(|e| Obs::Err(real_err(&e)));
        (sim, real)
    }

    fn grant(&mut self, ttl: u8, now: i64) -> (Obs, Obs) {
        let (sid, sttl) = self.sim.grant(ttl as i64, now);
        let r = self
            .real
            .call("/v3/lease/grant", json!({"TTL": ttl.to_string()}))
            .unwrap();
        self.leases.push((sid, int(&r["ID"])));
        (Obs::Lease(sttl), Obs::Lease(int(&r["TTL"])))
    }

    /// Keeps lease `s` (simulated) and `r` (real) alive.
    fn keep_alive(&mut self, s: i64, r: i64, now: i64) -> (Obs, Obs) {
        let sim = self.sim.keep_alive(s, now);
        let real = self
            .real
            .call("/v3/lease/keepalive", json!({"ID": r.to_string()}))
            .unwrap();
        (Obs::Lease(sim), Obs::Lease(int(&real["result"]["TTL"])))
    }

    /// Revokes lease `s` (simulated) and `r` (real).
    fn revoke(&mut self, s: i64, r: i64) -> (Obs, Obs) {
        let sim = match self.sim.revoke(s) {
            Ok((rev, _)) => Obs::Rev(rev - self.sim_base),
            Err(e) => Obs::Err(store_err(&e)),
        };
        let real = match self
            .real
            .call("/v3/lease/revoke", json!({"ID": r.to_string()}))
        {
            Ok(v) => Obs::Rev(int(&v["header"]["revision"]) - self.real_base),
            Err(e) => Obs::Err(real_err(&e)),
        };
        (sim, real)
    }

    fn compact(&mut self, back: u8) -> (Obs, Obs) {
        let d = self.current_d() - back as i64;
        if d < 1 {
            return (Obs::Skip, Obs::Skip);
        }
        let sim = match self.sim.compact(self.sim_base + d) {
            Ok(_) => Obs::Skip,
            Err(e) => Obs::Err(store_err(&e)),
        };
        let real = match self.real.call(
            "/v3/kv/compaction",
            json!({"revision": (self.real_base + d).to_string()}),
        ) {
            Ok(_) => Obs::Skip,
            Err(e) => Obs::Err(real_err(&e)),
        };
        if sim == Obs::Skip {
            self.compacted_d = d;
        }
        (sim, real)
    }

    /// Watches from `back` revisions before the next one; the real watch waits for as many events
    /// as the simulated one saw.
    fn watch(&mut self, k: u8, prefix: bool, back: u8) -> (Obs, Obs) {
        let key = if prefix { self.ns.clone() } else { self.key(k) };
        let d = (self.current_d() + 1 - back as i64).max(1);
        let sim = match self.sim.events_since(&key, prefix, self.sim_base + d) {
            Ok(evs) => Obs::Events(
                evs.iter()
                    .map(|e| {
                        let kind = if e.kind == EventKind::Put {
                            "PUT"
                        } else {
                            "DELETE"
                        };
                        (
                            kind.to_string(),
                            e.kv.key.to_string(),
                            e.kv.value.to_string(),
                            e.kv.mod_revision - self.sim_base,
                            e.kv.version,
                        )
                    })
                    .collect(),
            ),
            Err(e) => Obs::Err(store_err(&e)),
        };
        let expect = match &sim {
            Obs::Events(e) => e.len(),
            _ => 0,
        };
        let real = match self.real.watch(&key, prefix, self.real_base + d, expect) {
            Ok(evs) => Obs::Events(
                evs.iter()
                    .map(|e| {
                        let kind = e["type"].as_str().unwrap_or("PUT").to_string();
                        let kv = &e["kv"];
                        (
                            kind,
                            unb64(&kv["key"]),
                            unb64(&kv["value"]),
                            int(&kv["mod_revision"]) - self.real_base,
                            int(&kv["version"]),
                        )
                    })
                    .collect(),
            ),
            Err(e) if e.starts_with("compacted") => Obs::Err("compacted"),
            Err(e) => panic!("watch failed: {e}"),
        };
        (sim, real)
    }

    fn ttl(&mut self, s: i64, r: i64, now: i64) -> (Obs, Obs) {
        let (ttl, granted) = self.sim.time_to_live(s, now);
        let sim = Obs::Ttl(ttl, granted);
        let v = self
            .real
            .call("/v3/lease/timetolive", json!({"ID": r.to_string()}))
            .unwrap();
        let real = Obs::Ttl(int(&v["TTL"]), int(&v["grantedTTL"]));
        // Remaining TTL is read at slightly different instants: allow one second of difference.
        match (&sim, &real) {
            (Obs::Ttl(a, g), Obs::Ttl(b, h)) if g == h && (a - b).abs() <= 1 => {
                (real.clone(), real)
            }
            _ => (sim, real),
        }
    }

    fn range(&mut self, key: &str, prefix: bool, d: i64) -> (Obs, Obs) {
        let sim = match self
            .sim
            .range(key, prefix, if d == 0 { 0 } else { self.sim_base + d })
        {
            Ok((kvs, rev)) => Obs::Kvs(
                rev - self.sim_base,
                kvs.iter().map(|kv| self.sim_kv(kv)).collect(),
            ),
            Err(e) => Obs::Err(store_err(&e)),
        };
        let mut req = json!({"key": b64(key)});
        if prefix {
            req["range_end"] = json!(b64(&prefix_end(key)));
        }
        if d != 0 {
            req["revision"] = json!((self.real_base + d).to_string());
        }
        let real = match self.real.call("/v3/kv/range", req) {
            Ok(v) => Obs::Kvs(
                int(&v["header"]["revision"]) - self.real_base,
                v["kvs"]
                    .as_array()
                    .map(|a| a.iter().map(|kv| self.real_kv(kv)).collect())
                    .unwrap_or_default(),
            ),
            Err(e) => Obs::Err(real_err(&e)),
        };
        (sim, real)
    }

    fn delete(&mut self, key: &str, prefix: bool) -> (Obs, Obs) {
        let (n, rev, _) = self.sim.delete(key, prefix);
        let sim = Obs::Deleted(n, rev - self.sim_base);
        let mut req = json!({"key": b64(key)});
        if prefix {
            req["range_end"] = json!(b64(&prefix_end(key)));
        }
        let v = self.real.call("/v3/kv/deleterange", req).unwrap();
        (
            sim,
            Obs::Deleted(
                int(&v["deleted"]),
                int(&v["header"]["revision"]) - self.real_base,
            ),
        )
    }

    fn txn(
        &mut self,
        k: u8,
        target: u8,
        op: u8,
        arg: u8,
        then_put: Option<u8>,
        else_read: bool,
    ) -> (Obs, Obs) {
        let key = self.key(k);
        let (sim_t, real_target, real_field, real_val) = self.compare_target(target, arg);
        let (sim_op, real_op) = [
            (CmpOp::Equal, "EQUAL"),
            (CmpOp::NotEqual, "NOT_EQUAL"),
            (CmpOp::Less, "LESS"),
            (CmpOp::Greater, "GREATER"),
        ][op as usize % 4];
        let success: Vec<Op> = then_put
            .map(|v| {
                vec![Op::Put {
                    key: key.clone(),
                    value: v.to_string(),
                    lease: 0,
                }]
            })
            .unwrap_or_default();
        let failure: Vec<Op> = if else_read {
            vec![Op::Range {
                key: key.clone(),
                prefix: false,
            }]
        } else {
            vec![]
        };
        let txn = Txn {
            compare: vec![Compare {
                key: key.clone(),
                op: sim_op,
                target: sim_t,
            }],
            success: success.clone(),
            failure: failure.clone(),
        };
        let sim = self.sim_txn(&txn);
        let mut cmp = json!({"key": b64(&key), "result": real_op, "target": real_target});
        cmp[real_field] = real_val;
        let body =
            json!({"compare": [cmp], "success": ops_json(&success), "failure": ops_json(&failure)});
        let real = self.real_txn(body);
        (sim, real)
    }

    /// A compare's target on both sides: the simulated one, and the real one's `target`, the
    /// field holding its value, and that value.
    fn compare_target(&self, target: u8, arg: u8) -> (Target, &'static str, &'static str, Value) {
        // Revision arguments are relative to the base so both sides compare the same thing; 0 stays 0.
        let rel = |base: i64| if arg == 0 { 0 } else { base + arg as i64 };
        match target {
            0 => (
                Target::Value(arg.to_string()),
                "VALUE",
                "value",
                json!(b64(&arg.to_string())),
            ),
            1 => (
                Target::Version(arg as i64),
                "VERSION",
                "version",
                json!(arg.to_string()),
            ),
            2 => (
                Target::CreateRevision(rel(self.sim_base)),
                "CREATE",
                "create_revision",
                json!(rel(self.real_base).to_string()),
            ),
            3 => (
                Target::ModRevision(rel(self.sim_base)),
                "MOD",
                "mod_revision",
                json!(rel(self.real_base).to_string()),
            ),
            _ => (Target::Lease(0), "LEASE", "lease", json!("0")),
        }
    }

    /// The simulated store's answer to `txn`.
    fn sim_txn(&mut self, txn: &Txn) -> Obs {
        match self.sim.txn(txn) {
            Ok((r, _)) => Obs::Txn {
                succeeded: r.succeeded,
                rev: r.revision - self.sim_base,
                results: r
                    .results
                    .iter()
                    .map(|o| match o {
                        OpResult::Range { kvs } => {
                            Obs::Kvs(0, kvs.iter().map(|kv| self.sim_kv(kv)).collect())
                        }
                        _ => Obs::Skip,
                    })
                    .collect(),
            },
            Err(e) => Obs::Err(store_err(&e)),
        }
    }

    /// The real server's answer to the transaction `body` (the gateway's JSON).
    fn real_txn(&self, body: Value) -> Obs {
        match self.real.call("/v3/kv/txn", body) {
            Ok(v) => Obs::Txn {
                succeeded: v["succeeded"].as_bool().unwrap_or(false),
                rev: int(&v["header"]["revision"]) - self.real_base,
                results: v["responses"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|r| match r.get("response_range") {
                                Some(rr) => Obs::Kvs(
                                    0,
                                    rr["kvs"]
                                        .as_array()
                                        .map(|a| a.iter().map(|kv| self.real_kv(kv)).collect())
                                        .unwrap_or_default(),
                                ),
                                None => Obs::Skip,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            Err(e) => Obs::Err(real_err(&e)),
        }
    }
}

/// A transaction branch's operations as the gateway's JSON.
fn ops_json(ops: &[Op]) -> Vec<Value> {
    ops.iter()
        .map(|o| match o {
            Op::Put { key, value, .. } => {
                json!({"request_put": {"key": b64(key), "value": b64(value)}})
            }
            Op::Range { key, .. } => json!({"request_range": {"key": b64(key)}}),
            Op::Delete { key, .. } => json!({"request_delete_range": {"key": b64(key)}}),
        })
        .collect()
}

pub(crate) fn run_sequence(real: &Server, ns: String, steps: &[Step]) -> Result<(), String> {
    let mut p = Pair::new(real, ns);
    let mut result = Ok(());
    for (i, s) in steps.iter().enumerate() {
        let (sim, real) = p.step(s);
        if sim != real {
            result = Err(format!("step {i} {s:?}:\n  simulated: {sim:?}\n  real etcd: {real:?}\n  sequence: {steps:?}"));
            break;
        }
    }
    // Sequences share the server: leases left behind would expire during a later sequence and
    // move the revision under it.
    for (_, lease) in &p.leases {
        let _ = real.call("/v3/lease/revoke", json!({"ID": lease.to_string()}));
    }
    result
}

static NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn fresh_ns(tag: &str) -> String {
    format!(
        "/conf-{tag}-{}/",
        NS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}
