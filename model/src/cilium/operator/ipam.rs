//! The leader's ENI IPAM node manager (cilium/cilium `pkg/ipam/node_manager.go`, `node.go` and
//! `pkg/aws/eni/node.go` at ed90dd5ea4c754a04a8135c6bb9c8afe29b75811). Where each input comes from, as upstream:
//!
//! * **the cloud cache** (the instances API's describe results, node_manager.go:212-225): each
//!   node's pool and interfaces. The spec's `pool` and `status.eni.enis` are written from it;
//!   `available` is counted from it (`ResyncInterfacesAndIPs`, eni/node.go:539-611);
//! * **the observed CiliumNode** (the informer's copy, `n.resource`): `used` (`Status.IPAM.Used`, pkg/ipam/node.go:476), the
//!   interfaces' addresses the release candidates come from (`PrepareIPRelease` reads
//!   `status.eni.enis`), and the agent's answers in `release-ips`. The operator's own writes do
//!   not update it; only the informer does;
//! * **its own memory** ([`ReleaseState`]): when each IP was first seen excess and its own
//!   handshake state, lost with the process.
//!
//! The cadence (node_manager.go:231-249, 477-520; node.go:982-1010): a resync every minute (the
//! `ipam-node-interval-refresh` controller, at once when the IPAM starts): describe every
//! instance, then for each node, deficit first, recalculate, run the pool maintainer when an
//! allocation or a release is needed, and sync the node to the API server. A CiliumNode update
//! that shows a node short of IPs triggers that node's maintainer. A maintainer pass that mutated
//! the cloud or failed syncs that instance and resyncs every node. Maintenance waits for the
//! instances API to be ready, and after each successful pass for a resync that started after it
//! (`requireResync`, the read-after-write fence against the cloud's stale view); a failing pass
//! backs off exponentially, jittered and scaled by the cluster's size, up to 5 min (the `backoff` module).
//!
//! Each node's pool maintainer, API sync, instance sync and retry are triggers (`Upsert`,
//! node_manager.go:319-375 @ed90dd5; `trigger.rs`), each its own task: a resync only triggers the
//! node's maintainer and its API sync (`resyncNode`, node_manager.go:477-520) and waits for
//! neither, so the sync it triggered usually writes while the maintainer's cloud call is still
//! out, and the maintainer's mutation is written by the sync of the resync its instance sync
//! triggers. Requests to a trigger that is running or waiting fold into one more run; the
//! minimum intervals are upstream's (10 ms; the retry 1 min). The maintainer's backoff after a
//! failed pass sleeps inside the trigger's run (`backoff.Wait`, node_manager.go:323-327), so
//! requests during it fold into the run after it.
//!
//! Interfaces exist from the start (the model does not create or attach ENIs), each with the same
//! capacity; an allocation takes the first interface with room.

use super::OperatorConfig;
use crate::cilium::decide::{
    excess_ips, max_ips_to_allocate, needed_ips, prepare_ip_release, ReleaseState, ReleaseStep,
};
use crate::cilium::CiliumEvent;
use crate::cilium::*;
use sim::cloud::{Cloud, CloudClient, CloudError, Interfaces};
use sim::kube::{Body, Kube, KubeClient, Part, WatchEvent};
use sim::sync::Notify;
use sim::Proc;
use std::cell::RefCell;
use std::rc::Rc;

mod backoff;
mod fence;
mod pass;
mod trigger;

use backoff::Exponential;
use fence::Fence;
use sim::leaderelection::LeaderElector;
use trigger::Trigger;

/// The longest of the pool maintainer's backoffs after a failed pass (µs): its `Max`, 5 min
/// (node_manager.go:312-318; the private `backoff` module models the backoff).
pub const BACKOFF_MAX_US: u64 = backoff::POOL_MAINTAINER_MAX.as_micros() as u64;

/// A CiliumNode as the operator last saw it, each part parsed when first needed (most versions
/// are superseded before a pass looks at them) and carried over to the next version when that
/// version shares the part (a status write keeps the spec).
pub(crate) struct Observed {
    pub(crate) obj: Rc<sim::kube::Object>,
    spec: std::cell::OnceCell<Rc<Spec>>,
    status: std::cell::OnceCell<Rc<Status>>,
}

impl Observed {
    fn of(obj: Rc<sim::kube::Object>, prev: Option<&Observed>) -> Rc<Observed> {
        let o = Observed {
            obj,
            spec: Default::default(),
            status: Default::default(),
        };
        if let Some(p) = prev {
            if let Some(s) = p
                .spec
                .get()
                .filter(|_| Rc::ptr_eq(&p.obj.spec, &o.obj.spec))
            {
                let _ = o.spec.set(s.clone());
            }
            if let Some(s) = p
                .status
                .get()
                .filter(|_| Rc::ptr_eq(&p.obj.status, &o.obj.status))
            {
                let _ = o.status.set(s.clone());
            }
        }
        Rc::new(o)
    }

    fn spec(&self) -> &Spec {
        self.spec.get_or_init(|| spec_of(&self.obj))
    }

    fn status(&self) -> &Status {
        self.status.get_or_init(|| status_of(&self.obj))
    }

    /// The number of IPs in `status.used` (counted without parsing a part written as JSON).
    fn used_count(&self) -> usize {
        let status = &self.obj.status;
        status.typed::<Status>().map_or_else(
            || status["used"].as_object().map_or(0, |m| m.len()),
            |s| s.used.len(),
        )
    }
}

/// The node manager's view of one node.
#[derive(Default)]
struct NodeState {
    /// `n.resource`: the informer's copy.
    resource: Option<Rc<Observed>>,
    /// Entries of the observed `release-ips` this operator deleted from its copy (the issue
    /// #39981 fix deletes from `n.resource`); cleared when the informer replaces the copy.
    dropped: BTreeSet<Short>,
    release: ReleaseState,
    needed: usize,
    excess: usize,
    /// The inputs of the last `recalculate`: the IPs the cache held for the node, and the
    /// resourceVersion whose `used` it counted (reported with each mark).
    counted: (usize, u64),
    /// `resyncNeeded`: when the last successful pass ended (monotonic µs).
    resync_needed: Option<u64>,
    /// `waitingForPoolMaintenance`: the maintainer was triggered for a need and has not yet
    /// completed a pass (`requirePoolMaintenance`/`poolMaintenanceComplete`, node.go:380-390).
    waiting: bool,
    /// The node's triggers (made when the informer first shows the node).
    triggers: Option<Rc<Triggers>>,
    /// Fix `cilium-hold-unknown-release`: IPs of unassigns whose outcome is unknown, and when.
    uncertain: BTreeMap<Short, u64>,
    /// When this operator last released each IP (fix `cilium-readd-after-resync`).
    released_at: BTreeMap<Short, u64>,
}

#[derive(Default)]
struct State {
    /// The instances API cache: node -> its interfaces, and when the describe that filled it
    /// started.
    cache: BTreeMap<Short, Rc<Interfaces>>,
    cache_at: BTreeMap<Short, u64>,
    /// `InstancesAPIIsReady` (`stableInstancesAPI`): set by every full resync to whether it
    /// answered (`instancesAPIResync`, pkg/ipam/node_manager.go:212-217 @ed90dd5; the first, in
    /// `Start`, must answer or the IPAM does not start), and by a new node's describe in
    /// `Upsert` (l. 301-308), which runs only while it is ready; the per-node instance sync
    /// (`instanceAPISync`) leaves it alone. While false every pool maintainer pass is refused
    /// ([`Ipam::maintain`]; `MaintainIPPool`, pkg/ipam/node.go:985-990).
    ready: bool,
    nodes: BTreeMap<Short, NodeState>,
    /// When the IPAM started (monotonic µs; mutant `cilium-mutant-delay-from-start`).
    started_us: u64,
}

/// What a pool maintainer pass did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Idle,
    Mutated,
    Failed,
}

/// The leader's IPAM: node manager, CiliumNode informer, cloud cache.
pub struct Ipam {
    proc: Proc,
    kube: KubeClient,
    cloud: CloudClient,
    /// Fix `cilium-fence-cloud`: the elector whose term the cloud calls carry (see
    /// [`Ipam::cloud`]).
    fence: Option<Fence>,
    cfg: Rc<OperatorConfig>,
    state: RefCell<State>,
    /// `legacy.ctx` (operator/cmd/root.go:488, 515-522 @ed90dd5): once notified, cancelled, and
    /// the CiliumNode informer started on it is stopped (the maintenance runs on).
    legacy_ctx: Notify,
}

/// A node's triggers, with upstream's minimum intervals (node_manager.go:319-375 @ed90dd5).
struct Triggers {
    /// `ipam-pool-maintainer-<node>`: `MaintainIPPool` (10 ms).
    maintainer: Rc<Trigger>,
    /// `ipam-pool-maintainer-<node>-retry`: triggers the maintainer (1 min).
    retry: Rc<Trigger>,
    /// `ipam-node-k8s-sync-<node>`: `syncToAPIServer` (10 ms).
    k8s_sync: Rc<Trigger>,
    /// `ipam-node-instance-sync-<node>`: this instance's sync, then every node's resync (10 ms).
    instance_sync: Rc<Trigger>,
}

impl Triggers {
    fn shutdown(&self) {
        for t in [
            &self.maintainer,
            &self.retry,
            &self.k8s_sync,
            &self.instance_sync,
        ] {
            t.shutdown();
        }
    }
}

/// The minimum interval of the maintainer, API sync and instance sync triggers.
const TRIGGER_MIN: std::time::Duration = std::time::Duration::from_millis(10);
/// The Pod kind the leader lists before its CiliumNode informer starts.
const POD_KIND: &str = "Pod";
/// The retry trigger's: "large minimal interval to not retry too often".
const RETRY_MIN: std::time::Duration = std::time::Duration::from_secs(60);

/// A CiliumNode's name as a map key (node names are short).
fn key(name: &str) -> Short {
    Short::new(name).expect("CiliumNode names (node names) fit a Short")
}

/// A node's pool from its interfaces (IP -> interface).
fn pool_of(ifs: &Interfaces) -> BTreeMap<Short, Short> {
    ifs.iter()
        .flat_map(|(eni, ips)| ips.iter().map(move |ip| (*ip, *eni)))
        .collect()
}

impl Ipam {
    /// The node manager of the leader elected by `elector`.
    pub fn new(
        proc: &Proc,
        kube: &Kube,
        cloud: &Cloud,
        cfg: Rc<OperatorConfig>,
        elector: &LeaderElector,
    ) -> Rc<Ipam> {
        let fence = cfg.switches.fence_cloud.then(|| Fence::new(elector));
        Rc::new(Ipam {
            proc: proc.clone(),
            kube: kube.client(proc),
            cloud: cloud.client(proc).with_sdk(super::IPAM_API_LIMIT),
            fence,
            cfg,
            state: RefCell::default(),
            legacy_ctx: Notify::new(),
        })
    }

    fn now(&self) -> u64 {
        self.proc.mono_us()
    }

    /// The client for one cloud call: with fix `cilium-fence-cloud`, fenced with the term the
    /// leader holds now.
    fn cloud(&self) -> CloudClient {
        match &self.fence {
            Some(f) => self.cloud.fenced(f.now()),
            None => self.cloud.clone(),
        }
    }

    /// `NodeManager.Start`: the blocking resync of every instance (false: it failed, and the
    /// process must exit), then the informer and the maintenance task.
    pub async fn start(self: &Rc<Self>, identity: &str) -> bool {
        if self.instances_resync().await.is_none() {
            return false;
        }
        self.state.borrow_mut().started_us = self.now();
        let sw = &self.cfg.switches;
        self.proc.emit(CiliumEvent::CiliumIpamStarted {
            identity: identity.to_string(),
            cleans_readded: sw.readd_released_ip || sw.readd_after_resync,
        });
        let me = self.clone();
        self.proc
            .spawn("informer", async move { me.informer().await });
        let me = self.clone();
        self.proc
            .spawn("maintenance", async move { me.interval_refresh().await });
        true
    }

    /// `legacy.onStop` cancels `legacy.ctx`: the CiliumNode informer stops, and the node
    /// manager's copies stay as they were (its triggers and resyncs do not stop; see
    /// [`super::shutdown`]).
    pub fn cancel_legacy_ctx(&self) {
        self.legacy_ctx.notify();
    }

    /// The CiliumNode synchronizer's informer (`operator/cmd/cilium_node.go:130-225`), run on
    /// `legacy.ctx`. `legacyOnLeader.onStart` starts it only once the Pod store has synced
    /// (`legacy.resources.Pods.Store(ctx)`, operator/cmd/root.go:664-674 @ed90dd5), after the
    /// allocator's start, whose interval controller has already begun its first resync: that
    /// resync usually finds no node, so the replayed nodes are first written a resync later.
    async fn informer(self: Rc<Self>) {
        if self.legacy_ctx.generation() > 0 {
            return;
        }
        let cancelled = self.legacy_ctx.changed_since(0);
        let run = std::pin::pin!(async {
            self.pod_store_synced().await;
            self.run_ciliumnode_informer().await
        });
        futures::future::select(run, cancelled).await;
    }

    /// Waits for the Pod store's first list (the model keeps no Pod objects: one list round
    /// trip, retried like the informers' every 5 s while the API server does not answer).
    async fn pod_store_synced(&self) {
        while self.kube.list(POD_KIND).await.is_err() {
            self.proc.sleep(std::time::Duration::from_secs(5)).await;
        }
    }

    async fn run_ciliumnode_informer(self: &Rc<Self>) {
        self.kube
            .run_informer(KIND, None, INFORMER_IDLE, |ev| match ev {
                WatchEvent::Upsert(obj) => self.upsert(obj),
                WatchEvent::Deleted { name, .. } => {
                    let gone = self.state.borrow_mut().nodes.remove(&key(&name));
                    if let Some(t) = gone.and_then(|n| n.triggers) {
                        t.shutdown();
                    }
                }
            })
            .await
    }

    /// A new node's triggers, each run by its own task.
    fn spawn_triggers(self: &Rc<Self>, node: Short) -> Rc<Triggers> {
        let t = Rc::new(Triggers {
            maintainer: Trigger::new(TRIGGER_MIN),
            retry: Trigger::new(RETRY_MIN),
            k8s_sync: Trigger::new(TRIGGER_MIN),
            instance_sync: Trigger::new(TRIGGER_MIN),
        });
        let me = self.clone();
        // The backoff `Upsert` makes with the trigger, its jitter from a generator of this
        // process and node.
        let rng = self.proc.rng(&format!("pool-maintainer-backoff:{node}"));
        let backoff = Rc::new(RefCell::new(Exponential::pool_maintainer(rng)));
        let run = t.maintainer.clone().run(self.proc.clone(), move || {
            let (me, backoff) = (me.clone(), backoff.clone());
            async move { me.maintain(node, &backoff).await }
        });
        self.proc.spawn(&format!("pool-maintainer:{node}"), run);
        let maintainer = t.maintainer.clone();
        let run = t.retry.clone().run(self.proc.clone(), move || {
            maintainer.trigger();
            std::future::ready(())
        });
        self.proc
            .spawn(&format!("pool-maintainer-retry:{node}"), run);
        let me = self.clone();
        let run = t.k8s_sync.clone().run(self.proc.clone(), move || {
            let me = me.clone();
            async move { me.k8s_sync(node).await }
        });
        self.proc.spawn(&format!("k8s-sync:{node}"), run);
        let me = self.clone();
        let run = t.instance_sync.clone().run(self.proc.clone(), move || {
            let me = me.clone();
            async move {
                if let Some(t) = me.instance_sync(node, false).await {
                    me.resync_all(t);
                }
            }
        });
        self.proc.spawn(&format!("instance-sync:{node}"), run);
        t
    }

    /// `Upsert` (pkg/ipam/node_manager.go:284-387 @ed90dd5): a node seen for the first time gets
    /// empty handshake state and its triggers; only if the instances API does not know its
    /// instance (`HasInstance`) and is ready is that one instance described (l. 299-308), and
    /// no node is resynced or written: the node's first write comes with the next resync (the
    /// interval controller's, or one an instance sync triggers after a maintainer pass). Then
    /// `UpdatedResource` ([`Self::updated_resource`]) for new and known nodes alike (l. 386).
    fn upsert(self: &Rc<Self>, obj: Rc<sim::kube::Object>) {
        let node = key(&obj.name);
        let describe = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let n = st.nodes.entry(node).or_default();
            let fresh = n.resource.is_none();
            n.resource = Some(Observed::of(obj, n.resource.as_deref()));
            n.dropped.clear();
            if fresh && self.cfg.switches.adopt_release_ips {
                adopt_release_ips(n, st.cache.get(&node), self.proc.mono_us());
            }
            if fresh {
                n.triggers = Some(self.spawn_triggers(node));
            }
            fresh && !st.cache.contains_key(&node) && st.ready
        };
        if describe {
            // Upstream describes the instance inside the informer's handler, before
            // `UpdatedResource`; here a task does, then recalculates.
            let me = self.clone();
            self.proc.spawn(&format!("new-node:{node}"), async move {
                me.instance_sync(node, true).await;
                me.updated_resource(node);
            });
            return;
        }
        self.updated_resource(node);
    }

    /// `UpdatedResource` (pkg/ipam/node.go:412-440 @ed90dd5): recalculate, and trigger the
    /// maintainer only when an allocation is needed (a release waits for a resync).
    fn updated_resource(&self, node: Short) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(n) = st.nodes.get_mut(&node) else {
            return;
        };
        recalculate(n, st.cache.get(&node), &self.cfg);
        if allocation_needed(n) {
            n.waiting = true;
            if let Some(t) = &n.triggers {
                t.maintainer.trigger();
            }
        }
    }

    /// The `ipam-node-interval-refresh` controller (node_manager.go:231-249): at once, then a
    /// minute after each run ends, a resync of every instance and, if it answered, of every node.
    /// Its task is `maintenance` (the target of the maintenance task faults); each node's
    /// triggers run as tasks named after the trigger and the node.
    async fn interval_refresh(&self) {
        loop {
            if let Some(t) = self.instances_resync().await {
                self.resync_all(t);
            }
            self.proc.sleep(OPERATOR_RESYNC).await;
        }
    }

    /// `instancesAPIResync`: one describe of every instance's interfaces (pkg/aws/eni/
    /// instances.go `Resync` lists the VPC's interfaces); the time the sync started, if it
    /// answered.
    async fn instances_resync(&self) -> Option<u64> {
        let start = self.now();
        let Ok(all) = self.cloud().describe_all().await else {
            // `SetInstancesAPIReadiness(success)`: a failed resync blocks every pass until one
            // succeeds.
            self.state.borrow_mut().ready = false;
            return None;
        };
        let fresh: BTreeMap<Short, Rc<Interfaces>> = self
            .cfg
            .nodes
            .iter()
            .map(|name| (key(name), all.get(name).cloned().unwrap_or_default()))
            .collect();
        let mut st = self.state.borrow_mut();
        st.cache_at = fresh.keys().map(|k| (*k, start)).collect();
        st.cache = fresh;
        st.ready = true;
        Some(start)
    }

    /// `InstanceSync` of one instance. Readiness is set by a full resync, and by a new node's
    /// describe (`new`): `Upsert` sets `stableInstancesAPI` to whether it answered
    /// (node_manager.go:301-308 @ed90dd5; it runs only while the API is ready).
    async fn instance_sync(&self, node: Short, new: bool) -> Option<u64> {
        let start = self.now();
        let Ok(ifs) = self.cloud().describe(&node).await else {
            if new {
                self.state.borrow_mut().ready = false;
            }
            return None;
        };
        let mut st = self.state.borrow_mut();
        st.cache.insert(node, ifs);
        st.cache_at.insert(node, start);
        st.ready |= new;
        Some(start)
    }

    /// `Resync(syncTime)` (node_manager.go:477-560): every node's last resync and numbers, then,
    /// deficit first and then the largest excess, its maintainer triggered if needed and its API
    /// sync triggered; neither is waited for.
    fn resync_all(&self, sync_time: u64) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        for (node, n) in st.nodes.iter_mut() {
            // updateLastResync: `syncTime.After(resyncNeeded)`; upstream's sync starts strictly
            // after the pass that required it, the model's can start at the same instant.
            if n.resync_needed.is_some_and(|t| sync_time >= t) {
                n.resync_needed = None;
            }
            recalculate(n, st.cache.get(node), &self.cfg);
        }
        let mut order: Vec<(&Short, &mut NodeState)> = st.nodes.iter_mut().collect();
        order.sort_by_key(|e| std::cmp::Reverse((e.1.needed, e.1.excess)));
        for (_, n) in order {
            let Some(t) = n.triggers.clone() else {
                continue;
            };
            if allocation_needed(n) || self.release_needed(n) {
                n.waiting = true;
                t.maintainer.trigger();
            }
            t.k8s_sync.trigger();
        }
    }

    /// `releaseNeeded` (node.go:511-520).
    fn release_needed(&self, n: &NodeState) -> bool {
        let pending = n
            .resource
            .as_ref()
            .is_some_and(|r| !r.status().release_ips.is_empty());
        (self.cfg.release_excess && !n.waiting && n.resync_needed.is_none() && n.excess > 0)
            || pending
    }

    /// The maintainer trigger's run: `MaintainIPPool` (node.go:982-1010), then the backoff if it
    /// failed. While the instances API is not ready the pass is refused before it decides
    /// anything (node.go:985-990): it fires the retry trigger (a minute apart, its first run at
    /// once) and fails, without `poolMaintenanceComplete`, `recalculate` or the instance sync,
    /// so the node stays waiting and only the retry trigger (or, for a handshake in progress, a
    /// resync) runs it again. After a successful pass a resync is required before the next
    /// decision; after a mutation or a failure the instance sync is triggered. A failed pass is
    /// followed by the node's backoff (`backoff.Wait`, [`backoff`]), scaled by the number of
    /// nodes the node manager knows.
    async fn maintain(&self, node: Short, backoff: &RefCell<Exponential>) {
        let (ready, triggers) = {
            let st = self.state.borrow();
            let Some(n) = st.nodes.get(&node).filter(|n| n.resource.is_some()) else {
                return;
            };
            (st.ready, n.triggers.clone())
        };
        let pass = match ready {
            true => self.maintain_ip_pool(node).await,
            false => {
                if let Some(t) = &triggers {
                    t.retry.trigger();
                }
                Pass::Failed
            }
        };
        let now = self.now();
        let nodes = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let Some(n) = st.nodes.get_mut(&node) else {
                return;
            };
            if ready {
                if pass != Pass::Failed {
                    n.resync_needed = Some(now);
                }
                n.waiting = false; // poolMaintenanceComplete
                recalculate(n, st.cache.get(&node), &self.cfg);
                if pass != Pass::Idle {
                    if let Some(t) = &triggers {
                        t.instance_sync.trigger();
                    }
                }
            }
            st.nodes.len()
        };
        if pass == Pass::Failed {
            let d = backoff.borrow_mut().wait(now, nodes);
            // The model's timers count whole microseconds.
            let d = std::time::Duration::from_micros(d.as_micros() as u64);
            self.proc.sleep(d).await;
        }
    }

    /// `syncToAPIServer` (node.go:1043-1117): the pool is taken from the cache first; status
    /// (interfaces and `release-ips`) is written, then spec (the pool), each at most twice, the
    /// second time from a fresh read; an unchanged part is not written; spec is not written when
    /// status failed.
    async fn k8s_sync(&self, node: Short) {
        let (resource, ifs) = {
            let st = self.state.borrow();
            let Some(n) = st.nodes.get(&node) else {
                return;
            };
            match (&n.resource, st.cache.get(&node)) {
                (Some(r), Some(ifs)) => (r.clone(), ifs.clone()),
                _ => return,
            }
        };
        let pool = pool_of(&ifs);
        // `update` (node.go:1131-1178): a successful write hands back the written object, the
        // base of the next write; a failed one re-reads the object from the API server.
        let mut base = resource;
        let mut ok = false;
        for _ in 0..WRITE_ATTEMPTS {
            let status = self.status_to_write(node, base.status(), &ifs);
            if status == *base.status() {
                ok = true; // DeepEqual: no call (cilium_node.go:353-365)
                break;
            }
            let value = Body::of(Rc::new(status));
            match self
                .kube
                .update(KIND, &node, base.obj.rv, Part::Status, value)
                .await
            {
                Ok(obj) => {
                    base = Observed::of(obj, Some(&base));
                    ok = true;
                    break;
                }
                Err(_) => match self.kube.get(KIND, &node).await {
                    Ok(obj) => base = Observed::of(obj, Some(&base)),
                    Err(_) => return,
                },
            }
        }
        if !ok {
            return; // spec is not written when status failed
        }
        for _ in 0..WRITE_ATTEMPTS {
            if base.spec().pool == pool {
                return;
            }
            let value = Body::of(Rc::new(Spec { pool: pool.clone() }));
            match self
                .kube
                .update(KIND, &node, base.obj.rv, Part::Spec, value)
                .await
            {
                Ok(_) => return,
                Err(_) => match self.kube.get(KIND, &node).await {
                    Ok(obj) => base = Observed::of(obj, Some(&base)),
                    Err(_) => return,
                },
            }
        }
    }

    /// `PopulateStatusFields` and `PopulateIPReleaseStatus` on the copy being written.
    fn status_to_write(&self, node: Short, base: &Status, ifs: &Interfaces) -> Status {
        let mut st = self.state.borrow_mut();
        let n = st.nodes.get_mut(&node).expect("a known node");
        let observed = observed_release(n);
        n.release.remove_stale_release_ips(&observed);
        let mut status = base.clone();
        status.enis = ifs.clone();
        if !self.cfg.switches.no_handshake {
            status.release_ips = n.release.populate(&base.release_ips);
        }
        status
    }
}

/// The observed `release-ips`, without the entries this operator deleted from its copy.
fn observed_release(n: &NodeState) -> BTreeMap<Short, Short> {
    let Some(r) = &n.resource else {
        return BTreeMap::new();
    };
    let mut m = r.status().release_ips.clone();
    for ip in &n.dropped {
        m.remove(ip);
    }
    m
}

/// `recalculate` (node.go:449-500): available from the cache, used from the observed copy; a node
/// whose instance the cache lacks needs and frees nothing.
fn recalculate(n: &mut NodeState, cache: Option<&Rc<Interfaces>>, cfg: &OperatorConfig) {
    let (Some(ifs), Some(r)) = (cache, &n.resource) else {
        n.needed = 0;
        n.excess = 0;
        return;
    };
    let available: usize = ifs.values().map(|ips| ips.len()).sum();
    let used = r.used_count();
    n.counted = (available, r.obj.rv);
    n.needed = needed_ips(available, used, &cfg.limits);
    n.excess = excess_ips(available, used, &cfg.limits);
}

/// `allocationNeeded` (node.go:503-509).
fn allocation_needed(n: &NodeState) -> bool {
    !n.waiting && n.resync_needed.is_none() && n.needed > 0
}

/// Fix `cilium-adopt-release-ips`: a node seen for the first time starts from the handshake its
/// CiliumNode shows instead of from nothing (upstream's first write would wipe it). An entry
/// whose IP the cloud cache (resynced at start) no longer holds was unassigned by a predecessor
/// that could not write `released`: it is adopted as `released`, counted as released `now` (for
/// fix `cilium-readd-after-resync`). Any other entry is adopted in the operator's own state,
/// `marked-for-release` (or `released`): an agent's answer stays the agent's, taken from the
/// object each write starts from, so a write long after the adoption (the first comes with the
/// next resync) never brings back an answer the agent has since withdrawn.
fn adopt_release_ips(n: &mut NodeState, cache: Option<&Rc<Interfaces>>, now: u64) {
    let held = cache.map(|ifs| pool_of(ifs)).unwrap_or_default();
    n.release.status = observed_release(n)
        .into_iter()
        .map(|(ip, s)| match held.contains_key(&ip) {
            true if s.as_str() == RELEASED => (ip, s),
            true => (ip, Short::lit(MARKED)),
            false => (ip, Short::lit(RELEASED)),
        })
        .collect();
    let released: Vec<Short> = n.release.released_ips().collect();
    n.released_at
        .extend(released.into_iter().map(|ip| (ip, now)));
}
