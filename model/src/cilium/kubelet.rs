//! The kubelet of a Cilium node: it creates and deletes pods toward a moving target, and its pod
//! workers ask the CNI (the agent) for each new pod's IP, retrying a failed attempt after the pod
//! worker's backoff.
//!
//! Upstream, a pod's sandbox is set up by one CNI ADD. cilium-cni asks the agent, whose CRD
//! allocator fails at once when no IP is free: `nodeStore.allocateNext` walks
//! `spec.ipam.pool` and returns "No more IPs available" (cilium/cilium `pkg/ipam/crd.go`,
//! `allocateNext`, l. 565-604 at ed90dd5ea4c7). The agent keeps no queue of waiting pods: the
//! sandbox creation fails, the pod worker's sync returns the error, and the kubelet requeues the
//! pod after `backOffPeriod` = 10 s with jitter factor 0.5, so 10 to 15 s later
//! (kubernetes/kubernetes `pkg/kubelet/kubelet.go` const `backOffPeriod`, and
//! `pkg/kubelet/pod_workers.go` `podWorkers.completeWork`: `wait.Jitter(p.backOffPeriod,
//! workerBackOffPeriodJitterFactor)`, v1.30.3, the Kubernetes release of the client-go v0.30.3
//! the pinned Cilium vendors). This backoff is flat: the exponential one (10 s doubling to
//! `MaxContainerBackOff` = 300 s) is for container restarts and image pulls, not for a failed
//! sync. So a pod that found no IP is served at its next retry, not the instant the pool grows.
//!
//! The CNI ADD does not end with the allocation: cilium-cni then plumbs the pod's interface and
//! asks the agent to create the endpoint, waiting for its first regeneration
//! (`plugins/cilium-cni/cmd/cmd.go` `Cmd.Add`, l. 521-538 and 693-699; `SyncBuildEndpoint`,
//! daemon/cmd/endpoint.go `createEndpoint`, l. 566-570, at ed90dd5ea4c7). Until it returns, the
//! IP lives only in the agent's memory: if the agent dies in that gap, the call fails, the
//! sandbox is torn down, and the pod is retried after the backoff with a new allocation (see
//! `ENDPOINT_GAP_MIN` in the agent).
//!
//! Which IP it gets: `allocateNext` returns the first free IP of a Go `range` over the pool map,
//! whose order the Go runtime randomises on every loop (the Go specification, "For statements
//! with range clause": "The iteration order over maps is not specified and is not guaranteed to
//! be the same from one iteration to the next"). The agent draws it from its seeded generator.

use super::agent::Agent;
use crate::cilium::CiliumEvent;
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::sync::Notify;
use sim::{Proc, Short};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

/// The kubelet's `backOffPeriod`: a pod whose sync failed is synced again this long later, plus
/// jitter (pkg/kubelet/kubelet.go, v1.30.3).
pub const POD_SYNC_BACKOFF: Duration = Duration::from_secs(10);
/// `workerBackOffPeriodJitterFactor` (pkg/kubelet/pod_workers.go, v1.30.3): `wait.Jitter(d, f)`
/// waits `d + rand * f * d`, so at most this many per mille of `POD_SYNC_BACKOFF` more.
pub const POD_SYNC_JITTER_PERMILLE: u64 = 500;
/// The longest wait between two sandbox attempts of one pod (µs).
pub const POD_RETRY_MAX_US: u64 =
    POD_SYNC_BACKOFF.as_micros() as u64 * (1000 + POD_SYNC_JITTER_PERMILLE) / 1000;

/// How the kubelet drives pods on a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Largest target pod count.
    pub max_pods: u32,
    /// Period of the target's swing (s).
    pub period_s: u32,
    /// Seconds between kubelet steps (range).
    pub step_min_s: u32,
    /// Upper end of that range (s).
    pub step_max_s: u32,
    /// Percentage of steps that create a burst of pods.
    pub burst_percent: u32,
    /// How long endpoint restore takes after an agent restart, once IPAM has started (ms).
    #[serde(default)]
    pub restore_ms: u32,
}

/// Pods on a node: name -> IP (none while pending). Shared by the kubelet and the agent.
#[derive(Default)]
pub(super) struct Pods {
    pub(super) pods: RefCell<BTreeMap<Short, Option<Short>>>,
    /// A pod was created or deleted (the pod workers and the agent's CNI DEL look).
    pub(super) changed: Notify,
    next: Cell<u32>,
    /// Pods without an IP: when their pod worker next tries the sandbox (kubelet's monotonic
    /// clock, µs).
    retry_at: RefCell<BTreeMap<Short, u64>>,
    /// Deleted pods that held an IP, as (pod, IP), until the CNI frees the IP.
    pub(super) gone: RefCell<Vec<(Short, Short)>>,
    /// Pods whose CNI ADD is under way (the agent allocated the IP and is creating the
    /// endpoint), with that IP.
    pub(super) creating: RefCell<BTreeMap<Short, Short>>,
    /// The running agent, which serves CNI ADD (none while it restarts).
    pub(super) agent: RefCell<Weak<Agent>>,
}

impl Pods {
    /// The agent gave `pod` an IP: it no longer waits.
    pub(super) fn served(&self, pod: Short, ip: Short) {
        if let Some(slot) = self.pods.borrow_mut().get_mut(&pod) {
            *slot = Some(ip);
        }
        self.retry_at.borrow_mut().remove(&pod);
    }
}

/// The operators' Pod store, for the surge allocation's count of a node's pending pods
/// (`getPendingPodCount`, cilium/cilium pkg/ipam/node.go:307-325 at ed90dd5ea4c7: pods of the
/// node in phase Pending, read from the leader's Pod informer, operator/cmd/root.go:664-671).
///
/// Known difference: the model keeps no Pod objects in the API server, so the store reads each
/// node's kubelet directly: the informer's view without its watch delay, and current even while
/// the operator is cut off from the API server. A pod is `Pending` until its sandbox is up: it
/// has no IP, or its CNI ADD is still creating the endpoint.
#[derive(Clone, Default)]
pub struct PodStore(Rc<RefCell<BTreeMap<String, Weak<Pods>>>>);

impl std::fmt::Debug for PodStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.borrow().keys()).finish()
    }
}

impl PodStore {
    /// `node`'s kubelet (re)started with `pods`.
    pub(super) fn register(&self, node: &str, pods: &Rc<Pods>) {
        self.0
            .borrow_mut()
            .insert(node.to_string(), Rc::downgrade(pods));
    }

    /// The number of `node`'s pods in phase `Pending` (0 for a node whose kubelet is down).
    pub fn pending(&self, node: &str) -> usize {
        let Some(pods) = self.0.borrow().get(node).and_then(Weak::upgrade) else {
            return 0;
        };
        let waiting = pods
            .pods
            .borrow()
            .values()
            .filter(|ip| ip.is_none())
            .count();
        let creating = pods.creating.borrow().len();
        waiting + creating
    }
}

impl Pods {
    /// The agent died: every CNI ADD under way fails (the call to the agent breaks), the
    /// sandbox is torn down and its pod waits for its next sync, due at once (the pod worker
    /// then finds no agent and backs off).
    pub(super) fn sandboxes_failed(&self, proc: &Proc) {
        let now = proc.mono_us();
        for (pod, ip) in std::mem::take(&mut *self.creating.borrow_mut()) {
            let mut pods = self.pods.borrow_mut();
            let Some(slot) = pods.get_mut(&pod).filter(|s| **s == Some(ip)) else {
                continue; // deleted meanwhile
            };
            *slot = None;
            self.retry_at.borrow_mut().insert(pod, now);
            proc.emit(CiliumEvent::CiliumSandboxFailed { pod, ip });
        }
        self.changed.notify();
    }
}

/// The kubelet's pod churn: every step (a random number of seconds), one pod more or less
/// toward a target that swings between 0 and `max_pods` (a triangle wave), plus bursts.
pub(super) async fn run_workload(proc: &Proc, w: &Workload, pods: &Pods) {
    let mut rng = proc.rng("workload");
    let host = proc.host_name();
    loop {
        proc.sleep(Duration::from_secs(
            rng.random_range(w.step_min_s..=w.step_max_s.max(w.step_min_s)) as u64,
        ))
        .await;
        let t = (proc.mono_us() / 1_000_000) as u32 % w.period_s.max(1);
        let half = w.period_s.max(2) / 2;
        let target = w.max_pods * if t < half { t } else { w.period_s - t } / half.max(1);
        let count = pods.pods.borrow().len() as u32;
        let burst = rng.random_range(0..100) < w.burst_percent;
        if count < target || burst {
            let n = if burst { rng.random_range(2..=6) } else { 1 };
            for _ in 0..n {
                let pod = Short::from_fmt(format_args!("{host}-pod-{}", pods.next.get()))
                    .expect("a node's pod names fit a Short");
                pods.next.set(pods.next.get() + 1);
                pods.pods.borrow_mut().insert(pod, None);
                // A new pod's worker syncs it at once.
                pods.retry_at.borrow_mut().insert(pod, proc.mono_us());
                proc.emit(CiliumEvent::CiliumPodCreated { pod });
            }
        } else if count > target && count > 0 {
            let victim = {
                let p = pods.pods.borrow();
                p.keys().nth(rng.random_range(0..p.len())).copied()
            };
            if let Some(pod) = victim {
                let ip = pods.pods.borrow_mut().remove(&pod).flatten();
                pods.retry_at.borrow_mut().remove(&pod);
                if let Some(ip) = ip {
                    pods.gone.borrow_mut().push((pod, ip));
                }
                proc.emit(CiliumEvent::CiliumPodDeleted { pod, ip });
            }
        }
        pods.changed.notify();
    }
}

/// The kubelet's pod workers for pods without an IP: each due pod's sandbox is tried (a CNI ADD
/// to the running agent); a failure (no agent, agent not restored, no free IP, IP's interface
/// not in the status yet) requeues the pod after [`POD_SYNC_BACKOFF`] plus jitter.
pub(super) async fn pod_workers(proc: &Proc, pods: &Pods) {
    let mut rng = proc.rng("pod-workers");
    let jitter_max = POD_SYNC_BACKOFF.as_micros() as u64 * POD_SYNC_JITTER_PERMILLE / 1000;
    loop {
        let seen = pods.changed.generation();
        let now = proc.mono_us();
        let due: Vec<Short> = {
            let r = pods.retry_at.borrow();
            r.iter()
                .filter(|(_, t)| **t <= now)
                .map(|(p, _)| *p)
                .collect()
        };
        for pod in due {
            let agent = pods.agent.borrow().upgrade();
            let served = agent.is_some_and(|a| a.cni_add(pod));
            if !served {
                let wait = POD_SYNC_BACKOFF.as_micros() as u64 + rng.random_range(0..=jitter_max);
                pods.retry_at.borrow_mut().insert(pod, now + wait);
            }
        }
        let next = pods.retry_at.borrow().values().min().copied();
        let changed = pods.changed.changed_since(seen);
        match next {
            Some(t) => {
                let sleep = std::pin::pin!(proc.sleep_until_mono(t.max(now + 1)));
                futures::future::select(sleep, changed).await;
            }
            None => changed.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(s: &str) -> Short {
        Short::new(s).unwrap()
    }

    #[test]
    fn the_pod_store_counts_pods_without_a_sandbox_as_pending() {
        let store = PodStore::default();
        assert_eq!(store.pending("n1"), 0);
        let pods: Rc<Pods> = Rc::default();
        store.register("n1", &pods);
        pods.pods.borrow_mut().extend([
            (short("waiting"), None),
            (short("creating"), Some(short("10.0.0.1"))),
            (short("running"), Some(short("10.0.0.2"))),
        ]);
        pods.creating
            .borrow_mut()
            .insert(short("creating"), short("10.0.0.1"));
        assert_eq!((store.pending("n1"), store.pending("n2")), (2, 0));
        // A kubelet that went down leaves nothing behind.
        drop(pods);
        assert_eq!(store.pending("n1"), 0);
    }
}
