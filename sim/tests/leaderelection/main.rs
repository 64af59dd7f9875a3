//! Kubernetes leader election (`sim::leaderelection`) against the simulated API server.
//!
//! `upstream_leaderelection_*` mirror client-go's own tests
//! (kubernetes/client-go @ 32ce75a7d6bc6960fd048d3d1e3b34185418d8c8,
//! `tools/leaderelection/leaderelection_test.go`): `testTryAcquireOrRenew` (l. 78-356, one test per
//! case), `testReleaseLease` (l. 546-687), `TestReleaseMethodCallsGet` (l. 695-746),
//! `TestReleaseRetriesOnConflict` (l. 750-805), `testReleaseOnCancellation` (l. 811-1037),
//! `TestLeaderElectionConfigValidation` (l. 1039-1072) and `TestFastPathLeaderElection`
//! (l. 1098-1251); the validation test checks `NewLeaderElector`'s rules (`leaderelection.go`
//! l. 76-105). Upstream scripts the API with a fake clientset and presets the elector's observed
//! record and time; here the API is the simulated server (1 ms each way) and the observed state is
//! reached by earlier tries, which the comments point out. The `upstream_leaderelection_v0_30_3_*`
//! tests mirror the same file at tag v0.30.3 (the client-go the pinned cilium-operator vendors),
//! whose release updates the cached Lease with no read and no retry (`ReleaseStyle::UpdateCached`):
//! at v0.30.3, `leaderelection_test.go` `testReleaseLease` (l. 401-534) and
//! `testReleaseOnCancellation` (l. 544-766 at v0.30.3).
//!
//! The other tests run candidates on their own nodes through partitions and pauses and check the
//! timing the module documentation derives, with the cilium-operator constants (15 s / 10 s / 2 s).
//!
//! The tests are in two modules: [`upstream`] (one scripted process next to the API server, the
//! client-go mirrors) and [`candidates`] (candidates on their own nodes).

mod candidates;
mod events;
mod upstream;

use sim::event::{Event, Record};
use sim::leaderelection::LEASE_KIND;
use sim::runtime::SimConfig;
use sim::{Failure, Monitor, NetSpec, NodeSpec, Schedule};
use std::cell::RefCell;
use std::rc::Rc;

const API: &str = "apiserver";
/// One-way latency of every message (so a request takes 2 ms).
const LATENCY_US: u64 = 1_000;
const S: u64 = 1_000_000;
const MS: u64 = 1_000;

/// madsim moves its clock on by a few µs between the polls of different tasks, so two tasks
/// reacting to one change (the elector, the test's watcher) may read times this far apart.
const SLACK_US: u64 = 50;

#[track_caller]
fn near(got: u64, want: u64) {
    assert!(
        got.abs_diff(want) <= SLACK_US,
        "{got} µs, expected {want} µs (± {SLACK_US})"
    );
}

#[track_caller]
fn near_opt(got: Option<u64>, want: u64) {
    near(got.expect("it happened"), want);
}

/// One interval, from `from` to `to` (`u64::MAX`: still open).
#[track_caller]
fn near_span(spans: &[(u64, u64)], from: u64, to: u64) {
    assert_eq!(spans.len(), 1, "{spans:?}");
    near(spans[0].0, from);
    if to == u64::MAX {
        assert_eq!(spans[0].1, to);
    } else {
        near(spans[0].1, to);
    }
}

fn node(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        offset_us: 0,
        drift_ppm: 0,
    }
}

/// A write to (or a conflict on) a Lease, as the API server applied it.
#[derive(Clone, Debug, PartialEq)]
struct Write {
    t_us: u64,
    /// `host:pid` of the writer.
    client: String,
    /// `create`, `spec`, or `conflict`.
    what: String,
}

impl Write {
    fn by(&self, host: &str) -> bool {
        self.client.starts_with(&format!("{host}:"))
    }
}

/// Collects the Lease writes and conflicts.
struct Writes(Rc<RefCell<Vec<Write>>>);

impl Monitor for Writes {
    fn on_event(&mut self, rec: &Record) -> Option<Failure> {
        let w = match &rec.event {
            Event::KubeWrite {
                kind, part, client, ..
            } if kind == LEASE_KIND => (client.to_string(), part.to_string()),
            Event::KubeConflict { kind, client, .. } if kind == LEASE_KIND => {
                (client.to_string(), "conflict".to_string())
            }
            _ => return None,
        };
        self.0.borrow_mut().push(Write {
            t_us: rec.t_us,
            client: w.0,
            what: w.1,
        });
        None
    }

    fn on_tick(&mut self, _now_us: u64) -> Option<Failure> {
        None
    }

    fn coverage(&self) -> Vec<(&'static str, bool)> {
        Vec::new()
    }
}

fn sim_config(seed: u64, names: &[&str], schedule: Schedule, horizon_ms: u64) -> SimConfig {
    SimConfig {
        seed,
        nodes: names.iter().map(|n| node(n)).collect(),
        net: NetSpec::fixed(LATENCY_US),
        schedule,
        fault_window_ms: horizon_ms,
        liveness_ms: 1,
        keep_trace: false,
    }
}
