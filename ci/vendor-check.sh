#!/usr/bin/env bash
# Vendoring as the README's "Vendoring" section says, from this checkout's working tree (so
# uncommitted edits count), in a fresh kernel workspace in a temporary directory:
#   1. copy `Cargo.toml`, `README.md` and `src/` to vendor/nohz, and write the kernel's
#      Cargo.toml: a package, the section's toml block (read from the copy's README) and
#      panic = "abort";
#   2. build the kernel, ci/freestanding's #![no_std] #![no_main] binary, in release: for
#      x86_64-unknown-none if that target is installed, else for the host as
#      ci/freestanding.sh does (no C start files, ci/freestanding/build.rs); check that the
#      crate's dependencies are the three the section names and that no std feature is on;
#   3. run the README's quick start (its rust block, read from the copy's README) as a host
#      program against the copy, as `cargo test --doc` runs it in this repository;
#   4. build the copy with plain rustc, as the section's last paragraph says: the three
#      dependencies (their sources from cargo's registry, their editions from `cargo metadata`,
#      which must show no feature on: the README passes no `--cfg`), the crate with the
#      README's command line, then the kernel against it.
# Making a lock file asks crates.io for the index; offline, cargo's cache answers instead.
# The last line says what was built. usage: ci/vendor-check.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kernel=$tmp/kernel
copy=$kernel/vendor/nohz
fail() {
    echo "vendor-check: error: $*" >&2
    exit 1
}
# The first ```$1 block of README section "## $2", hidden doc-test lines ("# ...") shown.
block() {
    awk -v lang="$1" -v sec="## $2" '
        /^## / { in_sec = ($0 == sec) }
        in_sec && !on && $0 == "```" lang { on = 1; next }
        on && /^```$/ { exit }
        on { sub(/^# ?$/, ""); sub(/^# /, ""); print }
    ' "$copy/README.md"
}
# A lock file for the package in $1, from crates.io's index or, failing that, cargo's cache.
lock() {
    (cd "$1" && {
        cargo generate-lockfile --quiet 2>/dev/null ||
            cargo generate-lockfile --quiet --offline
    })
}

# (Outputs are read whole before grep sees them: under pipefail, a grep -q that stops early
# fails its pipeline.)
installed=$(rustup target list --installed 2>/dev/null || true)
if grep -qx x86_64-unknown-none <<<"$installed"; then
    target=x86_64-unknown-none
else
    target=$(rustc -vV | sed -n 's/^host: //p')
fi

# 1. The copy and the kernel's Cargo.toml.
mkdir -p "$copy" "$kernel/src"
(cd "$root" && cp -R Cargo.toml README.md src "$copy/")
lines=$(block toml Vendoring)
[[ -n $lines ]] || fail "README.md: no toml block in its Vendoring section"
# The kernel is a workspace, the case the crate's own workspace root trips: the README's
# `[workspace]` table is its table, and without one it gets an empty one.
grep -qx '\[workspace\]' <<<"$lines" || lines+=$'\n\n[workspace]'
cp "$root/ci/freestanding/src/main.rs" "$kernel/src/main.rs"
cp "$root/ci/freestanding/build.rs" "$kernel/build.rs"
cat >"$kernel/Cargo.toml" <<TOML
[package]
name = "kernel"
version = "0.0.0"
edition = "2024"
publish = false

$lines

[profile.dev]
panic = "abort"

[profile.release]
panic = "abort"
TOML

# 2. The kernel, with no std.
kernel_failed="the kernel did not build against vendor/nohz with the README's Cargo.toml lines"
lock "$kernel" || fail "$kernel_failed"
(cd "$kernel" && cargo build --quiet --release --target "$target") || fail "$kernel_failed"
deps=$(cd "$kernel" && cargo tree -p nohz -e normal --prefix none --target "$target" |
    awk '$1 != "nohz" { print $1 }' | sort -u | paste -sd' ')
[[ $deps == "bitflags crossbeam-utils static_assertions" ]] ||
    fail "nohz depends on '$deps', not on the three the README names"
tree=$(cd "$kernel" && cargo tree -e features --target "$target")
if grep -q 'feature "std"' <<<"$tree"; then
    fail "the kernel's dependency tree turns a std feature on"
fi
echo "vendor-check: kernel built for $target against vendor/nohz (dependencies: $deps)"

# 3. The quick start, on the host, against the copy.
quick=$tmp/quickstart
mkdir -p "$quick/src"
cat >"$quick/Cargo.toml" <<'TOML'
[package]
name = "quickstart"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
nohz = { path = "../kernel/vendor/nohz" }
TOML
body=$(block rust "Quick start")
[[ -n $body ]] || fail "README.md: no rust block in its Quick start section"
if grep -q '^fn main' <<<"$body"; then
    printf '%s\n' "$body" >"$quick/src/main.rs"
else
    # As rustdoc runs a doc test: the block is main's body.
    printf '#![allow(unused)]\nfn main() {\n%s\n}\n' "$body" >"$quick/src/main.rs"
fi
lock "$quick" || fail "no lock file for the quick start"
(cd "$quick" && cargo run --quiet) || fail "the README's quick start failed against vendor/nohz"
echo "vendor-check: the README's quick start passed against vendor/nohz"

# 4. Plain rustc: the dependencies, the crate by the README's command, the kernel.
nohz_rustc="rustc --edition 2024 --crate-type rlib --crate-name nohz src/lib.rs"
grep -qF "\`$nohz_rustc\`" "$copy/README.md" || fail "README.md no longer says \`$nohz_rustc\`"
out=$tmp/rustc
mkdir -p "$out"
# One line per dependency of nohz: crate name, edition, lib source.
(cd "$kernel" && cargo metadata --quiet --format-version 1 --filter-platform "$target") |
    python3 -c '
import json, sys
meta = json.load(sys.stdin)
pkgs = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
nohz = next(i for i, p in pkgs.items() if p["name"] == "nohz")
for dep in nodes[nohz]["deps"]:
    name, node = pkgs[dep["pkg"]]["name"], nodes[dep["pkg"]]
    if node["deps"]:
        sys.exit(f"vendor-check: error: {name} has dependencies of its own")
    if node["features"]:
        on = ", ".join(node["features"])
        sys.exit(f"vendor-check: error: {name} has features on ({on}); the README passes none")
    lib = next(t for t in pkgs[dep["pkg"]]["targets"] if "lib" in t["kind"])
    print(dep["name"], lib["edition"], lib["src_path"])
' >"$out/deps"
externs=()
while read -r name edition src; do
    rustc --crate-name "$name" --edition "$edition" --crate-type rlib -O \
        --cap-lints allow --target "$target" --out-dir "$out" "$src"
    externs+=(--extern "$name=$out/lib$name.rlib")
done <"$out/deps"
(cd "$copy" && $nohz_rustc -O --target "$target" --out-dir "$out" "${externs[@]}") ||
    fail "plain rustc did not build vendor/nohz"
nostart=()
[[ $target == *-linux-* ]] && nostart=(-C link-arg=-nostartfiles)
rustc --edition 2024 --crate-type bin --crate-name kernel -O -C panic=abort "${nostart[@]}" \
    --target "$target" --out-dir "$out" -L "dependency=$out" --extern "nohz=$out/libnohz.rlib" \
    "$kernel/src/main.rs" || fail "plain rustc did not link the kernel against vendor/nohz"
echo "vendor-check: vendor/nohz (Cargo.toml, README.md, src/) built with no std for $target" \
    "by cargo and by plain rustc, with $deps; the README's quick start passed against it"
