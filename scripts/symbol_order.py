#!/usr/bin/env python3
"""Merge callgrind dumps into an lld symbol ordering file (scripts/symbol-order.sh runs it).

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the traced binary (callgrind's ob=)")
    ap.add_argument(
        "--symbols", required=True, help="its defined text symbols: NAME SIZE (hex) a line"
    )
    ap.add_argument("--out", required=True)
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
    def kib(names):
        return sum(sizes[n] for n in names) // 1024

    n_load = len(order) - n_startup - n_serving
    print(
        f"{len(order)} functions, {kib(order)} KiB: {n_startup} only while starting "
        f"({kib(order[:n_startup])} KiB), {n_serving} while serving "
        f"({kib(order[n_startup:n_startup + n_serving])} KiB), {n_load} more in the load "
        f"generator ({kib(order[n_startup + n_serving:])} KiB); {len(unknown)} traced names "
        "not among the binary's text symbols left out",
        file=sys.stderr,
    )

if __name__ == "__main__":
    main()
