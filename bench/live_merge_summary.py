#!/usr/bin/env python3
"""The summary of a bench/live-merge.sh run, printed from its .tsv alone (one row per cell):

    bench/live_merge_summary.py bench/results/live-merge-<stamp>.tsv

Two sections: the live merge against the final one (every cell), and the abort cells' stop
after the breach. Only the Python standard library."""

import csv
import statistics
import sys


def main(path):
    with open(path, encoding="utf-8") as f:
        params = f.readline().lstrip("# ").strip()
        rows = list(csv.DictReader(f, delimiter="\t"))
    name = path.split("/")[-1]
    print(f"From `{name}` ({params}), on the testbed: three generator hosts (network "
          "namespaces) loading gatebench's proxy in front of the echo.\n")
    print("### Live against final\n")
    print("| part | cells | live merge equal to the final merge | max lag of a merged second, s (median, worst) |")
    print("|---|---:|---|---|")
    for part in ("steady", "abort"):
        rs = [r for r in rows if r["part"] == part]
        if not rs:
            continue
        lags = [float(r["max_lag_s"]) for r in rs]
        equal = sum(r["equal_to_final"] == "True" for r in rs)
        print(f"| {part} | {len(rs)} | {equal} of {len(rs)} | "
              f"{statistics.median(lags):.2f}, {max(lags):.2f} |")
    print("\n### Abort on every shard\n")
    print("| abort cell | breached at, s into the measurement | last shard's measurement ended, s | stop after the breach, s |")
    print("|---|---:|---:|---:|")
    for r in rows:
        if r["part"] != "abort":
            continue
        measured = float(r["measured_s"])
        if r["breached_at_s"] in ("", "None"):
            print(f"| {r['cell']} | not breached | {measured:.2f} | |")
        else:
            at = float(r["breached_at_s"])
            print(f"| {r['cell']} | {at:.0f} | {measured:.2f} | {measured - at:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: live_merge_summary.py RESULTS.tsv")
    main(sys.argv[1])
