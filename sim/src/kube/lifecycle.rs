//! Kubernetes' node lifecycle controller, run next to the API server.

use super::{Kube, Object, Part, WatchEvent};
use crate::event::Event;
use crate::world::Proc;
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

impl Kube {
    /// Runs Kubernetes' node lifecycle controller next to the API server (kube-controller-manager,
    /// `node-monitor-period` 5 s): a node whose `Lease` (renewed by its kubelet, see
    /// [`super::KubeClient::run_node_heartbeat`]) has not moved forward for `grace` (`node-monitor-grace-period`,
    /// 40 s by default) gets `status.ready = false`, and the `Endpoints` objects drop it from
    /// `status.ready` (the endpoints controller's reaction to its pods turning NotReady); a renewal
    /// makes it ready again. Like upstream, a renewal counts only if its `renewTime` (the kubelet's
    /// wall clock) is after the last one seen, and the grace is measured on the controller's own
    /// clock from the moment it observed the last renewal.
    ///
    /// Object shapes: `Node` status `{"ready": bool}`; `Lease` spec `{"renew_us": i64}`;
    /// `Endpoints` spec `{"nodes": [node...]}` and status `{"ready": [node...]}`.
    pub fn enable_node_lifecycle(&self, grace: Duration) {
        self.0.node_grace.set(Some(grace));
    }

    /// Replaces an object's status from inside the control plane (no network hop) and tells the
    /// informers, as a write through the server would.
    fn write_status(&self, p: &Proc, kind: &str, name: &str, status: Value) {
        let Some(current) = self.0.objects.borrow().get(kind, name).cloned() else {
            return;
        };
        let obj = self.new_version(&current, Part::Status, status.into());
        self.0.objects.borrow_mut().insert(obj.clone());
        p.emit(self.write_event(&obj, "status", (*p.ident()).into()));
        self.publish(WatchEvent::Upsert(obj));
    }

    pub(super) async fn node_lifecycle(&self, p: &Proc, grace: Duration) {
        // node -> (last renewTime seen, controller's monotonic time when it was seen).
        let mut seen: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        loop {
            p.sleep(Duration::from_secs(5)).await;
            if p.service_faults().unavailable {
                continue;
            }
            let now = p.mono_us();
            let leases: Vec<(String, i64)> = self
                .0
                .objects
                .borrow()
                .of_kind("Lease")
                // A Lease never renewed has no renewTime: any renewal is newer.
                .map(|o| {
                    let renew = o.spec["renew_us"].as_i64().unwrap_or(i64::MIN);
                    (o.name.to_string(), renew)
                })
                .collect();
            for (node, renew) in leases {
                let e = seen.entry(node.clone()).or_insert((renew, now));
                if renew > e.0 {
                    *e = (renew, now);
                }
                let ready = now.saturating_sub(e.1) <= grace.as_micros() as u64;
                if ready != self.node_ready(&node) {
                    self.set_node_ready(p, &node, ready);
                }
            }
        }
    }

    /// Whether a Node object exists and is Ready (read in place, not copied).
    fn node_ready(&self, node: &str) -> bool {
        self.0
            .objects
            .borrow()
            .get("Node", node)
            .is_some_and(|o| o.status["ready"].as_bool().unwrap_or(true))
    }

    fn set_node_ready(&self, p: &Proc, node: &str, ready: bool) {
        let Some(obj) = self.peek("Node", node) else {
            return;
        };
        let mut status = Value::clone(&obj.status);
        status["ready"] = Value::Bool(ready);
        self.write_status(p, "Node", node, status);
        p.emit(Event::KubeNodeReady {
            node: node.into(),
            ready,
        });
        let endpoints: Vec<Rc<Object>> = self
            .0
            .objects
            .borrow()
            .of_kind("Endpoints")
            .cloned()
            .collect();
        for ep in endpoints {
            let nodes: Vec<&str> = ep.spec["nodes"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            if !nodes.contains(&node) {
                continue;
            }
            let ready: Vec<&str> = nodes.into_iter().filter(|n| self.node_ready(n)).collect();
            self.write_status(
                p,
                "Endpoints",
                &ep.name,
                serde_json::json!({ "ready": ready }),
            );
        }
    }
}
