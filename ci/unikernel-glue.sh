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
#
# It also fails if a trait impl in platform.rs or glue.rs holds logic: an impl's method
# forwards (to the kernel's state, its functions or the crate's timekeeper), so a line inside
# one may hold no branch and no loop: no `if`, `else`, `match`, `for`, `while` or `loop`, no
# `&&` or `||` (a closure's `||` aside), no `?` (an early return). A decision the kernel
# makes belongs in the kernel's own code (kernel.rs), where a kernel without the crate would
# make it too. The test is by keyword: a combinator that branches (`map_or`, `then`) passes.
# usage: ci/unikernel-glue.sh [-v]   (-v: the count per part, then the total)
set -euo pipefail
cd "$(dirname "$0")/../unikernel/src"
# file:line: text, for each line of a trait impl that branches or loops.
logic=$(awk '
    FNR == 1 { head = ""; in_impl = 0; prev = "" }
    # An impl header, maybe over several lines, up to its opening brace.
    !in_impl && (head != "" || /^impl[<[:space:]]/) {
        head = head " " $0
        if (index($0, "{")) {
            in_impl = (head ~ /[[:space:]]for[[:space:]]/) && $0 !~ /\{[[:space:]]*\}[[:space:]]*$/
            head = ""
        }
        next
    }
    in_impl && /^}/ { in_impl = 0; next }
    in_impl {
        line = $0
        gsub(/"([^"\\]|\\.)*"/, "\"\"", line)   # strings
        gsub(/\x27(\\.|[^\x27\\])\x27/, "c", line)  # char literals
        sub(/\/\/.*/, "", line)                     # comments
        # A closure: `||` after an opening parenthesis, a comma or `=`, on this line or
        # (a line that starts with it) at the end of the line before.
        if (prev ~ /[(,=][[:space:]]*$/)
            sub(/^[[:space:]]*(move[[:space:]]+)?\|\|/, "(", line)
        gsub(/[(,=][[:space:]]*(move[[:space:]]+)?\|\|/, "(", line)
        if (line !~ /^[[:space:]]*$/)
            prev = line
        gsub(/\?Sized/, "Sized", line)
        if (line ~ /(^|[^[:alnum:]_])(if|else|match|for|while|loop)([^[:alnum:]_]|$)/ ||
            line ~ /&&|\|\||\?/) {
            sub(/^[[:space:]]+/, "", $0)
            print FILENAME ":" FNR ": " $0
        }
    }
' platform.rs glue.rs)
if [[ -n $logic ]]; then
    printf '%s\n' "$logic" | sed 's|^|unikernel/src/|' >&2
    echo "error: a trait impl in the glue holds logic (a branch or a loop, above); an impl" \
        "forwards, and the kernel's own code decides" >&2
    exit 1
fi
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
