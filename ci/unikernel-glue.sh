#!/usr/bin/env bash
# The unikernel's glue, counted as the lean-core issue counts it: every line the unikernel
# writes to embed the crate, comments and blank lines aside: the platform impls
# (unikernel/src/platform.rs) and every line of unikernel/src that names the machine (`k.0.`,
# `m.`), an item of the crate (`nohz::`) or a crate type (`CpuId`).
set -euo pipefail
cd "$(dirname "$0")/../unikernel"
impls=$(awk '/^impl/ { f = 1 } f && !/^[[:space:]]*(\/\/|$)/ { n++ } f && /^}/ { f = 0 } END { print n + 0 }' src/platform.rs)
calls=$(grep -rhE '(\bk\.0\.|\bm\.[a-z_]+\(|nohz::|CpuId)' src --include=*.rs | grep -vE '^\s*//' | grep -v '^use ' | wc -l)
echo $((impls + calls))
