//! The runtime wrapper: one madsim runtime per seed, each on a fresh OS thread, and a pool of such
//! threads for many seeds.
//!
//! A run is: build the world, let the scenario deploy its services, boot every node, then drive the
//! fault schedule and the monitor's clock until the fault window ends; then the liveness phase
//! (every fault healed, crashed nodes rebooted), and the end. The first violation stops the run.
//!
//! Why a fresh thread per seed: std's `HashMap` seeds are drawn once per thread, so a reused thread
//! would start a second run in a different state. madsim's own bookkeeping uses such maps.

use crate::event::NodeIx;
use crate::fault::Schedule;
use crate::monitor::{Monitor, Violation};
use crate::world::{NetSpec, NodeSpec, World};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything that defines a run apart from the deployed systems.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The run's seed (madsim's scheduler and every derived generator).
    pub seed: u64,
    /// Nodes, in index order.
    pub nodes: Vec<NodeSpec>,
    /// Network parameters.
    pub net: NetSpec,
    /// Faults; those starting at or after `fault_window_ms` are ignored.
    pub schedule: Schedule,
    /// Length of the fault window (ms).
    pub fault_window_ms: u64,
    /// Length of the liveness phase that follows (ms).
    pub liveness_ms: u64,
    /// Keep the JSON-lines trace (the hash is always computed).
    pub keep_trace: bool,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The first violation, if any.
    pub violation: Option<Violation>,
    /// Number of events.
    pub events: u64,
    /// Simulated time covered (ms).
    pub sim_time_ms: u64,
    /// Hash of the trace (hex), identical for identical runs.
    pub trace_hash: String,
    /// The JSON-lines trace, if kept.
    pub trace: Option<Vec<u8>>,
    /// The typed records, kept with the trace (reports read them).
    pub records: Option<crate::event::Recording>,
    /// Coverage points and whether each was reached.
    pub coverage: Vec<(&'static str, bool)>,
    /// Timers created and messages carried (the load of the run, for the raw-madsim baseline).
    pub timers: u64,
    /// Messages the simulated network carried during the run (see [`World::messages`](crate::world::World::messages)).
    pub messages: u64,
    /// Nodes in the run.
    pub nodes: usize,
}

/// An agenda entry, ordered by its key alone (first in time, then in sequence, comes out first).
struct Agendum {
    key: Reverse<(u64, u64)>,
    item: Item,
}

impl PartialEq for Agendum {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Agendum {}

impl PartialOrd for Agendum {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Agendum {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

enum Item {
    Tick,
    Start(u32),
    End(u32),
    Pending(crate::world::PendingAction),
    Liveness,
    Finish,
}

/// Runs one simulation on the current thread. Call it on a fresh thread ([`on_fresh_thread`]).
pub fn simulate(
    cfg: SimConfig,
    monitor: Box<dyn Monitor>,
    deploy: impl FnOnce(&World) + 'static,
) -> Outcome {
    let rt = madsim::runtime::Runtime::with_seed_and_config(cfg.seed, madsim::Config::default());
    let armed_before = crate::time::armed();
    let run = async move {
        // The run's sleeps share one handle on madsim's clock (see `crate::time::RunClock`).
        let _clock = crate::time::RunClock::enter();
        let world = World::new(
            cfg.seed,
            &cfg.nodes,
            cfg.net.clone(),
            monitor,
            cfg.keep_trace,
        );
        deploy(&world);
        for n in 0..world.node_count() {
            world.boot(n as NodeIx);
        }
        let end_ms = drive(&world, &cfg).await;
        world.shutdown();
        let crate::world::Finished {
            violation,
            events,
            trace_hash,
            trace,
            records,
            coverage,
        } = world.finish();
        let sim_time_ms = violation.as_ref().map_or(end_ms, |v| v.sim_time_ms);
        let (timers, messages) = (crate::time::armed() - armed_before, world.messages());
        Outcome {
            violation,
            events,
            sim_time_ms,
            trace_hash,
            trace,
            records,
            coverage,
            timers,
            messages,
            nodes: cfg.nodes.len(),
        }
    };
    // The run's own future is one of its tasks for the world's reading of the time.
    let mut run = std::pin::pin!(run);
    rt.block_on(std::future::poll_fn(move |cx| {
        std::future::Future::poll(run.as_mut(), cx)
    }))
}

async fn drive(world: &World, cfg: &SimConfig) -> u64 {
    // Agenda in order of (true time µs, sequence): deterministic order for simultaneous items. (A
    // heap: the loop only ever takes the first item, a tick every simulated second.)
    let mut agenda: BinaryHeap<Agendum> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |agenda: &mut BinaryHeap<Agendum>, at_us: u64, item: Item| {
        seq += 1;
        agenda.push(Agendum {
            key: Reverse((at_us, seq)),
            item,
        });
    };
    let window_us = cfg.fault_window_ms * 1000;
    let end_us = window_us + cfg.liveness_ms * 1000;
    for (id, f) in cfg.schedule.iter().enumerate() {
        if f.at_ms * 1000 < window_us {
            push(&mut agenda, f.at_ms * 1000, Item::Start(id as u32));
        }
    }
    push(&mut agenda, 1_000_000, Item::Tick);
    push(&mut agenda, window_us, Item::Liveness);
    push(&mut agenda, end_us, Item::Finish);
    let mut in_window = true;
    loop {
        let Reverse((at_us, _)) = agenda.peek().expect("the agenda always holds Finish").key;
        let seen = world.0.stopped.generation();
        if at_us > world.now_us() {
            let sleep = crate::time::sleep_until(world.instant_at(at_us));
            futures::future::select(sleep, world.0.stopped.changed_since(seen)).await;
        }
        if world.violated() {
            return world.now_us() / 1000;
        }
        let item = agenda.pop().expect("peeked").item;
        match item {
            Item::Tick => {
                world.tick();
                push(&mut agenda, at_us + 1_000_000, Item::Tick);
            }
            Item::Start(id) if in_window => {
                let f = &cfg.schedule[id as usize];
                for (t, action) in world.start_fault(id, f) {
                    push(&mut agenda, t, Item::Pending(action));
                }
                if f.dur_ms > 0 {
                    push(&mut agenda, at_us + f.dur_ms * 1000, Item::End(id));
                }
            }
            Item::Start(_) => {}
            Item::End(id) => world.end_fault(id),
            Item::Pending(action) => world.apply_pending(action),
            Item::Liveness => {
                in_window = false;
                for id in world.active_faults() {
                    world.end_fault(id);
                }
                world.emit(0, crate::event::Event::LivenessPhase);
            }
            Item::Finish => return end_us / 1000,
        }
        if world.violated() {
            return world.now_us() / 1000;
        }
    }
}

/// Runs `f` on a fresh OS thread and returns its result, or the panic message if it panicked.
pub fn on_fresh_thread<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    let handle = std::thread::Builder::new()
        .name("faultline-run".into())
        .stack_size(16 << 20)
        .spawn(f)
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    handle.join().map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".to_string())
    })
}

/// Runs `work(i)` for `i` in `0..count` on `jobs` threads, each item on a fresh thread, calling
/// `done(i, result)` as results come in (from the pool's threads, in completion order). Stops
/// handing out new items once `stop` is set.
pub fn pool<R: Send + 'static>(
    count: usize,
    jobs: usize,
    stop: Arc<AtomicBool>,
    work: impl Fn(usize) -> R + Send + Sync + 'static,
    done: impl Fn(usize, Result<R, String>) + Send + Sync + 'static,
) {
    let next = Arc::new(AtomicUsize::new(0));
    let work = Arc::new(work);
    let done = Arc::new(Mutex::new(done));
    let threads: Vec<_> = (0..jobs.max(1))
        .map(|_| {
            let (next, work, done, stop) = (next.clone(), work.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count {
                    break;
                }
                let w = work.clone();
                let r = on_fresh_thread(move || w(i));
                (done.lock().unwrap_or_else(|e| e.into_inner()))(i, r);
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// A convenient default for `SimConfig::net`: 0.5-5 ms one-way latency.
pub fn lan() -> NetSpec {
    NetSpec {
        latency_min_us: 500,
        latency_max_us: 5_000,
    }
}

/// Sleep helper that is a no-op for zero durations (madsim's minimum sleep is 1 ms).
pub async fn sleep(d: Duration) {
    if !d.is_zero() {
        crate::time::sleep(d).await;
    }
}

/// A raw madsim program with the given load and none of the harness (no world, monitor, trace or
/// model logic): `nodes` nodes, each running one task that wakes on `timers / nodes` timers spread
/// over `sim_ms` and sends its share of `messages` to the next node's task over a channel (a
/// hand-off in memory: the arrival timers of the run's messages are among its `timers`). Returns
/// the messages received. Used to express the harness's cost as a ratio.
pub fn baseline(seed: u64, nodes: usize, sim_ms: u64, timers: u64, messages: u64) -> u64 {
    baseline_program(seed, nodes, sim_ms, timers, messages, false)
}

/// The program of [`baseline`] with its messages sent over madsim's own network
/// (`madsim::net::Endpoint`, each to the next node) instead of a channel: the same nodes, timers
/// and messages as a madsim user would write them. madsim's network arms each message's arrival
/// timer itself, so the nodes sleep on `timers - messages` timers of their own. Returns the
/// messages received.
pub fn baseline_net(seed: u64, nodes: usize, sim_ms: u64, timers: u64, messages: u64) -> u64 {
    baseline_program(seed, nodes, sim_ms, timers, messages, true)
}

#[allow(clippy::disallowed_methods)] // raw madsim on purpose: no harness
fn baseline_program(
    seed: u64,
    nodes: usize,
    sim_ms: u64,
    timers: u64,
    messages: u64,
    over_net: bool,
) -> u64 {
    use futures::StreamExt;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let received = Arc::new(AtomicU64::new(0));
    let got = received.clone();
    rt.block_on(async move {
        let handle = madsim::runtime::Handle::current();
        let n = nodes.max(1);
        let per_msgs = messages / n as u64;
        let own_timers = if over_net {
            timers.saturating_sub(messages)
        } else {
            timers
        };
        let per_timers = (own_timers / n as u64).max(per_msgs).max(1);
        let tick = Duration::from_micros((sim_ms * 1000 / per_timers).max(1_000));
        let every = (per_timers / per_msgs.max(1)).max(1);
        let addr = |i: usize| {
            std::net::SocketAddr::from(([10, (i / 250) as u8, 0, (i % 250 + 1) as u8], 1))
        };
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..n)
            .map(|_| futures::channel::mpsc::unbounded::<u64>())
            .unzip();
        let (mut joins, mut ids) = (Vec::new(), Vec::new());
        for (i, mut rx) in receivers.into_iter().enumerate() {
            let (next, to, got) = (senders[(i + 1) % n].clone(), addr((i + 1) % n), got.clone());
            let node = handle.create_node().name(format!("b{i}"));
            if !over_net {
                let node = node.build();
                // A receiver woken by every message, as a harness service is.
                node.spawn(async move {
                    while rx.next().await.is_some() {
                        got.fetch_add(1, Relaxed);
                    }
                });
                joins.push(node.spawn(async move {
                    for k in 0..per_timers {
                        madsim::time::sleep(tick).await;
                        if per_msgs > 0 && k % every == 0 {
                            let _ = next.unbounded_send(k);
                        }
                    }
                }));
                continue;
            }
            let node = node.ip(addr(i).ip()).build();
            ids.push(node.id());
            joins.push(node.spawn(async move {
                let ep = Arc::new(
                    madsim::net::Endpoint::bind(addr(i))
                        .await
                        .expect("a fresh node's port is free"),
                );
                let rx = ep.clone();
                madsim::task::spawn(async move {
                    while rx.recv_from_raw(0).await.is_ok() {
                        got.fetch_add(1, Relaxed);
                    }
                });
                for k in 0..per_timers {
                    madsim::time::sleep(tick).await;
                    if per_msgs > 0 && k % every == 0 {
                        let _ = ep.send_to_raw(to, 0, Box::new(k)).await;
                    }
                }
            }));
        }
        for j in joins {
            let _ = j.await;
        }
        // Let the last messages arrive.
        madsim::time::sleep(Duration::from_secs(1)).await;
        // The receivers wait on their endpoints forever: kill the nodes so that the executor
        // drops those tasks, as the harness's world does at the end of a run. Otherwise each run
        // leaks its endpoints and mailboxes (about 15 KB), and a bench's memory grows per seed.
        for id in ids {
            handle.kill(id);
        }
    });
    received.load(Relaxed)
}
