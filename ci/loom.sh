#!/usr/bin/env bash
# Runs the loom models: the library rebuilt with its atomics from loom (--cfg nohz_loom), in a
# target directory of its own so the normal build cache survives. Extra arguments go to
# `cargo test` (e.g. `ci/loom.sh --test sites`); without any, the kernel-step mutants
# (ci/patch-mutants.py: a step removed from a copy of the source) run after the models.
# LOOM_MAX_PREEMPTIONS defaults to 2, the bound CI uses; never set LOOM_MAX_DURATION or
# LOOM_MAX_PERMUTATIONS (both stop silently and pass).
set -euo pipefail
cd "$(dirname "$0")/.."
unset LOOM_MAX_DURATION LOOM_MAX_PERMUTATIONS
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
if (($# > 0)); then
    RUSTFLAGS="${RUSTFLAGS:-} --cfg nohz_loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}" \
        exec cargo test -p loom-tests --release "$@"
fi
RUSTFLAGS="${RUSTFLAGS:-} --cfg nohz_loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}" \
    cargo test -p loom-tests --release
python3 ci/patch-mutants.py
