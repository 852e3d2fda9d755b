#!/usr/bin/env bash
# The virtual-time engine's contention cost model against this host: the contention bench's
# two-core pairs (T1, T3, T8a) measured, then the model's predictions for the same pairs
# (nohz-stress --validate-model, on the counting build), back to back, with the model's t_x
# set to half that bench run's median round trip of a line between the two cores (what a
# transfer cost on this host meanwhile). The pair is repeated RUNS times (default 7; a bench
# run takes seconds): the host's own spread between bench runs is as large as the band, so
# each run is compared with its own prediction and the bound applies to the median of the
# runs' model/measured ratios. Prints each variant's ns per pair and each target's ratio,
# measured and predicted, per run and the median, and fails if a median is more than 25 %
# off. Then the model's calibration patterns (one line, two lines incremented by both cores;
# T1's rmw lines) beside the bench, with no bound. A timing check of a shared host: run it by
# hand, not in CI.
#
#   usage: [RUNS=n] ci/engine-validate.sh [bench outputs to reuse, comma-separated, or ""]
#              [model flags...]
#   e.g.   ci/engine-validate.sh "" --rmw-transfer-pct 125 --leave-pct 55
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
        cargo bench --bench contention -- T1 T3 T8a 2>&1 | tee "$b"
        benches+=("$b")
    done
fi
RUSTFLAGS="--cfg nohz_linecount" cargo build --quiet --release --target-dir target/linecount -p nohz-stress
pairs=()
for b in "${benches[@]}"; do
    # Half the median of the tight round trips.
    t_x=$(grep -oE 'round-trip-tight ns=[0-9.]+' "$b" | sed 's/.*=//' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print 70; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d\n", m / 2 + 0.5 }')
    echo "# $b: t_x from the bench's round trips: $t_x ns"
    m=$(mktemp)
    target/linecount/release/nohz-stress --validate-model --t-local "$t_x" "$@" | tee "$m"
    pairs+=("$b" "$m")
done
python3 - "${pairs[@]}" <<'PY'
import re, statistics, sys

def run(bench_path, model_path):
    """One bench run and its prediction: each variant's ns, each target's ratio, the calibration."""
    bench, model = open(bench_path).read(), open(model_path).read()
    pred = {m[0]: float(m[1]) for m in re.findall(r"^model (\S+) ([\d.]+) ns", model, re.M)}
    # Each variant's ns from the tight (target) lines: "<target> ... tight (target): a X ns (...), b Y ns".
    meas = {}
    for target, rest in re.findall(r"^(T\d+a?) \S+ tight \(target\): (.*)$", bench, re.M):
        for name, ns in re.findall(r"(\S+) ([\d.]+) ns", rest):
            meas.setdefault(name, []).append(float(ns))
    meas = {k: sum(v) / len(v) for k, v in meas.items()}
    alias = {"flat": "scalable"}
    rows = {}
    for name in ["legacy", "patched", "scalable", "mask-only", "sticky", "sticky-quiet"]:
        if name in meas and name in pred:
            rows[("ns", name)] = (meas[name], pred[name])
    for target, a, b, r in re.findall(r"^(T1|T3|T8a) \S+ (\S+)/(\S+) ratio=([\d.]+)", bench, re.M):
        pa, pb = pred.get(alias.get(a, a)), pred.get(alias.get(b, b))
        if pa is not None and pb is not None:
            rows[(target, a + "/" + b)] = (float(r), pa / pb)
    # The calibration patterns (T1's rmw lines): informational, no bound.
    cal = dict(re.findall(r"^\s*transfer T1 rmw-(\d)line-tight ns=([\d.]+)", bench, re.M))
    for n, name in [("1", "rmw-1line"), ("2", "rmw-2lines")]:
        if n in cal and name in pred:
            rows[("cal", name)] = (float(cal[n]), pred[name])
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
