#!/usr/bin/env bash
# Paced against Patched on the closed loads of the seeds, where balancing decides how fast the
# work gets done (issue 39: "some benchmarks will be happy with faster idle load balance and
# some not"): seed 001's hackbench (process and thread mode) and its visibility load on the
# 80-CPU machine with NO_HZ_FULL, seed 001's llama team, and seed 000's hackbench on 480 CPUs.
# Each load runs under both policies with the same seeds (release build, no checks); the table
# gives Paced's ratios to Patched, paired by seed, with 95 % intervals
# (`ci/paced-loads-table.py`).
#
#   ci/paced-loads.sh                 # RUNS=20 (5 on 480 CPUs); about 4 minutes on 2 cores
#   RUNS=5 ci/paced-loads.sh
#   TABLE_ONLY=1 ci/paced-loads.sh    # the table again from target/paced-loads/*.json
#
# Exits 0 whatever the ratios say; non-zero only if a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
big_runs=${BIG_RUNS:-5}
out=target/paced-loads
loads="hackbench-process hackbench-thread visibility llama hackbench-480"
mkdir -p "$out"
if [[ -z ${TABLE_ONLY:-} ]]; then
    cargo build --quiet --release -p nohz-stress
    for load in $loads; do
        n=$runs
        [[ $load == hackbench-480 ]] && n=$big_runs
        for policy in patched paced; do
            echo "paced-loads: $load, $policy, $n run(s) ..." >&2
            target/release/nohz-stress --engine virtual --scenario "$load" --policy "$policy" \
                --runs "$n" --check-every 0 --json "$@" >"$out/$load-$policy.json"
        done
    done
fi
python3 ci/paced-loads-table.py "$out" $loads
