//! The real server: a one-member `etcd` on free loopback ports with a temporary data directory,
//! stopped by its own process id when the [`Server`] drops, and its JSON gateway (`/v3/...`).

use base64::Engine;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Server {
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
pub(crate) fn server() -> Option<Server> {
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

pub(crate) fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

pub(crate) fn unb64(v: &Value) -> String {
    v.as_str()
        .map(|s| {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(s).unwrap()).unwrap()
        })
        .unwrap_or_default()
}

pub(crate) fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_i64().unwrap(),
        _ => 0,
    }
}

pub(crate) fn prefix_end(p: &str) -> String {
    let mut b = p.as_bytes().to_vec();
    *b.last_mut().unwrap() += 1;
    String::from_utf8(b).unwrap()
}

impl Server {
    /// Waits until the server answers (it then has a leader: a restarted member has promoted
    /// its lessor); returns the instant of the first answer.
    pub(crate) fn wait_ready(&self) -> Instant {
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
    pub(crate) fn kill_and_restart(&mut self) -> Instant {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let restarted = Instant::now();
        self.child = spawn_etcd(&self.bin, &self.dir, &self.url, &self.peer_url);
        restarted
    }

    /// POSTs to the gateway; an etcd error comes back as `Err(message)`.
    pub(crate) fn call(&self, path: &str, body: Value) -> Result<Value, String> {
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

    pub(crate) fn revision(&self) -> i64 {
        int(&self.call("/v3/kv/range", json!({"key": b64("/")})).unwrap()["header"]["revision"])
    }

    /// Opens a watch and reads `expect` event batches worth of events (then briefly waits for extras).
    pub(crate) fn watch(
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
