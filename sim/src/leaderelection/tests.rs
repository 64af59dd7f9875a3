//! Unit tests of the record encoding and the jitter.

use super::*;

#[test]
fn micro_time_round_trips() {
    for us in [0i64, 1, -1, 5_000_000, 86_400_000_000 * 59 + 3_723_000_001] {
        assert_eq!(parse_rfc3339(&format_rfc3339(us)), Some(us), "{us}");
    }
    assert_eq!(parse_rfc3339("2026-01-01T00:00:01Z"), Some(1_000_000));
    assert_eq!(
        parse_rfc3339("2026-01-01T00:00:01.123456789+00:00"),
        Some(1_123_456)
    );
    for bad in [
        "",
        "2026-01-01",
        "2026-01-01T00:00:01",
        "2026-13-01T00:00:01Z",
    ] {
        assert_eq!(parse_rfc3339(bad), None, "{bad}");
    }
}

#[test]
fn lease_spec_json_uses_the_api_field_names() {
    let spec = LeaderElectionRecord {
        holder_identity: "a".into(),
        lease_duration_seconds: 15,
        acquire_time_us: Some(0),
        renew_time_us: None,
        leader_transitions: 2,
    }
    .to_spec();
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-01T00:00:00.000000Z",
            "renewTime": null,
            "leaseTransitions": 2,
        })
    );
    let back: LeaseSpec = serde_json::from_value(json).unwrap();
    assert_eq!(back, spec);
    let empty: LeaseSpec = serde_json::from_value(serde_json::json!({})).unwrap();
    assert_eq!(LeaderElectionRecord::from_spec(&empty), Default::default());
}

#[test]
fn raw_records_compare_times_to_the_second() {
    let at = |us| LeaderElectionRecord {
        holder_identity: "a".into(),
        renew_time_us: Some(us),
        ..Default::default()
    };
    assert_eq!(at(2_000_000).raw(), at(2_999_999).raw());
    assert_ne!(at(2_999_999).raw(), at(3_000_000).raw());
    assert_ne!(at(-1).raw(), at(0).raw());
}

#[test]
fn jitter_spans_one_to_two_point_two_periods() {
    let d = Duration::from_secs(2);
    assert_eq!(jitter(d, JITTER_FACTOR, 0.0), d);
    assert_eq!(jitter(d, JITTER_FACTOR, 0.5), Duration::from_millis(3_200));
    assert!(jitter(d, JITTER_FACTOR, 0.999_999) < Duration::from_millis(4_400));
    assert!(jitter(d, JITTER_FACTOR, 0.999_999) > Duration::from_millis(4_399));
    // A factor of 0 means 1 (wait.Jitter).
    assert_eq!(jitter(d, 0.0, 0.5), Duration::from_secs(3));
}
