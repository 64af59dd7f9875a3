//! The mutual watchdog proposed in PR 12456 (projectcalico/calico PR 12456), as an option of the model.
//!
//! A worker process registers its long-running tasks. Two checker tasks, the status loop (every 5 s)
//! and the resync monitor (every 30 s), each registered too so that they watch each other, look for
//! a registered task that is dead and then exit the process with status 1 so that its supervisor
//! respawns it. The elector is not registered (upstream: it has its own mechanism). A task that is
//! MEANT to finish (the one-shot startup resync) must not be registered;
//! `calico-watchdog-counts-oneshot` registers it anyway.

use crate::calico::CalicoEvent;
use sim::Proc;
use std::time::Duration;

const CHECKERS: [(&str, Duration); 2] = [
    ("status-loop", Duration::from_secs(5)),
    ("resync-monitor", Duration::from_secs(30)),
];

/// Starts the two checkers for `registered` tasks of `proc`.
pub fn install(proc: &Proc, registered: &[String]) {
    let mut all: Vec<String> = registered.to_vec();
    all.extend(CHECKERS.iter().map(|(n, _)| n.to_string()));
    for (name, period) in CHECKERS {
        let (p, all) = (proc.clone(), all.clone());
        proc.spawn(name, async move {
            loop {
                p.sleep(period).await;
                // A greenlet checking itself always sees itself alive.
                if let Some(dead) = all.iter().find(|t| t.as_str() != name && !p.task_alive(t)) {
                    p.emit(CalicoEvent::CalicoWatchdogExit {
                        pid: p.pid(),
                        task: dead.clone(),
                    });
                    p.exit(1);
                    return;
                }
            }
        });
    }
}
