#!/usr/bin/env python3
"""How many of the library's lines a kernel that vendors it compiles.

Counts the lines of src/**/*.rs (all of them, and the code lines: blank lines and comments
aside) twice: the whole library, and what a vendoring build compiles: no cargo feature (so neither `sharded` nor `testing`), no
`test`, `doctest` or crate cfg (`nohz_loom`, `nohz_probe`, `nohz_linecount`). An item (or a
whole `mod` file) behind a `#[cfg(..)]` that such a build does not satisfy is left out; its
attributes, doc comments and body with it. Prints both counts, then the lines of src/beyond/
(the policies beyond the kernel) that the vendoring build compiles: 0 without a feature.

usage: ci/vendor-lines.py [features...]   (the features a vendor turns on; default none)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"


def with_implied(features: set) -> set:
    """The features turned on, with those they turn on in Cargo.toml's [features]."""
    toml = (ROOT.parent / "Cargo.toml").read_text()
    table = toml.split("[features]", 1)[1].split("\n[", 1)[0]
    implies = {
        m.group(1): re.findall(r'"([^"/]+)"', m.group(2))
        for m in re.finditer(r"^(\w+)\s*=\s*\[([^\]]*)\]", table, re.M)
    }
    out, todo = set(), list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo.extend(implies.get(f, []))
    return out


FEATURES = with_implied(set(sys.argv[1:]))
CFG_OFF = {"test", "doctest", "nohz_loom", "nohz_probe", "nohz_linecount", "miri"}


def holds(pred: str) -> bool:
    """Evaluates a cfg predicate for the vendoring build."""
    pred = pred.strip()
    m = re.fullmatch(r"(all|any|not)\((.*)\)", pred, re.S)
    if m:
        args = split_args(m.group(2))
        if m.group(1) == "all":
            return all(holds(a) for a in args)
        if m.group(1) == "any":
            return any(holds(a) for a in args)
        return not holds(args[0])
    m = re.fullmatch(r'feature\s*=\s*"([^"]+)"', pred)
    if m:
        return m.group(1) in FEATURES
    m = re.fullmatch(r'target_has_atomic\s*=\s*"[^"]+"', pred)
    if m:
        return True
    return pred not in CFG_OFF and not pred.startswith("nohz_")


def split_args(s: str) -> list:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def is_code(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("//")


def strip_strings(line: str) -> str:
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//")[0]


def compiled_lines(path: pathlib.Path) -> tuple:
    lines = path.read_text().rstrip("\n").split("\n")
    total = (sum(is_code(l) for l in lines), len(lines))
    kept, phys, i, mods_off = 0, 0, 0, set()
    while i < len(lines):
        s = lines[i].strip()
        m = re.match(r"#!?\[cfg\((.*)\)\]$", s)
        if m and not holds(m.group(1)) and not s.startswith("#!"):
            # Skip the item: further attributes and docs, then to the end of its braces or `;`.
            j = i + 1
            while j < len(lines) and (lines[j].strip().startswith(("#[", "///", "//")) or not lines[j].strip()):
                j += 1
            mm = re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;", lines[j]) if j < len(lines) else None
            if mm:
                mods_off.add(mm.group(3))
            depth, started = 0, False
            while j < len(lines):
                t = strip_strings(lines[j])
                depth += t.count("{") - t.count("}")
                started = started or "{" in t
                if (started and depth <= 0) or (not started and t.rstrip().endswith(";")):
                    break
                j += 1
            i = j + 1
            continue
        if m and s.startswith("#!") and not holds(m.group(1)):
            return total, (0, 0), mods_off
        kept += is_code(lines[i])
        phys += 1
        i += 1
    return total, (kept, phys), mods_off


def main() -> None:
    total = [0, 0]
    kept = [0, 0]
    off_files = set()
    files = sorted(ROOT.rglob("*.rs"))
    results = {}
    for f in files:
        t, k, mods = compiled_lines(f)
        results[f] = (t, k)
        for m in mods:
            for cand in (f.parent / f"{m}.rs", f.parent / m / "mod.rs"):
                off_files.add(cand)
            if f.name in ("mod.rs", "lib.rs"):
                off_files.update((f.parent / m).rglob("*.rs"))
            else:
                off_files.update((f.parent / f.stem / m).rglob("*.rs"))
                off_files.add(f.parent / f.stem / f"{m}.rs")
    beyond = [0, 0]
    for f, (t, k) in results.items():
        total = [a + b for a, b in zip(total, t)]
        if f not in off_files:
            kept = [a + b for a, b in zip(kept, k)]
            if (ROOT / "beyond") in f.parents:
                beyond = [a + b for a, b in zip(beyond, k)]
    feats = ", ".join(sorted(FEATURES)) or "none"
    print(
        f"library: {total[1]} lines ({total[0]} of code); a vendoring build (features: {feats}) "
        f"compiles {kept[1]} ({kept[0]} of code), {beyond[1]} of them in src/beyond/ "
        f"({beyond[0]} of code)"
    )


main()
