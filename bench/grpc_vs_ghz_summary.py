#!/usr/bin/env python3
"""Prints bench/grpc-vs-ghz.sh's summary from its raw .tsv (one row per run).

Unary: per tool, the median over runs of server-counted calls/s and of generator CPU per
call, and the paired ratios gatebench / ghz (each run's gatebench row against the ghz row of
the same round), medians. Streams: the echo's counts against gatebench's.

    bench/grpc_vs_ghz_summary.py bench/results/grpc-vs-ghz-<stamp>.tsv
"""
import csv
import statistics
import sys


def main(path):
    with open(path) as f:
        header = f.readline().lstrip("# ").strip()
        rows = list(csv.DictReader(f, delimiter="\t"))
    print(f"From `{path.split('/')[-1]}`: {header}")
    print()
    print("### gRPC: gatebench against ghz")
    print()
    unary = [r for r in rows if r["kind"] == "unary"]
    by = {}
    for r in unary:
        calls = int(r["server_calls"])
        cpu = float(r["cpu_user_s"]) + float(r["cpu_sys_s"])
        ok = r["rc"] == "0" and calls > 0
        by.setdefault(r["tool"], {})[r["run"]] = {
            "ok": ok,
            "cps": calls / float(r["seconds"]),
            "cpu_us": cpu / calls * 1e6 if calls else float("nan"),
            "tool_ok": r["tool_ok"],
            "calls": calls,
        }
    print("| tool | runs ok | calls/s (server-counted), median | generator CPU per call, median | calls the tool counted ok ÷ server-counted |")
    print("|---|---:|---:|---:|---:|")
    for tool in ("gatebench", "ghz"):
        runs = [v for v in by.get(tool, {}).values() if v["ok"]]
        if not runs:
            print(f"| {tool} | 0/{len(by.get(tool, {}))} | n/a | n/a | n/a |")
            continue
        agree = statistics.median(
            int(v["tool_ok"]) / v["calls"] for v in runs if v["tool_ok"] not in ("", "NA")
        )
        print(
            f"| {tool} | {len(runs)}/{len(by[tool])} | {statistics.median(v['cps'] for v in runs):,.0f} "
            f"| {statistics.median(v['cpu_us'] for v in runs):.2f} µs | {agree:.4f} |"
        )
    pairs = [
        (g, by["ghz"][run])
        for run, g in by.get("gatebench", {}).items()
        if run in by.get("ghz", {}) and g["ok"] and by["ghz"][run]["ok"]
    ]
    if pairs:
        cps = statistics.median(g["cps"] / z["cps"] for g, z in pairs)
        cpu = statistics.median(g["cpu_us"] / z["cpu_us"] for g, z in pairs)
        print()
        print(
            f"- Paired by round ({len(pairs)} rounds), medians: gatebench's calls/s ÷ ghz's = **{cps:.2f}**; "
            f"gatebench's CPU per call ÷ ghz's = **{cpu:.2f}** (the aim: calls/s ≥ 1.00 at CPU per call ≤ 0.70)."
        )
    for r in rows:
        if r["kind"] != "bidi":
            continue
        sent, received = int(r["tool_sent"]), int(r["tool_received"])
        srv_in, srv_out = int(r["server_received"]), int(r["server_sent"])
        same = sent == srv_in and received == srv_out
        print(
            f"- Bidirectional streams for {r['seconds']} s (exit {r['rc']}): gatebench sent {sent:,} messages, "
            f"the echo received {srv_in:,}; the echo sent {srv_out:,}, gatebench received {received:,}; "
            f"{r['tool_ok']} calls ok of {int(r['server_calls']):,} the echo served. "
            + ("**Every message counted the same on both sides.**" if same else "**The counts differ.**")
        )


if __name__ == "__main__":
    main(sys.argv[1])
