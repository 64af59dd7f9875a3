//! faultline's scenarios: the catalog, their invariants and coverage points, exploration, replay
//! files, and (in `src/bin/faultline.rs`) the command line.
#![forbid(unsafe_code)]

pub mod bench;
pub mod calico;
pub mod cilium;
pub mod explore;
pub mod findings;
pub mod metallb;
pub mod scenario;
pub mod shrink;
pub mod strategies;

pub use explore::{explore, parse_seed, run_spec, BadInput, ExploreConfig, ReplayFile};
pub use findings::FINDINGS;
pub use scenario::{scenario, RunSpec, Scenario, SCENARIOS, SWITCHES};
