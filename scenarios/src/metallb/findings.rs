//! MetalLB's findings: violations of the default (upstream) logic, with the upstream code that
//! produces each.

use crate::findings::{Citation, Finding, Lines, Realism, RetiredFinding, Signature, Status};

const METALLB: &str = "metallb/metallb";
const METALLB_COMMIT: &str = "7938d3f89b8bd808dae2e42d97d6ae7e18e9ed54";

const MEMBERLIST: &str = "hashicorp/memberlist";
/// memberlist v0.5.1, the version metallb 7938d3f's go.mod pins.
const MEMBERLIST_COMMIT: &str = "3f82dc10a89f82efe300228752f7077d0d9f87e4";

const fn memberlist(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: MEMBERLIST,
        path,
        function,
        lines: Lines::At(lines),
        commit: MEMBERLIST_COMMIT,
    }
}

const fn metallb(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: METALLB,
        path,
        function,
        lines: Lines::At(lines),
        commit: METALLB_COMMIT,
    }
}

/// Every MetalLB finding, active or retired.
pub static FINDINGS: &[Finding] = &[
    Finding {
    id: "metallb-loser-garp-outlives-burst",
    system: "metallb",
    title: "A withdrawing rival's last gratuitous ARP outlives the owner's burst: the router stays on the rival",
    scenario: "metallb-split-brain",
    seeds: &[30, 31],
    signature: Signature {
        invariants: &["router-follows-owner"],
        describe: "the router keeps sending a sole announcer's traffic to another node",
        test: |e| e.contains("still sent its traffic to n"),
    },
    summary: "After a partition, pause or latency spike has split the speakers' views, two speakers announce one IP and both send gratuitous ARPs, each for 5 s after its own latest SetBalancer. The rival withdraws only when its memberlist learns of the owner, which can come seconds after the owner's own last membership event (gossip to 3 random members, push/pull, or the next join). If the owner's 5 s burst ended before the rival's last gratuitous ARP, nothing tells the router: its Linux neighbour entry keeps the rival's address (STALE), the next packet makes it DELAY, and only after 5 s and 3 unanswered unicast probes does it fail and resolve again by broadcast, which the owner answers. Meanwhile the service's traffic goes to the rival for about 8-12 s. The refute-without-resync case (a speaker wrongly declared dead refutes it, the node that took its IP withdraws, and the refuting node gets no memberlist event, so it sends no gratuitous ARP) is one way to get there.",
    upstream: &[
        metallb(
            "internal/layer2/announcer.go",
            "Announce.spamLoop",
            "157-197",
        ),
        metallb("internal/layer2/announcer.go", "Announce.SetBalancer", "257-260"),
        metallb(
            "internal/speakerlist/speakerlist.go",
            "SpeakerList.memberlistWatchEvents",
            "339-349",
        ),
    ],
    fix: Some("metallb-garp-while-announced"),
    shown_with: &[],
    impact: "Clients of a LoadBalancer address are sent to a node that no longer announces it for about 8-12 s after the speakers' views converge, so their connections to the service fail until the router's neighbour entry fails and resolves again.",
    preconditions: &[
        "a partition, pause or latency spike long enough to split the speakers' membership views, so that two speakers announce one address",
        "the losing speaker learns of the owner more than 5 s after the owner's last memberlist event, so its last gratuitous ARP comes after the owner's burst ended",
    ],
    realism: Some(Realism::RareFault),
    status: Status::Active,
},
    REFUTE_WITHOUT_RESYNC,
    RESTART_HIJACK,
];

/// Judged against upstream and kept as part of `metallb-loser-garp-outlives-burst`.
const REFUTE_WITHOUT_RESYNC: Finding = Finding::retired(RetiredFinding {
    id: "metallb-refute-without-resync",
    system: "metallb",
    title: "A speaker wrongly declared dead refutes it without a resync, so it sends no gratuitous ARP after its rival withdraws",
    scenario: "metallb-swarm",
    seeds: &[],
    signature: Signature {
        invariants: &["router-follows-owner"],
        describe: "the sole announcer had refuted its own death and resynced nothing",
        test: |e| e.contains("refuted its own death"),
    },
    summary: "A rival that hears (perhaps late) that the owner of an IP is dead takes the IP over with a gratuitous ARP. The owner, alive, refutes the accusation: memberlist's deadNode sees the message is about itself, calls refute (a new incarnation broadcast as an alive message) and returns without any event, so MetalLB, which resyncs only on memberlist events, calls no SetBalancer and sends no gratuitous ARP. The rival's memberlist turns the owner from dead to alive with a NotifyJoin, the rival resyncs and withdraws, and the router keeps the rival's address until its neighbour entry fails.",
    upstream: &[
        memberlist("state.go", "Memberlist.deadNode", "1280-1285"),
        memberlist("state.go", "Memberlist.refute", "918-944"),
        memberlist("state.go", "Memberlist.aliveNode", "1148-1153"),
        metallb(
            "internal/speakerlist/speakerlist.go",
            "SpeakerList.memberlistWatchEvents",
            "339-349",
        ),
    ],
    fix: None,
    reason: "real upstream behaviour, narrowed into metallb-loser-garp-outlives-burst: the refuting node raising no event (memberlist v0.5.1 state.go deadNode 1280-1285, refute 918-944) is one way for the owner's last gratuitous ARP to precede the rival's, the failure that finding catalogues, and fix metallb-garp-while-announced remedies both. metallb 0c1ae8cc3's own commit message describes this case (a slow node declared dead rejoins) assuming the node resyncs on rejoining; with a refute it does not. Kept as one finding, not two, because the router's state, the invariant, the violation's text and the remedy are the same.",
});

/// Judged against upstream and retired: real, but within the bound every change of owner has.
const RESTART_HIJACK: Finding = Finding::retired(RetiredFinding {
    id: "metallb-restart-hijack",
    system: "metallb",
    title: "A restarted speaker announces every IP before its first join, and the router follows it for a moment",
    scenario: "metallb-swarm",
    seeds: &[],
    signature: Signature {
        invariants: &["router-follows-owner"],
        describe: "the router followed a speaker that had not joined yet",
        test: |e| e.contains("had not joined yet"),
    },
    summary: "A restarted speaker's memberlist knows only itself until its first join, so if its controllers reconcile the Services first it is the only candidate for every IP, announces them all and sends gratuitous ARPs. The join follows within milliseconds, the owners' memberlists raise NotifyJoin, and their resyncs restart their gratuitous ARPs.",
    upstream: &[
        metallb("speaker/main.go", "main", "289-292"),
        metallb("internal/speakerlist/speakerlist.go", "SpeakerList.Start", "131-175"),
        metallb(
            "internal/speakerlist/speakerlist.go",
            "SpeakerList.joinMembers",
            "225-242",
        ),
        metallb("speaker/layer2_controller.go", "layer2Controller.SetNode", "172-178"),
        metallb(
            "internal/speakerlist/speakerlist.go",
            "SpeakerList.UsableSpeakers",
            "303-320",
        ),
        metallb(
            "internal/k8s/controllers/service_controller_reload.go",
            "ServiceReconciler.reprocessAll",
            "62-119",
        ),
    ],
    fix: None,
    reason: "upstream does this, but it is not a defect: main.go starts the speaker list (289) and then the controllers (292); SpeakerList.Start only starts joinMembers (174), which joins on its first Rejoin (the Node controller's create event for the speaker's own Node, layer2_controller.go SetNode 172-178) or after a minute, while the first reprocessAll (service_controller_reload.go 62-119) runs in another controller once the configuration loads, and UsableSpeakers (303-320) then lists only the speaker itself. Which comes first is a race of milliseconds upstream as in the model. The join's push/pull makes each owner's memberlist raise NotifyJoin (memberlist v0.5.1 state.go aliveNode 1148-1153), its resync restarts its gratuitous ARPs, and the router is back on it within one 1.1 s spam tick, the bound router-follows-owner grants any change of owner. A cold start of every speaker at once converges the same way. No fix proposed: a speaker waiting for its first join before announcing would leave a lone speaker's IPs unannounced whenever its peers are unreachable.",
});
