//! faultline's models of the systems under test.
//!
//! Each model is the CURRENT upstream coordination logic of its system, with upstream's constants
//! (cited where they are used; docs/upstream/ gathers the facts), written against the environment `sim` hands it (a `Proc`, service clients,
//! clocks). Historic bugs and proposed fixes are switches.

pub mod calico;
pub mod cilium;
pub mod metallb;
