#!/usr/bin/env python3
"""The summary of a bench/upstream-efficiency.sh run, printed from its raw rows (NAME.tsv):
per proxy, the medians over the runs of the client's responses, the requests the origin saw,
the upstream connections it saw opened, those per 1,000 requests, requests per upstream
connection, and (rows that have it) in how many runs the kernel's count of accepted connections
agreed with the origin's. bench/figures.py --check runs it again on the committed .tsv.

    bench/upstream_efficiency_summary.py bench/results/upstream-efficiency-DATE.tsv
"""

import csv
import statistics
import sys


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        sys.exit(f"{path}: no runs")
    conns = ", ".join(sorted({r["conns"] for r in rows}, key=int))
    keepalive = ", ".join(sorted({r["nginx_keepalive"] for r in rows}, key=int))
    runs = len({r["run"] for r in rows})
    print(f"Upstream connections seen from the origin ({conns} users, keep-alive on both sides; "
          f"nginx keepalive {keepalive}); medians of {runs} runs.\n")
    kernel = all(r.get("kernel_upstream_accepts") not in (None, "") for r in rows)
    print("| proxy | client responses | origin requests | upstream connections opened "
          "| per 1,000 requests | requests per upstream connection |"
          + (" runs where the kernel counted as many |" if kernel else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|" if kernel else ""))
    for tool in dict.fromkeys(r["tool"] for r in rows):
        rs = [r for r in rows if r["tool"] == tool]
        ok = statistics.median(int(r["client_ok"]) for r in rs)
        req = statistics.median(int(r["origin_requests"]) for r in rs)
        con = statistics.median(int(r["upstream_connections"]) for r in rs)
        per_k = statistics.median(
            1000 * int(r["upstream_connections"]) / max(int(r["origin_requests"]), 1) for r in rs)
        per_c = statistics.median(
            int(r["origin_requests"]) / max(int(r["upstream_connections"]), 1) for r in rs)
        same = ""
        if kernel:
            agree = sum(1 for r in rs
                        if int(r["kernel_upstream_accepts"]) == int(r["upstream_connections"]))
            same = f" {agree} of {len(rs)} |"
        print(f"| {tool} | {ok:.0f} | {req:.0f} | {con:.0f} | {per_k:.3f} | {per_c:.0f} |{same}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
