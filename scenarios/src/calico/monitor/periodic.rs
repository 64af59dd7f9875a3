//! Progress of the master host's other periodic duties, the lower bounds beside
//! `compaction-progresses` (`duties.rs`):
//!
//! * `election-refresh-progresses`: while a master exists and nothing disturbs it or etcd, its
//!   elector re-puts the election key at least once per [`REFRESH_BOUND_US`]. Upstream the master
//!   keeps its lease alive and re-puts the key every `interval` (10 s) for a TTL of 60 s, and sets
//!   the shared stamp after each (election.py `Elector._become_master`, lines 296-335 at 87c15906):
//!   the refresh is what keeps the other hosts out and `is_master()` true, so a master that
//!   refreshes late lives on a thinner margin than upstream's.
//! * `status-watch-round-trips`: while a master exists and nothing disturbs it or etcd, every
//!   status-watcher worker process of the master's host writes its round-trip key at least once
//!   per [`ROUND_TRIP_BOUND_US`]. Upstream each watch's `_cancel_watch_if_broken` writes
//!   `<status dir>/round-trip-check` every `WATCH_TIMEOUT_SECS / 3` (etcdutils.py lines 288-323 at
//!   87c15906), so a watch that works sees an event at least that often; a watcher that stopped
//!   writing either has no watch or a canceller that no longer runs.
//!
//! Each duty is timed from the latest of its last progress, the master's start (the stretch of
//! `duties.rs`), the start of the process that does it, and the end of the last disturbance plus
//! `etcd_timeout` (a request sent before a fault ended may wait out its timeout after it): any
//! fault of the schedule, or a stall or silent death of a task of the master's host that the duty
//! runs in or depends on (its loop, its greenlets, the elector that keeps the stamp set).
//!
//! Reads (observations only): the round-trip key's puts in etcd and their writing process
//! (`EtcdPut`), which processes run (`ProcessStart`, with the
//! worker names upstream's `get_workers` gives them), whether a master exists (`election.rs`),
//! the schedule's faults and the world's task faults. Calls no model function.

use super::{secs, CalicoMonitor, REFRESH_BOUND_US, ROUND_TRIP_BOUND_US};
use crate::calico::bounds::us;
use crate::calico::invariants::{ELECTION_REFRESH_PROGRESSES, STATUS_WATCH_ROUND_TRIPS};
use crate::invariant::Invariant;
use model::calico::ETCD_TIMEOUT;
use sim::{Failure, Kind, Measured, NodeIx};
use std::collections::BTreeMap;

/// The worker process names of the status watchers (`neutron-server/<worker>`).
const WATCHER_WORKERS: [&str; 2] = [
    "neutron-server/agent-status",
    "neutron-server/endpoint-status",
];

/// One duty's progress in one process (a watcher worker).
#[derive(Default)]
pub(super) struct Progress {
    /// True time of the last progress, or of the process's start.
    last_us: u64,
    /// Whether the current quiet stretch was already reported (one failure per stretch).
    reported: bool,
}

/// What the periodic checks track.
#[derive(Default)]
pub(super) struct Periodic {
    /// Live status-watcher worker processes: their round-trip writes.
    round_trips: BTreeMap<(NodeIx, u32), Progress>,
    /// The election key's last put (a campaign or a refresh).
    refresh: Progress,
}

impl Progress {
    fn at(t: u64) -> Progress {
        Progress {
            last_us: t,
            reported: false,
        }
    }
}

/// Whether a task of the master's host touches the status watchers: their loops, watcher and
/// canceller greenlets, and the elector (the stamp they poll).
fn touches_watchers(task: &str) -> bool {
    task.starts_with("agent-status") || task.starts_with("endpoint-status") || task == "elector"
}

/// Whether a task touches the refresh: the elector.
fn touches_refresh(task: &str) -> bool {
    task == "elector"
}

impl CalicoMonitor {
    /// A process started: a status watcher starts its duty's clock.
    pub(super) fn periodic_process_start(&mut self, node: NodeIx, pid: u32, name: &str, t: u64) {
        if WATCHER_WORKERS.contains(&name) {
            self.periodic
                .round_trips
                .insert((node, pid), Progress::at(t));
        }
    }

    /// A process exited (or its node went down: `pid` None).
    pub(super) fn periodic_process_gone(&mut self, node: NodeIx, pid: Option<u32>) {
        self.periodic
            .round_trips
            .retain(|&(n, p), _| n != node || pid.is_some_and(|pid| pid != p));
    }

    /// The round-trip key was written by `client` (`host:pid`).
    pub(super) fn on_round_trip(&mut self, client: &str, t: u64) {
        if let (Some(node), pid) = self.parse_id(client) {
            if let Some(p) = self.periodic.round_trips.get_mut(&(node, pid)) {
                *p = Progress::at(t);
            }
        }
    }

    /// The election key was put (campaign or refresh).
    pub(super) fn on_election_put(&mut self, t: u64) {
        self.periodic.refresh = Progress::at(t);
    }

    /// When a duty that progressed last at `last` is due, with the master since `m` and the last
    /// disturbance ended at `d` (None: one is in force).
    fn due_us(last: u64, m: u64, d: u64, now: u64, bound: u64) -> Option<u64> {
        (d < now).then(|| last.max(m).max(d + us(ETCD_TIMEOUT)) + bound)
    }

    /// `election-refresh-progresses`, checked every simulated second.
    pub(super) fn refresh_overdue(&mut self, now: u64) -> Option<Failure> {
        let m = self.master_since_us()?;
        let h = self.holder.as_ref()?;
        let node = h.node?;
        if self.periodic.refresh.reported {
            return None;
        }
        let d = self.duty_disturbed_until(now, |f| touches_refresh(&f.task));
        let last = self.periodic.refresh.last_us;
        let due = Self::due_us(last, m, d, now, REFRESH_BOUND_US)?;
        if now <= due {
            return None;
        }
        self.periodic.refresh.reported = true;
        let what = "the election key was last put at".to_string();
        let who = h.value.clone();
        let o = Overdue {
            m,
            d,
            last,
            due,
            now,
        };
        Some(self.overdue(&ELECTION_REFRESH_PROGRESSES, node, &who, &what, o))
    }

    /// `status-watch-round-trips`, checked every simulated second.
    pub(super) fn round_trips_overdue(&mut self, now: u64) -> Option<Failure> {
        let m = self.master_since_us()?;
        let node = self.holder.as_ref()?.node?;
        let d = self.duty_disturbed_until(now, |f| touches_watchers(&f.task));
        let overdue = |p: &Progress| {
            Self::due_us(p.last_us, m, d, now, ROUND_TRIP_BOUND_US).filter(|&due| now > due)
        };
        let (pid, last, due) = self
            .periodic
            .round_trips
            .range((node, 0)..=(node, u32::MAX))
            .filter(|(_, p)| !p.reported)
            .find_map(|(&(_, pid), p)| Some((pid, p.last_us, overdue(p)?)))?;
        self.periodic.round_trips.get_mut(&(node, pid))?.reported = true;
        let name = self.names[node as usize].clone();
        let what = format!(
            "its status-watcher process {name}:{pid} has not written the round-trip key since"
        );
        let o = Overdue {
            m,
            d,
            last,
            due,
            now,
        };
        Some(self.overdue(&STATUS_WATCH_ROUND_TRIPS, node, &name, &what, o))
    }

    /// The failure of an overdue periodic duty of the master `who` on `node`: what it last did
    /// (`what`, followed by when).
    fn overdue(&self, inv: &Invariant, node: NodeIx, who: &str, what: &str, o: Overdue) -> Failure {
        let since = o.last.max(o.m);
        Failure {
            invariant: inv.name,
            kind: Kind::Liveness,
            node: Some(node),
            explanation: format!(
                "{who} has been master since {} and nothing disturbed it or etcd after {}, but {what} {} ({} ago; due by {}){}",
                secs(o.m),
                secs(o.d),
                secs(o.last),
                secs(o.now - since),
                secs(o.due),
                self.fault_note(node)
            ),
            measured: Measured::bounded(o.now - since, o.due - since),
        }
    }
}

/// The times an overdue duty is judged by: master since `m`, undisturbed since `d`, last progress
/// at `last`, due at `due`, and now.
struct Overdue {
    m: u64,
    d: u64,
    last: u64,
    due: u64,
    now: u64,
}
