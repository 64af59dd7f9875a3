//! What a Cilium run adds to its report: the IPs each node holds in the release handshake, and the
//! headline measure, the median time from excess to release.

use model::cilium::CiliumEvent;
use reports::{BandKind, Lane, Measure, ReportLens, Rows};
use sim::event::Record;
use std::collections::BTreeMap;

/// A node holds IPs in the release handshake.
pub const HANDSHAKE: BandKind = BandKind::new(
    "handshake",
    "IPs in the release handshake",
    "#fb8c00",
    Lane::Belief,
);

/// The Cilium lens.
#[derive(Default)]
pub struct CiliumLens {
    /// Node -> IP -> handshake state, as the agent's view has it.
    handshake: BTreeMap<String, BTreeMap<String, String>>,
    /// Excess-to-release times of the releases (s).
    releases: Vec<f64>,
}

impl ReportLens for CiliumLens {
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows) {
        let Some(e) = rec.event.system::<CiliumEvent>() else {
            return;
        };
        match e {
            CiliumEvent::CiliumAgentState { ip, state, .. } => {
                let held = self.handshake.entry(node.to_string()).or_default();
                match state.as_deref() {
                    Some(s @ ("marked-for-release" | "ready-for-release")) => {
                        held.insert(ip.to_string(), s.to_string());
                    }
                    _ => {
                        held.remove(ip.as_str());
                    }
                }
                let Some(row) = rows.get(node) else { return };
                row.end("handshake", t);
                if !held.is_empty() {
                    let label = format!("{} IP(s) in the release handshake", held.len());
                    row.start("handshake", HANDSHAKE, t, &label);
                }
            }
            CiliumEvent::CiliumRelease { excess_for_ms, .. } => {
                self.releases.push(*excess_for_ms as f64 / 1000.0)
            }
            _ => {}
        }
    }

    fn headline(&mut self, _end: f64) -> Measure {
        Measure::seconds(
            "median time from excess to release",
            reports::median(&self.releases),
        )
    }

    fn bands(&self) -> &'static [BandKind] {
        &[HANDSHAKE]
    }
}
