//! Sleeping and timeouts on the simulated clock, with one timer per sleep.
//!
//! madsim's `Sleep` adds a new entry to the runtime's timer heap every time it is polled while
//! pending, and a timer cannot be cancelled: a sleep inside `timeout` or `select` that is polled
//! on every wake-up of its task leaves several entries, and each of them, when its time comes,
//! wakes the task again, whatever it is waiting for by then (which re-registers *that* sleep).
//! In a simulation where most tasks wait on "a message or a timeout" this multiplied the timer
//! work and the spurious polls (measured: about 1.4 timer entries per sleep and a third more polls
//! than needed).
//!
//! The [`Sleep`] here registers with madsim once. The registered wake-up goes through a small
//! shared cell that forwards it to whichever waker polled the sleep last, and to nobody once the
//! sleep is dropped or has fired, so a timer left behind by a finished `timeout` wakes no task.
//! The deadline semantics are madsim's (at least 1 ms, as `tokio::time::sleep`).

use crate::sync::Relay;
use madsim::time::Instant;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

thread_local! {
    /// Timers registered with madsim on this thread (measurement only: a run reads the difference
    /// over its own span for the benchmark's baseline; nothing in a simulation depends on it).
    static ARMED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Timers registered with madsim on this thread so far.
pub(crate) fn armed() -> u64 {
    ARMED.with(|a| a.get())
}

thread_local! {
    /// The clock of the simulation running on this thread, if [`RunClock::enter`] set it.
    static RUN_CLOCK: std::cell::RefCell<Option<Clock>> = const { std::cell::RefCell::new(None) };
}

/// The runtime's time handle and one madsim sleep kept for registering timers.
///
/// Each madsim sleep holds a clone of the runtime's time handle (two `Arc`s), and creating one
/// looks the handle up, clones it and drops the copy: eight atomic reference-count operations per
/// timer, before the timer itself. A run registers every timer through this one sleep instead,
/// moved to each timer's deadline (`reset`) and polled: madsim then adds exactly the timer a fresh
/// sleep would, at the same instant, with the same callback.
struct Clock {
    time: madsim::time::TimeHandle,
    registrar: madsim::time::Sleep,
}

/// Marks the simulation running on the current thread, for the span of the guard: its sleeps
/// and timers go through one shared clock (see [`Clock`]). Outside one (a test on a bare madsim
/// runtime), each sleep uses a madsim sleep of its own, as before.
pub(crate) struct RunClock(());

impl RunClock {
    /// Must be called inside the run's madsim runtime.
    #[allow(clippy::disallowed_methods)] // the one place that creates madsim sleeps
    pub(crate) fn enter() -> RunClock {
        let time = madsim::time::TimeHandle::current();
        let registrar = time.sleep(Duration::ZERO);
        RUN_CLOCK.with(|c| *c.borrow_mut() = Some(Clock { time, registrar }));
        RunClock(())
    }
}

impl Clock {
    /// The current instant.
    fn now(&self) -> Instant {
        self.time.now_instant()
    }
}

impl Drop for RunClock {
    fn drop(&mut self) {
        let _ = RUN_CLOCK.try_with(|c| c.borrow_mut().take());
    }
}

/// Runs `f` with the run's clock, or with a fresh one outside a run.
#[allow(clippy::disallowed_methods)] // the one place that creates madsim sleeps
fn with_clock<R>(f: impl FnOnce(&madsim::time::TimeHandle, &mut madsim::time::Sleep) -> R) -> R {
    RUN_CLOCK.with(|c| match &mut *c.borrow_mut() {
        Some(Clock {
            time, registrar, ..
        }) => f(time, registrar),
        None => {
            let time = madsim::time::TimeHandle::current();
            let mut registrar = time.sleep(Duration::ZERO);
            f(&time, &mut registrar)
        }
    })
}

/// Simulated time now.
#[allow(clippy::disallowed_methods)] // outside a run: madsim's own clock
pub(crate) fn now() -> Instant {
    RUN_CLOCK.with(|c| match &*c.borrow() {
        Some(clock) => clock.now(),
        None => madsim::time::TimeHandle::current().now_instant(),
    })
}

/// madsim's shortest sleep: a deadline is at least this far ahead when a sleep is made.
const MIN_SLEEP: Duration = Duration::from_millis(1);

/// Registers one madsim timer at `deadline` that wakes `waker`; false (and nothing registered) if
/// the deadline has passed.
fn register(deadline: Instant, waker: &Waker) -> bool {
    with_clock(|_, registrar| {
        Pin::new(&mut *registrar).reset(deadline);
        let armed = Pin::new(registrar)
            .poll(&mut Context::from_waker(waker))
            .is_pending();
        if armed {
            ARMED.with(|a| a.set(a.get() + 1));
        }
        armed
    })
}

/// A sleep until a simulated instant that adds one timer, however often it is polled.
///
/// [`Sleep::reset`] to a later deadline keeps the timer already registered: it goes off early,
/// and the poll it causes registers one for the new deadline. A deadline pushed forward on every
/// event (an idle timeout) thus costs one timer per period, not one per event.
pub struct Sleep {
    /// When it fires (madsim's deadline rules: at least [`MIN_SLEEP`] from its making; a reset
    /// moves it as given).
    deadline: Instant,
    /// The registered timer: its instant (at most the deadline) and where it delivers (the relay
    /// wakes whichever task polled the sleep last, and nobody once the sleep lets go of it).
    armed: Option<(Instant, Relay)>,
}

/// Sleeps for `d` of simulated time (at least 1 ms).
pub fn sleep(d: Duration) -> Sleep {
    let now = now();
    Sleep::new((now + d).max(now + MIN_SLEEP))
}

/// Sleeps until `deadline` (at least 1 ms from now).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(deadline.max(now() + MIN_SLEEP))
}

/// Arms one timer that wakes `waker` at `deadline` (at least 1 ms from now, as a sleep). Nothing
/// cancels it: for a sender that knows when its receiver must look again (a datagram's arrival),
/// so the receiver is woken once, at that time, and not also when the item is queued.
pub fn wake_at(deadline: Instant, waker: &Waker) {
    // At least 1 ms ahead, so this always registers the timer.
    register(deadline.max(now() + MIN_SLEEP), waker);
}

/// `future`'s output, or `Err(())` if `d` of simulated time passes first. Like madsim's `timeout`,
/// the future is polled before the clock is checked.
pub async fn timeout<F: Future>(d: Duration, future: F) -> Result<F::Output, Elapsed> {
    let mut future = std::pin::pin!(future);
    let mut sleep = sleep(d);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        Pin::new(&mut sleep).poll(cx).map(|()| Err(Elapsed))
    })
    .await
}

/// The error of [`timeout`]: the time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl Sleep {
    fn new(deadline: Instant) -> Self {
        Sleep {
            deadline,
            armed: None,
        }
    }

    /// When it fires.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline. A later one keeps the registered timer (see the type's doc); an
    /// earlier one drops it, and the next poll registers one for the new deadline.
    pub fn reset(&mut self, deadline: Instant) {
        if deadline == self.deadline {
            return;
        }
        self.deadline = deadline;
        if self.armed.as_ref().is_some_and(|(at, _)| *at > deadline) {
            self.disarm();
        }
    }

    fn disarm(&mut self) {
        if let Some((_, r)) = self.armed.take() {
            // A timer yet to go off keeps the relay (madsim holds its waker) and wakes nobody.
            r.close();
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &self.armed {
            // The timer is still to go off, at or before the deadline.
            Some((_, r)) if !r.woken() => {
                if now() >= self.deadline {
                    self.disarm();
                    return Poll::Ready(());
                }
                r.register(cx.waker());
            }
            // It went off at the deadline: the clock has reached it (the usual end of a sleep,
            // polled by that timer's wake-up; no need to read the clock).
            Some((at, _)) if *at == self.deadline => {
                self.disarm();
                return Poll::Ready(());
            }
            _ => {
                // None yet, or it went off early (the deadline moved later since).
                self.disarm();
                // Due: ready without a trip to madsim, which would find the same (its sleep is
                // ready, registering nothing, once the clock reaches the deadline).
                if now() >= self.deadline {
                    return Poll::Ready(());
                }
                let relay = Relay::new();
                // Lent: madsim keeps its own clone. Not registered if the deadline has passed
                // (cannot happen after the check above; madsim's rule decides).
                if !register(self.deadline, &relay.waker()) {
                    return Poll::Ready(());
                }
                relay.register(cx.waker());
                self.armed = Some((self.deadline, relay));
            }
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Runs `f` in a fresh runtime, counting how often its task is polled.
    fn polls_of<F: Future<Output = ()> + 'static>(f: F) -> u32 {
        let rt = madsim::runtime::Runtime::with_seed_and_config(7, madsim::Config::default());
        let n = Rc::new(Cell::new(0));
        let m = n.clone();
        let mut f = Box::pin(f);
        rt.block_on(std::future::poll_fn(move |cx| {
            m.set(m.get() + 1);
            f.as_mut().poll(cx)
        }));
        n.get()
    }

    /// A mix of sleeps, resets, timeouts and a bare timer, with or without a [`RunClock`]: the
    /// instant (ms) after each step, the task's polls and the timers registered.
    fn mix(run_clock: bool) -> (Vec<u128>, u32, u64) {
        let armed_before = armed();
        let log = Rc::new(std::cell::RefCell::new(Vec::new()));
        let l = log.clone();
        let polls = polls_of(async move {
            let _clock = run_clock.then(RunClock::enter);
            let start = madsim::time::Instant::now();
            let step = || l.borrow_mut().push(start.elapsed().as_millis());
            sleep(Duration::ZERO).await; // 1 ms, madsim's shortest
            step();
            sleep(Duration::from_millis(7)).await;
            step();
            sleep_until(start).await; // in the past: 1 ms too
            step();
            let mut s = sleep(Duration::from_secs(5));
            s.reset(madsim::time::Instant::now() + Duration::from_secs(2));
            (&mut s).await;
            step();
            let mut s = sleep(Duration::from_secs(1));
            let mut first = true;
            std::future::poll_fn(|cx| {
                if first {
                    first = false;
                    // Armed at 1 s, then moved later: it goes off early and re-arms.
                    assert!(Pin::new(&mut s).poll(cx).is_pending());
                    s.reset(s.deadline() + Duration::from_secs(2));
                }
                Pin::new(&mut s).poll(cx)
            })
            .await;
            step();
            assert!(
                timeout(Duration::from_secs(3), sleep(Duration::from_secs(1)))
                    .await
                    .is_ok()
            );
            step();
            assert!(
                timeout(Duration::from_secs(1), sleep(Duration::from_secs(3)))
                    .await
                    .is_err()
            );
            step();
            let at = madsim::time::Instant::now() + Duration::from_millis(4);
            let mut first = true;
            std::future::poll_fn(|cx| {
                if std::mem::take(&mut first) {
                    wake_at(at, cx.waker());
                    return Poll::Pending;
                }
                Poll::Ready(())
            })
            .await;
            step();
            // Let the timers left behind go off.
            sleep(Duration::from_secs(10)).await;
        });
        let steps = log.borrow().clone();
        (steps, polls, armed() - armed_before)
    }

    #[test]
    fn sleeps_do_the_same_through_the_run_clock_as_through_their_own() {
        let (steps, polls, timers) = mix(true);
        assert_eq!((steps.clone(), polls, timers), mix(false));
        assert_eq!(steps, [1, 8, 9, 2009, 5009, 6009, 7009, 7013]);
        assert!(timers >= 9, "{timers}");
    }

    #[test]
    fn the_run_clock_ends_with_its_guard() {
        mix(true);
        assert!(RUN_CLOCK.with(|c| c.borrow().is_none()));
        // A later runtime on the same thread must not reach the first one's clock (its sleeps
        // would never wake, and madsim would stop with every task blocked).
        assert_eq!(mix(false).0.len(), 8);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the inner future is a plain madsim task waking itself
    fn a_timeout_that_was_beaten_wakes_nobody_later() {
        let polls = polls_of(async {
            let start = madsim::time::Instant::now();
            // Woken three times before it is ready; the timeout is polled each time.
            let r = timeout(Duration::from_secs(10), async {
                for _ in 0..3 {
                    madsim::time::sleep(Duration::from_secs(1)).await;
                }
            })
            .await;
            assert!(r.is_ok());
            // Madsim's own sleep left four timers at 10 s behind: one spurious wake here.
            sleep(Duration::from_secs(20)).await;
            assert_eq!(start.elapsed().as_secs(), 23);
        });
        // The first poll, three wake-ups in the timeout, one at the end of the long sleep.
        assert_eq!(polls, 5);
    }

    #[test]
    fn sleeps_after_a_beaten_timeout_end_on_time_and_wake_once() {
        let polls = polls_of(async move {
            let start = madsim::time::Instant::now();
            // Beaten at 1 s: the timeout's timer stays armed until 10 s and wakes nobody then.
            let r = timeout(Duration::from_secs(10), sleep(Duration::from_secs(1))).await;
            assert!(r.is_ok());
            sleep(Duration::from_secs(20)).await;
            for _ in 0..3 {
                sleep(Duration::from_secs(1)).await;
            }
            assert_eq!(start.elapsed().as_secs(), 24);
        });
        // The first poll, 1 s, 21 s, 22 s, 23 s, 24 s.
        assert_eq!(polls, 6);
    }

    #[test]
    fn a_deadline_pushed_later_keeps_its_timer_until_it_goes_off() {
        polls_of(async {
            let start = madsim::time::Instant::now();
            let before = armed();
            let mut s = sleep(Duration::from_secs(1));
            assert!(futures::poll!(&mut s).is_pending());
            // An idle timeout pushed forward five times: still the one timer, at 1 s.
            for k in 2..=6 {
                s.reset(start + Duration::from_secs(k));
            }
            assert!(futures::poll!(&mut s).is_pending());
            assert_eq!(armed() - before, 1);
            // It goes off at 1 s; that poll arms the second, at 6 s, where the sleep ends.
            s.await;
            assert_eq!(start.elapsed().as_secs(), 6);
            assert_eq!(armed() - before, 2);
            // Moved earlier, it needs a new timer, and ends then.
            let mut s = sleep(Duration::from_secs(10));
            assert!(futures::poll!(&mut s).is_pending());
            s.reset(madsim::time::Instant::now() + Duration::from_secs(2));
            s.await;
            assert_eq!(start.elapsed().as_secs(), 8);
            assert_eq!(armed() - before, 4);
        });
    }

    #[test]
    fn sleeps_and_timeouts_keep_madsims_deadlines() {
        polls_of(async {
            let start = madsim::time::Instant::now();
            let r = timeout(Duration::from_secs(2), futures::future::pending::<()>()).await;
            assert_eq!(r, Err(Elapsed));
            assert_eq!(start.elapsed().as_millis(), 2000);
            // Zero is at least a millisecond, as with madsim (and tokio).
            sleep(Duration::ZERO).await;
            assert_eq!(start.elapsed().as_millis(), 2001);
            let mut s = sleep(Duration::from_secs(5));
            s.reset(madsim::time::Instant::now() + Duration::from_secs(1));
            s.await;
            assert_eq!(start.elapsed().as_millis(), 3001);
        });
    }
}
