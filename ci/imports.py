#!/usr/bin/env python3
"""The import graph between the library's rooms (the top-level modules of src/), and its
circles.

A room imports another when one of its files has a `use crate::..` declaration that names it
(directly, or through a re-export at the crate root: `crate::sync` is `base`'s, `crate::Policy`
is `policy`'s), outside `#[cfg(test)]` modules. Prints every edge and every circle, and fails
(exit 1) if there is a circle, or if the kernel's rooms (and those below them) import `beyond`:
imports run one way, `beyond` uses `fair`, never the reverse (HACKING.md, "Layout").

Paths written inline in code (not imported) are listed apart, as a note: today one,
`base::jiffies` calling `crate::platform::tick_nsec`.

usage: ci/imports.py [-v]   (-v: also print each edge's first file)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"
# Rooms that must not import `beyond`: the kernel paths and everything they stand on.
NOT_BEYOND = {"base", "platform", "policy", "fair", "sched_core", "tick_sched", "idle", "irqtime"}


def without_tests(text: str) -> str:
    """The text without `#[cfg(test)]` / `#[cfg(all(test, ..))]` items (braces counted)."""
    out, rest = [], text
    while True:
        hits = [i for i in (rest.find("#[cfg(test)]"), rest.find("#[cfg(all(test")) if i >= 0]
        if not hits:
            out.append(rest)
            return "".join(out)
        at = min(hits)
        out.append(rest[:at])
        after = rest[at:]
        brace, semi = after.find("{"), after.find(";")
        if brace < 0 or 0 <= semi < brace:
            rest = after[semi + 1:]
            continue
        depth = 0
        for i, ch in enumerate(after[brace:]):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0:
                rest = after[brace + i + 1:]
                break
        else:
            return "".join(out)


def code_of(text: str) -> str:
    """The text without comments, string literals and character literals (one pass, so a
    quote in a comment or `//` in a string cannot confuse it)."""
    out, i, n = [], 0, len(text)
    while i < n:
        two = text[i:i + 2]
        if two == "//":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif two == "/*":
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif text[i] == '"' or re.match(r'r#*"', text[i:i + 8]):
            raw = re.match(r'r(#*)"', text[i:i + 8])
            if raw:
                end = '"' + raw.group(1)
                i = text.find(end, i + len(raw.group(0)))
                i = n if i < 0 else i + len(end)
            else:
                i += 1
                while i < n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                i += 1
            out.append('""')
        elif re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12]).group(0))
            out.append("' '")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def room_of(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".rs") if len(rel.parts) > 1 or rel.name != "lib.rs" else "lib"


def root_aliases() -> dict:
    """Names the crate root re-exports or defines, and the room each comes from."""
    lib = code_of(without_tests((ROOT / "lib.rs").read_text()))
    rooms = {room_of(p) for p in ROOT.rglob("*.rs")} - {"lib"}
    aliases = {r: r for r in rooms}
    for m in re.finditer(r"\buse\s+([a-z_]+)::([^;]+);", lib):
        room = m.group(1)
        if room not in rooms:
            continue
        for name in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*::)", m.group(2)):
            if name not in ("self", "as"):
                aliases.setdefault(name, room)
    # Macros exported at the root, by the room that defines them.
    for p in ROOT.rglob("*.rs"):
        for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(\w+)", p.read_text()):
            aliases[m.group(1)] = room_of(p)
    return aliases


def use_trees(code: str):
    """Every `use crate::..;` declaration's tree, as the text after `crate::`."""
    for m in re.finditer(r"\buse\s+crate::([^;]+);", code):
        yield m.group(1)


def first_segments(tree: str):
    """The first path segment of each path in a use tree (`{a::b, c}` gives a and c)."""
    tree = tree.strip()
    if tree.startswith("{"):
        depth, cur, parts = 0, "", []
        for ch in tree[1:-1]:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            cur += ch
        parts.append(cur)
        for p in parts:
            yield from first_segments(p)
    elif tree:
        yield re.split(r"::|\s", tree, maxsplit=1)[0]


def main() -> int:
    verbose = "-v" in sys.argv
    aliases = root_aliases()
    edges, inline = {}, {}
    for path in sorted(ROOT.rglob("*.rs")):
        src = room_of(path)
        code = code_of(without_tests(path.read_text()))
        for tree in use_trees(code):
            for seg in first_segments(tree):
                dst = aliases.get(seg)
                if dst and dst != src and src != "lib":
                    edges.setdefault((src, dst), path.relative_to(ROOT.parent))
        for m in re.finditer(r"\bcrate::([A-Za-z_]\w*)", re.sub(r"\buse\s+[^;]+;", "", code)):
            dst = aliases.get(m.group(1))
            if dst and dst != src and src != "lib":
                inline.setdefault((src, dst), path.relative_to(ROOT.parent))
    graph = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    cycles = set()

    def walk(start, node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                cycles.add(tuple(path))
            elif nxt > start and nxt not in path:
                walk(start, nxt, path + [nxt])

    for room in sorted(graph):
        walk(room, room, [room])
    for (a, b), f in sorted(edges.items()):
        print(f"imports: {a} -> {b}" + (f" ({f})" if verbose else ""))
    for c in sorted(cycles):
        print("imports: circle " + " -> ".join(c + (c[0],)))
    bad = sorted((a, b) for (a, b) in edges if b == "beyond" and a in NOT_BEYOND)
    for a, b in bad:
        print(f"imports: {a} imports beyond ({edges[(a, b)]}): beyond uses fair, never the reverse")
    for (a, b), f in sorted(inline.items()):
        if (a, b) not in edges and a in graph.get(b, ()):
            print(f"imports: note: {a} names {b} inline in code, not by an import ({f}), and {b} imports {a}")
    print(f"imports: {len(cycles)} circles between the library's rooms (target 0)")
    return 1 if cycles or bad else 0


sys.exit(main())
