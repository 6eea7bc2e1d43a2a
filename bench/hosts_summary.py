#!/usr/bin/env python3
"""Prints the figures of a bench/hosts.sh run (bench/results/hosts-STAMP/) as Markdown:
every host's clock offset as gatebench measured it, and the CPU that sampling the SUT on its
host cost, in percent of one core.

    bench/hosts_summary.py bench/results/hosts-STAMP

Only the Python standard library.
"""

import csv
import json
import os
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run = argv[1].rstrip("/")
    stamp = os.path.basename(run).removeprefix("hosts-")
    with open(os.path.join(run, "hosts.json"), encoding="utf-8") as f:
        hosts = json.load(f)
    with open(os.path.join(run, "sampling.tsv"), encoding="utf-8", newline="") as f:
        sampling = list(csv.DictReader(f, delimiter="\t"))
    build_file = os.path.join(run, "build")
    build = open(build_file, encoding="utf-8").read().strip() if os.path.isfile(build_file) else "?"
    date, time = stamp.split("T")
    print(f"# Hosts on the testbed, {date}T{time[:2]}:{time[2:4]}:{time[4:6]}Z")
    print()
    print("### Clock offsets")
    print()
    print("| host | roles | address | offset (ms) | ± (ms, half the shortest round trip) | round trips |")
    print("|---|---|---|---:|---:|---:|")
    for h in hosts:
        print(f"| {h['url']} | {h['roles']} | {h['address']} | {h['clock_offset_s'] * 1e3:+.3f} | "
              f"{h['clock_uncertainty_s'] * 1e3:.3f} | {len(h['clock_rtts_s'])} |")
    print()
    print("### Sampling on the SUT host")
    print()
    print("| host | seconds | samples | CPU time (s) | CPU (% of one core) | processes on the host |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in sampling:
        tck = float(r["clk_tck"])
        cpu = (int(r["utime_ticks"]) + int(r["stime_ticks"])) / tck
        secs = float(r["seconds"])
        print(f"| {r['host']} | {secs:.0f} | {r['samples']} | {cpu:.2f} | {100 * cpu / secs:.2f} | "
              f"{r['processes_on_host']} |")
    print()
    print("- CPU time is utime + stime of `gatebench host sample` from /proc/PID/stat on the host, "
          f"in ticks of 1/{sampling[0]['clk_tck'] if sampling else '?'} s; gatebench build: {build}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
