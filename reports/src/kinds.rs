//! What a report draws, as types: the kinds of bands and marks a timeline shows (the world's own
//! and those a system declares), the legend built from them, and the units of a headline number.
//!
//! A system declares its kinds as constants next to its lens (`const MASTER: BandKind =
//! BandKind::new("master", "believes it is master", "#43a047", Lane::Belief)`) and lists them in
//! [`crate::ReportLens::bands`] and [`crate::ReportLens::marks`]; the legend shows exactly what the
//! world drew in the run and what the system declares, nothing of another system.

use serde::{Serialize, Serializer};

/// Where a band sits in its node's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The top: faults and what the world did to the node (cut off, paused, down, stalled).
    Fault,
    /// The middle, thin: who holds a shared key or lock.
    Holder,
    /// The bottom: what the node believes or does (leads, announces, holds IPs in a handshake).
    Belief,
}

impl Lane {
    /// (offset from the row's top, height, opacity).
    pub(crate) fn geometry(self) -> (f64, f64, f64) {
        match self {
            Lane::Fault => (2.0, 8.0, 1.0),
            Lane::Holder => (12.0, 5.0, 0.75),
            Lane::Belief => (18.0, 6.0, 0.85),
        }
    }
}

/// Checks at compile time (the kinds are constants) that a kind's name is usable as a CSS class
/// and a JSON value: lower-case ASCII letters, digits and dashes, not empty.
const fn check_name(name: &str) {
    let b = name.as_bytes();
    assert!(!b.is_empty(), "a band or mark kind needs a name");
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        assert!(
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-',
            "a band or mark kind's name is lower-case letters, digits and dashes"
        );
        i += 1;
    }
}

/// A kind of band: what a stretch of time on a node's row stands for. Serializes as its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandKind {
    /// Its name (`master`): the CSS class of its rectangles and its value in `report.json`.
    pub name: &'static str,
    /// What the legend says it means.
    pub legend: &'static str,
    /// Its colour (a CSS colour).
    pub colour: &'static str,
    /// Where it sits in the row.
    pub lane: Lane,
}

impl BandKind {
    /// A band kind; `name` is lower-case letters, digits and dashes (checked when the constant is
    /// evaluated).
    pub const fn new(
        name: &'static str,
        legend: &'static str,
        colour: &'static str,
        lane: Lane,
    ) -> BandKind {
        check_name(name);
        BandKind {
            name,
            legend,
            colour,
            lane,
        }
    }

    /// The node is cut off the network (a partition, isolation or one-way cut names it).
    pub const CUT: BandKind = BandKind::new("cut", "cut off the network", "#e57373", Lane::Fault);
    /// The node is paused (a VM or process pause).
    pub const PAUSED: BandKind = BandKind::new("paused", "paused", "#9e9e9e", Lane::Fault);
    /// The node is down (crashed, not yet rebooted).
    pub const DOWN: BandKind = BandKind::new("down", "down", "#212121", Lane::Fault);
    /// One of the node's tasks is stalled.
    pub const STALLED: BandKind = BandKind::new("stalled", "task stalled", "#ba68c8", Lane::Fault);
    /// Latency on the node's links or a slow service.
    pub const SLOW: BandKind = BandKind::new("slow", "slow", "#ffd54f", Lane::Fault);
    /// A service on the node is unavailable, ambiguous or garbled.
    pub const DEGRADED: BandKind =
        BandKind::new("degraded", "service degraded", "#ff8a65", Lane::Fault);
    /// A router's ARP entry for an IP (label: IP -> node).
    pub const ARP: BandKind = BandKind::new(
        "arp",
        "router's ARP entry (label: IP -> node)",
        "#5c6bc0",
        Lane::Belief,
    );
    /// The bands the world draws for every system, in legend order.
    pub const WORLD: &'static [BandKind] = &[
        BandKind::CUT,
        BandKind::PAUSED,
        BandKind::DOWN,
        BandKind::STALLED,
        BandKind::SLOW,
        BandKind::DEGRADED,
        BandKind::ARP,
    ];
}

impl Serialize for BandKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// A kind of mark: what an instant on a node's row stands for. Serializes as its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkKind {
    /// Its name (`crash`): the CSS class of its triangles and its value in `report.json`.
    pub name: &'static str,
    /// What the legend says it means.
    pub legend: &'static str,
    /// Its colour (a CSS colour).
    pub colour: &'static str,
}

impl MarkKind {
    /// A mark kind; `name` is lower-case letters, digits and dashes (checked when the constant is
    /// evaluated).
    pub const fn new(name: &'static str, legend: &'static str, colour: &'static str) -> MarkKind {
        check_name(name);
        MarkKind {
            name,
            legend,
            colour,
        }
    }

    /// A task died silently.
    pub const TASK_DEATH: MarkKind = MarkKind::new("task-death", "task death", "#c62828");
    /// The node crashed.
    pub const CRASH: MarkKind = MarkKind::new("crash", "crash", "#000");
    /// A process exited.
    pub const EXIT: MarkKind = MarkKind::new("exit", "process exit", "#6d4c41");
    /// The node's wall clock stepped.
    pub const STEP: MarkKind = MarkKind::new("step", "clock step", "#1565c0");
    /// The cloud unassigned an IP from the node.
    pub const RELEASE: MarkKind = MarkKind::new("release", "IP released", "#ef6c00");
    /// The violation (drawn as a line across every row, never bucketed).
    pub const VIOLATION: MarkKind = MarkKind::new("violation", "violation", "#d00");
    /// The marks the world draws for every system, in legend order (the violation is drawn as a
    /// line and has its own entry).
    pub const WORLD: &'static [MarkKind] = &[
        MarkKind::TASK_DEATH,
        MarkKind::CRASH,
        MarkKind::EXIT,
        MarkKind::STEP,
        MarkKind::RELEASE,
    ];
}

impl Serialize for MarkKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// The kinds a report's legend explains, in order: the world's that the run drew, then the
/// system's declared ones (and any it drew without declaring).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Legend {
    /// Band kinds.
    pub bands: Vec<BandKind>,
    /// Mark kinds (the violation line has its own entry).
    pub marks: Vec<MarkKind>,
}

impl Legend {
    /// The legend of a timeline whose rows drew `drawn` (bands) and `marked` (marks), for a system
    /// that declares `bands` and `marks`.
    pub fn new(
        drawn: &[BandKind],
        marked: &[MarkKind],
        bands: &[BandKind],
        marks: &[MarkKind],
    ) -> Legend {
        let mut l = Legend::default();
        for b in BandKind::WORLD.iter().filter(|k| drawn.contains(k)) {
            push(&mut l.bands, *b);
        }
        for b in bands.iter().chain(drawn) {
            push(&mut l.bands, *b);
        }
        for m in MarkKind::WORLD.iter().filter(|k| marked.contains(k)) {
            push(&mut l.marks, *m);
        }
        for m in marks.iter().chain(marked) {
            if *m != MarkKind::VIOLATION {
                push(&mut l.marks, *m);
            }
        }
        l
    }
}

/// Adds `k` unless a kind of that name is there.
fn push<K: PartialEq + Copy + Named>(v: &mut Vec<K>, k: K) {
    if !v.iter().any(|x| x.name() == k.name()) {
        v.push(k);
    }
}

trait Named {
    fn name(&self) -> &'static str;
}

impl Named for BandKind {
    fn name(&self) -> &'static str {
        self.name
    }
}

impl Named for MarkKind {
    fn name(&self) -> &'static str {
        self.name
    }
}

/// The unit of a headline number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Simulated seconds (`12.500 s`).
    Seconds,
    /// A number of things (`98`).
    Count,
    /// A ratio (`0.250`).
    Ratio,
}

impl Unit {
    /// `v` in this unit, as a report shows it (`12.500 s`, `98`).
    pub fn show(self, v: f64) -> String {
        match self {
            Unit::Seconds => format!("{v:.3} s"),
            _ => self.number(v),
        }
    }

    /// `v` as a number in a column headed with the unit (`12.500`, `98`).
    pub fn number(self, v: f64) -> String {
        match self {
            Unit::Count if v.fract() == 0.0 => format!("{v:.0}"),
            Unit::Count => format!("{v:.1}"),
            Unit::Seconds | Unit::Ratio => format!("{v:.3}"),
        }
    }

    /// The unit in an axis label or a column header (` (s)`), empty for a plain number.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Seconds => " (s)",
            Unit::Count | Unit::Ratio => "",
        }
    }

    /// Reads the unit back from its JSON name (`seconds`).
    pub(crate) fn parse(s: &str) -> Option<Unit> {
        match s {
            "seconds" => Some(Unit::Seconds),
            "count" => Some(Unit::Count),
            "ratio" => Some(Unit::Ratio),
            _ => None,
        }
    }
}

/// A headline measure as a lens reports it: what it measures, its unit and (if this run measured
/// it) its value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measure {
    /// What it measures.
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// Its value, in `unit` (none: nothing to measure in this run).
    pub value: Option<f64>,
}

impl Measure {
    /// A measure in `unit`.
    pub fn new(name: impl Into<String>, unit: Unit, value: Option<f64>) -> Measure {
        Measure {
            name: name.into(),
            unit,
            value,
        }
    }

    /// A measure in seconds.
    pub fn seconds(name: impl Into<String>, value: Option<f64>) -> Measure {
        Measure::new(name, Unit::Seconds, value)
    }

    /// No measure (a system whose lens measures nothing).
    pub fn none() -> Measure {
        Measure::new("none", Unit::Count, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_show_their_values() {
        assert_eq!(Unit::Seconds.show(98.0), "98.000 s");
        assert_eq!(Unit::Count.show(98.0), "98");
        assert_eq!(Unit::Count.show(2.5), "2.5");
        assert_eq!(Unit::Ratio.show(0.25), "0.250");
        for u in [Unit::Seconds, Unit::Count, Unit::Ratio] {
            let name = serde_json::to_value(u).unwrap();
            assert_eq!(Unit::parse(name.as_str().unwrap()), Some(u));
        }
        assert_eq!(Unit::parse("furlongs"), None);
    }

    /// The legend lists the world's kinds the run drew, then the system's declared kinds, each
    /// once; a world kind the run did not draw is left out.
    #[test]
    fn the_legend_lists_what_was_drawn_and_declared() {
        const LEADS: BandKind = BandKind::new("leads", "leads", "#000", Lane::Belief);
        const REFUSED: MarkKind = MarkKind::new("refused", "write refused", "#111");
        let l = Legend::new(
            &[LEADS, BandKind::PAUSED],
            &[MarkKind::VIOLATION, MarkKind::CRASH],
            &[LEADS],
            &[REFUSED],
        );
        assert_eq!(l.bands, vec![BandKind::PAUSED, LEADS]);
        assert_eq!(l.marks, vec![MarkKind::CRASH, REFUSED]);
    }
}
