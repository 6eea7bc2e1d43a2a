#!/usr/bin/env python3
"""The summary of a bench/history-scale.sh run, printed from its raw rows (NAME.tsv).

Per store (SQLite, PostgreSQL): the `history add` of the last version (every other version
already stored) and the slowest add, `history changes` over the whole series, `history report`,
`history gate` of the last version, and the database's size; against issue 22's targets (add
≤ 2 s, changes ≤ 10 s, report ≤ 30 s, database ≤ 200 MB). bench/figures.py --check runs this
again and compares with the committed NAME.md.

    bench/history_scale_summary.py bench/results/history-scale-DATE.tsv
"""

import csv
import os
import sys

NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
TARGETS = {"add": 2.0, "changes": 10.0, "report": 30.0}
MAX_BYTES = 200e6


def secs(v, target=None):
    mark = "" if target is None or v <= target else " (over)"
    return f"{v:.2f} s{mark}"


def main(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    name = os.path.basename(path)[: -len(".tsv")]
    stamp = name[len("history-scale-"):]
    day, hms = stamp[:10], stamp[11:]
    shape = {r["step"]: int(r["bytes"]) for r in rows if r["backend"] == "all"}
    print(f"## Release history at scale ({day}T{hms[:2]}:{hms[2:4]}Z)")
    print()
    print(f"A synthetic series of {shape['versions']} versions × {shape['cells']} cells × "
          f"{shape['repeats']} repeats ({shape['versions'] * shape['cells'] * shape['repeats']:,} "
          "stored repeats, each with a 2,000-value latency histogram), added one version at a "
          "time with the release binary; wall times of the whole command (process start and "
          "the database's opening included). Targets (issue 22): add ≤ 2 s, changes ≤ 10 s, "
          "report ≤ 30 s, database ≤ 200 MB.")
    print()
    print("| store | `add` of the last version | slowest `add` | `changes` (every cell × 7 metrics) "
          "| `report` | `gate` | database |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    backends = []
    for r in rows:
        if r["backend"] != "all" and r["backend"] not in backends:
            backends.append(r["backend"])
    for b in backends:
        mine = [r for r in rows if r["backend"] == b]
        adds = [float(r["seconds"]) for r in mine if r["step"] == "add"]
        one = {r["step"]: r for r in mine if r["step"] != "add"}
        size = int(one["size"]["bytes"])
        size_text = f"{size / 1e6:.1f} MB" + (" (over)" if size > MAX_BYTES else "")
        print(f"| {NAMES.get(b, b)} | {secs(adds[-1], TARGETS['add'])} | "
              f"{secs(max(adds), TARGETS['add'])} | "
              f"{secs(float(one['changes']['seconds']), TARGETS['changes'])} | "
              f"{secs(float(one['report']['seconds']), TARGETS['report'])} | "
              f"{secs(float(one['gate']['seconds']))} | {size_text} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: history_scale_summary.py bench/results/history-scale-DATE.tsv")
    main(sys.argv[1])
