#!/usr/bin/env bash
# The seeds' headlines and the frontier on the virtual-time engine, each one command, on the
# counting build (the contention cost model charges the crate's accesses to kernel functions):
#
#   ci/engine-seeds.sh seed000    # 480 CPUs, hackbench-like: Legacy against the kernel with seed 000 alone,
#                                 # the plain irq-time flag on a line of its own; then again with the flag
#                                 # in the nohz line, seed 003's x86 layout (seed000-nohz-line)
#   ci/engine-seeds.sh seed001    # 80 CPUs, 72 NO_HZ_FULL, batched work: Legacy against Patched
#   ci/engine-seeds.sh seed003    # 224 CPUs on 2 sockets, irq time on: Legacy against Patched
#   ci/engine-seeds.sh frontier   # 768 CPUs in two cpusets of 384: every policy
#   ci/engine-seeds.sh all
#
# Each prints the harness's table and writes its JSON and plot to harness/docs/engine-<name>.*.
# Extra arguments go to nohz-stress (--runs, --seconds, --seed, --t-remote, ...) and win over
# the defaults here.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
user=("$@")
# Whether the caller gave flag $1 (as `--flag value` or `--flag=value`).
given() {
    local a
    for a in "${user[@]}"; do
        [[ $a == "$1" || $a == "$1="* ]] && return 0
    done
    return 1
}
# run NAME SCENARIO POLICY RUNS SECONDS [FLAG VALUE]: the caller's flags win over these
# defaults.
run() {
    local name=$1 args=(--scenario "$2")
    given --policy || args+=(--policy "$3")
    given --runs || args+=(--runs "$4")
    given --seconds || args+=(--seconds "$5")
    if [[ $# -ge 7 ]] && ! given "$6"; then
        args+=("$6" "$7")
    fi
    echo "==> $name: nohz-stress --engine virtual ${args[*]} ${user[*]}"
    RUSTFLAGS="--cfg nohz_linecount" cargo run --quiet --release --target-dir target/linecount \
        -p nohz-stress -- --engine virtual --check-every 0 "${args[@]}" "${user[@]}" \
        --out "harness/docs/engine-$name.json" --plot "harness/docs/engine-$name.svg"
}
case $what in
seed000 | all)
    run seed000 churn seed000 3 0.02
    # The same with the irq-time flag where seed 003's x86 build had it: every interrupt
    # reads the `nohz` line.
    run seed000-nohz-line churn seed000 3 0.02 --irqtime-flag nohz-line
    ;;&
seed001 | all) run seed001 visibility both 3 1 ;;&
seed003 | all) run seed003 irqtime both 3 0.05 ;;&
frontier | all) run frontier frontier all 3 0.2 ;;
seed000 | seed001 | seed003) ;;
*)
    echo "usage: ci/engine-seeds.sh seed000|seed001|seed003|frontier|all [nohz-stress flags]" >&2
    exit 2
    ;;
esac
