#!/usr/bin/env bash
# The virtual-time engine's contention cost model against this host: the contention bench's
# two-core pairs (T1, T3, T8a) measured, then the model's predictions for the same pairs
# (nohz-stress --validate-model, on the counting build), back to back. The bench measures each
# variant over 41 placements of its lines (benches/contention/placed.rs: what a line costs here
# depends on where it lies) and prints each variant's mean over them (`means` lines), which is
# what the model is compared with (the model is a sum of transfers, and the mean of a sum over
# placements is the sum of the means). The model's host parameters come from that bench run's
# calibration patterns (FIT=patterns, the default): T1's `rmw-local` (a locked RMW on an owned
# line) gives t_rmw, `rmw-2line` (two lines incremented in turn by both cores) gives t_x and
# `rmw-1line` (one line) the point at which a request reaches the core that has the line
# (nohz-stress --calibrate; no target is fitted on). The model charges atomic accesses only: the
# rest of a crate pair's work (branches, calls, loads and plain stores) comes from the same
# bench run's T2, which is no target here: the kernel's pair on a quiet machine less two bare
# locked RMWs (nohz-stress --pair-work; 0, with a note, for a bench output without T2).
# FIT=round-trip takes t_x as half the mean round trip of T1's and T3's ping-pong line
# instead, with the other defaults and no other work (what this script did before 2026-12-05;
# it reads bench outputs without `rmw-local`). The pair is repeated RUNS times (default 7; a
# bench run takes seconds): each run is compared with its own prediction and the bound applies
# to the median of the runs' model/measured ratios.
# Prints each variant's ns per pair and each target's ratio of means, measured and predicted,
# per run and the median, and fails if a median is more than 25 % off. Then the calibration
# patterns beside the bench, with no bound (fitted: they show how near the fit came). A timing
# check of a shared host: run it by hand, not in CI.
#
#   usage: [RUNS=n] [FIT=patterns|round-trip] ci/engine-validate.sh [bench outputs to reuse, comma-separated, or ""]
#              [model flags...]
#   e.g.   FIT=round-trip ci/engine-validate.sh "" --rmw-transfer-pct 125 --leave-pct 55
#          ci/engine-validate.sh /tmp/b1.txt,/tmp/b2.txt,/tmp/b3.txt
set -euo pipefail
cd "$(dirname "$0")/.."
given=${1:-}
shift || true
runs=${RUNS:-7}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
    echo "error: RUNS must be a positive whole number, got '$runs'" >&2
    exit 2
fi
fit=${FIT:-patterns}
if [[ $fit != patterns && $fit != round-trip ]]; then
    echo "error: FIT must be patterns or round-trip, got '$fit'" >&2
    exit 2
fi
benches=()
if [[ -n $given ]]; then
    IFS=, read -r -a benches <<<"$given"
    for b in "${benches[@]}"; do
        [[ -r $b ]] || { echo "error: cannot read bench output '$b'" >&2; exit 2; }
    done
else
    for ((i = 1; i <= runs; i++)); do
        b=$(mktemp)
        echo "# bench run $i of $runs"
        cargo bench --bench contention -- T1 T3 T8a T2 2>&1 | tee "$b"
        benches+=("$b")
    done
fi
RUSTFLAGS="--cfg nohz_linecount" cargo build --quiet --release --target-dir target/linecount -p nohz-stress
pairs=()
for b in "${benches[@]}"; do
    m=$(mktemp)
    case $fit in
    patterns)
        # The host parameters fitted to T1's calibration patterns (tight means).
        t1=$(grep -E '^\s*means T1 \S+-tight ' "$b" || true)
        cal=$(sed -nE 's/.* rmw-1line=([0-9.]+) rmw-2line=([0-9.]+) rmw-local=([0-9.]+) .*/\3,\1,\2/p' <<<"$t1")
        if [[ -z $cal ]]; then
            echo "error: '$b' has no T1 'means' line with rmw-local (a bench output from before 2026-12-05?); FIT=round-trip reads older ones" >&2
            exit 2
        fi
        # The pair's other work: T2's tight Patched pair less its two bare RMWs, in whole ns.
        work=$(sed -nE 's/^T2 pair-quiet tight \(target\): patched ([0-9.]+) ns .*, 2rmw ([0-9.]+) ns.*/\1 \2/p' "$b" |
            awk 'NR == 1 { w = $1 - $2; printf "%d\n", (w > 0 ? w : 0) + 0.5 }')
        if [[ -z $work ]]; then
            echo "# $b: no T2 pair-quiet line (a bench output from before 2026-12-06?): each pair's other work taken as 0 ns"
            work=0
        fi
        echo "# $b: the model fitted to the bench's calibration patterns $cal; each pair's other work $work ns (T2)"
        target/linecount/release/nohz-stress --validate-model --calibrate "$cal" --pair-work "$work" "$@" | tee "$m"
        ;;
    round-trip)
        # t_x: half the mean round trip of T1's and T3's tight interleavings.
        rts=$(grep -oE 'means T[13] \S+-tight .*round-trip=[0-9.]+' "$b" | sed 's/.*round-trip=//' || true)
        if [[ -z $rts ]]; then
            echo "error: '$b' has no 'means T1' or 'means T3' line (a bench output from before the placements?)" >&2
            exit 2
        fi
        t_x=$(awk '{ s += $1; n++ } END { printf "%d\n", s / n / 2 + 0.5 }' <<<"$rts")
        echo "# $b: t_x from the bench's mean round trip: $t_x ns"
        target/linecount/release/nohz-stress --validate-model --t-local "$t_x" "$@" | tee "$m"
        ;;
    esac
    pairs+=("$b" "$m")
done
python3 - "${pairs[@]}" <<'PY'
import re, statistics, sys

def run(bench_path, model_path):
    """One bench run and its prediction: each variant's ns, each target's ratio, the calibration."""
    bench, model = open(bench_path).read(), open(model_path).read()
    pred = {m[0]: float(m[1]) for m in re.findall(r"^model (\S+) ([\d.]+) ns", model, re.M)}
    # Each target's means over placements: "   means <target> <name>-tight a=X b=Y ... runs=n".
    means = {}
    for target, rest in re.findall(r"^\s*means (T\d+a?) \S+-tight (.*) runs=", bench, re.M):
        means[target] = {name: float(ns) for name, ns in re.findall(r"(\S+)=([\d.]+)", rest)}
    # Each variant's ns: its mean, averaged over the targets that measure it.
    meas = {}
    for target in ("T1", "T3", "T8a"):
        for name, ns in means.get(target, {}).items():
            meas.setdefault(name, []).append(ns)
    meas = {k: sum(v) / len(v) for k, v in meas.items()}
    alias = {"flat": "scalable"}
    rows = {}
    for name in ["legacy", "patched", "scalable", "mask-only", "sticky", "sticky-quiet"]:
        if name in meas and name in pred:
            rows[("ns", name)] = (meas[name], pred[name])
    # The targets' ratios (the bench's own lines say which), each a ratio of that target's means.
    for target, a, b in re.findall(r"^(T1|T3|T8a) \S+ (\S+)/(\S+) ratio=", bench, re.M):
        m = means.get(target, {})
        pa, pb = pred.get(alias.get(a, a)), pred.get(alias.get(b, b))
        if a in m and b in m and pa is not None and pb is not None:
            rows[(target, a + "/" + b)] = (m[a] / m[b], pa / pb)
    # The calibration patterns (T1's rmw lines): informational, no bound.
    for bench_name, name in [("rmw-1line", "rmw-1line"), ("rmw-2line", "rmw-2lines")]:
        if bench_name in means.get("T1", {}) and name in pred:
            rows[("cal", name)] = (means["T1"][bench_name], pred[name])
    return rows

args = sys.argv[1:]
runs = [run(args[i], args[i + 1]) for i in range(0, len(args), 2)]
keys = [k for k in runs[0] if all(k in r for r in runs)]
n = len(runs)
bad = 0

def table(title, kind, fmt, bound):
    global bad
    ks = [k for k in keys if (k[0] if k[0] in ("ns", "cal") else "ratio") == kind]
    if not ks:
        return
    per = "".join(f"{'run ' + str(i + 1):>17}" for i in range(n))
    print(f"\n{title:<28}{per}{'median':>9}{'':>4}  (each run: measured / model, model/measured)")
    for k in ks:
        cells = "".join(f"{fmt(r[k][0]) + '/' + fmt(r[k][1]) + ' ' + format(r[k][1] / r[k][0], '.2f'):>17}" for r in runs)
        med = statistics.median(r[k][1] / r[k][0] for r in runs)
        off = bound and abs(med - 1) > 0.25
        bad += off
        label = k[1] if kind != "ratio" else k[0] + " " + k[1]
        print(f"{label:<28}{cells}{med:>9.2f}{'  off by more than 25 %' if off else ''}")

table("variant, ns per pair", "ns", lambda v: f"{v:.0f}", True)
table("target ratio", "ratio", lambda v: f"{v:.3f}", True)
table("calibration, ns (no bound)", "cal", lambda v: f"{v:.0f}", False)
print(f"\n{bad} median(s) off by more than 25 %, over {n} bench run(s)")
sys.exit(1 if bad else 0)
PY
