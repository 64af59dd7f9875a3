//! Cilium's findings: violations of the default (upstream) logic, with the upstream code that
//! produces each, and the retired ones with their reasons.

use super::monitor::{CLEAN_UP_RUNS, DROPPED_RELEASED, EXCESS_AGAIN};
use crate::findings::{Citation, Finding, Lines, Realism, RetiredFinding, Signature, Status};

const CILIUM: &str = "cilium/cilium";
const CILIUM_COMMIT: &str = "ed90dd5ea4c754a04a8135c6bb9c8afe29b75811";

const fn cilium(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: CILIUM,
        path,
        function,
        lines: Lines::At(lines),
        commit: CILIUM_COMMIT,
    }
}

/// What an `agent-allocates-from-pool` sentence says when the erasing operator had dropped its
/// `released` state for the IP being back in the pool it checked (newer upstream's clean-up).
const BACK_IN_POOL: &str = "for the IP being in the pool it checked";

/// Every Cilium finding, active or retired.
pub static FINDINGS: &[Finding] = &[
    Finding::retired(RetiredFinding {
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
        summary: "Judged against the protocol description (docs/upstream/cilium.md) with an injected fault (a standby operator that believes it leads).",
        upstream: &[
            cilium("operator/cmd/root.go", "WithLeaderLifecycle in ControlPlane (IPAM is leader-only)", "193-258"),
            cilium("operator/cmd/root.go", "legacyOnLeader.onStart (node manager, CiliumNode informer)", "526-581"),
        ],
        fix: None,
        reason: "built on the injected 'standby believes it leads' fault, which upstream has no counterpart for: a non-leader cilium-operator runs no IPAM at all (operator/cmd/root.go 193-258, 526-581 at ed90dd5). Operators now elect through a client-go Lease; the real successor of this finding, a new leader rebuilding release-ips from nothing, is cilium-new-leader-wipes-release-ips. Re-run at the previous model (commit 8d50fd0), every failure left with both old Cilium fixes on (cilium-split-brain seeds 1281, 2331, 2631, 4856, 1001114, 1001781; cilium-swarm 473, 3964, 1004567) had that fault active when it failed: operator and operator-2 acting together by fiat for 50 to 270 s, which client-go's election never allows (its overlaps last until a deposed leader's renew round fails, plus the graceful shutdown's linger: cilium-lingering-leader-acts, cilium-paused-leader-acts). The rebuilt scenarios draw different worlds from those seeds, and none of them fails now.",
    }),
    Finding::retired(RetiredFinding {
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
        summary: "Judged against the protocol description (docs/upstream/cilium.md) with an injected fault (a standby operator that believes it leads).",
        upstream: &[
            cilium("operator/cmd/root.go", "WithLeaderLifecycle in ControlPlane (IPAM is leader-only)", "193-258"),
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "Package leaderelection doc (no fencing)", "17-20"),
        ],
        fix: None,
        reason: "built on the injected 'standby believes it leads' fault (no upstream counterpart, see cilium-handover-erases-release); seed 2233 no longer fails. Releases of an IP in use that remain come from an agent restart (cilium-restart-acks-in-use) or from a deposed leader acting on its stale cache (cilium-lingering-leader-acts, cilium-paused-leader-acts).",
    }),
    Finding {
        id: "cilium-unknown-unassign-aborted",
        system: "cilium",
        title: "An unassign whose answer is lost is later aborted, and the agent hands out the IP",
        scenario: "cilium-swarm",
        seeds: &[],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased an entry that was not 'released', never having held the IP as released (it did not learn that the unassign succeeded)",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && !e.contains("'released' entry")
                    && !e.contains(DROPPED_RELEASED)
                    && !e.contains("was deposed")
            },
        },
        summary: "The cloud applies an unassign of X but the answer is lost (a timeout). handleIPRelease returns the error and keeps X's local state and time; nothing marks X released. Once the cloud's interface list no longer shows X, X leaves the release list and the pass deletes its time and state (deleteLocalReleaseStatus). The next status write omits X's entry, ahead of the spec write that drops X from the pool, so the agent sees X in its pool with no entry and hands it out, though the cloud no longer holds it. (Retired once as a model artefact when the model aborted from its own state; the faithful model reaches it through upstream's own paths. Re-pinned from seed 8485, whose aborting passes ran while a failed full resync had left the instances API not ready, which upstream refuses: MaintainIPPool, node.go:985-990. Its next pin, seed 2291, stopped showing it when the node manager's pool maintainer, API sync and instance sync became concurrent triggers as upstream's are (the sync triggered with a pass writes while its cloud call is out, and the instance sync after an unassign refreshes the cache within milliseconds); no seed shows it in cilium-swarm 0-9,999, nor in 100,000-120,999 (`faultline hunt`). Once EC2's eventually consistent describes were modelled, none showed it in cilium-swarm 0-19,999, but cilium-clock-skew 18368 (of 0-19,999) showed its signature, and the finding moved there. Judged: 18368 is cilium-released-state-dropped's path, not this one. Its unassign answered and the operator held X as released; the pass after it put X back on the release list (the observed interfaces still listed X) and timed it, and the pass after that, once the refreshed interfaces dropped X, deleted X's time with its 'released' state (deleteLocalReleaseStatus) before any status write had carried 'released', so the entry the agent last saw was its own ready-for-release. cilium-keep-released removes it; cilium-hold-unknown-release, which holds only IPs whose unassign got no answer, rightly does not. The monitor now says when the unassigning operator dropped its own 'released' state, which tells the two findings apart, and 18368 is named cilium-released-state-dropped. cilium-clock-skew draws no fault that loses a cloud answer, so the finding moved back to cilium-swarm, which draws cloud-ambiguous; with the narrower signature no seed shows it in cilium-clock-skew 0-9,999 or cilium-swarm 20,000-22,999 (where 15 seeds lose an unassign's answer), nor did the broader one in cilium-swarm 0-19,999; nor, with cloud throttling modelled, does any in cilium-swarm 23,000-38,999, or 0-7,999 under the realistic profile (`faultline hunt`), so it has none pinned until one is.) (Its shortest replay is constructed: two faults written by hand, run at seed 102 of cilium-swarm with its own options. The cloud loses every answer (cloud-ambiguous at 100 %) for 15 s from 360.048 s, just before operator:1001 unassigns 10.0.0.13 (X) on n2 at 360.053 s. The unassign's first attempt and the SDK's retry (371.49 s) time out; the third attempt (384.39 s), after the fault has ended, gets InvalidParameterValue, which is not retried, so handleIPRelease returns an error and keeps X's ready-for-release state and time. With the API server's answers 2 s slower (api-latency, from 377.048 s), the operator's status write for n2 conflicts with the agent's own status write (386.41 s), and the API sync must re-read and write again. Meanwhile a pass (386.69 s) drops X's time and state. The retried status write (394.42 s) omits X's entry, and the agent sees it at 396.42 s while the spec still lists X; a new pod's first CNI ADD at 398.000 s, before the spec write has landed, takes X. An earlier constructed replay, at seed 104's options with an 11 s loss and 3 s of latency, stopped showing it once the SDK's retries and the pool maintainer's upstream backoff were modelled.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.handleIPRelease (error keeps the state)", "863-895"),
            cilium("pkg/ipam/node.go", "Node.handleIPRelease (not in the list: state deleted)", "826-832"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
        ],
        fix: Some("cilium-hold-unknown-release"),
        shown_with: &[],
        impact: "A pod is given an IP address the cloud no longer assigns to its node: its traffic is dropped.",
        preconditions: &[
            "the cloud applies an unassign but its answer is lost (an EC2 API timeout: the cloud-ambiguous fault, which cilium-swarm alone draws); the AWS SDK retries it, and the retry gets InvalidParameterValue (the IP is no longer on the interface), which it does not retry, so handleIPRelease still returns an error",
            "the instances API stays ready through the following passes (upstream blocks pool passes after a failed resync)",
            "no API sync writes a cache without X before a pass drops X's state: the instance sync the failed pass triggers fails too (the cloud's answers still lost), and a later pass finds X no longer excess (the node's pods grew); or the API sync's status write is delayed (a conflict with the agent's own status write, retried against a slowed API server) until after the pass has dropped X's state",
            "a pod's sandbox attempt (a new pod's first CNI ADD, or a waiting pod's kubelet retry every 10-15 s) falls between the operator's status write and its spec write, and the random pick among the free IPs takes this one: a few milliseconds apart, or seconds while the API server answers slowly (in the constructed replay, more than 3.5 s with 2 s of added latency: the status write lands at 394.416 s and the spec write has not by 398.000 s)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-lingering-leader-acts",
        system: "cilium",
        title: "A deposed operator, lingering in its graceful shutdown, acts on IPs beside the new leader",
        scenario: "cilium-split-brain",
        seeds: &[23],
        signature: Signature {
            invariants: &["agent-allocates-from-pool", "no-release-in-use"],
            describe: "the unassigning operator's leadership had ended and it was lingering in its graceful shutdown",
            test: |e| e.contains("was lingering in its graceful shutdown"),
        },
        summary: "The leader's renewals fail (its API answers are slow, or it was paused), another operator takes the Lease and starts IPAM from empty memory. The old leader's OnStoppedLeading starts a graceful hive shutdown, and no stop hook stops the IPAM: its resync controller and per-node triggers run on context.Background() until the process exits, while legacy.onStop only stops its CiliumNode informer, freezing its copies. A normal stop ends within a second, inside the few seconds before a successor can take the Lease; a stop hook that blocks holds the process for the hive's one-minute stop timeout. In that time it unassigns an IP on an agent's ready-for-release it still holds, while the new leader, from its own cloud cache, has already wiped or aborted that entry and still lists the IP in the pool, so the agent hands the IP, gone from the cloud, to a pod (or the old leader unassigns an IP a pod has just been given). (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 5367 and 5547 no longer show it; of cilium-split-brain 0-1,499, 23 does and is pinned.)",
        upstream: &[
            cilium("operator/cmd/root.go", "runOperator: OnStoppedLeading (graceful shutdown)", "454-458"),
            cilium("operator/cmd/root.go", "legacyOnLeader.onStop (the CiliumNode informer's context)", "515-522"),
            cilium("pkg/ipam/node_manager.go", "NodeManager.Start / Upsert (controller and triggers outside legacy.ctx)", "231-249, 299-377"),
            cilium("pkg/hive/hive.go", "New (StopTimeout 1 min)", "77"),
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "LeaderElector.Run / renew", "204-293"),
        ],
        fix: Some("cilium-exit-on-lost-lead"),
        shown_with: &[],
        impact: "A pod is given an IP the cloud has released, or loses the IP it uses, during an operator leadership change.",
        preconditions: &[
            "the leader's lease renewals fail (slow API server answers or a pause) and another operator takes the Lease",
            "a stop hook blocks the deposed leader's graceful shutdown past the few seconds a successor needs to take the Lease (up to the hive's one-minute stop timeout; a normal stop ends within a second)",
            "the deposed leader's IPAM unassigns an IP during that shutdown, from its CiliumNode copies (frozen once legacy.onStop ran)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-paused-leader-acts",
        system: "cilium",
        title: "A paused operator resumes and unassigns an IP a pod uses, beside the new leader",
        scenario: "cilium-split-brain",
        seeds: &[1457],
        signature: Signature {
            invariants: &["agent-allocates-from-pool", "no-release-in-use"],
            describe: "the unassigning operator was deposed but had not yet seen it (no graceful shutdown involved)",
            test: |e| e.contains("was deposed:"),
        },
        summary: "The leader is paused (VM freeze, GC) past the lease duration; another operator takes the Lease, starts from empty memory and wipes release-ips, and the agent hands a formerly ready-for-release IP to a pod. The old leader resumes inside a renew round that has not yet failed (client-go gives it until the round's deadline) and, from its informer copy, unassigns the IP on the agent's old ready-for-release. Cloud calls carry no token, so nothing stops it: client-go states that its leader election gives no fencing. (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 3137 no longer shows it; of cilium-split-brain 0-1,499, 1457 does and is pinned.)",
        upstream: &[
            cilium("vendor/k8s.io/client-go/tools/leaderelection/leaderelection.go", "Package leaderelection doc (no fencing); renew", "17-20, 267-293"),
            cilium("pkg/ipam/node.go", "Node.handleIPRelease / handleIPReleaseResponse", "758-776, 797-898"),
            cilium("pkg/aws/ec2/ec2.go", "Client.UnassignPrivateIpAddresses", "708-719"),
        ],
        fix: Some("cilium-fence-cloud"),
        shown_with: &[],
        impact: "A pod loses the IP it uses: the cloud unassigns it while the pod runs.",
        preconditions: &[
            "the leader is paused past the 15 s lease duration (a VM freeze, a stop-the-world GC, SIGSTOP) and another operator takes the Lease",
            "the old leader resumes inside a renew round that has not yet failed and acts on an agent's old ready-for-release",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-restart-acks-in-use",
        system: "cilium",
        title: "A restarted agent answers ready-for-release for an IP a pod still uses",
        scenario: "cilium-silent-task-death",
        seeds: &[1745, 97],
        signature: Signature {
            invariants: &["agent-answers-truthfully", "no-release-in-use"],
            describe: "a restarted agent answered ready-for-release for an IP a pod holds, or (when that answer is not seen first) the status the operator decided from was written by a restarted agent, and the operator still led",
            test: |e| (restarted_answerer(e) || restarted_writer(e)) && !e.contains("was deposed"),
        },
        summary: "A pod gets IP X; before the agent's rate-limited status write (15 s, or never while its status writer is dead) reports X as used, the operator marks X, and the agent is restarted. The restarted agent's endpoint restore cannot take X back because X is marked for release, so the pod keeps X while the agent no longer counts it; on the next CiliumNode event the agent answers ready-for-release, and the operator unassigns X under the pod. Restore also runs after IPAM has started, so an answer can come before restore at all. (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 1495 and 301 no longer show it; of cilium-silent-task-death 0-1,499, 97, 101 and 998 do; 97 and 101 are pinned.) (On the model whose pool maintainer backs off as upstream's and whose AWS SDK retries lost answers, cilium-silent-task-death 97, 101, 582, 998, 1745, 2907 and 2932 of 0-2,999 show it; all but 1745 shrink to a silent death of the agent's status writer followed by a crash of that agent, the writer's death (a hypothetical fault) widening the window to the whole time until the restart, whereas 1745 shrinks to three agent crashes, the third inside the 15 s window. 1745 is pinned first, for that everyday path, and 97 beside it; the recorded rates count both paths.)",
        upstream: &[
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource", "338-449"),
            cilium("pkg/ipam/crd.go", "nodeStore.allocate / isIPInReleaseHandshake", "510-545"),
            cilium("daemon/cmd/daemon.go", "newDaemon (startIPAM, restoreOldEndpoints)", "764-821"),
            cilium("daemon/cmd/state.go", "validateEndpoint / allocateIPsLocked (restoreOldEndpoints re-allocates with AllocateIPWithoutSyncUpstream)", "106-109, 363-381"),
        ],
        fix: Some("cilium-restore-before-ack"),
        shown_with: &[],
        impact: "A pod loses the IP it uses after a cilium-agent restart: the operator unassigns it under the running pod.",
        preconditions: &[
            "the agent restarts (a crash or an upgrade) after a pod took an IP and its CNI ADD returned (the endpoint exists, 0.1-5 s after the allocation; a restart before that fails the CNI ADD instead) and before the agent's rate-limited status write (up to 15 s) reported it used",
            "the operator marks that IP for release in the same window (the node has excess IPs)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-released-state-dropped",
        system: "cilium",
        title: "The operator drops its own released entry while the spec still lists the IP",
        scenario: "cilium-split-brain",
        seeds: &[14881, 15079],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased the entry after dropping its own 'released' state (the entry the agent last saw may be its ready-for-release, when no status write carried 'released' in between), not for the IP being back in the pool (the #39981 clean-up)",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && (e.contains("'released' entry") || e.contains(DROPPED_RELEASED))
                    && !e.contains(BACK_IN_POOL)
                    && !e.contains("was deposed")
            },
        },
        summary: "After unassigning X the operator's cloud cache still lists X until the instance sync, so its status write lists X on the interface and as free; the next pass puts X on its release list again (timed), and once the refreshed interfaces drop X the pass deletes X's time and its local state, 'released' included (deleteLocalReleaseStatus). The status write that follows omits X's entry and goes before the spec write that removes X from the pool: in between, the agent sees X in its pool with no handshake entry and hands it to a pod, though the cloud no longer holds it. (handleIPRelease read at cilium/cilium 0013798761eec0dda0217042f6ee3ccfa857f7ff; the lines are those of the pinned commit.) (Its first pinned seeds, cilium-clock-skew 4579 and 8348, stopped showing it when a waiting pod became a kubelet retry every 10-15 s instead of an allocation at the next CiliumNode event. Once endpoint creation took its time and a deposed operator's shutdown lasted as the hive's stop, no seed of cilium-clock-skew 0-9,999 showed it, and one of cilium-split-brain 0-9,999 did, 7029: nothing in it needs a skewed clock, so the finding moved there. With the node manager's triggers concurrent as well, 7029 no longer shows it and no seed of cilium-split-brain 0-9,999 does; `faultline hunt` found 120877 in 100,000-120,999. Once EC2's eventually consistent describes were modelled (the cloud-stale-reads fault), seeds 49, 2275, 6124 and 7868 of cilium-split-brain 0-9,999 show it; 49 and 2275 are pinned. cilium-clock-skew 18368 shows it too, with no status write carrying 'released' between the unassign's answer and the drop, so the agent's last entry was its ready-for-release: it was first taken for cilium-unknown-unassign-aborted.) (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 49 and 2275 no longer show it and no seed of cilium-split-brain 0-1,499 does; of 1,500-5,499, 1589 does and was pinned.) (Once the pool maintainer's backoff after a failed pass followed upstream's (jittered, scaled by the cluster's size, its count reset only after ten quiet minutes) and the agent's status writes were spaced from each write's start, 1589 no longer shows it; of cilium-split-brain 0-15,999, 14881 and 15079 do and are pinned; so do cilium-clock-skew 5527 and 9993 of 0-9,999.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.handleIPRelease", "797-898"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
            cilium("pkg/aws/eni/node.go", "Node.PrepareIPRelease", "131-198"),
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource", "363-444"),
        ],
        fix: Some("cilium-keep-released"),
        shown_with: &[],
        impact: "A pod is given an IP address the cloud no longer assigns to its node: its traffic is dropped.",
        preconditions: &[
            "an excess-IP release after which the operator's cloud cache still shows the unassigned IP: the instance sync the pass triggers at once fails (the cloud API unavailable, cut off or throttling) or answers late (a cloud API slowed by seconds per request), or its describe does not yet reflect the unassign (EC2's eventual consistency, the cloud-stale-reads fault: cilium-clock-skew 503 and 1238 of 0-1,499 show it that way, and 503 passes with the stale reads removed; each read's age is drawn afresh, so a describe may show X again after one that did not, which EC2 does not document either way)",
            "a pod's sandbox attempt (a new pod's first CNI ADD, or a waiting pod's kubelet retry every 10-15 s) falls in the few milliseconds between the operator's status write and its spec write, and the random pick among the free IPs takes this one",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-new-leader-wipes-release-ips",
        system: "cilium",
        title: "A new operator leader wipes release-ips while the spec still lists released IPs",
        scenario: "cilium-silent-task-death",
        seeds: &[],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "another operator process than the unassigning one erased the entry, and the unassigning one still led when it acted",
            test: |e| erased_by_other_operator(e) == Some(true) && !e.contains("was deposed"),
        },
        summary: "The leader unassigns X, then dies or loses the lease before the status write that says 'released' or the spec write that removes X from the pool. The new leader starts with empty handshake state; its first status write rebuilds release-ips from that empty state, dropping X's entry, and goes before its spec write. In between (or until the next sync if the spec write fails), the agent sees X in its pool with no entry and hands it to a pod, though the cloud no longer holds it. The new leader's first write of a node is not immediate: it starts its CiliumNode informer only after the Pod store has listed every pod, once its interval controller's first resync has begun, and Upsert neither resyncs nor writes a node it sees for the first time, so the wipe comes with its next resync, up to a minute after it won the Lease, or sooner when a maintainer pass on any node allocates or fails and its instance sync resyncs every node. (Its pinned seeds, cilium-swarm 1647 and 2320, stopped showing it when a waiting pod became a kubelet retry every 10-15 s instead of an allocation at the next CiliumNode event. With endpoint creation taking its time and a deposed operator's shutdown lasting as the hive's stop, no seed shows it in cilium-swarm 0-9,999, nor in 0-15,999 with every other Cilium fix on; once a new leader first wrote a node at its next resync, as upstream's does, none showed it in cilium-swarm 0-7,999 with every other Cilium fix on (nor, on the model before that change, in 100,000-116,999 with `faultline hunt`). Once EC2's eventually consistent describes were modelled, none showed it in cilium-swarm 0-19,999, but cilium-silent-task-death 6632 (of 0-9,999) does, where the leader's tasks die; the finding moved there and 6632 is pinned.) (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 6632 no longer shows it and no seed of cilium-silent-task-death 0-15,499 does; nor, by `faultline hunt`, does any of 15,500-35,499, or of 0-15,999 under the realistic profile, and no seed of cilium-split-brain 0-5,999, cilium-clock-skew 0-5,999 or cilium-swarm 40,000-45,999 fails first with it (`faultline explore --keep-going`), so it has none pinned until one is. Its shrunk replay, recorded from 6632's run before that change, still shows it.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.PopulateIPReleaseStatus", "1013-1031"),
            cilium("pkg/ipam/node_manager.go", "NodeManager.Upsert (no resync or write of a new node)", "284-387"),
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
            cilium("operator/cmd/root.go", "runOperator (leader-only IPAM)", "437-470, 526-581"),
            cilium("operator/cmd/root.go", "legacyOnLeader.onStart (the CiliumNode informer after the Pod store)", "664-673"),
        ],
        fix: Some("cilium-adopt-release-ips"),
        shown_with: &[],
        impact: "A pod is given an IP address the cloud no longer assigns to its node, after an operator leadership change.",
        preconditions: &[
            "the leader dies or loses the lease between an unassign and the writes that record it: a rare timing of everyday events (the shortest replay needs a graceful restart of the leader, as a rollout makes, 0.3 s after its unassign)",
            "the new leader's first write of the node: at its first resync after its CiliumNode informer started (up to a minute after it won the Lease), or sooner when an allocation or a failed pass on any node triggers a resync",
            "a pod's sandbox attempt (a new pod's first CNI ADD, or a waiting pod's kubelet retry every 10-15 s) falls between the new leader's status write and the spec write that drops X, and the random pick among the free IPs takes this one: a few milliseconds apart when the new leader's cache is fresh, up to its next resync (a minute) when its start-up describe still lists X (EC2's eventual consistency, the cloud-stale-reads fault: in the shortest replay, with describes lagging by up to 475 ms, the old leader's sync after the unassign and the new leader's start-up describe both still list X, and a new pod takes X 27 s after the wipe)",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-reissued-ip-stuck-released",
        system: "cilium",
        title: "An IP the cloud gives back to the same node stays 'released' and is never used (cilium/cilium#39981)",
        scenario: "cilium-clock-skew",
        seeds: &[290, 675],
        signature: Signature {
            invariants: &["released-entries-clear"],
            describe: "a released entry remains for an IP the cloud gave back to the same node, and the operators run no #39981 clean-up",
            test: |e| e.contains("released entries remain") && !e.contains(CLEAN_UP_RUNS),
        },
        summary: "The operator releases X and writes 'released'; the cloud (which picks any free address of the subnet) gives X back to the same node before the agent saw X leave its pool. The agent deletes a released entry only once the IP is out of the pool, the operator keeps writing its local 'released', and the agent never hands out an IP in a released state: X is lost to the node for good. Upstream cilium/cilium#39981 (v1.17); fixed in newer operators by dropping a released entry whose IP is in the spec pool (--fix cilium-readd-released-ip, which has its own hazard: cilium-readd-drops-fresh-release). (Its pinned seeds, 6719 and 8258, stopped showing it when the node manager's pool maintainer, API sync and instance sync became concurrent triggers as upstream's are (the sync triggered with a pass writes while its cloud call is out, and the instance sync after an unassign refreshes the cache within milliseconds): the 'released' status and the spec pool without X are now written milliseconds apart, so the reissue must fall in that gap. In EC2 a describe after the unassign may still list X (eventual consistency), which keeps X in the spec pool longer: with the cloud's describes allowed to lag (the cloud-stale-reads fault, whose lag is assumed: EC2 publishes none), 5 seeds of cilium-clock-skew 0-1,499 show it (3, 5, 203, 527, 828), each with stale reads in force, and seed 5 passes with them removed; without them, only seed 6752 of 0-9,999 showed it.) (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 5 and 442 no longer show it; of cilium-clock-skew 0-1,499, 290 and 675 do and are pinned.)",
        upstream: &[
            cilium("pkg/ipam/node.go", "Node.abortNoLongerExcessIPs / removeStaleReleaseIPs", "720-755"),
            cilium("pkg/ipam/crd.go", "nodeStore.updateLocalNodeResource (released: deleted only once out of the pool)", "371-375"),
            cilium("pkg/ipam/crd.go", "isIPInReleaseHandshake", "535-545"),
        ],
        fix: Some("cilium-readd-released-ip"),
        shown_with: &[],
        impact: "An IP address is lost to its node for good: pods wait in ContainerCreating with 'No more IPs available' while the node has addresses.",
        preconditions: &[
            "the cloud gives a released IP back to the same node before the agent saw it leave its pool (any free address of the subnet may be reissued); an eventually consistent describe that still lists the IP after its unassign (EC2, the cloud-stale-reads fault) widens that window from milliseconds to the describe's lag",
        ],
        realism: Some(Realism::NormalOperation),
        status: Status::Active,
    },
    Finding {
        id: "cilium-readd-drops-fresh-release",
        system: "cilium",
        title: "Newer upstream's #39981 clean-up drops a fresh 'released' entry while the spec still lists the IP",
        scenario: "cilium-clock-skew",
        seeds: &[11522, 17213],
        signature: Signature {
            invariants: &["agent-allocates-from-pool"],
            describe: "the unassigning operator itself, still the leader, erased the released entry after dropping its 'released' state for the IP being in the pool it checked",
            test: |e| {
                erased_by_other_operator(e) == Some(false)
                    && e.contains("'released' entry")
                    && e.contains(BACK_IN_POOL)
                    && !e.contains("was deposed")
            },
        },
        summary: "With newer upstream's fix for #39981, abortNoLongerExcessIPs drops a 'released' entry whose IP is in the observed CiliumNode's spec pool. But right after a release the spec still lists the IP: the operator writes the spec from its cloud cache, which keeps the IP until the instance sync. So the first pass after the release in which the IP is not on the release list drops the fresh 'released' entry; the status write that omits it goes before the spec write that removes the IP, and in between the agent hands the IP, gone from the cloud, to a pod. Shown with --fix cilium-readd-released-ip (the newer behaviour); checking the cloud, not the spec, after a describe that started after the release closes it. (Its first pinned seed, 3930, stopped showing it when a waiting pod became a kubelet retry every 10-15 s instead of an allocation at the next CiliumNode event: there a pod created 0.7 s earlier was still waiting in the agent and took X at the event of the status write that dropped X's entry, 5 ms before the spec write, whereas a pod now tries only when created and at its retries, and takes a random free IP, so such a pod must make its attempt inside those milliseconds. Its next pinned seed, 12695, stopped showing it when the node manager's pool maintainer, API sync and instance sync became concurrent triggers as upstream's are (the sync triggered with a pass writes while its cloud call is out, and the instance sync after an unassign refreshes the cache within milliseconds); no seed shows it with --fix cilium-readd-released-ip in cilium-clock-skew 0-4,999 or 100,000-115,999 (`faultline hunt`) or cilium-swarm 0-2,285. Once EC2's eventually consistent describes were modelled, cilium-clock-skew 4015, 5064, 9010, 12185 and 19008 of 0-19,999 show it; 4015 and 5064 are pinned.) (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 4015 and 5064 no longer show it and no seed of cilium-clock-skew 0-5,499 with --fix cilium-readd-released-ip does; of 5,500-15,499, 7500, 10744 and 11522 do, and 7500 and 10744 were pinned.) (Once the pool maintainer's backoff after a failed pass followed upstream's (jittered, scaled by the cluster's size, its count reset only after ten quiet minutes) and the agent's status writes were spaced from each write's start, 7500 and 10744 no longer show it; of cilium-clock-skew 0-19,999 with --fix cilium-readd-released-ip, 11522, 12044, 17213 and 17859 do, and 11522 and 12044 are pinned.) (Once the AWS SDK's retries of lost answers and server errors were modelled, 12044 no longer shows it; 11522 and 17213 are pinned.)",
        upstream: &[
            Citation {
                repo: CILIUM,
                path: "operator/pkg/ipam/nodemanager/node.go",
                function: "Node.abortNoLongerExcessIPs (the #39981 branch)",
                lines: Lines::FunctionOnly,
                commit: "35b06d5aefdf",
            },
            cilium("pkg/ipam/node.go", "Node.syncToAPIServer (status before spec)", "1043-1117"),
        ],
        fix: Some("cilium-readd-after-resync"),
        shown_with: &["cilium-readd-released-ip"],
        impact: "With newer operators' fix for upstream issue #39981, a pod is given an IP address the cloud no longer assigns to its node.",
        preconditions: &[
            "an excess-IP release followed by a pool pass before the instance sync refreshes the spec pool",
            "a pod's sandbox attempt (a new pod's first CNI ADD, or a waiting pod's kubelet retry every 10-15 s) falls in the few milliseconds between the operator's status write and its spec write, and the random pick among the free IPs takes this one",
        ],
        realism: Some(Realism::RareFault),
        status: Status::Active,
    },
    Finding {
        id: "cilium-readd-skips-excess",
        system: "cilium",
        title: "Newer upstream's #39981 clean-up skips an IP that is excess again: its 'released' entry stays, and the IP can be neither used nor released",
        scenario: "cilium-swarm",
        seeds: &[],
        signature: Signature {
            invariants: &["released-entries-clear"],
            describe: "the operators run the #39981 clean-up, and every released entry that remains is for an IP the cloud gave back to the same node and that is on its node's release list again",
            test: |e| {
                let mut stuck = stuck_entries(e).peekable();
                e.contains(CLEAN_UP_RUNS)
                    && stuck.peek().is_some()
                    && stuck.all(|s| s.ends_with(EXCESS_AGAIN))
            },
        },
        summary: "The operator releases X; in the same round the node needs IPs again (its pool fell below min-allocate) and the cloud, which picks any free address of the subnet, gives X back to the node. The agent drops its 'released' entry once the spec pool (written from the refreshed cache) lacks X, but the operator still holds 'released' for X and writes it again beside a spec pool that lists X. Newer upstream's clean-up for #39981 would drop it, but abortNoLongerExcessIPs skips every IP on the pass's release list before it reaches the #39981 branch: once pods leave and X is excess again, X is on the list, the agent never answers for a 'released' entry and handleIPReleaseResponse never marks an IP that has an entry. X stays 'released' and unusable for as long as it stays on the list, and the excess it stands for is never released. On this path only the newer behaviour (--fix cilium-readd-released-ip) is needed; the pinned seeds run with every other Cilium fix on as well because no seed of a few thousand showed it first with that one alone (the other findings fire first or the world never reissues a listed IP). The model's safe clean-up (cilium-readd-after-resync) has the same gap. (Its pinned seeds, cilium-swarm 16180864 and 57722070, stopped showing it when a waiting pod became a kubelet retry every 10-15 s instead of an allocation at the next CiliumNode event. With endpoint creation taking its time and a deposed operator's shutdown lasting as the hive's stop, no seed showed it in cilium-swarm 0-13,999 with the finding's switches, nor, with the node manager's triggers concurrent as well, in 0-4,999 or 100,000-116,999 (`faultline hunt`). Once EC2's eventually consistent describes were modelled, cilium-swarm 11821 (of 0-19,999, with the finding's switches) shows it and is pinned.) (Once EC2's request throttling was modelled (the cloud-throttling fault, whose draw moves every Cilium schedule), 11821 no longer shows it and no seed of cilium-swarm 0-16,499 with the finding's switches does, so it has none pinned until one is.) (`faultline hunt` then found cilium-swarm 20747 (of 16,500-27,499, with the finding's switches; none of 0-10,999 under the realistic profile), which is pinned. Its path is not the one above: the leader's unassign of X is applied but its answer is lost (cloud-ambiguous), and cilium-hold-unknown-release, one of the switches, holds X's state until a describe that started after the unassign no longer lists X. That describe comes with the next resync, a minute later, and the pass it triggers marks X 'released' and then, as the node's pods have grown, allocates, and the cloud gives X back in that allocation. The status that follows carries 'released' for X beside a spec pool that lists X. Each later pass finds the node in excess with X on its release list, so the clean-up skips X for eight minutes. The seed shows it with only cilium-readd-released-ip and cilium-hold-unknown-release on, and not without the latter. No seed has shown the path above, after an unassign that answered; the same-round reissue that path needs was seen only through the held answer.) (Once the AWS SDK's retries of lost answers and server errors were modelled, 20747 no longer shows it and no seed of cilium-swarm 0-39,999 with the finding's switches does, so none is pinned; its stored replay, seed 20747's four shrunk faults with that run's options, still shows it.)",
        upstream: &[
            Citation {
                repo: CILIUM,
                path: "operator/pkg/ipam/nodemanager/node.go",
                function: "Node.abortNoLongerExcessIPs (excessMap check before the #39981 branch)",
                lines: Lines::FunctionOnly,
                commit: "09b89c6c9e2548486913ac5dfce38c0bcabdd6e6",
            },
            Citation {
                repo: CILIUM,
                path: "operator/pkg/ipam/nodemanager/node.go",
                function: "Node.handleIPReleaseResponse (any entry: not marked again)",
                lines: Lines::FunctionOnly,
                commit: "09b89c6c9e2548486913ac5dfce38c0bcabdd6e6",
            },
            cilium("pkg/ipam/crd.go", "isIPInReleaseHandshake", "535-545"),
        ],
        fix: Some("cilium-readd-excess-ip"),
        shown_with: &[
            "cilium-readd-released-ip",
            "cilium-readd-after-resync",
            "cilium-adopt-release-ips",
            "cilium-restore-before-ack",
            "cilium-keep-released",
            "cilium-hold-unknown-release",
            "cilium-fence-cloud",
            "cilium-exit-on-lost-lead",
        ],
        impact: "With newer operators' fix for upstream issue #39981, an address the cloud gave back to its node stays marked 'released': no pod can use it and the operator never releases it, so the node holds an unusable IP for as long as it has excess.",
        preconditions: &[
            "the operator holds 'released' for X at a pass that allocates for the node and the cloud gives X back in that allocation (the subnet's free addresses are few): in its replay, after an unassign whose answer was lost (an EC2 API timeout, the cloud-ambiguous fault) and which cilium-hold-unknown-release held until the next resync's describe; no seed showed it after an unassign that answered",
            "the node's pods shrink again so that X is on the node's release list at every pass from then on (the #39981 clean-up drops X at the first pass where it is not), for longer than the liveness bound",
        ],
        realism: Some(Realism::RareFault),
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

/// In an `agent-answers-truthfully` sentence: whether the answering agent is a restarted one (not
/// its node's first agent process, pid 1001).
fn restarted_answerer(e: &str) -> bool {
    e.split(" answered ready-for-release")
        .next()
        .and_then(|a| a.split(':').nth(1))
        .and_then(|a| a.split(',').next())
        .is_some_and(|pid| pid != "1001")
}

/// In a `released-entries-clear` sentence: each stuck entry ("IP on NODE", maybe followed by
/// [`EXCESS_AGAIN`]).
fn stuck_entries(e: &str) -> impl Iterator<Item = &str> {
    e.split("never use: ")
        .nth(1)
        .map(|l| l.split(CLEAN_UP_RUNS).next().unwrap_or(l))
        .into_iter()
        .flat_map(|l| l.split(", "))
}
