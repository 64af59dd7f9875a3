//! Calico's findings: violations of the default (upstream) logic, with the upstream code that
//! produces each, and the retired ones with their reasons.

use super::monitor::{AGENT_VIEW_WRONG, KNEW_LOST, PORTS_WRONG};
use crate::findings::{Citation, Finding, Lines, Realism, RetiredFinding, Signature, Status};

const CALICO: &str = "projectcalico/calico";
const CALICO_COMMIT: &str = "87c15906f20c4ca1fda55af92295e7678b0cc0b2";
const DRIVER: &str =
    "networking-calico/networking_calico/plugins/ml2/drivers/calico/mech_calico.py";
const ELECTION: &str = "networking-calico/networking_calico/plugins/ml2/drivers/calico/election.py";
const ETCDUTILS: &str = "networking-calico/networking_calico/etcdutils.py";
const ETCDV3: &str = "networking-calico/networking_calico/etcdv3.py";

const fn calico(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: CALICO,
        path,
        function,
        lines: Lines::At(lines),
        commit: CALICO_COMMIT,
    }
}

/// The remedies of the findings that fail first, in the default model, at the pinned seeds of the
/// port-status findings that only show once those are removed (at those seeds the default
/// model's run diverges early and shows neither).
const EARLIER_REMEDIES: &[&str] = &[
    "calico-watchdog",
    "calico-monotonic-stamp",
    "calico-canceller-catches-all",
    "calico-compaction-claims-period",
    "calico-port-status-recheck",
];

/// Every Calico remedy but `calico-monotonic-stamp`: calico-swarm, which draws cuts from etcd,
/// etcd faults and clock steps together, shows `calico-wall-clock-stamp` once the findings that
/// end its runs first are removed.
const OTHER_THAN_STAMP_REMEDIES: &[&str] = &[
    "calico-watchdog",
    "calico-canceller-catches-all",
    "calico-watch-create-timeout",
    "calico-compaction-claims-period",
    "calico-port-status-recheck",
    "calico-port-status-key-lock",
    "calico-port-status-write-deadline",
    "calico-snapshot-checks-stopped",
];

/// The dead-task note of a violation names one of these tasks.
fn names_dead(e: &str, tasks: &[&str]) -> bool {
    tasks.iter().any(|t| dead_in(e, t).is_some())
}

/// The list of a monitor's explanation after `heading` (up to the next "; "), if it has one.
fn note_list<'a>(e: &'a str, heading: &str) -> Option<&'a str> {
    let (_, list) = e.split_once(heading)?;
    list.split("; ").next()
}

/// The process ("h3:1006") whose `task` the explanation lists as silently dead, if it does.
fn dead_in<'a>(e: &'a str, task: &str) -> Option<&'a str> {
    let dead = note_list(e, "silently dead tasks on")?;
    let (_, rest) = dead.split_once(&format!("{task} of "))?;
    rest.split(' ').next()
}

/// Whether the explanation lists the watch canceller of `task`'s watcher (any watcher's if none)
/// in `process` (any process if none) among the greenlets ended by an exception.
fn canceller_ended(e: &str, task: Option<&str>, process: Option<&str>) -> bool {
    let Some(raised) = note_list(e, "greenlets ended by an exception on") else {
        return false;
    };
    let canceller = format!("{}-watch-canceller of ", task.unwrap_or(""));
    match process {
        // Each entry reads "<task> of <process> at <time> (<error>)".
        Some(p) => raised.contains(&format!("{canceller}{p} at ")),
        None => raised.contains(&canceller),
    }
}

/// Every Calico finding, active or retired.
pub static FINDINGS: &[Finding] = &[
    Finding {
        id: "calico-wall-clock-stamp",
        system: "calico",
        title: "A backward wall-clock step keeps a stale mastership stamp fresh",
        scenario: "calico-swarm",
        seeds: &[2545, 3911],
        signature: Signature {
            invariants: &["master-only-work-on-fresh-stamp", "master-only-work-legitimate"],
            describe: "a host acts as master after a backward clock step on it, and not as a stopped watcher long after its elector knew it had lost",
            test: |e| e.contains("clock step -") && !e.contains(KNEW_LOST),
        },
        summary: "The elector stamps the shared value with time.time() when it wins and after each refresh, and is_master() answers yes while time.time() minus the stamp is under 60 s. While the elector's refresh is held up and the stamp not yet cleared, a backward step of the host's wall clock makes the stamp look younger than it is: the host's workers go on acting as master after its lease ran out and another host won. How long the stale stamp survives sets how much a step can stretch. A refresh held up by etcd (a cut between the master and etcd, etcd's host crashing, a reply lost to an ambiguous timeout) fails at etcd_timeout (60 s), 70 s after the last stamp and 10 s past the lease. With etcd auth configured (etcd_username and etcd_password) it fails only after two etcd_timeouts, because Etcd3AuthClient.post answers the first ConnectionTimeoutError by authenticating and posting again (etcdv3.py 542-559) and the authentication is held up too: the stamp survives until about 130 s after the last one, 70 s past the lease. In calico-swarm seed 1088 (auth on; this finding's pin until the message broker's hop moved the draws) the master h3 stamped at 158.7 s; its next refresh's put reached etcd, but the reply was lost to a partition [h2, h3] | [h1, etcd] from 171.3 s for 74 s; the lease ran out and h1 won at 230.2 s; the put timed out at about 231 s and h3 authenticated again, still cut off; a step of -51.7 s at 218.5 s made the stamp look 34.5 s old at 245 s, so once the partition healed at 245.4 s h3's agent-status watcher forwarded Felix reports (246.5 s, 88 s after its last stamp) while h1 was master. Without auth the stamp would have been cleared at about 231 s. (The seed's shrunk replay keeps the partition and a step of only -6.5 s: its compaction check at 230 s falls in the 10 s past the lease that needs no auth.) The pinned seed 3911 acts in the 10 s past the lease that needs no auth, with a step of -16.5 s: h2's agent-status watcher forwards a report at 463.3 s on an is_master() yes from a stamp written at 394.9 s, 65 s old in true time, while h1 holds the key. The pinned seed 2545 shows the auth path with a larger step (-236.5 s; its shrunk replay keeps the partition and a step of -7.4 s): the cut-off master ran its compaction check 85 s after its last stamp. Without auth the window is the 10 s past the lease (realistic-profile calico-swarm seeds 1536 and 2506: the refresh's reply lost to ambiguous timeouts, steps of -28 s and -32 s), or as long as the elector hangs without its cleanup (a silently dead elector greenlet, which no upstream path produces: calico-clock-skew seeds 374 and 494, this finding's former pins, with steps of minutes), or, for the few ms until the elector's first refresh after a pause clears the stamp, a host paused past its lease that was stepped back meanwhile (calico-swarm seed 1159: paused 82.6 s, stepped -88.5 s).",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.is_master", "580-601"),
            calico(ELECTION, "Elector._become_master", "290, 317"),
            calico(ETCDV3, "Etcd3AuthClient.post", "542-559"),
        ],
        fix: Some("calico-monotonic-stamp"),
        shown_with: OTHER_THAN_STAMP_REMEDIES,
        impact: "Two neutron-server hosts act as the Calico master at once (both forward Felix reports and write port statuses, both run the compaction check) while the old master's refresh is held up: up to 10 s past its lease without etcd auth, up to about 70 s with it; with a hung elector for as long as it hangs.",
        preconditions: &[
            "the master's refresh is held up past its lease by a fault between it and etcd: a cut (the master isolated, or a partition), etcd's host crashing, or a reply lost (an ambiguous timeout); the refresh fails after one etcd_timeout (60 s), so the stamp outlives the lease by 10 s, or, with etcd auth configured, after two (the re-authentication is held up too), 70 s",
            "another host wins the election key meanwhile (the lease runs out 60 s after the last refresh)",
            "a backward step of the stale host's wall clock before its stamp is cleared, at least as large as the stamp's age past 60 s when the host acts: seconds without auth, up to 70 s with it (chronyd or ntpd stepping after an offset, or a manual date; the fault catalog's realistic steps reach 60 s)",
            "the stale host does master-only work in that window: its compaction check, or, once a cut heals and before the re-posted refresh fails, forwarding Felix reports and queueing port statuses (seed 1088: about a second)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-dead-status-loop-keeps-watching",
        system: "calico",
        title: "A dead master-only loop never stops its watcher",
        scenario: "calico-silent-task-death",
        seeds: &[33, 246],
        signature: Signature {
            invariants: &["master-only-work-legitimate"],
            describe: "the acting host's agent-status or endpoint-status loop is silently dead",
            test: |e| names_dead(e, &["agent-status", "endpoint-status"]),
        },
        summary: "Only watch_status_updates, the loop that polls is_master() every 5 s, ever calls the watcher's stop(); the watcher greenlet itself never asks is_master(). When that loop dies silently while its watcher runs, the watcher goes on forwarding Felix reports and queueing port statuses after the host lost the key and another host won: two hosts do master-only work for as long as the process lives.",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "678-728"),
            calico(ETCDUTILS, "EtcdWatcher.start", "156, 336-344"),
        ],
        fix: Some("calico-watchdog"),
        shown_with: &[],
        impact: "Two hosts forward Felix agent reports and endpoint statuses to Neutron at once, for as long as the stale process lives.",
        preconditions: &[
            "watch_status_updates dies silently while its watcher runs (no upstream path: the loop's body cannot raise, and @logging_exceptions would log a death)",
            "the host then loses the election key and another host wins",
        ],
        realism: Some(Realism::HypotheticalFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-dead-status-loop-never-replaced",
        system: "calico",
        title: "A dead master-only loop is never replaced",
        scenario: "calico-swarm",
        seeds: &[530, 2290],
        signature: Signature {
            invariants: &["agent-view-converges"],
            describe: "the master's agent-status loop is silently dead, and its process's agent-status watch canceller did not end on an exception (that hangs the watcher first: the canceller finding)",
            test: |e| {
                dead_in(e, "agent-status")
                    .is_some_and(|p| !canceller_ended(e, Some("agent-status"), Some(p)))
            },
        },
        summary: "watch_status_updates restarts a watcher whose greenlet died (line 710), but nothing restarts watch_status_updates itself, spawned once per worker process (lines 651-653, 667-669). When it is already dead on the host that wins the key, or its watcher dies after it, no watcher runs there: Felix reports stop reaching Neutron, which shows every agent down until neutron-server is restarted. (If it dies while its watcher runs, the watcher goes on: see calico-dead-status-loop-keeps-watching.) When the watch canceller of that process's agent-status watcher has also ended on an exception while the watcher still runs, the watcher hangs whatever the loop does, and the run is calico-watch-canceller-dies's: calico-swarm seed 1793, with no fix on, has h3's canceller end at 485.4 s on a timeout, Felix reports stop reaching Neutron at 550 s and the loop die at 558.6 s (with calico-canceller-catches-all on, the dead loop alone still fails it). A canceller whose watcher was stopped since holds nothing up: in seed 3866 h3's canceller ends at 85.2 s, h3 loses mastership and stops its watchers at 95 s, the loop dies at 125.3 s, and h3, master again from 150.3 s, runs no agent-status watcher: this finding. PR 12456's watchdog, which would restart the process, was not merged (PR 13024 argues that the loop it targeted is gone and that is_master()'s time check catches a stale elector).",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "678-728"),
            calico(DRIVER, "CalicoMechanismDriver._init_start_agent_status_watcher", "651-653"),
        ],
        fix: Some("calico-watchdog"),
        shown_with: &[],
        impact: "Neutron shows every Calico agent down, and port statuses stop updating, until neutron-server is restarted.",
        preconditions: &[
            "watch_status_updates dies silently on the host that is or becomes master (no upstream path: the loop's body cannot raise, and @logging_exceptions would log a death)",
        ],
        realism: Some(Realism::HypotheticalFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-watch-canceller-dies",
        system: "calico",
        title: "A watch canceller killed by an etcd timeout leaves the master's watcher hung",
        scenario: "calico-swarm",
        seeds: &[155, 43],
        signature: Signature {
            invariants: &[
                "agent-view-converges",
                "port-status-converges",
                "status-watch-round-trips",
            ],
            describe: "the master's watch canceller ended on an exception (for agent-view-converges the agent-status watcher's, for port-status-converges the endpoint-status watcher's), and no diverged port was written last by a former master or overtook a newer write",
            test: |e| {
                // Agent reports travel through the agent-status watcher alone, port statuses
                // through the endpoint-status watcher; round trips through either.
                let ended = if e.contains(AGENT_VIEW_WRONG) {
                    canceller_ended(e, Some("agent-status"), None)
                } else if e.contains(PORTS_WRONG) {
                    canceller_ended(e, Some("endpoint-status"), None)
                } else {
                    canceller_ended(e, None, None)
                };
                ended
                    && !e.contains("written last by a host that is not the master")
                    && !e.contains("it overtook a newer write")
            },
        },
        summary: "_cancel_watch_if_broken writes the round-trip key every 3.3 s and cancels a watch that saw no event for 10 s, but it catches only ConnectionFailedError: a write that times out (ConnectionTimeoutError after etcd_timeout, 60 s), an HTTP 500 (InternalServerError) or an undecodable reply ends that greenlet. The watch is then never cancelled; when its stream ends for any reason (etcd3gw's reader thread just stops, it puts nothing on the queue), the watcher greenlet waits forever on its event queue, alive, so watch_status_updates never replaces it, and while the host stays master no Felix report (agent-status watcher) or port status (endpoint-status watcher) reaches Neutron. A restart of the etcd process does not trigger it: the host's kernel resets the write's connection and etcd3gw raises ConnectionFailedError, which the canceller catches. A timeout does: in seed 155 (pinned, with 43) and in 1661 (before the message broker's hop moved the draws) etcd applied the master's round-trip writes during a spell of ambiguous timeouts (12 % and 14 % of requests for about 30 s) but their replies never came, so each write failed at etcd_timeout with ConnectionTimeoutError and the canceller ended; a write sent while etcd's host is down, or by a master cut off from etcd for over 60 s, times out the same way. The first failure is then status-watch-round-trips: the master's round-trip writes have stopped, flagged about 90 s after the last fault that disturbed the master or etcd, before the hung watcher's own effects (which wait for the watch's stream to end) show. (The former pins, 85 and 26, now end with port-status-converges on ports a former master wrote last, a dead canceller noted; 26 still fails with this finding's fix alone, by calico-port-status-stale-write's path, and in 85 either fix removes the failure.) The same outage also fails the elector's refresh, so the host loses the key; but the stamp is shared by the host's workers, and once any worker of the host wins again the dead canceller's watcher counts as the master's. After an etcd reboot the first request on each connection a process kept from before the crash is reset (ConnectionFailedError, caught by the canceller); only a write already waiting when the host went down can time out.",
        upstream: &[
            calico(ETCDUTILS, "EtcdWatcher.start._cancel_watch_if_broken", "286-328"),
            calico(ETCDV3, "Etcd3AuthClient.watch (iterator, cancel)", "561-623"),
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "710-717"),
        ],
        fix: Some("calico-canceller-catches-all"),
        shown_with: &[],
        impact: "Felix reports and port statuses stop reaching Neutron (agents shown down, ports stuck) while the host stays master, until neutron-server is restarted.",
        preconditions: &[
            "the round-trip write of _cancel_watch_if_broken fails with an error other than ConnectionFailedError: a 60 s timeout (etcd's host down, or the master cut off from etcd, for about a minute while the write is in flight), an HTTP 500 or an undecodable reply",
            "the watch's stream ends (the same outage) and the host is master again afterwards (any of its workers wins the key)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-port-status-stale-write",
        system: "calico",
        title: "Port statuses left stale across a mastership change are never corrected",
        scenario: "calico-status-backlog",
        seeds: &[217, 321],
        signature: Signature {
            invariants: &["port-status-converges"],
            describe: "a diverged port was written last by a host that is not the master",
            test: |e| {
                e.contains("written last by a host that is not the master")
                    && !e.contains("it overtook a newer write")
            },
        },
        summary: "The endpoint-status worker's port-status cache and queue live as long as the process, across mastership changes: losing mastership stops the watcher but not the 4 writer greenlets, which write the status the cache holds at write time without asking is_master(), and nothing clears the cache. Two ways follow, both seen: with a slow Neutron DB the former master's writers drain their backlog after another host won and write statuses older than the new master's; or a host that regains mastership replays its snapshot at low priority and skips every port whose status equals its stale cache, although another master changed Neutron meanwhile. Neutron applies the last write (ml2's update_port_status compares only with its own stored status), and the current master's cache holds the newer status, so nothing corrects the port until Felix next changes it.",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver._init_start_endpoint_status_watcher", "655-675"),
            calico(DRIVER, "CalicoMechanismDriver._loop_writing_port_statuses", "836-860"),
            calico(DRIVER, "CalicoMechanismDriver._try_to_update_port_status", "862-884"),
            calico(DRIVER, "CalicoMechanismDriver.on_port_status_changed", "782-817"),
        ],
        fix: Some("calico-port-status-recheck"),
        shown_with: &[],
        impact: "Neutron shows a port's status (ACTIVE, DOWN, ERROR) that Felix no longer reports, until Felix next changes it.",
        preconditions: &[
            "a mastership change (a neutron-server restart, a rolling upgrade, a lost election key)",
            "the former master's port-status writers still hold a backlog when the new master writes (a slow or unavailable Neutron DB that outlasts the handover), or a host regains mastership with a stale port-status cache after another master changed the port",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-port-status-writer-race",
        system: "calico",
        title: "Two writers of one process write the same port at once and the older status commits last",
        scenario: "calico-swarm",
        seeds: &[202, 284],
        signature: Signature {
            invariants: &["port-status-converges"],
            describe: "the diverged port's last write overtook a newer write of the same process",
            test: |e| e.contains("it overtook a newer write of the same process"),
        },
        summary: "The port-status queue is a plain PriorityQueue of (priority, key): a key can be in it twice (two quick changes of a flapping port; a retry queued 5 s after a DB error and a live event), and each of the 4 writer greenlets takes the first entry and writes the status the cache holds at that moment. Two writers can then write one port at once, each in its own session: ML2's update_port_statuses reads the port in a reader transaction and writes only if the stored status differs, in a writer transaction that takes the row lock and checks the revision it read (a conflict is a StaleDataError that neutron-lib retries). So the writer that read the newer status can find it already stored (the other writer has not committed its older one yet) and write nothing, or lose the row lock and the revision check to the older write's retry: the older status commits last either way, and nothing writes the port again until Felix changes it. In the pinned seed 71 a writer took c17-port-0 with down at 456 s, during a 58 s Neutron DB outage, and sat in neutron-lib's retries (DBConnectionError: up to 20 retries, jittered, up to 10 s apart); Felix reported up at 486 s, just after the DB came back, and the next writer read ACTIVE still stored and wrote nothing; the first writer's next retry then committed DOWN. (Earlier model versions with a one-request-at-a-time DB showed it only with a retry and a pause; no seed was found then in seeds 0-5,999 and 2,000,000-2,007,253.)",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.on_port_status_changed", "813-817"),
            calico(DRIVER, "CalicoMechanismDriver._loop_writing_port_statuses", "841-847"),
            calico(DRIVER, "CalicoMechanismDriver._try_to_update_port_status", "869-898"),
            calico(DRIVER, "CalicoMechanismDriver._retry_port_status_update", "945-952"),
            Citation {
                repo: "openstack/neutron",
                path: "neutron/plugins/ml2/plugin.py",
                function: "Ml2Plugin.update_port_statuses and _update_individual_port_db_status",
                lines: Lines::At("2442-2507"),
                commit: "2131d26f73262ec89a5d3e3e0d65521df4908e65",
            },
        ],
        fix: Some("calico-port-status-key-lock"),
        shown_with: &[],
        impact: "Neutron shows a port's older status (ACTIVE, DOWN, ERROR) after Felix reported a newer one, until Felix next changes it.",
        preconditions: &[
            "the same port is queued twice within one write's latency: two quick changes of a flapping port, or a retry after a Neutron DB error (one that outlasted neutron-lib's own 20 retries) plus a live status change",
            "two of the master's four writer greenlets take the two entries, and the newer one reads the row before the older one commits (then writes nothing) or loses the row to it",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-port-status-late-write",
        system: "calico",
        title: "A write held up by a partition or a DB outage commits after the next master's newer write",
        scenario: "calico-swarm",
        seeds: &[1193, 1946],
        signature: Signature {
            invariants: &["port-status-converges"],
            describe: "the diverged port's last write overtook a newer write of another process",
            test: |e| e.contains("it overtook a newer write of another process"),
        },
        summary: "update_port_status is a synchronous database transaction with no timeout of Calico's or the driver's (PyMySQL's read_timeout is unset), and is_master() is asked (under calico-port-status-recheck) only before it starts. A master whose host is cut off while a write is in flight keeps it in TCP's retransmission queue; its lease runs out, another host wins, and its snapshot writes the current statuses; when the partition heals the held-up write is delivered (at the next retransmission, up to 2 minutes later) and commits the status the old master read before the cut. The new master's cache already holds the newer status, so nothing corrects the port until Felix changes it. No fencing exists: ml2's update_port_status compares only with the stored status. A second path needs no partition: a write sent during a Neutron DB outage sits in neutron-lib's retries (up to 20, at most 10 s apart) while the master's manager worker dies; the respawned manager's elector zeroes the stamp and deletes the key naming its dead predecessor (election.py _check_master_process), another host wins within a second and finds the port's old status still stored, and the retry commits the older status after it (calico-swarm 2003251, with every other fix on: h1's DOWN, sent at 375 s into a 46 s outage, commits at 408 s, after h3, master since 404 s, read ACTIVE still stored at 407 s and wrote nothing; with the 20 s bound alone, the retry h1 sent at 400 s commits at 417 s the same way). A bound on the write alone cannot cover a handover quicker than the bound, so the fix also holds a new master's writes for it.",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver._try_to_update_port_status", "869-885"),
            calico(DRIVER, "CalicoMechanismDriver._loop_writing_port_statuses", "841-858"),
            calico(DRIVER, "CalicoMechanismDriver.get_workers", "522-526"),
            calico(ELECTION, "Elector.__init__", "108-109"),
            calico(ELECTION, "Elector._check_master_process", "223-259"),
        ],
        fix: Some("calico-port-status-write-deadline"),
        shown_with: &[],
        impact: "Neutron shows a port status that a former master read before it lost mastership, over the current master's newer write, until Felix next changes it.",
        preconditions: &[
            "the master's host is cut off from the Neutron DB with a port-status write in flight, for longer than the 60 s lease so that another host wins and writes",
            "the cut heals before TCP gives up on the connection (about 15 minutes), so the held-up write commits last",
            "or, with no cut: the write sits in neutron-lib's retries through a Neutron DB outage while the master's manager worker dies and is respawned (its elector deletes its dead predecessor's key, so another host wins within a second), and the outage ends before the retries run out",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-stopped-watcher-snapshot",
        system: "calico",
        title: "A stopped status watcher dispatches its late snapshot into the newer watcher's cache",
        scenario: "calico-swarm",
        seeds: &[2, 60],
        signature: Signature {
            invariants: &[
                "port-status-converges",
                "master-only-work-stops",
                "master-only-work-legitimate",
            ],
            describe: "the master wrote a diverged port last, from a stale cache, overtaking nothing; or a watcher did master-only work from its snapshot long after its host knew it had lost mastership",
            test: |e| {
                let stale_port = e.contains("written last by the master")
                    && e.contains("after Felix's status had changed: a stale cache")
                    && !e.contains("it overtook a newer write")
                    && !canceller_ended(e, Some("endpoint-status"), None);
                stale_port || (e.contains("master-only work from a snapshot") && e.contains(KNEW_LOST))
            },
        },
        summary: "EtcdWatcher.start dispatches every key of its snapshot read without looking at _stopped (only the event loop does, line 342), and the endpoint-status worker's cache and queue are shared by every watcher the process makes. When is_master() turns false while a watcher's snapshot read is held up (a partition or cut between etcd and the host), watch_status_updates stops it and, once the host is master again, starts a new watcher, whose snapshot writes the current statuses; then the old read returns and the stopped watcher dispatches its older snapshot: each port whose status changed in between differs from the cache, so the old status goes into the cache and to Neutron. The new watcher's watch starts after its own snapshot and never reports that port again, so it stays wrong until Felix changes it. The old read comes back late enough only with etcd auth configured: a snapshot read held up by a cut times out at etcd_timeout (60 s), and Etcd3AuthClient.post then authenticates and posts the same read again (etcdv3.py 542-559), which etcd answers at the revision the watcher read before the cut (get_prefix(revision=last_revision), etcdutils.py 194): the snapshot is as old as the cut is long. Without auth a held-up reply can arrive only within etcd_timeout of the read (after a 51 s retransmission TCP's next comes at 102 s, past the timeout), too soon for the host to have lost mastership (its stamp is trusted 60 s), won it back and replayed a new snapshot. The agent-status watcher takes the same path with no cut and no auth when a RabbitMQ outage blocks it inside its snapshot: on_felix_alive's RPC cast waits out the outage (oslo.messaging retries for ever), the host loses mastership meanwhile and watch_status_updates stops the watcher, and once the broker is back the stopped watcher goes on through its old snapshot, forwarding Felix reports long after its host knew it was no longer master (master-only-work-stops). When its host last held the key longer ago than master-only-work-legitimate allows, that invariant reports it first, and its message says how long after the elector knew its mastership had ended the work came, which a stale stamp cannot explain (knowing clears the stamp): calico-swarm seed 6827, with no fix on, fails so (RabbitMQ unavailable for 278 s from 324.7 s; h1's elector knew at 211.3 s; its stopped watcher forwards a report at 610.8 s). It was named calico-wall-clock-stamp for the backward step on h1 among its faults until the messages said this, but it fails the same way with calico-monotonic-stamp and passes with calico-snapshot-checks-stopped alone. With the finding's switches, calico-swarm seeds 2 and 60 show it that way, and calico-snapshot-checks-stopped removes both: in seed 2 (shrunk to 3 faults) RabbitMQ is unavailable for 199 s from 148.2 s; h1 wins at 153.6 s and its agent-status watcher blocks on the first cast of its snapshot at 155 s; etcd's host crashes at 165.7 s for 45 s, h1's refresh fails when etcd is back and watch_status_updates stops the watcher at 225 s; h2 wins at 271.7 s, and once the broker is back (347.7 s) h1's stopped watcher forwards its old snapshot's reports until 366.1 s. The watchdog (calico-watchdog) does not close this path: upstream's mutual watchdog (projectcalico/calico commit 33cd9c1793757cb9f7e64d44f97e6793af0cbe35, mech_calico.py: _check_greenlets_alive, lines 511-532, and the greenlets it registers, lines 471-497) exits the process only when a registered greenlet is dead; it registers the status, resync, compaction and port-status loops, never a watcher, and here the watcher is blocked, not dead. Calico-swarm seed 0, which shows it with no fix on (outages of 128 s and 81 s from 425.8 s), passes with the watchdog on only because the watchdog's two checker tasks change the run's interleaving from its first events (its trace differs from event 19); run as a schedule file with the same faults and options and the finding's switches, seed 0's schedule shows it with 41 of seeds 0-199. For the port-status path, no drawn seed has shown it: its former seed, calico-swarm 2005147, stopped showing it when etcd's process restart and host crash became different faults, and none was found in calico-swarm seeds 0-5,999 and 2,000,000-2,007,253 with the earlier remedies on, nor, once the Neutron DB served transactions concurrently, in seeds 0-4,999, nor in calico-swarm and calico-status-backlog seeds 2,100,000-2,103,999 with the earlier remedies on or 2,000,000-2,002,999 with every other fix on. Its replay is constructed (3 faults, etcd auth on): a graceful restart of h2 hands mastership to h1 at 40 s; h1's endpoint-status watcher reads revision 131 at 45 s, and a partition [h1] | [etcd] begins at 45.015 s, between that read's status call and its snapshot reply, for 77 s; the read times out at 105 s and its re-authentication waits out the cut; h1's stamp goes stale at 100 s, so watch_status_updates stops the watcher at 105 s, and h2 wins; after the heal h1's refresh fails, h2 restarts gracefully at 128 s and h1 wins again; its new watcher replays revision 233 at 130 s; at 136 s the stopped watcher's re-posted read returns revision 131 and it dispatches it: c10-port-0, up since 64.5 s, is written DOWN and stays so. (That run is seed 1 before the message broker's hop moved the draws; the stored replay ran seed 10 with the same three faults until the startup resync read the Neutron DB, and now runs seed 1.) With those faults 30 of seeds 0-199 show it on the current model (13 of 0-99 before) (the run's own randomness, Felix's port changes above all, decides whether a port changes in between). Odds: random draws seldom meet it, since the cut must begin within one round trip (milliseconds) between the watcher's two reads, with auth on, last past etcd_timeout and heal so that the host wins again and replays before the re-posted read returns (about 30 s); in the constructed replay a second restart of the other host hands mastership back.",
        upstream: &[
            calico(ETCDUTILS, "EtcdWatcher.start", "156-213, 340-344"),
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "690-728"),
            calico(ETCDV3, "Etcd3AuthClient.post", "542-559"),
            calico(DRIVER, "CalicoMechanismDriver.on_port_status_changed", "782-817"),
        ],
        fix: Some("calico-snapshot-checks-stopped"),
        shown_with: EARLIER_REMEDIES,
        impact: "Port statuses from an old snapshot overwrite newer ones in the master's cache, so Neutron is written stale statuses until Felix next changes them.",
        preconditions: &[
            "etcd auth configured (etcd_username and etcd_password), so that a timed-out read is re-authenticated and posted again at its old revision",
            "a cut between etcd and the host that begins between a status watcher's status read and its snapshot reply (one round trip, milliseconds) and outlasts etcd_timeout (60 s), so that the host's stamp goes stale and the watcher is stopped while its read waits",
            "the host wins mastership back after the heal (another host steps down, e.g. a graceful restart) and its new watcher replays its snapshot before the stopped watcher's re-posted read returns (the re-authentication's connection retries, about 30 s), and a port's status changed in between",
            "or, for the agent-status path: a RabbitMQ outage that blocks the agent-status watcher's RPC cast inside its snapshot across a loss of its host's mastership (a broker restart, upgrade or resource alarm lasting minutes), so the stopped watcher forwards old reports when the broker returns",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-double-compaction",
        system: "calico",
        title: "Two hosts compact in the same period during a handover",
        scenario: "calico-swarm",
        seeds: &[11919, 12312],
        signature: Signature {
            invariants: &["compaction-once-per-period"],
            describe: "two compactions within one period",
            test: |e| e.contains("after the previous compaction"),
        },
        summary: "The trigger key that limits compaction to one per period is read, then written after compacting, with no transaction, and the check runs long after its is_master(). A former master that passed is_master() and whose read of the trigger lease's TTL then hung for etcd_timeout (60 s) takes the Etcd3Exception for an expired lease (mech_calico.py line 1467) and compacts although the new master just has; and a master whose trigger-key write after compacting fails (in the pinned seed, an ambiguous timeout) leaves no trigger, so the next master compacts again 40 s later. Not harmless: the second compactor reads the first one's last key, so it keeps only the minimum 1,000 revisions instead of a period of history.",
        upstream: &[
            calico(DRIVER, "check_request_etcd_compaction", "1413-1607"),
            calico(DRIVER, "write_compaction_keys", "1610-1624"),
        ],
        fix: Some("calico-compaction-claims-period"),
        shown_with: &[],
        impact: "etcd is compacted twice in one period during a handover, keeping only 1,000 revisions instead of a period of history (watchers resuming from an older revision must resync).",
        preconditions: &[
            "a handover while the former master runs its compaction check, or soon after it compacted",
            "the former master's read of the trigger lease's TTL hangs for etcd_timeout (60 s), or its write of the trigger key after compacting fails",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "calico-elector-hangs-creating-watch",
        system: "calico",
        title: "Electors blocked for ever creating a watch that etcd's crashed host never answers",
        scenario: "calico-swarm",
        seeds: &[],
        signature: Signature {
            invariants: &["master-elected"],
            describe: "no master after faults stop, the election key gone",
            test: |e| e.contains("the election key is absent"),
        },
        summary: "A non-master elector waits for the key to change with etcdv3.watch_once (election.py 196-214), which creates an etcd3gw Watcher before its 20 s timeout starts; the Watcher posts its create request through the requests session with stream=True and no timeout (etcd3gw watch.py 61-63), unlike every other call, which networking-calico bounds by etcd_timeout because of an etcd hang (etcdv3.py 530-541). urllib3 sets no TCP keepalive, and the kernel times out only unacknowledged data, so a create request etcd's host had received when it crashed is never answered and never fails: the elector's greenlet waits for ever, with nothing logged. Each etcd host crash that catches electors mid-creation disables them for good; when the master then loses its key, nobody campaigns again. Since the message broker's hop moved the draws, no drawn seed has shown it (with the finding's switches: calico-swarm 2,000,000-2,039,999, and 0-9,999 under each profile), so it has none pinned until one is. Its replay is constructed (found by running schedules of etcd's slowness and host crashes at random times and sizes within the scenario's ranges, then shrunk to 3 faults, the second crash's 1.8 s set back to 30 s, a host's reboot time; seed 0, and with them 131 of seeds 0-199 show it): etcd's host crashes at 348.7 s for 21 s; the master h2's refresh, in flight when the host crashed, fails at 375.8 s when the rebooted host resets its connection, so h2 goes back to the election and, finding its own key (its lease renewed for a full TTL by etcd's recovery) and its own pid alive, waits for the key to change, as h1 does; from 380.9 s etcd serves each request 1.6 s late, so requests queue, and each elector's watch create request, sent again every 20 s, waits in that queue; the key's lease runs out at 430.9 s, and at 431.75 s, before either creation is answered, etcd's host crashes for 30 s: neither creation is ever answered, no elector sees the key's deletion, and no host is master again. With calico-watch-create-timeout on, the creations fail at etcd_timeout and h1 wins at 489 s. Before the broker's hop, in seed 2026671 etcd's host crashed three times (at 57 s, 442 s and 516 s), each while etcd was slow or just after (by 0.1 to 2.3 s a request, requests queued), and after the last crash no host ever became master again. (It was first seen at seed 2004702, whose run changed when the model dropped the periodic resync upstream no longer has.)",
        upstream: &[
            calico(ELECTION, "Elector._vote", "196-214"),
            calico(ETCDV3, "watch_once", "387-396"),
            Citation {
                repo: "openstack/etcd3gw",
                path: "etcd3gw/watch.py",
                function: "Watcher.__init__",
                lines: Lines::At("61-63"),
                commit: "30567b4c75b50b671b424fdfe0810ca00d54e662",
            },
        ],
        fix: Some("calico-watch-create-timeout"),
        shown_with: EARLIER_REMEDIES,
        impact: "No neutron-server host becomes Calico master again (no compaction, no Felix reports or port statuses reach Neutron) until the blocked workers are restarted; each blocked elector is silent.",
        preconditions: &[
            "etcd's host crashes (no connection reset) while electors' watch create requests are at etcd unanswered: milliseconds per creation, seconds when etcd is overloaded and queues requests",
            "every elector has been caught that way when the master loses its key: hangs accumulate over several crashes, or one crash catches them all while etcd is slow after an earlier crash ended the master's refresh (the constructed replay)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding::retired(RetiredFinding {
        id: "calico-pause-acts-on-old-answer",
        system: "calico",
        title: "A long pause lets a watcher act on a pre-pause is_master() answer",
        scenario: "calico-split-brain",
        seeds: &[93],
        signature: Signature {
            invariants: &["master-only-work-legitimate"],
            describe: "the acting host was paused and acted on a pre-pause answer",
            test: |e| e.contains("acted on what is_master() told it before the pause"),
        },
        summary: "A host paused past the lease TTL resumed and dispatched watch events before its next is_master() poll, after another host won.",
        upstream: &[
            calico(ETCDUTILS, "EtcdWatcher.start", "336-344"),
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "719-728"),
        ],
        fix: None,
        reason: "an artefact of the model: its watcher went on dispatching events for up to 3.3 s after its poll saw the loss, and madsim runs a resumed node's ready tasks in random order. Upstream's EtcdWatcher returns at the first event that finds _stopped set (etcdutils.py 342), and eventlet fires the overdue 5 s poll timer before the watcher greenlet gets an event that arrived during the pause (eventlet hub.py 345-364, queue.py 386-388 at c8f903a3). With both modelled, calico-split-brain passes 2,000 seeds and its old fix (calico-recheck-before-act) is gone.",
    }),
    Finding::retired(RetiredFinding {
        id: "calico-dead-status-watcher-never-replaced",
        system: "calico",
        title: "A silently dead status watcher is never replaced",
        scenario: "calico-swarm",
        seeds: &[283],
        signature: Signature {
            invariants: &["agent-view-converges"],
            describe: "the master's status watcher is silently dead",
            test: |e| e.contains("silently dead tasks on"),
        },
        summary: "The model ran the master-only loop and the watcher as one task, so any death of either stopped status forwarding for good.",
        upstream: &[calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "704-717")],
        fix: Some("calico-watchdog"),
        reason: "narrowed: upstream runs the watcher in its own greenlet and watch_status_updates replaces it at its next poll when it died (mech_calico.py 710), so the death of the watcher itself is repaired within 10 s. What remains real is the death of the loop (calico-dead-status-loop-never-replaced, calico-dead-status-loop-keeps-watching) and a watcher blocked forever (calico-watch-canceller-dies).",
    }),
];
