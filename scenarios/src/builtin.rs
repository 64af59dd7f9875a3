//! The built-in systems' registry: the `faultline` binary's, one line per system.

use crate::system::Registry;
use std::sync::LazyLock;

/// The built-in systems: one line each.
pub fn builtin() -> &'static Registry {
    static BUILTIN: LazyLock<Registry> = LazyLock::new(|| {
        Registry::new()
            .with::<crate::calico::Calico>()
            .with::<crate::cilium::Cilium>()
            .with::<crate::metallb::Metallb>()
    });
    &BUILTIN
}
