#!/usr/bin/env bash
# The virtual-time engine's contention cost model against this host: the contention bench's
# two-core pairs (T1, T3, T8a) measured, then the model's predictions for the same pairs
# (nohz-stress --validate-model, on the counting build), back to back, with the model's t_x
# set to half the bench's median round trip of a line between the two cores (what a transfer
# cost on this host meanwhile). Prints each variant's ns per pair and each target's ratio,
# measured and predicted, and fails if a prediction is more than 25 % off. Then the model's
# calibration patterns (one line, two lines incremented by both cores; T1's rmw lines) beside
# the bench, with no bound. A timing check of a shared host: run it by hand, not in CI.
#
#   usage: ci/engine-validate.sh [bench output file to reuse, or ""] [model flags...]
#   e.g.   ci/engine-validate.sh "" --rmw-transfer-pct 125 --leave-pct 55
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-}
shift || true
if [[ -z $bench ]]; then
    bench=$(mktemp)
    cargo bench --bench contention -- T1 T3 T8a 2>&1 | tee "$bench"
fi
# Half the median of the tight round trips.
t_x=$(grep -oE 'round-trip-tight ns=[0-9.]+' "$bench" | sed 's/.*=//' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print 70; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d\n", m / 2 + 0.5 }')
echo "# t_x from the bench's round trips: $t_x ns"
model=$(mktemp)
RUSTFLAGS="--cfg nohz_linecount" cargo run --quiet --release --target-dir target/linecount \
    -p nohz-stress -- --validate-model --t-local "$t_x" "$@" | tee "$model"
python3 - "$bench" "$model" <<'PY'
import re, sys
bench, model = open(sys.argv[1]).read(), open(sys.argv[2]).read()
pred = {m[0]: float(m[1]) for m in re.findall(r"^model (\S+) ([\d.]+) ns", model, re.M)}
# Each variant's ns from the tight (target) lines: "<target> ... tight (target): a X ns (...), b Y ns".
meas = {}
for target, rest in re.findall(r"^(T\d+a?) \S+ tight \(target\): (.*)$", bench, re.M):
    for name, ns in re.findall(r"(\S+) ([\d.]+) ns", rest):
        meas.setdefault(name, []).append(float(ns))
meas = {k: sum(v) / len(v) for k, v in meas.items()}
alias = {"flat": "scalable"}
ratios = re.findall(r"^(T1|T3|T8a) \S+ (\S+)/(\S+) ratio=([\d.]+)", bench, re.M)
bad = 0
print(f"\n{'variant':<14}{'measured ns':>12}{'model ns':>10}{'model/measured':>16}")
for name in ["legacy", "patched", "scalable", "mask-only", "sticky", "sticky-quiet"]:
    if name in meas and name in pred:
        r = pred[name] / meas[name]
        bad += abs(r - 1) > 0.25
        print(f"{name:<14}{meas[name]:>12.1f}{pred[name]:>10.1f}{r:>16.2f}{'' if abs(r - 1) <= 0.25 else '  off by more than 25 %'}")
print(f"\n{'target':<8}{'ratio':<24}{'measured':>10}{'model':>8}{'model/measured':>16}")
for target, a, b, r in ratios:
    pa, pb = pred.get(alias.get(a, a)), pred.get(alias.get(b, b))
    if pa is None or pb is None:
        continue
    m = pa / pb
    q = m / float(r)
    bad += abs(q - 1) > 0.25
    print(f"{target:<8}{a + '/' + b:<24}{float(r):>10.3f}{m:>8.3f}{q:>16.2f}{'' if abs(q - 1) <= 0.25 else '  off by more than 25 %'}")
# The calibration patterns (T1's rmw lines): informational, no bound.
cal = dict(re.findall(r"^\s*transfer T1 rmw-(\d)line-tight ns=([\d.]+)", bench, re.M))
if cal:
    print(f"\n{'calibration':<14}{'measured ns':>12}{'model ns':>10}{'model/measured':>16}  (no bound)")
    for n, name in [("1", "rmw-1line"), ("2", "rmw-2lines")]:
        if n in cal and name in pred:
            print(f"{name:<14}{float(cal[n]):>12.1f}{pred[name]:>10.1f}{pred[name] / float(cal[n]):>16.2f}")
print(f"\n{bad} prediction(s) off by more than 25 %")
sys.exit(1 if bad else 0)
PY
