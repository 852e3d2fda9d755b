#!/usr/bin/env python3
"""The table of `ci/paced-loads.sh`: Paced's ratios to Patched on the seeds' closed loads, from
OUT/<load>-patched.json and OUT/<load>-paced.json (`nohz-stress --json` reports, the same
seeds under both policies).

    python3 ci/paced-loads-table.py OUT LOAD...

Each ratio is the geometric mean of the per-seed ratios, with a 95 % interval from Student's t
on their logarithms (`paired_fields` of `ci/frontier-table.py`). Throughput is each load's own
count of work done a second (higher is better); the others are better lower.
"""

import importlib.util
import json
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("frontier_table", os.path.join(here, "frontier-table.py"))
ft = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ft)

# (column, JSON field)
COLUMNS = [
    ("throughput", "throughput"),
    ("idle while waiting", "idle_while_waiting_ms_per_s"),
    ("wait p99", "runnable_wait_us_p99"),
    ("busy", "busy_pct"),
    ("ILB time", "ilb_cpu_ms_per_s"),
]


def load(out, name):
    by = {}
    for policy in ("patched", "paced"):
        for r in json.load(open(f"{out}/{name}-{policy}.json"))["runs"]:
            by.setdefault(policy, {})[r["seed"]] = r
    return by


def main():
    out, loads = sys.argv[1], sys.argv[2:]
    print("## Paced over Patched on the seeds' closed loads (paired by seed; 95 % intervals)\n")
    head = " | ".join(c for c, _ in COLUMNS)
    print(f"| load | seeds | patched throughput (median) | {head} |")
    print("|---|---:|---:|" + "---|" * len(COLUMNS))
    for name in loads:
        by = load(out, name)
        seeds = len(by["paced"])
        base = statistics.median(r["throughput"] for r in by["patched"].values())
        cells = []
        for _, field in COLUMNS:
            g, lo, hi = ft.paired_fields(by, "paced", field, "patched", field)
            cells.append(f"{g:.3f} ({lo:.3f}..{hi:.3f})" if g == g else "n/a")
        print(f"| {name} | {seeds} | {base:.4g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
