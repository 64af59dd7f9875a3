//! MetalLB's findings: violations of the default (upstream) logic, with the upstream code that
//! produces each.

use crate::findings::{Citation, Finding, Realism, Signature, Status};

const METALLB: &str = "metallb/metallb";
const METALLB_COMMIT: &str = "7938d3f89b8bd808dae2e42d97d6ae7e18e9ed54";

const fn metallb(path: &'static str, function: &'static str, lines: &'static str) -> Citation {
    Citation {
        repo: METALLB,
        path,
        function,
        lines,
        commit: METALLB_COMMIT,
    }
}

/// Every MetalLB finding, active or retired.
pub static FINDINGS: &[Finding] = &[Finding {
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
}];
