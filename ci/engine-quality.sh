#!/usr/bin/env bash
# Issue 38's quality check on the virtual-time engine: the seeds' benchmarks on their machines
# (item 4) and Khan's 768-CPU machine at 10-70 % utilization (item 5), each Legacy against
# Patched (Khan's: every policy), at sizes that finish in under 10 minutes on 2 cores.
#
#   ci/engine-quality.sh
#
# Prints a table per part and ends with exactly one line:
#
#   quality: llama=<R> hackbench_process=<R> hackbench_thread=<R> due_fraction_50=<F>
#
# R: the median of Patched's throughput over the median of Legacy's (3 interleaved runs each)
# at the seed's best-case setting. The seed states none (no thread count, no group count), so
# the setting is the one of this grid where seed 001's fix has the most to act on: where
# Legacy leaves the most CPU time idle and invisible to the idle balancer (idle share times
# its invisible part; chosen by that mechanism, not by the ratio):
#   llama             --threads 80: no thread count leaves idle time invisible (the team
#                     spins through its barriers); 80 is the team a full Altra runs
#                     (llama-batched-bench's -t defaults to the core count). Seed: up to ~14 %.
#   hackbench_process --groups 4: 1.4 % of CPU time idle, 66 % of it invisible (at 10 groups
#                     the CPUs are 100.0 % busy). Seed: "multi-process ... up to ~26 %".
#   hackbench_thread  --groups 4: 1.4 % idle, 62 % of it invisible. Thread mode is one
#                     process, read as the seed's "single-process +5 %".
# All on seed 001's machine as the engine models it by default: 80 CPUs, CPUs 0-7
# housekeeping, 8-79 NO_HZ_FULL (--housekeeping 8).
# F: Patched's due_tick_fraction (busy ticks that find nohz.next_balance due) on `frontier
# --util 50` (768 CPUs, 2 cpusets of 384), the median of its runs.
#
# Not part of .ci/run. ENGINE_QUALITY_LINECOUNT=1 also builds the counting build
# (target/linecount) and prints hackbench-480's exit_idle and kick shares (seed 000's profile).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "engine-quality: needs python3" >&2; exit 2; }
cargo build --release -p nohz-stress
bin=target/release/nohz-stress
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(--engine virtual --check-every 0 --runs 3)

# ratio FILE: Patched's median throughput over Legacy's, and the pair's lines.
summary() {
    python3 - "$@" <<'EOF'
import json, statistics, sys
mode = sys.argv[1]
for path in sys.argv[2:]:
    r = json.load(open(path))
    name = path.rsplit("/", 1)[-1][:-5]
    def med(pol, key):
        v = [x[key] for x in r["runs"] if x["policy"] == pol and x.get(key) is not None]
        return statistics.median(v) if v else float("nan")
    if mode == "bench":
        L, P = med("legacy", "throughput"), med("patched", "throughput")
        print(f"{name:28} {L:14.6g} {P:14.6g} {P / L:7.3f} {med('legacy', 'idle_while_waiting_ms_per_s'):10.1f}"
              f" {med('patched', 'idle_while_waiting_ms_per_s'):10.1f} {med('legacy', 'invisible_idle_pct'):9.1f}"
              f" {med('legacy', 'busy_pct'):6.1f}")
    elif mode == "ratio":
        print(f"{med('patched', 'throughput') / med('legacy', 'throughput'):.3f}")
    elif mode == "due":
        print(f"{med('patched', 'due_tick_fraction'):.3f}")
    elif mode == "frontier":
        for pol in ("legacy", "patched", "scalable", "sharded"):
            print(f"{name:14} {pol:9} {med(pol, 'due_tick_fraction'):8.3f} {med(pol, 'ilb_passes_per_sec'):8.0f}"
                  f" {med(pol, 'ilb_cpu_ms_per_s'):9.2f} {med(pol, 'ilb_busiest_share'):8.4f}"
                  f" {med(pol, 'idle_while_waiting_ms_per_s'):9.1f}")
    elif mode == "linecount":
        for pol in ("legacy", "patched"):
            print(f"{name:14} {pol:9} exit_idle {med(pol, 'exit_idle_pct'):.4f} %  kick {med(pol, 'kick_pct'):.4f} %"
                  f"  throughput {med(pol, 'throughput'):.6g}")
EOF
}

echo "== seed 001's benchmarks, 80 CPUs (8 housekeeping, 72 NO_HZ_FULL), Legacy vs Patched, 3 runs each"
bench=()
for t in 16 32 64 80; do
    f=$out/llama-T$t.json
    "$bin" "${common[@]}" --scenario llama --threads "$t" --seconds 0.2 --json >"$f"
    bench+=("$f")
done
for mode in process thread; do
    for g in 1 2 4 10; do
        f=$out/hackbench-$mode-G$g.json
        "$bin" "${common[@]}" --scenario "hackbench-$mode" --groups "$g" --seconds 0.05 --json >"$f"
        bench+=("$f")
    done
done
f=$out/hackbench-480.json
"$bin" "${common[@]}" --scenario hackbench-480 --seconds 0.01 --json >"$f"
bench+=("$f")
printf '%-28s %14s %14s %7s %10s %10s %9s %6s\n' run legacy patched ratio iww_L iww_P invis_L% busy%
summary bench "${bench[@]}"

echo
echo "== Khan's machine: frontier, 768 CPUs in 2 cpusets of 384, every policy, 3 runs each, 0.1 simulated s"
printf '%-14s %-9s %8s %8s %9s %8s %9s\n' run policy due_frac ilb/s ilb_ms/s busiest iww_ms/s
for u in 10 30 50 70; do
    f=$out/frontier-util$u.json
    "$bin" "${common[@]}" --scenario frontier --util "$u" --policy all --seconds 0.1 --json >"$f"
    summary frontier "$f"
done

if [[ ${ENGINE_QUALITY_LINECOUNT:-0} == 1 ]]; then
    echo
    echo "== hackbench-480 in the counting build (seed 000: exit_idle 0.81 -> 0.35 %, kick 0.21 -> 0.09 %)"
    RUSTFLAGS="--cfg nohz_linecount" cargo build --release --target-dir target/linecount -p nohz-stress
    f=$out/hackbench-480-linecount.json
    target/linecount/release/nohz-stress "${common[@]}" --scenario hackbench-480 --seconds 0.02 --json >"$f"
    summary linecount "$f"
fi

echo
echo "quality: llama=$(summary ratio "$out/llama-T80.json")" \
    "hackbench_process=$(summary ratio "$out/hackbench-process-G4.json")" \
    "hackbench_thread=$(summary ratio "$out/hackbench-thread-G4.json")" \
    "due_fraction_50=$(summary due "$out/frontier-util50.json")"
