//! Calico's `--bug`, `--fix` and mutant switches (a mutant, passed with `--bug`, breaks the model on
//! purpose to show that the invariant it names can fail: `scenarios/tests/mutants.rs`).

use super::Calico;
use crate::scenario::Switch;

/// Every Calico switch.
pub static SWITCHES: &[Switch] = &[
    Switch::bug::<Calico>(
        "calico-local-master-flag",
        "calico-silent-task-death",
        "is_master() reads a flag cleared only by the elector's cleanup: a silently dead elector leaves it set forever (split brain)",
    ),
    Switch::bug::<Calico>(
        "calico-no-step-down-on-stop",
        "calico-restart",
        "stopping the manager does not stop the elector: the key lingers a full TTL after a graceful restart",
    ),
    Switch::bug::<Calico>(
        "calico-no-dead-pid-cleanup",
        "calico-restart",
        "no same-host dead-pid check: after a master crash and respawn, no master until the TTL runs out",
    ),
    Switch::bug::<Calico>(
        "calico-watchdog-counts-oneshot",
        "calico-watchdog",
        "the watchdog registers the one-shot resync: it finishes, the watchdog sees it dead and exits the process, over and over",
    ),
    Switch::bug::<Calico>(
        "calico-stale-warn-zero-sentinel",
        "calico-status-backlog",
        "the stale-warning limiter starts at 0.0: on a host up for less than 300 s the first warning is suppressed",
    ),
    Switch::bug::<Calico>(
        "calico-stale-warn-naive-crash",
        "calico-status-backlog",
        "naive timestamps are not treated as UTC: naive minus aware raises and the agent-status task dies",
    ),
    Switch::bug::<Calico>(
        "calico-stale-warn-in-snapshot",
        "calico-status-backlog",
        "the stale check also runs during snapshot replay: false warnings for old reports in the snapshot",
    ),
    Switch::fix::<Calico>(
        "calico-watchdog",
        "calico-silent-task-death",
        "run PR 12456's mutual watchdog in every worker: a worker whose registered task died exits and is respawned",
    ),
    Switch::fix::<Calico>(
        "calico-monotonic-stamp",
        "calico-swarm",
        "stamp mastership with the host's monotonic clock, so a backward wall-clock step cannot extend a stale stamp",
    ),
    Switch::fix::<Calico>(
        "calico-canceller-catches-all",
        "calico-swarm",
        "the status watcher's watch canceller catches every error of its round-trip write (upstream catches only ConnectionFailedError and dies on a timeout), so a watch broken later is still cancelled and restarted",
    ),
    Switch::fix::<Calico>(
        "calico-watch-create-timeout",
        "calico-swarm",
        "a watch's create request is bounded by etcd_timeout (etcd3gw's Watcher posts it with no timeout), so an elector or status watcher whose creation etcd's crashed host never answers retries instead of blocking for ever",
    ),
    Switch::fix::<Calico>(
        "calico-compaction-claims-period",
        "calico-swarm",
        "compaction claims its period by creating the trigger key in a transaction guarded by its absence before compacting, so two hosts that both believe they are master cannot both compact",
    ),
    Switch::fix::<Calico>(
        "calico-port-status-recheck",
        "calico-status-backlog",
        "port-status writers ask is_master() before each write, and a watcher starting as master clears the port-status cache so its snapshot rewrites every port",
    ),
    Switch::fix::<Calico>(
        "calico-port-status-key-lock",
        "calico-swarm",
        "a port-status writer waits while another writer of its process writes the same port, so two writes of one port never overlap and the later status commits last",
    ),
    Switch::fix::<Calico>(
        "calico-port-status-write-deadline",
        "calico-swarm",
        "a port-status write gives up after 20 s (an eventlet.Timeout around update_port_status, neutron-lib's retries included): held up by a partition or a database outage it is never committed, and it is retried through is_master(); and a watcher that starts as master holds its process's writes for those 20 s, so a former master's write still in flight after a quick handover (a respawned manager deletes its dead predecessor's key at once) lands before the new master's, not after",
    ),
    Switch::fix::<Calico>(
        "calico-snapshot-checks-stopped",
        "calico-swarm",
        "a status watcher checks whether it was stopped before dispatching each snapshot key, so a snapshot read that returns after the stop does not overwrite the newer watcher's port-status cache",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-campaign-unguarded",
        "calico-silent-task-death",
        &super::invariants::ELECTION_KEY_SINGLE_HOLDER,
        "the campaign puts the election key without the mod_revision == 0 guard, overwriting a key that exists",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-is-master-ignores-age",
        "calico-silent-task-death",
        &super::invariants::MASTER_ONLY_WORK_ON_FRESH_STAMP,
        "is_master() answers yes for any set stamp, however old: a silently dead elector's host acts as master forever",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-lost-campaign-stamps",
        "calico-restart",
        &super::invariants::MASTER_ONLY_WORK_LEGITIMATE,
        "an elector whose campaign lost (its put found the key already created) stamps as if it had won: its host acts as master without ever holding the key",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-step-down-unguarded",
        "calico-restart",
        &super::invariants::ELECTION_DELETES_OWNED,
        "the step-down deletes the election key without the value == id guard, whoever holds it",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-no-recampaign",
        "calico-split-brain",
        &super::invariants::MASTER_ELECTED,
        "the elector votes once: after its first round ends (lost, beaten, timed out) it never campaigns again",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-step-down-keeps-key",
        "calico-restart",
        &super::invariants::PROMPT_HANDOVER,
        "the step-down clears the stamp but leaves the key to its lease",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-refresh-skips-keepalive",
        "calico-status-backlog",
        &super::invariants::MASTER_STABLE,
        "the refresh re-puts the key without keeping its lease alive: the lease runs out a TTL after the win",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-watcher-not-stopped",
        "calico-restart",
        &super::invariants::MASTER_ONLY_WORK_STOPS,
        "the master-only loop does not stop its watcher when is_master() turns false",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-loss-keeps-stamp",
        "calico-split-brain",
        &super::invariants::MASTER_ONLY_WORK_STOPS,
        "the refresh loop ends on a failed refresh or compare without clearing the stamp: the host's workers act as master until the stamp ages out (60 s)",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-snapshot-flag-unset",
        "calico-status-backlog",
        &super::invariants::STALE_WARNING_NOT_IN_SNAPSHOT,
        "the pre-snapshot hook does not set processing_snapshot: the snapshot's reports are handled as live ones",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-stale-warn-unlimited",
        "calico-status-backlog",
        &super::invariants::STALE_WARNING_RATE_LIMITED,
        "the stale-update warning has no rate limit",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-watcher-dies-on-unparsable",
        "calico-status-backlog",
        &super::invariants::WATCHER_SURVIVES_TIMESTAMPS,
        "an unparsable report time raises in the agent-status handler instead of being logged and skipped",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-stale-warn-missing",
        "calico-status-backlog",
        &super::invariants::STALE_REPORT_WARNED,
        "the stale check never warns",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-stale-threshold-ms",
        "calico-status-backlog",
        &super::invariants::STALE_WARNING_JUSTIFIED,
        "the stale threshold is read as 300 ms instead of 300 s: fresh reports are warned about",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-compaction-ignores-period",
        "calico-status-backlog",
        &super::invariants::COMPACTION_ONCE_PER_PERIOD,
        "compaction neither reads the trigger key nor sleeps a period after a check: it compacts every 5 s",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-compaction-gives-up",
        "calico-status-backlog",
        &super::invariants::COMPACTION_PROGRESSES,
        "a compaction loop that finds its host not master stops polling for good: a host that becomes master later never compacts",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-refresh-every-half-ttl",
        "calico-split-brain",
        &super::invariants::ELECTION_REFRESH_PROGRESSES,
        "the master refreshes its lease and key every half TTL (30 s) instead of every 10 s: it keeps them, with a third of the margin",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-no-round-trip",
        "calico-split-brain",
        &super::invariants::STATUS_WATCH_ROUND_TRIPS,
        "the watch canceller never writes the round-trip key: a quiet watch is cancelled and re-created every 10 s instead of being kept alive",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-resync-waits-for-master",
        "calico-split-brain",
        &super::invariants::STARTUP_RESYNC_COMPLETES,
        "the startup resync waits until its host is master (the gating of the periodic resync before upstream 80d666fd13): a host that is not master never resyncs",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-watchdog-registers-watcher",
        "calico-watchdog",
        &super::invariants::WATCHDOG_RESTART_JUSTIFIED,
        "the watchdog also watches the status watcher's greenlet, which runs only while the host is master",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-agent-dedup-by-host",
        "calico-status-backlog",
        &super::invariants::AGENT_VIEW_CONVERGES,
        "the agent-status handler de-duplicates on the host alone, not the key's mod_revision: each watcher forwards one report per host",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-felix-status-no-lease",
        "calico-status-backlog",
        &super::invariants::SILENT_AGENT_NOT_REPORTED,
        "Felix writes its status key without its lease: a silent Felix's last report stays and is forwarded again",
    ),
    Switch::mutant::<Calico>(
        "calico-mutant-port-write-no-retry",
        "calico-status-backlog",
        &super::invariants::PORT_STATUS_CONVERGES,
        "a port-status write that failed with a database error is dropped, not retried",
    ),
];
