//! MetalLB's invariants (checked by `monitor`; the bounds are computed from the model's constants).

use crate::invariant::Invariant;

/// One announcer per IP once views converge.
pub const SINGLE_ANNOUNCER: Invariant = Invariant::safety(
    "single-announcer",
    "once every live speaker and the router have been mutually reachable with no network fault, pause or latency spike in force for the convergence bound, every service IP with candidates has exactly one announcer, it is the first of the true candidates by sha256(node#ip), and the router's entry points at it; an IP without candidates has none",
)
.bounded("join period 60 s + a 10 s join timeout per speaker + maximum suspicion 24 s + a probe round + the router's 30 s ARP refresh + 10 s: 157 s for 3 speakers, 201 s for 7");
/// The same, sooner, after a speaker is gone.
pub const TAKEOVER_AFTER_CRASH: Invariant = Invariant::safety(
    "takeover-after-crash",
    "the same after a speaker crash, exit or graceful leave",
)
.bounded("a probe round + 1 s + maximum suspicion + 2 s + the 5 s ARP burst (about 35 s)");
/// Memberships merge after heal.
pub const MEMBERSHIP_MERGES: Invariant = Invariant::liveness(
    "membership-merges",
    "as `single-announcer`",
    "every live speaker's memberlist lists exactly the live speakers, also while the API server is down (the IP cache exists for that)",
);
/// A speaker announces only when first in its own ordering.
pub const ANNOUNCER_FIRST_IN_OWN_ORDER: Invariant = Invariant::safety(
    "announcer-first-in-own-order",
    "a speaker announces only if it is first in the sha256 ordering of the candidates it reports",
);
/// Nothing is announced from an ineligible node.
pub const ANNOUNCER_ELIGIBLE: Invariant = Invariant::safety(
    "announcer-eligible",
    "nothing is announced from an excluded or NetworkUnavailable node, for a service without endpoints, or for a Local service from a node without one of its endpoints",
);

/// Every MetalLB invariant.
pub static INVARIANTS: &[Invariant] = &[
    SINGLE_ANNOUNCER,
    TAKEOVER_AFTER_CRASH,
    MEMBERSHIP_MERGES,
    ANNOUNCER_FIRST_IN_OWN_ORDER,
    ANNOUNCER_ELIGIBLE,
];
