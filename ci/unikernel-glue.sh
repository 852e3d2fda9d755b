#!/usr/bin/env bash
# The unikernel's glue: every line it writes to embed the crate, comments, blank lines and
# `use` lines aside:
#   - all of unikernel/src/platform.rs (every trait impl and the state only they use);
#   - all of unikernel/src/glue.rs (the embedding's helpers: CPU ids, the run-queue facts, the
#     interrupt dispatch);
#   - every line elsewhere that calls the machine (`k.0.`) or a glue helper (`glue::`), and the
#     lines a formatted call continues on (a line starting with `.`).
# checks.rs is left out: it only reads the crate's state to judge the run, and this script
# fails if it calls anything but those reads.
# usage: ci/unikernel-glue.sh [-v]   (-v: the count per part, then the total)
set -euo pipefail
cd "$(dirname "$0")/../unikernel/src"
code='
    /^[[:space:]]*(\/\/|$)/ { next }
    /^use / { skip = !/;[[:space:]]*$/; next }
    skip { skip = !/;[[:space:]]*$/; next }
    { n++ }
    END { print n + 0 }
'
files=$(awk "$code" platform.rs glue.rs)
calls=$(for f in *.rs; do
    case $f in platform.rs | glue.rs | checks.rs) continue ;; esac
    awk '
        /^[[:space:]]*\/\// { next }
        /k\.0\.|glue::/ { n++; on = 1; next }
        on && /^[[:space:]]*\./ { n++; next }
        { on = 0 }
        END { print n + 0 }
    ' "$f"
done | awk '{ s += $1 } END { print s + 0 }')
reads='cpu|rq|tick_sched|nohz_idle_test|warnings|irqtime|nr_cpu_ids'
if grep -oE 'k\.0\.[a-z_]+|m\.[a-z_]+\(' checks.rs | sed -E 's/^(k\.0\.|m\.)//; s/\($//' |
    grep -vxE "$reads" >&2; then
    echo "error: checks.rs calls the machine beyond its reads ($reads); count it as glue" >&2
    exit 1
fi
if [[ ${1:-} == -v ]]; then
    echo "platform.rs and glue.rs: $files"
    echo "calls elsewhere: $calls"
fi
echo $((files + calls))
