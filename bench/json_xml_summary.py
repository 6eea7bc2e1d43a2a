#!/usr/bin/env python3
"""bench/json-xml.sh's summary.

    json_xml_summary.py NAME.tsv               the Markdown summary (the .md beside it)

Per body: each converter's median over the runs of the median time per conversion (criterion's
in the A/B, the bench's own since),
the input MiB/s that gives, and, when the TSV has both converters (the A/B of 2026-11-28,
made at commit 3aa11e4, which still had the jiter-driven one), the paired ratio (scanner time /
library time, per run). Today's bench has the scanner alone."""

import csv
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODIES = {"payload-1k": 1 << 10, "payload-10k": 10 << 10, "payload-100k": 100 << 10,
          "records-100k": None, "escaped-100k": None}


def summary(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    first = min(r["measured"] for r in rows)
    runs = sorted({r["run"] for r in rows})
    convs = [c for c in ("scanner", "library") if any(r["converter"] == c for r in rows)]
    ab = len(convs) == 2
    label = {"scanner": "scanner", "library": "library (jiter)"}
    print(f"# JSON → XML converter{' A/B' if ab else ''}, {first}")
    print()
    print(f"{'criterion' if ab else 'the bench'}'s median time per conversion, median over {len(runs)} runs (range); "
          "input MiB/s from that median"
          + ("; scanner/library: the paired per-run ratio of times "
             "(below 1: the hand-written scanner is faster)." if ab else "."))
    print()
    head = ["body", "bytes"] + [f"{label[c]} µs" for c in convs] + [f"{c} MiB/s" for c in convs]
    head += ["scanner/library time"] if ab else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for body in BODIES:
        mine = [r for r in rows if r["body"] == body]
        if not mine:
            continue
        nbytes = int(mine[0]["bytes"])
        t = {c: {r["run"]: float(r["median_ns"]) for r in mine if r["converter"] == c}
             for c in convs}
        cell = lambda xs: f"{statistics.median(xs) / 1000:.2f} ({min(xs) / 1000:.2f}–{max(xs) / 1000:.2f})"
        mibs = lambda xs: f"{nbytes / (statistics.median(xs) / 1e9) / (1 << 20):.0f}"
        cells = [body, str(nbytes)] + [cell(list(t[c].values())) for c in convs]
        cells += [mibs(list(t[c].values())) for c in convs]
        if ab:
            ratios = [t["scanner"][r] / t["library"][r] for r in runs]
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"Raw data: `{os.path.relpath(path, ROOT)}`.")


if __name__ == "__main__":
    summary(sys.argv[1])
