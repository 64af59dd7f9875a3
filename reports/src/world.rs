//! The part of every report that comes from the world's own events: fault bands (cut off, slow,
//! degraded services), pauses, crashes, task stalls and deaths, process exits, clock steps and
//! offsets, cloud releases and the switch's ARP entries.

use crate::rows::Rows;
use crate::{BandKind, MarkKind};
use sim::event::{Event, Record};
use sim::FaultKind;
use std::collections::BTreeMap;

/// The world's lens: which nodes each open fault band is drawn on.
#[derive(Default)]
pub(crate) struct WorldLens {
    fault_nodes: BTreeMap<u32, Vec<String>>,
}

/// The band a fault draws on the nodes it names, if any: its kind and label.
fn fault_band(fault: &FaultKind) -> Option<(BandKind, String)> {
    let kind = match fault {
        FaultKind::Partition { .. } | FaultKind::Isolate { .. } | FaultKind::Simplex { .. } => {
            BandKind::CUT
        }
        FaultKind::Latency { .. } | FaultKind::ServiceSlow { .. } => BandKind::SLOW,
        FaultKind::ServiceUnavailable { .. }
        | FaultKind::ServiceAmbiguous { .. }
        | FaultKind::ServiceGarbled { .. }
        | FaultKind::StaleReads { .. }
        | FaultKind::Throttling { .. } => BandKind::DEGRADED,
        _ => return None,
    };
    Some((kind, fault.describe()))
}

impl WorldLens {
    pub(crate) fn observe(&mut self, rec: &Record, node: &str, t: f64, end: f64, rows: &mut Rows) {
        let Some(row) = rows.get(node) else { return };
        let off = (rec.local_us - rec.t_us as i64) as f64 / 1e6;
        if row
            .offsets
            .last()
            .is_none_or(|(_, o)| (o - off).abs() > 0.5)
        {
            row.offsets.push((t, off));
        }
        match &rec.event {
            Event::FaultStart { id, fault, .. } => {
                let Some((kind, label)) = fault_band(fault) else {
                    return;
                };
                let nodes: Vec<String> = fault.nodes().iter().map(|x| x.to_string()).collect();
                for n in &nodes {
                    if let Some(r) = rows.get(n) {
                        r.start(&format!("fault{id}"), kind, t, &label);
                    }
                }
                self.fault_nodes.insert(*id, nodes);
            }
            Event::FaultEnd { id } => {
                for n in self.fault_nodes.remove(id).unwrap_or_default() {
                    if let Some(r) = rows.get(&n) {
                        r.end(&format!("fault{id}"), t);
                    }
                }
            }
            Event::NodePause => row.start("paused", BandKind::PAUSED, t, "paused"),
            Event::NodeResume => row.end("paused", t),
            Event::NodeCrash => {
                row.end_prefix("", t);
                row.start("down", BandKind::DOWN, t, "crashed");
                row.mark(MarkKind::CRASH, t, "node crashed".into());
            }
            Event::NodeBoot { boot } if *boot > 1 => row.end("down", t),
            Event::TaskStall { task, until_ms, .. } => {
                let key = format!("stall-{task}");
                row.start(&key, BandKind::STALLED, t, &format!("{task} stalled"));
                // Closed at its deadline (or earlier, when a fault ends it).
                row.end(&key, (*until_ms as f64 / 1000.0).min(end));
            }
            Event::TaskDeath { task, pid } => row.mark(
                MarkKind::TASK_DEATH,
                t,
                format!("{task} of pid {pid} died silently"),
            ),
            Event::ProcessExit { name, pid, status } => row.mark(
                MarkKind::EXIT,
                t,
                format!("{name} ({pid}) exited: {status:?}"),
            ),
            Event::ClockStep { delta_ms } => {
                row.mark(MarkKind::STEP, t, format!("clock step {delta_ms:+} ms"))
            }
            Event::CloudUnassign { instance, ip, .. } => {
                if let Some(r) = rows.get(instance.as_str()) {
                    r.mark(MarkKind::RELEASE, t, format!("{ip} unassigned"));
                }
            }
            Event::ArpEntry { ip, node: to, via } => {
                let key = format!("arp {ip}");
                row.end(&key, t);
                row.start(
                    &key,
                    BandKind::ARP,
                    t,
                    &format!("{ip} -> {to} (heard {via})"),
                );
            }
            _ => {}
        }
    }
}
