#!/usr/bin/env bash
# Khan's machine measured (issue 38, item 5): the `frontier` scenario (768 CPUs, two cpusets of
# 384) at 10, 30, 50 and 70 % utilization, every policy, on the release build without checks,
# and one table of the balancing-quality metrics, medians over the seeds:
#
#   ci/frontier-baseline.sh                 # RUNS=3 SECONDS_SIM=1, utilizations 10 30 50 70 (6 min here)
#   UTILS="50" RUNS=1 SECONDS_SIM=0.2 ci/frontier-baseline.sh  # extra flags go to nohz-stress
#
# Columns: due_tick and due_jiffy (busy ticks, and jiffies with a busy tick, that found
# `nohz.next_balance` at or before `jiffies`), the ILB passes a second and the share of them a
# wakeup aborted, how far a completed pass moved `nohz.next_balance` and how far ahead of
# `jiffies` it left it (jiffies: the share of passes at 0, at 1-2 and the rest, all seeds
# together), ILB CPU time, the busiest ILB CPU's share of its own time, idle-while-waiting and
# the runnable wait's p99. The JSON of each utilization is left in target/frontier-baseline/.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
seconds=${SECONDS_SIM:-1}
utils=${UTILS:-10 30 50 70}
out=target/frontier-baseline
mkdir -p "$out"
# TABLE_ONLY=1 prints the table from the JSON already there.
[[ -n ${TABLE_ONLY:-} ]] || cargo build --quiet --release -p nohz-stress
for u in $utils; do
    [[ -n ${TABLE_ONLY:-} ]] && continue
    target/release/nohz-stress --engine virtual --scenario frontier --util "$u" --policy all \
        --runs "$runs" --seconds "$seconds" --check-every 0 --json "$@" >"$out/util-$u.json"
done
python3 - "$out" $utils <<'EOF'
import json, statistics, sys

out, utils = sys.argv[1], sys.argv[2:]

def hist(s):
    h = {}
    for kv in (s or "").split():
        k, v = kv.split(":")
        h[int(k)] = h.get(int(k), 0) + int(v)
    return h

def shares(h):
    n = sum(h.values()) or 1
    zero = h.get(0, 0) / n
    one_two = (h.get(1, 0) + h.get(2, 0)) / n
    neg = sum(v for k, v in h.items() if k < 0) / n
    big = sum(v for k, v in h.items() if k > 2) / n
    return f"{zero*100:.0f}/{one_two*100:.0f}/{big*100:.0f}/{neg*100:.0f}"

med = lambda xs: statistics.median(xs) if xs else float("nan")
print("util | policy | busy % | due_tick % | due_jiffy % | ILB passes/s | aborted % | "
      "advance 0/1-2/>2/<0 (% of passes) | ahead 0/1-2/>2/<0 | ILB CPU ms/s | ilb_busiest_share % "
      "| idle_while_waiting ms/s | wait p99 us | tasks/s")
for u in utils:
    runs = json.load(open(f"{out}/util-{u}.json"))["runs"]
    pols = []
    for r in runs:
        if r["policy"] not in pols:
            pols.append(r["policy"])
    for p in pols:
        rs = [r for r in runs if r["policy"] == p]
        adv, ahead = {}, {}
        for r in rs:
            for k, v in hist(r["next_balance_advance"]).items():
                adv[k] = adv.get(k, 0) + v
            for k, v in hist(r["next_balance_ahead"]).items():
                ahead[k] = ahead.get(k, 0) + v
        passes = sum(r["ilb_passes"] for r in rs) or 1
        aborted = sum(r["ilb_passes_aborted"] for r in rs)
        p99 = [r["runnable_wait_us_p99"] for r in rs if r["runnable_wait_us_p99"] is not None]
        jf = [r["due_jiffy_fraction"] for r in rs if r["due_jiffy_fraction"] is not None]
        print(f"{u} | {p} | {med([r['busy_pct'] for r in rs]):.1f} "
              f"| {med([r['due_tick_fraction'] for r in rs])*100:.2f} "
              f"| {med(jf)*100:.1f} "
              f"| {med([r['ilb_passes_per_sec'] for r in rs]):.0f} "
              f"| {aborted/passes*100:.1f} "
              f"| {shares(adv)} | {shares(ahead)} "
              f"| {med([r['ilb_cpu_ms_per_s'] for r in rs]):.1f} "
              f"| {med([r['ilb_busiest_share'] for r in rs])*100:.1f} "
              f"| {med([r['idle_while_waiting_ms_per_s'] for r in rs]):.2f} "
              f"| {med(p99):.1f} "
              f"| {med([r['throughput'] for r in rs]):.0f}")
EOF
