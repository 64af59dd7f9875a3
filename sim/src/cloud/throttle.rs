//! Request throttling of the cloud API, as EC2 does it.
//!
//! EC2 throttles requests per account, Region and API with token buckets ("Request throttling
//! for the Amazon EC2 API", docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html):
//! each request takes one token from its API's bucket and is refused with
//! `RequestLimitExceeded` ([`super::CloudError::Throttled`], nothing applied) when the bucket is
//! empty; a bucket refills at a set rate up to its size. The page's own example gives a
//! non-mutating API's bucket (`DescribeHosts`: 100 tokens, 20 a second), which the model uses
//! for `DescribeNetworkInterfaces`. The sizes of the mutating `AssignPrivateIpAddresses` and
//! `UnassignPrivateIpAddresses` buckets come from the page's table, which could not be
//! retrieved when this was written: [`MUTATING_BUCKET`] is assumed (200 tokens, 5 a second).
//! Both are per account and may be raised on request (the same page).
//!
//! Every client of the account shares those buckets. The modelled clients alone never exhaust
//! them (an IPAM operator limits itself to a few requests a second). A
//! [`crate::FaultKind::Throttling`] fault stands for the account's other clients: when it
//! begins, their burst has emptied every bucket, and while it lasts they take its share of each
//! refill, so the modelled clients get only the rest.

use super::tokens::Tokens;

/// One API's token bucket.
#[derive(Clone, Debug)]
struct Bucket {
    /// Tokens added per second.
    refill_per_s: u64,
    tokens: Tokens,
}

impl Bucket {
    fn new(size: u64, refill_per_s: u64) -> Bucket {
        Bucket {
            refill_per_s,
            tokens: Tokens::full(size),
        }
    }

    /// Refills up to `now_us`, with `others` percent of the refill going to other clients.
    fn refill(&mut self, now_us: u64, others: u32) {
        let ours = 100 - u64::from(others.min(100));
        // Thousandths of a token a second: refill × ours / 100 × 1000.
        self.tokens.refill(now_us, self.refill_per_s * ours * 10);
    }
}

/// The APIs the cloud serves, each with its own bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    /// `AssignPrivateIpAddresses` (mutating).
    Assign,
    /// `UnassignPrivateIpAddresses` (mutating).
    Unassign,
    /// `DescribeNetworkInterfaces` (non-mutating).
    Describe,
}

/// A mutating API's bucket: its size and refill per second. Assumed (see the module doc): the
/// EC2 page's table was not retrieved.
pub const MUTATING_BUCKET: (u64, u64) = (200, 5);
/// A non-mutating API's bucket: its size and refill per second (the EC2 page's `DescribeHosts`
/// example).
pub const NON_MUTATING_BUCKET: (u64, u64) = (100, 20);

/// The account's buckets, one per API.
#[derive(Clone, Debug)]
pub(super) struct Buckets {
    assign: Bucket,
    unassign: Bucket,
    describe: Bucket,
    /// The other clients' share when the last request came (a rise from 0 is a new fault).
    others: u32,
}

impl Buckets {
    /// Full buckets, no other client.
    pub(super) fn new() -> Buckets {
        let (ms, mr) = MUTATING_BUCKET;
        let (ns, nr) = NON_MUTATING_BUCKET;
        Buckets {
            assign: Bucket::new(ms, mr),
            unassign: Bucket::new(ms, mr),
            describe: Bucket::new(ns, nr),
            others: 0,
        }
    }

    /// Takes a token for a request to `api` at `now_us`, while other clients take `others`
    /// percent of each refill; false (throttled) if the bucket has none. When other clients
    /// appear (`others` rises from 0), their burst has emptied every bucket.
    pub(super) fn admit(&mut self, api: Api, now_us: u64, others: u32) -> bool {
        for b in [&mut self.assign, &mut self.unassign, &mut self.describe] {
            b.refill(now_us, self.others);
            if others > 0 && self.others == 0 {
                b.tokens.empty();
            }
        }
        self.others = others;
        let b = match api {
            Api::Assign => &mut self.assign,
            Api::Unassign => &mut self.unassign,
            Api::Describe => &mut self.describe,
        };
        b.tokens.try_take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_serves_its_size_at_once_then_its_refill_rate() {
        let mut b = Buckets::new();
        let served = (0..150).filter(|_| b.admit(Api::Describe, 0, 0)).count();
        assert_eq!(served, 100, "a non-mutating bucket holds 100");
        // One second later, 20 more.
        let served = (0..50)
            .filter(|_| b.admit(Api::Describe, 1_000_000, 0))
            .count();
        assert_eq!(served, 20);
        // Other APIs have their own buckets.
        assert!(b.admit(Api::Assign, 1_000_000, 0));
    }

    #[test]
    fn other_clients_empty_the_buckets_and_take_their_share_of_the_refill() {
        let mut b = Buckets::new();
        assert!(!b.admit(Api::Unassign, 10, 60), "their burst emptied it");
        // 5 a second, 40 % of it ours: 2 tokens in one second.
        let served = (0..10)
            .filter(|_| b.admit(Api::Unassign, 1_000_010, 60))
            .count();
        assert_eq!(served, 2);
    }

    #[test]
    fn with_all_the_refill_theirs_nothing_passes_until_they_go() {
        let mut b = Buckets::new();
        for t in [0, 1_000_000, 60_000_000] {
            assert!(!b.admit(Api::Assign, t, 100));
        }
        // Gone at 60 s: their share still counted until then, the refill is ours after it.
        assert!(!b.admit(Api::Assign, 60_000_001, 0));
        let served = (0..10)
            .filter(|_| b.admit(Api::Assign, 61_000_000, 0))
            .count();
        assert_eq!(served, 4, "just under a second of a 5-a-second refill");
    }
}
