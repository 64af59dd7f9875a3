//! The hand-picked edge cases of the conformance issue (name, steps), in the order they run.

use crate::steps::Step::{self, *};

/// Every edge case.
pub(crate) fn all() -> Vec<(&'static str, Vec<Step>)> {
    [
        missing_key_compares(),
        writes_and_txns(),
        leases(),
        deletes_and_compactions(),
    ]
    .concat()
}

/// Compares on a key that does not exist, against zero and against non-zero.
fn missing_key_compares() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "compares on a missing key, every target and operator",
            (0..5u8)
                .flat_map(|target| {
                    (0..4u8).map(move |op| Txn {
                        k: 3,
                        target,
                        op,
                        arg: 0,
                        then_put: None,
                        else_read: true,
                    })
                })
                .collect(),
        ),
        (
            "compares on a missing key against non-zero",
            (0..5u8)
                .map(|target| Txn {
                    k: 3,
                    target,
                    op: 2,
                    arg: 1,
                    then_put: Some(1),
                    else_read: true,
                })
                .collect(),
        ),
    ]
}

/// Re-creating a deleted key, a transaction whose failure branch only reads, put-if-absent.
fn writes_and_txns() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "re-creating a deleted key",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Put {
                    k: 0,
                    v: 2,
                    lease: None,
                },
                Delete { k: 0 },
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Get { k: 0 },
                Watch {
                    k: 0,
                    prefix: false,
                    back: 5,
                },
            ],
        ),
        (
            "a txn whose failure branch only reads",
            vec![
                Put {
                    k: 1,
                    v: 1,
                    lease: None,
                },
                Txn {
                    k: 1,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(2),
                    else_read: true,
                },
                Get { k: 1 },
            ],
        ),
        (
            "put-if-absent twice",
            vec![
                Txn {
                    k: 0,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(1),
                    else_read: true,
                },
                Txn {
                    k: 0,
                    target: 3,
                    op: 0,
                    arg: 0,
                    then_put: Some(2),
                    else_read: true,
                },
            ],
        ),
    ]
}

/// Puts with an unknown lease, TTLs below the minimum and of unknown leases, keep-alive and
/// revoke.
fn leases() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "a put with an unknown lease",
            vec![PutUnknownLease { k: 0 }, Get { k: 0 }],
        ),
        (
            "TTL below the minimum",
            vec![Grant { ttl: 1 }, Ttl { l: 0 }],
        ),
        ("time-to-live of an unknown lease", vec![UnknownTtl]),
        (
            "keep-alive and revoke",
            vec![
                Grant { ttl: 5 },
                Put {
                    k: 0,
                    v: 1,
                    lease: Some(0),
                },
                Put {
                    k: 2,
                    v: 1,
                    lease: Some(0),
                },
                KeepAlive { l: 0 },
                Revoke { l: 0 },
                GetPrefix,
                Revoke { l: 0 },
                KeepAlive { l: 0 },
            ],
        ),
    ]
}

/// Deleting nothing, reads and watches across a compaction, compacting the future.
fn deletes_and_compactions() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "deleting nothing",
            vec![Delete { k: 2 }, DeletePrefix, GetPrefix],
        ),
        (
            "watch and reads across a compaction",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Put {
                    k: 0,
                    v: 2,
                    lease: None,
                },
                Put {
                    k: 1,
                    v: 1,
                    lease: None,
                },
                Compact { back: 1 },
                Watch {
                    k: 0,
                    prefix: false,
                    back: 4,
                },
                Watch {
                    k: 0,
                    prefix: true,
                    back: 2,
                },
                GetAt { k: 0, back: 3 },
                GetAt { k: 0, back: 1 },
                Compact { back: 1 },
                Compact { back: 3 },
            ],
        ),
        (
            "compacting the future",
            vec![
                Put {
                    k: 0,
                    v: 1,
                    lease: None,
                },
                Step::Compact { back: 0 },
            ],
        ),
    ]
}
