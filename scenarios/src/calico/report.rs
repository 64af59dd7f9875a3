//! What a Calico run adds to its report: who believes it is master (the stamp) and who holds the
//! election key, stale-status warnings, and the headline measure, the longest overlap of two hosts
//! doing master-only work (acting intervals as the monitor counts them).

use super::monitor::ACTING_GAP_US;
use model::calico::CalicoEvent;
use reports::{BandKind, Lane, MarkKind, Measure, ReportLens, Rows};
use sim::event::{Event, Record};
use std::collections::BTreeMap;

/// A host believes it is master (its stamp is set).
pub const MASTER: BandKind =
    BandKind::new("master", "believes it is master", "#43a047", Lane::Belief);
/// A host holds the election key.
pub const HOLDER: BandKind =
    BandKind::new("holder", "holds the election key", "#1e88e5", Lane::Holder);
/// A stale-status warning was logged.
pub const WARNING: MarkKind = MarkKind::new("warning", "stale-status warning", "#b8860b");

/// The Calico lens.
pub struct CalicoLens {
    election_key: String,
    holder: Option<String>,
    /// Host -> (start, last) of its current acting interval (s).
    acting: BTreeMap<String, (f64, f64)>,
    overlap: f64,
}

impl Default for CalicoLens {
    fn default() -> Self {
        CalicoLens {
            election_key: model::calico::Config::default().election_key(),
            holder: None,
            acting: BTreeMap::new(),
            overlap: 0.0,
        }
    }
}

impl CalicoLens {
    fn set_holder(&mut self, host: Option<String>, label: &str, t: f64, rows: &mut Rows) {
        if self.holder == host {
            return;
        }
        if let Some(h) = self.holder.take() {
            if let Some(r) = rows.get(&h) {
                r.end("holder", t);
            }
        }
        if let Some(r) = host.as_deref().and_then(|h| rows.get(h)) {
            r.start("holder", HOLDER, t, label);
        }
        self.holder = host;
    }

    fn on_calico(&mut self, e: &CalicoEvent, node: &str, t: f64, rows: &mut Rows) {
        match e {
            CalicoEvent::CalicoStamp { stamp_us } => {
                let Some(row) = rows.get(node) else { return };
                if *stamp_us != 0 {
                    row.start("master", MASTER, t, "believes it is master");
                } else {
                    row.end("master", t);
                }
            }
            CalicoEvent::CalicoStaleWarning { host, lag_ms, .. } => {
                if let Some(row) = rows.get(node) {
                    row.mark(
                        WARNING,
                        t,
                        format!("stale report from {host}, {} s old", lag_ms / 1000),
                    );
                }
            }
            CalicoEvent::CalicoMasterOnly { .. } => self.master_only(node, t),
            _ => {}
        }
    }

    fn master_only(&mut self, node: &str, t: f64) {
        let gap = sim::units::secs(ACTING_GAP_US);
        let e = self.acting.entry(node.to_string()).or_insert((t, t));
        if t - e.1 > gap {
            *e = (t, t);
        } else {
            e.1 = t;
        }
        let (s0, _) = *e;
        for (other, (s1, l1)) in &self.acting {
            if other != node && t - l1 <= gap {
                self.overlap = self.overlap.max(t.min(*l1) - s0.max(*s1));
            }
        }
    }
}

impl ReportLens for CalicoLens {
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows) {
        if let Some(e) = rec.event.system::<CalicoEvent>() {
            return self.on_calico(e, node, t, rows);
        }
        match &rec.event {
            Event::EtcdPut { key, value, .. } if **key == *self.election_key => {
                let host = value.split(':').next().unwrap_or("").to_string();
                let label = format!("holds the election key ({value})");
                self.set_holder(Some(host), &label, t, rows);
            }
            Event::EtcdDelete { key, .. } if **key == *self.election_key => {
                self.set_holder(None, "", t, rows)
            }
            _ => {}
        }
    }

    fn headline(&mut self, _end: f64) -> Measure {
        Measure::seconds(
            "longest overlap of two hosts doing master-only work",
            Some(self.overlap),
        )
    }

    fn bands(&self) -> &'static [BandKind] {
        &[MASTER, HOLDER]
    }

    fn marks(&self) -> &'static [MarkKind] {
        &[WARNING]
    }
}
