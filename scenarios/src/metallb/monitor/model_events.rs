//! The MetalLB model's own events, as the monitor reads them (speakers' announcements, member
//! views, joins, declarations and refutations).

use super::*;

impl MetallbMonitor {
    /// The MetalLB model's own events.
    pub(super) fn on_metallb(&mut self, rec: &Record, e: &MetallbEvent) -> Option<Failure> {
        let t = rec.t_us;
        let node = self.names[rec.node as usize].clone();
        let merge = merge_bound_us(self.speakers);
        let takeover = takeover_bound_us(self.speakers);
        match e {
            MetallbEvent::MlDeclareDead {
                member,
                incarnation,
            } => {
                return self.death.declared(t, &node, member, *incarnation);
            }
            MetallbEvent::MlRefute { incarnation } => self.death.refuted(&node, *incarnation),
            MetallbEvent::MlMember { member, state, .. } => {
                if member == &node && state == "left" {
                    // A speaker leaving the cluster (graceful shutdown) is no longer live.
                    self.live.remove(&node);
                    self.rejoin.excuse();
                    self.unsettle(
                        t,
                        takeover,
                        Unsettled::Departure,
                        format!("{node}'s speaker leaving (it left)"),
                    );
                }
                let v = self.views.entry(node.clone()).or_default();
                if state == "forgotten" {
                    v.remove(member);
                    if !self.unsettled.is_empty() {
                        self.reached.insert("partition-outlived-retention");
                    }
                } else {
                    v.insert(member.clone(), state.clone());
                }
                self.review_own_view(t, &node);
            }
            // A speaker that can join from now on gets the join period to do so.
            MetallbEvent::SpeakerIps { .. } if self.cached.insert(node.clone()) => {
                let calm = self.unsettled.is_empty()
                    && self.join_loop_faults.is_empty()
                    && self.live.len() == self.speakers as usize;
                self.rejoin.cached(t, &node, calm);
                self.review_own_view(t, &node);
                self.unsettle(
                    t,
                    merge,
                    Unsettled::Change,
                    format!("{node} caching the peer IPs"),
                );
            }
            MetallbEvent::MlJoin { joined, .. } if *joined > 0 && !self.api_down.is_empty() => {
                self.reached.insert("rejoin-while-apiserver-down");
            }
            MetallbEvent::L2Announce {
                ip,
                candidates,
                service,
            } => {
                let since = *self
                    .announcing
                    .entry(ip.clone())
                    .or_default()
                    .entry(node.clone())
                    .or_insert(t);
                self.duplicates(t, ip);
                self.review_own_view(t, &node);
                // With arp_accept 0 the router takes a gratuitous ARP only into an existing entry.
                let heard = self.unsettled.is_empty() && self.neighbours.contains_key(ip);
                self.l2.announce(t, ip, &node, self.arp.get(ip), heard);
                let order = expect::order(candidates, ip);
                if order.first() != Some(&node) {
                    return Some(Failure {
                        invariant: crate::metallb::invariants::ANNOUNCER_FIRST_IN_OWN_ORDER.name,
                        kind: Kind::Safety,
                        node: Some(rec.node),
                        explanation: format!(
                            "{node} announces {ip} but its candidates {candidates:?} order as {order:?}"
                        ),
                        measured: Measured::unbounded(t - since),
                    });
                }
                if let Some(why) = self.ineligible(&node, service, ip) {
                    return Some(Failure {
                        invariant: crate::metallb::invariants::ANNOUNCER_ELIGIBLE.name,
                        kind: Kind::Safety,
                        node: Some(rec.node),
                        explanation: format!("{node} announces {ip} although {why}"),
                        measured: Measured::unbounded(t - since),
                    });
                }
            }
            MetallbEvent::L2Node { node: n, present } => {
                let v = self.node_views.entry(node.clone()).or_default();
                if *present {
                    v.insert(n.clone());
                } else {
                    v.remove(n);
                }
                self.review_own_view(t, &node);
            }
            MetallbEvent::L2Endpoints { service, ready } => {
                self.endpoint_views
                    .entry(node.clone())
                    .or_default()
                    .insert(service.clone(), ready.iter().cloned().collect());
                self.review_own_view(t, &node);
            }
            MetallbEvent::L2Withdraw { ip, .. } => {
                if let Some(m) = self.announcing.get_mut(ip) {
                    m.remove(&node);
                }
                self.l2
                    .withdraw(t, ip, &node, "its own decision: l2-withdraw");
                self.duplicates(t, ip);
                self.review_own_view(t, &node);
            }
            // Nothing this monitor tracks changed: the last check still holds until the next tick.
            _ => return None,
        }
        self.converged(t)
    }

    /// `announcer-eligible`: why `node` may not announce `service` at `ip` (ground truth), if so.
    fn ineligible(&self, node: &str, service: &str, ip: &str) -> Option<String> {
        let svc = self.services.iter().find(|s| s.ip == ip);
        if self.excluded.contains(node) {
            Some("its node is excluded from external load balancers".to_string())
        } else if self.unavailable.contains(node) {
            Some("its node's network is unavailable".to_string())
        } else if svc.is_some_and(|s| s.endpoints.is_empty()) {
            Some(format!("{service} has no endpoints"))
        } else if svc.is_some_and(|s| s.local && !s.endpoints.iter().any(|e| e == node)) {
            Some(format!("{service} is Local and has no endpoint on {node}"))
        } else {
            None
        }
    }
}
