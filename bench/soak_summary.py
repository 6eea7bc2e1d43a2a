#!/usr/bin/env python3
"""The Markdown summary of one bench/soak.sh run, printed on stdout.

Reads the samples TSV (phase, t_s, service, pid, rss_kib, open_files, cpu_s), the per-load
`gatebench load --json` records, loads.tsv (name, expect, args), probes.tsv and flaps.tsv
from the run's work directory, and prints one table per check with pass/fail, then the
overall result line `**Result: pass**` or `**Result: fail (…)**`.

The checks (bench/README.md, "soak.sh"):

- RSS: every sample of a service taken under load after the warm-up (the first sixth of
  the run) lies within ±10 % of that service's median over the same samples. A service that
  was restarted during the run (the flapping back-end) is reported, not judged.
- Open files: each service's count at the end (after the load stopped and idle connections
  closed) is at most its count before the load.
- Errors: a load marked `clean` has no request in an error class; `5xx-only` has errors of
  class status_5xx at most (the balancer may retry around a killed back-end, or answer
  502/503); `all-5xx` has every finished request in status_5xx (the dead upstream).
- Alive: every service is still running at the end.

`soak_summary.py again bench/results/soak-<date>` prints the summary again from the committed
files (the run's parameters are in params.tsv there). Only the Python standard library is used.
"""

import argparse
import csv
import json
import os
import statistics
import sys

RSS_BAND = 0.10
FAULT_CLASSES = {"status_5xx"}
NOT_ERRORS = {"ok", "in_flight"}


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--load-end", type=float, required=True)
    ap.add_argument("--settled", default="NA")
    ap.add_argument("--idle-wait", default="NA")
    a = ap.parse_args(argv)
    # The run's parameters go next to its data, so the summary can be printed again from the
    # committed files alone (bench/figures.py --check does).
    with open(os.path.join(a.work, "params.tsv"), "w") as f:
        f.write("duration\tload_end\tsettled\tidle_wait\n")
        f.write(f"{a.duration:g}\t{a.load_end:g}\t{a.settled}\t{a.idle_wait}\n")

    rows = read_tsv(a.samples)
    services = []
    for r in rows:
        if r["service"] not in services:
            services.append(r["service"])
    warm = a.duration / 6
    failures = []

    flaps = read_tsv(os.path.join(a.work, "flaps.tsv"))
    kills = sum(1 for f in flaps if f["event"] == "kill")
    restarted = {"echo-b3"} if kills else set()
    pids = {}
    for r in rows:
        if r["pid"] != "NA":
            pids.setdefault(r["service"], set()).add(r["pid"])
    restarted |= {s for s, p in pids.items() if len(p) > 1}

    # --- RSS ------------------------------------------------------------------------------
    print(f"## RSS after warm-up (t ≥ {warm:.0f} s, under load; pass: within ±{RSS_BAND:.0%} of the median)")
    print()
    print("| service | samples | baseline MiB | median MiB | min vs median | max vs median | check |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for s in services:
        base = [num(r["rss_kib"]) for r in rows if r["service"] == s and r["phase"] == "baseline"]
        xs = [num(r["rss_kib"]) for r in rows
              if r["service"] == s and r["phase"] == "load" and num(r["t_s"]) >= warm]
        xs = [x for x in xs if x is not None]
        b = f"{base[0] / 1024:.1f}" if base and base[0] is not None else "n/a"
        if not xs:
            print(f"| {s} | 0 | {b} | n/a | n/a | n/a | fail (no samples) |")
            failures.append(f"RSS {s}: no samples")
            continue
        med = statistics.median(xs)
        lo, hi = min(xs) / med - 1, max(xs) / med - 1
        if s in restarted:
            check = "not judged (restarted)"
        elif abs(lo) <= RSS_BAND and abs(hi) <= RSS_BAND:
            check = "pass"
        else:
            check = "fail"
            failures.append(f"RSS {s}")
        print(f"| {s} | {len(xs)} | {b} | {med / 1024:.1f} | {lo:+.1%} | {hi:+.1%} | {check} |")
    print()

    # --- open files -------------------------------------------------------------------------
    settled = "NA" if a.settled in ("", "NA") else f"{a.settled} s"
    print("## Open files (pass: at the end no more than before the load)")
    print()
    print(f"The load stopped at {a.load_end:.0f} s; the end sample was taken once every service was"
          f" back at its baseline, or after {a.idle_wait} s (back after: {settled}).")
    print()
    states = {}
    try:
        for r in read_tsv(os.path.join(a.work, "fdstates.tsv")):
            states.setdefault((r["phase"], r["service"]), {})[r["kind"]] = int(r["count"])
    except OSError:
        pass

    def extra(s):
        b, e = states.get(("baseline", s), {}), states.get(("end", s), {})
        d = {k: e.get(k, 0) - b.get(k, 0) for k in set(b) | set(e)}
        return ", ".join(f"{k} {n:+d}" for k, n in sorted(d.items()) if n) or "none"

    print("| service | baseline | peak under load | peak in the first / last quarter | end | end − baseline, by kind | check |")
    print("|---|---:|---:|---:|---:|---|---|")
    for s in services:
        def fds(phase):
            return [num(r["open_files"]) for r in rows
                    if r["service"] == s and r["phase"] == phase and num(r["open_files"]) is not None]
        base, load, end = fds("baseline"), fds("load"), fds("end")
        if not base or not end:
            print(f"| {s} | n/a | n/a | n/a | n/a | n/a | fail (not sampled) |")
            failures.append(f"open files {s}: not sampled")
            continue
        peak = f"{max(load):.0f}" if load else "n/a"
        # Growth under load shows as a last quarter above the first.
        q = len(load) // 4
        quarters = f"{max(load[:q]):.0f} / {max(load[-q:]):.0f}" if q else "n/a"
        ok = end[-1] <= base[0]
        if not ok:
            failures.append(f"open files {s}")
        print(f"| {s} | {base[0]:.0f} | {peak} | {quarters} | {end[-1]:.0f} | {extra(s)} | {'pass' if ok else 'fail'} |")
    print()

    # --- errors per load --------------------------------------------------------------------
    print("## Loads and their errors")
    print()
    print("Pass: a `clean` load has no error; `5xx-only` (through the balancer whose back-end is"
          " killed) has errors of class status_5xx at most; `all-5xx` (the dead upstream) has"
          " every finished request in status_5xx.")
    print()
    print("| load | expect | target req/s | req/s | requests | ok | p99 ms | error classes | check |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for l in read_tsv_noheader(os.path.join(a.work, "loads.tsv"), ["name", "expect", "args"]):
        path = os.path.join(a.work, f"load-{l['name']}.json")
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            print(f"| {l['name']} | {l['expect']} | | | | | | | fail (no record: {type(e).__name__}) |")
            failures.append(f"load {l['name']}: no record")
            continue
        m = rec["measurement"]
        oc = m["outcomes"]
        errs = {k: v for k, v in oc.items() if k not in NOT_ERRORS and v}
        p99 = next((p["ms"] for p in m["latency"]["percentiles"] if p["p"] == 99), None)
        if l["expect"] == "clean":
            ok = not errs
        elif l["expect"] == "5xx-only":
            ok = set(errs) <= FAULT_CLASSES
        else:  # all-5xx: the fault must have shown, on every finished request
            ok = set(errs) <= FAULT_CLASSES and oc.get("ok", 0) == 0 and bool(errs)
        if not ok:
            failures.append(f"errors in {l['name']}")
        cls = ", ".join(f"{k} {v:,}" for k, v in sorted(errs.items())) or "none"
        target = m.get("target_rps")
        target = f"{target:,.0f}" if target is not None else "n/a"
        p99 = f"{p99:.2f}" if p99 is not None else "n/a"
        print(f"| {l['name']} | {l['expect']} | {target} | {m['throughput_rps']:,.1f} "
              f"| {m['requests']:,} | {oc.get('ok', 0):,} | {p99} | {cls} "
              f"| {'pass' if ok else 'fail'} |")
    print()

    # --- faults injected --------------------------------------------------------------------
    probes = read_tsv(os.path.join(a.work, "probes.tsv"))
    print(f"## Faults injected")
    print()
    print(f"- The balancer's back-end echo-b3 was killed (SIGKILL) {kills} times and restarted on"
          f" its port {sum(1 for f in flaps if f['event'] == 'start')} times.")
    print("- The dead-upstream proxy forwards to a port nothing listens on (every answer 502).")
    print(f"- {len(probes):,} raw-socket probes (garbage requests, half heads, aborted uploads,"
          " plaintext on TLS ports, connect-and-close):")
    print()
    print("| service | probe | results |")
    print("|---|---|---|")
    counts = {}
    for p in probes:
        counts.setdefault((p["service"], p["kind"]), {}).setdefault(p["result"], 0)
        counts[(p["service"], p["kind"])][p["result"]] += 1
    for (s, k), res in sorted(counts.items()):
        print(f"| {s} | {k} | {', '.join(f'{r} {n:,}' for r, n in sorted(res.items()))} |")
    print()

    # --- alive and CPU ----------------------------------------------------------------------
    print("## Services at the end")
    print()
    print("| service | alive | CPU s (last process) |")
    print("|---|---|---:|")
    for s in services:
        last = [r for r in rows if r["service"] == s and r["phase"] == "end"]
        alive = bool(last) and last[-1]["pid"] != "NA"
        if not alive:
            failures.append(f"{s} not alive")
        cpu = last[-1]["cpu_s"] if alive else "n/a"
        print(f"| {s} | {'yes' if alive else 'no'} | {cpu} |")
    print()
    if failures:
        print(f"**Result: fail** ({'; '.join(failures)})")
    else:
        print("**Result: pass** (RSS, open files, errors and liveness)")
    return 0


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def fd_states(out, phase, pairs):
    """Appends "phase service kind count" rows to `out`: each service's open files by kind —
    a TCP socket by its state (from /proc/net/tcp and tcp6, matched by inode), another
    socket, or another file. Tells an idle pooled connection (ESTABLISHED) from one the
    peer already closed (CLOSE_WAIT)."""
    states = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    states[cols[9]] = TCP_STATES.get(cols[3], cols[3])
        except OSError:
            pass
    with open(out, "a") as o:
        for pair in pairs:
            name, pid = pair.split("=", 1)
            counts = {}
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    kind = "tcp " + states[link[8:-1]] if link[8:-1] in states else "other socket"
                else:
                    kind = "other file"
                counts[kind] = counts.get(kind, 0) + 1
            for kind, n in sorted(counts.items()):
                o.write(f"{phase}\t{name}\t{kind}\t{n}\n")


def read_tsv_noheader(path, names):
    with open(path, newline="") as f:
        return [dict(zip(names, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def again(results_dir):
    """Prints the summary of a committed run again: RESULTS_DIR is bench/results/soak-<date>
    (the directory beside the TSV, with params.tsv and the copied files)."""
    params = read_tsv(os.path.join(results_dir, "params.tsv"))[0]
    return main(["--samples", results_dir + ".tsv", "--work", results_dir,
                 "--duration", params["duration"], "--load-end", params["load_end"],
                 "--settled", params["settled"], "--idle-wait", params["idle_wait"]])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "again":
        # soak_summary.py again bench/results/soak-<date>
        sys.exit(again(sys.argv[2].rstrip("/")))
    if len(sys.argv) > 1 and sys.argv[1] == "fd-states":
        # soak_summary.py fd-states OUT PHASE NAME=PID…
        fd_states(sys.argv[2], sys.argv[3], sys.argv[4:])
        sys.exit(0)
    sys.exit(main())
