//! Candidates on their own nodes, through partitions and pauses, with the cilium-operator
//! constants (15 s / 10 s / 2 s): the timing the module documentation of `sim::leaderelection`
//! derives.

use super::{near, near_opt, near_span, sim_config, Write, Writes, API, MS, S, SLACK_US};
use sim::kube::Kube;
use sim::leaderelection::{
    peek_lease, LeaderElectionConfig, LeaderElector, LeaseSpec, Snapshot, CILIUM_OPERATOR_LOCK,
};
use sim::runtime::{on_fresh_thread, simulate};
use sim::sync::Notify;
use sim::world::Host;
use sim::{Fault, FaultKind, Proc, Schedule, World};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// A candidate: its node (also its identity), configuration, when its elector starts and (if
/// ever) when it is stopped, true ms.
#[derive(Clone)]
struct Candidate {
    node: &'static str,
    cfg: LeaderElectionConfig,
    start_ms: u64,
    stop_ms: Option<u64>,
}

fn candidate(node: &'static str, cilium: bool) -> Candidate {
    let cfg = if cilium {
        LeaderElectionConfig::cilium_operator(node)
    } else {
        LeaderElectionConfig::new(CILIUM_OPERATOR_LOCK, node)
    };
    Candidate {
        node,
        cfg,
        start_ms: 0,
        stop_ms: None,
    }
}

/// What a run shows.
#[derive(Clone, Debug, PartialEq)]
struct Out {
    /// (true µs, candidate, snapshot) at each change of a candidate's snapshot.
    seen: Vec<(u64, String, Snapshot)>,
    /// (true µs, candidate, hook) as the hooks resolved: `started true|false`, `lost`,
    /// `stopped`, `leader X`.
    hooks: Vec<(u64, String, String)>,
    /// (true µs, candidate) of each beat of the leader-only work (every 500 ms while leading).
    work: Vec<(u64, String)>,
    writes: Vec<Write>,
    lease: Option<LeaseSpec>,
    trace_hash: String,
}

impl Out {
    fn hook(&self, who: &str, what: &str) -> Option<u64> {
        self.hooks
            .iter()
            .find(|(_, w, h)| w == who && h == what)
            .map(|(t, _, _)| *t)
    }

    /// Intervals (true µs) during which `who` was leading (the last one open: `u64::MAX`).
    fn leading(&self, who: &str) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut since = None;
        for (t, w, s) in &self.seen {
            if w != who {
                continue;
            }
            match (since, s.leading) {
                (None, true) => since = Some(*t),
                (Some(from), false) => {
                    out.push((from, *t));
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(from) = since {
            out.push((from, u64::MAX));
        }
        out
    }

    /// The times (true µs) of `who`'s tries.
    fn tries(&self, who: &str) -> Vec<u64> {
        let mut last = 0;
        let mut out = Vec::new();
        for (t, w, s) in &self.seen {
            if w == who && s.tries > last {
                last = s.tries;
                out.push(*t);
            }
        }
        out
    }

    /// `who`'s snapshots.
    fn of(&self, who: &str) -> impl Iterator<Item = &(u64, String, Snapshot)> {
        let who = who.to_string();
        self.seen.iter().filter(move |(_, w, _)| *w == who)
    }

    /// Writes by `who` that the server applied (not conflicts).
    fn applied_by(&self, who: &str) -> Vec<u64> {
        self.writes
            .iter()
            .filter(|w| w.by(who) && w.what != "conflict")
            .map(|w| w.t_us)
            .collect()
    }
}

/// Runs the candidates (each on its own node, after the API server's) for `horizon_ms`.
fn cluster(seed: u64, candidates: Vec<Candidate>, schedule: Schedule, horizon_ms: u64) -> Out {
    on_fresh_thread(move || {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let hooks = Rc::new(RefCell::new(Vec::new()));
        let work = Rc::new(RefCell::new(Vec::new()));
        let writes = Rc::new(RefCell::new(Vec::new()));
        let kube_out: Rc<RefCell<Option<Kube>>> = Rc::default();
        let mut names = vec![API];
        names.extend(candidates.iter().map(|c| c.node));
        let cfg = sim_config(seed, &names, schedule, horizon_ms);
        let (seen2, hooks2, work2, kube2) =
            (seen.clone(), hooks.clone(), work.clone(), kube_out.clone());
        let outcome = simulate(cfg, Box::new(Writes(writes.clone())), move |world| {
            let kube = Kube::install(world, 0);
            *kube2.borrow_mut() = Some(kube.clone());
            for (i, c) in candidates.into_iter().enumerate() {
                let (w, kube) = (world.clone(), kube.clone());
                let (seen, hooks, work) = (seen2.clone(), hooks2.clone(), work2.clone());
                world.set_services(
                    i as u16 + 1,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("operator");
                        let le = LeaderElector::new(&kube, &p, c.cfg.clone()).expect("valid");
                        deploy_candidate(&p, &le, &c, &w, &seen, &hooks, &work);
                    }),
                );
            }
        });
        let lock = CILIUM_OPERATOR_LOCK;
        let lease = kube_out.borrow().as_ref().and_then(|k| peek_lease(k, lock));
        let out = Out {
            seen: seen.borrow().clone(),
            hooks: hooks.borrow().clone(),
            work: work.borrow().clone(),
            writes: writes.borrow().clone(),
            lease,
            trace_hash: outcome.trace_hash,
        };
        out
    })
    .expect("run")
}

type Log<T> = Rc<RefCell<Vec<T>>>;

/// The candidate's tasks: the elector, a watcher of its snapshot, its hooks, leader-only work
/// (what cilium-operator's IPAM is), and the stop.
fn deploy_candidate(
    p: &Proc,
    le: &LeaderElector,
    c: &Candidate,
    w: &World,
    seen: &Log<(u64, String, Snapshot)>,
    hooks: &Log<(u64, String, String)>,
    work: &Log<(u64, String)>,
) {
    let who = c.node.to_string();
    let (le2, p2, start) = (le.clone(), p.clone(), c.start_ms);
    p.spawn("elect", async move {
        if start > 0 {
            p2.sleep(Duration::from_millis(start)).await;
        }
        le2.run().await;
    });
    let (le2, w2, seen, who2) = (le.clone(), w.clone(), seen.clone(), who.clone());
    p.spawn("watch", async move {
        let changes: Notify = le2.changes();
        let mut last: Option<Snapshot> = None;
        loop {
            let g = changes.generation();
            let s = le2.snapshot();
            if last.as_ref() != Some(&s) {
                seen.borrow_mut()
                    .push((w2.now_us(), who2.clone(), s.clone()));
                last = Some(s);
            }
            changes.changed_since(g).await;
        }
    });
    let (le2, w2, h, who2) = (le.clone(), w.clone(), hooks.clone(), who.clone());
    p.spawn("hooks", async move {
        let log = |what: String| h.borrow_mut().push((w2.now_us(), who2.clone(), what));
        let led = le2.started_leading().await;
        log(format!("started {led}"));
        if led {
            le2.leadership_lost().await;
            log("lost".into());
        }
        le2.stopped_leading().await;
        log("stopped".into());
    });
    let (le2, w2, h, who2) = (le.clone(), w.clone(), hooks.clone(), who.clone());
    p.spawn("leaders", async move {
        let mut prev = String::new();
        loop {
            prev = le2.new_leader(&prev).await;
            h.borrow_mut()
                .push((w2.now_us(), who2.clone(), format!("leader {prev}")));
        }
    });
    // Leader-only work, as cilium-operator's IPAM: start when leading, stop when it ends.
    let (le2, p2, w2, work, who2) = (le.clone(), p.clone(), w.clone(), work.clone(), who.clone());
    p.spawn("ipam", async move {
        if !le2.started_leading().await {
            return;
        }
        let beat = async {
            loop {
                work.borrow_mut().push((w2.now_us(), who2.clone()));
                p2.sleep(Duration::from_millis(500)).await;
            }
        };
        let lost = le2.leadership_lost();
        futures::future::select(std::pin::pin!(beat), std::pin::pin!(lost)).await;
    });
    if let Some(stop) = c.stop_ms {
        let (le2, p2) = (le.clone(), p.clone());
        p.spawn("stop", async move {
            p2.sleep(Duration::from_millis(stop)).await;
            le2.stop();
        });
    }
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

#[test]
fn leaderelection_single_leader_in_steady_state() {
    let cands = vec![
        candidate("n1", true),
        candidate("n2", true),
        candidate("n3", true),
    ];
    let out = cluster(3, cands.clone(), vec![], 120_000);
    let leaders: Vec<&str> = ["n1", "n2", "n3"]
        .into_iter()
        .filter(|n| out.hook(n, "started true").is_some())
        .collect();
    assert_eq!(leaders.len(), 1, "{:?}", out.hooks);
    let leader = leaders[0];
    // It leads from its create's answer (4 ms: a read, then the create) to the end, without a gap.
    near_span(&out.leading(leader), 4 * MS, u64::MAX);
    // Every candidate reports it, once, as the only leader it ever saw.
    for n in ["n1", "n2", "n3"] {
        let reported: Vec<&str> = out
            .hooks
            .iter()
            .filter(|(_, w, h)| w == n && h.starts_with("leader "))
            .map(|(_, _, h)| h.as_str())
            .collect();
        assert_eq!(reported, [format!("leader {leader}")], "{n}");
        assert!(out.hook(n, "stopped").is_none());
    }
    // Only the leader wrote: the create, then one renewal per RetryPeriod + a request, 2.002 s.
    let mine = out.applied_by(leader);
    assert_eq!(out.writes.len(), mine.len());
    near(mine[0], 3 * MS);
    near(mine[1], 5 * MS);
    for pair in mine[1..].windows(2) {
        near(pair[1] - pair[0], 2_002 * MS);
    }
    // 5 ms + k x 2.002 s up to 120 s: k = 0..=59, and the create.
    assert_eq!(mine.len(), 61);
    let lease = out.lease.as_ref().unwrap();
    assert_eq!(lease.holder_identity.as_deref(), Some(leader));
    assert_eq!(
        (lease.lease_transitions, lease.lease_duration_seconds),
        (Some(0), Some(15))
    );
    // The others keep trying every RetryPeriod x [1, 2.2) (+ a request): wait.Jitter(2 s, 1.2).
    let mut gaps = Vec::new();
    for n in ["n1", "n2", "n3"].into_iter().filter(|n| *n != leader) {
        let tries = out.tries(n);
        assert!(tries.len() > 120 / 5, "{n}: {}", tries.len());
        gaps.extend(tries.windows(2).map(|p| p[1] - p[0]));
    }
    assert!(
        gaps.iter()
            .all(|g| (2_002 * MS - SLACK_US..4_402 * MS + SLACK_US).contains(g)),
        "{gaps:?}"
    );
    // Upstream's jitter reaches past 1.2 x RetryPeriod (the range client-go's docs give): most gaps do.
    let beyond = gaps.iter().filter(|g| **g > 2_402 * MS).count();
    assert!(beyond * 2 > gaps.len(), "{beyond} of {}", gaps.len());
    // The same seed runs the same.
    assert_eq!(cluster(3, cands, vec![], 120_000), out);
}

/// n1 first (it leads), n2 and n3 from 1 s.
fn n1_leads(cilium: bool) -> Vec<Candidate> {
    let mut c = vec![
        candidate("n1", cilium),
        candidate("n2", cilium),
        candidate("n3", cilium),
    ];
    c[1].start_ms = 1_000;
    c[2].start_ms = 1_000;
    c
}

fn partition_n1(at_ms: u64, dur_ms: u64) -> Schedule {
    vec![Fault {
        at_ms,
        dur_ms,
        kind: FaultKind::Partition {
            a: vec!["n1".into()],
            b: vec![API.into(), "n2".into(), "n3".into()],
        },
    }]
}

/// The successor of n1: (who, when it started leading, when it last saw the record change
/// before that).
fn successor(out: &Out) -> (String, u64, u64) {
    let mut best: Option<(String, u64)> = None;
    for n in ["n2", "n3"] {
        if let Some(t) = out.leading(n).first().map(|l| l.0) {
            if best.as_ref().is_none_or(|b| t < b.1) {
                best = Some((n.to_string(), t));
            }
        }
    }
    let (who, t) = best.expect("a successor");
    let observed = out
        .of(&who)
        .filter(|(at, _, s)| *at < t && s.observed.holder_identity == "n1")
        .map(|(_, _, s)| s.observed_time_mono_us)
        .last()
        .expect("it saw n1's record");
    (who, t, observed)
}

#[test]
fn leaderelection_takeover_after_the_leaders_node_is_partitioned_away() {
    // client-go's default ReleaseOnCancel: false. n1 is cut off at 30.5 s for 60 s.
    let out = cluster(5, n1_leads(false), partition_n1(30_500, 60_000), 120_000);
    near(out.leading("n1")[0].0, 4 * MS);
    // A: the last renewal the server applied; n1 got its answer 1 ms later (R).
    let last = *out.applied_by("n1").last().unwrap();
    assert!((28_500 * MS..30_500 * MS).contains(&last), "{last}");
    // n1 gives up at R + RetryPeriod + RenewDeadline and never leads again.
    let n1_end = out.leading("n1")[0].1;
    near(n1_end, last + MS + 12 * S);
    assert_eq!(out.leading("n1").len(), 1);
    near_opt(out.hook("n1", "stopped"), n1_end);
    // The successor takes over LeaseDuration after it last saw the record change, on its own
    // clock, at its next try: within LeaseDuration + 2.2 x RetryPeriod + a request.
    let (who, t, observed) = successor(&out);
    assert!(t >= observed + 15 * S, "{} {}", secs(t), secs(observed));
    assert!(
        t <= observed + 15 * S + 4_400 * MS + 2 * MS,
        "{} {}",
        secs(t),
        secs(observed)
    );
    // It saw the last renewal within one try interval of it.
    assert!(
        (last..last + 4_402 * MS).contains(&observed),
        "{} {}",
        secs(observed),
        secs(last)
    );
    // No overlap without a release: n1 stopped before the successor started.
    assert!(n1_end < t, "{} {}", secs(n1_end), secs(t));
    assert_eq!(out.leading(&who), [(t, u64::MAX)]);
    let lease = out.lease.as_ref().unwrap();
    assert_eq!(lease.holder_identity.as_deref(), Some(who.as_str()));
    assert_eq!(lease.lease_transitions, Some(1));
    // n1's leader-only work stopped with its leadership; the successor's began with its own.
    assert!(out
        .work
        .iter()
        .filter(|(_, w)| w == "n1")
        .all(|(at, _)| *at < n1_end));
    assert!(out
        .work
        .iter()
        .filter(|(_, w)| *w == who)
        .all(|(at, _)| *at >= t));
}

#[test]
fn leaderelection_release_on_cancel_keeps_a_partitioned_leader_leading_through_its_release_read() {
    // cilium-operator's ReleaseOnCancel: true. The leader context is cancelled only after
    // release(), whose read waits for the lock's request timeout (5 s): a cut-off leader leads
    // until R + 17 s, while a successor may take over from R + 15 s on.
    let mut overlaps = Vec::new();
    for seed in 1..=12 {
        let out = cluster(seed, n1_leads(true), partition_n1(30_500, 60_000), 90_000);
        let last = *out.applied_by("n1").last().unwrap();
        let n1_end = out.leading("n1")[0].1;
        near(n1_end, last + MS + 17 * S);
        near_opt(out.hook("n1", "lost"), n1_end);
        let (_, t, observed) = successor(&out);
        assert!(
            t >= observed + 15 * S && t <= observed + 15 * S + 4_402 * MS,
            "seed {seed}"
        );
        overlaps.push(n1_end as i64 - t as i64);
    }
    // Two leaders at once in some seeds, by up to 17 - 15 = 2 s.
    let max = *overlaps.iter().max().unwrap();
    assert!(max > 0 && max < 2 * S as i64, "{overlaps:?}");
    assert!(overlaps.iter().any(|o| *o < 0), "{overlaps:?}");
}

#[test]
fn leaderelection_a_paused_leader_resumes_believing_it_leads() {
    // n1 leads; its node pauses at 30.5 s for 25 s (> LeaseDuration). n2 or n3 takes over during
    // the pause. n1 resumes at 55.5 s between two renew rounds: its next round starts at once,
    // reads the successor's record (so IsLeader turns false at 55.502 s) but keeps the leader
    // context until the round's deadline, 55.5 + 10 s.
    let pause = vec![Fault {
        at_ms: 30_500,
        dur_ms: 25_000,
        kind: FaultKind::Pause { node: "n1".into() },
    }];
    let out = cluster(9, n1_leads(true), pause, 90_000);
    let resume = 55_500 * MS;
    let (who, t, _) = successor(&out);
    assert!(t > 30_500 * MS && t < resume, "{}", secs(t));
    let n1_end = out.leading("n1")[0].1;
    // The release (client-go v0.30.3, which cilium vendors) reads nothing: its observed record
    // already names the successor, so it writes nothing and the cancellation follows at once.
    near(n1_end, resume + 10 * S);
    // After the resume n1 read the successor's record at once: IsLeader false, still leading.
    let (at, _, s) = out
        .of("n1")
        .find(|(at, _, s)| *at >= resume && !s.is_leader)
        .unwrap();
    near(*at, resume + 2 * MS);
    assert!(s.leading);
    assert_eq!(s.observed.holder_identity, who);
    // Both processes believe they lead, and both run leader-only work, for RenewDeadline.
    let both_from = resume.max(t);
    near(n1_end - both_from, 10 * S);
    let in_overlap = |w: &str| {
        out.work
            .iter()
            .filter(|(at, by)| by == w && (both_from..n1_end).contains(at))
            .count()
    };
    // n1 beats at the resume (its 500 ms sleep ran out during the pause), then every 500 ms
    // to 65 s (its context ends at 65.5 s, before that beat); the successor, on its own phase,
    // 20 or 21 times in the same 10 s.
    assert_eq!(in_overlap("n1"), 20);
    assert!(
        (20..=21).contains(&in_overlap(&who)),
        "{}",
        in_overlap(&who)
    );
    // The API's compare-and-swap kept the lease itself single-owner: n1 wrote nothing after.
    assert!(out.applied_by("n1").iter().all(|at| *at < 30_500 * MS));
    let lease = out.lease.as_ref().unwrap();
    assert_eq!(lease.holder_identity.as_deref(), Some(who.as_str()));
    assert_eq!(lease.lease_transitions, Some(1));
    // The release found another holder: nothing written, stopped leading with the round.
    near_opt(out.hook("n1", "stopped"), n1_end);
}

#[test]
fn leaderelection_release_on_cancel_lets_a_successor_take_over_within_a_retry_period() {
    // n1 leads and is stopped cleanly at 30 s. With ReleaseOnCancel it writes an empty holder
    // (leaseDurationSeconds 1) and a candidate takes it at its next try: within 2.2 x
    // RetryPeriod + a request. Without, the candidate waits out LeaseDuration.
    let run = |release: bool| {
        let mut c = n1_leads(release);
        c.truncate(2);
        c[0].stop_ms = Some(30_000);
        cluster(21, c, vec![], 60_000)
    };
    let with = run(true);
    let stop = 30_000 * MS;
    near_span(&with.leading("n1"), 4 * MS, stop);
    near_opt(with.hook("n1", "lost"), stop);
    // The release's one write of the cached Lease (v0.30.3: no read); OnStoppedLeading when it
    // is done.
    let released = *with.applied_by("n1").last().unwrap();
    near(released, stop + MS);
    near_opt(with.hook("n1", "stopped"), stop + 2 * MS);
    let t = with.leading("n2")[0].0;
    assert!(
        t > released && t <= released + 4_400 * MS + 4 * MS,
        "{}",
        secs(t)
    );
    assert_eq!(with.lease.as_ref().unwrap().lease_transitions, Some(1));
    // n2 saw the empty holder reported before itself.
    let n2_leaders: Vec<&str> = with
        .hooks
        .iter()
        .filter(|(_, w, h)| w == "n2" && h.starts_with("leader"))
        .map(|(_, _, h)| h.as_str())
        .collect();
    assert_eq!(n2_leaders, ["leader n1", "leader n2"]);

    let without = run(false);
    near_span(&without.leading("n1"), 4 * MS, stop);
    let last = *without.applied_by("n1").last().unwrap();
    assert!(last < stop && last > stop - 2_100 * MS);
    near_opt(without.hook("n1", "stopped"), stop);
    let t = without.leading("n2")[0].0;
    assert!(
        t >= last + 15 * S && t <= last + 15 * S + 8_802 * MS,
        "{}",
        secs(t)
    );
}

#[test]
fn leaderelection_stopped_leading_fires_even_if_it_never_led() {
    let mut c = n1_leads(true);
    c.truncate(2);
    c[1].stop_ms = Some(20_000);
    let out = cluster(4, c, vec![], 40_000);
    near_opt(out.hook("n2", "started false"), 20_000 * MS);
    near_opt(out.hook("n2", "stopped"), 20_000 * MS);
    assert!(out.leading("n2").is_empty());
    assert!(out.work.iter().all(|(_, w)| w == "n1"));
    // It stopped trying: its last try is before the stop.
    assert!(out.tries("n2").iter().all(|t| *t < 20_000 * MS));
    assert!(out.hook("n1", "stopped").is_none());
}
