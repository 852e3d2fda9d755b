#!/usr/bin/env bash
# Builds the nohz unikernel (unikernel/, its own workspace) in release and boots it under
# QEMU (TCG, 4 CPUs) once per policy. Each boot runs the scenario, prints its table over
# serial and exits through isa-debug-exit: status 1 = every check passed, 3 = a check failed.
# Fails on a failed check, a timeout, or a boot that never printed its verdict (a triple fault
# resets the VM, and -no-reboot turns that into a plain exit with no table).
#
# usage: ci/unikernel.sh [legacy|patched|all]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/../unikernel"
which=${1:-all}
case "$which" in
    legacy | patched) policies=("$which") ;;
    all) policies=(legacy patched) ;;
    *)
        echo "usage: $0 [legacy|patched|all]" >&2
        exit 2
        ;;
esac
cargo build --release --quiet
# Fails (set -e) if a trait impl in the glue holds logic.
glue=$(../ci/unikernel-glue.sh)
echo "unikernel glue: $glue lines (platform.rs, glue.rs and every call elsewhere: ci/unikernel-glue.sh)"
kernel=target/x86_64-unknown-linux-gnu/release/nohz-unikernel
cpus=4
failed=0
for policy in "${policies[@]}"; do
    log=$(mktemp)
    start=$(date +%s%N)
    set +e
    timeout 300 qemu-system-x86_64 \
        -accel tcg,thread=multi -smp "$cpus" -m 128M \
        -display none -serial stdio -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
        -kernel "$kernel" -append "cpus=$cpus policy=$policy" | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    ms=$((($(date +%s%N) - start) / 1000000))
    wall="$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    verdict=$(grep -ao "^RESULT $policy [A-Z]*" "$log" | tail -n1 || true)
    rm -f "$log"
    if [[ $status -eq 124 ]]; then
        echo "unikernel[$policy]: timed out after 300 s" >&2
        failed=1
    elif [[ $status -eq 1 && $verdict == "RESULT $policy PASS" ]]; then
        echo "unikernel[$policy]: PASS (qemu wall ${wall} s)"
    elif [[ -z $verdict ]]; then
        echo "unikernel[$policy]: no verdict (crash or triple fault; qemu status $status)" >&2
        failed=1
    else
        echo "unikernel[$policy]: FAIL (qemu status $status)" >&2
        failed=1
    fi
done
exit "$failed"
