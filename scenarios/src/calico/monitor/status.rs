//! The status path: checks `stale-warning-not-in-snapshot`, `stale-warning-rate-limited`,
//! `watcher-survives-timestamps`, `stale-report-warned` and `stale-warning-justified` as they
//! happen, and `agent-view-converges` and `port-status-converges` at the status deadline.
//!
//! Reads (observations only): the agent-status watcher's `CalicoSnapshot` (start and end: the
//! monitor's own notion of "replaying a snapshot") and `CalicoSnapshotDropped` (a stopped
//! watcher's replay given up: an end too), `CalicoWatcher`, `CalicoStaleWarning`,
//! `CalicoUnparsableTime`, `CalicoTaskCrash` and `CalicoAgentForward` events, the resync and
//! port-write events, Neutron's `NeutronAgentHeard`, and Felix's status puts in etcd (recorded in
//! `mod.rs`). A report's age is computed here from its `time` (read by `felix_time`, the monitor's
//! own parser) and the watcher host's wall clock in the event record; the warning's own `lag_ms`
//! and `in_snapshot` fields are not trusted. Calls no model function.

use super::{felix_time, secs, CalicoMonitor, PendingWarning, AGENT_DOWN_US, AGENT_VIEW_BOUND_US};
use super::{AGENT_VIEW_CONVERGES, PORT_STATUS_CONVERGES};
use super::{STALE_THRESHOLD_US, STALE_WARN_INTERVAL_US};
use model::calico::CalicoEvent;
use sim::event::{Event, Record};
use sim::{Failure, Kind, Measured, NodeIx};

/// What `agent-view-converges` says when it fails (the canceller finding's signature reads it:
/// agent reports travel through the agent-status watcher alone).
pub(crate) const AGENT_VIEW_WRONG: &str = "Neutron's view of the agents is wrong";

/// What `port-status-converges` says when it fails (read by the same signature: port statuses
/// travel through the endpoint-status watcher alone).
pub(crate) const PORTS_WRONG: &str = "with a status other than Felix's settled one";

impl CalicoMonitor {
    /// The status path's events (the watcher's, the port writers' and Neutron's).
    pub(super) fn on_status_event(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        let (t, node) = (rec.t_us, rec.node);
        match e {
            CalicoEvent::CalicoSnapshot {
                done,
                worker,
                watcher,
                ..
            } if worker == "agent-status" => {
                if *done {
                    self.agent_snapshot.remove(&(node, *watcher));
                    return None;
                }
                self.agent_snapshot.insert((node, *watcher));
                let pid = self.forwarder_pid(node);
                if !self.snapshots.insert((node, pid)) {
                    self.reach("snapshot-replayed");
                }
                None
            }
            // A stopped watcher that gives up its snapshot (fix `calico-snapshot-checks-stopped`)
            // replays no more of it. Its successor in the process may be replaying its own
            // snapshot meanwhile (the stopped one was blocked on a cast or a read): each
            // instance's replay is tracked on its own.
            CalicoEvent::CalicoSnapshotDropped {
                worker, watcher, ..
            } if worker == "agent-status" => {
                self.agent_snapshot.remove(&(node, *watcher));
                None
            }
            CalicoEvent::CalicoWatcher {
                worker,
                running: false,
            } => {
                self.forget_canceller(node, worker);
                None
            }
            // Each StatusWatcher instance has its own limiter and de-duplication map (status.py
            // lines 93, 101 at 87c15906).
            CalicoEvent::CalicoWatcher {
                worker,
                running: true,
            } if worker == "agent-status" => {
                let pid = self.forwarder_pid(node);
                self.last_warning.remove(&(node, pid));
                self.forwarded_time
                    .retain(|(n, p, _), _| (*n, *p) != (node, pid));
                None
            }
            CalicoEvent::CalicoStaleWarning {
                host,
                lag_ms,
                watcher,
                ..
            } => self.on_stale_warning(rec, host, *lag_ms, *watcher),
            CalicoEvent::CalicoUnparsableTime { .. } => {
                self.reach("unparsable-time-skipped");
                None
            }
            CalicoEvent::CalicoTaskCrash {
                pid,
                task,
                error,
                watcher,
            } => {
                self.crashed.insert((node, *pid, task.clone()));
                self.died.insert((node, *pid, task.clone()));
                self.agent_snapshot.remove(&(node, *watcher));
                Some(Failure {
                    invariant: crate::calico::invariants::WATCHER_SURVIVES_TIMESTAMPS.name,
                    kind: Kind::Safety,
                    node: Some(node),
                    explanation: format!(
                        "the {task} task of {}:{pid} died on a status report: {error}{}",
                        self.names[node as usize],
                        self.fault_note(node)
                    ),
                    measured: self
                        .alive
                        .get(&(node, *pid))
                        .and_then(|s| Measured::unbounded(t - s)),
                })
            }
            CalicoEvent::CalicoAgentForward {
                host,
                rev,
                time,
                watcher,
                ..
            } => self.on_forward(rec, host, *rev, time, *watcher),
            CalicoEvent::CalicoResync { pid, ok, .. } => {
                self.on_resync(node, *pid, *ok, rec.t_us);
                None
            }
            CalicoEvent::CalicoPortWrite { ok: false, .. } => {
                self.reach("port-write-failed");
                None
            }
            CalicoEvent::NeutronAgentHeard { host } => {
                self.heard_us.insert(host.clone(), t);
                None
            }
            _ => None,
        }
    }

    /// A stale-update warning: not while a snapshot replays (the monitor's own tracking), at most
    /// one per interval per watcher instance; then it waits for its report
    /// (`stale-warning-justified`, [`CalicoMonitor::resolve_pending_warning`]).
    fn on_stale_warning(
        &mut self,
        rec: &Record,
        host: &str,
        lag_ms: i64,
        watcher: u32,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        if t - self.boot_us[node as usize] < STALE_WARN_INTERVAL_US {
            self.reach("warning-on-young-host");
        }
        let name = &self.names[node as usize];
        if self.agent_snapshot.contains(&(node, watcher)) {
            return Some(Failure {
                invariant: crate::calico::invariants::STALE_WARNING_NOT_IN_SNAPSHOT.name,
                kind: Kind::Safety,
                node: Some(node),
                explanation: format!(
                    "{name} logged a stale-update warning for {host} ({} old by its account) while replaying a snapshot, where old timestamps are expected",
                    secs(lag_ms.max(0) as u64 * 1000)
                ),
                measured: Measured::unbounded(lag_ms.max(0) as u64 * 1000),
            });
        }
        let pid = self.forwarder_pid(node);
        let prev = self.last_warning.insert((node, pid), t);
        if let Some(p) = prev.filter(|p| t - p < STALE_WARN_INTERVAL_US) {
            return Some(Failure {
                invariant: crate::calico::invariants::STALE_WARNING_RATE_LIMITED.name,
                kind: Kind::Safety,
                node: Some(node),
                explanation: format!(
                    "{name}:{pid} logged stale-update warnings at {} and {}, {} apart (limit: one per {})",
                    secs(p),
                    secs(t),
                    secs(t - p),
                    secs(STALE_WARN_INTERVAL_US)
                ),
                measured: Measured::bounded(t - p, STALE_WARN_INTERVAL_US),
            });
        }
        self.pending_warning = Some(PendingWarning {
            node,
            pid,
            host: host.to_string(),
            local_us: rec.local_us,
            t_us: t,
        });
        None
    }

    /// `stale-warning-justified`: the warning's report is the one the same dispatch forwards
    /// next (the next events of its node: the master-only record, then the forward), or, when
    /// the handler de-duplicated it, the one this watcher instance forwarded last for the host
    /// (the same `mod_revision`: status.py lines 212-217). `rec` is the event after the warning
    /// (`None`: a tick, so nothing followed).
    pub(super) fn resolve_pending_warning(&mut self, rec: Option<&Record>) -> Option<Failure> {
        let w = self.pending_warning.as_ref()?;
        let forwarded = match rec.and_then(|r| (r.node == w.node).then_some(&r.event)) {
            Some(e @ Event::System(_)) => match e.system::<CalicoEvent>() {
                Some(CalicoEvent::CalicoMasterOnly { .. }) => return None,
                Some(CalicoEvent::CalicoAgentForward { host, time, .. }) if *host == w.host => {
                    Some(time.clone())
                }
                _ => None,
            },
            _ => None,
        };
        let w = self.pending_warning.take()?;
        let time = forwarded.or_else(|| {
            self.forwarded_time
                .get(&(w.node, w.pid, w.host.clone()))
                .cloned()
        })?;
        let now = sim::clock::EPOCH_UNIX_US + w.local_us;
        let lag = felix_time::unix_us(&time).map(|then| now - then);
        if lag.is_some_and(|l| l > STALE_THRESHOLD_US as i64) {
            return None;
        }
        let name = &self.names[w.node as usize];
        let age = match lag {
            Some(l) if l >= 0 => format!("only {} behind its clock", secs(l as u64)),
            Some(l) => format!("{} AHEAD of its clock", secs(l.unsigned_abs())),
            None => "unreadable".to_string(),
        };
        Some(Failure {
            invariant: crate::calico::invariants::STALE_WARNING_JUSTIFIED.name,
            kind: Kind::Safety,
            node: Some(w.node),
            explanation: format!(
                "{name}:{} logged a stale-update warning at {} for {}'s report stamped {time}, which is {age} (threshold {})",
                w.pid,
                secs(w.t_us),
                w.host,
                secs(STALE_THRESHOLD_US)
            ),
            measured: lag.and_then(|l| Measured::bounded(l.max(0) as u64, STALE_THRESHOLD_US)),
        })
    }

    /// The live agent-status watcher process on a node (warnings carry no pid).
    pub(super) fn forwarder_pid(&self, node: NodeIx) -> u32 {
        self.agent_watchers.get(&node).copied().unwrap_or(0)
    }

    /// A report forwarded to Neutron: remembered for the de-duplicated warnings, checked against
    /// Felix's last write (`silent-agent-not-reported`) and, outside a snapshot, against the
    /// watcher's clock (`stale-report-warned`).
    fn on_forward(
        &mut self,
        rec: &Record,
        host: &str,
        rev: i64,
        time: &str,
        watcher: u32,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        let pid = self.forwarder_pid(node);
        self.forwarded_time
            .insert((node, pid, host.to_string()), time.to_string());
        let in_snapshot = self.agent_snapshot.contains(&(node, watcher));
        if let Some(put) = self.status_put_us.get(&rev) {
            if !in_snapshot && t - put > STALE_THRESHOLD_US {
                self.reach("backlog-over-300s");
            }
        }
        if let Some(f) = self.check_silent_agent(node, host, t) {
            return Some(f);
        }
        if in_snapshot {
            return None;
        }
        if felix_time::is_naive(time) {
            self.reach("naive-timestamp-processed");
        }
        let then = felix_time::unix_us(time)?;
        let lag = sim::clock::EPOCH_UNIX_US + rec.local_us - then;
        if lag <= STALE_THRESHOLD_US as i64 {
            return None;
        }
        let warned = self
            .last_warning
            .get(&(node, pid))
            .is_some_and(|w| t - w <= STALE_WARN_INTERVAL_US);
        if warned {
            return None;
        }
        let name = &self.names[node as usize];
        Some(Failure {
            invariant: crate::calico::invariants::STALE_REPORT_WARNED.name,
            kind: Kind::Safety,
            node: Some(node),
            explanation: format!(
                "{name}:{pid} forwarded {host}'s report stamped {time}, {} behind its own clock, without any stale-update warning in the last {} ({name} booted {} ago)",
                secs(lag as u64),
                secs(STALE_WARN_INTERVAL_US),
                secs(t - self.boot_us[node as usize])
            ),
            measured: Measured::bounded(lag as u64, STALE_THRESHOLD_US),
        })
    }

    /// At the status deadline (faults stopped [`AGENT_VIEW_BOUND_US`] ago): Neutron hears every
    /// running Felix, then shows every settled port status as Felix reports it.
    /// `since_stop_us`: how long ago faults stopped (the measure of both).
    pub(super) fn status_converged(&self, now_us: u64, since_stop_us: u64) -> Option<Failure> {
        self.agent_view_converged(now_us)
            .or_else(|| self.port_status_converged(now_us))
            .map(|f| Failure {
                measured: Measured::bounded(since_stop_us, AGENT_VIEW_BOUND_US),
                ..f
            })
    }

    /// `agent-view-converges`: Neutron has heard within `agent_down_time` from every compute host
    /// whose Felix runs (shown up), and from no host whose Felix does not run (shown down).
    fn agent_view_converged(&self, now_us: u64) -> Option<Failure> {
        let recent = |h: Option<&u64>| h.is_some_and(|&h| now_us - h < AGENT_DOWN_US);
        let mut wrong: Vec<String> = self
            .computes
            .clone()
            .filter(|&c| self.felix_alive[c] && !recent(self.heard_us.get(&self.names[c])))
            .map(|c| match self.heard_us.get(&self.names[c]) {
                Some(h) => format!(
                    "{} down (last heard {} ago)",
                    self.names[c],
                    secs(now_us - h)
                ),
                None => format!("{} down (never heard)", self.names[c]),
            })
            .collect();
        let running = |host: &str| {
            self.node_of(host)
                .is_some_and(|n| self.felix_alive[n as usize])
        };
        wrong.extend(
            self.heard_us
                .iter()
                .filter(|(host, &h)| recent(Some(&h)) && !running(host))
                .map(|(host, h)| {
                    format!(
                        "{host} up although no Felix runs there (heard {} ago)",
                        secs(now_us - h)
                    )
                }),
        );
        if wrong.is_empty() {
            return None;
        }
        let node = self.holder.as_ref().and_then(|h| h.node);
        let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
        Some(Failure {
            invariant: AGENT_VIEW_CONVERGES,
            kind: Kind::Liveness,
            node,
            explanation: format!(
                "{} after faults stopped, {AGENT_VIEW_WRONG}: {}; {}{}",
                secs(AGENT_VIEW_BOUND_US),
                wrong.join(", "),
                self.describe_master_state(),
                note
            ),
            measured: None,
        })
    }

    /// `port-status-converges`: every port whose Felix status has settled shows in Neutron as the
    /// spec maps it.
    fn port_status_converged(&self, now_us: u64) -> Option<Failure> {
        let diverged: Vec<String> = self
            .ports
            .diverged(now_us)
            .iter()
            .map(|d| self.describe_divergence(d))
            .collect();
        if diverged.is_empty() {
            return None;
        }
        let node = self.holder.as_ref().and_then(|h| h.node);
        let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
        Some(Failure {
            invariant: PORT_STATUS_CONVERGES,
            kind: Kind::Liveness,
            node,
            explanation: format!(
                "{} after faults stopped, Neutron shows {} port(s) {PORTS_WRONG}: {}; {}{}",
                secs(AGENT_VIEW_BOUND_US),
                diverged.len(),
                diverged.join("; "),
                self.describe_master_state(),
                note
            ),
            measured: None,
        })
    }

    fn describe_divergence(&self, d: &crate::calico::ports::Divergence) -> String {
        let writer = match d.writer.as_ref().map(|w| (w, self.parse_id(&w.client).0)) {
            Some((w, Some(n))) if self.holds(n) => {
                format!(", written last by the master, {}", w.client)
            }
            Some((w, _)) => format!(
                ", written last by a host that is not the master, {}",
                w.client
            ),
            None => String::new(),
        };
        let history = d
            .writer
            .as_ref()
            .map(|w| write_history(w, d.since_us))
            .unwrap_or_default();
        format!(
            "{}: Felix says {} since {}, Neutron shows {}{writer}{history}",
            d.port,
            d.felix.as_deref().unwrap_or("nothing"),
            secs(d.since_us),
            d.neutron.as_deref().unwrap_or("nothing")
        )
    }
}

/// How the wrong last write came to be last: it overtook a write of the port sent after it (by
/// the same process or another), or it was sent after Felix's status had already changed (the
/// writer's cache was stale). `since_us`: when Felix's status last changed.
fn write_history(w: &crate::calico::ports::AppliedWrite, since_us: u64) -> String {
    let Some(sent) = w.sent_us else {
        return String::new();
    };
    match &w.overtook {
        Some((other, at)) if *other == w.client => format!(
            " (sent at {}, it overtook a newer write of the same process, sent at {})",
            secs(sent),
            secs(*at)
        ),
        Some((other, at)) => format!(
            " (sent at {}, it overtook a newer write of another process, {other}, sent at {})",
            secs(sent),
            secs(*at)
        ),
        None if sent >= since_us => format!(
            " (sent at {}, after Felix's status had changed: a stale cache)",
            secs(sent)
        ),
        None => format!(" (sent at {})", secs(sent)),
    }
}
