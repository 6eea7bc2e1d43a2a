#!/usr/bin/env python3
"""Prints the import loops between the modules of each crate and exits 1 when there is any.

A module is one source file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`); it imports another
when its non-test code (the lines before its first `#[cfg(test)]`) names it in a `use` or a
path (`crate::a::b::Item`, `super::Item`); a name of the crate root is taken where `lib.rs`
re-exports it from. A loop is an elementary cycle of that graph. A submodule and its parent
that use each other are not a loop (that is how a parent and its children share items), but a
submodule counts as its parent in any longer cycle through the parent.

Usage: scripts/import-loops.py [CRATE_DIR ...]   (default: every crate under crates/)
"""

import re
import sys
from pathlib import Path

USE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    mods = {}
    for f in sorted(src.rglob("*.rs")):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "mod":
            parts.pop()
        if parts in (["lib"], ["main"]):
            parts = []
        mods[tuple(parts)] = f
    return mods


def code(f):
    """The file's non-test code without comments."""
    text = f.read_text()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def expand(tree):
    """`a::{b, c::{d, self}}` -> ['a::b', 'a::c::d', 'a::c']."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"::self$|::\*$", "", re.sub(r"as\w+$", "", tree))]
    prefix, inner = tree[:brace].rstrip(":"), tree[brace + 1 : tree.rfind("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for item in filter(None, items):
        if item in ("self", "*"):
            out.append(prefix)
        else:
            out.extend(prefix + "::" + e for e in expand(item))
    return out


def resolve(path, here, mods, reexports):
    """The module a path names, or None."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, segs = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = here
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        return None
    full = base + tuple(segs)
    for n in range(len(full), len(base) - 1, -1):
        if full[:n] in mods and (n > 0 or not segs):
            if n == 0:
                return ()
            return full[:n]
    if not base and segs and segs[0] in reexports:
        return reexports[segs[0]]
    return None


def graph(src):
    mods = modules(src)
    reexports = {}
    if () in mods:
        for tree in USE.findall(code(mods[()])):
            for p in expand(tree):
                segs = p.split("::")
                if segs[0] == "crate" and len(segs) > 2 and tuple(segs[1:-1]) in mods:
                    reexports[segs[-1]] = tuple(segs[1:-1])
    edges = {m: set() for m in mods if m != ()}
    for m in edges:
        text = code(mods[m])
        paths = [p for t in USE.findall(text) for p in expand(t)]
        text = USE.sub("", text)
        paths += [a + b for a, b in PATH.findall(text)]
        for p in paths:
            t = resolve(p, m, mods, reexports)
            if t and t != m and t in edges:
                edges[m].add(t)
    return edges


def related(a, b):
    return a[: len(b)] == b or b[: len(a)] == a


def cycles(edges):
    """Elementary cycles (each once, starting at its smallest module), parent-child pairs aside."""
    order = sorted(edges)
    rank = {m: i for i, m in enumerate(order)}
    found = []
    for start in order:
        stack = [(start, iter(sorted(edges[start])))]
        path = [start]
        on = {start}
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on.discard(path.pop())
                continue
            if rank[nxt] < rank[start]:
                continue
            if nxt == start:
                if not (len(path) == 2 and related(path[0], path[1])):
                    found.append(list(path))
            elif nxt not in on:
                path.append(nxt)
                on.add(nxt)
                stack.append((nxt, iter(sorted(edges[nxt]))))
    return found


def main():
    root = Path(__file__).resolve().parent.parent
    crates = sys.argv[1:] or sorted(str(p) for p in Path("crates").iterdir() if (p / "src").is_dir())
    total = 0
    for c in crates:
        found = cycles(graph(root / c / "src"))
        total += len(found)
        print(f"{c}: {len(found)} import loop{'s' if len(found) != 1 else ''}")
        name = lambda m: "::".join(m)
        for cyc in sorted(found, key=len)[:40]:
            print("  " + " -> ".join(name(m) for m in cyc + cyc[:1]))
        if len(found) > 40:
            print(f"  … and {len(found) - 40} more")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
