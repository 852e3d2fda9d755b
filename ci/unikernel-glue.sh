#!/usr/bin/env bash
# The unikernel's glue, counted as the lean-core issue counts it: every line the unikernel
# writes to embed the crate: all of unikernel/src/platform.rs (the platform: every trait impl
# and the state only they use) and unikernel/src/glue.rs (every call into the crate), comments,
# blank lines and `use` lines aside. The unikernel keeps its embedding in those two files; its
# scenario's checks (checks.rs) only read the crate's state to judge the run.
set -euo pipefail
cd "$(dirname "$0")/../unikernel/src"
awk '
    /^[[:space:]]*(\/\/|$)/ { next }
    /^use / { skip = !/;[[:space:]]*$/; next }
    skip { skip = !/;[[:space:]]*$/; next }
    { n++ }
    END { print n + 0 }
' platform.rs glue.rs
