//! The shared mastership stamp and `is_master()` (projectcalico/calico PR 12668).
//!
//! Upstream, the elector in the manager worker writes `time.time()` into a float in shared memory
//! (a `multiprocessing.Value`) when it wins and after every successful refresh, and writes 0 when it
//! stops being master. Every other worker of the same neutron-server calls `is_master()`, which
//! answers true iff the stamp is positive and younger than `MASTER_TIMEOUT` (60 s) by the WALL
//! clock; a stale stamp logs a warning and answers false.
//!
//! Switches: `calico-local-master-flag` restores the historic process-local boolean (set on winning,
//! cleared only by the elector's cleanup paths, no staleness check); `calico-monotonic-stamp` (a fix)
//! stamps and compares with the host's monotonic clock instead of the wall clock.

use super::{Switches, MASTER_TIMEOUT};
use crate::calico::CalicoEvent;
use sim::Proc;
use std::cell::Cell;

/// What `is_master()` concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Stamp is zero (or the flag is clear).
    NotMaster,
    /// Stamp is fresh.
    Master,
    /// Stamp is set but older than `MASTER_TIMEOUT` (`age_us` is its whole age): upstream logs a
    /// warning.
    Stale {
        /// The stamp's age, `now - stamp` on the checking worker's clock (µs; at least
        /// `MASTER_TIMEOUT`).
        age_us: i64,
    },
}

impl Verdict {
    /// The boolean upstream's `is_master()` returns.
    pub fn is_master(self) -> bool {
        self == Verdict::Master
    }
}

/// Pure form of upstream's `is_master()`: `stamp > 0 and now - stamp < MASTER_TIMEOUT`.
pub fn is_master(stamp_us: i64, now_us: i64) -> Verdict {
    if stamp_us <= 0 {
        return Verdict::NotMaster;
    }
    let age_us = now_us - stamp_us;
    if age_us < MASTER_TIMEOUT.as_micros() as i64 {
        Verdict::Master
    } else {
        Verdict::Stale { age_us }
    }
}

/// The memory a neutron-server shares between its worker processes.
#[derive(Default)]
pub struct Shared {
    stamp_us: Cell<i64>,
    flag: Cell<bool>,
}

impl Shared {
    fn clock_us(proc: &Proc, sw: &Switches) -> i64 {
        if sw.monotonic_stamp {
            // Time since boot, so +1 µs keeps a stamp taken at boot positive.
            proc.mono_us() as i64 + 1
        } else {
            // `time.time()`: Unix time, always positive (sim wall readings are relative to 2026).
            sim::clock::EPOCH_UNIX_US + proc.wall_us()
        }
    }

    /// The elector won or refreshed: stamp now.
    pub fn set(&self, proc: &Proc, sw: &Switches) {
        let now = Self::clock_us(proc, sw);
        self.stamp_us.set(now);
        self.flag.set(true);
        proc.emit(CalicoEvent::CalicoStamp { stamp_us: now });
    }

    /// The elector stopped being master (its cleanup paths).
    pub fn clear(&self, proc: &Proc) {
        if self.stamp_us.get() != 0 || self.flag.get() {
            self.stamp_us.set(0);
            self.flag.set(false);
            proc.emit(CalicoEvent::CalicoStamp { stamp_us: 0 });
        }
    }

    /// `is_master()` as the worker in `proc` sees it.
    pub fn verdict(&self, proc: &Proc, sw: &Switches) -> Verdict {
        if sw.local_master_flag {
            return if self.flag.get() {
                Verdict::Master
            } else {
                Verdict::NotMaster
            };
        }
        if sw.mutant_is_master_ignores_age && self.stamp_us.get() > 0 {
            return Verdict::Master;
        }
        is_master(self.stamp_us.get(), Self::clock_us(proc, sw))
    }
}

/// Polls `is_master()` as a master-only loop does, reporting a stale stamp once per episode
/// (upstream logs a warning at every stale check).
pub struct MasterCheck {
    last: Cell<Option<Verdict>>,
}

impl Default for MasterCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl MasterCheck {
    /// A checker that has not checked yet.
    pub fn new() -> Self {
        MasterCheck {
            last: Cell::new(None),
        }
    }

    /// `is_master()` now.
    pub fn check(&self, proc: &Proc, shared: &Shared, sw: &Switches) -> bool {
        let v = shared.verdict(proc, sw);
        if let Verdict::Stale { age_us } = v {
            if !matches!(self.last.get(), Some(Verdict::Stale { .. })) {
                proc.emit(CalicoEvent::CalicoStaleStamp {
                    age_ms: age_us / 1000,
                });
            }
        }
        self.last.set(Some(v));
        if v.is_master() {
            let pid = proc.pid();
            proc.emit(CalicoEvent::CalicoIsMaster { pid });
        }
        v.is_master()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_semantics() {
        assert_eq!(is_master(0, 100), Verdict::NotMaster);
        assert_eq!(is_master(-5, 100), Verdict::NotMaster);
        assert_eq!(is_master(1_000_000, 60_999_999), Verdict::Master);
        assert_eq!(
            is_master(1_000_000, 61_000_000),
            Verdict::Stale { age_us: 60_000_000 }
        );
        // A wall clock stepped backward makes an old stamp look fresh: the hazard upstream accepts.
        assert_eq!(is_master(100_000_000, 40_000_000), Verdict::Master);
    }
}
