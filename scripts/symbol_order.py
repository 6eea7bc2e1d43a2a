#!/usr/bin/env python3
"""Merge callgrind dumps into an lld symbol ordering file (scripts/release-ordered.sh runs it).

Each dump is one phase of one workload, given as PHASE:PATH: `startup:` a service's start
(dumped when it reported its address), `serving:` the rest of its life (serving, then the
drain), `run:` a whole process run (the load generator). The output lists, one mangled name a
line:

0. the C runtime's start-up code (`_start`, `frame_dummy`);
1. functions executed while a service started and never while one served (argument parsing,
   tracing setup, runtime construction): touched once, kept together so they take few pages;
2. functions executed while serving, service by service in the order the dumps are given (the
   proxy's first), each one's not yet listed ones by instruction count, hottest first;
3. the rest of the `run:` dumps (the load generator's own code), the same way.

Only functions of the traced binary (callgrind's `ob=`) that are defined text symbols of it
(`--symbols`, from `nm`) are written: what lld can find in its input sections.

With `--script-out`, also a linker script for the ThinLTO-promoted entries (`promoted_script`).
"""

import argparse
import collections
import os
import sys


def parse(path, binary):
    """{function name: self instruction count} for the binary's functions in one dump."""
    costs = collections.Counter()
    ob = fn = None
    in_binary = False
    skip_next_cost = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                ob = line[3:].strip()
                continue
            if line.startswith("fn="):
                fn = line[3:].strip()
                in_binary = os.path.basename(ob or "") == os.path.basename(binary)
                if in_binary:
                    costs[fn] += 0
                continue
            if line.startswith("calls="):
                # The next cost line is the call's inclusive cost, not the caller's own.
                skip_next_cost = True
                continue
            c = line[:1]
            if c.isdigit() or c in "+-*":
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                if in_binary and fn is not None:
                    parts = line.split()
                    if len(parts) >= 2 and parts[1].isdigit():
                        costs[fn] += int(parts[1])
    return costs


def promoted_script(order):
    """A linker script that puts the ThinLTO-promoted functions of `order` first in `.text`,
    just before the functions the ordering file places; None when there are none.

    ThinLTO renames a module-local function another module calls to `NAME.llvm.HASH`, HASH a
    hash of the defining module's bitcode. lld's ordering file matches whole names only, and
    that bitcode holds paths (the debug info's compilation directory), so a HASH can differ
    between the traced build and the one linked. Linker script patterns can leave HASH out:
    rustc puts each function in a section of its own, `.text.NAME.llvm.HASH`, matched here by
    `.text.NAME.llvm.*`. The script only names `.text`'s first input sections; `INSERT BEFORE
    .init` (where lld's default layout has `.text`) makes it an addition to that layout rather
    than a replacement, and lld adds every other `.text.*` section after them as usual, in the
    ordering file's order. One `.text` rather than an output section of its own: tools that
    only read symbols in `.text` (valgrind) still see them.
    """
    patterns = []
    for name in order:
        at = name.find(".llvm.")
        if at < 0:
            continue
        stem = name[: at + len(".llvm.")]
        # Mangled names carry no glob or script metacharacters; a name that does is no symbol.
        if any(c in stem for c in '*?[]\\"(){};: \t') or stem in patterns:
            continue
        patterns.append(stem)
    if not patterns:
        return None
    lines = ["/* Written by scripts/symbol_order.py: the ThinLTO-promoted functions. */",
             "SECTIONS", "{", "  .text :", "  {"]
    lines += [f"    *(.text.{stem}*)" for stem in patterns]
    lines += ["  }", "}", "INSERT BEFORE .init;"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the traced binary (callgrind's ob=)")
    ap.add_argument(
        "--symbols", required=True, help="its defined text symbols: NAME SIZE (hex) a line"
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--script-out", help="the linker script for ThinLTO-promoted names "
                    "(not written when there are none)")
    ap.add_argument("dumps", nargs="+", help="startup:PATH, serving:PATH or run:PATH")
    args = ap.parse_args()

    sizes = {}
    with open(args.symbols, encoding="utf-8") as f:
        for line in f:
            name, _, size = line.strip().partition(" ")
            if name:
                sizes[name] = int(size or "0", 16)
    defined = set(sizes)

    phases = {"startup": [], "serving": [], "run": []}
    for arg in args.dumps:
        phase, _, path = arg.partition(":")
        if phase not in phases or not path:
            ap.error(f"{arg}: expected startup:PATH, serving:PATH or run:PATH")
        phases[phase].append(parse(path, args.binary))

    served = set()
    for costs in phases["serving"]:
        served.update(costs)

    order, seen = [], set()
    # The C runtime's start-up code first: the entry point (crt1.o's `.text`) and the
    # constructor stub run before main (crtbegin.o's `.text`). callgrind records neither, and
    # they would otherwise land wherever the linker puts those objects: more regions touched.
    for name in ("_start", "frame_dummy"):
        if name in defined:
            order.append(name)
            seen.add(name)

    def add(costs):
        for name, _ in sorted(costs.items(), key=lambda kv: (-kv[1], kv[0])):
            if name not in seen and name in defined:
                seen.add(name)
                order.append(name)

    start_only = collections.Counter()
    for costs in phases["startup"]:
        start_only.update({k: v for k, v in costs.items() if k not in served})
    add(start_only)
    n_startup = len(order)
    for costs in phases["serving"]:
        add(costs)
    n_serving = len(order) - n_startup
    for costs in phases["run"]:
        add(costs)

    traced = set()
    for dumps in phases.values():
        for costs in dumps:
            traced.update(costs)
    unknown = sorted(n for n in traced if n not in defined)

    with open(args.out, "w", encoding="utf-8") as f:
        for name in order:
            f.write(name + "\n")
    script = promoted_script(order)
    if args.script_out and script:
        with open(args.script_out, "w", encoding="utf-8") as f:
            f.write(script)

    def kib(names):
        return sum(sizes[n] for n in names) // 1024

    n_load = len(order) - n_startup - n_serving
    print(
        f"{len(order)} functions, {kib(order)} KiB: {n_startup} only while starting "
        f"({kib(order[:n_startup])} KiB), {n_serving} while serving "
        f"({kib(order[n_startup:n_startup + n_serving])} KiB), {n_load} more in the load "
        f"generator ({kib(order[n_startup + n_serving:])} KiB); {len(unknown)} traced names "
        "not among the binary's text symbols left out; "
        f"{script.count('*(.text.') if script else 0} ThinLTO-promoted name patterns",
        file=sys.stderr,
    )

if __name__ == "__main__":
    main()
