//! `faultline`: the command line over the built-in systems (see [`scenarios::cli`]).

/// mimalloc: runs allocate and free many small objects (events, messages, futures).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    scenarios::cli::main(scenarios::builtin())
}
