//! Ground truth for `port-status-converges`: what Felix last reported for each port (its endpoint
//! status key in etcd, its LATEST value) against what Neutron stores for it. Reads events only
//! (`EtcdPut`, `EtcdDelete`, and the model's `CalicoPortWriteSent`, `NeutronPortStatus`,
//! `NeutronPortUnchanged` and `NeutronPortRolledBack`, observations) and calls no model function; the mapping from Calico's status to Neutron's is the spec's (`PORT_STATUS_MAPPING`, mech_calico.py line 213 at networking-calico
//! 87c15906: up -> ACTIVE, down -> DOWN, error -> ERROR; no status -> ERROR).

use model::calico::CalicoEvent;
use sim::event::Event;
use std::collections::BTreeMap;

/// A port whose Felix status changed this recently is not judged (it may still be on its way:
/// watch delivery, one poll, the writer queue and a DB call).
pub const PORT_SETTLE_US: u64 = 30_000_000;

/// Felix's and Neutron's view of every port.
#[derive(Default)]
pub struct PortView {
    /// Port id -> (Felix's status, true time it last changed).
    felix: BTreeMap<String, (Option<String>, u64)>,
    /// Port id -> Neutron's status.
    neutron: BTreeMap<String, String>,
    /// Port id -> the write Neutron applied last.
    writer: BTreeMap<String, AppliedWrite>,
    /// (process, write number) -> true time the writer sent it (until it commits or rolls back).
    sent: BTreeMap<(String, u64), u64>,
    /// Port id -> the newest send time among its applied writes, and that write's process.
    newest_applied: BTreeMap<String, (u64, String)>,
    /// Port id -> statuses committed for it so far (the row's revision: each commit bumps it).
    commits: BTreeMap<String, u64>,
}

/// The write Neutron applied last for a port.
#[derive(Clone, Debug)]
pub struct AppliedWrite {
    /// The writing process (`host:pid`).
    pub client: String,
    /// True time the writer sent it (None: its send was not seen).
    pub sent_us: Option<u64>,
    /// A write of the same port sent after it that Neutron had applied before it: (its process,
    /// its send time). This write overtook it.
    pub overtook: Option<(String, u64)>,
}

/// A port whose Neutron status differs from Felix's settled one.
pub struct Divergence {
    pub port: String,
    pub felix: Option<String>,
    pub since_us: u64,
    pub neutron: Option<String>,
    /// The write Neutron applied last.
    pub writer: Option<AppliedWrite>,
}

/// Neutron's status for Felix's (the spec's mapping).
fn expected(felix: Option<&str>) -> &'static str {
    match felix {
        Some("up") => "ACTIVE",
        Some("down") => "DOWN",
        _ => "ERROR",
    }
}

/// The port id of an endpoint status key under `prefix`, if it is one.
fn port_of<'a>(prefix: &str, key: &'a str) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix)?;
    match rest.split('/').collect::<Vec<_>>().as_slice() {
        [_, "workload", _, _, "endpoint", ep] => Some(ep),
        _ => None,
    }
}

fn status_field(value: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v["status"].as_str().map(str::to_string))
}

impl PortView {
    /// Takes in one event at true time `t`.
    pub fn observe(&mut self, prefix: &str, t: u64, event: &Event) {
        match event.system::<CalicoEvent>() {
            Some(CalicoEvent::CalicoPortWriteSent { client, write, .. }) => {
                self.sent.insert((client.clone(), *write), t);
                return;
            }
            Some(CalicoEvent::NeutronPortRolledBack { client, write, .. }) => {
                self.sent.remove(&(client.clone(), *write));
                return;
            }
            Some(CalicoEvent::NeutronPortUnchanged {
                port,
                client,
                write,
                revision,
            }) => {
                self.confirmed(port, client, *write, *revision);
                return;
            }
            Some(CalicoEvent::NeutronPortStatus {
                port,
                status,
                client,
                write,
            }) => {
                self.applied(port, status, client, *write);
                return;
            }
            _ => {}
        }
        let (port, status) = match event {
            Event::EtcdPut { key, value, .. } => match port_of(prefix, key) {
                Some(p) => (p, status_field(value)),
                None => return,
            },
            Event::EtcdDelete { key, .. } => match port_of(prefix, key) {
                Some(p) => (p, None),
                None => return,
            },
            _ => return,
        };
        let entry = self.felix.entry(port.to_string()).or_insert((None, t));
        if entry.0 != status {
            *entry = (status, t);
        }
    }

    /// `client`'s write number `write` of `port` found its status stored at `revision` (the
    /// number of statuses committed for the port before its read) and wrote nothing: it took
    /// effect as much as an applied write. A write sent before it that committed after that read
    /// (the client hears the read's answer after the commit) overtook it.
    fn confirmed(&mut self, port: &str, client: &str, write: u64, revision: u64) {
        let Some(s) = self.sent.remove(&(client.to_string(), write)) else {
            return;
        };
        let commits = self.commits.get(port).copied().unwrap_or(0);
        if commits > revision {
            if let Some(w) = self.writer.get_mut(port) {
                if w.sent_us.is_some_and(|sent| sent < s) {
                    w.overtook = Some((client.to_string(), s));
                }
            }
        }
        if self.newest_applied.get(port).is_none_or(|(n, _)| s >= *n) {
            self.newest_applied
                .insert(port.to_string(), (s, client.to_string()));
        }
    }

    /// Neutron applied `client`'s write number `write` of `port`.
    fn applied(&mut self, port: &str, status: &str, client: &str, write: u64) {
        let sent_us = self.sent.remove(&(client.to_string(), write));
        let newest = self.newest_applied.get(port).cloned();
        let overtook = match (sent_us, &newest) {
            (Some(s), Some((n, c))) if *n > s => Some((c.clone(), *n)),
            _ => None,
        };
        if let Some(s) = sent_us.filter(|s| newest.as_ref().is_none_or(|(n, _)| s >= n)) {
            self.newest_applied
                .insert(port.to_string(), (s, client.to_string()));
        }
        self.neutron.insert(port.to_string(), status.to_string());
        *self.commits.entry(port.to_string()).or_default() += 1;
        self.writer.insert(
            port.to_string(),
            AppliedWrite {
                client: client.to_string(),
                sent_us,
                overtook,
            },
        );
    }

    /// Ports settled at Felix for [`PORT_SETTLE_US`] whose Neutron status differs.
    pub fn diverged(&self, now: u64) -> Vec<Divergence> {
        self.felix
            .iter()
            .filter(|(_, (_, since))| now.saturating_sub(*since) >= PORT_SETTLE_US)
            .filter_map(|(port, (status, since))| {
                let want = expected(status.as_deref());
                let have = self.neutron.get(port);
                (have.map(String::as_str) != Some(want)).then(|| Divergence {
                    port: port.clone(),
                    felix: status.clone(),
                    since_us: *since,
                    neutron: have.cloned(),
                    writer: self.writer.get(port).cloned(),
                })
            })
            .collect()
    }
}
