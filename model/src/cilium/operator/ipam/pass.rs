//! One pool maintainer pass (`maintainIPPool`, cilium/cilium pkg/ipam/node.go:934-956 at
//! ed90dd5): the release handshake's step, the aborts of entries no longer excess, the unassign,
//! or else the allocation. The cadence that runs it and the API sync it is followed by are in
//! the parent module.

use super::*;

/// With fix `cilium-readd-after-resync`, how long after a release a describe must have started
/// for its listing the IP to count as a reissue (µs, on the operator's monotonic clock). EC2's
/// describes are eventually consistent and EC2 publishes no bound on the lag ("Eventual
/// consistency in the Amazon EC2 API"), so a describe that merely started after the unassign may
/// still list the IP. The margin is derived from the largest lag a stale-reads fault may have
/// ([`sim::cloud::stale::MAX_LAG_MS`]), doubled: both ends are read on the operator's monotonic
/// clock, and a clock running up to 100 % fast (the scenarios' clock-rate faults stay below
/// 60 %) makes a true interval look at most twice as long, so a measured gap above the margin
/// is a true gap above the largest lag.
pub const READD_DESCRIBE_MARGIN_US: u64 = 2 * sim::cloud::stale::MAX_LAG_MS * 1_000;

impl Ipam {
    /// `maintainIPPool` (node.go:934-956) with `determineMaintenanceAction`, `handleIPRelease`
    /// and `handleIPAllocation`.
    pub(super) async fn maintain_ip_pool(&self, node: Short) -> Pass {
        let held = self.hold_uncertain(node);
        let pass = self.maintain_ip_pool_inner(node).await;
        if let Some(n) = self.state.borrow_mut().nodes.get_mut(&node) {
            n.release.status.extend(held);
        }
        pass
    }

    /// Fix `cilium-hold-unknown-release`: an IP whose unassign got no answer keeps its handshake
    /// state, untouched by the pass (no release, no abort, no deletion), until a describe that
    /// started after the unassign shows whether the cloud still holds it; gone, it is
    /// `released`. Returns the held IPs' states (restored after the pass).
    fn hold_uncertain(&self, node: Short) -> Vec<(Short, Short)> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.nodes.get(&node).is_none_or(|n| n.uncertain.is_empty()) {
            return Vec::new(); // nearly every pass
        }
        let fresh_since = st.cache_at.get(&node).copied().unwrap_or(0);
        let held_ips = st
            .cache
            .get(&node)
            .map(|ifs| pool_of(ifs))
            .unwrap_or_default();
        let Some(n) = st.nodes.get_mut(&node) else {
            return Vec::new();
        };
        let now = self.proc.mono_us();
        let mut held = Vec::new();
        for (ip, t) in std::mem::take(&mut n.uncertain) {
            if fresh_since <= t {
                n.uncertain.insert(ip, t);
                n.release.marked_at.remove(&ip);
                if let Some(s) = n.release.status.get(&ip) {
                    held.push((ip, *s));
                }
            } else if !held_ips.contains_key(&ip) {
                n.release.released(&[ip]);
                n.released_at.insert(ip, now);
            }
        }
        held
    }

    async fn maintain_ip_pool_inner(&self, node: Short) -> Pass {
        let now = self.now();
        let (resource, cache) = {
            let st = self.state.borrow();
            let n = &st.nodes[&node];
            (
                n.resource.clone().expect("checked"),
                st.cache.get(&node).cloned(),
            )
        };
        let status = resource.status();
        let no_handshake = self.cfg.switches.no_handshake;
        // removeStaleReleaseIPs, then `determineMaintenanceAction` (node.go:651-668 @ed90dd5)
        // re-checks the need from the node's last recalculated numbers before acting ("the
        // request may have been resolved in the meantime"): release when in excess, else
        // allocation when IPs are needed, else nothing.
        let release = {
            let mut st = self.state.borrow_mut();
            let n = st.nodes.get_mut(&node).expect("checked");
            let observed = observed_release(n);
            if self.cfg.release_excess {
                n.release.remove_stale_release_ips(&observed);
            }
            let nobody = BTreeMap::<Short, Short>::new();
            let used = match self.cfg.switches.mutant_mark_used {
                true => &nobody,
                false => &status.used,
            };
            let excess = n.excess + usize::from(self.cfg.switches.mutant_mark_beyond_excess);
            (self.cfg.release_excess && n.excess > 0)
                .then(|| prepare_ip_release(&status.enis, used, excess).unwrap_or_default())
        };
        let allocation = release.is_none() && self.state.borrow().nodes[&node].needed > 0;
        if release.is_none() && !allocation {
            self.abort(node, &BTreeSet::new(), &resource);
            return Pass::Idle;
        }
        let (eni, list) = release.clone().unwrap_or_default();
        let step = {
            let mut st = self.state.borrow_mut();
            let started_us = st.started_us;
            let n = st.nodes.get_mut(&node).expect("checked");
            let observed = observed_release(n);
            let sw = &self.cfg.switches;
            let delay_us = match sw.mutant_no_delay {
                true => 0,
                false => RELEASE_DELAY.as_micros() as u64,
            };
            if sw.mutant_delay_from_start {
                for ip in &list {
                    n.release.marked_at.entry(*ip).or_insert(started_us);
                }
            }
            let before = sw.mutant_never_abort.then(|| n.release.status.clone());
            let released_before: BTreeSet<Short> = n.release.released_ips().collect();
            let mut step = n.release.handle_ip_release(
                release.as_ref().map(|r| r.1.as_slice()),
                &observed,
                now,
                delay_us,
                no_handshake,
                sw.keep_released,
            );
            if let Some(before) = before {
                keep_unaborted(&mut n.release, &before, &observed, &mut step.aborted);
            }
            if sw.mutant_never_mark {
                for ip in step.marked.drain(..) {
                    n.release.status.remove(&ip);
                }
            }
            (step, released_before)
        };
        let (mut step, released_before) = step;
        if self.cfg.switches.mutant_release_unacked {
            let marked = step.marked.iter().map(|ip| (*ip, MARKED.to_string(), 0));
            step.to_release.extend(marked.collect::<Vec<_>>());
        }
        for ip in &step.aborted {
            self.emit_abort(node, *ip, false, released_before.contains(ip));
        }
        let (available, counted_rv) = self.state.borrow().nodes[&node].counted;
        for ip in &step.marked {
            self.proc.emit(CiliumEvent::CiliumMark {
                node: node.into(),
                ip: (*ip).into(),
                observed_used: status.used.contains_key(ip),
                observed_rv: resource.obj.rv,
                available: available as u32,
                counted_rv,
            });
        }
        let excess_set: BTreeSet<Short> = list.iter().copied().collect();
        self.abort(node, &excess_set, &resource);
        if !step.to_release.is_empty() {
            return self.release(node, eni, &step, resource.obj.rv).await;
        }
        if allocation {
            return self.allocate(node, cache.as_deref()).await;
        }
        Pass::Idle
    }

    /// `abortNoLongerExcessIPs` with this pass's excess list.
    fn abort(&self, node: Short, excess: &BTreeSet<Short>, resource: &Observed) {
        let aborted = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let sw = &self.cfg.switches;
            // The pool a `released` entry is checked against: upstream's observed spec pool, or
            // with fix `cilium-readd-after-resync` the cloud cache, counting only IPs released
            // before the cache was last refreshed (by more than the describe's assumed lag).
            let pool = if sw.readd_after_resync {
                let fresh_since = st.cache_at.get(&node).copied().unwrap_or(0);
                let n = &st.nodes[&node];
                st.cache.get(&node).map_or_else(BTreeMap::new, |ifs| {
                    let mut p = pool_of(ifs);
                    p.retain(|ip, _| {
                        n.released_at
                            .get(ip)
                            .is_some_and(|t| t + READD_DESCRIBE_MARGIN_US < fresh_since)
                    });
                    p
                })
            } else if sw.readd_released_ip {
                resource.spec().pool.clone()
            } else {
                BTreeMap::new() // not consulted without a #39981 clean-up
            };
            let n = st.nodes.get_mut(&node).expect("a known node");
            let mut observed = observed_release(n);
            let before: BTreeSet<Short> = observed.keys().copied().collect();
            // Only a `released` entry can go for being back in the pool.
            let released: BTreeSet<Short> = observed
                .iter()
                .filter(|(_, s)| s.as_str() == RELEASED)
                .map(|(ip, _)| *ip)
                .collect();
            let states = sw
                .mutant_never_abort
                .then(|| (n.release.status.clone(), observed.clone()));
            // Fix `cilium-readd-excess-ip`: a `released` IP back in the pool is not held back
            // by being on the release list.
            let excess_back: BTreeSet<Short>;
            let excess = match sw.readd_excess_ip {
                true => {
                    excess_back = excess
                        .iter()
                        .filter(|ip| !(released.contains(*ip) && pool.contains_key(*ip)))
                        .copied()
                        .collect();
                    &excess_back
                }
                false => excess,
            };
            let mut aborted = n.release.abort_no_longer_excess(
                excess,
                &mut observed,
                &pool,
                (sw.readd_released_ip || sw.readd_after_resync) && !sw.mutant_keep_readded_released,
            );
            if let Some((states, seen)) = states {
                keep_unaborted(&mut n.release, &states, &seen, &mut aborted);
            }
            n.dropped
                .extend(before.into_iter().filter(|ip| !observed.contains_key(ip)));
            aborted
                .into_iter()
                .map(|ip| (ip, released.contains(&ip)))
                .collect::<Vec<_>>()
        };
        for (ip, back_in_pool) in aborted {
            self.emit_abort(node, ip, back_in_pool, false);
        }
    }

    /// `released`: the dropped local state was `released` (see [`CiliumEvent::CiliumAbort`]).
    fn emit_abort(&self, node: Short, ip: Short, back_in_pool: bool, released: bool) {
        self.proc.emit(CiliumEvent::CiliumAbort {
            node: node.into(),
            ip: ip.into(),
            back_in_pool,
            released,
        });
    }

    /// The release step's cloud call (node.go:863-895): unassign; on success the IPs are
    /// `released`; on an error the local state stays and the pass failed.
    async fn release(&self, node: Short, eni: Short, step: &ReleaseStep, rv: u64) -> Pass {
        let ips: Vec<Short> = step.to_release.iter().map(|r| r.0).collect();
        let mut sent = ips.clone();
        if self.cfg.switches.mutant_unassign_by_count {
            let st = self.state.borrow();
            let lowest = st.cache.get(&node).and_then(|ifs| ifs.get(&eni));
            sent = lowest
                .into_iter()
                .flatten()
                .take(ips.len())
                .copied()
                .collect();
        }
        for (ip, seen, timed) in &step.to_release {
            self.proc.emit(CiliumEvent::CiliumRelease {
                node: node.into(),
                ip: (*ip).into(),
                state_seen: seen.clone(),
                excess_for_ms: timed / 1000,
                observed_rv: rv,
                handshake: !self.cfg.switches.no_handshake,
            });
        }
        match self.cloud().unassign(&node, &eni, sent).await {
            Ok(()) => {
                if let Some(n) = self.state.borrow_mut().nodes.get_mut(&node) {
                    if self.cfg.switches.no_handshake {
                        for ip in &ips {
                            n.release.marked_at.remove(ip);
                        }
                    } else {
                        n.release.released(&ips);
                        let now = self.proc.mono_us();
                        n.released_at.extend(ips.iter().map(|ip| (*ip, now)));
                    }
                }
                Pass::Mutated
            }
            Err(e) => {
                // The local state stays (node.go:890-895), whatever the error. That includes
                // the answer to the SDK's retry of an attempt whose answer was lost after the
                // cloud applied it: `InvalidParameterValue`, the IPs no longer on the
                // interface (`sim::cloud::sdk`, "What it retries").
                let unknown = matches!(e, CloudError::Timeout | CloudError::NotAssigned { .. });
                if unknown && self.cfg.switches.hold_unknown_release {
                    let now = self.proc.mono_us();
                    if let Some(n) = self.state.borrow_mut().nodes.get_mut(&node) {
                        n.uncertain.extend(ips.iter().map(|ip| (*ip, now)));
                    }
                }
                Pass::Failed
            }
        }
    }

    /// `handleIPAllocation` (ENI `PrepareIPAllocation`/`AllocateIPs`): the first interface with
    /// room gets `min(MaxIPsToAllocate, room)` new addresses, `MaxIPsToAllocate` being the IPs
    /// needed, the max-above-watermark and the surge for the node's pending pods
    /// ([`max_ips_to_allocate`]; node.go:677-690, 906-912 @ed90dd5). At that commit the leader
    /// fills the Pod store the surge reads before its CiliumNode informer starts
    /// (operator/cmd/root.go `legacyOnLeader.onStart` l. 664-671; cilium/cilium#32713 reported
    /// that in 1.15 the store was never filled, so no surge happened); the model's store is
    /// [`crate::cilium::kubelet::PodStore`].
    async fn allocate(&self, node: Short, cache: Option<&Interfaces>) -> Pass {
        let Some(ifs) = cache else {
            return Pass::Failed;
        };
        if self.cfg.switches.mutant_no_allocation {
            return Pass::Idle;
        }
        let needed = self.state.borrow().nodes[&node].needed;
        let cap = self.cfg.eni_capacity as usize;
        let Some((eni, held)) = ifs.iter().find(|(_, ips)| ips.len() < cap) else {
            return Pass::Idle; // no room: upstream would create an interface
        };
        let pending = self.cfg.pods.pending(node.as_str());
        let max = max_ips_to_allocate(needed, self.cfg.limits.max_above_watermark, Some(pending));
        let count = max.min(cap - held.len());
        match self.cloud().assign(&node, eni, count as u32).await {
            Ok(_) => Pass::Mutated,
            // `handleIPAllocation` (node.go:909-928 @ed90dd5) answers any failed assign (among
            // them `RequestLimitExceeded` after the SDK's attempts, and
            // `InsufficientFreeAddressesInSubnet`) by creating an interface; with no empty
            // interface slot (the model's nodes have all theirs) `createInterface` returns
            // without error (node.go:545-557): a pass that mutated nothing and did not fail, so
            // no backoff, no instance sync, and a resync before the next decision.
            Err(_) => Pass::Idle,
        }
    }
}

/// Mutant `cilium-mutant-never-abort`: the aborted IPs whose handshake was `marked-for-release`
/// or `ready-for-release` (the state before the step, and the `observed` answer) get their state
/// back, and are no longer reported aborted; a refused (`do-not-release`) handshake and a
/// `released` state (cilium/cilium#39981) go as before.
fn keep_unaborted(
    release: &mut ReleaseState,
    before: &BTreeMap<Short, Short>,
    observed: &BTreeMap<Short, Short>,
    aborted: &mut Vec<Short>,
) {
    aborted.retain(|ip| match before.get(ip) {
        Some(s)
            if s.as_str() != RELEASED
                && observed
                    .get(ip)
                    .is_none_or(|o| o.as_str() != DO_NOT_RELEASE) =>
        {
            release.status.insert(*ip, *s);
            false
        }
        _ => true,
    });
}
