//! The simulated etcd store agrees with a real etcd 3.4 server (shared/spec/etcd.md, "Conformance").
//!
//! A real `etcd` (Debian's `etcd-server`; `.ci/run` installs it) is started on free loopback ports
//! with a temporary data directory and stopped by its own process id when the test ends. The same
//! operation sequences run against it (through its JSON gateway, `/v3/...`) and against
//! `sim::etcd::Store`; every response field the models read must match: succeeded, header revision,
//! create/mod revision, version, value, lease presence, TTLs, error kinds and watch events in order.
//!
//! Revisions are compared relative to each sequence's starting revision (one real server serves
//! every sequence, each under its own key prefix); lease ids are compared by grant order.
//!
//! Without an `etcd` binary the tests print why and pass, except under CI (`CI` set), where a
//! missing server is a failure: CI must run them.

use base64::Engine;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use serde_json::{json, Value};
use sim::etcd::store::{CmpOp, Compare, EventKind, Op, OpResult, Store, StoreError, Target, Txn};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ the real server

struct Server {
    child: Child,
    url: String,
    dir: std::path::PathBuf,
    agent: ureq::Agent,
    bin: std::path::PathBuf,
    peer_url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn etcd_binary() -> Option<std::path::PathBuf> {
    ["/usr/bin/etcd", "/usr/local/bin/etcd"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// Starts a real etcd for one test (stopped by its process id when the returned value drops).
fn server() -> Option<Server> {
    // The suite is #[ignore]d (a plain `cargo test` lists it as ignored, with the reason); run
    // with `--ignored` it must have its server.
    let Some(bin) = etcd_binary() else {
        panic!("etcd is not installed: `just deps` (apt-get install etcd-server) runs the conformance suite");
    };
    let (client, peer) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("faultline-etcd-{}-{client}", std::process::id()));
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = spawn_etcd(&bin, &dir, &url, &peer_url);
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let s = Server {
        child,
        url,
        dir,
        agent,
        bin,
        peer_url,
    };
    s.wait_ready();
    Some(s)
}

/// Starts `etcd` (default flags: 100 ms heartbeat, 1 s election timeout, no lease checkpointing)
/// as a one-member cluster on loopback, with its data in `dir`.
fn spawn_etcd(bin: &std::path::Path, dir: &std::path::Path, url: &str, peer_url: &str) -> Child {
    Command::new(bin)
        .args(["--name", "conformance", "--data-dir"])
        .arg(dir)
        .args(["--listen-client-urls", url, "--advertise-client-urls", url])
        .args([
            "--listen-peer-urls",
            peer_url,
            "--initial-advertise-peer-urls",
            peer_url,
        ])
        .args(["--initial-cluster", &format!("conformance={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd starts")
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn unb64(v: &Value) -> String {
    v.as_str()
        .map(|s| {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(s).unwrap()).unwrap()
        })
        .unwrap_or_default()
}

fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_i64().unwrap(),
        _ => 0,
    }
}

fn prefix_end(p: &str) -> String {
    let mut b = p.as_bytes().to_vec();
    *b.last_mut().unwrap() += 1;
    String::from_utf8(b).unwrap()
}

impl Server {
    /// Waits until the server answers (it then has a leader: a restarted member has promoted
    /// its lessor); returns the instant of the first answer.
    fn wait_ready(&self) -> Instant {
        let t0 = Instant::now();
        while self.call("/v3/kv/range", json!({"key": b64("/")})).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "etcd did not come up on {}",
                self.url
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Instant::now()
    }

    /// Kills the server (SIGKILL: no clean shutdown) and starts it again on the same data
    /// directory and ports; returns the instant it was started again.
    fn kill_and_restart(&mut self) -> Instant {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let restarted = Instant::now();
        self.child = spawn_etcd(&self.bin, &self.dir, &self.url, &self.peer_url);
        restarted
    }

    /// POSTs to the gateway; an etcd error comes back as `Err(message)`.
    fn call(&self, path: &str, body: Value) -> Result<Value, String> {
        match self
            .agent
            .post(&format!("{}{path}", self.url))
            .send_json(body)
        {
            Ok(r) => Ok(r.into_json().unwrap()),
            Err(ureq::Error::Status(code, r)) => {
                // Error bodies come chunked with a gRPC trailer ureq cannot parse: keep what was read.
                let mut buf = Vec::new();
                let _ = std::io::Read::read_to_end(&mut r.into_reader(), &mut buf);
                let text = String::from_utf8_lossy(&buf).to_string();
                let v: Value = serde_json::Deserializer::from_str(&text)
                    .into_iter::<Value>()
                    .next()
                    .and_then(Result::ok)
                    .unwrap_or(Value::Null);
                Err(v["error"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("HTTP {code} on {path}: {text}")))
            }
            Err(e) => Err(format!("etcd unreachable: {e}")),
        }
    }

    fn revision(&self) -> i64 {
        int(&self.call("/v3/kv/range", json!({"key": b64("/")})).unwrap()["header"]["revision"])
    }

    /// Opens a watch and reads `expect` event batches worth of events (then briefly waits for extras).
    fn watch(
        &self,
        key: &str,
        prefix: bool,
        start: i64,
        expect: usize,
    ) -> Result<Vec<Value>, String> {
        let mut req = json!({"key": b64(key), "start_revision": start.to_string()});
        if prefix {
            req["range_end"] = json!(b64(&prefix_end(key)));
        }
        // The read timeout bounds the wait for further events; it also bounds the wait for the
        // response's status line, which a busy machine (CI on 2 cores) can delay: then ask again
        // with a longer timeout.
        let base_ms: u64 = if expect == 0 { 150 } else { 1500 };
        let mut attempt = 0;
        let resp = loop {
            let agent = ureq::AgentBuilder::new()
                .timeout_read(Duration::from_millis(base_ms << (2 * attempt)))
                .build();
            match agent
                .post(&format!("{}/v3/watch", self.url))
                .send_json(json!({"create_request": req.clone()}))
            {
                Ok(r) => break r,
                Err(e) if attempt < 3 && e.to_string().contains("timed out") => attempt += 1,
                Err(e) => return Err(e.to_string()),
            }
        };
        let mut events = Vec::new();
        let mut de = serde_json::Deserializer::from_reader(resp.into_reader()).into_iter::<Value>();
        while let Some(Ok(msg)) = de.next() {
            let r = &msg["result"];
            if r["canceled"].as_bool() == Some(true) || int(&r["compact_revision"]) > 0 {
                return Err(format!("compacted {}", int(&r["compact_revision"])));
            }
            if let Some(evs) = r["events"].as_array() {
                events.extend(evs.iter().cloned());
            }
            if events.len() >= expect && expect > 0 {
                break;
            }
        }
        Ok(events)
    }
}

// ------------------------------------------------------------------ operations

#[derive(Clone, Debug)]
enum Step {
    Put {
        k: u8,
        v: u8,
        lease: Option<u8>,
    },
    PutUnknownLease {
        k: u8,
    },
    Get {
        k: u8,
    },
    GetPrefix,
    GetAt {
        k: u8,
        back: u8,
    },
    Delete {
        k: u8,
    },
    DeletePrefix,
    Txn {
        k: u8,
        target: u8,
        op: u8,
        arg: u8,
        then_put: Option<u8>,
        else_read: bool,
    },
    Grant {
        ttl: u8,
    },
    KeepAlive {
        l: u8,
    },
    Revoke {
        l: u8,
    },
    Ttl {
        l: u8,
    },
    UnknownTtl,
    Compact {
        back: u8,
    },
    Watch {
        k: u8,
        prefix: bool,
        back: u8,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..4, 0u8..3, proptest::option::weighted(0.3, 0u8..3)).prop_map(|(k, v, lease)| Step::Put { k, v, lease }),
        1 => (0u8..4).prop_map(|k| Step::PutUnknownLease { k }),
        3 => (0u8..4).prop_map(|k| Step::Get { k }),
        1 => Just(Step::GetPrefix),
        2 => (0u8..4, 0u8..6).prop_map(|(k, back)| Step::GetAt { k, back }),
        2 => (0u8..4).prop_map(|k| Step::Delete { k }),
        1 => Just(Step::DeletePrefix),
        4 => (0u8..4, 0u8..5, 0u8..4, 0u8..4, proptest::option::of(0u8..3), any::<bool>())
            .prop_map(|(k, target, op, arg, then_put, else_read)| Step::Txn { k, target, op, arg, then_put, else_read }),
        2 => (1u8..8).prop_map(|ttl| Step::Grant { ttl }),
        1 => (0u8..3).prop_map(|l| Step::KeepAlive { l }),
        1 => (0u8..3).prop_map(|l| Step::Revoke { l }),
        1 => (0u8..3).prop_map(|l| Step::Ttl { l }),
        1 => Just(Step::UnknownTtl),
        1 => (0u8..5).prop_map(|back| Step::Compact { back }),
        2 => (0u8..4, any::<bool>(), 0u8..6).prop_map(|(k, prefix, back)| Step::Watch { k, prefix, back }),
    ]
}

/// What either side answered, normalised (revisions relative to the sequence's base).
#[derive(Clone, Debug, PartialEq)]
enum Obs {
    Rev(i64),
    Kvs(i64, Vec<Kv>),
    Txn {
        succeeded: bool,
        rev: i64,
        results: Vec<Obs>,
    },
    Deleted(i64, i64),
    Lease(i64),
    Ttl(i64, i64),
    Events(Vec<(String, String, String, i64, i64)>),
    Err(&'static str),
    Skip,
}

#[derive(Clone, Debug, PartialEq)]
struct Kv {
    key: String,
    value: String,
    create: i64,
    modr: i64,
    version: i64,
    has_lease: bool,
}

fn store_err(e: &StoreError) -> &'static str {
    match e {
        StoreError::Compacted { .. } => "compacted",
        StoreError::FutureRevision => "future-revision",
        StoreError::LeaseNotFound => "lease-not-found",
    }
}

fn real_err(msg: &str) -> &'static str {
    if msg.contains("compacted") {
        "compacted"
    } else if msg.contains("future revision") {
        "future-revision"
    } else if msg.contains("lease not found") {
        "lease-not-found"
    } else {
        panic!("unexpected etcd error {msg}")
    }
}

/// One sequence's two sides.
struct Pair<'a> {
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
    fn new(real: &'a Server, ns: String) -> Self {
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
    fn step(&mut self, s: &Step) -> (Obs, Obs) {
        let now = self.now_ms();
        self.sim.expire(now);
        match s {
            Step::Put { k, v, lease } => {
                let (sl, rl) = lease.and_then(|l| self.lease(l)).unwrap_or((0, 0));
                let key = self.key(*k);
                let sim = match self.sim.put(&key, &v.to_string(), sl) {
                    Ok((r, _)) => Obs::Rev(r - self.sim_base),
                    Err(e) => Obs::Err(store_err(&e)),
                };
                let real = match self.real.call("/v3/kv/put", json!({"key": b64(&key), "value": b64(&v.to_string()), "lease": rl.to_string()})) {
                    Ok(r) => Obs::Rev(int(&r["header"]["revision"]) - self.real_base),
                    Err(e) => Obs::Err(real_err(&e)),
                };
                (sim, real)
            }
            Step::PutUnknownLease { k } => {
                let key = self.key(*k);
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
            Step::Grant { ttl } => {
                let (sid, sttl) = self.sim.grant(*ttl as i64, now);
                let r = self
                    .real
                    .call("/v3/lease/grant", json!({"TTL": ttl.to_string()}))
                    .unwrap();
                self.leases.push((sid, int(&r["ID"])));
                (Obs::Lease(sttl), Obs::Lease(int(&r["TTL"])))
            }
            Step::KeepAlive { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => {
                    let sim = self.sim.keep_alive(s, now);
                    let real = self
                        .real
                        .call("/v3/lease/keepalive", json!({"ID": r.to_string()}))
                        .unwrap();
                    (Obs::Lease(sim), Obs::Lease(int(&real["result"]["TTL"])))
                }
            },
            Step::Revoke { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => {
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
            },
            Step::Ttl { l } => match self.lease(*l) {
                None => (Obs::Skip, Obs::Skip),
                Some((s, r)) => self.ttl(s, r, now),
            },
            Step::UnknownTtl => self.ttl(0x7777, 30583, now),
            Step::Compact { back } => {
                let d = self.current_d() - *back as i64;
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
            Step::Watch { k, prefix, back } => {
                let key = if *prefix {
                    self.ns.clone()
                } else {
                    self.key(*k)
                };
                let d = (self.current_d() + 1 - *back as i64).max(1);
                let sim = match self.sim.events_since(&key, *prefix, self.sim_base + d) {
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
                let real = match self.real.watch(&key, *prefix, self.real_base + d, expect) {
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
        }
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
        // Revision arguments are relative to the base so both sides compare the same thing; 0 stays 0.
        let rel = |base: i64| if arg == 0 { 0 } else { base + arg as i64 };
        let (sim_t, real_target, real_field, real_val): (Target, &str, &str, Value) = match target {
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
        };
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
        let sim = match self.sim.txn(&txn) {
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
        };
        let mut cmp = json!({"key": b64(&key), "result": real_op, "target": real_target});
        cmp[real_field] = real_val;
        let to_json = |ops: &[Op]| -> Vec<Value> {
            ops.iter()
                .map(|o| match o {
                    Op::Put { key, value, .. } => {
                        json!({"request_put": {"key": b64(key), "value": b64(value)}})
                    }
                    Op::Range { key, .. } => json!({"request_range": {"key": b64(key)}}),
                    Op::Delete { key, .. } => json!({"request_delete_range": {"key": b64(key)}}),
                })
                .collect()
        };
        let body =
            json!({"compare": [cmp], "success": to_json(&success), "failure": to_json(&failure)});
        let real = match self.real.call("/v3/kv/txn", body) {
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
        };
        (sim, real)
    }
}

fn run_sequence(real: &Server, ns: String, steps: &[Step]) -> Result<(), String> {
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

fn fresh_ns(tag: &str) -> String {
    format!(
        "/conf-{tag}-{}/",
        NS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

// ------------------------------------------------------------------ the tests

/// 500 generated sequences, from a fixed seed.
#[test]
#[ignore = "needs a real etcd 3.4 (Debian etcd-server): `just deps`, then `just test-all`"]
fn generated_sequences_agree() {
    let Some(real) = server() else { return };
    let persist = FileFailurePersistence::Direct(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/proptest-regressions/etcd_conformance.txt"
    ));
    let config = Config {
        cases: 500,
        rng_seed: RngSeed::Fixed(0xe7cd_3400),
        failure_persistence: Some(Box::new(persist)),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(step(), 1..14), |steps| {
        run_sequence(&real, fresh_ns("gen"), &steps).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The hand-picked edge cases of the conformance issue.
#[test]
#[ignore = "needs a real etcd 3.4 (Debian etcd-server): `just deps`, then `just test-all`"]
fn edge_cases_agree() {
    let Some(real) = server() else { return };
    use Step::*;
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "compares on a missing key, every target and operator",
            (0..5u8)
                .flat_map(|target| {
                    (0..4u8).map(move |op| Txn {
                        k: 3,
                        target,
                        op,
                        arg: 0,
                        then_put: None,
                        else_read: true,
                    })
                })
                .collect(),
        ),
        (
            "compares on a missing key against non-zero",
            (0..5u8)
                .map(|target| Txn {
                    k: 3,
                    target,
                    op: 2,
                    arg: 1,
                    then_put: Some(1),
                    else_read: true,
                })
                .collect(),
        ),
        (
            "re-creating a deleted key",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Put {
                    k: 0,
                    v: 2,
                    lease: None,
                },
                Delete { k: 0 },
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Get { k: 0 },
                Watch {
                    k: 0,
                    prefix: false,
                    back: 5,
                },
            ],
        ),
        (
            "a txn whose failure branch only reads",
            vec![
                Put {
                    k: 1,
                    v: 1,
                    lease: None,
                },
                Txn {
                    k: 1,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(2),
                    else_read: true,
                },
                Get { k: 1 },
            ],
        ),
        (
            "put-if-absent twice",
            vec![
                Txn {
                    k: 0,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(1),
                    else_read: true,
                },
                Txn {
                    k: 0,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(2),
                    else_read: true,
                },
            ],
        ),
        (
            "a put with an unknown lease",
            vec![PutUnknownLease { k: 0 }, Get { k: 0 }],
        ),
        (
            "TTL below the minimum",
            vec![Grant { ttl: 1 }, Ttl { l: 0 }],
        ),
        ("time-to-live of an unknown lease", vec![UnknownTtl]),
        (
            "keep-alive and revoke",
            vec![
                Grant { ttl: 5 },
                Put {
                    k: 0,
                    v: 1,
                    lease: Some(0),
                },
                Put {
                    k: 2,
                    v: 1,
                    lease: Some(0),
                },
                KeepAlive { l: 0 },
                Revoke { l: 0 },
                GetPrefix,
                Revoke { l: 0 },
                KeepAlive { l: 0 },
            ],
        ),
        (
            "deleting nothing",
            vec![Delete { k: 2 }, DeletePrefix, GetPrefix],
        ),
        (
            "watch and reads across a compaction",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Put {
                    k: 0,
                    v: 2,
                    lease: None,
                },
                Put {
                    k: 1,
                    v: 1,
                    lease: None,
                },
                Compact { back: 1 },
                Watch {
                    k: 0,
                    prefix: false,
                    back: 4,
                },
                Watch {
                    k: 0,
                    prefix: true,
                    back: 2,
                },
                GetAt { k: 0, back: 3 },
                GetAt { k: 0, back: 1 },
                Compact { back: 1 },
                Compact { back: 3 },
            ],
        ),
        (
            "compacting the future",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Step::Compact { back: 0 },
            ],
        ),
    ];
    for (name, steps) in cases {
        if let Err(e) = run_sequence(&real, fresh_ns("edge"), &steps) {
            panic!("{name}: {e}");
        }
    }
}

/// Lease expiry with short TTLs and real waits: keys go away in one revision on both sides.
#[test]
#[ignore = "needs a real etcd 3.4 (Debian etcd-server): `just deps`, then `just test-all`"]
fn lease_expiry_agrees() {
    let Some(real) = server() else { return };
    use Step::*;
    let mut p = Pair::new(&real, fresh_ns("expiry"));
    for s in [
        Grant { ttl: 2 },
        Grant { ttl: 4 },
        Put {
            k: 0,
            v: 1,
            lease: Some(0),
        },
        Put {
            k: 2,
            v: 1,
            lease: Some(0),
        },
        Put {
            k: 1,
            v: 1,
            lease: Some(1),
        },
    ] {
        let (a, b) = p.step(&s);
        assert_eq!(a, b, "{s:?}");
    }
    // etcd's lessor checks expiry every 500 ms; wait past the 2 s lease but not the 4 s one.
    std::thread::sleep(Duration::from_millis(3_000));
    for s in [
        GetPrefix,
        Ttl { l: 0 },
        KeepAlive { l: 0 },
        Watch {
            k: 0,
            prefix: true,
            back: 3,
        },
    ] {
        let (a, b) = p.step(&s);
        assert_eq!(a, b, "after expiry: {s:?}");
    }
    std::thread::sleep(Duration::from_millis(2_000));
    for s in [GetPrefix, Ttl { l: 1 }] {
        let (a, b) = p.step(&s);
        assert_eq!(a, b, "after the second expiry: {s:?}");
    }
}

/// A lease across a crash and restart of the real server: etcd 3.4 (no lease checkpointing)
/// renews every lease on recovery with its full TTL plus the election timeout (`lessor.Promote`,
/// see `sim::etcd::lessor`), so the key outlives its original deadline. The real server is killed
/// part-way through a lease of etcd's minimum TTL (2 s with the default 1 s election timeout) and
/// restarted at once; the key must disappear when the model says, within the suite's tolerance
/// of one second (the one it allows for TTLs). The model's recovery instant is the moment the
/// restarted server answers again: it has a leader then, and has promoted its lessor just before.
/// The real server also notices expiry on its 500 ms loop, which the model leaves out by default.
/// Measured with etcd 3.4.23 on loopback: it answers again 1.1-1.6 s after the restart and the key
/// goes 4.5-5.0 s after the restart, 0.1-0.4 s after the model's instant; a model renewing with
/// the TTL alone would be 1.1-1.5 s early, outside the tolerance.
#[test]
#[ignore = "needs a real etcd 3.4 (Debian etcd-server): `just deps`, then `just test-all`"]
fn lease_expiry_after_a_restart_agrees() {
    use sim::etcd::lessor::DEFAULT_ELECTION_TIMEOUT_MS;
    use sim::etcd::store::DEFAULT_MIN_TTL_S;
    const TOLERANCE_MS: i64 = 1_000;
    let Some(mut real) = server() else { return };
    let key = format!("{}k", fresh_ns("restart"));
    let t0 = Instant::now();
    let ms = |t: Instant| t.duration_since(t0).as_millis() as i64;
    let present = |real: &Server| {
        let v = real
            .call("/v3/kv/range", json!({"key": b64(&key)}))
            .unwrap();
        int(&v["count"]) > 0
    };

    let mut sim = Store::default();
    let (sim_lease, sim_ttl) = sim.grant(DEFAULT_MIN_TTL_S, ms(Instant::now()));
    sim.put(&key, "v", sim_lease).unwrap();
    let granted = real
        .call(
            "/v3/lease/grant",
            json!({"TTL": DEFAULT_MIN_TTL_S.to_string()}),
        )
        .unwrap();
    assert_eq!(int(&granted["TTL"]), sim_ttl);
    let lease = int(&granted["ID"]);
    let put = json!({"key": b64(&key), "value": b64("v"), "lease": lease.to_string()});
    real.call("/v3/kv/put", put).unwrap();

    // Part-way through the TTL: kill, restart, wait until it answers.
    std::thread::sleep(Duration::from_millis(1_000));
    let restarted = real.kill_and_restart();
    let ready = real.wait_ready();
    assert!(present(&real), "the key did not survive the restart");
    sim.promote(ms(ready), DEFAULT_ELECTION_TIMEOUT_MS);
    let model_gone = sim.next_expiry_ms().unwrap();
    assert!(sim.expire(model_gone - 1).is_empty());
    assert_eq!(sim.expire(model_gone).len(), 1);

    let limit = ready + Duration::from_secs(10);
    while present(&real) {
        assert!(Instant::now() < limit, "the key never went away");
        std::thread::sleep(Duration::from_millis(20));
    }
    let real_gone = ms(Instant::now());
    let since_restart = |t: i64| t - ms(restarted);
    eprintln!(
        "restart: answering again after {} ms; key gone {} ms after the restart, model {} ms",
        ms(ready) - ms(restarted),
        since_restart(real_gone),
        since_restart(model_gone)
    );
    assert!(
        (real_gone - model_gone).abs() <= TOLERANCE_MS,
        "key gone {} ms after the restart on the real server, {} ms in the model",
        since_restart(real_gone),
        since_restart(model_gone)
    );
    // Never before a full TTL after the recovery: etcd renewed the lease.
    let ttl_only = ms(ready) + DEFAULT_MIN_TTL_S * 1000;
    assert!(
        real_gone >= ttl_only,
        "the real server did not renew the lease"
    );
}
