//! hashicorp/memberlist v0.5.1's own probe tests (state_test.go, commit 3f82dc10a), mirrored on
//! the model with `DefaultLANConfig`'s timings (the model's constants: a probe interval of 1 s and
//! a probe timeout of 0.5 s where the upstream tests shorten them to milliseconds). As upstream's
//! `HostMemberlist` (l. 24-41), each member listens but runs no periodic task, so the test drives
//! the probes itself; a member "never started" upstream is a node where nothing listens.
//!
//! Not mirrored, because the model has no such peers: `_Wrong_VSN` and `_OldProtocol` (every
//! speaker runs the same version, so every peer understands nacks and TCP pings), and
//! `_FallbackTCP_Disabled` (`DisableTcpPings` is false in `DefaultLANConfig`).

use super::*;
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::{Fault, FaultKind, NetSpec, NodeSpec, Schedule};
use std::future::Future;
use std::pin::Pin;

/// The members of a test world: `n1` (the prober) to `n4`.
const NAMES: [&str; 4] = ["n1", "n2", "n3", "n4"];

/// Each node's memberlist, if it was started.
type Mls = Vec<Option<Rc<Memberlist>>>;

/// The test's body, run on `n1` once every started member listens.
type Body<R> = Box<dyn FnOnce(Mls) -> Pin<Box<dyn Future<Output = R>>>>;

/// How a test world is built.
struct World {
    /// Which of [`NAMES`] run a memberlist.
    started: [bool; 4],
    /// Whether the members other than `n4` send their datagrams to a port where nothing listens
    /// (upstream's `_FallbackTCP` re-opens `m4`'s UDP listener on another port).
    n4_udp_elsewhere: bool,
    /// Faults of the run.
    schedule: Schedule,
}

impl World {
    fn started(started: [bool; 4]) -> World {
        World {
            started,
            n4_udp_elsewhere: false,
            schedule: Vec::new(),
        }
    }

    /// Runs `body` in a simulated LAN (0.1-0.5 ms one way) and returns what it returned.
    fn run<R, F>(self, body: impl FnOnce(Mls) -> F + Send + 'static) -> R
    where
        R: Send + 'static,
        F: Future<Output = R> + 'static,
    {
        on_fresh_thread(move || {
            let body: Body<R> = Box::new(move |mls| Box::pin(body(mls)));
            self.simulate(body)
        })
        .expect("the test run completes")
    }

    fn simulate<R: 'static>(self, body: Body<R>) -> R {
        let cfg = SimConfig {
            seed: 3,
            nodes: NodeSpec::exact_all(NAMES),
            net: NetSpec {
                latency_min_us: 100,
                latency_max_us: 500,
            },
            schedule: self.schedule.clone(),
            fault_window_ms: 60_000,
            liveness_ms: 1_000,
            keep_trace: false,
        };
        let out: Rc<RefCell<Option<R>>> = Rc::default();
        let o = out.clone();
        let body = Rc::new(RefCell::new(Some(body)));
        simulate(cfg, Box::new(sim::monitor::NullMonitor), move |world| {
            let ips = (0..4).map(|i| (format!("10.0.0.{}", i + 1), i as NodeIx));
            let peers = Peers::new(ips.collect());
            let mut elsewhere = Peers::new(peers.by_ip.clone());
            if self.n4_udp_elsewhere {
                let p = Rc::get_mut(&mut elsewhere).expect("not shared yet");
                p.udp.insert(3, sim::net::Datagrams::new(3));
                for n in 0..3 {
                    p.udp.insert(n, peers.udp[&n].clone());
                }
                p.tcp = peers.tcp.clone();
            }
            let mls: Rc<RefCell<Mls>> = Rc::new(RefCell::new(vec![None, None, None, None]));
            for (i, started) in self.started.into_iter().enumerate() {
                if !started {
                    continue;
                }
                let p = match i {
                    3 => peers.clone(),
                    _ if self.n4_udp_elsewhere => elsewhere.clone(),
                    _ => peers.clone(),
                };
                let (mls, body, o) = (mls.clone(), body.clone(), o.clone());
                world.set_services(
                    i as NodeIx,
                    Rc::new(move |host: &sim::Host| {
                        let proc = host.spawn_process("member");
                        let ml = Memberlist::host(&proc, p.clone(), &Switches::default(), false);
                        mls.borrow_mut()[i] = Some(ml);
                        let Some(body) = body.borrow_mut().take().filter(|_| i == 0) else {
                            return;
                        };
                        let (mls, o, p2) = (mls.clone(), o.clone(), proc.clone());
                        proc.spawn("test", async move {
                            // Every node boots at time 0: by now every member listens.
                            p2.sleep(Duration::from_millis(1)).await;
                            let mls = mls.borrow().clone();
                            let r = body(mls).await;
                            *o.borrow_mut() = Some(r);
                        });
                    }),
                );
            }
        });
        let r = out.borrow_mut().take();
        r.expect("the test body finished within the run")
    }
}

/// `aliveNode(&alive{Node, Incarnation: 1, ..}, nil, false)` on `m` for each of `names`, and
/// `bootstrap = true` for `m` itself (upstream starts every test member at incarnation 1).
fn know(m: &Memberlist, names: &[&str]) {
    m.incarnation.set(1);
    m.members
        .borrow_mut()
        .get_mut(&m.name)
        .expect("a member knows itself")
        .st
        .incarnation = 1;
    for n in names {
        let i = NAMES.iter().position(|x| x == n).expect("a test node") as NodeIx;
        m.alive_node(Name::new(n).unwrap(), i, 1);
    }
}

/// The member `name` as `m` sees it.
fn node(m: &Memberlist, name: &str) -> NodeState {
    m.members.borrow()[&Name::new(name).unwrap()].st
}

/// The sequence numbers of `n2` and `n3` (each raised by an indirect ping it forwards).
fn helper_seqs(mls: &Mls) -> (u32, u32) {
    let s = |i: usize| mls[i].as_ref().map_or(0, |m| m.seq.get());
    (s(1), s(2))
}

fn ml(mls: &Mls, i: usize) -> Rc<Memberlist> {
    mls[i].clone().expect("a started member")
}

/// `TestMemberList_Probe` (l. 43-90): a round of the probe loop pings the one other member,
/// which stays alive, and takes one sequence number.
#[test]
fn upstream_probe() {
    let (state, seq) = World::started([true, true, false, false]).run(|mls| async move {
        let m1 = ml(&mls, 0);
        know(&m1, &["n2"]);
        let target = m1.next_probe_target().expect("n2 is probed");
        m1.probe(target).await;
        (node(&m1, "n2").state, m1.seq.get())
    });
    assert_eq!(state, State::Alive);
    assert_eq!(seq, 1);
}

/// `TestMemberList_ProbeNode` (l. 942-978): a probe of a live member leaves it alive.
#[test]
fn upstream_probe_node() {
    let (state, seq) = World::started([true, true, false, false]).run(|mls| async move {
        let m1 = ml(&mls, 0);
        know(&m1, &["n2"]);
        m1.probe(node(&m1, "n2")).await;
        (node(&m1, "n2").state, m1.seq.get())
    });
    assert_eq!(state, State::Alive);
    assert_eq!(seq, 1);
}

/// `TestMemberList_ProbeNode_Suspect` (l. 92-140): a member that never started is suspected
/// after the probe, and one of the two live helpers ran an indirect ping for it.
#[test]
fn upstream_probe_node_suspect() {
    let (state, seqs) = World::started([true, true, true, false]).run(|mls| async move {
        let m1 = ml(&mls, 0);
        know(&m1, &["n2", "n3", "n4"]);
        m1.probe(node(&m1, "n4")).await;
        let state = node(&m1, "n4").state;
        m1.proc.sleep(Duration::from_millis(10)).await;
        (state, helper_seqs(&mls))
    });
    assert_eq!(state, State::Suspect);
    assert!(seqs.0 == 1 || seqs.1 == 1, "helpers' seqnos {seqs:?}");
}

/// `TestMemberList_ProbeNode_FallbackTCP` (l. 234-359, commented out in v0.5.1 itself): a member
/// whose UDP no one reaches is kept alive by the TCP ping within the probe interval, while the
/// helpers still try indirect pings; with its TCP listener gone too, the next probe suspects it,
/// still within the interval.
#[test]
fn upstream_probe_node_fallback_tcp() {
    let world = World {
        started: [true; 4],
        n4_udp_elsewhere: true,
        // `m4.tcpListener.Close()` between the two probes.
        schedule: vec![Fault {
            at_ms: 5_000,
            dur_ms: 0,
            kind: FaultKind::TaskDeath {
                node: "n4".into(),
                task: "memberlist-tcp".into(),
            },
        }],
    };
    let r = world.run(|mls| async move {
        let m1 = ml(&mls, 0);
        know(&m1, &["n2", "n3", "n4"]);
        let mut out = Vec::new();
        // The second probe after the listener is gone.
        for from_ms in [0, 6_000] {
            let now = Duration::from_micros(m1.now());
            m1.proc
                .sleep(Duration::from_millis(from_ms).saturating_sub(now))
                .await;
            let start = m1.now();
            m1.probe(node(&m1, "n4")).await;
            let took = m1.now() - start;
            let state = node(&m1, "n4").state;
            m1.proc.sleep(PROBE_INTERVAL).await;
            out.push((state, took, helper_seqs(&mls)));
        }
        out
    });
    let max = (PROBE_INTERVAL + Duration::from_millis(20)).as_micros() as u64;
    assert_eq!(r[0].0, State::Alive, "kept alive by the TCP ping");
    assert!(r[0].1 <= max, "took {} µs", r[0].1);
    assert!(
        r[0].2 .0 == 1 || r[0].2 .1 == 1,
        "helpers' seqnos {:?}",
        r[0].2
    );
    assert_eq!(r[1].0, State::Suspect, "no contact at all");
    assert!(r[1].1 <= max, "took {} µs", r[1].1);
    assert!(
        r[1].2 .0 == 2 || r[1].2 .1 == 2,
        "helpers' seqnos {:?}",
        r[1].2
    );
}

/// `TestMemberList_ProbeNode_Awareness_Degraded` (l. 555-637): with a health score of 1 the probe
/// of a member that never started lasts twice the interval; every helper nacked, so the score
/// stays 1.
#[test]
fn upstream_probe_node_awareness_degraded() {
    let (state, took, seqs, score) =
        World::started([true, true, true, false]).run(|mls| async move {
            let m1 = ml(&mls, 0);
            know(&m1, &["n2", "n3", "n4"]);
            m1.awareness.apply_delta(1);
            assert_eq!(m1.awareness.score(), 1);
            let start = m1.now();
            m1.probe(node(&m1, "n4")).await;
            let took = m1.now() - start;
            let state = node(&m1, "n4").state;
            (state, took, helper_seqs(&mls), m1.awareness.score())
        });
    assert_eq!(state, State::Suspect);
    let min = (2 * PROBE_INTERVAL - Duration::from_millis(50)).as_micros() as u64;
    assert!(took >= min, "probed too quickly: {took} µs");
    assert!(seqs.0 == 1 || seqs.1 == 1, "helpers' seqnos {seqs:?}");
    assert_eq!(score, 1, "all the nacks came");
}

/// `TestMemberList_ProbeNode_Awareness_Improved` (l. 699-742): a successful probe lowers the
/// score from 1 to 0.
#[test]
fn upstream_probe_node_awareness_improved() {
    let (state, score) = World::started([true, true, false, false]).run(|mls| async move {
        let m1 = ml(&mls, 0);
        know(&m1, &["n2"]);
        m1.awareness.apply_delta(1);
        m1.probe(node(&m1, "n2")).await;
        (node(&m1, "n2").state, m1.awareness.score())
    });
    assert_eq!(state, State::Alive);
    assert_eq!(score, 0);
}

/// `TestMemberList_ProbeNode_Awareness_MissedNack` (l. 744-817): of the two helpers only `n2`
/// runs, so `n3`'s nack is missing: the target is suspected within the interval and the score
/// rises. Upstream's test shortens `ProbeTimeout` to 10 ms of a 200 ms interval, so `n2`'s nack
/// comes in time and the score ends at 1. With `DefaultLANConfig` the helper is asked only after
/// the direct ping's 500 ms and nacks 500 ms later (net.go `handleIndirectPing` l. 646-663), past
/// the 1 s deadline at which the prober counts its nacks (state.go `probeNode` l. 485-518): both
/// nacks count as missed and the score rises by 2. At a score of 1 the interval is 2 s, `n2`'s
/// nack is counted and only `n3`'s is missed.
#[test]
fn upstream_probe_node_awareness_missed_nack() {
    for (score_before, score_after) in [(0, 2), (1, 2)] {
        let (state, took, score) =
            World::started([true, true, false, false]).run(move |mls| async move {
                let m1 = ml(&mls, 0);
                know(&m1, &["n2", "n3", "n4"]);
                m1.awareness.apply_delta(score_before);
                let start = m1.now();
                m1.probe(node(&m1, "n4")).await;
                let took = m1.now() - start;
                (node(&m1, "n4").state, took, m1.awareness.score())
            });
        assert_eq!(state, State::Suspect);
        let interval = PROBE_INTERVAL * (score_before as u32 + 1);
        let max = (interval + Duration::from_millis(50)).as_micros() as u64;
        assert!(took <= max, "took too long: {took} µs");
        assert_eq!(
            score, score_after,
            "from {score_before}: dinged for missed nacks"
        );
    }
}

/// `TestMemberList_ProbeNode_Buddy` (l. 894-940): a ping to a member held suspect carries the
/// suspicion; the member refutes it, so exactly one broadcast is queued there, an alive message,
/// and the probe succeeds.
#[test]
fn upstream_probe_node_buddy() {
    let (seq, queued, state) = World::started([true, true, false, false]).run(|mls| async move {
        let (m1, m2) = (ml(&mls, 0), ml(&mls, 1));
        know(&m1, &["n2"]);
        know(&m2, &[]);
        let n2 = Name::new("n2").unwrap();
        m1.members.borrow_mut().get_mut(&n2).unwrap().st.state = State::Suspect;
        m1.probe(node(&m1, "n2")).await;
        let queued: Vec<Broadcast> = m2.queue.borrow().iter().map(|(b, _)| *b).collect();
        (m1.seq.get(), queued, node(&m2, "n2"))
    });
    assert_eq!(seq, 1);
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert!(
        matches!(queued[0], Broadcast::Alive { inc: 2, .. }),
        "{queued:?}"
    );
    assert_eq!((state.state, state.incarnation), (State::Alive, 2));
}

/// `TestMemberList_ProbeNode_Suspect_Dogpile` (l. 142-232) with `DefaultLANConfig`'s suspicion
/// (`SuspicionMult` 4, `SuspicionMaxTimeoutMult` 6, 1 s interval; upstream's case table uses 5, 2
/// and 100 ms): the suspicion of a member that never answers lasts the minimum of 4 s with fewer
/// than k + 2 = 4 members, else starts at 24 s and shrinks toward 4 s with each confirmation:
/// 24 - 20 x log(c + 1) / log(3) s. Each case: still suspect 25 ms before, dead 25 ms after.
#[test]
fn upstream_probe_node_suspect_dogpile() {
    // (members that run besides m1, confirmations, expected timeout in ms)
    let cases: [(usize, usize, u64); 5] = [
        (0, 0, 4_000),
        (1, 0, 4_000),
        (2, 0, 24_000),
        (2, 1, 11_381),
        (2, 2, 4_000),
    ];
    for (i, (peers, confirmations, expected)) in cases.into_iter().enumerate() {
        let mut started = [true, false, false, false];
        for s in started.iter_mut().skip(1).take(peers) {
            *s = true;
        }
        let (before, after) = World::started(started).run(move |mls| async move {
            let m = ml(&mls, 0);
            let mut names: Vec<&str> = NAMES[1..=peers].to_vec();
            names.push("n4");
            know(&m, &names);
            m.probe(node(&m, "n4")).await;
            assert_eq!(node(&m, "n4").state, State::Suspect);
            let start = m.suspicions.borrow()[&Name::new("n4").unwrap()].start_us;
            let n4 = Name::new("n4").unwrap();
            for j in 0..confirmations {
                m.suspect_node(n4, 1, Name::new(&format!("peer{j}")).unwrap());
            }
            let fudge = 25_000;
            let at = |us: u64| Duration::from_micros(us.saturating_sub(m.now()));
            m.proc.sleep(at(start + expected * 1000 - fudge)).await;
            let before = node(&m, "n4").state;
            m.proc.sleep(at(start + expected * 1000 + fudge)).await;
            (before, node(&m, "n4").state)
        });
        assert_eq!(before, State::Suspect, "case {i}: still suspect before");
        assert_eq!(after, State::Dead, "case {i}: dead after");
    }
}

/// Piggybacking (v0.5.1 net.go `sendMsg` l. 788-811): with no gossip round at all, `n2` learns
/// of `n3` from the ping that carries `n1`'s queued broadcast, and `n1` of `n4` from the ack
/// that carries `n2`'s; each carried broadcast counts one transmission.
#[test]
fn probes_and_acks_carry_the_queued_broadcasts() {
    let (n2_knows_n3, n1_knows_n4, sent) =
        World::started([true, true, false, false]).run(|mls| async move {
            let (m1, m2) = (ml(&mls, 0), ml(&mls, 1));
            know(&m1, &["n2", "n3"]);
            know(&m2, &["n4"]);
            let queued = |m: &Memberlist| m.queue.borrow().iter().map(|(_, n)| *n).collect();
            let before: Vec<u32> = queued(&m1);
            assert_eq!(before, [0, 0], "alive n2, alive n3, never sent");
            m1.probe(node(&m1, "n2")).await;
            let known =
                |m: &Memberlist, n: &str| m.members.borrow().contains_key(&Name::new(n).unwrap());
            let sent: Vec<u32> = queued(&m1);
            (known(&m2, "n3"), known(&m1, "n4"), sent)
        });
    assert!(n2_knows_n3, "the ping carried alive n3");
    assert!(n1_knows_n4, "the ack carried alive n4");
    // n1 queued alive n2, n3 and, from the ack, n4 (not yet sent).
    assert_eq!(sent, [1, 1, 0]);
}
