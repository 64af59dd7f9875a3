//! Kubernetes leader election: the `coordination.k8s.io/v1` Lease lock and client-go's
//! `tools/leaderelection` elector, as a component of the simulated Kubernetes API that any system
//! (cilium-operator, a user's own controller) can run.
//!
//! # What is modelled, and from where
//!
//! Upstream: kubernetes/client-go @ 32ce75a7d6bc6960fd048d3d1e3b34185418d8c8 (`@cg` below;
//! cilium @ed90dd5 vendors v0.30.3, whose logic is the same save `ReleaseOnCancel`, see
//! [`ReleaseStyle`]), and kubernetes/apimachinery @
//! eed236ceee2c19c2753a3d93ac0631dc20750454 (`@am`) for the `wait` loops the elector is built on.
//!
//! * The lock is a `Lease` object in the simulated API server ([`crate::kube`]): kind
//!   [`LEASE_KIND`], spec [`LeaseSpec`] (holderIdentity, leaseDurationSeconds, acquireTime,
//!   renewTime, leaseTransitions). Every write is the server's compare-and-swap on
//!   `resourceVersion`, so two candidates can never both win the *API* race
//!   (`resourcelock/leaselock.go` `LeaseLock.Update` @cg l. 73-96).
//! * [`LeaderElector::run`] is `LeaderElector.Run` (`leaderelection.go` @cg l. 211-222): `acquire`,
//!   then `renew`, then the stopped-leading hook, which runs even if it never led (l. 176-180, 213).
//! * `acquire` (`leaderelection.go` l. 252-276) is
//!   `wait.JitterUntilWithContext(.., RetryPeriod, JitterFactor, sliding)`: try at once, then wait
//!   `wait.Jitter(RetryPeriod, 1.2)` after each failed try. **`wait.Jitter(d, f)` is
//!   `d + rand*f*d`** (@am `pkg/util/wait/wait.go` `Jitter` l. 92-98;
//!   `jitteredBackoffManagerImpl.getNextBackoff`, @am `backoff.go` l. 442-448): the wait is uniform in
//!   `[RetryPeriod, 2.2 x RetryPeriod)`, i.e. 2-4.4 s with the defaults, not 2-2.4 s as "a jitter
//!   factor of 1.2" is often read; upstream code wins, so this model draws x1-x2.2 (the draw comes
//!   from the process's deterministic rng, [`Proc::rng`]).
//! * `renew` (@cg `leaderelection.go` l. 279-312) is `wait.UntilWithContext(round, RetryPeriod)`
//!   (sliding: the next round starts RetryPeriod after the previous one ended, @am `backoff.go`
//!   l. 171-173, 240-276), each round
//!   `wait.PollUntilContextTimeout(RetryPeriod, RenewDeadline, immediate)` (@am `poll.go`
//!   l. 45-49, @am `loop.go` `loopConditionUntilContext` l. 37-95): try at once, then at each tick of a
//!   fixed RetryPeriod ticker started with the round (@am `backoff.go` `Backoff.Timer` l. 87-95; a
//!   tick that came while a try was in flight is taken at once, later ones are dropped), until the
//!   round's deadline (start + RenewDeadline) cancels the round, aborting a request in flight. A
//!   failed round ends leadership.
//! * `tryAcquireOrRenew` (@cg `leaderelection.go` l. 444-515): the leader's fast path updates the
//!   cached Lease without a read (l. 454-467); otherwise read, create if missing (l. 469-484),
//!   re-observe the record *only if it changed* (l. 486-491), refuse while another holder's lease
//!   is valid (l. 492-495), else update with self as holder and `leaderTransitions + 1`
//!   (l. 497-514).
//! * **Observation is local** (@cg `leaderelection.go` l. 22-28, `isLeaseValid` l. 548-554,
//!   `setObservedRecord` l. 558-564): a record is valid until `observedTime + leaseDurationSeconds` (the duration *in
//!   the record*) on the candidate's OWN monotonic clock, where `observedTime` is when this process
//!   last saw the record change. The timestamps in the record are never compared with a clock.
//!   "Changed" compares the record as `json.Marshal` of the `LeaderElectionRecord` gives it, whose
//!   times are `metav1.Time`, encoded to whole seconds (@am `pkg/apis/meta/v1/time.go`
//!   `Time.MarshalJSON` l. 162-173); see [`LeaderElectionRecord`].
//! * Every lock call has a per-request timeout: `resourcelock.NewFromKubeconfig` sets the client's
//!   timeout to `max(1 s, RenewDeadline/2)` (`resourcelock/interface.go` l. 140-154), which is what
//!   cilium-operator uses (root.go:421-430 @ed90dd5).
//! * `ReleaseOnCancel` (`leaderelection.go` @cg l. 153-158, `renew` l. 308-311, `release`/`tryRelease` l. 319-359): once
//!   the renew loop ends (a clean stop *or* a failed round) the elector reads the Lease and, if it
//!   still believes it holds it, writes a record with an empty holder and `leaseDurationSeconds: 1`,
//!   retrying on conflict, within RenewDeadline. v0.30.3, which cilium vendors, updates its cached
//!   Lease once instead, with no read and no retry ([`ReleaseStyle::UpdateCached`]). A candidate may take an empty-holder lease at once
//!   (l. 492).
//! * Validation as `NewLeaderElector` (l. 76-105): LeaseDuration > RenewDeadline >
//!   JitterFactor x RetryPeriod, all positive, a non-empty identity.
//! * Callbacks (l. 173-185) become a small observable state ([`Snapshot`]) with a
//!   [`Notify`] that fires on every change, and futures to await:
//!   [`LeaderElector::started_leading`] (OnStartedLeading), [`LeaderElector::leadership_lost`] (the
//!   cancellation of the context OnStartedLeading receives), [`LeaderElector::stopped_leading`]
//!   (OnStoppedLeading), [`LeaderElector::new_leader`] (OnNewLeader, reported by
//!   `maybeReportTransition` l. 517-525: after each acquire try and after each renew *round*).
//!
//! Not modelled: coordinated leader election (`tryCoordinatedRenew`, the `strategy` and
//! `preferredHolder` fields), event recording, metrics, the `HealthzAdaptor` wiring (its check is
//! [`LeaderElector::check`]).
//!
//! # Timing that follows (defaults 15 s / 10 s / 2 s, as cilium-operator sets them)
//!
//! * A leader whose renewal last returned at R starts its next round at R+2 s and gives up at
//!   R+12 s. With `release_on_cancel` its leading context is cancelled only after the release
//!   (`Run`'s deferred `cancel` runs after `renew` returns, l. 218-221): a partitioned leader's
//!   release read waits for its request timeout, so it stops leading at R+17 s.
//! * A candidate that last saw the record change at O takes over at its first try after O+15 s,
//!   i.e. by O + 15 s + 2.2 x 2 s + one request; O lags the last renewal by up to one try
//!   interval (4.4 s).
//! * A paused leader (GC, VM freeze) that was between rounds resumes with a renew round whose
//!   deadline is RenewDeadline from the resume. Its first read shows the new holder (`IsLeader`
//!   turns false) but it keeps its leading context until that round fails, at resume + 10 s (+ the
//!   release's read, which finds another holder and writes nothing): two processes lead at once
//!   for RenewDeadline (client-go's package doc, l. 17-20: no fencing). The Lease itself stays
//!   single-owner: the old leader's writes fail the compare-and-swap.
//!
//! # Clocks
//!
//! Each elector measures with its own node's monotonic clock ([`Proc::mono_us`]) and stamps the
//! record's times with its node's wall clock ([`Proc::wall_us`]). Wall-clock offsets, drift and
//! steps change only the `acquireTime`/`renewTime` values, which client-go never compares with a
//! clock. The monotonic clock runs at the true rate unless a [`crate::FaultKind::ClockRate`] fault
//! makes one node's run fast or slow (`sim/src/clock.rs` module doc, `NodeClock::mono_at`): that
//! is the skew-*rate* that LeaseDuration/RenewDeadline are meant to tolerate (l. 30-41). Under it
//! the elector's sleeps ([`Proc::sleep_until_mono`]) and its lease-validity and renew-deadline
//! arithmetic all follow its own clock, so a candidate whose clock runs fast sees another's lease
//! expire early, and a leader whose clock runs slow renews late and keeps leading past the time
//! the others count. Approximations: a sleep armed before a rate change keeps its deadline, and
//! the per-request timeout of a lock call is in true time (see [`Proc::sleep`]). Pauses,
//! partitions, latency and slow or ambiguous API answers are exercised as before.
//!
//! # Store and trace
//!
//! The API server has no namespaces: the lock's name is the Lease's name in one namespace shared
//! with the kubelets' node Leases ([`crate::kube::KubeClient::run_node_heartbeat`]); pick a name no
//! node has (cilium's is [`CILIUM_OPERATOR_LOCK`]). The node lifecycle controller, when enabled,
//! also lists this Lease; with no `Node` of that name it does nothing with it.
//!
//! The elector emits no events of its own (the world's event vocabulary has no leader-election
//! variant): its Lease writes and conflicts appear in the trace as the server's `KubeWrite` and
//! `KubeConflict`, and a system that needs "started/stopped leading" in its trace emits its own
//! events from the hooks.
//!
//! # Using it
//!
//! How cilium-operator runs (root.go:437-470 @ed90dd5, spec §1.3-1.4): the election in one task,
//! the leader-only work (IPAM allocator, CiliumNode informer) started by OnStartedLeading and
//! dropped when the leader context ends, the process ended by OnStoppedLeading (immediately since
//! PR #42920), and a clean shutdown that stops the elector so that it releases the Lease.
//!
//! ```no_run
//! use sim::kube::Kube;
//! use sim::leaderelection::{LeaderElectionConfig, LeaderElector};
//! use sim::world::Proc;
//!
//! fn operator(kube: &Kube, p: &Proc, identity: &str) {
//!     let cfg = LeaderElectionConfig::cilium_operator(identity);
//!     let le = LeaderElector::new(kube, p, cfg).expect("a valid configuration");
//!     let (le2, p2) = (le.clone(), p.clone());
//!     p.spawn("leader-election", async move {
//!         le2.run().await; // RunOrDie
//!         p2.exit(1); // OnStoppedLeading: "Leader election lost"
//!     });
//!     let le2 = le.clone();
//!     p.spawn("ipam", async move {
//!         if !le2.started_leading().await {
//!             return; // stopped before it ever led
//!         }
//!         let ipam = std::pin::pin!(futures::future::pending::<()>()); // the allocator
//!         let lost = std::pin::pin!(le2.leadership_lost());
//!         futures::future::select(ipam, lost).await;
//!     });
//!     let p2 = p.clone();
//!     p.spawn("shutdown", async move {
//!         p2.terminated().await; // SIGTERM: doCleanup cancels the election's context
//!         le.stop(); // ReleaseOnCancel writes the empty holder, then `run` returns
//!     });
//! }
//! ```
//!
//! Dropping the leader-only future is an immediate, complete stop; real code stops when it next
//! checks its context (before PR #42920, cilium-operator's graceful hive shutdown kept it running
//! for a while): a system that models that delay keeps the work running past `leadership_lost`.

use crate::clock::{days_from_civil, format_rfc3339, EPOCH_UNIX_US};
use crate::event::Event;
use crate::kube::{Body, Kube, KubeClient, KubeError, Object, Part};
use crate::sync::Notify;
use crate::world::Proc;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// The kind of the lock object (`coordination.k8s.io/v1` `Lease`).
pub const LEASE_KIND: &str = "Lease";

/// client-go's `JitterFactor` (`leaderelection.go` @cg l. 71-73): the acquire loop waits
/// `RetryPeriod + rand[0,1) * JitterFactor * RetryPeriod` between tries.
pub const JITTER_FACTOR: f64 = 1.2;

/// cilium-operator's `leader-election-lease-duration` default (spec §1.2; "core clients default
/// this value to 15 seconds", `leaderelection.go` @cg l. 132).
pub const LEASE_DURATION: Duration = Duration::from_secs(15);

/// cilium-operator's `leader-election-renew-deadline` default (spec §1.2; client-go l. 137).
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);

/// cilium-operator's `leader-election-retry-period` default (spec §1.2; client-go l. 142).
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// cilium-operator's lock name (`operator/cmd/root.go` l. 267 @ed90dd5, spec §1.1).
pub const CILIUM_OPERATOR_LOCK: &str = "cilium-operator-resource-lock";

mod config;
mod lock;
mod record;
pub use config::*;
pub use lock::*;
pub use record::*;

// ------------------------------------------------------------------------------------------------
// The elector

/// The context of one client-go call: an optional deadline (this node's monotonic µs) and whether
/// a stop cancels it.
#[derive(Clone, Copy)]
struct Ctx {
    deadline_mono_us: Option<u64>,
    stoppable: bool,
}

struct State {
    observed: LeaderElectionRecord,
    observed_raw: Option<RawRecord>,
    observed_time_mono_us: u64,
    reported_leader: String,
    leading: bool,
    led: bool,
    stopped: bool,
    stop_requested: bool,
    tries: u64,
    last_renew_mono_us: Option<u64>,
}

struct Inner {
    cfg: LeaderElectionConfig,
    proc: Proc,
    lock: LeaseLock,
    rng: RefCell<ChaCha8Rng>,
    state: RefCell<State>,
    /// Fires on every change of the [`Snapshot`].
    changed: Notify,
    /// Fires when [`LeaderElector::stop`] is called.
    stop: Notify,
}

/// client-go's `LeaderElector` on a Lease lock, for one process (cheap to clone; clones share
/// the elector). Start it with [`LeaderElector::run`] in a task of the process; guard the
/// leader-only work with [`LeaderElector::started_leading`] and
/// [`LeaderElector::leadership_lost`]; see the module documentation for the timing.
#[derive(Clone)]
pub struct LeaderElector(Rc<Inner>);

impl LeaderElector {
    /// `NewLeaderElector` (l. 76-114) for `proc`, talking to `kube` through the lock client
    /// (requests time out after [`LeaderElectionConfig::lock_request_timeout`]).
    pub fn new(
        kube: &Kube,
        proc: &Proc,
        cfg: LeaderElectionConfig,
    ) -> Result<LeaderElector, ConfigError> {
        cfg.validate()?;
        let lock = LeaseLock::new(
            kube.client(proc),
            &cfg.lock_name,
            &cfg.identity,
            cfg.lock_request_timeout(),
        );
        let rng = proc.rng(&format!("leaderelection/{}", cfg.lock_name));
        Ok(LeaderElector(Rc::new(Inner {
            cfg,
            proc: proc.clone(),
            lock,
            rng: RefCell::new(rng),
            state: RefCell::new(State {
                observed: LeaderElectionRecord::default(),
                observed_raw: None,
                observed_time_mono_us: 0,
                reported_leader: String::new(),
                leading: false,
                led: false,
                stopped: false,
                stop_requested: false,
                tries: 0,
                last_renew_mono_us: None,
            }),
            changed: Notify::new(),
            stop: Notify::new(),
        })))
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.0.cfg
    }

    /// The lock.
    pub fn lock(&self) -> &LeaseLock {
        &self.0.lock
    }

    /// `Run` (l. 211-222): acquire, lead while renewals succeed, then report stopped leading.
    /// Returns when the elector stops leading, or, before it leads, when [`LeaderElector::stop`]
    /// is called. One run per elector (as one `RunOrDie` per cilium-operator process); a task
    /// that dies silently while running it leaves the state as it was (no hook fires).
    pub async fn run(&self) {
        if self.acquire().await {
            self.update(|s| {
                s.led = true;
                // The leader context derives from the run's: already cancelled if stopped.
                s.leading = !s.stop_requested;
            });
            self.renew().await;
            // `defer cancel()` of the leader context.
            self.update(|s| s.leading = false);
        }
        // `defer OnStoppedLeading()`: always, led or not.
        self.update(|s| {
            s.leading = false;
            s.stopped = true;
        });
    }

    /// Cancels the run's context (a clean shutdown: cilium's `doCleanup`, root.go:370-376
    /// @ed90dd5): the leader context ends at once, requests in flight are abandoned, the renew
    /// loop ends and, with `release_on_cancel`, the lease is released; then `run` returns.
    pub fn stop(&self) {
        self.update(|s| {
            s.stop_requested = true;
            s.leading = false;
        });
        self.0.stop.notify();
    }

    /// Everything observable now.
    pub fn snapshot(&self) -> Snapshot {
        let s = self.0.state.borrow();
        Snapshot {
            leading: s.leading,
            led: s.led,
            stopped: s.stopped,
            is_leader: s.observed.holder_identity == self.0.cfg.identity,
            observed: s.observed.clone(),
            observed_time_mono_us: s.observed_time_mono_us,
            reported_leader: s.reported_leader.clone(),
            tries: s.tries,
            last_renew_mono_us: s.last_renew_mono_us,
        }
    }

    /// A signal notified at every change of the [`Snapshot`] (await
    /// `changes().changed_since(generation)`, then read [`LeaderElector::snapshot`]).
    pub fn changes(&self) -> Notify {
        self.0.changed.clone()
    }

    /// When this elector's last acquire or renewal of the lease succeeded (this node's monotonic
    /// clock, µs; `None` before the first): the leader's lease runs `lease_duration` from here
    /// on its own clock.
    pub fn last_renew_mono_us(&self) -> Option<u64> {
        self.0.state.borrow().last_renew_mono_us
    }

    /// Whether the leader context is live (see [`Snapshot::leading`]).
    pub fn leading(&self) -> bool {
        self.0.state.borrow().leading
    }

    /// `IsLeader()` (l. 246-248): the last observed record names this identity.
    pub fn is_leader(&self) -> bool {
        self.0.state.borrow().observed.holder_identity == self.0.cfg.identity
    }

    /// `GetLeader()` (l. 241-243): the holder of the last observed record.
    pub fn get_leader(&self) -> String {
        self.0.state.borrow().observed.holder_identity.clone()
    }

    /// OnStartedLeading: resolves once the elector leads (true), or once `run` has returned
    /// without leading (false).
    pub async fn started_leading(&self) -> bool {
        self.wait_for(|s| s.led || s.stopped).await;
        self.0.state.borrow().led
    }

    /// The cancellation of OnStartedLeading's context: resolves once the elector no longer leads
    /// (at once if it does not lead now). Race the leader-only work against it.
    pub async fn leadership_lost(&self) {
        self.wait_for(|s| !s.leading).await
    }

    /// OnStoppedLeading: resolves once `run` has returned (led or not).
    pub async fn stopped_leading(&self) {
        self.wait_for(|s| s.stopped).await
    }

    /// OnNewLeader: resolves with the reported leader once it differs from `previous` (pass ""
    /// for the first; an empty identity is reported too, as upstream does after a release).
    pub async fn new_leader(&self, previous: &str) -> String {
        self.wait_for(|s| s.reported_leader != previous).await;
        self.0.state.borrow().reported_leader.clone()
    }

    /// `Check` (l. 528-546), the healthz adaptor's test: an error if this elector believes it is
    /// the leader but last observed its record more than `lease_duration + max_tolerable_expired`
    /// ago (it should have stepped down).
    pub fn check(&self, max_tolerable_expired: Duration) -> Result<(), String> {
        if !self.is_leader() {
            return Ok(());
        }
        let since = self.0.proc.mono_us() - self.0.state.borrow().observed_time_mono_us;
        if since > (self.0.cfg.lease_duration + max_tolerable_expired).as_micros() as u64 {
            return Err(format!(
                "failed election to renew leadership on lease {}",
                self.0.cfg.lock_name
            ));
        }
        Ok(())
    }

    /// `tryAcquireOrRenew` (l. 444-515) once, with no deadline and not cancelled by a stop (as
    /// upstream's unit tests call it). `run` calls it in its loops.
    pub async fn try_acquire_or_renew(&self) -> bool {
        self.try_acquire_or_renew_in(Ctx {
            deadline_mono_us: None,
            stoppable: false,
        })
        .await
    }

    /// `maybeReportTransition` (l. 517-525): reports the observed holder to OnNewLeader if it is
    /// not the one reported last.
    pub fn maybe_report_transition(&self) {
        let holder = self.0.state.borrow().observed.holder_identity.clone();
        if holder != self.0.state.borrow().reported_leader {
            self.update(|s| s.reported_leader = holder);
        }
    }

    /// `release` (l. 319-324): within RenewDeadline, `tryRelease` (l. 326-359): read the lease;
    /// if this elector believes it holds it, write an empty holder with `leaseDurationSeconds: 1`
    /// (again after a conflict). True if released or not held.
    pub async fn release(&self) -> bool {
        let ctx = Ctx {
            deadline_mono_us: Some(self.mono_after(self.0.cfg.renew_deadline)),
            stoppable: false,
        };
        loop {
            let old = match self.lock_get(ctx).await {
                Ok(r) => r,
                Err(_) => return false,
            };
            if !self.is_leader() {
                return true;
            }
            let now = self.0.proc.wall_us();
            let rec = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time_us: Some(now),
                renew_time_us: Some(now),
                leader_transitions: old.leader_transitions,
            };
            match self.lock_update(ctx, &rec).await {
                Ok(()) => {
                    self.set_observed(rec);
                    return true;
                }
                // An in-flight renewal moved the version: read again (l. 349-351).
                Err(LockError::Api(KubeError::Conflict)) => continue,
                Err(_) => return false,
            }
        }
    }

    /// v0.30.3's `release` ([`ReleaseStyle::UpdateCached`]): if the last observed record names
    /// this elector, one compare-and-swap of the cached Lease to an empty holder with
    /// `leaseDurationSeconds: 1`, bounded only by the request timeout. True if released or not
    /// held.
    pub async fn release_cached(&self) -> bool {
        if !self.is_leader() {
            return true;
        }
        let ctx = Ctx {
            deadline_mono_us: None,
            stoppable: false,
        };
        let now = self.0.proc.wall_us();
        let rec = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time_us: Some(now),
            renew_time_us: Some(now),
            leader_transitions: self.0.state.borrow().observed.leader_transitions,
        };
        match self.lock_update(ctx, &rec).await {
            Ok(()) => {
                self.set_observed(rec);
                true
            }
            Err(_) => false,
        }
    }

    // -------------------------------------------------------------------------------- loops

    /// `acquire` (l. 252-276): try at once, then after each failure wait
    /// `jitter(RetryPeriod, 1.2)` (sliding) and try again, until a try succeeds (true) or the run
    /// is stopped (false).
    async fn acquire(&self) -> bool {
        let ctx = Ctx {
            deadline_mono_us: None,
            stoppable: true,
        };
        loop {
            if self.stop_requested() {
                return false;
            }
            let ok = self.try_acquire_or_renew_in(ctx).await;
            self.maybe_report_transition();
            if ok {
                return true;
            }
            let u: f64 = self.0.rng.borrow_mut().random();
            let wait = jitter(self.0.cfg.retry_period, JITTER_FACTOR, u);
            self.sleep_or_stop(self.mono_after(wait)).await;
        }
    }

    /// `renew` (l. 279-312): rounds of tries every RetryPeriod until one succeeds or the round's
    /// RenewDeadline passes; RetryPeriod after a successful round, the next. A failed round (or a
    /// stop) ends the loop; then the release, if configured.
    async fn renew(&self) {
        let retry_us = self.0.cfg.retry_period.as_micros() as u64;
        loop {
            if self.stop_requested() {
                break;
            }
            // wait.PollUntilContextTimeout(ctx, RetryPeriod, RenewDeadline, immediate=true, ..)
            let start = self.0.proc.mono_us();
            let deadline = start + self.0.cfg.renew_deadline.as_micros() as u64;
            let ctx = Ctx {
                deadline_mono_us: Some(deadline),
                stoppable: true,
            };
            // The ticker's ticks are at start + k * RetryPeriod; `next_tick` is the first one not
            // yet taken (one that came during a try is taken at once; the ones after it dropped).
            let next_after = |t: u64| start + ((t - start) / retry_us + 1) * retry_us;
            let mut next_tick = start + retry_us;
            let renewed = loop {
                // The condition returns the context's error once it is cancelled (l. 288-290).
                if self.stop_requested() {
                    break false;
                }
                if self.try_acquire_or_renew_in(ctx).await {
                    break true;
                }
                let now = self.0.proc.mono_us();
                if now >= deadline || self.stop_requested() {
                    break false;
                }
                if next_tick > now {
                    // Wait for the tick or the deadline (which wins a tie: the loop checks the
                    // context after every wake-up, loop.go l. 66-80).
                    self.sleep_or_stop(next_tick.min(deadline)).await;
                    let now = self.0.proc.mono_us();
                    if now >= deadline || self.stop_requested() {
                        break false;
                    }
                    next_tick = next_after(now);
                } else {
                    next_tick = next_after(now);
                }
            };
            self.maybe_report_transition();
            if !renewed {
                break;
            }
            // wait.UntilWithContext: the period starts after the round.
            self.sleep_or_stop(self.mono_after(self.0.cfg.retry_period))
                .await;
        }
        if self.0.cfg.release_on_cancel {
            match self.0.cfg.release_style {
                ReleaseStyle::ReadThenUpdate => self.release().await,
                ReleaseStyle::UpdateCached => self.release_cached().await,
            };
        }
    }

    /// `tryAcquireOrRenew` (l. 444-515) under `ctx`.
    async fn try_acquire_or_renew_in(&self, ctx: Ctx) -> bool {
        self.update(|s| s.tries += 1);
        // `now` is read before any request, as upstream's (l. 446): a record observed during
        // this call is valid at `now`.
        let now = self.0.proc.mono_us();
        let wall = self.0.proc.wall_us();
        let mut rec = LeaderElectionRecord {
            holder_identity: self.0.cfg.identity.clone(),
            // int(LeaseDuration / time.Second): whole seconds.
            lease_duration_seconds: self.0.cfg.lease_duration.as_secs() as i32,
            acquire_time_us: Some(wall),
            renew_time_us: Some(wall),
            leader_transitions: 0,
        };

        // 1. The leader's fast path: update the cached Lease without reading it (l. 454-467).
        if self.is_leader() && self.is_lease_valid(now) {
            {
                let s = self.0.state.borrow();
                rec.acquire_time_us = s.observed.acquire_time_us;
                rec.leader_transitions = s.observed.leader_transitions;
            }
            if self.lock_update(ctx, &rec).await.is_ok() {
                self.set_renewed(rec);
                return true;
            }
            // "Failed to update lease optimistically, falling back to slow path".
        }

        // 2. Read the record, or create it (l. 469-484).
        let old = match self.lock_get(ctx).await {
            Ok(r) => r,
            Err(LockError::Api(KubeError::NotFound)) => {
                if self.lock_create(ctx, &rec).await.is_err() {
                    return false;
                }
                self.set_renewed(rec);
                return true;
            }
            Err(_) => return false,
        };

        // 3. Re-observe only a changed record (l. 486-491).
        let raw = old.raw();
        if self.0.state.borrow().observed_raw.as_ref() != Some(&raw) {
            self.set_observed(old.clone());
            self.0.state.borrow_mut().observed_raw = Some(raw);
        }
        if !old.holder_identity.is_empty() && self.is_lease_valid(now) && !self.is_leader() {
            return false;
        }

        // 4. Take or keep it (l. 497-514).
        if self.is_leader() {
            rec.acquire_time_us = old.acquire_time_us;
            rec.leader_transitions = old.leader_transitions;
        } else {
            rec.leader_transitions = old.leader_transitions + 1;
        }
        if self.lock_update(ctx, &rec).await.is_err() {
            return false;
        }
        self.set_renewed(rec);
        true
    }

    // -------------------------------------------------------------------------------- helpers

    /// `isLeaseValid` (l. 548-554): `observedTime + leaseDurationSeconds (of the observed
    /// record) > now`, on this node's monotonic clock.
    fn is_lease_valid(&self, now_mono_us: u64) -> bool {
        let s = self.0.state.borrow();
        let secs = s.observed.lease_duration_seconds.max(0) as u64;
        s.observed_time_mono_us + secs * 1_000_000 > now_mono_us
    }

    /// `setObservedRecord` (l. 558-564): the record, stamped with this node's monotonic clock.
    fn set_observed(&self, rec: LeaderElectionRecord) {
        let now = self.0.proc.mono_us();
        self.update(|s| {
            s.observed = rec;
            s.observed_time_mono_us = now;
        });
    }

    /// A write of this identity's record succeeded (an acquire or a renewal): the record is
    /// observed and the renewal time noted (this node's monotonic clock, [`Snapshot`]).
    fn set_renewed(&self, rec: LeaderElectionRecord) {
        let now = self.0.proc.mono_us();
        self.0.state.borrow_mut().last_renew_mono_us = Some(now);
        self.set_observed(rec);
    }

    /// Changes the state, wakes the waiters, and puts a change of `leading` on the event bus
    /// ([`Event::LeaderStarted`], [`Event::LeaderStopped`]: client-go's OnStartedLeading and the
    /// cancellation of the context it receives).
    fn update(&self, f: impl FnOnce(&mut State)) {
        let (was, is) = {
            let mut s = self.0.state.borrow_mut();
            let was = s.leading;
            f(&mut s);
            (was, s.leading)
        };
        if was != is {
            let (lock, identity) = (
                self.0.cfg.lock_name.as_str().into(),
                self.0.cfg.identity.as_str().into(),
            );
            self.0.proc.emit(if is {
                Event::LeaderStarted { lock, identity }
            } else {
                Event::LeaderStopped { lock, identity }
            });
        }
        self.0.changed.notify();
    }

    async fn wait_for(&self, pred: impl Fn(&State) -> bool) {
        loop {
            let g = self.0.changed.generation();
            if pred(&self.0.state.borrow()) {
                return;
            }
            self.0.changed.changed_since(g).await;
        }
    }

    fn stop_requested(&self) -> bool {
        self.0.state.borrow().stop_requested
    }

    /// Resolves once a stop has been requested.
    async fn stopped_signal(&self) {
        loop {
            let g = self.0.stop.generation();
            if self.stop_requested() {
                return;
            }
            self.0.stop.changed_since(g).await;
        }
    }

    fn mono_after(&self, d: Duration) -> u64 {
        self.0.proc.mono_us() + d.as_micros() as u64
    }

    /// Sleeps until this node's monotonic clock reads `mono_us`, or until a stop.
    async fn sleep_or_stop(&self, mono_us: u64) {
        let sleep = self.0.proc.sleep_until_mono(mono_us);
        let stop = std::pin::pin!(self.stopped_signal());
        futures::future::select(sleep, stop).await;
    }

    /// Runs one lock call under `ctx`: its time limit is the request timeout, cut to the
    /// context's deadline; a stop abandons it if the context is stoppable.
    async fn under<T, F: Future<Output = Result<T, LockError>>>(
        &self,
        ctx: Ctx,
        call: impl FnOnce(Duration) -> F,
    ) -> Result<T, LockError> {
        let mut limit = self.0.lock.request_timeout;
        let mut cut_by_deadline = false;
        if let Some(deadline) = ctx.deadline_mono_us {
            let now = self.0.proc.mono_us();
            if now >= deadline {
                return Err(LockError::Cancelled);
            }
            let left = Duration::from_micros(deadline - now);
            if left <= limit {
                limit = left;
                cut_by_deadline = true;
            }
        }
        if ctx.stoppable && self.stop_requested() {
            return Err(LockError::Cancelled);
        }
        let r = if ctx.stoppable {
            let call = std::pin::pin!(call(limit));
            let stop = std::pin::pin!(self.stopped_signal());
            match futures::future::select(call, stop).await {
                futures::future::Either::Left((r, _)) => r,
                futures::future::Either::Right(_) => return Err(LockError::Cancelled),
            }
        } else {
            call(limit).await
        };
        match r {
            // The context's deadline, not the client's timeout, ended it.
            Err(LockError::Api(KubeError::Timeout)) if cut_by_deadline => Err(LockError::Cancelled),
            r => r,
        }
    }

    async fn lock_get(&self, ctx: Ctx) -> Result<LeaderElectionRecord, LockError> {
        let lock = &self.0.lock;
        self.under(ctx, |limit| lock.get_within(limit)).await
    }

    async fn lock_create(&self, ctx: Ctx, rec: &LeaderElectionRecord) -> Result<(), LockError> {
        let lock = &self.0.lock;
        self.under(ctx, |limit| lock.create_within(rec, limit))
            .await
    }

    async fn lock_update(&self, ctx: Ctx, rec: &LeaderElectionRecord) -> Result<(), LockError> {
        let lock = &self.0.lock;
        self.under(ctx, |limit| lock.update_within(rec, limit))
            .await
    }
}

#[cfg(test)]
mod tests;
