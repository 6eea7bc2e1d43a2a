#!/usr/bin/env python3
"""Prints the figures of docs/build.md's "Debug information" measurement from the raw files
here: each build's wall time (wall.txt), the sum of Cargo's unit times and the longest units
(the --timings reports), and the size of target/debug (target-sizes.tsv).
Run from anywhere: bench/results/test-times-2026-11-28b/summary.py"""

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def units(name):
    text = (HERE / f"{name}-cargo-timing.html").read_text()
    data = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", text, re.S).group(1))
    return sorted(data, key=lambda u: -u["duration"])


def main():
    wall = {}
    for line in (HERE / "wall.txt").read_text().splitlines():
        m = re.match(r"(\w+) rc=0 wall=(\d+)s", line)
        wall[m.group(1)] = int(m.group(2))
    size = dict(l.split("\t") for l in (HERE / "target-sizes.tsv").read_text().splitlines())
    print("| | before (acfc9e0) | after (line tables; dependencies without debug information) |")
    print("|---|---|---|")
    print(f"| `cargo test --workspace --no-run --timings`, empty target dir, both at once, wall "
          f"| {wall['before'] // 60} min {wall['before'] % 60} s | {wall['after'] // 60} min {wall['after'] % 60} s |")
    b, a = units("before"), units("after")
    print(f"| the same, sum of unit times | {sum(u['duration'] for u in b):,.0f} s "
          f"| {sum(u['duration'] for u in a):,.0f} s |")
    print(f"| size of `target/debug` | {int(size['before']) / 2**30:.1f} GiB "
          f"| {int(size['after']) / 2**30:.1f} GiB |")
    def top(us):
        return ", ".join(f"{u['name']}{' ' + u['target'].strip() if u['target'].strip() else ''} {u['duration']:.0f} s" for u in us[:4])
    print(f"| longest units | {top(b)} | {top(a)} |")


main()
