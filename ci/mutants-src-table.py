#!/usr/bin/env python3
"""The survivors table of ci/mutants-src.sh.

  mutants-src-table.py unlisted OUTCOMES TABLE
      one anchored regex (cargo-mutants --re) per stage-1 survivor the table does not list
  mutants-src-table.py check OUTCOMES TABLE full|diff STAGE2_OUTCOMES|-
      the counts, every survivor of both stages explained or not; exits 1 on an unexplained
      survivor and, after a full run, on a listed mutant that no longer survives

A survivor is a mutant cargo-mutants reports missed or timed out. The table's lines are
`KEY ==> reason`, KEY being the mutant's file and description without its line and column
(positions move with every edit above them; the mutation and its function do not).
"""

import collections
import json
import sys

# The characters the regex crate treats as syntax (what its `regex::escape` escapes).
META = set("\\.+*?()|[]{}^$#&-~")


def escape(text):
    return "".join("\\" + c if c in META else c for c in text)


def key(mutant):
    # "src/x.rs:12:5: replace a with b in f" -> "src/x.rs: replace a with b in f"
    return f"{mutant['file']}: {mutant['name'].split(': ', 1)[1]}"


def outcomes(path):
    """(mutant, summary) of every mutant in a cargo-mutants outcomes.json."""
    for o in json.load(open(path))["outcomes"]:
        scenario = o["scenario"]
        if isinstance(scenario, dict):  # not the baseline
            yield scenario["Mutant"], o["summary"]


def survived(summary):
    return summary in ("MissedMutant", "Timeout")


def table(path):
    listed, reasons = collections.Counter(), {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        k, _, reason = line.partition(" ==> ")
        listed[k] += 1
        reasons[k] = reason
    return listed, reasons


def unlisted(outcomes_path, table_path):
    listed, _ = table(table_path)
    for m, summary in outcomes(outcomes_path):
        if survived(summary) and key(m) not in listed:
            print("^" + escape(m["name"]) + "$")


def check(outcomes_path, table_path, mode, stage2_path):
    listed, reasons = table(table_path)
    killed_later = set()
    if stage2_path != "-":
        killed_later = {m["name"] for m, s in outcomes(stage2_path) if s == "CaughtMutant"}
    totals = collections.Counter()
    survivors = collections.Counter()
    for m, summary in outcomes(outcomes_path):
        if survived(summary) and m["name"] in killed_later:
            summary = "CaughtMutant (stage 2)"
        totals[summary] += 1
        if survived(summary):
            survivors[key(m)] += 1
    print(
        f"mutants-src: {sum(totals.values())} mutants: "
        + ", ".join(f"{n} {s}" for s, n in sorted(totals.items()))
    )
    unexplained = survivors - listed
    for k in sorted(survivors):
        if k in listed:
            print(f"  explained   {k}  -- {reasons[k]}")
    for k, n in sorted(unexplained.items()):
        print(f"  UNEXPLAINED {k}" + (f" (x{n})" if n > 1 else ""))
    stale = listed - survivors if mode == "full" else collections.Counter()
    for k in sorted(stale):
        print(f"  STALE       {k}  (listed, but killed now: remove it from the table)")
    if unexplained or stale:
        sys.exit(1)
    print("mutants-src: every survivor is explained")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "unlisted":
        unlisted(*sys.argv[2:4])
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        check(*sys.argv[2:6])
    else:
        sys.exit(__doc__)
