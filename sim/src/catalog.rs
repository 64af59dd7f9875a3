//! The fault catalog of the simulated world: for every [`FaultKind`], what produces it in
//! production, how large and how frequent it realistically is, and where those numbers come from.
//!
//! This is the one place for those facts. The realistic profile draws its sizes from here
//! ([`realize`]); `faultline faults` and docs/faults.md print it. [`facts`] is an exhaustive `match`
//! over [`FaultKind`], so a new kind does not compile until it has an entry; [`every_kind`] walks
//! the kinds through the same kind of `match` ([`next_kind`]).

use crate::fault::{Fault, FaultKind};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// A published source for a cause, a size or a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Alquraan et al., OSDI 2018.
    Alquraan2018,
    /// Alfatafta et al., ACM TOCS 2023 (partial partitions).
    PartialPartitions2023,
    /// Gunawi et al., FAST 2018.
    FailSlow2018,
    /// Huang et al., HotOS 2017.
    GrayFailure2017,
    /// Jepsen's etcd 3.4.3 analysis (2020).
    JepsenEtcd2020,
    /// ntpd's clock discipline defaults.
    Ntpd,
    /// chrony.conf(5): `makestep`, `maxslewrate`.
    Chrony,
    /// Linux kernel NTP interface (adjtimex(2), kernel/time/ntp.c).
    KernelNtp,
    /// Google Compute Engine's live-migration documentation.
    GceLiveMigration,
    /// etcd's tuning guide.
    EtcdTuning,
    /// Linux TCP's retransmission timeout bounds (tcp(7), RFC 6298).
    TcpRto,
    /// The Linux OOM killer and systemd's `Restart=` (process deaths and restarts).
    ProcessSupervision,
    /// Kubernetes pod lifecycle: container restarts with back-off, graceful termination.
    KubernetesPodLifecycle,
    /// Guo et al., SIGCOMM 2015 (Pingmesh).
    Pingmesh2015,
    /// Zhuo et al., SIGCOMM 2017 (packet corruption, CorrOpt).
    CorrOpt2017,
    /// Li et al., CoNEXT 2016 (LossRadar).
    LossRadar2016,
    /// The Amazon EC2 API reference, "Eventual consistency in the Amazon EC2 API".
    Ec2EventualConsistency,
    /// RabbitMQ's documentation: memory and disk alarms, clustering (node restarts).
    RabbitMq,
    /// The Amazon EC2 API reference, "Request throttling for the Amazon EC2 API".
    Ec2Throttling,
    /// cilium/cilium#8414 and #21387: users' operators throttled by EC2.
    CiliumIpamThrottled,
}

impl Source {
    /// The citation, one line.
    pub fn citation(self) -> &'static str {
        match self {
            Source::Alquraan2018 => {
                "Alquraan et al., \"An Analysis of Network-Partitioning Failures in Cloud \
                 Systems\", OSDI 2018: 136 failures in 25 systems; most need only one isolated node"
            }
            Source::PartialPartitions2023 => {
                "Alfatafta et al., \"Toward a Generic Fault Tolerance Technique for Partial \
                 Network Partitioning\" (extended), ACM TOCS 2023: partial partitions from link and \
                 switch faults and firewall misconfiguration"
            }
            Source::FailSlow2018 => {
                "Gunawi et al., \"Fail-Slow at Scale\", FAST 2018: 101 reports of hardware that \
                 keeps working but slowly (disks, NICs, CPUs), for minutes to months"
            }
            Source::GrayFailure2017 => {
                "Huang et al., \"Gray Failure: The Achilles' Heel of Cloud-Scale Systems\", \
                 HotOS 2017: partial, differently observed failures (one client sees them, the \
                 detector does not)"
            }
            Source::JepsenEtcd2020 => {
                "Kingsbury, Jepsen: etcd 3.4.3 (2020): process pauses (GC, VM migration, \
                 SIGSTOP) make lease-based locks unsafe; indeterminate (timed-out) requests"
            }
            Source::Ntpd => {
                "ntpd clock discipline (ntp.org, ntpd(8), tinker): offsets over 128 ms are \
                 stepped after the stepout interval (900 s in ntp 4.2.8), smaller ones slewed at \
                 most 500 ppm; an offset over the 1000 s panic threshold makes ntpd exit"
            }
            Source::Chrony => {
                "chrony.conf(5): `makestep 1 3` (the distributions' default) steps an offset \
                 over 1 s only in the first three updates, later offsets are slewed; `maxslewrate` \
                 defaults to 83333.333 ppm"
            }
            Source::KernelNtp => {
                "Linux adjtimex(2) and kernel/time/ntp.c: frequency corrections up to 500 ppm \
                 (MAXFREQ), which also rate CLOCK_MONOTONIC; crystal oscillators are off by tens \
                 of ppm"
            }
            Source::GceLiveMigration => {
                "Google Compute Engine, \"Live migration process during maintenance events\": \
                 the VM is paused for a short blackout while its last state is copied"
            }
            Source::EtcdTuning => {
                "etcd docs, \"Tuning\": heartbeat 100 ms and election timeout 1000 ms by \
                 default; slow disks and networks delay every request"
            }
            Source::TcpRto => {
                "RFC 6298 and tcp(7): the retransmission timeout starts at 200 ms (Linux \
                 TCP_RTO_MIN) and backs off exponentially, so a lossy link adds 0.2 s to seconds"
            }
            Source::ProcessSupervision => {
                "Linux OOM killer and systemd.service(5) `Restart=`: a killed process runs no \
                 cleanup; its supervisor starts it again"
            }
            Source::KubernetesPodLifecycle => {
                "Kubernetes docs, \"Pod Lifecycle\": crashed containers restart with back-off \
                 (10 s doubling to 5 min); a graceful deletion sends SIGTERM, 30 s grace period"
            }
            Source::Pingmesh2015 => {
                "Guo et al., \"Pingmesh: A Large-Scale System for Data Center Network Latency \
                 Measurement and Analysis\", SIGCOMM 2015: typical drop rates of 1e-4 to 1e-5 \
                 at NICs and ToRs; black holes and silent random packet drops at faulty switches"
            }
            Source::CorrOpt2017 => {
                "Zhuo et al., \"Understanding and Mitigating Packet Corruption in Data Center \
                 Networks\", SIGCOMM 2017 (350K links, 15 data centers): corruption hits fewer \
                 links than congestion with heavier loss, stable over time until the link is \
                 repaired (cables, connectors, optics)"
            }
            Source::LossRadar2016 => {
                "Li et al., \"LossRadar: Fast Detection of Lost Packets in Data Center \
                 Networks\", CoNEXT 2016: losses from congestion and black holes are common; \
                 a year of one data center has 40-80 machines with packet loss and maintenance \
                 causing 30-minute random connectivity losses (Dean's keynote)"
            }
            Source::Ec2EventualConsistency => {
                "Amazon EC2 API reference, \"Eventual consistency in the Amazon EC2 API\" \
                 (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html): the result \
                 of a command may not be visible to all later commands; it advises describing \
                 with exponential backoff from a couple of seconds; it gives no bound on the lag"
            }
            Source::RabbitMq => {
                "RabbitMQ documentation, \"Memory and Disk Alarms\" (rabbitmq.com/docs/alarms): \
                 above the memory watermark or below the free-disk limit a node blocks every \
                 publishing connection until the alarm clears; \"Clustering Guide\" \
                 (rabbitmq.com/docs/clustering): a restarted cluster node waits for its peers, \
                 by default 10 retries of 30 s"
            }
            Source::Ec2Throttling => {
                "Amazon EC2 API reference, \"Request throttling for the Amazon EC2 API\" \
                 (docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html): token \
                 buckets per account, Region and API; every request of any client of the account \
                 takes a token, refused with RequestLimitExceeded when none is left; a \
                 non-mutating (Describe*) API's bucket holds 100 and refills 20 a second, a \
                 mutating API's 200 and 5 a second"
            }
            Source::CiliumIpamThrottled => {
                "cilium/cilium#8414 (2019, the operator's EC2 client rate limited when many nodes \
                 start at once, hence --limit-ipam-api-qps/-burst) and #21387 (2022: users \
                 reported throttling by the cloud with the old limits; failed calls leak \
                 interfaces)"
            }
        }
    }
}

/// What a realistic range measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quantity {
    /// The fault's duration (ms).
    DurationMs,
    /// A clock step's size (ms, either direction: the range bounds its magnitude).
    StepMs,
    /// A rate offset in ppm (either direction: the range bounds its magnitude).
    Ppm,
    /// A share of requests (percent).
    Percent,
    /// Time added to each message or request (ms).
    ExtraMs,
    /// A share of packets lost (per mille).
    LossPermille,
    /// The mean length of a loss burst (packets).
    BurstPackets,
    /// How far behind the present a read's view may be (ms).
    LagMs,
}

/// A realistic range of one quantity (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Range {
    /// What it measures.
    pub quantity: Quantity,
    /// The least realistic value.
    pub lo: i64,
    /// The greatest realistic value.
    pub hi: i64,
}

impl Range {
    const fn new(quantity: Quantity, lo: i64, hi: i64) -> Range {
        Range { quantity, lo, hi }
    }

    /// `v` if it lies in the range, else a value drawn uniformly from it.
    pub fn fit(&self, v: i64, rng: &mut ChaCha8Rng) -> i64 {
        if (self.lo..=self.hi).contains(&v) {
            v
        } else {
            rng.random_range(self.lo..=self.hi)
        }
    }

    /// Like [`Range::fit`] for a signed quantity whose magnitude the range bounds: the sign of `v`
    /// is kept (0 counts as positive).
    pub fn fit_magnitude(&self, v: i64, rng: &mut ChaCha8Rng) -> i64 {
        let m = self.fit(v.abs(), rng);
        if v < 0 {
            -m
        } else {
            m
        }
    }

    /// E.g. `duration 500-300000 ms`.
    pub fn describe(&self) -> String {
        let (what, unit) = match self.quantity {
            Quantity::DurationMs => ("duration", "ms"),
            Quantity::StepMs => ("step (either way)", "ms"),
            Quantity::Ppm => ("rate offset (either way)", "ppm"),
            Quantity::Percent => ("share of requests", "%"),
            Quantity::ExtraMs => ("added delay", "ms"),
            Quantity::LossPermille => ("share of packets lost", "per mille"),
            Quantity::BurstPackets => ("mean loss burst", "packets"),
            Quantity::LagMs => ("read lag", "ms"),
        };
        format!("{what} {}-{} {unit}", self.lo, self.hi)
    }
}

/// The catalog entry of one fault kind.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Facts {
    /// The kind's name, as schedules write it (`pause`).
    pub name: &'static str,
    /// What produces it in production.
    pub causes: &'static [&'static str],
    /// Its realistic sizes and rates; a kind with no size has none.
    pub realistic: &'static [Range],
    /// How often it happens, in words.
    pub frequency: &'static str,
    /// Where the causes, sizes and frequency come from.
    pub sources: &'static [Source],
}

impl Facts {
    /// The range of `q`, if the kind has one.
    pub fn range(&self, q: Quantity) -> Option<&'static Range> {
        self.realistic.iter().find(|r| r.quantity == q)
    }
}

use Quantity::*;

/// The catalog entry of one fault kind (see [`facts`]).
pub const PARTITION: Facts = Facts {
    name: "partition",
    causes: &[
        "a top-of-rack or aggregation switch failure or reboot",
        "a network or firewall misconfiguration during maintenance",
        "a NIC or link failure on the path between groups",
    ],
    realistic: &[Range::new(DurationMs, 500, 300_000)],
    frequency: "a few per year per cluster; most isolate a single node (Alquraan 2018)",
    sources: &[Source::Alquraan2018, Source::PartialPartitions2023],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SIMPLEX: Facts = Facts {
    name: "simplex",
    causes: &[
        "an asymmetric firewall or security-group rule (one direction dropped)",
        "a half-failed link or NIC (transmit works, receive does not)",
        "a connection-tracking table that is full in one direction",
    ],
    realistic: &[Range::new(DurationMs, 500, 300_000)],
    frequency: "rarer than complete partitions, but catastrophic in most systems studied",
    sources: &[Source::PartialPartitions2023, Source::GrayFailure2017],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const ISOLATE: Facts = Facts {
    name: "isolate",
    causes: &[
        "the node's NIC, cable or top-of-rack port fails",
        "the node's network namespace or iptables rules are reset by an agent",
    ],
    realistic: &[Range::new(DurationMs, 1_000, 300_000)],
    frequency:
        "the most common partition: most of 136 studied failures need only one isolated node",
    sources: &[Source::Alquraan2018],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const LATENCY: Facts = Facts {
    name: "latency",
    causes: &[
        "packet loss answered by TCP retransmission (the timeout starts at 200 ms)",
        "a congested or fail-slow link or NIC",
        "a saturated host (interrupt or softirq starvation)",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 300_000),
        Range::new(ExtraMs, 1, 3_000),
    ],
    frequency: "common: gray failures are the usual form of network trouble",
    sources: &[
        Source::TcpRto,
        Source::GrayFailure2017,
        Source::FailSlow2018,
    ],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const LOSS: Facts = Facts {
    name: "loss",
    causes: &[
        "a corrupting link: a dirty connector, a bent or damaged fibre, a decaying optic",
        "a faulty switch or NIC silently dropping a share of packets (a gray failure)",
        "congestion at a ToR port (incast), losing packets in bursts",
        "network maintenance with random connectivity loss",
    ],
    realistic: &[
        Range::new(DurationMs, 10_000, 1_800_000),
        Range::new(LossPermille, 1, 100),
        Range::new(BurstPackets, 1, 10),
    ],
    frequency: "background loss of 1e-4 to 1e-5 is normal and harmless; a degraded link losing \
        0.1-10% is rare per link and lasts until it is found and repaired",
    sources: &[
        Source::Pingmesh2015,
        Source::CorrOpt2017,
        Source::LossRadar2016,
        Source::GrayFailure2017,
        Source::TcpRto,
    ],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const PAUSE: Facts = Facts {
    name: "pause",
    causes: &[
        "SIGSTOP (a debugger, `kill -STOP`, a container runtime freezing the cgroup)",
        "the blackout of a VM live migration",
        "a stop-the-world garbage collection",
        "hypervisor CPU steal or a host swapping the VM out",
    ],
    realistic: &[Range::new(DurationMs, 50, 30_000)],
    frequency: "live migrations are routine maintenance (weekly per VM in some clouds); GC \
                pauses of seconds happen on loaded heaps",
    sources: &[Source::JepsenEtcd2020, Source::GceLiveMigration],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const CRASH: Facts = Facts {
    name: "crash",
    causes: &[
        "a kernel panic, a hardware fault or a power loss, then a reboot",
        "a VM stopped and restarted by its cloud after a host error",
    ],
    realistic: &[Range::new(DurationMs, 20_000, 300_000)],
    frequency: "a few per node-year; the reboot itself takes tens of seconds to minutes",
    sources: &[Source::GceLiveMigration, Source::ProcessSupervision],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const CLOCK_STEP: Facts = Facts {
    name: "clock-step",
    causes: &[
        "ntpd stepping an offset over 128 ms (e.g. after a VM pause or migration)",
        "chronyd's `makestep` at start (offset over 1 s in the first updates)",
        "a manual `date -s` or `hwclock --hctosys`",
        "a VM resumed from suspend or a snapshot",
    ],
    realistic: &[Range::new(StepMs, 128, 60_000)],
    frequency: "rare on a synchronised host: after pauses, restores, boots with a wrong RTC",
    sources: &[Source::Ntpd, Source::Chrony],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const DRIFT: Facts = Facts {
    name: "drift",
    causes: &[
        "the oscillator's frequency error (tens of ppm, temperature dependent)",
        "an unsynchronised clock (NTP daemon stopped or unreachable)",
    ],
    realistic: &[Range::new(DurationMs, 0, 300_000), Range::new(Ppm, 1, 500)],
    frequency: "always present on an unsynchronised clock",
    sources: &[Source::KernelNtp, Source::Ntpd],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const CLOCK_RATE: Facts = Facts {
    name: "clock-rate",
    causes: &[
        "NTP's frequency correction, which also rates CLOCK_MONOTONIC (up to 500 ppm)",
        "chronyd slewing a large offset away (up to maxslewrate, 83333 ppm)",
        "an unstable clocksource after a VM migration (e.g. TSC to a different host)",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 300_000),
        Range::new(Ppm, 1, 83_333),
    ],
    frequency: "small offsets always; large ones only while an offset is slewed away",
    sources: &[Source::KernelNtp, Source::Chrony],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const TASK_DEATH: Facts = Facts {
    name: "task-death",
    causes: &[
        "an uncaught exception that ends one greenthread or goroutine's loop without \
         ending its process",
        "a loop that returns on an error instead of retrying",
    ],
    realistic: &[],
    frequency: "only where the task's body can raise or return; see each system's entry",
    sources: &[Source::GrayFailure2017],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const TASK_STALL: Facts = Facts {
    name: "task-stall",
    causes: &[
        "a call without a timeout blocking on a slow peer",
        "a greenthread that does not yield (eventlet: CPU-bound or a blocking C call)",
        "lock contention or a fail-slow disk under a synchronous write",
    ],
    realistic: &[Range::new(DurationMs, 500, 30_000)],
    frequency: "common in gray failures: the process is up, one part does not progress",
    sources: &[Source::GrayFailure2017, Source::FailSlow2018],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const PROCESS_CRASH: Facts = Facts {
    name: "process-crash",
    causes: &[
        "the OOM killer",
        "an unhandled exception or panic that ends the process",
        "a segfault in a native library",
    ],
    realistic: &[],
    frequency: "a supervisor (systemd, kubelet) restarts it; CrashLoopBackOff shows it is common",
    sources: &[Source::ProcessSupervision, Source::KubernetesPodLifecycle],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SERVICE_RESTART: Facts = Facts {
    name: "service-restart",
    causes: &[
        "a rolling upgrade or configuration change (`systemctl restart`, a new pod)",
        "a pod deleted by a drain or an eviction (SIGTERM, then the grace period)",
    ],
    realistic: &[Range::new(DurationMs, 1_000, 60_000)],
    frequency: "every upgrade or node drain",
    sources: &[Source::KubernetesPodLifecycle],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SERVICE_UNAVAILABLE: Facts = Facts {
    name: "service-unavailable",
    causes: &[
        "etcd without a leader (an election takes about one election timeout, 1 s)",
        "a lost quorum, or a database or API server restarting",
        "a load balancer with no healthy backend",
        "a message broker (RabbitMQ) restarting or upgraded, or blocking its publishers under a \
         memory or disk alarm",
    ],
    realistic: &[Range::new(DurationMs, 1_000, 120_000)],
    frequency: "elections after every leader loss; outages of minutes a few times a year",
    sources: &[Source::EtcdTuning, Source::JepsenEtcd2020, Source::RabbitMq],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SERVICE_AMBIGUOUS: Facts = Facts {
    name: "service-ambiguous",
    causes: &[
        "a client timeout on a request the server commits later",
        "a connection reset after the write was applied",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 120_000),
        Range::new(Percent, 1, 20),
    ],
    frequency: "under overload or during an election",
    sources: &[Source::JepsenEtcd2020, Source::GrayFailure2017],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SERVICE_SLOW: Facts = Facts {
    name: "service-slow",
    causes: &[
        "a fail-slow disk under the server's fsync",
        "an overloaded server or a noisy neighbour",
        "a slow network between the server's members",
    ],
    realistic: &[
        Range::new(DurationMs, 5_000, 600_000),
        Range::new(ExtraMs, 10, 8_000),
    ],
    frequency: "fail-slow hardware is reported in every large fleet and lasts minutes or more",
    sources: &[Source::FailSlow2018, Source::EtcdTuning],
};

/// The catalog entry of one fault kind (see [`facts`]).
pub const SERVICE_GARBLED: Facts = Facts {
    name: "service-garbled",
    causes: &[
        "a proxy or load balancer answering with its own error page (HTTP 502/503 body)",
        "a body truncated by a reset connection",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 60_000),
        Range::new(Percent, 1, 20),
    ],
    frequency: "while a proxy in front of the service has no healthy backend",
    sources: &[Source::GrayFailure2017],
};

/// The catalog entry of one fault kind (see [`facts`]). Its lag range is an assumption: the EC2
/// documentation says reads lag writes but publishes no size; its advice to retry a describe
/// after "a couple of seconds" suggests lags of up to seconds.
pub const STALE_READS: Facts = Facts {
    name: "stale-reads",
    causes: &[
        "an eventually consistent cloud API (EC2's DescribeNetworkInterfaces) answering from a \
         replica that has not yet seen a recent AssignPrivateIpAddresses or \
         UnassignPrivateIpAddresses",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 600_000),
        Range::new(LagMs, 100, 5_000),
    ],
    frequency: "always possible in EC2 (the lag's size is assumed: EC2 publishes none)",
    sources: &[Source::Ec2EventualConsistency],
};

/// The catalog entry of one fault kind (see [`facts`]). The duration and share are assumed:
/// EC2 documents its buckets, not how much of them other clients of an account take, and the
/// reports of throttled operators give no durations.
pub const THROTTLING: Facts = Facts {
    name: "throttling",
    causes: &[
        "other clients of the same AWS account and Region (autoscalers, CI, other clusters' \
         operators, the console) spending the same API's request tokens: EC2 throttles per \
         account, Region and API, whoever the caller",
        "a burst of one's own nodes (many nodes starting at once) beyond a bucket's refill",
    ],
    realistic: &[
        Range::new(DurationMs, 1_000, 600_000),
        Range::new(Percent, 50, 100),
    ],
    frequency: "reported by users of Cilium's ENI IPAM in large or shared accounts (the sizes are \
                assumed)",
    sources: &[Source::Ec2Throttling, Source::CiliumIpamThrottled],
};

/// The catalog entry of `kind` (exhaustive: a new kind needs an entry to compile).
pub fn facts(kind: &FaultKind) -> &'static Facts {
    use FaultKind::*;
    match kind {
        Partition { .. } => &PARTITION,
        Simplex { .. } => &SIMPLEX,
        Isolate { .. } => &ISOLATE,
        Latency { .. } => &LATENCY,
        Loss { .. } => &LOSS,
        Pause { .. } => &PAUSE,
        Crash { .. } => &CRASH,
        ClockStep { .. } => &CLOCK_STEP,
        Drift { .. } => &DRIFT,
        ClockRate { .. } => &CLOCK_RATE,
        TaskDeath { .. } => &TASK_DEATH,
        TaskStall { .. } => &TASK_STALL,
        ProcessCrash { .. } => &PROCESS_CRASH,
        ServiceRestart { .. } => &SERVICE_RESTART,
        ServiceUnavailable { .. } => &SERVICE_UNAVAILABLE,
        ServiceAmbiguous { .. } => &SERVICE_AMBIGUOUS,
        ServiceSlow { .. } => &SERVICE_SLOW,
        ServiceGarbled { .. } => &SERVICE_GARBLED,
        StaleReads { .. } => &STALE_READS,
        Throttling { .. } => &THROTTLING,
    }
}

/// The kind after `k` in the catalog's order (`None`: the first), as an example value; `None`
/// after the last. Exhaustive, so a new kind must be placed in the chain.
pub fn next_kind(k: Option<&FaultKind>) -> Option<FaultKind> {
    use FaultKind::*;
    let n = || "n".to_string();
    Some(match k {
        None => Partition {
            a: vec![],
            b: vec![],
        },
        Some(Partition { .. }) => Simplex {
            from: vec![],
            to: vec![],
        },
        Some(Simplex { .. }) => Isolate { node: n() },
        Some(Isolate { .. }) => Latency {
            node: n(),
            extra_ms: 0,
        },
        Some(Latency { .. }) => Loss {
            node: n(),
            permille: 0,
            burst: 0,
        },
        Some(Loss { .. }) => Pause { node: n() },
        Some(Pause { .. }) => Crash { node: n() },
        Some(Crash { .. }) => ClockStep {
            node: n(),
            delta_ms: 0,
        },
        Some(ClockStep { .. }) => Drift { node: n(), ppm: 0 },
        Some(Drift { .. }) => ClockRate { node: n(), ppm: 0 },
        Some(ClockRate { .. }) => TaskDeath {
            node: n(),
            task: n(),
        },
        Some(TaskDeath { .. }) => TaskStall {
            node: n(),
            task: n(),
        },
        Some(TaskStall { .. }) => ProcessCrash {
            node: n(),
            process: n(),
        },
        Some(ProcessCrash { .. }) => ServiceRestart { node: n() },
        Some(ServiceRestart { .. }) => ServiceUnavailable { node: n() },
        Some(ServiceUnavailable { .. }) => ServiceAmbiguous {
            node: n(),
            percent: 0,
        },
        Some(ServiceAmbiguous { .. }) => ServiceSlow {
            node: n(),
            extra_ms: 0,
        },
        Some(ServiceSlow { .. }) => ServiceGarbled {
            node: n(),
            percent: 0,
        },
        Some(ServiceGarbled { .. }) => StaleReads {
            node: n(),
            lag_ms: 0,
        },
        Some(StaleReads { .. }) => Throttling {
            node: n(),
            percent: 0,
        },
        Some(Throttling { .. }) => return None,
    })
}

/// One example of every fault kind, in the catalog's order.
pub fn every_kind() -> Vec<FaultKind> {
    std::iter::successors(next_kind(None), |k| next_kind(Some(k))).collect()
}

/// Initial wall-clock offsets of synchronised hosts (ms, either way): ntpd steps anything larger.
pub const SYNCED_OFFSET_MS: Range = Range::new(StepMs, 0, 128);
/// Initial frequency errors of the hosts' oscillators (ppm, either way).
pub const OSCILLATOR_PPM: Range = Range::new(Ppm, 0, 50);

/// Brings a drawn fault to realistic sizes (the realistic profile): each size outside its kind's
/// realistic range is drawn again, uniformly, from that range; sizes inside it are kept.
pub fn realize(f: &mut Fault, rng: &mut ChaCha8Rng) {
    let facts = facts(&f.kind);
    if f.dur_ms > 0 {
        if let Some(r) = facts.range(DurationMs) {
            f.dur_ms = r.fit(f.dur_ms as i64, rng).max(1) as u64;
        }
    }
    let fit = |q, v: i64, rng: &mut ChaCha8Rng| match facts.range(q) {
        Some(r) => r.fit(v, rng),
        None => v,
    };
    use FaultKind::*;
    match &mut f.kind {
        Latency { extra_ms, .. } | ServiceSlow { extra_ms, .. } => {
            *extra_ms = fit(ExtraMs, *extra_ms as i64, rng) as u64
        }
        ServiceAmbiguous { percent, .. }
        | ServiceGarbled { percent, .. }
        | Throttling { percent, .. } => *percent = fit(Percent, *percent as i64, rng) as u32,
        StaleReads { lag_ms, .. } => *lag_ms = fit(LagMs, *lag_ms as i64, rng) as u64,
        Loss {
            permille, burst, ..
        } => {
            *permille = fit(LossPermille, *permille as i64, rng) as u32;
            *burst = fit(BurstPackets, *burst as i64, rng) as u32;
        }
        ClockStep { delta_ms, .. } => {
            if let Some(r) = facts.range(StepMs) {
                *delta_ms = r.fit_magnitude(*delta_ms, rng);
            }
        }
        Drift { ppm, .. } | ClockRate { ppm, .. } => {
            if let Some(r) = facts.range(Ppm) {
                *ppm = r.fit_magnitude(*ppm, rng);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn every_kind_has_causes_sources_and_its_own_name() {
        let kinds = every_kind();
        assert_eq!(kinds.len(), 20);
        for k in &kinds {
            let f = facts(k);
            assert!(!f.causes.is_empty() && !f.sources.is_empty(), "{}", f.name);
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(
                json["kind"], f.name,
                "the entry is named as schedules name the kind"
            );
            for r in f.realistic {
                assert!(r.lo <= r.hi, "{}: {r:?}", f.name);
            }
        }
    }

    #[test]
    fn realize_keeps_realistic_sizes_and_redraws_the_others() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut f = Fault {
            at_ms: 0,
            dur_ms: 2_000,
            kind: FaultKind::ClockStep {
                node: "n".into(),
                delta_ms: -300_000,
            },
        };
        realize(&mut f, &mut rng);
        let FaultKind::ClockStep { delta_ms, .. } = f.kind else {
            unreachable!()
        };
        assert!((-60_000..=-128).contains(&delta_ms), "{delta_ms}");
        let mut p = Fault {
            at_ms: 0,
            dur_ms: 2_000,
            kind: FaultKind::Pause { node: "n".into() },
        };
        realize(&mut p, &mut rng);
        assert_eq!(p.dur_ms, 2_000);
        p.dur_ms = 120_000;
        realize(&mut p, &mut rng);
        assert!((50..=30_000).contains(&p.dur_ms));
    }
}
