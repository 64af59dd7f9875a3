//! The startup resync: one Neutron-DB-to-etcd reconcile per `CalicoStartupResyncWorker` process,
//! as networking-calico runs it at projectcalico/calico 87c15906.
//!
//! * **Where.** `get_workers` (plugins/ml2/drivers/calico/mech_calico.py lines 478-531) adds the
//!   worker to every neutron-server whose `[calico] startup_resync` (lines 132-141) is `always`,
//!   the default; `never` leaves the worker out, and the docstring suggests leaving `always` on
//!   exactly one neutron-server of a deployment ([`StartupResync`]).
//! * **When.** Once, at the worker process's start: `post_fork_initialize` (lines 533-578)
//!   spawns `_do_startup_resync` (lines 618-619, 1284-1322) and nothing else in that process.
//!   It is not gated on `is_master()`: every such host resyncs, master or not.
//! * **What.** `resync.Scope(db).run()` (networking_calico/resync/scope.py `Scope.run`, lines
//!   130-192): the subnet, policy and endpoint syncers (syncer.py `ResourceSyncer.resync`, lines
//!   109-339) each read etcd first, then Neutron, and write what differs to etcd; then the Felix
//!   configuration. The model keeps its coordination footprint: one etcd read of the Calico data
//!   (the Felix prefix), whose failure stands for any of those requests failing.
//! * **Failure.** `Scope.run` catches the first exception, skips the remaining phases and
//!   returns `ok = False` (scope.py lines 176-181, scope.py `_run_phase` lines 279-294); `_do_startup_resync` logs
//!   "One-shot resync FAILED" and returns. It is not retried: the operator reruns it with the
//!   `calico-resync` CLI or restarts neutron-server (mech_calico.py `_do_startup_resync` docstring, lines 1286-1296; workers.py
//!   `CalicoStartupResyncWorker`, lines 36-94). The worker process then idles until shutdown.
//!
//! Upstream commit 80d666fd13 ("OpenStack: replace periodic resync with one-shot resync and
//! calico-resync CLI") removed the periodic resync thread that ran before (mech_calico.py
//! `periodic_resync_thread`, lines 1251-1308 at its parent 5acc5f9806) and made
//! `resync_interval_secs` a no-op; no later commit up to 87c15906 adds a periodic resync back.
//! The model therefore has no periodic resync.

use super::master::Shared;
use super::{Switches, MASTER_CHECK_INTERVAL};
use crate::calico::CalicoEvent;
use sim::etcd::Client;
use sim::{NodeIx, Proc};
use std::rc::Rc;

/// Which neutron-server hosts run the startup resync: `[calico] startup_resync` on each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StartupResync {
    /// `always` (the default) on every host.
    #[default]
    Everywhere,
    /// `always` on this host only and `never` on every other: the once-per-deployment topology
    /// `get_workers`' docstring suggests.
    OnlyOn(NodeIx),
}

impl StartupResync {
    /// Whether `node`'s neutron-server has the startup-resync worker.
    pub fn runs_on(self, node: NodeIx) -> bool {
        match self {
            StartupResync::Everywhere => true,
            StartupResync::OnlyOn(n) => n == node,
        }
    }
}

/// `_do_startup_resync` in the worker process `proc`: one resync, reported by a
/// [`CalicoEvent::CalicoResync`] (`ok` false: it failed and is abandoned), then nothing.
pub(super) async fn run(
    proc: Proc,
    client: Client,
    prefix: String,
    shared: Rc<Shared>,
    sw: Switches,
) {
    if sw.mutant_resync_waits_for_master {
        // The pre-80d666fd13 gating: wait until this host is master before resyncing.
        while !shared.verdict(&proc, &sw).is_master() {
            proc.sleep(MASTER_CHECK_INTERVAL).await;
        }
    }
    let (ok, keys) = match client.range(&prefix, true, 0).await {
        Ok((kvs, _)) => (true, kvs.len() as u32),
        Err(_) => (false, 0),
    };
    proc.emit(CalicoEvent::CalicoResync {
        pid: proc.pid(),
        keys,
        ok,
    });
}
