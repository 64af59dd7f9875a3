//! The model: replicas elect a leader with Kubernetes leader election (a Lease, client-go's
//! elector: `sim::leaderelection`) and the leader appends to a log kept in an API object.
//!
//! Each replica runs one elector at a time; while it leads, it appends every second: read the
//! log, write the next entry with a compare-and-swap on the object's resourceVersion. Leadership
//! is a belief: a leader paused longer than the lease resumes still leading (its elector ends
//! leadership only when its renew round fails, up to RenewDeadline later; client-go's package
//! doc: no fencing), while another replica has taken the Lease and appended. The compare-and-swap
//! protects the log object, not the order of leaders. With the fence, each entry carries the
//! writer's leadership term (the Lease's `leaseTransitions` when it took the lock) and a leader
//! refuses to append after an entry of a newer term; without (`--bug unfenced`), it appends.

use serde::{Deserialize, Serialize};
use sim::kube::{Kube, KubeClient, Part};
use sim::leaderelection::{LeaderElectionConfig, LeaderElector};
use sim::world::{Host, Proc};
use sim::{NodeIx, World};
use std::time::Duration;

/// The Lease's name.
pub const LOCK: &str = "lease-log";
/// The log: kind and name of its API object (spec `{"term", "writer", "count"}`: the last entry).
pub const LOG_KIND: &str = "ConfigMap";
/// The log object's name.
pub const LOG_NAME: &str = "log";
/// How often a leader appends.
pub const APPEND_EVERY: Duration = Duration::from_secs(1);

/// What the lease log reports on the bus (besides the API server's and the elector's events).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LogEvent {
    /// A fenced leader of `term` found an entry of a `newer` term and did not append.
    AppendRefused { term: i64, newer: i64 },
}

sim::system_event!(LogEvent);

/// Creates the empty log (before anything runs).
pub fn seed_log(kube: &Kube) {
    let spec = serde_json::json!({ "term": -1, "writer": "", "count": 0 });
    kube.seed_object(LOG_KIND, LOG_NAME, spec, serde_json::Value::Null);
}

/// Installs a replica on `node`: one elector after another (a lost leadership ends an elector's
/// run, and the replica campaigns again), each with a task that appends while it leads.
pub fn install_replica(world: &World, node: NodeIx, kube: &Kube, fenced: bool) {
    let kube = kube.clone();
    world.set_services(
        node,
        std::rc::Rc::new(move |host: &Host| {
            let p = host.spawn_process("replica");
            let (kube, p2) = (kube.clone(), p.clone());
            p.spawn("replica", async move {
                let cfg = LeaderElectionConfig::new(LOCK, &p2.host_name());
                loop {
                    let le = LeaderElector::new(&kube, &p2, cfg.clone()).expect("valid");
                    let (le2, client, p3) = (le.clone(), kube.client(&p2), p2.clone());
                    p2.spawn(
                        "append",
                        async move { lead(&le2, &client, &p3, fenced).await },
                    );
                    le.run().await;
                }
            });
        }),
    );
}

/// While `le` leads: append every second, as the term it took the lock in.
async fn lead(le: &LeaderElector, client: &KubeClient, p: &Proc, fenced: bool) {
    if !le.started_leading().await {
        return;
    }
    let term = i64::from(le.snapshot().observed.leader_transitions);
    while le.leading() {
        append(client, p, term, fenced).await;
        p.sleep(APPEND_EVERY).await;
    }
}

/// One append: read the log, then write the next entry if the log is still at the version read.
async fn append(client: &KubeClient, p: &Proc, term: i64, fenced: bool) {
    let Ok(log) = client.get(LOG_KIND, LOG_NAME).await else {
        return;
    };
    let newer = log.spec["term"].as_i64().unwrap_or(-1);
    if fenced && newer > term {
        p.emit(LogEvent::AppendRefused { term, newer });
        return;
    }
    let count = log.spec["count"].as_i64().unwrap_or(0) + 1;
    let entry = serde_json::json!({ "term": term, "writer": p.host_name(), "count": count });
    let _ = client
        .update(LOG_KIND, LOG_NAME, log.rv, Part::Spec, entry)
        .await;
}
