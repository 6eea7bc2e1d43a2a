#!/usr/bin/env python3
"""Prints the figures of docs/build.md's "Test build and run time" from the raw logs here:
per test executable its wall time (libtest's `finished in`), the totals of the `test result:`
lines, the number of executables, and the `--no-run` build's wall time and unit times (from
Cargo's --timings report). Run from anywhere: bench/results/test-times-2026-11-28/summary.py
"""

import glob
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def results(*logs):
    rows, tot = [], {"passed": 0, "failed": 0, "ignored": 0}
    for log in logs:
        name = None
        for line in (HERE / log).read_text().splitlines():
            m = re.search(r"Running (.+?)(?: \(target/debug/deps/(\S+)\))?$|Doc-tests (\S+)", line)
            if m:
                if m.group(3):
                    name = "doc-tests " + m.group(3)
                else:
                    name = f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1)
                continue
            m = re.search(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored.*finished in ([\d.]+)s", line)
            if m:
                rows.append((name, m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(5))))
                for k, i in (("passed", 2), ("failed", 3), ("ignored", 4)):
                    tot[k] += int(m.group(i))
    return rows, tot


def wall(*logs):
    """The sum of the WALL lines: a cargo test run's, and those of executables run after it."""
    return sum(
        float(line.split()[-1])
        for log in logs
        for line in (HERE / log).read_text().splitlines()
        if line.split()[:1] == ["WALL"] or line.split()[1:2] == ["WALL"]
    )


def timings(pattern):
    html = (HERE / sorted(glob.glob(str(HERE / pattern)))[-1]).read_text()
    units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S).group(1))
    return units


for label, logs, walls in (
    ("before", ("before-test.log", "before-rest.log"), ("before-test.log", "before-rest.log")),
    ("after", ("after-test.log",), ("after-test.log",)),
):
    rows, tot = results(*logs)
    print(f"## {label}")
    for r in rows:
        print(f"  {r[5]:8.2f} s  {r[2]:4d} passed {r[3]} failed {r[4]} ignored  {r[0]}")
    exes = sum(1 for r in rows if not str(r[0]).startswith("doc-tests"))
    print(f"  test executables run: {exes}; tests: {tot} = {sum(tot.values())}")
    print(f"  cargo test wall time: {wall(*walls):.1f} s ({' + '.join(walls)})")
    units = timings(f"{label}-cargo-timing*.html")
    span = max(u["start"] + u["duration"] for u in units)
    print(f"  --no-run build: {span:.0f} s wall (--timings), {sum(u['duration'] for u in units):.0f} s of units")
    for u in sorted(units, key=lambda u: -u["duration"])[:5]:
        print(f"     {u['duration']:6.1f} s  {u['name']} {u.get('target', '')}")
