//! What a cilium-operator that lost the Lease still runs before it exits, at the pinned commit
//! (cilium/cilium ed90dd5ea4c754a04a8135c6bb9c8afe29b75811).
//!
//! * `OnStoppedLeading` asks the hive to shut down (`shutdowner.Shutdown`,
//!   `operator/cmd/root.go:454-458`). `Hive.Run` then stops every start hook in reverse order
//!   under a context of `StopTimeout` (`vendor/github.com/cilium/hive/hive.go`, `Run`
//!   l. 224-245), which cilium sets to one minute (`pkg/hive/hive.go:77`); when the stop returns,
//!   `h.Run` returns and `log.Fatal` ends the process (`root.go:292-294`).
//! * The operator's own stop hook stops the leader lifecycle first (`registerOperatorHooks`,
//!   `root.go:342-349`), whose hooks run in reverse order too (`cell.DefaultLifecycle.Stop`,
//!   `vendor/github.com/cilium/hive/cell/lifecycle.go:122-159`). Among them, `onStop`
//!   (`root.go:515-522`) cancels the leader's context and waits for its goroutines: that stops the
//!   CiliumNode informer (`ciliumNodeSynchronizer.Start(legacy.ctx, ...)`, `root.go:673`), so
//!   from then on the node manager's copies of the CiliumNodes are frozen.
//! * The IPAM itself is **not** stopped by any hook. The node manager's
//!   `ipam-node-interval-refresh` controller runs in a controller manager of its own, and each
//!   node's triggers (pool maintainer, k8s sync, instance sync) run on a context from
//!   `context.Background()` that only a CiliumNode deletion cancels
//!   (`pkg/ipam/node_manager.go:231-249, 299-377`). Both keep resyncing the cloud, releasing
//!   IPs and writing CiliumNodes until the process exits.
//!
//! So the linger has two parts ([`StopSequence`]): the stop hooks that come before
//! `legacy.onStop` (informer live), then the rest of the stop until the exit (informer frozen).
//! Each hook only cancels contexts and waits for goroutines; cilium logs a hook at Info level
//! once it takes over 100 ms (`LogThreshold`, `pkg/hive/hive.go:78`), so a normal stop takes
//! well under a second. A hook that blocks (PR #42920: "if some stop hook in the hive shutdown
//! sequence was blocking") holds the whole sequence until the stop context expires after one
//! minute: the lifecycle then returns without running the hooks after it (lifecycle.go:133-136),
//! and a hook that ignores its context has 5 s more before the hive panics (`fatalOnTimeout`,
//! hive.go:357-376). Newer upstream (PR #42920) exits at once instead: fix
//! `cilium-exit-on-lost-lead`.

use std::time::Duration;

/// `StopTimeout` of cilium's hive (`pkg/hive/hive.go:77` @ed90dd5).
pub const HIVE_STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// The grace after the stop context expires before the hive panics (`fatalOnTimeout`,
/// `vendor/github.com/cilium/hive/hive.go:357-376` @ed90dd5).
pub const HIVE_FATAL_GRACE: Duration = Duration::from_secs(5);
/// The stop-hook duration above which cilium logs the hook at Info level (`LogThreshold`,
/// `pkg/hive/hive.go:78` @ed90dd5): what a hook is expected to stay under.
pub const HOOK_LOG_THRESHOLD: Duration = Duration::from_millis(100);

/// The timing of one graceful shutdown after the Lease is lost, from `OnStoppedLeading`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopSequence {
    /// When `legacy.onStop` cancels the IPAM's context and the CiliumNode informer stops (at
    /// most `exit`; equal to it when a blocking hook before it holds the stop to its timeout,
    /// and `legacy.onStop` never runs).
    pub informer_stop: Duration,
    /// When the process exits (`log.Fatal` after `h.Run` returns). The IPAM runs until then.
    pub exit: Duration,
}

impl StopSequence {
    /// A sequence with the informer stop clamped to the exit.
    pub fn new(informer_stop: Duration, exit: Duration) -> Self {
        StopSequence {
            informer_stop: informer_stop.min(exit),
            exit,
        }
    }
}
