//! The operator's per-node decisions, as pure functions and one small state type, each
//! transcribed from upstream so that upstream's own unit tests run against them
//! (`model/tests/upstream_cilium/`).
//!
//! Upstream: cilium/cilium `pkg/ipam/node.go` and `pkg/aws/eni/node.go` at
//! ed90dd5ea4c754a04a8135c6bb9c8afe29b75811 (`@ed90dd5`), and the newer
//! `operator/pkg/ipam/nodemanager/node.go` at 35b06d5aefdf for the cilium/cilium#39981 fix
//! (docs/upstream/cilium.md §3).

use super::{DO_NOT_RELEASE, MARKED, READY, RELEASED};
use sim::Short;
use std::collections::{BTreeMap, BTreeSet};

/// The per-node IPAM limits (`spec.ipam` of the CiliumNode upstream; the model takes them from
/// the operator's configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `pre-allocate` (upstream's default 8 when the spec says 0, node.go:264-269).
    pub pre_allocate: usize,
    /// `min-allocate` (0: none).
    pub min_allocate: usize,
    /// `max-allocate` (0: none).
    pub max_allocate: usize,
    /// `max-above-watermark`.
    pub max_above_watermark: usize,
}

/// `calculateNeededIPs` (node.go:327-345 @ed90dd5): `pre - (available - used)`, raised to
/// `min - available` when min-allocate is set, capped so that `available + needed <= max` when
/// max-allocate is set, never negative.
pub fn needed_ips(available: usize, used: usize, l: &Limits) -> usize {
    let (a, u) = (available as i64, used as i64);
    let mut needed = l.pre_allocate as i64 - (a - u);
    if l.min_allocate > 0 {
        needed = needed.max(l.min_allocate as i64 - a);
    }
    if l.max_allocate > 0 && a + needed > l.max_allocate as i64 {
        needed = l.max_allocate as i64 - a;
    }
    needed.max(0) as usize
}

/// `MaxIPsToAllocate` of `determineMaintenanceAction` (node.go:677-690 @ed90dd5): the IPs
/// needed, the max-above-watermark, and the surge: when more pods are pending on the node than
/// IPs are needed, the difference (PR #19007). `pending` is `None` when the Pod store cannot be
/// read ("Unable to compute pending pods, will not surge-allocate"). The allocation is further
/// bounded by the interface's room (`handleIPAllocation`, node.go:910-912).
pub fn max_ips_to_allocate(
    needed: usize,
    max_above_watermark: usize,
    pending: Option<usize>,
) -> usize {
    let surge = pending.map_or(0, |p| p.saturating_sub(needed));
    needed + max_above_watermark + surge
}

/// `calculateExcessIPs` (node.go:347-378 @ed90dd5), piecewise: while `used <= min + maw`, nothing
/// is in excess when `available <= min + maw`, and `available - min - maw` is when pre-allocate
/// does not ask for more; otherwise `available - used - pre - maw`, never negative.
pub fn excess_ips(available: usize, used: usize, l: &Limits) -> usize {
    let floor = l.min_allocate + l.max_above_watermark;
    if used <= floor {
        if available <= floor {
            return 0;
        }
        if used + l.pre_allocate <= floor {
            return available - floor;
        }
    }
    available.saturating_sub(used + l.pre_allocate + l.max_above_watermark)
}

/// ENI `PrepareIPRelease` (pkg/aws/eni/node.go:131-198 @ed90dd5): from the interfaces as the
/// *observed* CiliumNode's `status.eni.enis` lists them, each interface's addresses not in the
/// observed `status.ipam.used`; in interface order, the first interface whose `min(free, excess)`
/// is strictly the largest; its first `min(free, excess)` free addresses. (The model's interfaces
/// have no prefixes and its pool holds no primary IP, which upstream also skips.)
pub fn prepare_ip_release<V>(
    enis: &BTreeMap<Short, BTreeSet<Short>>,
    used: &BTreeMap<Short, V>,
    excess: usize,
) -> Option<(Short, Vec<Short>)> {
    let mut best: Option<(Short, Vec<Short>)> = None;
    for (eni, addresses) in enis {
        let free: Vec<Short> = addresses
            .iter()
            .filter(|ip| !used.contains_key(*ip))
            .copied()
            .collect();
        let n = free.len().min(excess);
        if n > 0 && best.as_ref().is_none_or(|b| n > b.1.len()) {
            best = Some((*eni, free[..n].to_vec()));
        }
    }
    best
}

/// What [`ReleaseState::handle_ip_release`] decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReleaseStep {
    /// IPs newly set to `marked-for-release`.
    pub marked: Vec<Short>,
    /// IPs whose handshake was dropped (no longer excess, or aborted).
    pub aborted: Vec<Short>,
    /// IPs to unassign now, each with (the observed state that allowed it, µs it has been timed).
    pub to_release: Vec<(Short, String, u64)>,
}

/// The operator's in-memory handshake state of one node (node.go:140-150 @ed90dd5): lost on
/// restart and on failover.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReleaseState {
    /// `ipsMarkedForRelease`: IP -> when it was first seen excess (µs on the monotonic clock).
    pub marked_at: BTreeMap<Short, u64>,
    /// `ipReleaseStatus`: IP -> the operator's own state (`marked-for-release`, `released`, or
    /// an answer `handleIPReleaseResponse` copied).
    pub status: BTreeMap<Short, Short>,
}

impl ReleaseState {
    /// The IPs whose own state is `released` (unassigned in the cloud, not yet acknowledged).
    pub fn released_ips(&self) -> impl Iterator<Item = Short> + '_ {
        self.status
            .iter()
            .filter(|(_, s)| s.as_str() == RELEASED)
            .map(|(ip, _)| *ip)
    }

    /// `handleIPRelease` (pkg/ipam/node.go, read at cilium/cilium
    /// 0013798761eec0dda0217042f6ee3ccfa857f7ff; node.go:797-898 @ed90dd5) up to the cloud call.
    /// `release` is the maintenance action's release list (`None`: the action is allocation
    /// only); `observed` is the observed CiliumNode's `release-ips` (`n.resource`); `now` and
    /// `delay_us` the monotonic time and `excess-ip-release-delay`.
    ///
    /// * every IP of `release` not yet timed is timed now;
    /// * with no release list, or an empty one, the times are reset (`ipsMarkedForRelease` only:
    ///   "Resetting ipsMarkedForRelease if there are no IPs to release in this iteration"; the
    ///   handshake states stay);
    /// * a timed IP not in `release` loses its time and state;
    /// * an IP timed for less than the delay waits;
    /// * `handleIPReleaseResponse`: if the observed map has an entry for the IP, whatever the
    ///   operator's own state, `ready-for-release` puts it on the release list,
    ///   `do-not-release` drops its time and state, and any entry means it is not marked again;
    /// * any other timed IP is marked.
    ///
    /// The caller then runs `abortNoLongerExcessIPs` with this pass's list
    /// ([`Self::abort_no_longer_excess`]). With `no_handshake` (bug `cilium-no-handshake`) every
    /// IP timed for the delay is to be released without a mark or an answer. With `keep_released`
    /// (fix `cilium-keep-released`) a `released` state is never dropped here.
    pub fn handle_ip_release(
        &mut self,
        release: Option<&[Short]>,
        observed: &BTreeMap<Short, Short>,
        now: u64,
        delay_us: u64,
        no_handshake: bool,
        keep_released: bool,
    ) -> ReleaseStep {
        let mut step = ReleaseStep::default();
        let list = release.unwrap_or(&[]);
        for ip in list {
            self.marked_at.entry(*ip).or_insert(now);
        }
        if list.is_empty() {
            self.marked_at.clear();
        }
        let timed: Vec<(Short, u64)> = self.marked_at.iter().map(|(a, b)| (*a, *b)).collect();
        for (ip, since) in timed {
            if !list.contains(&ip) {
                self.marked_at.remove(&ip);
                // With fix `cilium-keep-released`, a `released` state stays until the agent has
                // removed its entry (`removeStaleReleaseIPs`).
                let released = self.status.get(&ip).is_some_and(|s| s.as_str() == RELEASED);
                if !(keep_released && released) && self.status.remove(&ip).is_some() {
                    step.aborted.push(ip);
                }
                continue;
            }
            if now.saturating_sub(since) < delay_us {
                continue;
            }
            if no_handshake {
                step.to_release.push((ip, String::new(), now - since));
                continue;
            }
            if let Some(answer) = observed.get(&ip) {
                match answer.as_str() {
                    READY => step.to_release.push((ip, READY.into(), now - since)),
                    DO_NOT_RELEASE => {
                        self.marked_at.remove(&ip);
                        self.status.remove(&ip);
                    }
                    _ => {}
                }
                continue;
            }
            self.status.insert(ip, Short::lit(MARKED));
            step.marked.push(ip);
        }
        step
    }

    /// After a successful unassign (node.go:876-888): the IPs lose their time and become
    /// `released`.
    pub fn released(&mut self, ips: &[Short]) {
        for ip in ips {
            self.marked_at.remove(ip);
            self.status.insert(*ip, Short::lit(RELEASED));
        }
    }

    /// `abortNoLongerExcessIPs` (node.go:735-755 @ed90dd5): for every entry of the observed
    /// `release-ips` not in `excess` and not `released`, the local time and state go (the next
    /// write omits the entry). With `fix_39981` (the newer nodemanager's version, cilium/cilium#39981),
    /// a `released` entry whose IP is back in the observed `spec.ipam.pool` is dropped too, from
    /// the observed copy as well (upstream deletes it from `n.resource`). Returns the IPs whose
    /// local state went.
    pub fn abort_no_longer_excess(
        &mut self,
        excess: &BTreeSet<Short>,
        observed: &mut BTreeMap<Short, Short>,
        pool: &BTreeMap<Short, Short>,
        fix_39981: bool,
    ) -> Vec<Short> {
        let mut aborted = Vec::new();
        let mut back = Vec::new();
        for (ip, state) in observed.iter() {
            if excess.contains(ip) {
                continue;
            }
            if state.as_str() == RELEASED {
                if fix_39981 && pool.contains_key(ip) {
                    back.push(*ip);
                }
                continue;
            }
            if self.status.get(ip).is_some_and(|s| s.as_str() != RELEASED) {
                self.marked_at.remove(ip);
                self.status.remove(ip);
                aborted.push(*ip);
            }
        }
        for ip in back {
            observed.remove(&ip);
            self.marked_at.remove(&ip);
            if self.status.remove(&ip).is_some() {
                aborted.push(ip);
            }
        }
        aborted
    }

    /// `removeStaleReleaseIPs` (node.go:720-731 @ed90dd5): a local `released` state whose entry
    /// the agent has removed from the observed `release-ips` is forgotten.
    pub fn remove_stale_release_ips(&mut self, observed: &BTreeMap<Short, Short>) {
        self.status
            .retain(|ip, s| s.as_str() != RELEASED || observed.contains_key(ip));
    }

    /// `PopulateIPReleaseStatus` (node.go:1013-1031 @ed90dd5): the `release-ips` to write, built
    /// only from the local state; for an IP held as `marked-for-release`, the agent's answer in
    /// the copy being written (`written`) is kept. (Upstream first runs `removeStaleReleaseIPs`
    /// against the observed object; the caller does.)
    pub fn populate(&self, written: &BTreeMap<Short, Short>) -> BTreeMap<Short, Short> {
        self.status
            .iter()
            .map(|(ip, s)| {
                let answer = written.get(ip).filter(|w| {
                    s.as_str() == MARKED && matches!(w.as_str(), READY | DO_NOT_RELEASE)
                });
                (*ip, *answer.unwrap_or(s))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Short {
        Short::new(s).unwrap()
    }

    #[test]
    fn an_allocation_only_pass_resets_the_times_not_the_states() {
        let mut st = ReleaseState::default();
        st.handle_ip_release(Some(&[ip("a")]), &BTreeMap::new(), 0, 10, false, false);
        st.handle_ip_release(Some(&[ip("a")]), &BTreeMap::new(), 20, 10, false, false);
        st.released(&[ip("b")]);
        assert_eq!(st.status.get(&ip("a")).map(Short::as_str), Some(MARKED));
        let step = st.handle_ip_release(None, &BTreeMap::new(), 30, 10, false, false);
        assert!(step.aborted.is_empty() && st.marked_at.is_empty());
        assert_eq!(st.status.len(), 2);
    }

    #[test]
    fn an_observed_answer_counts_once_the_delay_is_over_whoever_marked() {
        let mut st = ReleaseState::default();
        let ready: BTreeMap<Short, Short> = [(ip("a"), Short::lit(READY))].into();
        // Timed, within the delay: nothing.
        let s = st.handle_ip_release(Some(&[ip("a")]), &ready, 0, 10, false, false);
        assert!(s.to_release.is_empty() && s.marked.is_empty());
        // After the delay an observed ready-for-release is acted on, though this operator never
        // marked the IP (an earlier leader did).
        let s = st.handle_ip_release(Some(&[ip("a")]), &ready, 10, 10, false, false);
        assert_eq!(s.to_release.len(), 1);
        assert!(s.marked.is_empty());
        // Without an entry it is marked; the written map keeps the agent's answer.
        let mut st = ReleaseState::default();
        st.handle_ip_release(Some(&[ip("a")]), &BTreeMap::new(), 0, 10, false, false);
        let s = st.handle_ip_release(Some(&[ip("a")]), &BTreeMap::new(), 10, 10, false, false);
        assert_eq!(s.marked, vec![ip("a")]);
        assert_eq!(st.populate(&ready), ready);
    }

    #[test]
    fn a_released_entry_back_in_the_pool_goes_only_with_the_fix() {
        let pool: BTreeMap<Short, Short> = [(ip("x"), ip("eni-0"))].into();
        for fix in [false, true] {
            let mut st = ReleaseState::default();
            st.released(&[ip("x")]);
            let mut observed: BTreeMap<Short, Short> = [(ip("x"), Short::lit(RELEASED))].into();
            st.abort_no_longer_excess(&BTreeSet::new(), &mut observed, &pool, fix);
            assert_eq!(observed.is_empty(), fix);
            assert_eq!(st.status.is_empty(), fix);
        }
    }
}
