# Recipes mirroring the README's commands. `just --list` shows them.

# Run the whole test suite (what CI runs).
test:
    cargo test

# Explore a scenario (default: the main job), e.g. `just explore calico-split-brain --seeds 5000`.
explore scenario="calico-silent-task-death" *args="":
    cargo run --release --bin faultline -- explore {{scenario}} {{args}}

# Replay a failure file written by explore.
replay file *args="":
    cargo run --release --bin faultline -- replay {{file}} {{args}}

# Same seeds, one thread vs all cores, compare trace hashes; then debug vs release golden hashes.
check-determinism scenario="calico-split-brain" seeds="50":
    cargo run --release --bin faultline -- check-determinism {{scenario}} --seeds {{seeds}}
    .ci/golden-release

# Seeds per second per core and simulated-time speedup of every scenario.
bench:
    cargo run --release --bin faultline -- bench
