#!/usr/bin/env bash
# Runs the loom models: the library rebuilt with its atomics from loom (--cfg nohz_loom), in a
# target directory of its own so the normal build cache survives. Extra arguments go to
# `cargo test` (e.g. `ci/loom.sh --test sites`). LOOM_MAX_PREEMPTIONS defaults to 2, the bound
# CI uses; never set LOOM_MAX_DURATION or LOOM_MAX_PERMUTATIONS (both stop silently and pass).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg nohz_loom"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
unset LOOM_MAX_DURATION LOOM_MAX_PERMUTATIONS
exec cargo test -p loom-tests --release "$@"
