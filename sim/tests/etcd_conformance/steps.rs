//! The operations a sequence is made of, their generator, and what either side answers.

use proptest::prelude::*;
use sim::etcd::store::StoreError;

#[derive(Clone, Debug)]
pub(crate) enum Step {
    Put {
        k: u8,
        v: u8,
        lease: Option<u8>,
    },
    PutUnknownLease {
        k: u8,
    },
    Get {
        k: u8,
    },
    GetPrefix,
    GetAt {
        k: u8,
        back: u8,
    },
    Delete {
        k: u8,
    },
    DeletePrefix,
    Txn {
        k: u8,
        target: u8,
        op: u8,
        arg: u8,
        then_put: Option<u8>,
        else_read: bool,
    },
    Grant {
        ttl: u8,
    },
    KeepAlive {
        l: u8,
    },
    Revoke {
        l: u8,
    },
    Ttl {
        l: u8,
    },
    UnknownTtl,
    Compact {
        back: u8,
    },
    Watch {
        k: u8,
        prefix: bool,
        back: u8,
    },
}

pub(crate) fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..4, 0u8..3, proptest::option::weighted(0.3, 0u8..3)).prop_map(|(k, v, lease)| Step::Put { k, v, lease }),
        1 => (0u8..4).prop_map(|k| Step::PutUnknownLease { k }),
        3 => (0u8..4).prop_map(|k| Step::Get { k }),
        1 => Just(Step::GetPrefix),
        2 => (0u8..4, 0u8..6).prop_map(|(k, back)| Step::GetAt { k, back }),
        2 => (0u8..4).prop_map(|k| Step::Delete { k }),
        1 => Just(Step::DeletePrefix),
        4 => (0u8..4, 0u8..5, 0u8..4, 0u8..4, proptest::option::of(0u8..3), any::<bool>())
            .prop_map(|(k, target, op, arg, then_put, else_read)| Step::Txn { k, target, op, arg, then_put, else_read }),
        2 => (1u8..8).prop_map(|ttl| Step::Grant { ttl }),
        1 => (0u8..3).prop_map(|l| Step::KeepAlive { l }),
        1 => (0u8..3).prop_map(|l| Step::Revoke { l }),
        1 => (0u8..3).prop_map(|l| Step::Ttl { l }),
        1 => Just(Step::UnknownTtl),
        1 => (0u8..5).prop_map(|back| Step::Compact { back }),
        2 => (0u8..4, any::<bool>(), 0u8..6).prop_map(|(k, prefix, back)| Step::Watch { k, prefix, back }),
    ]
}

/// What either side answered, normalised (revisions relative to the sequence's base).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Obs {
    Rev(i64),
    Kvs(i64, Vec<Kv>),
    Txn {
        succeeded: bool,
        rev: i64,
        results: Vec<Obs>,
    },
    Deleted(i64, i64),
    Lease(i64),
    Ttl(i64, i64),
    Events(Vec<(String, String, String, i64, i64)>),
    Err(&'static str),
    Skip,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Kv {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) create: i64,
    pub(crate) modr: i64,
    pub(crate) version: i64,
    pub(crate) has_lease: bool,
}

pub(crate) fn store_err(e: &StoreError) -> &'static str {
    match e {
        StoreError::Compacted { .. } => "compacted",
        StoreError::FutureRevision => "future-revision",
        StoreError::LeaseNotFound => "lease-not-found",
    }
}

pub(crate) fn real_err(msg: &str) -> &'static str {
    if msg.contains("compacted") {
        "compacted"
    } else if msg.contains("future revision") {
        "future-revision"
    } else if msg.contains("lease not found") {
        "lease-not-found"
    } else {
        panic!("unexpected etcd error {msg}")
    }
}
