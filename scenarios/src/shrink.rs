//! Shrinking a failing run to a smaller story that still violates the SAME invariant.
//!
//! The seed stays fixed (it drives scheduling and latencies); what shrinks is the data around it:
//! 1. fewer faults: remove chunks of the schedule, halving the chunk size down to single faults
//!    (delta debugging);
//! 2. shorter faults: halve each fault's duration (partitions, pauses, outages, stalls, ...);
//! 3. smaller faults: halve clock steps, drifts, extra latencies, slowdowns and failure percentages;
//! 4. fewer nodes: drop the last neutron host or compute host while no fault names it and the
//!    scenario's minimum allows it.
//!
//! Each pass tries candidates in a fixed order and keeps the first that still violates the same
//! invariant. Candidates run in parallel in batches, but the winner is always the lowest-ordered
//! success of a batch, so the result does not depend on the number of threads: shrinking is
//! deterministic. A candidate is never larger than the current best, so the schedule never grows.

use crate::scenario::RunSpec;
use sim::runtime::pool;
use sim::{Fault, FaultKind, Outcome};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Upper bound on candidate runs (a shrink always terminates quickly).
pub const MAX_RUNS: usize = 2_000;

/// What a shrink produced.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing spec found.
    pub spec: RunSpec,
    /// Its outcome (the same invariant as the original).
    pub outcome: Outcome,
    /// Faults before and after.
    pub before_faults: usize,
    /// Faults in the shrunk spec's schedule.
    pub after_faults: usize,
    /// Candidate runs tried.
    pub runs: usize,
}

/// Shrinks `spec`, whose run violated `invariant`, using `jobs` threads.
pub fn shrink(spec: &RunSpec, outcome: &Outcome, jobs: usize) -> Shrunk {
    let invariant = outcome
        .violation
        .as_ref()
        .map(|v| v.invariant.clone())
        .unwrap_or_default();
    let mut s = Shrinker {
        best: spec.clone(),
        best_outcome: outcome.clone(),
        invariant,
        jobs: jobs.max(1),
        runs: 0,
    };
    s.best.keep_trace = false;
    loop {
        let before = (s.best.schedule.clone(), s.best.options.clone());
        s.remove_faults();
        s.shorten();
        s.fewer_nodes();
        if (s.best.schedule.clone(), s.best.options.clone()) == before || s.runs >= MAX_RUNS {
            break;
        }
    }
    Shrunk {
        before_faults: spec.schedule.len(),
        after_faults: s.best.schedule.len(),
        spec: s.best,
        outcome: s.best_outcome,
        runs: s.runs,
    }
}

struct Shrinker {
    best: RunSpec,
    best_outcome: Outcome,
    invariant: String,
    jobs: usize,
    runs: usize,
}

impl Shrinker {
    /// Runs candidates in order, in batches; adopts the first that fails the same way. Returns
    /// whether one did.
    fn try_in_order(&mut self, candidates: Vec<RunSpec>) -> bool {
        for batch in candidates.chunks(self.jobs) {
            if self.runs >= MAX_RUNS {
                return false;
            }
            self.runs += batch.len();
            let results: Arc<Mutex<Vec<Option<Outcome>>>> =
                Arc::new(Mutex::new(vec![None; batch.len()]));
            let (b, r, inv) = (batch.to_vec(), results.clone(), self.invariant.clone());
            pool(
                batch.len(),
                self.jobs,
                Arc::new(AtomicBool::new(false)),
                move |i| b[i].run(),
                move |i, out| {
                    if let Ok(o) = out {
                        if o.violation.as_ref().is_some_and(|v| v.invariant == inv) {
                            r.lock().unwrap()[i] = Some(o);
                        }
                    }
                },
            );
            let results = Arc::try_unwrap(results).unwrap().into_inner().unwrap();
            if let Some((i, o)) = results
                .into_iter()
                .enumerate()
                .find_map(|(i, o)| o.map(|o| (i, o)))
            {
                self.best = batch[i].clone();
                self.best_outcome = o;
                return true;
            }
        }
        false
    }

    fn with_schedule(&self, schedule: Vec<Fault>) -> RunSpec {
        RunSpec {
            schedule,
            ..self.best.clone()
        }
    }

    fn remove_faults(&mut self) {
        let mut k = self.best.schedule.len().div_ceil(2).max(1);
        loop {
            let n = self.best.schedule.len();
            if n == 0 {
                return;
            }
            let candidates: Vec<RunSpec> = (0..n)
                .step_by(k)
                .map(|i| {
                    let mut s = self.best.schedule.clone();
                    s.drain(i..(i + k).min(n));
                    self.with_schedule(s)
                })
                .collect();
            if !self.try_in_order(candidates) {
                if k == 1 {
                    return;
                }
                k = k.div_ceil(2);
            } else {
                k = k.min(self.best.schedule.len().div_ceil(2)).max(1);
            }
        }
    }

    /// One candidate per fault that can get shorter or smaller, repeated while one succeeds.
    fn shorten(&mut self) {
        loop {
            let candidates: Vec<RunSpec> = (0..self.best.schedule.len())
                .filter_map(|i| {
                    let smaller = smaller(&self.best.schedule[i])?;
                    let mut s = self.best.schedule.clone();
                    s[i] = smaller;
                    Some(self.with_schedule(s))
                })
                .collect();
            if candidates.is_empty() || !self.try_in_order(candidates) {
                return;
            }
        }
    }

    /// The system's smaller options (fewer nodes, say), repeated while one still fails.
    fn fewer_nodes(&mut self) {
        loop {
            let candidates: Vec<RunSpec> = self
                .best
                .scenario
                .smaller_options(&self.best.options, &self.best.schedule)
                .into_iter()
                .map(|options| RunSpec {
                    options,
                    ..self.best.clone()
                })
                .collect();
            if candidates.is_empty() || !self.try_in_order(candidates) {
                return;
            }
        }
    }
}

/// A smaller version of a fault, if there is one: half the duration (down to 1 s), or half the
/// magnitude.
fn smaller(f: &Fault) -> Option<Fault> {
    use FaultKind::*;
    let half = |x: u64, min: u64| (x / 2 >= min).then_some(x / 2);
    let half_i = |x: i64, min: i64| (x.abs() / 2 >= min).then_some(x / 2);
    let mut g = f.clone();
    let magnitude = match &mut g.kind {
        ClockStep { delta_ms, .. } => half_i(*delta_ms, 1_000).map(|d| *delta_ms = d),
        Drift { ppm, .. } => half_i(*ppm, 10).map(|d| *ppm = d),
        Latency { extra_ms, .. } => half(*extra_ms, 10).map(|d| *extra_ms = d),
        Loss { permille, .. } => half(*permille as u64, 5).map(|d| *permille = d as u32),
        ServiceSlow { extra_ms, .. } => half(*extra_ms, 10).map(|d| *extra_ms = d),
        ServiceAmbiguous { percent, .. } | ServiceGarbled { percent, .. } => {
            half(*percent as u64, 5).map(|d| *percent = d as u32)
        }
        _ => None,
    };
    if magnitude.is_some() {
        return Some(g);
    }
    // Durations: instantaneous faults stay instantaneous; others shrink toward 1 s.
    half(f.dur_ms, 1_000).map(|d| Fault {
        dur_ms: d,
        ..f.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_halves_magnitude_then_duration() {
        let f = Fault {
            at_ms: 1,
            dur_ms: 8_000,
            kind: FaultKind::Latency {
                node: "h1".into(),
                extra_ms: 40,
            },
        };
        let g = smaller(&f).unwrap();
        assert_eq!(
            g.kind,
            FaultKind::Latency {
                node: "h1".into(),
                extra_ms: 20
            }
        );
        let p = Fault {
            at_ms: 1,
            dur_ms: 8_000,
            kind: FaultKind::Pause { node: "h1".into() },
        };
        assert_eq!(smaller(&p).unwrap().dur_ms, 4_000);
        let tiny = Fault {
            at_ms: 1,
            dur_ms: 1_500,
            kind: FaultKind::Pause { node: "h1".into() },
        };
        assert!(smaller(&tiny).is_none());
        let death = Fault {
            at_ms: 1,
            dur_ms: 0,
            kind: FaultKind::TaskDeath {
                node: "h1".into(),
                task: "elector".into(),
            },
        };
        assert!(smaller(&death).is_none());
    }
}
