//! The status path: reads the agent-status watcher's snapshots, restarts, stale-update warnings,
//! skipped timestamps, crashes and forwarded reports (with Felix's status puts in etcd, recorded
//! in `mod.rs`, for their age), the port-status resyncs and writes, and Neutron's agent
//! heartbeats; checks `stale-warning-not-in-snapshot`, `stale-warning-rate-limited`,
//! `watcher-survives-timestamps` and `stale-report-warned` as they happen, and
//! `agent-view-converges` and `port-status-converges` at the status deadline.

use super::{secs, CalicoMonitor, AGENT_DOWN_US, AGENT_VIEW_BOUND_US};
use super::{AGENT_VIEW_CONVERGES, PORT_STATUS_CONVERGES};
use model::calico::status::{parse_time, Parsed, STALE_THRESHOLD_US, STALE_WARN_INTERVAL_US};
use model::calico::CalicoEvent;
use sim::event::Record;
use sim::{Failure, Kind, NodeIx};

impl CalicoMonitor {
    /// The status path's events (the watcher's, the port writers' and Neutron's).
    pub(super) fn on_status_event(&mut self, rec: &Record, e: &CalicoEvent) -> Option<Failure> {
        let (t, node) = (rec.t_us, rec.node);
        match e {
            CalicoEvent::CalicoSnapshot {
                done: false,
                worker,
                ..
            } if worker == "agent-status" => {
                let pid = self.forwarder_pid(node);
                if !self.snapshots.insert((node, pid)) {
                    self.reach("snapshot-replayed");
                }
                None
            }
            // Each StatusWatcher instance has its own limiter (status.py line 101 at 87c15906).
            CalicoEvent::CalicoWatcher {
                worker,
                running: true,
            } if worker == "agent-status" => {
                let pid = self.forwarder_pid(node);
                self.last_warning.remove(&(node, pid));
                None
            }
            CalicoEvent::CalicoStaleWarning {
                host,
                lag_ms,
                in_snapshot,
            } => self.on_stale_warning(rec, host, *lag_ms, *in_snapshot),
            CalicoEvent::CalicoUnparsableTime { .. } => {
                self.reach("unparsable-time-skipped");
                None
            }
            CalicoEvent::CalicoTaskCrash { pid, task, error } => {
                self.crashed.insert((node, *pid, task.clone()));
                Some(Failure {
                    invariant: crate::calico::invariants::WATCHER_SURVIVES_TIMESTAMPS.name,
                    kind: Kind::Safety,
                    node: Some(node),
                    explanation: format!(
                        "the {task} task of {}:{pid} died on a status report: {error}{}",
                        self.names[node as usize],
                        self.fault_note(node)
                    ),
                })
            }
            CalicoEvent::CalicoAgentForward {
                host,
                rev,
                in_snapshot,
                time,
            } => self.on_forward(rec, host, *rev, *in_snapshot, time),
            CalicoEvent::CalicoResync { pid, .. } => {
                if !self.resyncs.insert((node, *pid)) {
                    self.reach("periodic-resync");
                }
                None
            }
            CalicoEvent::CalicoPortWrite { ok: false, .. } => {
                self.reach("port-write-failed");
                None
            }
            CalicoEvent::NeutronAgentHeard { host } => {
                if let Some(n) = self.node_of(host) {
                    self.heard_us[n as usize] = Some(t);
                }
                None
            }
            _ => None,
        }
    }

    fn on_stale_warning(
        &mut self,
        rec: &Record,
        host: &str,
        lag_ms: i64,
        in_snapshot: bool,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        if t - self.boot_us[node as usize] < STALE_WARN_INTERVAL_US {
            self.reach("warning-on-young-host");
        }
        let name = &self.names[node as usize];
        if in_snapshot {
            return Some(Failure {
                invariant: crate::calico::invariants::STALE_WARNING_NOT_IN_SNAPSHOT.name,
                kind: Kind::Safety,
                node: Some(node),
                explanation: format!(
                    "{name} logged a stale-update warning for {host} ({} old) while replaying a snapshot, where old timestamps are expected",
                    secs(lag_ms.max(0) as u64 * 1000)
                ),
            });
        }
        let pid = self.forwarder_pid(node);
        let prev = self.last_warning.insert((node, pid), t);
        match prev {
            Some(p) if t - p < STALE_WARN_INTERVAL_US => Some(Failure {
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
            }),
            _ => None,
        }
    }

    /// The live agent-status watcher process on a node (warnings carry no pid).
    pub(super) fn forwarder_pid(&self, node: NodeIx) -> u32 {
        self.agent_watchers.get(&node).copied().unwrap_or(0)
    }

    fn on_forward(
        &mut self,
        rec: &Record,
        host: &str,
        rev: i64,
        in_snapshot: bool,
        time: &str,
    ) -> Option<Failure> {
        let (node, t) = (rec.node, rec.t_us);
        if let Some(put) = self.status_put_us.get(&rev) {
            if !in_snapshot && t - put > STALE_THRESHOLD_US as u64 {
                self.reach("backlog-over-300s");
            }
        }
        if in_snapshot {
            return None;
        }
        let then = match parse_time(time) {
            Parsed::Aware(x) => x,
            Parsed::Naive(x) => {
                self.reach("naive-timestamp-processed");
                x
            }
            Parsed::Invalid => return None,
        };
        let lag = sim::clock::EPOCH_UNIX_US + rec.local_us - then;
        if lag <= STALE_THRESHOLD_US {
            return None;
        }
        let pid = self.forwarder_pid(node);
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
        })
    }

    /// At the status deadline (faults stopped [`AGENT_VIEW_BOUND_US`] ago): Neutron hears every
    /// running Felix, then shows every settled port status as Felix reports it.
    pub(super) fn status_converged(&self, now_us: u64) -> Option<Failure> {
        self.agent_view_converged(now_us)
            .or_else(|| self.port_status_converged(now_us))
    }

    /// `agent-view-converges`: Neutron has heard within `agent_down_time` from every compute host
    /// whose Felix runs.
    fn agent_view_converged(&self, now_us: u64) -> Option<Failure> {
        let down: Vec<String> = self
            .computes
            .clone()
            .filter(|&c| {
                self.felix_alive[c] && self.heard_us[c].is_none_or(|h| now_us - h >= AGENT_DOWN_US)
            })
            .map(|c| match self.heard_us[c] {
                Some(h) => format!("{} (last heard {} ago)", self.names[c], secs(now_us - h)),
                None => format!("{} (never heard)", self.names[c]),
            })
            .collect();
        if down.is_empty() {
            return None;
        }
        let node = self.holder.as_ref().and_then(|h| h.node);
        let note = node.map(|n| self.fault_note(n)).unwrap_or_default();
        Some(Failure {
            invariant: AGENT_VIEW_CONVERGES,
            kind: Kind::Liveness,
            node,
            explanation: format!(
                "{} after faults stopped, Neutron still shows running agents as down: {}; {}{}",
                secs(AGENT_VIEW_BOUND_US),
                down.join(", "),
                self.describe_master_state(),
                note
            ),
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
                "{} after faults stopped, Neutron shows {} port(s) with a status other than Felix's settled one: {}; {}{}",
                secs(AGENT_VIEW_BOUND_US),
                diverged.len(),
                diverged.join("; "),
                self.describe_master_state(),
                note
            ),
        })
    }

    fn describe_divergence(&self, d: &crate::calico::ports::Divergence) -> String {
        let writer = match d.writer.as_deref().map(|w| (w, self.parse_id(w).0)) {
            Some((w, Some(n))) if self.holds(n) => format!(", written last by the master, {w}"),
            Some((w, _)) => format!(", written last by a host that is not the master, {w}"),
            None => String::new(),
        };
        format!(
            "{}: Felix says {} since {}, Neutron shows {}{writer}",
            d.port,
            d.felix.as_deref().unwrap_or("nothing"),
            secs(d.since_us),
            d.neutron.as_deref().unwrap_or("nothing")
        )
    }
}
