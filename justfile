# Recipes mirroring the README's commands. `just --list` shows them.

# Run the test suite (the README's test command; the suites that need etcd or chromium are listed
# as ignored, with the reason).
test:
    cargo test

# Install what the ignored suites need: a real etcd 3.4 and chromium (Debian packages; as root).
deps:
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server chromium

# Everything CI runs: the test suite, then the etcd conformance suite and the browser test.
test-all: test
    cargo test -p sim --test etcd_conformance -- --ignored
    cargo test -p scenarios --test reports -- --ignored

# Check that drawn violations (seeds 0-1,999 of every scenario, and of each finding's scenario
# with its switches) each match exactly one finding: after changing a signature or a monitor's
# message. Takes minutes.
check-signatures:
    cargo test --release -p scenarios --test finding_signatures -- --ignored

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

# Regenerate the docs' generated tables (findings, invariants, switches) from the registry.
docs:
    .ci/regen-docs

# Check every upstream citation (file, lines, function, commit) in the sources and the findings
# catalog against upstream git dirs fetched by hand (docs/citations.md); prints every mismatch.
check-citations +upstream_dirs:
    cargo build -q --bin faultline
    ${CARGO_TARGET_DIR:-target}/debug/faultline findings --json > /tmp/faultline-findings.json
    .ci/check-citations --findings-json /tmp/faultline-findings.json {{upstream_dirs}}

# Measure every active finding's rate (failures per 100,000 seeds of its scenario) under a
# profile and record it in scenarios/data/finding-rates.json (then run `just docs`).
measure-rates seeds="2000" profile="adversarial" first="0":
    cargo build -q --release --bin faultline
    nice target/release/faultline findings --measure-rates --seeds {{seeds}} --first-seed {{first}} --profile {{profile}} --commit $(git rev-parse --short=12 HEAD) > /tmp/faultline-rates.json
    mv /tmp/faultline-rates.json scenarios/data/finding-rates.json

# Mutation testing of a system's decision code with cargo-mutants (slow; `shard` samples, e.g.
# "1/3"): results in mutants.out/<system>/, summarised in docs/mutation.md.
mutants system="calico" shard="1/1":
    .ci/mutants {{system}} {{shard}}

# Every scenario with every fix on over many seeds far from the tuned ones, under a fault profile,
# in release on one thread: the fixed model must stay clean (the 10,000-seed check that new
# invariants bring no false positives). Prints a line per scenario and per failing seed; record
# the result in docs/soak.md. E.g. `just soak realistic`, `just soak adversarial 2000`.
soak profile="adversarial" seeds="10000" first="2000000" *scenarios="":
    nice .ci/soak {{profile}} {{seeds}} {{first}} {{scenarios}}

# Regenerate scenarios/regressions/ from the findings catalog (every active finding with a fix, at
# its pinned seeds) after a model change moved them; it prints the seeds left out and why.
bless-regressions:
    FAULTLINE_BLESS=1 cargo test -p scenarios --test regressions regressions_fail_without -- --nocapture
