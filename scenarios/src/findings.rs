//! The findings catalog: every violation of a model's default (upstream) logic that exploration
//! found, active or retired, with the upstream code that produces it. `faultline findings` prints
//! it; docs/findings.md is generated from it ([`markdown`]); the tests reproduce every
//! active finding at its pinned seeds through its exact [`Signature`] and check that its fix
//! removes it.

use serde::Serialize;
use sim::Violation;

/// Where upstream's code does it: repository, path, function, lines, at a commit.
#[derive(Debug, Serialize)]
pub struct Citation {
    pub repo: &'static str,
    pub path: &'static str,
    pub function: &'static str,
    pub lines: &'static str,
    pub commit: &'static str,
}

/// How to recognise a finding's violation: its invariant, and a test on the causal sentence that
/// tells it apart from other findings on the same invariant.
#[derive(Serialize)]
pub struct Signature {
    /// The invariants it shows as (one finding can break more than one promise).
    pub invariants: &'static [&'static str],
    /// What the sentence must say, in words.
    pub describe: &'static str,
    #[serde(skip)]
    pub test: fn(&str) -> bool,
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.invariants.join(" | "), self.describe)
    }
}

impl Signature {
    /// Whether `v` is this finding's violation.
    pub fn matches(&self, v: &Violation) -> bool {
        self.invariants.contains(&v.invariant.as_str()) && (self.test)(&v.explanation)
    }
}

/// Active, or retired (with the reason).
#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Status {
    Active,
    Retired { reason: &'static str },
}

/// One finding.
#[derive(Debug, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub system: &'static str,
    pub title: &'static str,
    pub scenario: &'static str,
    /// Seeds of `scenario` that show it with the default model.
    pub seeds: &'static [u64],
    pub signature: Signature,
    /// The causal sentence: what happens, step by step.
    pub summary: &'static str,
    /// The upstream code that produces it.
    pub upstream: &'static [Citation],
    /// The `--fix` switch that removes it.
    pub fix: Option<&'static str>,
    /// Switches (newer upstream behaviours) that must be on for `seeds` to show it; empty: the
    /// default model (the pinned upstream commit) shows it.
    pub shown_with: &'static [&'static str],
    #[serde(flatten)]
    pub status: Status,
}

impl Finding {
    /// Still a finding of the current model.
    pub fn is_active(&self) -> bool {
        matches!(self.status, Status::Active)
    }
}

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
        lines,
        commit: CALICO_COMMIT,
    }
}

const CILIUM: &str = "cilium/cilium";
const CILIUM_COMMIT: &str = "ed90dd5ea4c754a04a8135c6bb9c8afe29b75811";

const fn cilium(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: CILIUM,
        path,
        function,
        lines,
        commit: CILIUM_COMMIT,
    }
}

/// The dead-task note of a violation names one of these tasks.
fn names_dead(e: &str, tasks: &[&str]) -> bool {
    let Some((_, dead)) = e.split_once("silently dead tasks on") else {
        return false;
    };
    let dead = dead.split("; ").next().unwrap_or("");
    tasks.iter().any(|t| dead.contains(&format!("{t} of ")))
}

/// Every finding, active or retired.
pub static FINDINGS: &[Finding] = &[
    Finding {
        id: "calico-wall-clock-stamp",
        system: "calico",
        title: "A backward wall-clock step keeps a stale mastership stamp fresh",
        scenario: "calico-clock-skew",
        seeds: &[52, 135],
        signature: Signature {
            invariants: &["master-only-work-legitimate"],
            describe: "a host acts as master after a backward clock step on it",
            test: |e| e.contains("clock step -"),
        },
        summary: "The elector stamps the shared value with time.time() when it wins and after each refresh, and is_master() answers yes while time.time() minus the stamp is under 60 s. When the elector stops refreshing without running its cleanup and the host's wall clock then steps back, the stamp looks younger than it is: the host's watchers keep acting as master after its lease expired and another host won, beyond every bound the code allows (stamp lag, TTL and one poll). The seeds get there through a silently dead elector (the fault model's hung greenlet); upstream's own exceptions run the cleanup (election.py 150-151, 332-334), so the real triggers are a hung manager process or hub (the deadlock note at mech_calico.py 164-186) rather than an exception. A refresh merely blocked for etcd_timeout stays within the bound.",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.is_master", "580-601"),
            calico(ELECTION, "Elector._become_master", "290, 317"),
        ],
        fix: Some("calico-monotonic-stamp"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "calico-dead-status-loop-keeps-watching",
        system: "calico",
        title: "A dead master-only loop never stops its watcher",
        scenario: "calico-silent-task-death",
        seeds: &[45, 246],
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
        status: Status::Active,
    },
    Finding {
        id: "calico-dead-status-loop-never-replaced",
        system: "calico",
        title: "A dead master-only loop is never replaced",
        scenario: "calico-swarm",
        seeds: &[1560, 2733],
        signature: Signature {
            invariants: &["agent-view-converges"],
            describe: "the master's agent-status loop is silently dead",
            test: |e| names_dead(e, &["agent-status"]),
        },
        summary: "watch_status_updates restarts a watcher whose greenlet died (line 710), but nothing restarts watch_status_updates itself, spawned once per worker process (lines 651-653, 667-669). When it is already dead on the host that wins the key, or its watcher dies after it, no watcher runs there: Felix reports stop reaching Neutron, which shows every agent down until neutron-server is restarted. (If it dies while its watcher runs, the watcher goes on: see calico-dead-status-loop-keeps-watching.) PR 12456's watchdog, which would restart the process, was not merged (PR 13024 argues that the loop it targeted is gone and that is_master()'s time check catches a stale elector).",
        upstream: &[
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "678-728"),
            calico(DRIVER, "CalicoMechanismDriver._init_start_agent_status_watcher", "651-653"),
        ],
        fix: Some("calico-watchdog"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "calico-watch-canceller-dies",
        system: "calico",
        title: "A watch canceller killed by an etcd timeout leaves the master's watcher hung",
        scenario: "calico-swarm",
        seeds: &[1322, 3598],
        signature: Signature {
            invariants: &["agent-view-converges", "port-status-converges"],
            describe: "the master's watch canceller ended on an exception",
            test: |e| e.contains("watch-canceller of"),
        },
        summary: "_cancel_watch_if_broken writes the round-trip key every 3.3 s and cancels a watch that saw no event for 10 s, but it catches only ConnectionFailedError: a write that times out (ConnectionTimeoutError after etcd_timeout, 60 s), an HTTP 500 (InternalServerError) or an undecodable reply ends that greenlet. The watch is then never cancelled; when its stream ends for any reason (etcd3gw's reader thread just stops, it puts nothing on the queue), the watcher greenlet waits forever on its event queue, alive, so watch_status_updates never replaces it, and while the host stays master no Felix report (agent-status watcher) or port status (endpoint-status watcher) reaches Neutron. The pinned seed's trigger is the etcd host dying while the write was in flight; upstream the elector's next refresh would often also fail there (a reset on its pooled connection) and give up mastership, which the model does not show (it keeps no connection state), so the likelier real trigger is a 500 or a timeout on the round-trip write followed later by an etcd restart.",
        upstream: &[
            calico(ETCDUTILS, "EtcdWatcher.start._cancel_watch_if_broken", "286-328"),
            calico(ETCDV3, "Etcd3AuthClient.watch (iterator, cancel)", "561-623"),
            calico(DRIVER, "CalicoMechanismDriver.watch_status_updates", "710-717"),
        ],
        fix: Some("calico-canceller-catches-all"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "calico-port-status-stale-write",
        system: "calico",
        title: "Port statuses left stale across a mastership change are never corrected",
        scenario: "calico-status-backlog",
        seeds: &[5, 79],
        signature: Signature {
            invariants: &["port-status-converges"],
            describe: "a diverged port was written last by a host that is not the master (and no watch canceller died)",
            test: |e| {
                e.contains("written last by a host that is not the master")
                    && !e.contains("watch-canceller of")
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
        status: Status::Active,
    },
    Finding {
        id: "calico-double-compaction",
        system: "calico",
        title: "Two hosts compact in the same period during a handover",
        scenario: "calico-swarm",
        seeds: &[3603],
        signature: Signature {
            invariants: &["compaction-once-per-period"],
            describe: "two compactions within one period",
            test: |e| e.contains("after the previous compaction"),
        },
        summary: "The trigger key that limits compaction to one per period is read, then written after compacting, with no transaction, and the check runs long after its is_master(): in the pinned seed a former master passed is_master(), then its read of the trigger lease's TTL hung for etcd_timeout (60 s); the Etcd3Exception is taken for an expired lease (line 1466), so it compacted 26 ms after the new master had. Not harmless: the second compactor read the first one's last key, so it kept only the minimum 1,000 revisions instead of a period of history.",
        upstream: &[
            calico(DRIVER, "check_request_etcd_compaction", "1413-1607"),
            calico(DRIVER, "write_compaction_keys", "1610-1624"),
        ],
        fix: Some("calico-compaction-claims-period"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
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
        shown_with: &[],
        status: Status::Retired {
            reason: "an artefact of the model: its watcher went on dispatching events for up to 3.3 s after its poll saw the loss, and madsim runs a resumed node's ready tasks in random order. Upstream's EtcdWatcher returns at the first event that finds _stopped set (etcdutils.py 342), and eventlet fires the overdue 5 s poll timer before the watcher greenlet gets an event that arrived during the pause (eventlet hub.py 345-364, queue.py 386-388 at c8f903a3). With both modelled, calico-split-brain passes 2,000 seeds and its old fix (calico-recheck-before-act) is gone.",
        },
    },
    Finding {
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
        shown_with: &[],
        status: Status::Retired {
            reason: "narrowed: upstream runs the watcher in its own greenlet and watch_status_updates replaces it at its next poll when it died (mech_calico.py 710), so the death of the watcher itself is repaired within 10 s. What remains real is the death of the loop (calico-dead-status-loop-never-replaced, calico-dead-status-loop-keeps-watching) and a watcher blocked forever (calico-watch-canceller-dies).",
        },
    },
    Finding {
        id: "cilium-handover-erases-release",
        system: "cilium",
        title: "An operator that did not make an unassign erases the entry that protects the IP",
        scenario: "cilium-swarm",
        seeds: &[2706, 6143],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the erasing status write is another operator's than the unassign",
            test: |e| erased_by_other_operator(e) == Some(true),
        },
        summary: "Judged against shared/spec/cilium.md with an injected fault (a standby operator that believes it leads).",
        upstream: &[
            cilium("operator/cmd/root.go", "runOperator: WithLeaderLifecycle (IPAM is leader-only)", "193-258"),
            cilium("operator/cmd/root.go", "legacyOnLeader.onStart (node manager, CiliumNode informer)", "526-581"),
        ],
        fix: None,
        shown_with: &[],
        status: Status::Retired {
            reason: "built on the injected 'standby believes it leads' fault, which upstream has no counterpart for: a non-leader cilium-operator runs no IPAM at all (operator/cmd/root.go 193-258, 526-581 at ed90dd5). Operators now elect through a client-go Lease; the real successor of this finding, a new leader rebuilding release-ips from nothing, is cilium-new-leader-wipes-release-ips. Re-run at the previous model (commit 8d50fd0), every failure left with both old Cilium fixes on (cilium-split-brain seeds 1281, 2331, 2631, 4856, 1001114, 1001781; cilium-swarm 473, 3964, 1004567) had that fault active when it failed: operator and operator-2 acting together by fiat for 50 to 270 s, which client-go's election never allows (its overlaps last until a deposed leader's renew round fails, plus the graceful shutdown's linger: cilium-lingering-leader-acts, cilium-paused-leader-acts). The rebuilt scenarios draw different worlds from those seeds, and none of them fails now.",
        },
    },
    Finding {
        id: "cilium-handover-releases-in-use",
        system: "cilium",
        title: "An operator unassigns an IP a pod uses, deciding from an old status",
        scenario: "cilium-split-brain",
        seeds: &[2233],
        signature: Signature {
            invariants: &["no-release-in-use"],
            describe: "the operator decided from a status whose used IPs lacked the IP",
            test: |e| e.contains("whose used IPs did not include"),
        },
        summary: "Judged against shared/spec/cilium.md with an injected fault (a standby operator that believes it leads).",
        upstream: &[
            cilium("operator/cmd/root.go", "runOperator: WithLeaderLifecycle (IPAM is leader-only)", "193-258"),
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "package doc (no fencing)", "17-20"),
        ],
        fix: None,
        shown_with: &[],
        status: Status::Retired {
            reason: "built on the injected 'standby believes it leads' fault (no upstream counterpart, see cilium-handover-erases-release); seed 2233 no longer fails. Releases of an IP in use that remain come from an agent restart (cilium-restart-acks-in-use) or from a deposed leader acting on its stale cache (cilium-lingering-leader-acts, cilium-paused-leader-acts).",
        },
    },
    Finding {
        id: "cilium-unknown-unassign-aborted",
        system: "cilium",
        title: "An unassign whose answer is lost is later aborted, and the agent hands out the IP",
        scenario: "cilium-swarm",
        seeds: &[8485],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased an entry that was not 'released'",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && !e.contains("'released' entry")
                    && !e.contains("was deposed")
            },
        },
        summary: "The cloud applies an unassign of X but the answer is lost (a timeout). handleIPRelease returns the error and keeps X's local state and time; nothing marks X released. Once the cloud's interface list no longer shows X, X leaves the release list and the pass deletes its time and state (deleteLocalReleaseStatus). The next status write omits X's entry, ahead of the spec write that drops X from the pool, so the agent sees X in its pool with no entry and hands it out, though the cloud no longer holds it. (Retired once as a model artefact when the model aborted from its own state; the faithful model reaches it through upstream's own paths.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.handleIPRelease (error keeps the state)", "863-895"),
            cilium("pkg/ipam/node.go", "Node.handleIPRelease (not in the list: state deleted)", "826-832"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
        ],
        fix: Some("cilium-hold-unknown-release"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-lingering-leader-acts",
        system: "cilium",
        title: "A deposed operator, lingering in its graceful shutdown, acts on IPs beside the new leader",
        scenario: "cilium-split-brain",
        seeds: &[73, 4514],
        signature: Signature {
            invariants: &["agent-allocates-from-pool", "no-release-in-use"],
            describe: "the unassigning operator's leadership had ended and it was lingering in its graceful shutdown",
            test: |e| e.contains("was lingering in its graceful shutdown"),
        },
        summary: "The leader's renewals fail (its API answers are slow, or it was paused), another operator takes the Lease and starts IPAM from empty memory. The old leader's OnStoppedLeading starts a graceful hive shutdown: its IPAM goroutines run on until the stop hooks reach legacy.onStop. In that time it unassigns an IP on an agent's ready-for-release it still holds, while the new leader, from its own cloud cache, has already wiped or aborted that entry and still lists the IP in the pool, so the agent hands the IP, gone from the cloud, to a pod (or the old leader unassigns an IP a pod has just been given).",
        upstream: &[
            cilium("operator/cmd/root.go", "runOperator: OnStoppedLeading (graceful shutdown)", "454-458"),
            cilium("operator/cmd/root.go", "legacyOnLeader.onStop (IPAM context cancelled last)", "515-522"),
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "LeaderElector.Run / renew", "204-293"),
        ],
        fix: Some("cilium-exit-on-lost-lead"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-paused-leader-acts",
        system: "cilium",
        title: "A paused operator resumes and unassigns an IP a pod uses, beside the new leader",
        scenario: "cilium-split-brain",
        seeds: &[29],
        signature: Signature {
            invariants: &["agent-allocates-from-pool", "no-release-in-use"],
            describe: "the unassigning operator was deposed but had not yet seen it (no graceful shutdown involved)",
            test: |e| e.contains("was deposed:"),
        },
        summary: "The leader is paused (VM freeze, GC) past the lease duration; another operator takes the Lease, starts from empty memory and wipes release-ips, and the agent hands a formerly ready-for-release IP to a pod. The old leader resumes inside a renew round that has not yet failed (client-go gives it until the round's deadline) and, from its informer copy, unassigns the IP on the agent's old ready-for-release. Cloud calls carry no token, so nothing stops it: client-go states that its leader election gives no fencing.",
        upstream: &[
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "package doc (no fencing); renew", "17-20, 267-293"),
            cilium("pkg/ipam/node.go", "Node.handleIPRelease / handleIPReleaseResponse", "758-776, 797-898"),
            cilium("pkg/aws/ec2/ec2.go", "Client.UnassignPrivateIpAddresses", "708-719"),
        ],
        fix: Some("cilium-fence-cloud"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-restart-acks-in-use",
        system: "cilium",
        title: "A restarted agent answers ready-for-release for an IP a pod still uses",
        scenario: "cilium-silent-task-death",
        seeds: &[1068, 1495],
        signature: Signature {
            invariants: &["no-release-in-use"],
            describe: "the status the operator decided from was written by a restarted agent, and the operator still led",
            test: |e| restarted_writer(e) && !e.contains("was deposed"),
        },
        summary: "A pod gets IP X; before the agent's rate-limited status write (15 s, or never while its status writer is dead) reports X as used, the operator marks X, and the agent is restarted. The restarted agent's endpoint restore cannot take X back because X is marked for release, so the pod keeps X while the agent no longer counts it; on the next CiliumNode event the agent answers ready-for-release, and the operator unassigns X under the pod. Restore also runs after IPAM has started, so an answer can come before restore at all.",
        upstream: &[
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource", "338-449"),
            cilium("pkg/ipam/crd.go", "nodeStore.allocate / isIPInReleaseHandshake", "510-545"),
            cilium("daemon/cmd/daemon.go", "newDaemon (startIPAM, restoreOldEndpoints)", "764-821"),
            cilium("daemon/cmd/state.go", "restoreOldEndpoints / AllocateIPWithoutSyncUpstream", "106-109, 363-381"),
        ],
        fix: Some("cilium-restore-before-ack"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-released-state-dropped",
        system: "cilium",
        title: "The operator drops its own released entry while the spec still lists the IP",
        scenario: "cilium-clock-skew",
        seeds: &[4579, 8348],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased the released entry",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && e.contains("'released' entry")
                    && !e.contains("was deposed")
            },
        },
        summary: "After unassigning X the operator's cloud cache still lists X until the instance sync, so its status write lists X on the interface and as free; the next pass puts X on its release list again (timed), and once the refreshed interfaces drop X the pass deletes X's time and its local state, 'released' included (deleteLocalReleaseStatus). The status write that follows omits X's entry and goes before the spec write that removes X from the pool: in between, the agent sees X in its pool with no handshake entry and hands it to a pod, though the cloud no longer holds it. (handleIPRelease read at cilium/cilium 0013798761eec0dda0217042f6ee3ccfa857f7ff; the lines are those of the pinned commit.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.handleIPRelease", "797-898"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
            cilium("pkg/aws/eni/node.go", "Node.PrepareIPRelease", "131-198"),
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource", "363-444"),
        ],
        fix: Some("cilium-keep-released"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-new-leader-wipes-release-ips",
        system: "cilium",
        title: "A new operator leader wipes release-ips while the spec still lists released IPs",
        scenario: "cilium-swarm",
        seeds: &[1647, 2320],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "another operator process than the unassigning one erased the entry, and the unassigning one still led when it acted",
            test: |e| erased_by_other_operator(e) == Some(true) && !e.contains("was deposed"),
        },
        summary: "The leader unassigns X, then dies or loses the lease before the status write that says 'released' or the spec write that removes X from the pool. The new leader starts with empty handshake state; its first status write rebuilds release-ips from that empty state, dropping X's entry, and goes before its spec write. In between (or until the next sync if the spec write fails), the agent sees X in its pool with no entry and hands it to a pod, though the cloud no longer holds it.",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.PopulateIPReleaseStatus", "1013-1031"),
            cilium("pkg/ipam/node_manager.go", "NodeManager.Upsert", "284-387"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
            cilium("operator/cmd/root.go", "runOperator (leader-only IPAM)", "437-470, 526-581"),
        ],
        fix: Some("cilium-adopt-release-ips"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-reissued-ip-stuck-released",
        system: "cilium",
        title: "An IP the cloud gives back to the same node stays 'released' and is never used (issue #39981)",
        scenario: "cilium-clock-skew",
        seeds: &[5198, 7638],
        signature: Signature {
            invariants: &["released-entries-clear"],
            describe: "a released entry remains for an IP the cloud gave back to the same node",
            test: |e| e.contains("released entries remain"),
        },
        summary: "The operator releases X and writes 'released'; the cloud (which picks any free address of the subnet) gives X back to the same node before the agent saw X leave its pool. The agent deletes a released entry only once the IP is out of the pool, the operator keeps writing its local 'released', and the agent never hands out an IP in a released state: X is lost to the node for good. Upstream issue #39981 (v1.17); fixed in newer operators by dropping a released entry whose IP is in the spec pool (--fix cilium-readd-released-ip, which has its own hazard: cilium-readd-drops-fresh-release).",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.abortNoLongerExcessIPs / removeStaleReleaseIPs", "720-755"),
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource (released: deleted only once out of the pool)", "371-375"),
            cilium("pkg/ipam/crd.go", "isIPInReleaseHandshake", "535-545"),
        ],
        fix: Some("cilium-readd-released-ip"),
        shown_with: &[],
        status: Status::Active,
    },
    Finding {
        id: "cilium-readd-drops-fresh-release",
        system: "cilium",
        title: "Newer upstream's #39981 clean-up drops a fresh 'released' entry while the spec still lists the IP",
        scenario: "cilium-clock-skew",
        seeds: &[3930],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased the released entry",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && e.contains("'released' entry")
                    && !e.contains("was deposed")
            },
        },
        summary: "With newer upstream's fix for #39981, abortNoLongerExcessIPs drops a 'released' entry whose IP is in the observed CiliumNode's spec pool. But right after a release the spec still lists the IP: the operator writes the spec from its cloud cache, which keeps the IP until the instance sync. So the first pass after the release in which the IP is not on the release list drops the fresh 'released' entry; the status write that omits it goes before the spec write that removes the IP, and in between the agent hands the IP, gone from the cloud, to a pod. Shown with --fix cilium-readd-released-ip (the newer behaviour); checking the cloud, not the spec, after a describe that started after the release closes it.",
        upstream: &[
            Citation {
                repo: CILIUM,
                path: "operator/pkg/ipam/nodemanager/node.go",
                function: "Node.abortNoLongerExcessIPs (the #39981 branch)",
                lines: "function only",
                commit: "35b06d5aefdf",
            },
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
        ],
        fix: Some("cilium-readd-after-resync"),
        shown_with: &["cilium-readd-released-ip"],
        status: Status::Active,
    },
];

/// In an `agent-allocates-from-pool` sentence: whether the operator whose status write removed the
/// entry differs from the one that unassigned the IP (None: the sentence says neither).
fn erased_by_other_operator(e: &str) -> Option<bool> {
    let unassigner = e.split(" having unassigned").next()?.rsplit(", ").next()?;
    let eraser = e
        .split("removed from release-ips by ")
        .nth(1)?
        .split("'s ")
        .next()?;
    Some(unassigner != eraser)
}

/// In a `no-release-in-use` sentence: whether the agent that wrote the status the operator
/// decided from is a restarted one (not its first process, pid 1001).
fn restarted_writer(e: &str) -> bool {
    e.split("written by ")
        .nth(1)
        .and_then(|w| w.split(' ').next())
        .and_then(|w| w.rsplit(':').next())
        .is_some_and(|pid| pid != "1001")
}

/// The active finding of `scenario` that `v` is, if any.
pub fn finding_for(scenario: &str, v: &Violation) -> Option<&'static Finding> {
    FINDINGS
        .iter()
        .find(|f| f.is_active() && f.scenario_matches(scenario) && f.signature.matches(v))
}

impl Finding {
    /// Whether a run of `scenario` may show this finding: any scenario of its system (a finding is
    /// a mechanism; its seeds are in `scenario`).
    fn scenario_matches(&self, scenario: &str) -> bool {
        scenario.starts_with(&format!("{}-", self.system))
    }
}

/// The findings section of docs/findings.md.
pub fn markdown() -> String {
    let mut out = String::new();
    for (i, f) in FINDINGS.iter().filter(|f| f.is_active()).enumerate() {
        let seeds: Vec<String> = f.seeds.iter().map(u64::to_string).collect();
        let with: String = f.shown_with.iter().map(|w| format!(" --fix {w}")).collect();
        out += &format!(
            "{}. **{}** (`{}`; `{}`{with}, seed{} {}). {}",
            i + 1,
            f.title,
            f.id,
            f.scenario,
            if f.seeds.len() > 1 { "s" } else { "" },
            seeds.join(", "),
            f.summary
        );
        if !f.upstream.is_empty() {
            let cites: Vec<String> = f
                .upstream
                .iter()
                .map(|c| {
                    let file = c
                        .path
                        .strip_prefix("networking-calico/networking_calico/")
                        .unwrap_or(c.path);
                    let at = match c.commit == f.upstream[0].commit {
                        true => String::new(),
                        false => format!(" at {}", &c.commit[..8]),
                    };
                    format!("`{file}` `{}` (lines {}){at}", c.function, c.lines)
                })
                .collect();
            out += &format!(
                " Upstream ({} at {}): {}.",
                f.upstream[0].repo,
                &f.upstream[0].commit[..8],
                cites.join("; ")
            );
        }
        if let Some(fix) = f.fix {
            out += &format!(" Remedy: `--fix {fix}`.");
        }
        out += "\n";
    }
    out += "\nRetired (model artefacts, kept with the reason):\n\n";
    for f in FINDINGS {
        if let Status::Retired { reason } = &f.status {
            out += &format!("- **{}** (`{}`): {}\n", f.title, f.id, reason);
        }
    }
    out
}
