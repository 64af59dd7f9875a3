//! Shrinking a failing run to a smaller story that still fails the SAME way: the same invariant,
//! and the same known finding (or none). A candidate that breaks the invariant through another
//! finding's causal chain is a different failure, not a smaller story of this one.
//!
//! The seed stays fixed (it drives scheduling and latencies); what shrinks is the data around it:
//! 1. fewer faults: remove chunks of the schedule, halving the chunk size down to single faults
//!    (delta debugging);
//! 2. shorter faults: halve each fault's duration (partitions, pauses, outages, stalls, ...);
//! 3. smaller faults: halve clock steps, drifts, extra latencies, slowdowns and failure percentages;
//! 4. fewer nodes: drop the last neutron host or compute host while no fault names it and the
//!    scenario's minimum allows it.
//!
//! Each pass tries candidates in a fixed order and keeps the first whose failure has the same
//! signature ([`FailureSignature`]). Candidates run in parallel in batches, but the winner is always the lowest-ordered
//! success of a batch, so the result does not depend on the number of threads: shrinking is
//! deterministic. A candidate is never larger than the current best, so the schedule never grows.

use crate::scenario::RunSpec;
use crate::system::Registry;
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
    /// Its outcome (the same signature as the original).
    pub outcome: Outcome,
    /// Faults before and after.
    pub before_faults: usize,
    /// Faults in the shrunk spec's schedule.
    pub after_faults: usize,
    /// Candidate runs tried.
    pub runs: usize,
}

/// What "still fails" means while shrinking: the invariant the original run violated, and the
/// active finding of `reg` its violation is (none for an unknown failure), judged as `explore`
/// names failures ([`Registry::finding_in`]: a finding whose fix the run has on is never named).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureSignature {
    /// The invariant violated.
    pub invariant: String,
    /// The known finding the violation is, if any.
    pub finding: Option<&'static str>,
}

impl FailureSignature {
    /// The signature of `outcome`, a run of `spec` (None if it did not fail).
    pub fn of(reg: &Registry, spec: &RunSpec, outcome: &Outcome) -> Option<FailureSignature> {
        let v = outcome.violation.as_ref()?;
        Some(FailureSignature {
            invariant: v.invariant.clone(),
            finding: reg.finding_in(spec, v).map(|f| f.id),
        })
    }
}

/// Shrinks `spec`, whose run failed with `outcome`, using `jobs` threads; every candidate kept
/// fails with the original's [`FailureSignature`] (`reg` names the findings).
pub fn shrink(reg: &Registry, spec: &RunSpec, outcome: &Outcome, jobs: usize) -> Shrunk {
    let target = FailureSignature::of(reg, spec, outcome).unwrap_or(FailureSignature {
        invariant: String::new(),
        finding: None,
    });
    let mut s = Shrinker {
        reg,
        best: spec.clone(),
        best_outcome: outcome.clone(),
        target,
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

struct Shrinker<'r> {
    reg: &'r Registry,
    best: RunSpec,
    best_outcome: Outcome,
    target: FailureSignature,
    jobs: usize,
    runs: usize,
}

impl Shrinker<'_> {
    /// Runs candidates in order, in batches; adopts the first that fails with the target
    /// signature. Returns whether one did.
    fn try_in_order(&mut self, candidates: Vec<RunSpec>) -> bool {
        for batch in candidates.chunks(self.jobs) {
            if self.runs >= MAX_RUNS {
                return false;
            }
            self.runs += batch.len();
            let results: Arc<Mutex<Vec<Option<Outcome>>>> =
                Arc::new(Mutex::new(vec![None; batch.len()]));
            let (b, r, inv) = (
                batch.to_vec(),
                results.clone(),
                self.target.invariant.clone(),
            );
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
            // The invariant was checked in the pool; the finding is judged here, in order.
            if let Some((i, o)) = results.into_iter().enumerate().find_map(|(i, o)| {
                o.filter(|o| {
                    FailureSignature::of(self.reg, &batch[i], o).as_ref() == Some(&self.target)
                })
                .map(|o| (i, o))
            }) {
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
        StaleReads { lag_ms, .. } => half(*lag_ms, 10).map(|d| *lag_ms = d),
        ServiceAmbiguous { percent, .. }
        | ServiceGarbled { percent, .. }
        | Throttling { percent, .. } => half(*percent as u64, 5).map(|d| *percent = d as u32),
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
