//! Faults as data.
//!
//! A run's faults are a [`Schedule`]: a list of timed [`Fault`]s, each with a start time and a
//! duration. Schedules are generated from the seed by a scenario, printed, written into replay
//! files and re-run exactly; the world applies them (see `World::apply_fault`). A fault with a
//! duration ends by itself (a partition heals, a paused node resumes, a crashed node reboots); an
//! instantaneous one (`dur_ms == 0`) such as a clock step or a silent task death does not.

use serde::{Deserialize, Serialize};

/// One scheduled fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// True time (ms since the start of the run) at which the fault starts.
    pub at_ms: u64,
    /// How long it lasts (ms); 0 for instantaneous faults.
    #[serde(default)]
    pub dur_ms: u64,
    /// What happens.
    #[serde(flatten)]
    pub kind: FaultKind,
}

/// The fault vocabulary. Node names refer to the scenario's nodes (`h1`, `etcd`, ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultKind {
    /// Messages between the two groups are dropped in both directions. A complete partition lists
    /// every node; a partial one leaves some nodes (that still reach both sides) out of both groups.
    Partition {
        /// Node names on one side.
        a: Vec<String>,
        /// Node names on the other side.
        b: Vec<String>,
    },
    /// Messages from `from` to `to` are dropped; the other direction works.
    Simplex {
        /// Senders whose messages are dropped.
        from: Vec<String>,
        /// Receivers that no longer hear `from`.
        to: Vec<String>,
    },
    /// Every message to or from `node` is dropped.
    Isolate {
        /// The node cut off from every other.
        node: String,
    },
    /// Every message to or from `node` takes `extra_ms` longer.
    Latency {
        /// The node whose traffic is delayed.
        node: String,
        /// Delay added to each message's delivery (ms); the delays of several latency faults on
        /// the sender and the receiver add up.
        extra_ms: u64,
    },
    /// Datagrams to or from `node` cross its lossy link (a bad cable, optic or NIC, a congested
    /// or faulty switch port): each is lost as a two-state (Gilbert) channel decides, in bursts of
    /// `burst` packets on average, `permille` of them in all. TCP retransmits, so a lossy link
    /// delays a stream's messages instead (see `sim::net`).
    Loss {
        /// The node whose link loses packets.
        node: String,
        /// The long-run share of packets lost (per mille, 1-1000).
        permille: u32,
        /// The mean length of a loss burst (packets, at least 1).
        burst: u32,
    },
    /// The node stops running (a VM or GC stall); its clocks keep going. Resumes after `dur_ms`.
    Pause {
        /// The node that stops being scheduled.
        node: String,
    },
    /// The node crashes (all in-memory state lost) and boots again after `dur_ms`.
    Crash {
        /// The node that crashes.
        node: String,
    },
    /// The node's wall clock jumps by `delta_ms` (negative: backward).
    ClockStep {
        /// The node whose wall clock jumps.
        node: String,
        /// Size of the jump (ms; negative: backward).
        delta_ms: i64,
    },
    /// The node's wall clock drifts at `ppm` from now on (for `dur_ms`, then back to 0; 0 = for good).
    Drift {
        /// The node whose wall clock drifts.
        node: String,
        /// Drift in parts per million of true time (positive: the clock runs fast).
        ppm: i64,
    },
    /// The node's monotonic clock runs at `(1 + ppm / 1e6)` times the true rate from now on (for
    /// `dur_ms`, then back to the true rate; 0 = for good). Its timers follow it: a process's sleep
    /// lasts its duration of this clock. The wall clock is not affected (see [`FaultKind::Drift`]).
    ClockRate {
        /// The node whose monotonic clock changes rate.
        node: String,
        /// Rate offset in parts per million (positive: the clock and its timers run fast).
        ppm: i64,
    },
    /// The named task on the node is dropped at once: no cleanup code runs.
    TaskDeath {
        /// The node the task runs on.
        node: String,
        /// The task's name, as its process spawned it.
        task: String,
    },
    /// The named task is not polled for `dur_ms` (its process stays up).
    TaskStall {
        /// The node the task runs on.
        node: String,
        /// The task's name, as its process spawned it.
        task: String,
    },
    /// The newest live process with this name on the node is killed (no cleanup); its parent
    /// decides whether to respawn it.
    ProcessCrash {
        /// The node the process runs on.
        node: String,
        /// The process's name, as it was started.
        process: String,
    },
    /// The node's services are stopped gracefully (each top-level process is asked to terminate),
    /// and started again after `dur_ms` without rebooting the host.
    ServiceRestart {
        /// The node whose services restart.
        node: String,
    },
    /// The service on `node` refuses every request (not applied).
    ServiceUnavailable {
        /// The node of the service (etcd, API server or cloud API) that refuses.
        node: String,
    },
    /// `percent` of the requests to the service on `node` time out at the client; each of those is
    /// applied or not with equal probability.
    ServiceAmbiguous {
        /// The node of the service whose requests time out.
        node: String,
        /// Share of requests (0-100) that time out; the highest of overlapping faults applies.
        percent: u32,
    },
    /// The service on `node` takes `extra_ms` longer per request (requests queue behind each other).
    ServiceSlow {
        /// The node of the slow service.
        node: String,
        /// Extra service time per request (ms); overlapping faults add up.
        extra_ms: u64,
    },
    /// `percent` of the replies of the service on `node` are applied but arrive garbled (the client
    /// library raises an unexpected, non-protocol error).
    ServiceGarbled {
        /// The node of the service whose replies are garbled.
        node: String,
        /// Share of replies (0-100) that arrive garbled; the highest of overlapping faults applies.
        percent: u32,
    },
    /// Reads served by the service on `node` may show its state as it was up to `lag_ms` ago
    /// (an eventually consistent API: a change is not yet visible to every later read). Each
    /// read draws its own age, uniformly from 0 to `lag_ms`; writes always act on the present.
    StaleReads {
        /// The node of the service whose reads lag.
        node: String,
        /// The oldest a read's view may be (ms); the highest of overlapping faults applies.
        lag_ms: u64,
    },
    /// Other clients of the same account and region take `percent` of the request rate of every
    /// API of the service on `node`, after a burst of theirs emptied its buckets when the fault
    /// began: its token-bucket request throttling (EC2's `RequestLimitExceeded`) refuses what
    /// the rest of the refill cannot pay for.
    Throttling {
        /// The node of the service whose request rate is shared.
        node: String,
        /// The share (0-100) of every bucket's refill other clients take; the highest of
        /// overlapping faults applies.
        percent: u32,
    },
}

impl FaultKind {
    /// The nodes this fault touches (used to decide which monitors' obligations it disturbs).
    pub fn nodes(&self) -> Vec<&str> {
        use FaultKind::*;
        match self {
            Partition { a, b } => a.iter().chain(b).map(|s| s.as_str()).collect(),
            Simplex { from, to } => from.iter().chain(to).map(|s| s.as_str()).collect(),
            Isolate { node }
            | Latency { node, .. }
            | Loss { node, .. }
            | Pause { node }
            | Crash { node }
            | ClockStep { node, .. }
            | Drift { node, .. }
            | ClockRate { node, .. }
            | TaskDeath { node, .. }
            | TaskStall { node, .. }
            | ProcessCrash { node, .. }
            | ServiceRestart { node }
            | ServiceUnavailable { node }
            | ServiceAmbiguous { node, .. }
            | ServiceSlow { node, .. }
            | ServiceGarbled { node, .. }
            | StaleReads { node, .. }
            | Throttling { node, .. } => vec![node.as_str()],
        }
    }

    /// A short human-readable description, e.g. `pause h2` or `partition [h1] | [etcd, h2]`.
    pub fn describe(&self) -> String {
        use FaultKind::*;
        match self {
            Partition { a, b } => format!("partition [{}] | [{}]", a.join(", "), b.join(", ")),
            Simplex { from, to } => {
                format!("simplex [{}] -> [{}] cut", from.join(", "), to.join(", "))
            }
            Isolate { node } => format!("isolate {node}"),
            Latency { node, extra_ms } => format!("+{extra_ms} ms latency at {node}"),
            Loss {
                node,
                permille,
                burst,
            } => format!(
                "{}.{}% packet loss at {node} (bursts of {burst})",
                permille / 10,
                permille % 10
            ),
            Pause { node } => format!("pause {node}"),
            Crash { node } => format!("crash {node}"),
            ClockStep { node, delta_ms } => format!("clock step {delta_ms:+} ms on {node}"),
            Drift { node, ppm } => format!("drift {ppm:+} ppm on {node}"),
            ClockRate { node, ppm } => {
                format!("monotonic clock at {} rate on {node}", ppm_as_percent(*ppm))
            }
            TaskDeath { node, task } => format!("silent death of {node}/{task}"),
            TaskStall { node, task } => format!("stall of {node}/{task}"),
            ProcessCrash { node, process } => format!("crash of process {node}/{process}"),
            ServiceRestart { node } => format!("graceful service restart on {node}"),
            ServiceUnavailable { node } => format!("{node} unavailable"),
            ServiceAmbiguous { node, percent } => {
                format!("{percent}% ambiguous timeouts at {node}")
            }
            ServiceSlow { node, extra_ms } => format!("{node} slow by {extra_ms} ms"),
            ServiceGarbled { node, percent } => format!("{percent}% garbled replies from {node}"),
            StaleReads { node, lag_ms } => format!("reads from {node} up to {lag_ms} ms stale"),
            Throttling { node, percent } => {
                format!("{percent}% of {node}'s request rate taken by other clients")
            }
        }
    }
}

/// A rate change in ppm as a signed percentage with as many decimals as it needs, at least one
/// (`500_000` is `+50.0%`, `-125` is `-0.0125%`).
fn ppm_as_percent(ppm: i64) -> String {
    let sign = if ppm < 0 { '-' } else { '+' };
    let abs = ppm.unsigned_abs();
    let frac = format!("{:04}", abs % 10_000);
    let frac = frac.trim_end_matches('0');
    let frac = if frac.is_empty() { "0" } else { frac };
    format!("{sign}{}.{frac}%", abs / 10_000)
}

/// A run's fault schedule, ordered by start time.
pub type Schedule = Vec<Fault>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_fault_describes_itself_in_percent() {
        let rate = |ppm| FaultKind::ClockRate {
            node: "n1".into(),
            ppm,
        };
        assert_eq!(
            rate(500_000).describe(),
            "monotonic clock at +50.0% rate on n1"
        );
        assert_eq!(
            rate(-125).describe(),
            "monotonic clock at -0.0125% rate on n1"
        );
        assert_eq!(
            rate(1_000_000).describe(),
            "monotonic clock at +100.0% rate on n1"
        );
        assert_eq!(rate(0).describe(), "monotonic clock at +0.0% rate on n1");
        assert_eq!(rate(7).nodes(), vec!["n1"]);
    }

    #[test]
    fn a_rate_fault_reads_and_writes_as_clock_rate() {
        let f: Fault = serde_json::from_str(
            r#"{"at_ms":5,"dur_ms":10,"kind":"clock-rate","node":"n1","ppm":-20}"#,
        )
        .unwrap();
        assert_eq!(
            f.kind,
            FaultKind::ClockRate {
                node: "n1".into(),
                ppm: -20
            }
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"at_ms":5,"dur_ms":10,"kind":"clock-rate","node":"n1","ppm":-20}"#
        );
    }
}
