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
//!   130-192), with `db` the ML2 plugin (`_get_db`): the subnet, policy and endpoint syncers in
//!   turn (syncer.py `ResourceSyncer.resync`, lines 109-339) each read etcd first (lines
//!   162-163), then Neutron through the plugin (line 172), and write what differs to etcd; then
//!   the Felix configuration. The model makes each syncer's reads, in upstream's order
//!   ([`STEPS`]):
//!   - etcd: `etcdv3.get_prefix` (etcdv3.py lines 260-300), a status request for the current
//!     revision and a range of the prefix at it, for the subnet directory (subnets.py
//!     `SubnetSyncer.get_from_etcd`, lines 55-62) and, through `datamodel_v3.get_all`
//!     (datamodel_v3.py lines 183-215), the NetworkPolicy, WorkloadEndpoint and LiveMigration
//!     resources (policy.py `PolicySyncer.get_from_etcd`, lines 94-102; endpoints.py
//!     `WorkloadEndpointSyncer.get_from_etcd`, lines 334-353);
//!   - the Neutron DB: the plugin's `get_subnets` (subnets.py lines 44-53), `get_security_groups`
//!     and `get_security_group_rules` (policy.py `PolicySyncer.get_from_neutron`, lines
//!     69-92), and `get_ports`, then the ports' side data (endpoints.py
//!     `WorkloadEndpointSyncer.get_from_neutron`, lines 137-183, `_prefetch_bulk_port_data`,
//!     lines 185-332). Each plugin getter is `@retry_if_session_inactive` and is called outside
//!     any transaction (syncer.py lines 165-171), so a database error is retried with
//!     neutron-lib's backoff, up to 20 times ([`Ml2::get_all`]); the side data's raw queries run
//!     inside the syncer's own `CONTEXT_READER` (endpoints.py line 214), where no retry applies,
//!     so their first error raises ([`Ml2::query`]). Each waits as long as the database takes
//!     (no client read timeout: [`CALL_TIMEOUT`]).
//!
//!   Not modelled: the compare loop's writes (the scenarios' etcd data already matches Neutron,
//!   so there are none), `delete_legacy_etcd_data`, the Felix configuration phase's reads and
//!   writes (etcd only, like the reads before them), and the side data's five queries, made as
//!   one round trip.
//! * **Failure.** `Scope.run` catches the first exception, skips the remaining phases and
//!   returns `ok = False` (scope.py lines 176-181, scope.py `_run_phase` lines 279-294); `_do_startup_resync` logs
//!   "One-shot resync FAILED" and returns. It is not retried: the operator reruns it with the
//!   `calico-resync` CLI or restarts neutron-server (mech_calico.py `_do_startup_resync` docstring, lines 1286-1296; workers.py
//!   `CalicoStartupResyncWorker`, lines 36-94). The worker process then idles until shutdown.
//!   So an etcd fault fails the resync at its first error, and a Neutron DB fault delays it
//!   (a retried getter waits out an outage of up to about two minutes of backoff) or fails it
//!   (an outage outlasting the retries, or any error of the side-data read).
//!
//! Upstream commit 80d666fd13 ("OpenStack: replace periodic resync with one-shot resync and
//! calico-resync CLI") removed the periodic resync thread that ran before (mech_calico.py
//! `periodic_resync_thread`, lines 1251-1308 at its parent 5acc5f9806) and made
//! `resync_interval_secs` a no-op; no later commit up to 87c15906 adds a periodic resync back.
//! The model therefore has no periodic resync.

use super::master::Shared;
use super::ml2::{Ml2, CALL_TIMEOUT};
use super::neutron::{Neutron, Table};
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

/// An etcd directory a syncer reads whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// `datamodel_v2.subnet_dir`: `/calico/dhcp/v2/<region>/subnet` (datamodel_v2.py lines
    /// 86-87).
    Subnets,
    /// The region's NetworkPolicy resources.
    NetworkPolicies,
    /// The region's WorkloadEndpoint resources.
    WorkloadEndpoints,
    /// The region's LiveMigration resources.
    LiveMigrations,
}

impl Dir {
    /// The prefix read for `region` (`datamodel_v3._build_key(kind, namespace, "")`, lines
    /// 322-332, with `get_namespace`'s namespace, lines 315-319: `openstack` without a region,
    /// `openstack-<region>` with one).
    pub fn prefix(self, region: &str) -> String {
        let plural = match self {
            Dir::Subnets => return format!("/calico/dhcp/v2/{region}/subnet"),
            Dir::NetworkPolicies => "networkpolicies",
            Dir::WorkloadEndpoints => "workloadendpoints",
            Dir::LiveMigrations => "livemigrations",
        };
        let namespace = if region == "no-region" {
            "openstack".to_string()
        } else {
            format!("openstack-{region}")
        };
        format!("/calico/resources/v3/projectcalico.org/{plural}/{namespace}/")
    }
}

/// One read of the resync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `etcdv3.get_prefix` of a directory: a status request, then a range at its revision.
    Etcd(Dir),
    /// A `@retry_if_session_inactive` plugin getter of a whole table ([`Ml2::get_all`]).
    Get(Table),
    /// A raw query in the syncer's own reader transaction, not retried ([`Ml2::query`]).
    Query(Table),
}

/// The resync's reads in upstream's order: the subnet syncer's, the policy syncer's, the
/// endpoint syncer's (see the module documentation).
pub const STEPS: [Step; 11] = [
    Step::Etcd(Dir::Subnets),
    Step::Get(Table::Subnets),
    Step::Etcd(Dir::NetworkPolicies),
    Step::Get(Table::SecurityGroups),
    Step::Get(Table::SecurityGroupRules),
    Step::Etcd(Dir::WorkloadEndpoints),
    Step::Etcd(Dir::LiveMigrations),
    Step::Get(Table::Ports),
    Step::Query(Table::PortSideData),
    Step::Get(Table::Subnets),
    Step::Get(Table::SecurityGroups),
];

/// What the worker process `_do_startup_resync` runs in reads.
pub(super) struct Resync {
    /// The worker process.
    pub proc: Proc,
    /// Its etcd client.
    pub etcd: Client,
    /// The ML2 plugin, over the Neutron DB.
    pub db: Ml2,
    /// The deployment's region.
    pub region: String,
}

/// An etcd or database error, as the event records it.
fn error_text(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

impl Resync {
    /// The worker process `proc`'s resync, reading etcd through `etcd` and the Neutron DB
    /// `neutron`.
    pub fn new(proc: &Proc, etcd: Client, neutron: Neutron, region: String) -> Self {
        Resync {
            proc: proc.clone(),
            etcd,
            db: Ml2::new(proc, neutron),
            region,
        }
    }

    /// One step; the keys it read from etcd.
    async fn step(&self, step: Step) -> Result<u32, String> {
        match step {
            Step::Etcd(dir) => {
                let (rev, _) = self.etcd.status().await.map_err(error_text)?;
                let prefix = dir.prefix(&self.region);
                let (kvs, _) = (self.etcd.range(&prefix, true, rev).await).map_err(error_text)?;
                Ok(kvs.len() as u32)
            }
            Step::Get(table) => {
                let r = self.db.get_all(table, CALL_TIMEOUT).await;
                r.map(|()| 0).map_err(error_text)
            }
            Step::Query(table) => {
                let r = self.db.query(table, CALL_TIMEOUT).await;
                r.map(|()| 0).map_err(error_text)
            }
        }
    }

    /// `_do_startup_resync`: one resync, reported by a [`CalicoEvent::CalicoResync`] (`ok`
    /// false: it failed at `failed`, the first step that raised, and is abandoned), then
    /// nothing.
    pub async fn run(self, shared: Rc<Shared>, sw: Switches) {
        let proc = &self.proc;
        if sw.mutant_resync_waits_for_master {
            // The pre-80d666fd13 gating: wait until this host is master before resyncing.
            while !shared.verdict(proc, &sw).is_master() {
                proc.sleep(MASTER_CHECK_INTERVAL).await;
            }
        }
        let mut keys = 0;
        let mut failed = None;
        for step in STEPS {
            match self.step(step).await {
                Ok(n) => keys += n,
                Err(e) => {
                    failed = Some(format!("{step:?}: {e}"));
                    break;
                }
            }
        }
        proc.emit(CalicoEvent::CalicoResync {
            pid: proc.pid(),
            keys,
            ok: failed.is_none(),
            failed,
        });
    }
}
