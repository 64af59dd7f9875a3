//! Node rows under construction, shared by the world's part of a report and each system's lens.

use crate::{Band, BandKind, Mark, MarkKind, NodeRow};
use std::collections::BTreeMap;

/// At most this many marks of one kind on a row before they are bucketed.
pub(crate) const MAX_MARKS: usize = 120;

/// One node's row while a report is built: open bands by key, closed bands, marks, clock offsets.
pub struct Row {
    bands: Vec<Band>,
    open: BTreeMap<String, (f64, BandKind, String)>,
    marks: Vec<Mark>,
    pub(crate) offsets: Vec<(f64, f64)>,
}

impl Row {
    pub(crate) fn new() -> Self {
        Row {
            bands: Vec::new(),
            open: BTreeMap::new(),
            marks: Vec::new(),
            offsets: Vec::new(),
        }
    }

    /// Opens a band of `kind` under `key` at `at` s (no-op if one is open under `key`).
    pub fn start(&mut self, key: &str, kind: BandKind, at: f64, label: &str) {
        self.open
            .entry(key.to_string())
            .or_insert((at, kind, label.to_string()));
    }

    /// Closes the band open under `key` at `at` s (dropped if empty).
    pub fn end(&mut self, key: &str, at: f64) {
        if let Some((from, kind, label)) = self.open.remove(key) {
            if at > from {
                self.bands.push(Band {
                    kind,
                    from_s: from,
                    to_s: at,
                    label,
                });
            }
        }
    }

    /// Closes every band whose key starts with `prefix`.
    pub fn end_prefix(&mut self, prefix: &str, at: f64) {
        let keys: Vec<String> = self
            .open
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        for k in keys {
            self.end(&k, at);
        }
    }

    /// Adds an instant of `kind` at `at` s.
    pub fn mark(&mut self, kind: MarkKind, at: f64, label: String) {
        self.marks.push(Mark {
            kind,
            at_s: at,
            label,
            count: 1,
        });
    }

    pub(crate) fn finish(mut self, name: String, end: f64) -> NodeRow {
        let keys: Vec<String> = self.open.keys().cloned().collect();
        for k in keys {
            self.end(&k, end);
        }
        self.bands.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
        let marks = bucket(self.marks, end);
        let max_abs_offset_s = self
            .offsets
            .iter()
            .map(|(_, o)| o.abs())
            .fold(0.0, f64::max);
        NodeRow {
            name,
            bands: self.bands,
            marks,
            offsets: self.offsets,
            max_abs_offset_s,
        }
    }
}

/// Aggregates dense marks of one kind into at most `MAX_MARKS` counted buckets.
pub(crate) fn bucket(marks: Vec<Mark>, end: f64) -> Vec<Mark> {
    let mut by_kind: BTreeMap<&'static str, (MarkKind, Vec<Mark>)> = BTreeMap::new();
    for m in marks {
        by_kind
            .entry(m.kind.name)
            .or_insert((m.kind, Vec::new()))
            .1
            .push(m);
    }
    let mut out = Vec::new();
    for (_, (kind, ms)) in by_kind {
        if ms.len() <= MAX_MARKS || kind == MarkKind::VIOLATION {
            out.extend(ms);
            continue;
        }
        let width = (end / MAX_MARKS as f64).max(1e-9);
        let mut buckets: BTreeMap<u64, (f64, u32, String)> = BTreeMap::new();
        for m in ms {
            let b = (m.at_s / width) as u64;
            let e = buckets.entry(b).or_insert((m.at_s, 0, m.label.clone()));
            e.1 += 1;
        }
        for (_, (at, count, label)) in buckets {
            let label = if count > 1 {
                format!("{count} x {}", kind.name)
            } else {
                label
            };
            out.push(Mark {
                kind,
                at_s: at,
                label,
                count,
            });
        }
    }
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    out
}

/// Every node's row, by node name.
pub struct Rows(pub(crate) BTreeMap<String, Row>);

impl Rows {
    /// The row of `node`, if the run has that node.
    pub fn get(&mut self, node: &str) -> Option<&mut Row> {
        self.0.get_mut(node)
    }
}

/// Orders nodes: hosts and nodes first (h1, h2, .., c1, .., n1, ..), then services.
pub(crate) fn sort_key(n: &str) -> (u8, String, u32) {
    let digits: String = n
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stem = n[..n.len() - digits.len()].to_string();
    let num = digits.parse().unwrap_or(0);
    let class = match stem.as_str() {
        "h" | "n" => 0,
        "c" => 1,
        _ => 2,
    };
    (class, stem, num)
}
