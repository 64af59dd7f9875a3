//! Ground truth for `port-status-converges`: what Felix last reported for each port (its endpoint
//! status key in etcd, its LATEST value) against what Neutron stores for it. Reads events only
//! (`EtcdPut`, `EtcdDelete`, and the model's `CalicoEvent::NeutronPortStatus`, an observation) and
//! calls no model function; the mapping from Calico's status to Neutron's is the spec's (`PORT_STATUS_MAPPING`, mech_calico.py line 213 at networking-calico
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
    /// Port id -> the process (`host:pid`) whose write Neutron applied last.
    writer: BTreeMap<String, String>,
}

/// A port whose Neutron status differs from Felix's settled one.
pub struct Divergence {
    pub port: String,
    pub felix: Option<String>,
    pub since_us: u64,
    pub neutron: Option<String>,
    /// The process (`host:pid`) whose write Neutron applied last.
    pub writer: Option<String>,
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
        if let Some(CalicoEvent::NeutronPortStatus {
            port,
            status,
            client,
        }) = event.system::<CalicoEvent>()
        {
            self.neutron.insert(port.clone(), status.clone());
            self.writer.insert(port.clone(), client.clone());
            return;
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
