//! Felix on a compute host: its status report every 30 s with a 90 s lease, and its ports' status.
//!
//! The report's `time` comes from the host's WALL clock in the host's format (so clock skew shows
//! up as lag); `first_update` is true for the first report after Felix starts (after a reboot).
//!
//! Upstream: Felix writes `/calico/felix/v2/<region>/host/<host>/status` every 30 s with a 90 s
//! lease (the values networking-calico's agent-status watcher reads in
//! projectcalico/calico `networking-calico/networking_calico/plugins/ml2/drivers/calico/status.py`
//! `StatusWatcher._on_status_set`, line 202 at 87c15906).

use super::status::{format_time, TimeFormat};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::etcd::Etcd;
use sim::world::Host;
use sim::{NodeIx, World};
use std::rc::Rc;
use std::time::Duration;

/// Felix's status report interval.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(30);
/// TTL of the status key's lease.
pub const REPORT_TTL_S: i64 = 90;

/// One compute host's Felix settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FelixConfig {
    /// How it formats `time`.
    pub format: TimeFormat,
    /// Percentage of reports whose `time` is garbage.
    pub garbage_percent: u32,
    /// Number of ports (workload endpoints) on the host.
    pub ports: u32,
}

/// `/calico/felix/v2/<region>/host/` (the prefix both status watchers watch).
pub fn host_prefix(region: &str) -> String {
    format!("/calico/felix/v2/{region}/host/")
}

/// Installs Felix as the services of each compute host (`sw`: the mutant that drops its lease).
pub fn install(
    world: &World,
    hosts: &[(NodeIx, FelixConfig)],
    etcd: &Etcd,
    region: &str,
    sw: &super::Switches,
) {
    let no_lease = sw.mutant_felix_status_no_lease;
    for (node, cfg) in hosts {
        let (etcd, cfg, prefix) = (etcd.clone(), cfg.clone(), host_prefix(region));
        world.set_services(
            *node,
            Rc::new(move |host: &Host| {
                let proc = host.spawn_process("felix");
                // Felix's Go etcd client: with auth on it refreshes its token only when etcd
                // rejects it (the sim's default for a client with credentials).
                let client = etcd.client(&proc);
                let (cfg, p) = (cfg.clone(), proc.clone());
                let base = format!("{prefix}{}", host.name());
                proc.spawn("status-reporter", async move {
                    let mut rng = p.rng("felix");
                    let mut first_update = true;
                    let mut lease = 0i64;
                    // Keys made once: a report and its port writes repeat them every interval.
                    let status_key = format!("{base}/status");
                    let port_keys: Vec<String> = (0..cfg.ports)
                        .map(|i| {
                            let port = format!("{}-port-{i}", p.host_name());
                            format!("{base}/workload/openstack/{port}/endpoint/{port}")
                        })
                        .collect();
                    let mut port_up = vec![false; port_keys.len()];
                    p.sleep(Duration::from_millis(rng.random_range(0..30_000)))
                        .await;
                    loop {
                        let time = if rng.random_range(0..100) < cfg.garbage_percent {
                            "garbled-time".to_string()
                        } else {
                            format_time(p.wall_us(), cfg.format)
                        };
                        let value = serde_json::to_string(&StatusReport {
                            first_update,
                            time: &time,
                            uptime: p.mono_us() / 1_000_000,
                        })
                        .expect("a status report serializes");
                        let alive = match client.keep_alive(lease).await {
                            Ok(ttl) if ttl > 0 => Ok(lease),
                            Ok(_) => client.grant(REPORT_TTL_S).await.map(|(l, _)| l),
                            Err(e) => Err(e),
                        };
                        if let Ok(l) = alive {
                            lease = l;
                            let key_lease = if no_lease { 0 } else { lease };
                            if client.put(&status_key, &value, key_lease).await.is_ok() {
                                first_update = false;
                            }
                        }
                        // Ports come up after boot and sometimes flip.
                        for (i, port_key) in port_keys.iter().enumerate() {
                            let flip = !port_up[i] || rng.random_range(0..100) < 5;
                            if flip {
                                let up = if port_up[i] {
                                    rng.random_bool(0.5)
                                } else {
                                    true
                                };
                                let status = if up {
                                    r#"{"status":"up"}"#
                                } else {
                                    r#"{"status":"down"}"#
                                };
                                if client.put(port_key, status, 0).await.is_ok() {
                                    port_up[i] = up;
                                }
                            }
                        }
                        p.sleep(REPORT_INTERVAL).await;
                    }
                });
            }),
        );
    }
}

/// The value of Felix's `.../status` key: `{"first_update":...,"time":...,"uptime":...}`, keys
/// in sorted order (as the JSON map this struct replaced wrote them).
#[derive(Serialize)]
struct StatusReport<'a> {
    first_update: bool,
    time: &'a str,
    uptime: u64,
}
