//! The Neutron database with concurrent transactions: port-status writers of one process, each
//! with its own session, interleave their reader and writer transactions; the row lock and the
//! revision check decide which commit is last, and neutron-lib's retries absorb the conflicts
//! (see `model::calico::neutron` and `model::calico::ml2` for the upstream code).

use model::calico::ml2::{CallError, Ml2};
use model::calico::neutron::{self, LOCK_WAIT_TIMEOUT};
use model::calico::CalicoEvent;
use sim::monitor::{Failure, Monitor};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{Fault, FaultKind, NetSpec, NodeSpec, Record};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// One write: (start after, status).
type Script = Vec<(Duration, &'static str)>;

/// What a run saw: the Neutron events (time, what) and each writer's result (time, result).
#[derive(Default, Debug)]
struct Seen {
    events: Vec<(u64, String)>,
    results: Vec<(u64, usize, Result<(), CallError>)>,
}

struct Recorder(Rc<RefCell<Seen>>);

impl Monitor for Recorder {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let what = match rec.event.system::<CalicoEvent>() {
            Some(CalicoEvent::NeutronPortStatus { status, write, .. }) => {
                format!("commit {write} {status}")
            }
            Some(CalicoEvent::NeutronPortUnchanged { write, .. }) => {
                format!("unchanged {write}")
            }
            Some(CalicoEvent::NeutronPortRolledBack { write, .. }) => format!("rollback {write}"),
            _ => return None,
        };
        self.0.borrow_mut().events.push((rec.t_us, what));
        None
    }
    fn on_tick(&mut self, _: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// Runs one writer greenlet (its own session) per script entry, in one process on `h1`, against
/// the database on `neutron-db` with 1 ms each way, under `faults`.
fn run(script: Script, faults: Vec<Fault>) -> Seen {
    on_fresh_thread(move || {
        let seen: Rc<RefCell<Seen>> = Rc::default();
        let cfg = SimConfig {
            seed: 7,
            nodes: NodeSpec::exact_all(["h1", "neutron-db"]),
            net: NetSpec::fixed(1_000),
            schedule: faults,
            fault_window_ms: 600_000,
            liveness_ms: 0,
            keep_trace: false,
        };
        let s = seen.clone();
        let script = RefCell::new(Some(script));
        simulate(cfg, Box::new(Recorder(seen.clone())), move |world| {
            let db = neutron::install(world, 1);
            let s = s.clone();
            let w = world.clone();
            let script = RefCell::new(script.borrow_mut().take());
            world.set_services(
                0,
                Rc::new(move |host: &Host| {
                    let proc = host.spawn_process("neutron-server/endpoint-status");
                    let script = script.borrow_mut().take().expect("h1 boots once");
                    for (i, (after, status)) in script.into_iter().enumerate() {
                        let (p, db, s, w) = (proc.clone(), db.clone(), s.clone(), w.clone());
                        proc.spawn(&format!("writer-{i}"), async move {
                            let ml2 = Ml2::new(&p, db);
                            p.sleep(after).await;
                            let write = i as u64 + 1;
                            let r = ml2
                                .update_port_status(
                                    "port-1",
                                    status,
                                    write,
                                    Duration::from_secs(3600),
                                )
                                .await;
                            let t = w.now_us();
                            s.borrow_mut().results.push((t, i, r));
                        });
                    }
                }),
            );
        });
        Rc::try_unwrap(seen).expect("the run is over").into_inner()
    })
    .expect("the simulation ran")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Two writers start together: both read the row before either commits; the first write to
/// reach the row commits, the second finds the revision changed (`StaleDataError`), and
/// neutron-lib retries it 0.5 s later: it re-reads and commits its status last.
#[test]
fn neutron_db_interleaves_two_writes_and_the_later_commit_wins() {
    let seen = run(vec![(ms(0), "ACTIVE"), (ms(0), "DOWN")], vec![]);
    let commits: Vec<&str> = seen.events.iter().map(|(_, e)| e.as_str()).collect();
    assert_eq!(commits.len(), 2, "{seen:?}");
    let (first, second) = (&seen.events[0], &seen.events[1]);
    // The first commit comes after both reads (2 ms round trip) and one write round trip.
    assert!(first.0 < 10_000, "{seen:?}");
    // The other write conflicted and was retried after neutron-lib's first interval.
    assert!(second.0 >= 500_000 && second.0 < 600_000, "{seen:?}");
    assert_ne!(first.1[..8], second.1[..8], "{seen:?}");
    assert!(seen.results.iter().all(|(_, _, r)| r.is_ok()), "{seen:?}");
}

/// The port is ACTIVE; a writer sends DOWN and, half a millisecond later, another sends ACTIVE
/// (Felix's newer status). The second reads the row before the first commits, finds ACTIVE
/// stored and writes nothing; the first then commits DOWN: the older status is the one left.
#[test]
fn neutron_db_interleaves_a_read_before_a_commit_and_the_older_status_stays() {
    let seen = run(
        vec![
            (ms(0), "ACTIVE"),
            (ms(100), "DOWN"),
            (Duration::from_micros(100_500), "ACTIVE"),
        ],
        vec![],
    );
    let events: Vec<&str> = seen.events.iter().map(|(_, e)| e.as_str()).collect();
    assert_eq!(
        events,
        ["commit 1 ACTIVE", "unchanged 3", "commit 2 DOWN"],
        "{seen:?}"
    );
}

/// Under a slow database (2 s a statement) the first writer holds the row lock for its
/// transaction's length; the second, whose read came before that commit, sends its write while
/// the lock is held, waits for it, then finds the revision changed, is retried by neutron-lib and
/// commits after it: the commit order is the lock's.
#[test]
fn neutron_db_interleaves_under_the_row_lock() {
    let slow = Fault {
        at_ms: 0,
        dur_ms: 60_000,
        kind: FaultKind::ServiceSlow {
            node: "neutron-db".into(),
            extra_ms: 2_000,
        },
    };
    let seen = run(vec![(ms(0), "ACTIVE"), (ms(1_000), "DOWN")], vec![slow]);
    let events: Vec<(u64, &str)> = seen.events.iter().map(|(t, e)| (*t, e.as_str())).collect();
    // A: read from 1 ms to 2 s, write from 2 s, commit at 4 s. B: read from 1 s to 3 s (revision
    // 0), write at 3 s waits for A's lock, is stale at 4 s, and is retried 0.5 s later.
    assert_eq!(events[0].1, "commit 1 ACTIVE", "{seen:?}");
    assert!((4_000_000..4_100_000).contains(&events[0].0), "{seen:?}");
    assert_eq!(events[1].1, "commit 2 DOWN", "{seen:?}");
    assert!(events[1].0 > 4_500_000, "{seen:?}");
}

/// A lock held past `innodb_lock_wait_timeout` fails the waiter with error 1205, which oslo.db
/// makes a `DBDeadlock` and neutron-lib retries: both writers' results are successes, and the
/// waiter commits after the holder.
#[test]
fn neutron_db_interleaves_a_lock_wait_that_times_out_and_is_retried() {
    let slow = Fault {
        at_ms: 0,
        dur_ms: 60_000,
        kind: FaultKind::ServiceSlow {
            node: "neutron-db".into(),
            extra_ms: 55_000,
        },
    };
    let seen = run(vec![(ms(0), "ACTIVE"), (ms(2_000), "DOWN")], vec![slow]);
    // A reads for 55 s and holds the lock from 55 s to 110 s. B reads from 2 s to 57 s and waits
    // for the lock from 57 s until the wait times out at 107 s; retried, it reads revision 0,
    // waits for A's commit again, is stale, and commits at its next retry.
    let events: Vec<(u64, &str)> = seen.events.iter().map(|(t, e)| (*t, e.as_str())).collect();
    assert_eq!(events[0].1, "commit 1 ACTIVE", "{seen:?}");
    assert!(
        (110_000_000..110_100_000).contains(&events[0].0),
        "{seen:?}"
    );
    assert_eq!(events[1].1, "commit 2 DOWN", "{seen:?}");
    assert!(
        events[1].0 > 57_000_000 + LOCK_WAIT_TIMEOUT.as_micros() as u64,
        "{seen:?}"
    );
    assert!(seen.results.iter().all(|(_, _, r)| r.is_ok()), "{seen:?}");
}

/// A database that refuses connections for 30 s: neutron-lib retries the `DBConnectionError`
/// with its backoff and the write commits once the database is back, without Calico seeing an
/// error; refused for 10 minutes, the retries run out and Calico gets the error.
#[test]
fn neutron_db_retries_connection_errors_before_calico_sees_one() {
    let down = |dur_ms| Fault {
        at_ms: 0,
        dur_ms,
        kind: FaultKind::ServiceUnavailable {
            node: "neutron-db".into(),
        },
    };
    let seen = run(vec![(ms(1), "ACTIVE")], vec![down(30_000)]);
    assert_eq!(seen.results.len(), 1, "{seen:?}");
    assert!(seen.results[0].0 >= 30_000_000, "{seen:?}");
    assert_eq!(seen.results[0].2, Ok(()), "{seen:?}");
    let seen = run(vec![(ms(1), "ACTIVE")], vec![down(600_000)]);
    let (t, _, r) = seen.results[0];
    assert!(matches!(r, Err(CallError::Db(_))), "{seen:?}");
    // 20 retries: 0.5 s, then draws below 1, 2, 4, 8 s and 15 below 10 s.
    assert!(t > 500_000 && t < 166_000_000, "{seen:?}");
}
