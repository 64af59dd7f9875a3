//! The AWS SDK's standard retryer over the simulated cloud, one test per class of retryable
//! error: a transient server error (`InternalError`, not applied), an outage (refused, not
//! applied), and a lost answer (applied): the retry of an applied unassign meets
//! `InvalidParameterValue`, which is not retried, and the retry of an applied assign by count
//! assigns as many again. A client error is never retried.

mod cloud_common;

use cloud_common::{Body, Setup};
use sim::cloud::sdk::{RetryCause, RETRY_QUOTA, RETRY_TIMEOUT_COST};
use sim::cloud::{eni_name, CloudError, REQUEST_TIMEOUT};
use sim::event::Event;
use sim::{FaultKind, Short};
use std::rc::Rc;
use std::time::Duration;

/// A run's body log and its cloud events (`ms kind op [detail]`), in order.
type Outcome = (Vec<(u64, String)>, Vec<String>);

/// Runs `body` with an SDK client of a cloud (a subnet of 20) answering `per_mille` requests in a
/// thousand with a transient server error, under `fault` at the cloud from 1 s for `dur_ms`, if
/// any.
fn run(seed: u64, per_mille: u32, fault: Option<(FaultKind, u64)>, make: fn() -> Body) -> Outcome {
    let setup = Setup {
        seed,
        fault,
        subnet: 20,
        internal_errors_per_mille: per_mille,
        sdk: true,
    };
    let (log, lines) = cloud_common::run(setup, make);
    let events = lines
        .iter()
        .filter_map(|l| describe(l.t_us / 1000, &l.ev))
        .collect();
    (log, events)
}

/// A cloud event as the tests compare it.
fn describe(ms: u64, ev: &Event) -> Option<String> {
    let line = match ev {
        Event::CloudInternalError { op, .. } => format!("internal-error {op}"),
        Event::CloudAmbiguous { op, .. } => format!("ambiguous {op}"),
        Event::CloudAssign { ip, .. } => format!("assigned {ip}"),
        Event::CloudUnassign { ip, .. } => format!("unassigned {ip}"),
        Event::CloudRetry {
            op,
            cause,
            delay_ms,
            ..
        } => format!("retry {op} {cause:?} {}", delay_ms.is_some()),
        _ => return None,
    };
    Some(format!("{ms} {line}"))
}

/// The events of a kind (`retry`, `assigned`, ...).
fn of<'a>(events: &'a [String], kind: &str) -> Vec<&'a String> {
    events
        .iter()
        .filter(|e| e.split(' ').nth(1) == Some(kind))
        .collect()
}

/// The SDK's retries of assigns.
fn assign_retries(events: &[String]) -> Vec<&String> {
    of(events, "retry")
        .into_iter()
        .filter(|r| r.contains(" assign "))
        .collect()
}

/// A body that assigns `count` at 2 s and records the outcome, the interface's IPs after it,
/// and the SDK's retry quota.
fn assign_at_2s(count: u32) -> Body {
    Rc::new(move |c, w, log| {
        Box::pin(async move {
            w.sleep(Duration::from_secs(2)).await;
            let r = c
                .assign("i1", &eni_name(0), count)
                .await
                .map(|ips| ips.len());
            log.borrow_mut()
                .push((w.mono_us() / 1000, format!("{r:?}")));
            let held = c.describe("i1").await.map(|i| i[&eni_name(0)].len());
            log.borrow_mut()
                .push((w.mono_us() / 1000, format!("{held:?}")));
            log.borrow_mut()
                .push((w.mono_us() / 1000, format!("{:?}", c.retry_quota())));
        })
    })
}

#[test]
fn ec2_internal_errors_are_retried_and_the_operation_applies_once() {
    // Half the requests fail. Whatever the seed, a failed attempt applies nothing and the
    // operation that succeeds applies once; some seeds succeed only on a retry.
    let mut retried_then_served = 0;
    for seed in 1..=10 {
        let (log, events) = run(seed, 500, None, || assign_at_2s(2));
        let assigned = of(&events, "assigned").len();
        let retries = of(&events, "retry");
        let assign_retries = retries.iter().filter(|r| r.contains(" assign ")).count();
        if log[0].1 == "Ok(2)" {
            assert_eq!(assigned, 2, "applied once: {events:?}");
            retried_then_served += usize::from(assign_retries > 0);
        } else {
            assert_eq!(assigned, 0, "{events:?}");
            assert_eq!(assign_retries, 3, "{events:?}");
        }
        assert!(
            retries.iter().all(|r| r.contains("Unavailable")),
            "{retries:?}"
        );
    }
    assert!(retried_then_served > 0, "some assign succeeded on a retry");
}

#[test]
fn ec2_internal_errors_on_every_attempt_fail_the_operation_after_three() {
    let (log, events) = run(1, 1_000, None, || assign_at_2s(2));
    assert_eq!(
        log[0].1,
        format!("{:?}", Err::<(), _>(CloudError::Unavailable))
    );
    let retries = assign_retries(&events);
    assert_eq!(retries.len(), 3, "{events:?}");
    assert!(
        retries[2].ends_with("Unavailable false"),
        "gives up: {retries:?}"
    );
    assert!(of(&events, "assigned").is_empty());
}

#[test]
fn ec2_an_outage_is_retried_then_given_up_within_six_seconds() {
    let down = FaultKind::ServiceUnavailable {
        node: "cloud".into(),
    };
    let (log, events) = run(1, 0, Some((down, 59_000)), || assign_at_2s(2));
    let (t, r) = &log[0];
    assert_eq!(r, &format!("{:?}", Err::<(), _>(CloudError::Unavailable)));
    assert!(*t < 2_000 + 2_000 + 4_000 + 10, "{t} ms");
    assert_eq!(assign_retries(&events).len(), 3, "{events:?}");
}

/// An ambiguous fault from 1 s to 5 s: every answer in it is lost, none after it.
fn lose_answers() -> Option<(FaultKind, u64)> {
    let kind = FaultKind::ServiceAmbiguous {
        node: "cloud".into(),
        percent: 100,
    };
    Some((kind, 4_000))
}

#[test]
fn ec2_a_retried_unassign_that_was_applied_gets_invalid_parameter_value() {
    // Two IPs at 0 s; the unassign of the first at 2 s is applied, its answer lost; the SDK
    // retries after the client's timeout, and EC2 answers the retry as it answers any unassign
    // of an IP the interface does not hold: InvalidParameterValue, a client error, not retried.
    fn body() -> Body {
        Rc::new(|c, w, log| {
            Box::pin(async move {
                let ips = c
                    .assign("i1", &eni_name(0), 2)
                    .await
                    .expect("before the fault");
                w.sleep(Duration::from_secs(2)).await;
                let r = c.unassign("i1", &eni_name(0), vec![ips[0]]).await;
                log.borrow_mut()
                    .push((w.mono_us() / 1000, format!("{r:?}")));
                log.borrow_mut().push((0, format!("{}", ips[0])));
                log.borrow_mut()
                    .push((w.mono_us() / 1000, format!("{:?}", c.retry_quota())));
            })
        })
    }
    let (log, events) = run(1, 0, lose_answers(), body);
    let ip = Short::new(&log[1].1).unwrap();
    let want = Err::<(), _>(CloudError::NotAssigned {
        ip,
        eni: eni_name(0),
    });
    assert_eq!(log[0].1, format!("{want:?}"), "{events:?}");
    assert_eq!(
        of(&events, "unassigned").len(),
        1,
        "applied once: {events:?}"
    );
    assert_eq!(of(&events, "ambiguous").len(), 1, "{events:?}");
    let retries = of(&events, "retry");
    assert_eq!(retries.len(), 1, "the 400 is not retried: {events:?}");
    assert!(retries[0].ends_with("NoAnswer true"), "{retries:?}");
    let t = log[0].0;
    let timeout = REQUEST_TIMEOUT.as_millis() as u64;
    assert!(
        (2_000 + timeout..2_000 + timeout + 2_100).contains(&t),
        "{t} ms"
    );
    let left = RETRY_QUOTA - RETRY_TIMEOUT_COST;
    assert_eq!(
        log[2].1,
        format!("{:?}", Some(left)),
        "a timeout's retry cost"
    );
}

#[test]
fn ec2_a_retried_assign_that_was_applied_assigns_again() {
    // AssignPrivateIpAddresses by count has no client token: the lost attempt's two IPs stay on
    // the interface, and the retry assigns two more.
    let (log, events) = run(1, 0, lose_answers(), || assign_at_2s(2));
    assert_eq!(log[0].1, "Ok(2)", "{events:?}");
    assert_eq!(of(&events, "assigned").len(), 4, "{events:?}");
    assert_eq!(log[1].1, "Ok(4)", "the interface holds both batches");
    let retries = of(&events, "retry");
    assert_eq!(retries.len(), 1, "{events:?}");
    assert!(retries[0].contains("NoAnswer"));
    assert_eq!(
        log[2].1,
        format!("{:?}", Some(RETRY_QUOTA)),
        "its cost back"
    );
}

#[test]
fn ec2_a_client_error_is_not_retried() {
    fn body() -> Body {
        Rc::new(|c, w, log| {
            Box::pin(async move {
                let ip = Short::new("10.9.9.9").unwrap();
                let r = c.unassign("i1", &eni_name(0), vec![ip]).await;
                log.borrow_mut()
                    .push((w.mono_us() / 1000, format!("{r:?}")));
            })
        })
    }
    let (log, events) = run(1, 0, None, body);
    assert!(log[0].1.contains("NotAssigned"), "{log:?}");
    assert!(of(&events, "retry").is_empty(), "{events:?}");
}

#[test]
fn ec2_retry_classes_are_named_in_the_trace() {
    let (_, events) = run(1, 1_000, None, || assign_at_2s(1));
    let cause = format!("{:?}", RetryCause::Unavailable);
    let retries = of(&events, "retry");
    assert!(!retries.is_empty(), "{events:?}");
    assert!(retries.iter().all(|r| r.contains(&cause)), "{retries:?}");
}
