//! The cloud's request throttling through the simulated network: EC2's `RequestLimitExceeded`
//! as a typed error, a bare client that sees it at once, an SDK client that retries it as the AWS
//! SDK's standard retryer does and gives up after its attempts, and the typed
//! `InsufficientFreeAddressesInSubnet` that no client retries.

mod cloud_common;

use cloud_common::{Body, Setup};
use sim::cloud::sdk::MAX_ATTEMPTS;
use sim::cloud::{eni_name, CloudError};
use sim::event::Event;
use sim::FaultKind;
use std::rc::Rc;
use std::time::Duration;

/// Runs `body` with a client (an SDK client of cilium's default limits if `sdk`) of a cloud of
/// one instance (one interface of 10, a subnet of `subnet` addresses), under a throttling fault
/// of `percent` from 1 s to 60 s (none if 0). Returns the body's log and the trace's throttles
/// and SDK retries.
fn run(
    seed: u64,
    percent: u32,
    subnet: u32,
    sdk: bool,
    make: fn() -> Body,
) -> (Vec<(u64, String)>, Vec<String>) {
    let fault = (percent > 0).then(|| {
        let node = "cloud".into();
        (FaultKind::Throttling { node, percent }, 59_000)
    });
    let setup = Setup {
        seed,
        fault,
        subnet,
        internal_errors_per_mille: 0,
        sdk,
    };
    let (log, lines) = cloud_common::run(setup, make);
    let events = lines
        .iter()
        .filter_map(|l| match &l.ev {
            Event::CloudThrottled { op, .. } => Some(format!("{} throttled {op}", l.t_us / 1000)),
            Event::CloudRetry {
                op,
                attempt,
                delay_ms,
                ..
            } => Some(format!(
                "{} retry {op} {attempt} {delay_ms:?}",
                l.t_us / 1000
            )),
            _ => None,
        })
        .collect();
    (log, events)
}

/// A body that assigns one IP at 2 s (inside the fault) and records the outcome.
fn assign_once() -> Body {
    Rc::new(|c, w, log| {
        Box::pin(async move {
            w.sleep(Duration::from_secs(2)).await;
            let r = c.assign("i1", &eni_name(0), 1).await;
            log.borrow_mut()
                .push((w.mono_us() / 1000, format!("{r:?}")));
        })
    })
}

#[test]
fn ec2_throttling_refuses_a_bare_client_at_once_and_applies_nothing() {
    let (log, events) = run(1, 100, 20, false, assign_once);
    assert_eq!(log.len(), 1);
    let (t, r) = &log[0];
    assert_eq!(r, &format!("{:?}", Err::<(), _>(CloudError::Throttled)));
    assert!(*t < 2_010, "answered at once, not after a timeout: {t} ms");
    assert_eq!(events.len(), 1, "{events:?}");
}

#[test]
fn ec2_throttling_is_retried_by_the_sdk_and_given_up_after_its_attempts() {
    let (log, events) = run(1, 100, 20, true, assign_once);
    let throttled = events.iter().filter(|e| e.contains("throttled")).count();
    assert_eq!(throttled, MAX_ATTEMPTS as usize, "{events:?}");
    let retries: Vec<&String> = events.iter().filter(|e| e.contains("retry")).collect();
    assert_eq!(retries.len(), MAX_ATTEMPTS as usize, "{events:?}");
    assert!(
        retries[..2].iter().all(|e| e.contains("Some(")),
        "{retries:?}"
    );
    assert!(
        retries[2].ends_with("None"),
        "the last attempt gives up: {retries:?}"
    );
    let (t, r) = &log[0];
    assert_eq!(r, &format!("{:?}", Err::<(), _>(CloudError::Throttled)));
    assert!(
        *t < 2_000 + 2_000 + 4_000 + 10,
        "the two delays are under 2 s and 4 s: {t} ms"
    );
}

#[test]
fn ec2_throttling_leaves_a_share_of_the_refill_that_retries_can_win() {
    // Other clients take 60 % of the mutating refill (5 a second): 2 tokens a second are ours,
    // so a retry after a jittered delay is often served.
    fn body() -> Body {
        Rc::new(|c, w, log| {
            Box::pin(async move {
                w.sleep(Duration::from_secs(2)).await;
                for _ in 0..20 {
                    let r = c.assign("i1", &eni_name(0), 0).await.map(|_| ());
                    log.borrow_mut()
                        .push((w.mono_us() / 1000, format!("{r:?}")));
                }
            })
        })
    }
    let (log, events) = run(3, 60, 20, true, body);
    let ok = log.iter().filter(|(_, r)| r == "Ok(())").count();
    assert!(ok > 0, "some succeed: {log:?}");
    assert!(events.iter().any(|e| e.contains("throttled")), "{events:?}");
}

#[test]
fn ec2_throttling_is_seeded() {
    let a = run(7, 100, 20, true, assign_once);
    assert_eq!(a, run(7, 100, 20, true, assign_once));
    assert_ne!(
        a.1,
        run(8, 100, 20, true, assign_once).1,
        "another seed, other jitter"
    );
}

#[test]
fn ec2_without_other_clients_never_throttles_a_limited_client() {
    // 60 calls as fast as the client's limiter lets them (4 a second after a burst of 20):
    // within every bucket's refill.
    fn body() -> Body {
        Rc::new(|c, w, log| {
            Box::pin(async move {
                for _ in 0..60 {
                    let r = c.describe("i1").await.map(|_| ());
                    log.borrow_mut()
                        .push((w.mono_us() / 1000, format!("{r:?}")));
                }
            })
        })
    }
    let (log, events) = run(1, 0, 20, true, body);
    assert!(events.is_empty(), "{events:?}");
    assert!(log.iter().all(|(_, r)| r == "Ok(())"));
    let last = log.last().unwrap().0;
    assert!(
        (9_900..=10_100).contains(&last),
        "40 calls past the burst at 4 a second: {last} ms"
    );
}

#[test]
fn subnet_exhausted_assign_is_a_typed_error_that_no_client_retries() {
    // A subnet of 3: the assign of 5 (the interface has room for 10) wants more than is free.
    fn body() -> Body {
        Rc::new(|c, w, log| {
            Box::pin(async move {
                let r = c.assign("i1", &eni_name(0), 5).await;
                log.borrow_mut()
                    .push((w.mono_us() / 1000, format!("{r:?}")));
                let r = c.describe("i1").await.map(|i| i[&eni_name(0)].len());
                log.borrow_mut()
                    .push((w.mono_us() / 1000, format!("{r:?}")));
            })
        })
    }
    let (log, events) = run(1, 0, 3, true, body);
    let full = Err::<(), _>(CloudError::SubnetFull { free: 3, wanted: 5 });
    assert_eq!(log[0].1, format!("{full:?}"));
    assert_eq!(log[1].1, "Ok(0)", "nothing was assigned");
    assert!(events.is_empty(), "not a throttle, not retried: {events:?}");
}
