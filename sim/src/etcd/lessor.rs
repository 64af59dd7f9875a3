//! When etcd 3.4 expires a lease, and what the model keeps of it.
//!
//! Source: `etcd-io/etcd`, tag `v3.4.23` (commit `c8b78319672a0cf5f129f693d6df1bae725c5243`, the
//! version Debian ships as `etcd-server` 3.4.23), with its default flags.
//!
//! * Deadline. `Grant` (`lease/lessor.go`, `lessor.Grant`, lines 274-322) and `Renew` (lines
//!   393-443) call `Lease.refresh(0)` (lines 876-881): `expiry = now + extend + RemainingTTL()`,
//!   where `RemainingTTL()` (lines 868-873) is the granted TTL unless a checkpoint stored a
//!   remaining TTL. Checkpointing is off by default in 3.4
//!   (`--experimental-enable-lease-checkpoint=false`, `etcdmain/config.go` line 260; the
//!   checkpointer is only set when it is on, `etcdserver/server.go` lines 623-628), so nothing but
//!   the granted TTL is ever stored.
//! * Restart. Recovery loads each lease with `expiry: forever` (`lease/lessor.go`,
//!   `lessor.initAndRecover`, lines 798-826, line 817): no lease expires until the member is leader again. A new leader, once it
//!   has applied the empty entry of its term, calls `lessor.Promote(s.Cfg.electionTimeout())`
//!   (`etcdserver/server.go`, `EtcdServer.applyEntryNormal` from line 2203, the call at line 2219),
//!   and `Promote` (`lease/lessor.go` lines 467-519) refreshes every lease with that `extend` (line
//!   475): each lease gets its full TTL again plus one election timeout. The election timeout is
//!   `ElectionTicks * TickMs` (`etcdserver/config.go`, `ServerConfig.electionTimeout`, lines
//!   292-294), with `ElectionTicks = ElectionMs / TickMs` (`embed/config.go`,
//!   `Config.ElectionTicks`, line 768) and the defaults `TickMs = 100`, `ElectionMs = 1000`
//!   (`embed/config.go` lines 415-416): 1 s. So after a restart a lease expires its TTL plus 1 s
//!   after the promotion; the model expires it exactly then (see
//!   [`crate::etcd::store::Store::promote`]).
//! * Promotion time. A restarted single member fast-forwards its election ticks
//!   (`EtcdServer.adjustTicks`, `etcdserver/server.go` lines 674-694) and wins after its randomized
//!   election timeout (`raft/raft.go`, `resetRandomizedElectionTimeout`, lines 1586-1588): 1-10
//!   ticks (0.1-1 s) after it starts. The model does not model process start-up and election: the
//!   simulated node's boot instant stands for the moment the restarted member is leader again (a
//!   `Crash` fault's duration covers start-up and election).
//! * Minimum TTL. 1.5 election timeouts rounded up to whole seconds (`minTTL` and `math.Ceil`,
//!   `etcdserver/server.go` lines 550 and 559): 2 s with the defaults, applied on grant and on
//!   recovery (`lessor.go` lines 299-301, 808-810).
//! * Noticing expiry. The lessor's `runLoop` (`lease/lessor.go` lines 613-626) calls
//!   `revokeExpiredLeases` (lines 630-653) and then waits 500 ms (line 621). That pops due leases
//!   off a heap ordered by deadline (`expireExists`, lines 687-711; `findExpiredLeases`, lines
//!   715-741), at most `leaseRevokeRate / 2` = 500 per pass (line 49, line 634), and the server
//!   revokes them through raft (`EtcdServer.revokeExpiredLeases`, `etcdserver/server.go` lines
//!   1095-1131). So a key attached to a lease disappears between its deadline and about 500 ms
//!   (plus one raft round) later, at a check whose phase is set by when the server started.
//!   `Promote` also spreads expiries when 1,000 leases or more exist (`lease/lessor.go` lines
//!   481-518); the models
//!   hold a handful of leases, so the model leaves that out, like the per-pass limit.
//! * Clocks. `refresh` starts from `time.Now()`, and Go's `time.Now()` carries two readings, the
//!   wall clock and the process's monotonic clock; comparing or subtracting two such times, and
//!   `time.Until`, use the monotonic readings alone, while `UnixNano` is the wall reading (Go's
//!   `time` package documentation, section "Monotonic Clocks": `src/time/time.go` lines 10-20,
//!   31-33, 48-52 and 67-69 at `golang/go` `62e6931cf797`, read by hand; the section has said so
//!   since Go 1.9, older than the Go etcd 3.4 is built with). So:
//!   - whether a lease has expired is monotonic: `Lease.expired()` is `Remaining() <= 0`
//!     (`lease/lessor.go` lines 843-845) and `Remaining()` is `time.Until(l.expiry)`
//!     (`lease/lessor.go` lines 902-909); `Renew` refuses (waits for the revocation of) a lease
//!     expired in this sense (`lease/lessor.go` lines 412-426);
//!   - when the lessor *looks* at a lease is wall-clock: `Grant`, `Renew` and `Promote` queue it
//!     with `time: l.expiry.UnixNano()` (`lease/lessor.go` lines 316-317, 437-438, 476-477), and
//!     `expireExists` (`lease/lessor.go` lines 687-711) stops at the first item with
//!     `now.UnixNano() < item.time` (`lease/lessor.go` lines 700-701); an item that is due is
//!     queued again at `now + expiredLeaseRetryInterval` on the wall clock (`lease/lessor.go`
//!     line 708) and handed to `findExpiredLeases`, which revokes it only if `l.expired()`
//!     (`lease/lessor.go` lines 730-737). The retry interval is `ReqTimeout()`
//!     (`etcdserver/server.go` line 562), 5 s plus two election timeouts (`etcdserver/config.go`
//!     lines 286-290): 7 s with the defaults ([`EXPIRED_LEASE_RETRY_INTERVAL_MS`]).
//!
//!   A lease is therefore revoked at the first check at which it is both due on the wall clock
//!   and expired on the monotonic clock. A forward wall-clock step on the etcd node never ends a
//!   lease early: the lease becomes due at once, is found unexpired and is looked at again 7 s
//!   (wall) later, so its revocation can come up to 7 s after its deadline. A backward step of
//!   `s` leaves it not yet due: its keys outlive its monotonic deadline by up to `s`, while
//!   keep-alives are already refused. The model keeps both readings per lease
//!   ([`LeaseNow`], [`crate::etcd::store::Store::expire_with_grace`]); the monotonic one is the
//!   etcd node's monotonic clock, which restarts when the node restarts, like a Go process's.
//!
//! The model's choice for the 500 ms check: [`ExpiryChecks`] can model it (checks every
//! `interval_ms` of the monotonic clock from the server's start, `time.After` being a timer,
//! `EtcdConfig::expiry_check_interval_ms`), but it is off by default (interval 0: a lease expires
//! exactly at its deadline, in milliseconds), because (1) that is the earliest instant at which
//! etcd itself can revoke the lease, so every expiry the model produces is one etcd can produce
//! (with checks 500 ms apart, a lease due on the wall clock less than 500 ms before its monotonic
//! deadline can be met by no check in between, so without checks the model lets such a lease
//! wait for its deadline, [`ExpiryChecks::grace_ms`], and queues it again only when it has more
//! left), and it is the adversarial edge for the lease-lock hazard the harness looks for (a
//! holder acting after its lease ended); (2) the simulated etcd's specification asks for
//! millisecond resolution (docs/upstream/etcd.md, "Operations"), and the
//! world's tests pin it; (3) the check only makes expiry later by less than 500 ms, which
//! `EtcdConfig { expiry_check_interval_ms: ETCD_EXPIRY_CHECK_INTERVAL_MS, .. }` lets a scenario
//! explore.

use crate::event::{DeleteCause, Event};

/// etcd's default election timeout (ms): `Promote`'s `extend` after a restart.
pub const DEFAULT_ELECTION_TIMEOUT_MS: i64 = 1_000;

/// The period of etcd 3.4's expiry check (`lease/lessor.go` line 621).
pub const ETCD_EXPIRY_CHECK_INTERVAL_MS: i64 = 500;

/// etcd 3.4's `ExpiredLeasesRetryInterval` with the default election timeout (ms): how long after
/// a check that found a lease due on the wall clock but not expired the lessor looks at it again
/// (`lease/lessor.go` line 708; `ReqTimeout()`, `etcdserver/config.go` lines 286-290, set at
/// `etcdserver/server.go` line 562).
pub const EXPIRED_LEASE_RETRY_INTERVAL_MS: i64 = 7_000;

/// An instant as etcd's lessor reads it: `time.Now()` carries the etcd node's monotonic and wall
/// clocks (ms). A plain `i64` stands for both clocks reading the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseNow {
    /// The monotonic clock (the etcd process's; ms).
    pub mono_ms: i64,
    /// The wall clock (ms, see [`crate::clock`]).
    pub wall_ms: i64,
}

impl From<i64> for LeaseNow {
    fn from(ms: i64) -> Self {
        LeaseNow {
            mono_ms: ms,
            wall_ms: ms,
        }
    }
}

/// The instants (etcd node's monotonic clock, ms) at which the lessor looks for expired leases: every
/// `interval_ms` from `phase_ms` (the server's start), or continuously when `interval_ms` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryChecks {
    /// A check instant (the server's start).
    pub phase_ms: i64,
    /// The period; 0 = expire exactly at the deadline.
    pub interval_ms: i64,
}

impl ExpiryChecks {
    /// The first check at or after `ms`: when a lease with deadline `ms` is noticed.
    pub fn first_at_or_after(&self, ms: i64) -> i64 {
        if self.interval_ms <= 0 {
            return ms;
        }
        let ticks = (ms - self.phase_ms).div_euclid(self.interval_ms);
        let at = self.phase_ms + ticks * self.interval_ms;
        if at < ms {
            at + self.interval_ms
        } else {
            at
        }
    }

    /// The last check at or before `ms`: every lease whose deadline is at or before it has been
    /// noticed by `ms`.
    pub fn last_at_or_before(&self, ms: i64) -> i64 {
        if self.interval_ms <= 0 {
            return ms;
        }
        self.phase_ms + (ms - self.phase_ms).div_euclid(self.interval_ms) * self.interval_ms
    }

    /// Both clocks at the last check at or before `now`. The wall reading is taken as `now`'s
    /// less the monotonic time since the check (exact unless the wall clock was stepped or ran at
    /// another rate within that last period).
    pub fn last_check(&self, now: LeaseNow) -> LeaseNow {
        let mono_ms = self.last_at_or_before(now.mono_ms);
        LeaseNow {
            mono_ms,
            wall_ms: now.wall_ms - (now.mono_ms - mono_ms),
        }
    }

    /// How close to its monotonic deadline a lease that a check finds due may be and still be
    /// left due rather than queued again: with explicit checks none (each check is modelled),
    /// without them etcd's check period (no 500 ms check need fall in a shorter gap).
    pub fn grace_ms(&self) -> i64 {
        if self.interval_ms <= 0 {
            ETCD_EXPIRY_CHECK_INTERVAL_MS
        } else {
            0
        }
    }
}

/// The lessor of the simulated etcd server: its checks, and the task that runs them.
impl super::Server {
    /// Runs the lessor's last check up to now (see the module documentation): revokes the leases
    /// due on the wall clock and expired on the monotonic clock at that check. Returns the check's
    /// instant.
    pub(super) fn expire_due(&self) -> LeaseNow {
        let check = self.checks.last_check(self.lease_now());
        let grace_ms = self.checks.grace_ms();
        let expired = self
            .etcd
            .0
            .store
            .borrow_mut()
            .expire_with_grace(check, grace_ms);
        for (lease, events) in expired {
            self.world
                .emit(self.node(), Event::EtcdLeaseExpire { lease });
            self.publish(events, |_| DeleteCause::LeaseExpired { lease }, "etcd");
        }
        check
    }

    /// The true time of the lessor's next check that can revoke a lease, if any lease exists: the
    /// first check at or after the earliest wall-clock time a lease is due, or after the
    /// monotonic deadline of a lease already due, as of the check at `check`.
    fn next_check_us(&self, check: LeaseNow) -> Option<u64> {
        let node = self.node();
        let (wall_ms, mono_ms) = self.etcd.0.store.borrow().next_wake(check);
        let by_wall = wall_ms.map(|ms| {
            let at = self.world.true_time_for_wall(node, ms * 1000);
            if self.checks.interval_ms <= 0 {
                return at;
            }
            let mono_ms = self.world.clock(node).mono_at(at).div_ceil(1000) as i64;
            self.mono_check_us(mono_ms)
        });
        let by_mono = mono_ms.map(|ms| self.mono_check_us(ms));
        by_wall.into_iter().chain(by_mono).min()
    }

    /// The true time of the first check at or after monotonic reading `mono_ms`.
    fn mono_check_us(&self, mono_ms: i64) -> u64 {
        let check_ms = self.checks.first_at_or_after(mono_ms).max(0) as u64;
        let at = self.world.true_time_for_mono(self.node(), check_ms * 1000);
        at.max(self.world.now_us())
    }

    /// Revokes leases at the lessor's checks (see the module documentation), re-arming whenever a
    /// lease is granted or renewed, or the wall clock is stepped or changes rate.
    pub(super) async fn lessor(&self) {
        let node = self.node();
        let clock_changed = self.world.clock_notify(node);
        loop {
            let (cg, lg) = (
                clock_changed.generation(),
                self.etcd.0.leases_changed.generation(),
            );
            let check = self.expire_due();
            let wake = futures::future::select(
                clock_changed.changed_since(cg),
                self.etcd.0.leases_changed.changed_since(lg),
            );
            match self.next_check_us(check) {
                Some(at) => {
                    let sleep = crate::time::sleep_until(self.world.instant_at(at));
                    futures::future::select(sleep, wake).await;
                }
                None => {
                    wake.await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::store::Store;

    fn at(mono_ms: i64, wall_ms: i64) -> LeaseNow {
        LeaseNow { mono_ms, wall_ms }
    }

    /// A forward wall step: the lease is due on the wall clock long before its monotonic
    /// deadline, is looked at again every 7 s (wall) and revoked at the first look after it.
    #[test]
    fn a_lease_due_on_the_wall_clock_early_is_looked_at_again_until_it_expires() {
        let mut s = Store::default();
        let (id, _) = s.grant(10, at(0, 0));
        // The wall clock jumped 30 s ahead at mono 1 s: due at once, 9 s left.
        assert!(s.expire_with_grace(at(1_000, 31_000), 500).is_empty());
        assert_eq!(s.next_expiry_ms(), Some(38_000));
        assert_eq!(s.time_to_live(id, at(1_000, 31_000)), (9, 10));
        assert!(s.expire_with_grace(at(7_999, 37_999), 500).is_empty());
        assert!(s.expire_with_grace(at(8_000, 38_000), 500).is_empty());
        assert_eq!(s.next_expiry_ms(), Some(45_000));
        assert!(s.expire_with_grace(at(14_999, 44_999), 500).is_empty());
        assert_eq!(s.expire_with_grace(at(15_000, 45_000), 500).len(), 1);
    }

    /// A backward wall step: expired on the monotonic clock, the lease is not revoked before it
    /// is due on the wall clock, and cannot be renewed meanwhile.
    #[test]
    fn a_lease_expired_but_not_due_waits_for_the_wall_clock_and_refuses_renewal() {
        let mut s = Store::default();
        let (id, _) = s.grant(10, at(0, 0));
        // The wall clock stepped 20 s back: at mono 12 s it reads -8 s.
        assert!(s.expire_with_grace(at(12_000, -8_000), 500).is_empty());
        assert_eq!(s.keep_alive(id, at(12_000, -8_000)), 0);
        assert_eq!(s.time_to_live(id, at(12_000, -8_000)), (-1, 0));
        assert_eq!(s.next_wake(at(12_000, -8_000)), (Some(10_000), None));
        assert_eq!(s.expire_with_grace(at(30_000, 10_000), 500).len(), 1);
    }

    /// Due on the wall clock within one check period of its monotonic deadline, a lease is left
    /// due (no 500 ms check need fall in between) and revoked at the deadline; without the grace
    /// it is queued again.
    #[test]
    fn a_lease_due_just_before_its_deadline_waits_for_it_within_the_grace() {
        let mut s = Store::default();
        s.grant(10, at(0, 0));
        assert!(s.expire_with_grace(at(9_700, 10_000), 500).is_empty());
        assert_eq!(s.next_wake(at(9_700, 10_000)), (None, Some(10_000)));
        assert_eq!(s.expire_with_grace(at(10_000, 10_300), 500).len(), 1);
        let mut s = Store::default();
        s.grant(10, at(0, 0));
        assert!(s.expire(at(9_700, 10_000)).is_empty());
        assert_eq!(s.next_wake(at(9_700, 10_000)), (Some(17_000), None));
    }

    /// Checks every 500 ms of the monotonic clock: the last one before now, with the wall
    /// reading it had (no step since).
    #[test]
    fn the_last_check_carries_both_clocks() {
        let checks = ExpiryChecks {
            phase_ms: 100,
            interval_ms: 500,
        };
        assert_eq!(checks.last_check(at(1_350, 51_350)), at(1_100, 51_100));
        assert_eq!(checks.first_at_or_after(1_101), 1_600);
        assert_eq!(checks.grace_ms(), 0);
        let exact = ExpiryChecks {
            phase_ms: 0,
            interval_ms: 0,
        };
        assert_eq!(exact.last_check(at(1_350, 7)), at(1_350, 7));
        assert_eq!(exact.grace_ms(), ETCD_EXPIRY_CHECK_INTERVAL_MS);
    }
}
