#!/usr/bin/env python3
"""bench/json-xml.sh's summary.

    json_xml_summary.py collect RUN MEASURED   TSV rows from target/criterion of the run just made
    json_xml_summary.py NAME.tsv               the Markdown summary (the .md beside it)

Per body: each converter's median over the runs of criterion's median time per conversion,
the input MiB/s that gives, and the paired ratio (scanner time / library time, per run)."""

import csv
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODIES = {"payload-1k": 1 << 10, "payload-10k": 10 << 10, "payload-100k": 100 << 10,
          "records-100k": None, "escaped-100k": None}


def collect(run, measured):
    for body in BODIES:
        for conv in ("scanner", "library"):
            base = os.path.join(ROOT, "target", "criterion", body, conv, "new")
            with open(os.path.join(base, "estimates.json")) as f:
                median = json.load(f)["median"]["point_estimate"]
            with open(os.path.join(base, "benchmark.json")) as f:
                nbytes = json.load(f)["throughput"]["Bytes"]
            print(f"{measured}\t{run}\t{body}\t{nbytes}\t{conv}\t{median:.1f}")


def summary(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    first = min(r["measured"] for r in rows)
    runs = sorted({r["run"] for r in rows})
    print(f"# JSON → XML converter A/B, {first}")
    print()
    print(f"criterion's median time per conversion, median over {len(runs)} runs (range); "
          "input MiB/s from that median; scanner/library: the paired per-run ratio of times "
          "(below 1: the hand-written scanner is faster).")
    print()
    print("| body | bytes | scanner µs | library (jiter) µs | scanner MiB/s | library MiB/s | scanner/library time |")
    print("|---|---|---|---|---|---|---|")
    for body in BODIES:
        mine = [r for r in rows if r["body"] == body]
        if not mine:
            continue
        nbytes = int(mine[0]["bytes"])
        t = {c: {r["run"]: float(r["median_ns"]) for r in mine if r["converter"] == c}
             for c in ("scanner", "library")}
        ratios = [t["scanner"][r] / t["library"][r] for r in runs]
        cell = lambda xs: f"{statistics.median(xs) / 1000:.2f} ({min(xs) / 1000:.2f}–{max(xs) / 1000:.2f})"
        mibs = lambda xs: f"{nbytes / (statistics.median(xs) / 1e9) / (1 << 20):.0f}"
        print(f"| {body} | {nbytes} | {cell(list(t['scanner'].values()))} | "
              f"{cell(list(t['library'].values()))} | {mibs(list(t['scanner'].values()))} | "
              f"{mibs(list(t['library'].values()))} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |")
    print()
    print(f"Raw data: `{os.path.relpath(path, ROOT)}`.")


if __name__ == "__main__":
    if sys.argv[1] == "collect":
        collect(sys.argv[2], sys.argv[3])
    else:
        summary(sys.argv[1])
