#!/usr/bin/env python3
"""bench/gateways-under-change.sh's figures: what reloads and a killed back-end cost each proxy.

    gateways_under_change_summary.py extract DIR...  > NAME.tsv   one row per event firing of
                                                                  every cell of the results
                                                                  directories (their records)
    gateways_under_change_summary.py NAME.tsv        > NAME.md    the tables

bench/figures.py --check runs the second form again on the committed .tsv. Only the standard
library.

The tables, per proxy and protocol:
- Reloads (events named `reload`): how many fired and how many failed to fire, the cell's
  requests and failed requests over the whole measurement (its reloads' windows cover all of it
  after the first; they are not summed, as windows touch whole seconds), the worst longest gap between successful responses, the window p99 against the steady p99
  (median and worst over the reloads) and how many windows kept p99 within 2 x the steady p99.
- A killed back-end (events `kill-*` and `start-*`): the errors in the kill's window by class,
  against a bound of what was in flight on that back-end plus its share of one health-check
  interval (rate x mean latency / back-ends + rate x CHECK_S / back-ends), the longest gap, the
  time to recover, and how long after its start the back-end served again (propagation).
"""

import csv
import glob
import json
import os
import statistics
import sys

CHECK_S = 0.2  # the health-check interval of examples/failover.toml's active checks

FIELDS = ["suite", "cell", "scenario", "title", "protocol", "rate", "backends", "mean_ms",
          "requests", "failed", "event", "at_s", "ok", "errors", "error_classes",
          "longest_gap_ms", "p99_window_ms", "p99_steady_ms", "recovery_s", "propagation_ms",
          "new_route"]


def num(v):
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def extract(dirs):
    w = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
    w.writerow(FIELDS)
    for d in dirs:
        with open(os.path.join(d, "run.json")) as f:
            suite = json.load(f).get("suite")
        if isinstance(suite, dict):
            suite = suite.get("name")
        suite = suite or os.path.basename(d)
        records = []
        for path in glob.glob(os.path.join(d, "cells", "*", "record.json")):
            with open(path) as f:
                records.append(json.load(f))
        # Suite order: scenario, then protocol and the rest as the suite lists them.
        records.sort(key=lambda r: (r["cell"].get("scenario_index", 0),
                                    r["cell"]["protocol"] != "h1c", r["cell"]["id"]))
        for r in records:
            if r.get("status") != "ok" or not r.get("load"):
                continue
            c, m = r["cell"], r["load"]["measurement"]
            failed = sum(n for k, n in m["outcomes"].items() if k not in ("ok", "in_flight"))
            backends = len({p["name"] for p in r.get("processes", [])
                            if p["name"].startswith("backend")})
            for e in r.get("events", []):
                cost = e.get("cost") or {}
                classes = ";".join(f"{k}={v}" for k, v in sorted(cost.get("errors", {}).items()))
                w.writerow([suite, c["id"], c["scenario"], c["title"], c["protocol"],
                            num(c.get("rate")), backends, num(m["latency"]["mean_ms"]),
                            m["requests"], failed, e["name"], num(e["at_s"]),
                            "1" if e["ok"] else "0", num(cost.get("errors_total")), classes,
                            num(cost.get("longest_gap_ms")), num(cost.get("p99_window_ms")),
                            num(cost.get("p99_steady_ms")), num(cost.get("recovery_s")),
                            num(cost.get("propagation_ms")), cost.get("new_route") or ""])


def f(v):
    return float(v) if v not in ("", None) else None


def fmt(v, digits=0):
    return "—" if v is None else f"{v:,.{digits}f}"


def summary(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        sys.exit(f"{path}: no event firings")
    reloads = [r for r in rows if r["event"] == "reload"]
    if reloads:
        print("### Reloads under a steady open-model load\n")
        print("| proxy | protocol | rate (req/s) | reloads | reloads that failed to fire "
              "| requests | failed requests | longest gap (ms, worst) "
              "| window p99 ÷ steady p99: median (worst) | windows with p99 ≤ 2 × steady |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for cell in dict.fromkeys(r["cell"] for r in reloads):
            rs = [r for r in reloads if r["cell"] == cell]
            first = rs[0]
            gaps = [f(r["longest_gap_ms"]) for r in rs if f(r["longest_gap_ms"]) is not None]
            ratios = [f(r["p99_window_ms"]) / f(r["p99_steady_ms"]) for r in rs
                      if f(r["p99_window_ms"]) and f(r["p99_steady_ms"])]
            within = sum(1 for x in ratios if x <= 2.0)
            ratio = (f"{statistics.median(ratios):.2f} ({max(ratios):.2f})" if ratios else "—")
            print(f"| {first['title']} | {first['protocol']} | {fmt(f(first['rate']))} "
                  f"| {len(rs)} | {sum(1 for r in rs if r['ok'] != '1')} "
                  f"| {int(first['requests']):,} | {int(first['failed']):,} "
                  f"| {fmt(max(gaps) if gaps else None)} | {ratio} | {within} of {len(ratios)} |")
        print()
    kills = [r for r in rows if r["event"].startswith("kill-")]
    if kills:
        print("### A back-end killed and started again\n")
        print("| proxy | back-ends | rate (req/s) | errors in the kill's window "
              "| bound: in flight on it + its share of 200 ms | longest gap (ms) "
              "| recovery (s) | serving again after its start (ms) |")
        print("|---|---:|---:|---|---:|---:|---:|---:|")
        for r in kills:
            n = max(int(r["backends"]), 1)
            rate, mean = f(r["rate"]) or 0.0, f(r["mean_ms"]) or 0.0
            bound = rate * mean / 1000 / n + rate * CHECK_S / n
            start = next((s for s in rows if s["cell"] == r["cell"]
                          and s["event"].startswith("start-")), None)
            classes = r["error_classes"].replace(";", ", ").replace("=", " ")
            errors = r["errors"] or "0"
            shown = f"{errors} ({classes})" if classes else errors
            back = fmt(f(start["propagation_ms"])) if start else "—"
            print(f"| {r['title']} | {n} | {fmt(f(r['rate']))} | {shown} | {bound:.0f} "
                  f"| {fmt(f(r['longest_gap_ms']))} | {fmt(f(r['recovery_s']), 1)} | {back} |")
        print()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "extract":
        extract(sys.argv[2:])
    elif len(sys.argv) == 2:
        summary(sys.argv[1])
    else:
        sys.exit(__doc__)
