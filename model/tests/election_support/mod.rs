//! Test support for `upstream_election/`: a scripted [`ElectionStore`] (upstream's
//! `stub_etcd.Client`: a queue of canned answers, every call recorded) and a one-node simulation
//! that runs one elector against it and stops it once the script is used up (upstream's
//! `_wait_and_stop`).
//!
//! The script is a queue of answers, each of one kind (get, watch, grant, keep-alive, txn, put). A
//! call takes the next answer; an answer of another kind is a failure (the stub's
//! `UnexpectedResultType`). A call that finds the queue empty blocks for good and tells the driver
//! (the stub's `no_more_results`), which then queues the answer to the step-down transaction and
//! stops the elector (`Elector.stop()`), so the step-down is scripted and recorded too.

use model::calico::elector::{ElectionStore, Elector, Timing};
use model::calico::master::Shared;
use model::calico::CalicoEvent;
use model::calico::Switches;
use sim::etcd::{EtcdError, EventKind, KeyValue, Txn, TxnResponse, WatchEvent};
use sim::event::ExitStatus;
use sim::monitor::{Failure, Monitor};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::sync::Notify;
use sim::world::Host;
use sim::{Event, NetSpec, NodeSpec, Proc, Record, World};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

/// The one node's name: the elector's host (upstream's `server_id`).
pub const HOST: &str = "this-host";

/// One etcd call the elector made, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Get {
        key: String,
    },
    WatchOnce {
        key: String,
        start_revision: i64,
        timeout: Duration,
    },
    Grant {
        ttl_s: i64,
    },
    KeepAlive {
        lease: i64,
    },
    Txn(Txn),
    Put {
        key: String,
        value: String,
        lease: i64,
    },
}

/// A canned answer to the next call.
#[derive(Clone, Debug)]
pub enum Answer {
    Get(Result<Option<KeyValue>, EtcdError>),
    WatchOnce(Result<WatchEvent, EtcdError>),
    Grant(Result<(i64, i64), EtcdError>),
    KeepAlive(Result<i64, EtcdError>),
    Txn(Result<TxnResponse, EtcdError>),
    Put(Result<i64, EtcdError>),
}

impl Answer {
    fn fits(&self, call: &Call) -> bool {
        matches!(
            (self, call),
            (Answer::Get(_), Call::Get { .. })
                | (Answer::WatchOnce(_), Call::WatchOnce { .. })
                | (Answer::Grant(_), Call::Grant { .. })
                | (Answer::KeepAlive(_), Call::KeepAlive { .. })
                | (Answer::Txn(_), Call::Txn(_))
                | (Answer::Put(_), Call::Put { .. })
        )
    }
}

/// A call as the store saw it.
#[derive(Clone, Debug)]
pub struct Logged {
    /// True time of the call (µs since the start of the run).
    pub t_us: u64,
    pub call: Call,
    /// What `is_master()` answered (the shared stamp) when the call was made.
    pub master: bool,
    /// False for the call that found the script used up (it blocks for good).
    pub answered: bool,
}

struct Inner {
    world: World,
    answers: RefCell<VecDeque<Answer>>,
    log: RefCell<Vec<Logged>>,
    failure: RefCell<Option<String>>,
    exhausted: Notify,
    is_master: RefCell<Option<Box<dyn Fn() -> bool>>>,
}

/// The scripted store (cheap to clone; clones share the script and the log).
#[derive(Clone)]
pub struct Scripted(Rc<Inner>);

impl Scripted {
    /// A store that gives `answers`, in order.
    pub fn new(world: &World, answers: Vec<Answer>) -> Self {
        Scripted(Rc::new(Inner {
            world: world.clone(),
            answers: RefCell::new(answers.into()),
            log: RefCell::new(Vec::new()),
            failure: RefCell::new(None),
            exhausted: Notify::new(),
            is_master: RefCell::new(None),
        }))
    }

    /// Every call so far.
    pub fn log(&self) -> Vec<Logged> {
        self.0.log.borrow().clone()
    }

    async fn answer(&self, call: Call) -> Answer {
        let master = self.0.is_master.borrow().as_ref().is_some_and(|f| f());
        let next = self.0.answers.borrow_mut().pop_front();
        let answered = next.as_ref().is_some_and(|a| a.fits(&call));
        if let (Some(a), false) = (&next, answered) {
            self.0
                .failure
                .borrow_mut()
                .get_or_insert(format!("unexpected answer {a:?} for {call:?}"));
        }
        self.0.log.borrow_mut().push(Logged {
            t_us: self.0.world.now_us(),
            call,
            master,
            answered,
        });
        match next {
            Some(a) if answered => a,
            _ => {
                self.0.exhausted.notify();
                std::future::pending().await
            }
        }
    }
}

impl ElectionStore for Scripted {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, EtcdError> {
        let call = Call::Get { key: key.into() };
        match self.answer(call).await {
            Answer::Get(r) => r,
            a => unreachable!("{a:?}"),
        }
    }

    async fn watch_once(
        &self,
        key: &str,
        start_revision: i64,
        timeout: Duration,
    ) -> Result<WatchEvent, EtcdError> {
        let call = Call::WatchOnce {
            key: key.into(),
            start_revision,
            timeout,
        };
        match self.answer(call).await {
            Answer::WatchOnce(r) => r,
            a => unreachable!("{a:?}"),
        }
    }

    async fn grant(&self, ttl_s: i64) -> Result<(i64, i64), EtcdError> {
        match self.answer(Call::Grant { ttl_s }).await {
            Answer::Grant(r) => r,
            a => unreachable!("{a:?}"),
        }
    }

    async fn keep_alive(&self, lease: i64) -> Result<i64, EtcdError> {
        match self.answer(Call::KeepAlive { lease }).await {
            Answer::KeepAlive(r) => r,
            a => unreachable!("{a:?}"),
        }
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        match self.answer(Call::Txn(txn)).await {
            Answer::Txn(r) => r,
            a => unreachable!("{a:?}"),
        }
    }

    async fn put(&self, key: &str, value: &str, lease: i64) -> Result<i64, EtcdError> {
        let call = Call::Put {
            key: key.into(),
            value: value.into(),
            lease,
        };
        match self.answer(call).await {
            Answer::Put(r) => r,
            a => unreachable!("{a:?}"),
        }
    }
}

// ---------------------------------------------------------------- answers

/// A key as `get` returns it.
pub fn kv(key: &str, value: &str, mod_revision: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
        create_revision: mod_revision,
        mod_revision,
        version: 1,
        lease: 0,
    }
}

/// `get` finds the key with this value.
pub fn found(key: &str, value: &str, mod_revision: i64) -> Answer {
    Answer::Get(Ok(Some(kv(key, value, mod_revision))))
}

/// `get` finds no key (upstream: `KeyNotFound`).
pub fn not_found() -> Answer {
    Answer::Get(Ok(None))
}

/// `watch_once` reports a PUT.
pub fn put_event(key: &str, value: &str, mod_revision: i64) -> Answer {
    Answer::WatchOnce(Ok(WatchEvent {
        kind: EventKind::Put,
        kv: kv(key, value, mod_revision),
        sub: 0,
        prev_value: "".into(),
    }))
}

/// `watch_once` reports a DELETE (as etcd reports one: no value, the deletion's revision).
pub fn delete_event(key: &str, mod_revision: i64, prev_value: &str) -> Answer {
    Answer::WatchOnce(Ok(WatchEvent {
        kind: EventKind::Delete,
        kv: KeyValue {
            key: key.into(),
            mod_revision,
            ..KeyValue::default()
        },
        sub: 0,
        prev_value: prev_value.into(),
    }))
}

/// A transaction's answer.
pub fn txn(succeeded: bool) -> Answer {
    Answer::Txn(Ok(TxnResponse {
        succeeded,
        revision: 100,
        results: Vec::new(),
    }))
}

/// The lease the scripted `grant`s hand out (upstream's stub starts at 100000).
pub const LEASE: i64 = 100_000;

/// `grant` succeeds with `ttl_s`.
pub fn granted(ttl_s: i64) -> Answer {
    Answer::Grant(Ok((LEASE, ttl_s)))
}

// ---------------------------------------------------------------- the run

/// Ids known once the processes exist (scripts need them).
#[derive(Clone, Debug)]
pub struct Ids {
    /// The elector's id, `this-host:<pid>`.
    pub id: String,
    /// A pid that is alive on the elector's host (the test driver's process).
    pub live_pid: u32,
}

/// How the run ends.
pub enum Ending {
    /// Once the script is used up: queue this answer for the step-down transaction and stop the
    /// elector (`_wait_and_stop`).
    StopWhenExhausted(Answer),
    /// The elector ends on its own (an unexpected error); the script holds every answer.
    Exit,
}

/// Builds the answers once the ids are known.
pub type Script = Box<dyn FnOnce(&Ids) -> Vec<Answer> + Send>;

/// One elector run.
pub struct Setup {
    pub key: &'static str,
    pub old_key: Option<&'static str>,
    pub timing: Timing,
    pub script: Script,
    pub ending: Ending,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Run {
    pub ids: Ids,
    /// Every call the store saw, in order.
    pub log: Vec<Logged>,
    /// A mismatch between the script and the calls (the stub's `client.failure`).
    pub failure: Option<String>,
    /// Answers the elector never asked for.
    pub unused: usize,
    /// Whether the script was used up before the driver's deadline.
    pub exhausted: bool,
    /// The elector's trace events (time µs, summary), see [`summary`].
    pub events: Vec<(u64, String)>,
    /// `is_master()` after the elector stopped or exited.
    pub master_after: bool,
    /// How the elector's process ended, if it did.
    pub exit: Option<ExitStatus>,
}

impl Run {
    /// The calls, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.log.iter().map(|l| l.call.clone()).collect()
    }

    /// The event summaries, in order.
    pub fn events(&self) -> Vec<String> {
        self.events.iter().map(|(_, e)| e.clone()).collect()
    }

    /// Times (µs) of the calls matching `pred`.
    pub fn times(&self, pred: impl Fn(&Call) -> bool) -> Vec<u64> {
        self.log
            .iter()
            .filter(|l| pred(&l.call))
            .map(|l| l.t_us)
            .collect()
    }

    /// Upstream's `_wait_and_stop` checks: the script was used up, no mismatch, and the
    /// mastership value is 0 at the end; and the elector was stopped where the script ran out.
    pub fn assert_wait_and_stop(&self) {
        assert!(self.exhausted, "didn't reach end of results: {self:#?}");
        assert_eq!(self.failure, None, "{self:#?}");
        assert_eq!(self.unused, 0, "{self:#?}");
        assert!(!self.master_after, "still master after stopping: {self:#?}");
        // One call found the script used up, and the step-down's delete came after it.
        let blocked: Vec<usize> = (0..self.log.len())
            .filter(|&i| !self.log[i].answered)
            .collect();
        assert_eq!(blocked, vec![self.log.len() - 2], "{self:#?}");
    }
}

/// The elector events, summarised: `campaign`, `won lease=N`, `refresh`, `lost: REASON`,
/// `stamp>0`, `stamp=0`, `dead-pid-cleanup STALE`, `step-down deleted=B`, `crash ERROR`,
/// `exit N` (the elector's process).
pub fn summary(e: &Event, elector_pid: u32) -> Option<String> {
    if let Some(e) = e.system::<CalicoEvent>() {
        return calico_summary(e);
    }
    Some(match e {
        Event::ProcessExit {
            pid,
            status: ExitStatus::Code { code },
            ..
        } if *pid == elector_pid => format!("exit {code}"),
        _ => return None,
    })
}

fn calico_summary(e: &CalicoEvent) -> Option<String> {
    Some(match e {
        CalicoEvent::CalicoCampaign { .. } => "campaign".into(),
        CalicoEvent::CalicoWon { lease, .. } => format!("won lease={lease}"),
        CalicoEvent::CalicoRefresh { .. } => "refresh".into(),
        CalicoEvent::CalicoLost { reason, .. } => format!("lost: {reason}"),
        CalicoEvent::CalicoStamp { stamp_us } if *stamp_us > 0 => "stamp>0".into(),
        CalicoEvent::CalicoStamp { .. } => "stamp=0".into(),
        CalicoEvent::CalicoDeadPidCleanup { stale, .. } => format!("dead-pid-cleanup {stale}"),
        CalicoEvent::CalicoStepDown { deleted, .. } => format!("step-down deleted={deleted}"),
        CalicoEvent::CalicoElectorCrash { error, .. } => format!("crash {error}"),
        _ => return None,
    })
}

struct Recorder(Rc<RefCell<Vec<(u64, Event)>>>);

impl Monitor for Recorder {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        self.0.borrow_mut().push((rec.t_us, rec.event.clone()));
        None
    }
    fn on_tick(&mut self, _: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// How long the driver waits for the script to be used up (upstream: 5 s of real time; here
/// simulated time, which covers retries and refresh sleeps).
const EXHAUST_DEADLINE: Duration = Duration::from_secs(300);

/// Runs one elector on node [`HOST`] against the scripted store.
pub fn run_elector(setup: Setup) -> Run {
    on_fresh_thread(move || run_here(setup)).expect("the simulation ran")
}

fn config() -> SimConfig {
    SimConfig {
        seed: 1,
        nodes: vec![NodeSpec {
            name: HOST.into(),
            offset_us: 0,
            drift_ppm: 0,
        }],
        net: NetSpec::fixed(1_000),
        schedule: vec![],
        fault_window_ms: 600_000,
        liveness_ms: 0,
        keep_trace: false,
    }
}

/// Runs `f` with a process on node [`HOST`] (at boot, outside any task) and returns its result.
pub fn in_process<R: Send + 'static>(f: impl FnOnce(&Proc, &World) -> R + Send + 'static) -> R {
    on_fresh_thread(move || {
        let out: Rc<RefCell<Option<R>>> = Rc::default();
        let o = out.clone();
        let f = RefCell::new(Some(f));
        simulate(config(), Box::new(Recorder(Rc::default())), move |world| {
            let w = world.clone();
            world.set_services(
                0,
                Rc::new(move |host: &Host| {
                    let f = f.borrow_mut().take().expect("the node boots once");
                    let proc = host.spawn_process("neutron-server/manager");
                    *o.borrow_mut() = Some(f(&proc, &w));
                }),
            );
        });
        let r = out.borrow_mut().take().expect("the node booted");
        r
    })
    .expect("the simulation ran")
}

fn run_here(setup: Setup) -> Run {
    let cfg = config();
    let events: Rc<RefCell<Vec<(u64, Event)>>> = Rc::default();
    let out: Rc<RefCell<Option<Run>>> = Rc::default();
    let (ev, o) = (events.clone(), out.clone());
    let setup = RefCell::new(Some(setup));
    simulate(cfg, Box::new(Recorder(ev)), move |world| {
        let w = world.clone();
        world.set_services(
            0,
            Rc::new(move |host: &Host| {
                let setup = setup.borrow_mut().take().expect("the node boots once");
                start(host, &w, setup, o.clone());
            }),
        );
    });
    let mut run = out.borrow_mut().take().expect("the driver finished");
    let pid: u32 = run.ids.id.rsplit(':').next().unwrap().parse().unwrap();
    run.events = events
        .borrow()
        .iter()
        .filter_map(|(t, e)| summary(e, pid).map(|s| (*t, s)))
        .collect();
    run
}

fn start(host: &Host, world: &World, setup: Setup, out: Rc<RefCell<Option<Run>>>) {
    let driver = host.spawn_process("test-driver");
    let proc = host.spawn_process("neutron-server/manager");
    let ids = Ids {
        id: proc.ident().to_string(),
        live_pid: driver.pid(),
    };
    let store = Scripted::new(world, (setup.script)(&ids));
    let shared = Rc::new(Shared::default());
    let sw = Switches::default();
    {
        let (shared, proc, sw) = (shared.clone(), proc.clone(), sw.clone());
        *store.0.is_master.borrow_mut() =
            Some(Box::new(move || shared.verdict(&proc, &sw).is_master()));
    }
    let elector = Elector::with_timing(
        &proc,
        store.clone(),
        setup.key.to_string(),
        setup.old_key.map(str::to_string),
        shared.clone(),
        sw.clone(),
        setup.timing,
    )
    .expect("a valid timing");
    let (stop, done) = (Notify::new(), Notify::new());
    let exhausted_seen = store.0.exhausted.generation();
    proc.spawn("elector", elector.run(stop.clone(), done.clone()));
    let ending = setup.ending;
    driver.spawn("driver", async move {
        let exhausted = match ending {
            Ending::StopWhenExhausted(step_down) => {
                let used_up = store.0.exhausted.changed_since(exhausted_seen);
                let exhausted = sim::time::timeout(EXHAUST_DEADLINE, used_up).await.is_ok();
                store.0.answers.borrow_mut().push_back(step_down);
                let seen = done.generation();
                stop.notify();
                let stopped = done.changed_since(seen);
                let _ = sim::time::timeout(Duration::from_secs(10), stopped).await;
                exhausted
            }
            Ending::Exit => {
                let exited = proc.wait_exit();
                let _ = sim::time::timeout(EXHAUST_DEADLINE, exited).await;
                store.0.answers.borrow().is_empty()
            }
        };
        let exit = exit_status(&proc).await;
        *out.borrow_mut() = Some(Run {
            ids,
            log: store.0.log.borrow().clone(),
            failure: store.0.failure.borrow().clone(),
            unused: store.0.answers.borrow().len(),
            exhausted,
            events: Vec::new(),
            master_after: shared.verdict(&proc, &sw).is_master(),
            exit,
        });
    });
}

/// The elector process's exit status if it has ended.
async fn exit_status(proc: &Proc) -> Option<ExitStatus> {
    if proc.is_alive() {
        return None;
    }
    Some(proc.wait_exit().await)
}
