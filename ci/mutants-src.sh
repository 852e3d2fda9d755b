#!/usr/bin/env bash
# Source mutants: cargo-mutants over the whole library (all of src/ but src/internals, the
# hidden test hooks; see .cargo/mutants.toml), and the table of the mutants that survive it.
#
#   ci/mutants-src.sh                 every mutant of the library (about 90 minutes here)
#   ci/mutants-src.sh --in-diff       only the mutants on lines changed since the base commit
#                                     that the last full run recorded (ci/mutants-src.base):
#                                     what .ci/run runs
#   ... --resume                      keep stage 1's outcomes (target/mutants-src) and run
#                                     stage 2 and the table check again (after a table edit,
#                                     or a run stopped after stage 1)
#
# Each mutant is built and tested in two stages, cheapest kill first: the kernel-path,
# primitive, site and unit tests (a few seconds), then, for the survivors the table does not
# explain only, the property tests (about a minute each). A mutant that survives both,
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
resume=0
for arg in "$@"; do
    case $arg in
        --in-diff) mode=diff ;;
        --resume) resume=1 ;;
        *)
            echo "usage: $0 [--in-diff] [--resume]" >&2
            exit 2
            ;;
    esac
done

out=target/mutants-src
fast=(--test kernel --test primitives --test sites --test sharded --test posted --test paced --lib)
slow=(--test model)
common=(-p nohz --no-shuffle --timeout 60 --output "$out")
# The property tests take about a minute in a debug build here.
slow_timeout_s=600
budget_s=600
per_mutant_s=7
# cargo-mutants creates $out/mutants.out but not $out itself (absent on a fresh clone).
mkdir -p "$out"

extra=()
if [[ $mode == diff ]]; then
    base=$(cat ci/mutants-src.base)
    what="the diff from $base"
    if git cat-file -e "$base^{commit}" 2>/dev/null; then
        diff=$(mktemp)
        git diff "$base" -- src ':!src/testing' ':!src/internals' >"$diff"
        if [[ ! -s $diff ]]; then
            echo "mutants-src: no library change since $base"
            exit 0
        fi
        extra+=(--in-diff "$diff")
    else
        # A shallow clone: the base is not here, so the diff cannot be taken. Mutate a sample
        # of the whole library rather than nothing.
        what="the whole library (the base commit $base is not in this clone)"
    fi
    count=$(cargo mutants "${common[@]}" "${extra[@]}" --list | wc -l)
    if ((count == 0)); then
        # Nothing to mutate (the change only deleted lines, or touched comments): no outcomes
        # to check, and a previous run's must not be read as this one's.
        echo "mutants-src: no mutant in $what"
        exit 0
    fi
    shards=$(((count * per_mutant_s + budget_s - 1) / budget_s))
    if ((shards > 1)); then
        shard=$((16#${base:0:8} % shards))
        echo "mutants-src: $count mutants in $what, over the ${budget_s}s budget:" \
            "testing the deterministic sample --shard $shard/$shards (about $((count / shards)))"
        extra+=(--shard "$shard/$shards" --sharding round-robin)
    else
        echo "mutants-src: $count mutants in $what"
    fi
fi

# Runs cargo-mutants with "$@"; survivors (exit 2) and timeouts (3) are results, for the
# next stage and the table; anything else stops the script.
mutate() {
    local status=0
    cargo mutants "$@" || status=$?
    if [[ $status -ne 0 && $status -ne 2 && $status -ne 3 ]]; then
        echo "mutants-src: cargo-mutants failed (exit $status)" >&2
        exit 1
    fi
}

start=$(date +%s)
if [[ $resume == 0 ]]; then
    # A run's outcomes are its own: never check a previous run's left in the output folder.
    rm -rf "$out/mutants.out"
    mutate "${common[@]}" "${extra[@]}" -- "${fast[@]}"
    echo "mutants-src: stage 1 took $(($(date +%s) - start)) s"
fi

# Stage 2: the property tests, for the survivors of stage 1 that the table does not explain
# only (a listed equivalent survives them too, and each costs a build and about a minute of
# property tests). Each is named by an anchored regex of its full name.
stage2=()
while IFS= read -r re; do
    stage2+=(--re "$re")
done < <(python3 ci/mutants-src-table.py unlisted "$out/mutants.out/outcomes.json" ci/mutants-src.survivors)
rm -rf "$out/stage2"
if ((${#stage2[@]} > 0)); then
    echo "mutants-src: stage 2, the property tests, for $((${#stage2[@]} / 2)) unexplained survivor(s)"
    t2=$(date +%s)
    mkdir -p "$out/stage2"
    mutate -p nohz --no-shuffle --baseline=skip --timeout "$slow_timeout_s" \
        --output "$out/stage2" "${stage2[@]}" -- "${slow[@]}"
    echo "mutants-src: stage 2 took $(($(date +%s) - t2)) s"
fi
echo "mutants-src: both stages took $(($(date +%s) - start)) s"

stage2_outcomes=$out/stage2/mutants.out/outcomes.json
[[ -f $stage2_outcomes ]] || stage2_outcomes=-
python3 ci/mutants-src-table.py check "$out/mutants.out/outcomes.json" ci/mutants-src.survivors "$mode" "$stage2_outcomes"

if [[ $mode == full && -z $(git status --porcelain -- src tests) ]]; then
    git rev-parse HEAD >ci/mutants-src.base
    echo "mutants-src: recorded $(cat ci/mutants-src.base) as the base of --in-diff runs"
fi
