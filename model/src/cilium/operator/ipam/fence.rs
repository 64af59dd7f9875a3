//! Fix `cilium-fence-cloud`: each cloud call of the leader carries the Lease term it holds, and
//! the cloud refuses a term older than one it has seen (`sim::cloud::Fence`; real cloud APIs offer
//! nothing like it, and client-go's documentation says leader election gives no fencing:
//! kubernetes/client-go at 32ce75a7d6bc6960fd048d3d1e3b34185418d8c8 (`@cg` below),
//! `leaderelection.go` l. 17-20).
//!
//! The term is the Lease's `leaderTransitions` in the record this operator last saw naming it
//! the holder, which is the record it last wrote. It is the count it won with, until a renew
//! round takes the Lease again after another holder released it: client-go's
//! `tryAcquireOrRenew` then writes `leaderTransitions + 1` without ending the leader context
//! (@cg `leaderelection.go` l. 486-514), so the same IPAM goes on under a newer term. Holding the
//! count it first won with would leave such a leader fenced off for good: a leader paused while
//! another won, which takes the Lease back once the other releases it, never resyncs again.
//! While the last record it saw names another holder (a leader that has not yet noticed it lost),
//! its calls keep the older term, and the cloud refuses them once the newer leader has called.

use sim::leaderelection::{LeaderElector, CILIUM_OPERATOR_LOCK};
use std::cell::Cell;

/// The elector whose term the leader's cloud calls carry.
pub(super) struct Fence {
    elector: LeaderElector,
    /// The term last seen held (`leaderTransitions` of the last observed record naming this
    /// operator).
    term: Cell<i32>,
}

impl Fence {
    /// The fence of the leader elected by `elector`, starting at the term it won with.
    pub(super) fn new(elector: &LeaderElector) -> Fence {
        let fence = Fence {
            elector: elector.clone(),
            term: Cell::new(0),
        };
        fence.now();
        fence
    }

    /// The fence for a call made now.
    pub(super) fn now(&self) -> sim::cloud::Fence {
        let s = self.elector.snapshot();
        if s.is_leader {
            self.term.set(s.observed.leader_transitions);
        }
        sim::cloud::Fence {
            lock: CILIUM_OPERATOR_LOCK.into(),
            token: self.term.get().max(0) as u64,
        }
    }
}
