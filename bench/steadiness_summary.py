#!/usr/bin/env python3
"""The summary of a bench/seed-000-steadiness.sh run, printed from its raw rows (NAME.tsv).

For every measurement length and figure: the coefficient of variation (sample standard
deviation over the mean) between the repeats of one cell — same version, same point of the
grid — with the median and the largest over the cells. bench/figures.py --check runs this
again and compares with the committed NAME.md.

    bench/steadiness_summary.py bench/results/seed-000-steadiness-DATE.tsv
"""

import csv
import os
import statistics
import sys

FIGURES = [
    ("throughput_rps", "throughput"),
    ("mean_ms", "mean latency"),
    ("p99_ms", "p99 latency"),
    ("sut_cpu_us_per_request", "CPU time per request"),
]


def cv(xs):
    return statistics.stdev(xs) / statistics.mean(xs) * 100.0


def main(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    name = os.path.basename(path)[: -len(".tsv")]
    durations = []
    for r in rows:
        if r["duration"] not in durations:
            durations.append(r["duration"])
    # The date in the name: seed-000-steadiness-2026-11-25T183500 → 2026-11-25T18:35Z.
    stamp = name.rsplit("-", 3)[-3:]
    day, hms = "-".join(stamp)[:10], "-".join(stamp)[11:]
    print(f"## Seed 000: steadiness of the figures between repeats ({day}T{hms[:2]}:{hms[2:4]}Z)")
    print()
    ok = [r for r in rows if r["status"] == "ok"]
    cells = sorted({(r["scenario"], r["users"], r["size_bytes"]) for r in ok})
    reps = max((int(r["repeat"]) for r in ok), default=0)
    failed = len(rows) - len(ok)
    bound = sum(1 for r in ok if r["generator_bound"] == "True")
    print(f"{len(cells)} cells ({', '.join(f'{s} {u} users {b} B' for s, u, b in cells)}), "
          f"{reps} repeats each per length; {failed} failed, {bound} generator-bound repeats. "
          "Coefficient of variation between the repeats of one cell (standard deviation over "
          "the mean, %): the median over the cells, and the largest in brackets. Load average: "
          "the machine's 1-minute load average during the measurements, median over the "
          "repeats.")
    print()
    print("| cell length | " + " | ".join(label for _, label in FIGURES) + " | load average |")
    print("|---|" + "---:|" * (len(FIGURES) + 1))
    for d in durations:
        out = []
        for key, _ in FIGURES:
            cvs = []
            for c in cells:
                xs = [float(r[key]) for r in ok
                      if r["duration"] == d and (r["scenario"], r["users"], r["size_bytes"]) == c and r[key]]
                if len(xs) >= 2:
                    cvs.append(cv(xs))
            out.append(f"{statistics.median(cvs):.1f} ({max(cvs):.1f})" if cvs else "n/a")
        # The machine's 1-minute load average during the measurements (the SUT's samples):
        # how much else was running.
        loads = [float(r["loadavg_mean"]) for r in ok if r["duration"] == d and r.get("loadavg_mean")]
        load = f"{statistics.median(loads):.1f}" if loads else "n/a"
        print(f"| {d} | " + " | ".join(out) + f" | {load} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} NAME.tsv", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
