#!/usr/bin/env bash
# The lean-core counts (issue "A lean core"): how much of the beyond-kernel policies, loom
# mutants and probes sits in the kernel paths, how wide the embedding API is, and how long
# the README and the unikernel's glue are. Prints the numbers; fails if a kernel path
# references a beyond-kernel constant or calls a mutant or probe again, if the rooms of src/
# import each other in a circle or a kernel room imports src/beyond (ci/imports.py), or if a
# vendoring build without features compiles a line of src/beyond (ci/vendor-lines.py): the
# targets of 0.
#
#   kernel paths: src/fair, src/tick_sched, src/irqtime.rs, src/idle.rs, src/sched_core
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=(src/fair src/tick_sched src/irqtime.rs src/idle.rs src/sched_core)
# Beyond-kernel policy constants: Scalable's and Sharded's (the seeds' four stay inline).
consts=$(grep -rnoE '\bP::(SHARDED|KICK_DEADLINE|READ_BEFORE_WRITE|ILB_LOCAL_FIRST|SHARD_HINT|Layout|Shards)\b' "${kernel[@]}" | wc -l || true)
# Loom code mutants and counting probes called from a kernel path.
probes=$(grep -rnE '(\bmutant\(|code_mutant_active|CodeMutant::|summary_before_fence|skip_exit_flush|shared_store\()' "${kernel[@]}" | grep -vE '^\S+:\s*//' | wc -l || true)
machine=$(python3 - <<'PY'
import re, glob
# Public methods of Machine: `pub fn` in `impl ... Machine<...>` blocks, except blocks and
# methods hidden from the docs (#[doc(hidden)]) or present only with the testing feature.
n = 0
for f in glob.glob("src/**/*.rs", recursive=True):
    lines = open(f).read().split("\n")
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.match(r"^impl\b.*\bMachine<", l):
            attrs = " ".join(lines[max(0, i - 3):i])
            hidden = "doc(hidden)" in attrs or 'feature = "testing"' in attrs
            depth, j = 0, i
            while True:
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0 and j > i:
                    break
                if not hidden and re.match(r"^\s{4,8}pub (const )?fn ", lines[j]):
                    before = " ".join(lines[max(i, j - 6):j])
                    if "doc(hidden)" not in before.split("///")[-1] and 'cfg(feature = "testing")' not in before.split("///")[-1]:
                        n += 1
                j += 1
            i = j
        i += 1
print(n)
PY
)
readme=$(wc -l < README.md)
glue=$(ci/unikernel-glue.sh)
echo "lean: beyond-kernel policy constants in the kernel paths: $consts (target 0)"
echo "lean: loom mutant and probe calls in the kernel paths: $probes (target 0)"
echo "lean: public methods of Machine: $machine (target <= 35)"
echo "lean: README lines: $readme (target <= 200)"
echo "lean: unikernel glue lines: $glue (target <= 60; ci/unikernel-glue.sh -v splits it)"
vendor=$(ci/vendor-lines.py)
echo "lean: $vendor"
beyond=$(sed -nE 's/.*, ([0-9]+) of them in src\/beyond\/.*/\1/p' <<<"$vendor")
echo "lean: lines of src/beyond/ in a vendoring build without features: $beyond (target 0)"
if ! imports=$(ci/imports.py); then
    grep -E 'circle|imports beyond' <<<"$imports" >&2
    echo "error: the rooms of src/ import each other in a circle, or a kernel room imports beyond" >&2
    exit 1
fi
echo "lean: $(tail -1 <<<"$imports" | sed 's/^imports: //')"
if [[ "$beyond" != 0 ]]; then
    echo "error: a vendoring build without features compiles src/beyond/" >&2
    exit 1
fi
if ((consts > 0 || probes > 0)); then
    echo "error: a kernel path references a beyond-kernel constant or calls a mutant or probe" >&2
    grep -rnE '\bP::(SHARDED|KICK_DEADLINE|READ_BEFORE_WRITE|ILB_LOCAL_FIRST|SHARD_HINT|Layout|Shards)\b|(\bmutant\(|code_mutant_active|CodeMutant::|summary_before_fence|skip_exit_flush|shared_store\()' "${kernel[@]}" >&2
    exit 1
fi
if ((readme > 200)); then
    echo "error: README.md has $readme lines; DESIGN.md keeps it to one screen (200)" >&2
    exit 1
fi
