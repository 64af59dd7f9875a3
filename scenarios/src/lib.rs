//! faultline's scenarios: the catalog, their invariants and coverage points, exploration, replay
//! files, and (in `src/bin/faultline.rs`) the command line.

pub mod bench;
mod builtin;
pub mod calico;
pub mod cilium;
#[cfg(feature = "cli")]
pub mod cli;
pub mod explore;
pub mod faults;
pub mod finding_rates;
pub mod finding_report;
pub mod findings;
pub mod invariant;
pub mod metallb;
pub mod replay_file;
pub mod scenario;
pub mod shrink;
pub mod system;
pub mod testing;

pub use builtin::builtin;
pub use explore::{explore, parse_seed, run_spec, BadInput, ExploreConfig, ReplayFile};
pub use scenario::RunSpec;
pub use system::{AnyOptions, Registry, Scenario, ScenarioDef, System};

/// Looks a built-in scenario up by name.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    builtin().scenario(name).ok()
}
