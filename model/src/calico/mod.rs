//! Calico's OpenStack driver (networking-calico): the neutron-server side of its coordination.
//!
//! Per host, a `neutron-server` process forks worker processes that share one piece of memory, the
//! mastership stamp (projectcalico/calico PR 12668):
//! * `neutron-server/manager`: the [`elector::Elector`] task and the compaction task;
//! * `neutron-server/agent-status`: master-only watcher forwarding Felix reports to Neutron;
//! * `neutron-server/endpoint-status`: master-only watcher writing port status to Neutron.
//!
//! The parent respawns a worker that exits (1 s later, new pid). A graceful stop (SIGTERM) stops
//! every worker; the manager stops its elector first, whose cleanup steps down.
//!
//! * `neutron-server/resync`: the one-shot startup resync ([`resync`]), on the hosts whose
//!   `startup_resync` is `always`.
//!
//! Felix agents on compute hosts ([`felix`]) write status reports that the watchers ([`watchers`])
//! forward to Neutron ([`neutron`]); the stale-update warning is in [`status`]; the optional mutual
//! watchdog of PR 12456 in `watchdog`. Compaction checks the trigger key as specified.

pub mod broker;
pub mod event;
pub use event::CalicoEvent;
mod compaction;
pub mod elector;
pub mod felix;
pub mod hub;
pub mod master;
pub mod ml2;
pub mod neutron;
pub mod port_status;
pub mod resync;
pub mod status;
mod watchdog;
pub mod watchers;
mod workers;

use sim::etcd::Etcd;
use sim::world::Host;
use sim::{NodeIx, World};
use std::rc::Rc;
use std::time::Duration;

/// `MASTER_TIMEOUT`: the election lease TTL and the staleness bound of `is_master()`.
pub const MASTER_TIMEOUT: Duration = Duration::from_secs(60);
/// The elector's refresh interval.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// Retry jitter upper bound after a failed round (1-2 s).
pub const RETRY_MAX: Duration = Duration::from_secs(2);
/// `MASTER_CHECK_INTERVAL_SECS`: how often master-only loops poll `is_master()`.
pub const MASTER_CHECK_INTERVAL: Duration = Duration::from_secs(5);
/// `etcd_compaction_period_mins` default.
pub const COMPACTION_PERIOD: Duration = Duration::from_secs(60 * 60);
/// Minimum number of revisions compaction keeps.
pub const COMPACTION_MIN_KEEP: i64 = 1000;
/// `etcd_timeout` (common/config.py line 60 at 87c15906, default 60 s: "Large etcd subtree
/// snapshot reads can take time"): the bound on every etcd request of the neutron-server workers.
pub const ETCD_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the parent waits before respawning a dead worker.
pub const RESPAWN_DELAY: Duration = Duration::from_secs(1);

/// The bug and fix switches that concern Calico.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// Bug `calico-local-master-flag`: `is_master()` reads a flag with no staleness check.
    pub local_master_flag: bool,
    /// Bug `calico-no-step-down-on-stop`: stopping the manager does not stop the elector.
    pub no_step_down_on_stop: bool,
    /// Bug `calico-no-dead-pid-cleanup`: no same-host dead-pid check.
    pub no_dead_pid_cleanup: bool,
    /// Fix `calico-monotonic-stamp`: stamp and compare on the host's monotonic clock.
    pub monotonic_stamp: bool,
    /// Fix `calico-port-status-recheck`: port-status writers ask `is_master()` before each write,
    /// and a watcher starting as master clears the port-status cache.
    pub port_status_recheck: bool,
    /// Fix `calico-port-status-key-lock`: a port-status writer waits while another writer of its
    /// process writes the same port.
    pub port_status_key_lock: bool,
    /// Fix `calico-port-status-write-deadline`: a port-status write gives up after 20 s (never
    /// committed) and is retried.
    pub port_status_write_deadline: bool,
    /// Fix `calico-snapshot-checks-stopped`: a status watcher stops dispatching its snapshot as
    /// soon as it is stopped.
    pub snapshot_checks_stopped: bool,
    /// Fix `calico-compaction-claims-period`: compaction claims its period by creating the trigger
    /// key only if absent before compacting.
    pub compaction_claims_period: bool,
    /// Fix `calico-canceller-catches-all`: the watch canceller survives any error of its
    /// round-trip write, not only a connection failure.
    pub canceller_catches_all: bool,
    /// Fix `calico-watch-create-timeout`: a watch's create request is bounded by `etcd_timeout`
    /// (etcd3gw's `Watcher` passing the client's timeout to its post), so a creation etcd never
    /// answers fails instead of blocking its greenlet for ever.
    pub watch_create_timeout: bool,
    /// Bug `calico-watchdog-counts-oneshot`: the watchdog registers the one-shot resync task.
    pub watchdog_counts_oneshot: bool,
    /// Bug `calico-stale-warn-zero-sentinel`: the warning limiter starts at 0.0.
    pub stale_warn_zero_sentinel: bool,
    /// Bug `calico-stale-warn-naive-crash`: naive timestamps are not treated as UTC.
    pub stale_warn_naive_crash: bool,
    /// Bug `calico-stale-warn-in-snapshot`: the stale check also runs during snapshot replay.
    pub stale_warn_in_snapshot: bool,
    /// Mutant `calico-mutant-campaign-unguarded` (test-only): the campaign puts the election key
    /// without the `mod_revision == 0` guard, overwriting a key that exists.
    pub mutant_campaign_unguarded: bool,
    /// Mutant `calico-mutant-is-master-ignores-age` (test-only): `is_master()` answers yes for
    /// any set stamp, however old.
    pub mutant_is_master_ignores_age: bool,
    /// Mutant `calico-mutant-lost-campaign-stamps` (test-only): an elector whose campaign put
    /// failed its compare (another host won) stamps as if it had won.
    pub mutant_lost_campaign_stamps: bool,
    /// Mutant `calico-mutant-step-down-unguarded` (test-only): the step-down deletes the
    /// election key without the `value == id` guard.
    pub mutant_step_down_unguarded: bool,
    /// Mutant `calico-mutant-no-recampaign` (test-only): the elector votes only once; after its
    /// first round ends (lost, failed, timed out) it never campaigns again.
    pub mutant_no_recampaign: bool,
    /// Mutant `calico-mutant-step-down-keeps-key` (test-only): the step-down clears the stamp
    /// but does not delete the key.
    pub mutant_step_down_keeps_key: bool,
    /// Mutant `calico-mutant-refresh-skips-keepalive` (test-only): the refresh re-puts the key
    /// without keeping its lease alive, so the lease runs out a TTL after the win.
    pub mutant_refresh_skips_keepalive: bool,
    /// Mutant `calico-mutant-loss-keeps-stamp` (test-only): the refresh loop ends on a failed
    /// refresh or compare without clearing the stamp, so `is_master()` stays true until the stamp
    /// ages out.
    pub mutant_loss_keeps_stamp: bool,
    /// Mutant `calico-mutant-watcher-not-stopped` (test-only): the master-only loop does not
    /// stop its watcher when `is_master()` turns false.
    pub mutant_watcher_not_stopped: bool,
    /// Mutant `calico-mutant-snapshot-flag-unset` (test-only): the pre-snapshot hook does not
    /// set `processing_snapshot`, so the snapshot's reports are handled as live ones.
    pub mutant_snapshot_flag_unset: bool,
    /// Mutant `calico-mutant-stale-warn-unlimited` (test-only): the stale-update warning has no
    /// rate limit.
    pub mutant_stale_warn_unlimited: bool,
    /// Mutant `calico-mutant-watcher-dies-on-unparsable` (test-only): an unparsable `time`
    /// raises in the agent-status handler instead of being logged and skipped.
    pub mutant_watcher_dies_on_unparsable: bool,
    /// Mutant `calico-mutant-stale-warn-missing` (test-only): the stale check never warns.
    pub mutant_stale_warn_missing: bool,
    /// Mutant `calico-mutant-stale-threshold-ms` (test-only): the stale threshold is read as
    /// 300 ms instead of 300 s, so fresh reports are warned about.
    pub mutant_stale_threshold_ms: bool,
    /// Mutant `calico-mutant-compaction-ignores-period` (test-only): compaction neither reads nor
    /// claims the trigger key, nor sleeps a period after a check (it checks every 5 s).
    pub mutant_compaction_ignores_period: bool,
    /// Mutant `calico-mutant-compaction-gives-up` (test-only): a compaction loop that finds its
    /// host not master stops polling for good, so a host that becomes master later never
    /// compacts.
    pub mutant_compaction_gives_up: bool,
    /// Mutant `calico-mutant-watchdog-registers-watcher` (test-only): the watchdog also watches
    /// the status watcher's greenlet, which runs only while the host is master.
    pub mutant_watchdog_registers_watcher: bool,
    /// Mutant `calico-mutant-agent-dedup-by-host` (test-only): the agent-status handler
    /// de-duplicates on the host alone, not on the key's `mod_revision`: each watcher forwards
    /// one report per host.
    pub mutant_agent_dedup_by_host: bool,
    /// Mutant `calico-mutant-port-write-no-retry` (test-only): a port-status write that failed
    /// with a database error is dropped, not retried.
    pub mutant_port_write_no_retry: bool,
    /// Mutant `calico-mutant-felix-status-no-lease` (test-only): Felix writes its status key
    /// without its lease, so a dead Felix's last report never goes away.
    pub mutant_felix_status_no_lease: bool,
    /// Mutant `calico-mutant-no-round-trip` (test-only): the watch canceller never writes the
    /// round-trip key, so a quiet watch is cancelled and re-created every 10 s instead of being
    /// kept alive by its own writes.
    pub mutant_no_round_trip: bool,
    /// Mutant `calico-mutant-resync-waits-for-master` (test-only): the startup resync waits
    /// until its host is master, as the periodic resync before upstream 80d666fd13 did, so a host
    /// that is not master never resyncs.
    pub mutant_resync_waits_for_master: bool,
    /// Mutant `calico-mutant-refresh-every-half-ttl` (test-only): the master refreshes its lease
    /// and key every half TTL (30 s) instead of every refresh interval (10 s); it still keeps them.
    pub mutant_refresh_every_half_ttl: bool,
}

/// Deployment options.
#[derive(Clone, Debug)]
pub struct Config {
    /// Region name in the keys (`no-region` by default).
    pub region: String,
    /// Bug and fix switches.
    pub switches: Switches,
    /// Run the mutual watchdog of PR 12456 in every worker.
    pub watchdog: bool,
    /// `[calico] startup_resync` on each host (`resync_interval_secs` has no effect at
    /// 87c15906: see [`resync`]).
    pub startup_resync: resync::StartupResync,
    /// `etcd_compaction_period_mins`.
    pub compaction_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            region: "no-region".into(),
            switches: Switches::default(),
            watchdog: false,
            startup_resync: resync::StartupResync::Everywhere,
            compaction_period: COMPACTION_PERIOD,
        }
    }
}

impl Config {
    /// The prefix Felix writes under and the status watchers watch.
    pub fn felix_prefix(&self) -> String {
        felix::host_prefix(&self.region)
    }

    /// `/calico/openstack/v2/<region>/neutron_election`.
    pub fn election_key(&self) -> String {
        format!("/calico/openstack/v2/{}/neutron_election", self.region)
    }
}

/// `datamodel_v1.NEUTRON_ELECTION_KEY` (datamodel_v1.py line 27 at 87c15906): the legacy election
/// key the elector writes with its lease so that not-yet-upgraded servers do not think they can win
/// (mech_calico.py `_init_start_calico_manager`, line 626, passes it as `old_key`).
pub const LEGACY_ELECTION_KEY: &str = "/calico/openstack/v1/neutron_election";

/// Compaction trigger key (lease = one period).
pub const COMPACTION_TRIGGER_KEY: &str = "/calico/compaction/v1/trigger";
/// Compaction bookkeeping key.
pub const COMPACTION_LAST_KEY: &str = "/calico/compaction/v1/last";

/// Installs neutron-server (with the Calico driver) as the services of each host; it writes
/// port statuses to `neutron`'s database and casts agent reports through `broker`.
pub fn install(
    world: &World,
    hosts: &[NodeIx],
    etcd: &Etcd,
    neutron: &neutron::Neutron,
    broker: &broker::Broker,
    cfg: Config,
) {
    let cfg = Rc::new(cfg);
    for &h in hosts {
        let (etcd, cfg) = (etcd.clone(), cfg.clone());
        let (neutron, broker) = (neutron.clone(), broker.clone());
        world.set_services(
            h,
            Rc::new(move |host: &Host| {
                workers::start_neutron_server(host, &etcd, &neutron, &broker, &cfg)
            }),
        );
    }
}
