#!/usr/bin/env bash
# Source mutants: cargo-mutants over the whole library (all of src/ but src/testing, the host
# test platform; see .cargo/mutants.toml), and the table of the mutants that survive it.
#
#   ci/mutants-src.sh                 every mutant of the library (about two hours here)
#   ci/mutants-src.sh --in-diff       only the mutants on lines changed since the base commit
#                                     that the last full run recorded (ci/mutants-src.base):
#                                     what .ci/run runs
#
# Each mutant is built once and tested in two stages, cheapest kill first: the kernel-path,
# primitive, site and unit tests (a few seconds), then, for what survives them only, the
# property tests (`--iterate` reuses the first stage's outcomes). A mutant that survives both,
# or that only a timeout kills, must be listed in ci/mutants-src.survivors with the reason it
# is equivalent (or why no test can see it); an unlisted one fails the script. A full run also
# fails on a listed mutant that no longer survives (the table must stay true), and, on a clean
# tree, records HEAD as the base of the next --in-diff runs.
#
# The --in-diff stage keeps to about ten minutes: when the diff has more mutants than that
# (about 7 s each here), it tests a deterministic sample, one shard of `--shard k/n` chosen
# from the base commit, and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-mutants >/dev/null; then
    echo "installing cargo-mutants (a few minutes)" >&2
    cargo install cargo-mutants --locked --version 27.1.0 --quiet
fi

mode=full
if [[ ${1:-} == --in-diff ]]; then
    mode=diff
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--in-diff]" >&2
    exit 2
fi

out=target/mutants-src
fast=(--test kernel --test primitives --test sites --lib)
slow=(--test model)
common=(-p nohz --no-shuffle --timeout 60 --output "$out")
budget_s=600
per_mutant_s=7
# cargo-mutants creates $out/mutants.out but not $out itself (absent on a fresh clone).
mkdir -p "$out"

extra=()
if [[ $mode == diff ]]; then
    base=$(cat ci/mutants-src.base)
    diff=$(mktemp)
    git diff "$base" -- src ':!src/testing' >"$diff"
    if [[ ! -s $diff ]]; then
        echo "mutants-src: no library change since $base"
        exit 0
    fi
    extra+=(--in-diff "$diff")
    count=$(cargo mutants "${common[@]}" "${extra[@]}" --list | wc -l)
    shards=$(((count * per_mutant_s + budget_s - 1) / budget_s))
    if ((shards > 1)); then
        shard=$((16#${base:0:8} % shards))
        echo "mutants-src: $count mutants in the diff from $base, over the ${budget_s}s budget:" \
            "testing the deterministic sample --shard $shard/$shards (about $((count / shards)))"
        extra+=(--shard "$shard/$shards" --sharding round-robin)
    else
        echo "mutants-src: $count mutants in the diff from $base"
    fi
fi

start=$(date +%s)
set +e
cargo mutants "${common[@]}" "${extra[@]}" -- "${fast[@]}"
status=$?
if [[ $status -eq 2 || $status -eq 3 ]]; then
    # Survivors (2) or timeouts (3): let the property tests try them.
    cargo mutants "${common[@]}" "${extra[@]}" --iterate --baseline=skip -- "${slow[@]}"
    status=$?
fi
set -e
if [[ $status -ne 0 && $status -ne 2 && $status -ne 3 ]]; then
    echo "mutants-src: cargo-mutants failed (exit $status)" >&2
    exit 1
fi
echo "mutants-src: both stages took $(($(date +%s) - start)) s"

python3 - "$out/mutants.out/outcomes.json" ci/mutants-src.survivors "$mode" <<'EOF'
import collections, json, sys

outcomes, table_path, mode = sys.argv[1:4]

def key(name, file):
    # "src/x.rs:12:5: replace a with b in f" -> "src/x.rs: replace a with b in f": positions
    # move with every edit above them, the mutation and its function do not.
    return f"{file}: {name.split(': ', 1)[1]}"

data = json.load(open(outcomes))
survivors = collections.Counter()
totals = collections.Counter()
for o in data["outcomes"]:
    scenario = o["scenario"]
    if not isinstance(scenario, dict):
        continue  # the baseline
    m = scenario["Mutant"]
    totals[o["summary"]] += 1
    if o["summary"] in ("MissedMutant", "Timeout"):
        survivors[key(m["name"], m["file"])] += 1

listed = collections.Counter()
reasons = {}
for line in open(table_path):
    line = line.rstrip("\n")
    if not line.strip() or line.startswith("#"):
        continue
    k, _, reason = line.partition(" ==> ")
    listed[k] += 1
    reasons[k] = reason

print(f"mutants-src: {sum(totals.values())} mutants: " + ", ".join(f"{n} {s}" for s, n in sorted(totals.items())))
unexplained = survivors - listed
for k in sorted(survivors):
    if k in listed:
        print(f"  explained   {k}  -- {reasons[k]}")
for k, n in sorted(unexplained.items()):
    print(f"  UNEXPLAINED {k}" + (f" (x{n})" if n > 1 else ""))
stale = listed - survivors if mode == "full" else collections.Counter()
for k in sorted(stale):
    print(f"  STALE       {k}  (listed, but killed now: remove it from the table)")
if unexplained or stale:
    sys.exit(1)
print("mutants-src: every survivor is explained")
EOF

if [[ $mode == full && -z $(git status --porcelain -- src tests) ]]; then
    git rev-parse HEAD >ci/mutants-src.base
    echo "mutants-src: recorded $(cat ci/mutants-src.base) as the base of --in-diff runs"
fi
