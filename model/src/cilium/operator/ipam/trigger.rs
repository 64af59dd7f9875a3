//! cilium's `pkg/trigger` (`trigger.go` at ed90dd5ea4c754a04a8135c6bb9c8afe29b75811): a function
//! run by its own task whenever it was asked to, at most once per minimum interval, with every
//! request made before a run starts folded into that run.
//!
//! Upstream's `waiter` (trigger.go:175-220): it takes and clears the pending flag (l. 179-183);
//! if set, it sleeps until `lastTrigger + MinInterval` (`needsDelay`, l. 129-136, 187-189), stamps
//! `lastTrigger` (l. 192) and calls the function in its own goroutine, synchronously (l. 201); a
//! request during the sleep or the run sets the flag again and wakes the waiter (`TriggerWithReason`,
//! l. 142-164; the wake-up channel holds one), so it runs once more afterwards. `NewTrigger` starts
//! with `lastTrigger = now - MinInterval` (l. 118-120): the first request runs at once.
//! `Shutdown` closes the waiter (l. 171-173).

use sim::sync::Notify;
use sim::Proc;
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// One trigger: pending flag, minimum interval, the waiter's last run.
pub(crate) struct Trigger {
    min_us: u64,
    pending: Cell<bool>,
    closed: Cell<bool>,
    /// When the last run started (monotonic µs); `None` before the first.
    last: Cell<Option<u64>>,
    wake: Notify,
}

impl Trigger {
    /// A trigger whose runs start at least `min` apart.
    pub(crate) fn new(min: Duration) -> Rc<Trigger> {
        Rc::new(Trigger {
            min_us: min.as_micros() as u64,
            pending: Cell::new(false),
            closed: Cell::new(false),
            last: Cell::new(None),
            wake: Notify::new(),
        })
    }

    /// `Trigger()`: ask for a run (folded into a pending one).
    pub(crate) fn trigger(&self) {
        self.pending.set(true);
        self.wake.notify();
    }

    /// `Shutdown()`: the waiter ends (after a run in progress).
    pub(crate) fn shutdown(&self) {
        self.closed.set(true);
        self.wake.notify();
    }

    /// The waiter: runs `f` for each folded batch of requests until shut down.
    pub(crate) async fn run<F, Fut>(self: Rc<Self>, proc: Proc, mut f: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            if self.closed.get() {
                return;
            }
            if self.pending.replace(false) {
                if let Some(last) = self.last.get() {
                    let due = last + self.min_us;
                    let now = proc.mono_us();
                    if now < due {
                        proc.sleep(Duration::from_micros(due - now)).await;
                    }
                }
                self.last.set(Some(proc.mono_us()));
                f().await;
                continue;
            }
            let seen = self.wake.generation();
            self.wake.changed_since(seen).await;
        }
    }
}

/// Upstream's own tests of the trigger (`pkg/trigger/trigger_test.go` at ed90dd5), in simulated
/// time.
#[cfg(test)]
mod tests {
    use super::*;
    use sim::monitor::NullMonitor;
    use sim::runtime::{on_fresh_thread, simulate, SimConfig};
    use sim::world::Host;
    use sim::{NetSpec, NodeSpec};
    use std::cell::RefCell;

    /// Triggers a trigger of minimum interval `min`, whose function takes `run_takes`, five times
    /// 20 ms apart; the runs started by then (as upstream counts right after its loop).
    fn five_triggers(min: Duration, run_takes: Duration) -> u32 {
        on_fresh_thread(move || {
            let count = Rc::new(RefCell::new(0u32));
            let after_loop = Rc::new(RefCell::new(None));
            let seen = after_loop.clone();
            let cfg = SimConfig {
                seed: 1,
                nodes: vec![NodeSpec {
                    name: "n".into(),
                    offset_us: 0,
                    drift_ppm: 0,
                }],
                net: NetSpec::fixed(1_000),
                schedule: vec![],
                fault_window_ms: 2_000,
                liveness_ms: 0,
                keep_trace: false,
            };
            simulate(cfg, Box::new(NullMonitor), move |world| {
                let (count, after_loop) = (count.clone(), after_loop.clone());
                world.set_services(
                    0,
                    Rc::new(move |host: &Host| {
                        let proc = host.spawn_process("test");
                        let tr = Trigger::new(min);
                        let (p, c) = (proc.clone(), count.clone());
                        proc.spawn(
                            "trigger",
                            tr.clone().run(proc.clone(), move || {
                                *c.borrow_mut() += 1;
                                let p = p.clone();
                                async move { p.sleep(run_takes).await }
                            }),
                        );
                        let (p, c, out) = (proc.clone(), count.clone(), after_loop.clone());
                        proc.spawn("test", async move {
                            for _ in 0..5 {
                                tr.trigger();
                                p.sleep(Duration::from_millis(20)).await;
                            }
                            *out.borrow_mut() = Some(*c.borrow());
                            tr.shutdown();
                        });
                    }),
                );
            });
            let n = *seen.borrow();
            n.expect("the loop ended")
        })
        .expect("the simulation ran")
    }

    /// `TestMinInterval` (trigger_test.go:35-64): five requests 20 ms apart, minimum interval
    /// 500 ms: one run so far.
    #[test]
    fn upstream_cilium_trigger_min_interval() {
        assert_eq!(five_triggers(Duration::from_millis(500), Duration::ZERO), 1);
        // The mutation check: without a minimum interval every request runs.
        assert_eq!(five_triggers(Duration::ZERO, Duration::ZERO), 5);
    }

    /// `TestLongTrigger` (trigger_test.go:66-95): no minimum interval, a function that takes 1 s,
    /// five requests 20 ms apart: one run so far (the others fold into the next).
    #[test]
    fn upstream_cilium_trigger_long_trigger() {
        assert_eq!(five_triggers(Duration::ZERO, Duration::from_secs(1)), 1);
    }
}
