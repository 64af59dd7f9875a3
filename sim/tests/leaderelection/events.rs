//! What the elector puts on the event bus, as a monitor sees it: `leader-started` and
//! `leader-stopped` at each change of its leading context, the Lease as each write left it (with
//! `Kube::record_objects`), and the time of its last renewal.

use super::{sim_config, API, MS, S};
use sim::event::{Event, Record};
use sim::kube::Kube;
use sim::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseSpec, LEASE_KIND};
use sim::runtime::{on_fresh_thread, simulate};
use sim::world::Host;
use sim::{Failure, Fault, FaultKind, Monitor};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// What the monitor saw: (true µs, identity, started) and (true µs, holder written).
#[derive(Default)]
struct Seen {
    leads: Vec<(u64, String, bool)>,
    holders: Vec<(u64, String)>,
}

struct Watch(Rc<RefCell<Seen>>);

/// (candidate, its last renewal) noted every second.
type Renewals = Rc<RefCell<Vec<(String, Option<u64>)>>>;

impl Monitor for Watch {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let mut s = self.0.borrow_mut();
        match &rec.event {
            Event::LeaderStarted { identity, .. } => {
                s.leads.push((rec.t_us, identity.to_string(), true))
            }
            Event::LeaderStopped { identity, .. } => {
                s.leads.push((rec.t_us, identity.to_string(), false))
            }
            ev => {
                if let Some((_, spec)) = LeaseSpec::written(ev) {
                    s.holders
                        .push((rec.t_us, spec.holder_identity.unwrap_or_default()));
                }
            }
        }
        None
    }
    fn on_tick(&mut self, _now_us: u64) -> Option<Failure> {
        None
    }
    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

/// n1 leads, is cut off from 30.5 s to 90.5 s, and n2 takes over; every second each
/// candidate's last renewal time is noted.
#[test]
fn leaderelection_events_carry_leadership_and_the_lease() {
    let (seen, renewals) = on_fresh_thread(|| {
        let seen = Rc::new(RefCell::new(Seen::default()));
        let renewals: Renewals = Rc::default();
        let schedule = vec![Fault {
            at_ms: 30_500,
            dur_ms: 60_000,
            kind: FaultKind::Partition {
                a: vec!["n1".into()],
                b: vec![API.into(), "n2".into()],
            },
        }];
        let cfg = sim_config(7, &[API, "n1", "n2"], schedule, 120_000);
        let r2 = renewals.clone();
        simulate(cfg, Box::new(Watch(seen.clone())), move |world| {
            let kube = Kube::install(world, 0);
            kube.record_objects(LEASE_KIND);
            for (i, who) in ["n1", "n2"].into_iter().enumerate() {
                let (kube, r) = (kube.clone(), r2.clone());
                world.set_services(
                    i as u16 + 1,
                    Rc::new(move |host: &Host| {
                        let p = host.spawn_process("operator");
                        let cfg = LeaderElectionConfig::new("lock", who);
                        let le = LeaderElector::new(&kube, &p, cfg).expect("valid");
                        let (le2, p2, r) = (le.clone(), p.clone(), r.clone());
                        p.spawn("elect", async move { le2.run().await });
                        p.spawn("note", async move {
                            if who == "n2" {
                                p2.sleep(Duration::from_secs(1)).await;
                            }
                            loop {
                                r.borrow_mut().push((who.into(), le.last_renew_mono_us()));
                                p2.sleep(Duration::from_secs(1)).await;
                            }
                        });
                    }),
                );
            }
        });
        let s = seen.take();
        let r = renewals.take();
        (s, r)
    })
    .expect("run");
    // n1 led first, stopped (its renewal failed in the partition), then n2 took over.
    let names: Vec<(&str, bool)> = seen
        .leads
        .iter()
        .map(|(_, w, b)| (w.as_str(), *b))
        .collect();
    assert_eq!(
        names,
        [("n1", true), ("n1", false), ("n2", true)],
        "{:?}",
        seen.leads
    );
    let (start1, stop1, start2) = (seen.leads[0].0, seen.leads[1].0, seen.leads[2].0);
    assert!(
        start1 < S && (30 * S..50 * S).contains(&stop1),
        "{:?}",
        seen.leads
    );
    assert!(
        stop1 < start2,
        "no overlap without a release: {:?}",
        seen.leads
    );
    // Each start follows a write of the Lease naming that holder, read from the event alone.
    for (t, who, started) in &seen.leads {
        if *started {
            let last = seen.holders.iter().rev().find(|(at, _)| at <= t);
            assert_eq!(
                last.map(|(_, h)| h.as_str()),
                Some(who.as_str()),
                "{seen:?}"
            );
        }
    }
    // n1 last renewed before the cut (its clock reads true time: no offset, no drift); n2 goes
    // on renewing to the end.
    let last = |who: &str| {
        renewals
            .iter()
            .rev()
            .find(|(w, _)| w == who)
            .and_then(|r| r.1)
    };
    let n1 = last("n1").expect("n1 renewed");
    assert!((28 * S..30_500 * MS).contains(&n1), "{n1}");
    assert!(last("n2").expect("n2 renewed") > 115 * S);
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "leads {:?}, holders {:?}", self.leads, self.holders)
    }
}
