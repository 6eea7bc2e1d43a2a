#!/usr/bin/env python3
"""Medians of bench/binary-layout.sh's per-run TSV, one Markdown row per binary (label).

    python3 bench/binary_layout_summary.py bench/results/binary-layout-<date>.tsv

The PSS and the echo backend's anon and PSS columns are printed when the TSV has them (the
runs from before they were sampled do not: their tables print as they were committed).
"""

import csv
import os
import statistics
import sys

COLUMNS = [
    ("proxy_vmrss_kib", "proxy VmRSS MiB"),
    ("proxy_anon_kib", "of it anon MiB"),
    ("proxy_file_kib", "of it file MiB"),
    ("proxy_pss_kib", "proxy PSS MiB"),
    ("proxy_text_kib", "binary text resident MiB"),
    ("proxy_ro_kib", "binary read-only data resident MiB"),
    ("echo_idle_rss_kib", "serve echo idle VmRSS MiB"),
    ("echo_idle_anon_kib", "serve echo idle anon MiB"),
    ("echo_idle_pss_kib", "serve echo idle PSS MiB"),
]


def main():
    rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t"))
    labels = list(dict.fromkeys(r["label"] for r in rows))
    columns = [(col, title) for col, title in COLUMNS if rows and col in rows[0]]
    print("| binary | runs | " + " | ".join(title for _, title in columns) + " | req/s |")
    print("|---" * (len(columns) + 3) + "|")
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        cells = []
        for col, _ in columns:
            xs = [float(r[col]) / 1024 for r in mine]
            cells.append(f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})")
        rps = statistics.median(float(r["rps"]) for r in mine)
        print(f"| {label} | {len(mine)} | " + " | ".join(cells) + f" | {rps:.0f} |")
    print()
    print(
        "Medians (range) over the runs; each run's figure is the largest sample under load. "
        f"Raw data: `bench/results/{os.path.basename(sys.argv[1])}`."
    )


if __name__ == "__main__":
    main()
