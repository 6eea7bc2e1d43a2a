#!/usr/bin/env python3
"""Prints the figures of docs/build.md's "The machine lock's order" from the raw logs here: the
cli integration-test binary run with libtest's --report-time before and after the tests that
take the machine alone moved into the `alone` module (which runs first): the binary's wall time
(`finished in`), the sum of its tests' times, and the four machine-alone tests' times, which
include their wait for the lock. Run from anywhere:
bench/results/test-times-2026-11-29/summary.py
"""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALONE = [
    "find_max_finds_the_limit_of_a_delayed_echo",
    "cost_measures_what_an_intermediary_adds",
    "a_capacity_column_runs_end_to_end_on_the_echo",
    "a_cost_cell_measures_the_proxy_in_front_of_the_echo",
]


def read(name):
    text = (HERE / name).read_text()
    tests = {}
    for m in re.finditer(r"^test (\S+) \.\.\. \w+ <([\d.]+)s>", text, re.M):
        tests[m.group(1)] = float(m.group(2))
    wall = float(re.search(r"finished in ([\d.]+)s", text).group(1))
    return wall, tests


def main():
    print("| | before | after |")
    print("|---|---:|---:|")
    b_wall, b = read("cli-it-before.log")
    a_wall, a = read("cli-it-after.log")
    print(f"| cli `it` wall (`finished in`) | {b_wall:.0f} s | {a_wall:.0f} s |")
    print(f"| sum of its tests' times | {sum(b.values()):.0f} s | {sum(a.values()):.0f} s |")
    for t in ALONE:
        bt = next(v for k, v in b.items() if k.endswith("::" + t))
        at = next(v for k, v in a.items() if k.endswith("::" + t))
        print(f"| `{t}` (with its wait for the lock) | {bt:.1f} s | {at:.1f} s |")

    # The README's test command from a fresh clone of the session's last commit (CI unset):
    # `cargo test --workspace --no-run`, then `cargo test --workspace`, each timed by the shell.
    wall = (HERE / "fresh-clone-wall.txt").read_text().split()
    print()
    print(f"Fresh clone: test build {wall[1]} s, tests {wall[4]} s, together {wall[7]} s")
    text = (HERE / "fresh-clone-test.log").read_text()
    runs = re.findall(r"Running (.+?) \(target/debug/deps/([\w-]+)\)|finished in ([\d.]+)s", text)
    # An integration-test binary is named `it` in every crate: it is the crate whose unit
    # tests ran just before it.
    name, crate = None, None
    for running, exe, secs in runs:
        if running:
            base = exe.rsplit("-", 1)[0]
            if base != "it":
                crate = base
            name = f"{crate} {'integration' if base == 'it' else 'unit'} tests"
        elif name and float(secs) >= 5:
            print(f"- {name}: {float(secs):.0f} s")


main()
