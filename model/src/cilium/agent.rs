//! The Cilium agent's CRD allocator (docs/upstream/cilium.md, section 4, "The agent side") and
//! its node's services.
//!
//! * It watches its own CiliumNode only (upstream's `LocalCiliumNodeResource`: the field
//!   selector `metadata.name=<node>`). On every event of it, it rebuilds its view of
//!   `release-ips` from the object and answers each entry with the answer table (`agent_answer`).
//! * It serves the kubelet's CNI ADD (`Agent::cni_add`) with a random free IP of the pool, never
//!   one outside the pool or whose state is `marked-for-release`, `ready-for-release` or
//!   `released`, and fails it at once when there is none: the pod does not wait inside the
//!   agent; the kubelet retries it after its backoff ([`super::kubelet`]).
//! * It writes `status` (used IPs and its `release-ips` view) through a trigger limited to one
//!   write per 15 s; a failed write re-triggers (a conflict re-reads the object first).
//! * A CNI ADD ends only once the pod's endpoint is created ([`ENDPOINT_GAP_MIN`]); if the agent
//!   dies before, the call fails and the pod is retried (its IP was only in the dead agent's
//!   memory).
//! * On restart its allocations are rebuilt from the pods that exist (endpoint restore), and the
//!   informer replays the current object.
//!
//! A `kubelet` process on the node ([`super::kubelet`]) creates and deletes pods toward a target
//! count that moves (swarm-chosen rates and bursts), so nodes see both shortage and excess. Pods
//! outlive agent restarts; a node crash takes everything.

pub use super::kubelet::Workload;
use super::kubelet::{pod_workers, run_workload, PodStore, Pods};
use super::*;
use crate::cilium::CiliumEvent;
use rand::Rng;
use sim::kube::{Kube, KubeClient, KubeError, Part, WatchEvent};
use sim::sync::Notify;
use sim::world::Host;
use sim::{NodeIx, Proc, World};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The shortest time from the agent's allocation of a pod's IP to the end of the pod's CNI ADD.
///
/// Upstream (cilium/cilium at ed90dd5ea4c7), cilium-cni asks the agent for an IP
/// (`allocateIPsWithCiliumAgent`, plugins/cilium-cni/cmd/cmd.go:141-161), plumbs the pod's
/// interface, then creates the endpoint with `SyncBuildEndpoint` (cmd.go:693-699): the agent
/// answers once the endpoint's first regeneration is done (`createEndpoint`,
/// daemon/cmd/endpoint.go:524-570). The endpoint reaches the disk (its state directory, which
/// `ReadEPsFromDirNames` reads at a restart, pkg/endpoint/restore.go:48-103) only during that
/// regeneration.
/// Until then the allocation is only in the agent's memory: an agent that dies leaves nothing to
/// restore, the CNI ADD fails (and its release of the IP, cmd.go:529-534, finds no agent), the
/// kubelet tears the sandbox down and retries the pod after its backoff. (A crash after the
/// state is written but before the call returns restores an endpoint that the sandbox's
/// teardown deletes at once; the model folds it into the failed call.)
///
/// Size: the gap is part of a pod's start, which Kubernetes' scalability SLO bounds at 5 s at
/// the 99th percentile, image pulls excluded (kubernetes/community
/// `sig-scalability/slos/pod_startup_latency.md`): [`ENDPOINT_GAP_MAX`]. The floor is the
/// plumbing and a regeneration that reuses the compiled datapath template; no measurement is
/// cited for it, 100 ms keeps it above zero. Each CNI ADD draws its gap uniformly in between.
pub const ENDPOINT_GAP_MIN: Duration = Duration::from_millis(100);
/// The longest such gap: the pod-startup SLO's 5 s (see [`ENDPOINT_GAP_MIN`]).
pub const ENDPOINT_GAP_MAX: Duration = Duration::from_secs(5);

/// One run of the agent process (a restart makes a new one).
pub(super) struct Agent {
    proc: Proc,
    node: String,
    kube: KubeClient,
    pods: Rc<Pods>,
    /// The spec last read (its `pool`: IP -> interface).
    spec: RefCell<Rc<Spec>>,
    used: RefCell<BTreeMap<Short, Short>>,
    view: RefCell<BTreeMap<Short, Short>>,
    base_rv: Cell<u64>,
    /// The CiliumNode spec part `spec` was last read from (a status write keeps it shared).
    spec_part: RefCell<Option<Rc<sim::kube::Body>>>,
    pending: Cell<bool>,
    /// The CNI's draws (which free IP a Go map range meets first).
    cni_rng: RefCell<rand_chacha::ChaCha8Rng>,
    /// How long each endpoint creation takes ([`ENDPOINT_GAP_MIN`]).
    endpoint_rng: RefCell<rand_chacha::ChaCha8Rng>,
    dirty: Notify,
    /// The interfaces of the observed `status.eni.enis` (an IP whose interface is not among them
    /// cannot be handed out: "unable to find ENI", crd.go:682-702 @ed90dd5).
    enis: RefCell<BTreeSet<Short>>,
    /// The last observed `release-ips`.
    observed_release: RefCell<BTreeMap<Short, Short>>,
    /// The observed `status.eni.enis` (written back by the agent's full-status writes).
    observed_enis: RefCell<BTreeMap<Short, BTreeSet<Short>>>,
    /// IPAM has started (the blocking wait for a minimal pool is over, crd.go:176-193, 288-325):
    /// from then on the agent answers the handshake.
    started: Cell<bool>,
    /// The last observed object has the minimal pool IPAM's start waits for.
    minimum: Cell<bool>,
    /// Endpoint restore has finished (`RestoreFinished`); only then does the initial status
    /// write go out and do pods get IPs.
    restored: Cell<bool>,
    /// The handshake answers changed since the last write (the "excess IP release" trigger,
    /// crd.go:446-448, which is not gated on restore).
    answered: Cell<bool>,
    /// Fix `cilium-restore-before-ack`.
    restore_first: bool,
    /// The run's switches (the agent's mutants).
    sw: Switches,
}

/// Installs kubelet and the Cilium agent as the services of `node` (CiliumNode `name`).
/// `store` is the operators' Pod store, which the kubelet's pods join at each boot.
pub fn install(
    world: &World,
    node: NodeIx,
    kube: &Kube,
    workload: Workload,
    sw: &Switches,
    store: &PodStore,
) {
    let restore_first = sw.restore_before_ack;
    let sw = sw.clone();
    let (kube, store) = (kube.clone(), store.clone());
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let pods: Rc<Pods> = Rc::default();
            store.register(&host.name(), &pods);
            let kubelet = host.spawn_process("kubelet");
            let (p, w, pd) = (kubelet.clone(), workload.clone(), pods.clone());
            kubelet.spawn("pods", async move { run_workload(&p, &w, &pd).await });
            let (p, pd) = (kubelet.clone(), pods.clone());
            kubelet.spawn("pod-workers", async move { pod_workers(&p, &pd).await });
            // kubelet restarts the agent (new pid) whenever it exits.
            let (k, p, pd, name) = (kube.clone(), kubelet.clone(), pods.clone(), host.name());
            let sw = sw.clone();
            kubelet.spawn("agent-supervisor", async move {
                loop {
                    let proc = p.spawn_child("cilium-agent");
                    let agent = Rc::new(Agent {
                        kube: k.client(&proc),
                        proc: proc.clone(),
                        node: name.clone(),
                        pods: pd.clone(),
                        spec: RefCell::default(),
                        used: RefCell::default(),
                        view: RefCell::default(),
                        base_rv: Cell::new(0),
                        spec_part: RefCell::default(),
                        pending: Cell::new(true),
                        cni_rng: RefCell::new(proc.rng("cni")),
                        endpoint_rng: RefCell::new(proc.rng("endpoint")),
                        dirty: Notify::new(),
                        enis: RefCell::default(),
                        observed_enis: RefCell::default(),
                        observed_release: RefCell::default(),
                        started: Cell::new(false),
                        minimum: Cell::new(false),
                        restored: Cell::new(false),
                        answered: Cell::new(false),
                        restore_first,
                        sw: sw.clone(),
                    });
                    *pd.agent.borrow_mut() = Rc::downgrade(&agent);
                    let a = agent.clone();
                    let restore_ms = workload.restore_ms;
                    proc.spawn("restore", async move { a.restore(restore_ms).await });
                    for (task, f) in [("informer", 0), ("cni", 1), ("status-writer", 2)] {
                        let a = agent.clone();
                        proc.spawn(task, async move {
                            match f {
                                0 => a.informer().await,
                                1 => a.cni().await,
                                _ => a.status_writer().await,
                            }
                        });
                    }
                    proc.wait_exit().await;
                    pd.sandboxes_failed(&p);
                    p.sleep(Duration::from_secs(2)).await;
                }
            });
        }),
    );
}

/// The agent's view of `release-ips` after it answered every entry of an observed one
/// ([`agent_answer`]): `pool` is its node's pool (IP -> interface), `used` its allocations.
pub fn answer_all<V>(
    release_ips: &BTreeMap<Short, Short>,
    pool: &BTreeMap<Short, Short>,
    used: &BTreeMap<Short, V>,
) -> BTreeMap<Short, Short> {
    let mut view = BTreeMap::new();
    for (ip, state) in release_ips {
        let in_pool = pool.contains_key(ip);
        let allocated = used.contains_key(ip);
        match agent_answer(state, in_pool, allocated) {
            Answer::Keep => {
                view.insert(*ip, *state);
            }
            Answer::Remove => {}
            Answer::Set(s) => {
                view.insert(*ip, Short::lit(s));
            }
        }
    }
    view
}

/// The IPs the agent may hand to a pod (in pool order; the CNI draws one of them): in the pool,
/// not used (one walk over the pool and the used IPs), and not in a handshake state that forbids
/// it (`marked-for-release`, `ready-for-release`, `released` in its `view`).
pub fn allocatable<'a, V>(
    pool: &'a BTreeMap<Short, Short>,
    used: &'a BTreeMap<Short, V>,
    view: &'a BTreeMap<Short, Short>,
) -> impl Iterator<Item = Short> + 'a {
    let taken = [MARKED, READY, RELEASED].map(Short::lit);
    unused(pool, used)
        .filter(move |(ip, _)| view.get(ip).is_none_or(|s| !taken.contains(s)))
        .map(|(ip, _)| ip)
}

impl Agent {
    /// Endpoint restore (daemon.go:764-821 @ed90dd5: `startIPAM`, then `restoreOldEndpoints`,
    /// then `RestoreFinished`): once IPAM has started and after `restore_ms`, the IPs of the pods
    /// that exist are in use again (`AllocateIPWithoutSyncUpstream`, daemon/cmd/state.go:106-109,
    /// 363-381). An IP in a handshake state that forbids allocation cannot be taken: that pod's
    /// endpoint is not restored, and the agent no longer counts the IP as used, although the pod
    /// still has it (docs/upstream/cilium.md §4.4 b).
    async fn restore(&self, restore_ms: u32) {
        // `newNodeStore`'s blocking wait polls every 5 s (crd.go:176-193); then the allocator
        // is registered and later events are answered.
        while !self.minimum.get() {
            self.proc.sleep(Duration::from_secs(5)).await;
        }
        self.started.set(true);
        self.proc
            .sleep(Duration::from_millis(restore_ms as u64))
            .await;
        {
            let taken = [MARKED, READY, RELEASED].map(Short::lit);
            let view = self.view.borrow();
            let mut used = self.used.borrow_mut();
            for (pod, ip) in self.pods.pods.borrow().iter() {
                let Some(ip) = ip else { continue };
                let state = view.get(ip);
                let forbidden = state.is_some_and(|s| taken.contains(s));
                // With the fix, an IP only marked is still the pod's: restore takes it (and the
                // answer becomes do-not-release).
                let marked = state.is_some_and(|s| s.as_str() == MARKED);
                if forbidden && !(self.restore_first && marked) {
                    continue; // "IP not available, marked or ready for release"
                }
                used.insert(*ip, *pod);
            }
        }
        self.restored.set(true);
        if self.restore_first {
            self.answer_observed();
        }
        self.mark_dirty();
    }

    fn answer(&self, ip: Short, state: Option<Short>) {
        self.proc.emit(CiliumEvent::CiliumAgentState {
            ip,
            state,
            allocated: self.used.borrow().contains_key(&ip),
        });
    }

    /// Takes a CiliumNode version (an informer event, its own writes' included, or a fresh
    /// read): pool, base version, and the answered `release-ips` view.
    fn observe(&self, obj: &sim::kube::Object) {
        if obj.rv <= self.base_rv.get() {
            return;
        }
        self.base_rv.set(obj.rv);
        let same_spec = self
            .spec_part
            .borrow()
            .as_ref()
            .is_some_and(|s| Rc::ptr_eq(s, &obj.spec));
        if !same_spec {
            *self.spec.borrow_mut() = spec_of(obj);
            *self.spec_part.borrow_mut() = Some(obj.spec.clone());
        }
        let status = status_of(obj);
        *self.enis.borrow_mut() = status.enis.keys().copied().collect();
        *self.observed_enis.borrow_mut() = status.enis.clone();
        // hasMinimumIPsInPool (crd.go:288-325): two IPs (the health endpoint's default) and the
        // VPC's CIDR, which comes from the interfaces in the status.
        self.minimum
            .set(self.spec.borrow().pool.len() >= 2 && !status.enis.is_empty());
        *self.observed_release.borrow_mut() = status.release_ips.clone();
        self.answer_observed();
    }

    /// The handshake loop of `updateLocalNodeResource` (crd.go:363-449) on the last observed
    /// `release-ips`. Before the allocator is registered (crd.go:410-426), and with fix
    /// `cilium-restore-before-ack` before endpoint restore has finished, entries are left as
    /// they are (the view is the observed map: IPs in it stay unallocatable).
    fn answer_observed(&self) {
        let release_ips = &*self.observed_release.borrow();
        let answering = self.started.get() && (!self.restore_first || self.restored.get());
        let mut view = if answering && self.sw.mutant_ack_allocated {
            answer_all(
                release_ips,
                &self.spec.borrow().pool,
                &BTreeMap::<Short, ()>::new(),
            )
        } else if answering {
            answer_all(release_ips, &self.spec.borrow().pool, &self.used.borrow())
        } else {
            release_ips.clone()
        };
        if self.sw.mutant_keep_released_entry {
            let released = release_ips.iter().filter(|(_, s)| s.as_str() == RELEASED);
            view.extend(released.map(|(ip, s)| (*ip, *s)));
        }
        if self.sw.mutant_keep_aborted {
            let old = self.view.borrow();
            let dropped = old.iter().filter(|(ip, _)| !release_ips.contains_key(*ip));
            view.extend(dropped.map(|(ip, s)| (*ip, *s)).collect::<Vec<_>>());
        }
        {
            let old = self.view.borrow();
            for (ip, s) in &view {
                if old.get(ip) != Some(s) {
                    self.answer(*ip, Some(*s));
                }
            }
            for ip in old.keys().filter(|ip| !view.contains_key(*ip)) {
                self.answer(*ip, None);
            }
        }
        let changed = view != *release_ips;
        *self.view.borrow_mut() = view;
        if changed && answering {
            self.answered.set(true);
            self.mark_dirty();
        }
    }

    async fn informer(&self) {
        self.kube
            .run_informer(KIND, Some(&self.node), INFORMER_IDLE, |ev| {
                if let WatchEvent::Upsert(obj) = ev {
                    self.observe(&obj);
                }
            })
            .await;
    }

    /// CNI DEL: IPs of deleted pods go back to the pool, each only while it is still that pod's
    /// (endpoint restore took the IPs of the pods that existed then).
    async fn cni(&self) {
        loop {
            let seen = self.pods.changed.generation();
            let mut changed = false;
            for (pod, ip) in self.pods.gone.take() {
                let mut used = self.used.borrow_mut();
                if used.get(&ip) == Some(&pod) {
                    used.remove(&ip);
                    changed = true;
                }
            }
            if changed {
                self.mark_dirty();
            }
            self.pods.changed.changed_since(seen).await;
        }
    }

    /// CNI ADD for `pod` (`crdAllocator.AllocateNext`, crd.go:833-852 @ed90dd5): fails at once
    /// unless the agent runs and has restored its endpoints, and a free IP exists; the IP is the
    /// first of a Go map range over the pool (`allocateNext`, crd.go:565-604), so a random one
    /// of the allocatable IPs. An IP whose interface the observed status does not list fails the
    /// call ("unable to find ENI", `buildAllocationResult`, crd.go:682-702) and stays free.
    /// Whether the pod got an IP; its CNI ADD then ends once the endpoint is created (after a
    /// gap drawn from [`ENDPOINT_GAP_MIN`]..=[`ENDPOINT_GAP_MAX`]), unless the agent dies first.
    pub(super) fn cni_add(self: &Rc<Self>, pod: Short) -> bool {
        if !self.proc.is_alive() || !self.restored.get() {
            return false;
        }
        let ip = {
            let (spec, used, view) = (self.spec.borrow(), self.used.borrow(), self.view.borrow());
            let nothing = BTreeMap::new();
            let view = match self.sw.mutant_allocate_held {
                true => &nothing,
                false => &*view,
            };
            let free: Vec<Short> = allocatable(&spec.pool, &used, view).collect();
            if free.is_empty() {
                return false; // "No more IPs available"
            }
            let ip = free[self.cni_rng.borrow_mut().random_range(0..free.len())];
            if !spec
                .pool
                .get(&ip)
                .is_some_and(|e| self.enis.borrow().contains(e))
            {
                return false;
            }
            ip
        };
        self.used.borrow_mut().insert(ip, pod);
        self.pods.served(pod, ip);
        self.pods.creating.borrow_mut().insert(pod, ip);
        self.proc.emit(CiliumEvent::CiliumPodIp { pod, ip });
        self.mark_dirty();
        let (min, max) = (
            ENDPOINT_GAP_MIN.as_micros() as u64,
            ENDPOINT_GAP_MAX.as_micros() as u64,
        );
        let gap = self.endpoint_rng.borrow_mut().random_range(min..=max);
        let me = self.clone();
        self.proc.spawn("endpoint-create", async move {
            me.proc.sleep(Duration::from_micros(gap)).await;
            // The first regeneration is done: the endpoint is saved and the CNI ADD returns.
            me.pods.creating.borrow_mut().remove(&pod);
        });
        true
    }

    /// The status writer's trigger.
    fn mark_dirty(&self) {
        self.pending.set(true);
        self.dirty.notify();
    }

    /// The rate-limited CiliumNode status writer: at most one write per 15 s; a failed write
    /// re-triggers (after a conflict, from a fresh read).
    async fn status_writer(&self) {
        let mut last_write: Option<u64> = None;
        loop {
            // The initial write waits for restore (crd.go:195-200, PR #9888); the "excess IP
            // release" trigger does not.
            let ready = || self.pending.get() && (self.restored.get() || self.answered.get());
            while !ready() {
                let seen = self.dirty.generation();
                if ready() {
                    break;
                }
                self.dirty.changed_since(seen).await;
            }
            if let Some(t) = last_write {
                let next = t + AGENT_UPDATE_RATE.as_micros() as u64;
                let now = self.proc.mono_us();
                if now < next {
                    self.proc.sleep(Duration::from_micros(next - now)).await;
                }
            }
            // The trigger stamps its run's start (`lastTrigger`, pkg/trigger/trigger.go:192
            // @ed90dd5): the next write is due 15 s after this one began, not after it returned.
            last_write = Some(self.proc.mono_us());
            self.pending.set(false);
            self.answered.set(false);
            // A full-status write (crd.go:474-500): the interfaces as last observed go back too.
            let status = sim::kube::Body::of(Rc::new(Status {
                used: self.used.borrow().clone(),
                release_ips: self.view.borrow().clone(),
                enis: self.observed_enis.borrow().clone(),
            }));
            let result = self
                .kube
                .update(KIND, &self.node, self.base_rv.get(), Part::Status, status)
                .await;
            // Upstream's `refreshNode` discards the answer of its UpdateStatus (crd.go:474-500
            // @ed90dd5): the next write's resourceVersion, and the agent's copy of the object,
            // come from the informer, whose Update handler runs `updateLocalNodeResource` for
            // every update that is not DeepEqual to the last (crd.go:107-165), the agent's own
            // writes included.
            match result {
                Ok(_) => {}
                Err(KubeError::Conflict) => {
                    if let Ok(fresh) = self.kube.get(KIND, &self.node).await {
                        self.observe(&fresh);
                    }
                    self.mark_dirty();
                }
                Err(_) => self.mark_dirty(),
            }
        }
    }
}
