#!/usr/bin/env bash
# The ordering mutation table: every named site of nohz::sync::SITES, every strictly weaker
# ordering of it, every loom model (loom-tests/tests/mutants.rs). Prints the table
# (site | declared | weakening | verdict | by which model | reason) and fails if a mutant that
# is not listed as loom-equivalent survives, or if a listed equivalent is killed. Same build
# and bound as ci/loom.sh (LOOM_MAX_PREEMPTIONS=2, target/loom); ci/loom.sh runs it too, with
# the output captured.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ci/loom.sh --test mutants -- --nocapture "$@"
