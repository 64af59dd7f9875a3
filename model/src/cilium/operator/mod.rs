//! cilium-operator: high availability through client-go leader election, and the leader's ENI
//! IPAM ([`ipam`]).
//!
//! Upstream: cilium/cilium `operator/cmd/root.go` at ed90dd5ea4c754a04a8135c6bb9c8afe29b75811
//! (`@ed90dd5`; docs/upstream/cilium.md §1).
//!
//! * Every operator process runs client-go's elector on the Lease
//!   `cilium-operator-resource-lock` (`leaderelection.RunOrDie`, root.go:437-470) with cilium's
//!   15 s / 10 s / 2 s and `ReleaseOnCancel: true` ([`sim::leaderelection`]). Its identity is new
//!   at every start (`hostname + "-" + rand.String(10)`, root.go:408-412; here host and pid).
//! * Only the leader runs IPAM (`WithLeaderLifecycle`, root.go:193-258; `legacyOnLeader.onStart`,
//!   root.go:526-581): a non-leader has no CiliumNode informer, no node manager and no handshake
//!   state, and makes no cloud call. On winning, the node manager starts from nothing: a
//!   **blocking** resync of every instance from the cloud, whose failure exits the process
//!   (`alloc.Start` → `log.Fatalf`, root.go:575-578; node_manager.go:221-225), then the CiliumNode
//!   informer, whose replay creates every node with empty handshake maps (node_manager.go:289-297).
//! * Losing the lease calls `OnStoppedLeading` (root.go:454-458). At the pinned commit that is a
//!   graceful hive shutdown ([`shutdown`]): the IPAM's triggers and resync controller run until
//!   the process exits, and the CiliumNode informer until `legacy.onStop` cancels its context
//!   partway through the stop hooks ([`OperatorConfig::shutdown`]). Fix
//!   `cilium-exit-on-lost-lead` is newer upstream's PR #42920: exit at once.
//! * A clean stop (SIGTERM) cancels the election context (`doCleanup`, root.go:370-376): the
//!   elector releases the Lease (empty holder, 1 s), and the process exits.
//! * The Deployment restarts an exited operator (the supervisor here, after 2 s).
//!
//! Two operators act at once only through the gaps client-go's documentation names (no fencing,
//! leaderelection.go:17-20): a paused leader, renew answers that come late, a candidate whose
//! monotonic clock runs fast, and the graceful shutdown's lingering. Fix `cilium-fence-cloud`
//! closes the gap for cloud calls: the leader's calls carry the Lease transition count of the
//! term it holds (the count it won with, or took the Lease back with in a renewal), and the
//! cloud refuses a count older than one it has seen (real cloud APIs offer nothing like it).

pub mod ipam;
pub mod shutdown;

use super::decide::Limits;
use super::Switches;
use crate::cilium::CiliumEvent;
use sim::cloud::Cloud;
use sim::kube::Kube;
use sim::leaderelection::{LeaderElectionConfig, LeaderElector};
use sim::world::Host;
use sim::{NodeIx, Proc, World};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// The leader's EC2 client limits: `--limit-ipam-api-qps` 4 and `--limit-ipam-api-burst` 20, the
/// defaults (`pkg/defaults/defaults.go` l. 454-458 @ed90dd5, flags at `operator/cmd/flags.go`
/// l. 24-28), given to `ec2shim.NewClient` (`pkg/ipam/allocator/aws/aws.go` l. 95-97), whose
/// every call waits for the limiter once and then goes through the AWS SDK's standard retryer
/// ([`sim::cloud::sdk`]).
pub const IPAM_API_LIMIT: sim::cloud::sdk::RateLimit = sim::cloud::sdk::RateLimit {
    milli_qps: 4_000,
    burst: 20,
};

/// Operator settings (every operator process of the deployment shares them).
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// The nodes (CiliumNode names) there are.
    pub nodes: Vec<String>,
    /// The per-node IPAM limits.
    pub limits: Limits,
    /// `aws-release-excess-ips`.
    pub release_excess: bool,
    /// Interfaces per node and their capacity.
    pub enis: u32,
    /// Secondary IPs each interface can hold.
    pub eni_capacity: u32,
    /// The graceful shutdown after leadership is lost: when the CiliumNode informer stops and
    /// when the process exits (ignored with `cilium-exit-on-lost-lead`).
    pub shutdown: shutdown::StopSequence,
    /// The Cilium bug and fix switches of the run.
    pub switches: Switches,
    /// The Pod store the surge allocation counts pending pods in.
    pub pods: crate::cilium::kubelet::PodStore,
}

/// Installs an operator process (restarted by its supervisor whenever it exits) as the services
/// of `node`.
pub fn install(world: &World, node: NodeIx, kube: &Kube, cloud: &Cloud, cfg: OperatorConfig) {
    let (kube, cloud, cfg) = (kube.clone(), cloud.clone(), Rc::new(cfg));
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let sup = host.spawn_process("supervisor");
            let (k, c, cfg, s) = (kube.clone(), cloud.clone(), cfg.clone(), sup.clone());
            sup.spawn("restart", async move {
                loop {
                    let proc = s.spawn_child("cilium-operator");
                    start(&proc, &k, &c, &cfg);
                    let exited = Box::pin(proc.wait_exit());
                    let stopped = Box::pin(s.terminated());
                    if let futures::future::Either::Right(_) =
                        futures::future::select(exited, stopped).await
                    {
                        // The pod is deleted (a graceful stop of the node's services): the
                        // operator gets its SIGTERM and shuts down cleanly, and nothing respawns
                        // it here; the node's services start afresh when the stop ends.
                        s.terminate(proc.pid());
                        proc.wait_exit().await;
                        s.exit(0);
                        return;
                    }
                    s.sleep(Duration::from_secs(2)).await;
                }
            });
        }),
    );
}

/// One operator process: the election, the leader-only IPAM, the clean shutdown.
fn start(proc: &Proc, kube: &Kube, cloud: &Cloud, cfg: &Rc<OperatorConfig>) {
    let identity = format!("{}-{}", proc.host_name(), proc.pid());
    let le = LeaderElector::new(kube, proc, LeaderElectionConfig::cilium_operator(&identity))
        .expect("cilium-operator's election configuration is valid");
    // The leader's IPAM, once created (`legacy.onStop` cancels its informer).
    let slot: Rc<RefCell<Option<Rc<ipam::Ipam>>>> = Rc::default();
    let (le2, p, c, sl) = (le.clone(), proc.clone(), cfg.clone(), slot.clone());
    let id = identity.clone();
    proc.spawn("leader-election", async move {
        le2.run().await; // RunOrDie
                         // OnStoppedLeading: "Leader election lost".
        p.emit(CiliumEvent::CiliumLeadershipLost { identity: id });
        if !c.switches.exit_on_lost_lead {
            // The hive's stop: the hooks before `legacy.onStop`, then the rest; the IPAM runs
            // throughout, its informer only until `legacy.onStop`.
            let stop = c.shutdown;
            p.sleep(stop.informer_stop).await;
            if let Some(ipam) = sl.borrow().as_ref() {
                ipam.cancel_legacy_ctx();
            }
            p.sleep(stop.exit - stop.informer_stop).await;
        }
        p.exit(1);
    });
    let (le2, p, k, cl, c) = (
        le.clone(),
        proc.clone(),
        kube.clone(),
        cloud.clone(),
        cfg.clone(),
    );
    proc.spawn("leader-lifecycle", async move {
        if !le2.started_leading().await {
            return;
        }
        let transitions = le2.snapshot().observed.leader_transitions;
        p.emit(CiliumEvent::CiliumLeading {
            identity: identity.clone(),
            transitions,
        });
        if c.switches.mutant_ipam_stalls {
            return std::future::pending().await;
        }
        let ipam = ipam::Ipam::new(&p, &k, &cl, c, &le2);
        *slot.borrow_mut() = Some(ipam.clone());
        if !ipam.start(&identity).await {
            p.exit(1); // log.Fatalf("Unable to start ... allocator")
        }
    });
    let (p, le2) = (proc.clone(), le);
    proc.spawn("shutdown", async move {
        p.terminated().await;
        le2.stop(); // doCleanup: ReleaseOnCancel releases the lease, then RunOrDie returns
    });
}
