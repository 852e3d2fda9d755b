#!/usr/bin/env bash
# Proof that the library is freestanding: build (not run) a #![no_std] #![no_main] binary
# that links it and uses its statics, and check that no `std` feature is on in its tree.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(cargo tree -p nohz -e normal,features)
printf '%s\n' "$tree"
if grep -q 'feature "std"' <<<"$tree"; then
    echo "error: the library's normal dependency tree enables a std feature" >&2
    exit 1
fi
# Release only: a debug build would also need the kernel's memcpy & co.
(cd ci/freestanding && cargo build --release)
echo "freestanding: ci/freestanding linked without std"
