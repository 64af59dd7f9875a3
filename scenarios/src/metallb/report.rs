//! What a MetalLB run adds to its report: who announces each IP, memberlist forgets and joins,
//! duplicate-announcer windows on the router's row, and the headline measure, the longest
//! duplicate-announcer window after the network healed (while it is split, two announcers are
//! expected).

use model::metallb::MetallbEvent;
use reports::{BandKind, Lane, MarkKind, Measure, ReportLens, Rows};
use sim::event::{Event, Record};
use sim::FaultKind;
use std::collections::{BTreeMap, BTreeSet};

/// A speaker announces a service IP.
pub const ANNOUNCER: BandKind = BandKind::new(
    "announcer",
    "announces a service IP",
    "#00897b",
    Lane::Belief,
);
/// On the router's row: two or more speakers announce one IP.
pub const DUPLICATE: BandKind = BandKind::new(
    "duplicate",
    "router: two or more speakers announce one IP",
    "#d81b60",
    Lane::Fault,
);
/// A speaker became one of two or more announcing one IP.
pub const DUPLICATE_MARK: MarkKind = MarkKind::new("duplicate", "duplicate announcer", "#d81b60");
/// Memberlist forgot a member.
pub const FORGET: MarkKind = MarkKind::new("forget", "member forgotten", "#8d6e63");
/// Memberlist joined (or tried to).
pub const JOIN: MarkKind = MarkKind::new("join", "join", "#00695c");

/// The MetalLB lens.
pub struct MetallbLens {
    /// IP -> the speakers announcing it.
    announcers: BTreeMap<String, BTreeSet<String>>,
    /// IP -> start of its current duplicate window (s).
    dup_from: BTreeMap<String, f64>,
    longest_dup: f64,
    /// Network faults in force (cuts, latency, pauses).
    net_faults: BTreeSet<u32>,
    /// Since when the network has been whole (none: it is not).
    whole_since: Option<f64>,
}

impl Default for MetallbLens {
    fn default() -> Self {
        MetallbLens {
            announcers: BTreeMap::new(),
            dup_from: BTreeMap::new(),
            longest_dup: 0.0,
            net_faults: BTreeSet::new(),
            whole_since: Some(0.0),
        }
    }
}

impl MetallbLens {
    /// The part of a duplicate window from `t0` to `t` after the network healed.
    fn after_heal(&self, t0: f64, t: f64) -> f64 {
        self.whole_since.map_or(0.0, |h| t - t0.max(h))
    }

    /// Windows still open count up to `t`.
    fn close_open_windows(&mut self, t: f64) {
        for t0 in self.dup_from.values() {
            self.longest_dup = self.longest_dup.max(self.after_heal(*t0, t));
        }
    }

    fn net_fault(&mut self, ev: &Event, t: f64) {
        match ev {
            Event::FaultStart {
                id,
                fault:
                    FaultKind::Partition { .. }
                    | FaultKind::Simplex { .. }
                    | FaultKind::Isolate { .. }
                    | FaultKind::Latency { .. }
                    | FaultKind::Loss { .. }
                    | FaultKind::Pause { .. },
                ..
            } => {
                self.net_faults.insert(*id);
                self.close_open_windows(t);
                self.whole_since = None;
            }
            Event::FaultEnd { id } if self.net_faults.remove(id) && self.net_faults.is_empty() => {
                self.whole_since = Some(t);
            }
            _ => {}
        }
    }

    fn speaker_gone(&mut self, node: &str, t: f64, rows: &mut Rows) {
        if let Some(row) = rows.get(node) {
            row.end_prefix("announce ", t);
        }
        for a in self.announcers.values_mut() {
            a.remove(node);
        }
    }

    fn duplicates(&mut self, t: f64, rows: &mut Rows) {
        let mut ended = Vec::new();
        for (ip, a) in &self.announcers {
            let label = format!("{ip} announced by {a:?}");
            if a.len() >= 2 && !self.dup_from.contains_key(ip) {
                self.dup_from.insert(ip.clone(), t);
                if let Some(r) = rows.get("router") {
                    r.start(&format!("duplicate {ip}"), DUPLICATE, t, &label);
                }
                for n in a {
                    if let Some(r) = rows.get(n) {
                        r.mark(DUPLICATE_MARK, t, label.clone());
                    }
                }
            } else if a.len() < 2 {
                if let Some(t0) = self.dup_from.remove(ip) {
                    ended.push(t0);
                    if let Some(r) = rows.get("router") {
                        r.end(&format!("duplicate {ip}"), t);
                    }
                }
            }
        }
        for t0 in ended {
            self.longest_dup = self.longest_dup.max(self.after_heal(t0, t));
        }
    }
}

impl MetallbLens {
    /// The speakers' own events; true if the announcers may have changed.
    fn on_metallb(&mut self, e: &MetallbEvent, node: &str, t: f64, rows: &mut Rows) -> bool {
        let row = rows.get(node);
        match e {
            MetallbEvent::L2Announce { ip, .. } => {
                if let Some(row) = row {
                    row.start(
                        &format!("announce {ip}"),
                        ANNOUNCER,
                        t,
                        &format!("announces {ip}"),
                    );
                }
                let a = self.announcers.entry(ip.clone()).or_default();
                a.insert(node.to_string());
                true
            }
            MetallbEvent::L2Withdraw { ip, .. } => {
                if let Some(row) = row {
                    row.end(&format!("announce {ip}"), t);
                }
                self.announcers.entry(ip.clone()).or_default().remove(node);
                true
            }
            MetallbEvent::MlMember { member, state, .. } if state == "forgotten" => {
                if let Some(row) = row {
                    row.mark(FORGET, t, format!("forgot {member}"))
                }
                false
            }
            MetallbEvent::MlJoin {
                addresses,
                joined,
                cause,
            } => {
                if let Some(row) = row {
                    let label = format!("join ({cause}) {addresses:?}: {joined} answered");
                    row.mark(JOIN, t, label)
                }
                false
            }
            _ => false,
        }
    }
}

impl ReportLens for MetallbLens {
    fn observe(&mut self, rec: &Record, node: &str, t: f64, rows: &mut Rows) {
        let changed = match &rec.event {
            Event::ProcessExit { name, .. } => {
                if name == "speaker" {
                    self.speaker_gone(node, t, rows);
                }
                true
            }
            Event::NodeCrash => {
                self.speaker_gone(node, t, rows);
                true
            }
            Event::System(_) => match rec.event.system::<MetallbEvent>() {
                Some(e) => self.on_metallb(e, node, t, rows),
                None => false,
            },
            _ => false,
        };
        self.net_fault(&rec.event, t);
        if changed {
            self.duplicates(t, rows);
        }
    }

    fn headline(&mut self, end: f64) -> Measure {
        self.close_open_windows(end);
        Measure::seconds(
            "longest duplicate-announcer window after the network healed",
            Some(self.longest_dup),
        )
    }

    fn bands(&self) -> &'static [BandKind] {
        &[ANNOUNCER, DUPLICATE]
    }

    fn marks(&self) -> &'static [MarkKind] {
        &[DUPLICATE_MARK, FORGET, JOIN]
    }
}
