#!/usr/bin/env python3
"""The summary of a bench/proxy-profile.sh run, from its directory alone:

    bench/proxy_profile_summary.py bench/results/proxy-profile-DATE > bench/results/proxy-profile-DATE.md

It reads meta.tsv (the run's settings and versions), windows.tsv (per proxy: requests and
seconds of the perf window, the proxy's CPU-s in it, requests and seconds of the strace window),
PROXY-strace.txt (`strace -c -f`), PROXY-perf.txt (`perf report --no-children --sort dso,symbol`)
and PROXY-perf-dso.txt (`--sort dso`). bench/figures.py --check prints it again and compares.
"""
import os, re, sys

outdir = sys.argv[1].rstrip("/")
meta = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(outdir, "meta.tsv")) if l.strip())
conns, payload = meta["conns"], meta["payload"]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(outdir, "windows.tsv")) if l.strip()]
name = os.path.basename(outdir)

def strace(tool):
    calls = {}
    path = os.path.join(outdir, f"{tool}-strace.txt")
    for line in open(path):
        f = line.split()
        # "% time seconds usecs/call calls [errors] syscall"
        if len(f) >= 5 and re.match(r"^[0-9.]+$", f[0]) and f[3].isdigit():
            calls[f[-1]] = calls.get(f[-1], 0) + int(f[3])
    return calls

def perf_rows(tool, limit):
    out = []
    for line in open(os.path.join(outdir, f"{tool}-perf.txt")):
        m = re.match(r"^\s+([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$", line)
        if m:
            # perf pads the symbol column and may add empty "-  -" columns after it.
            sym = re.sub(r"(\s+-)+\s*$", "", m.group(4)).strip()
            out.append((float(m.group(1)), m.group(2), m.group(3), sym))
    return out[:limit]

def dso_rows(tool):
    out = []
    for line in open(os.path.join(outdir, f"{tool}-perf-dso.txt")):
        m = re.match(r"^\s+([0-9.]+)%\s+(\S+)\s*$", line)
        if m:
            out.append((float(m.group(1)), m.group(2)))
    return out

print(f"## Proxy profile: wrk -t1 -c{conns} GET of a {payload}-byte file from an nginx origin, through each proxy")
print()
print(f"{meta['at']}, each proxy alone on its core (one worker/thread; nginx upstream keepalive 128),")
print(f"wrk and the nginx origin on the other core. gatebench: {meta['gatebench']}; nginx: {meta['nginx']}.")
print()
print("### Windows")
print()
print("| proxy | requests in the perf window | req/s under perf | proxy CPU-s per 100k req | of it in the kernel | of it in user space | requests under strace |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t, n, ps, cpu, ns, ss in rows:
    n, ps, cpu = int(n), float(ps), float(cpu)
    per = cpu / n * 1e5 if n else float("nan")
    kern = sum(pct for pct, dso in dso_rows(t) if dso == "[kernel.kallsyms]") / 100
    print(f"| {t} | {n:,} | {n / ps:,.0f} | {per:.3f} | {per * kern:.3f} | {per * (1 - kern):.3f} | {int(ns):,} |")
print()
print("### System calls per request (strace -c -f, calls ÷ requests the origin served in the window)")
print()
sc = {t: strace(t) for t, *_ in rows}
# Most calls per request first; ties by name, so the order does not depend on hashing.
tools = [t for t, *_ in rows]
reqs = {t: max(1, int(r[3])) for t, *r in rows}
names = sorted({k for c in sc.values() for k in c if k != "total"},
               key=lambda k: (-max(sc[t].get(k, 0) / reqs[t] for t in tools), k))
print("| system call | " + " | ".join(tools) + " |")
print("|---|" + "---:|" * len(tools))
shown = [k for k in names if any(sc[t].get(k, 0) / reqs[t] >= 0.01 for t in tools)]
for k in shown:
    print(f"| {k} | " + " | ".join(f"{sc[t].get(k, 0) / reqs[t]:.2f}" for t in tools) + " |")
print("| **all** | " + " | ".join(f"{sum(v for k, v in sc[t].items() if k != 'total') / reqs[t]:.2f}" for t in tools) + " |")
print()
print("### Where the CPU goes, by DSO (perf, self time)")
print()
print("| proxy | DSO | % of samples |")
print("|---|---|---:|")
for t in tools:
    for pct, dso in dso_rows(t)[:5]:
        print(f"| {t} | {dso} | {pct:.1f} |")
for t in tools:
    print()
    print(f"### Top symbols: {t} (perf, self time, % of samples)")
    print()
    print("| % | DSO | symbol |")
    print("|---:|---|---|")
    for pct, dso, kind, sym in perf_rows(t, 20):
        sym = sym.replace("|", "\\|")
        if len(sym) > 110:
            sym = sym[:107] + "..."
        print(f"| {pct:.2f} | {dso} | `{sym}` |")
for t in tools:
    print()
    print(f"### Top user-space symbols: {t} (perf, self time, % of all samples)")
    print()
    print("| % | DSO | symbol |")
    print("|---:|---|---|")
    for pct, dso, kind, sym in [r for r in perf_rows(t, 10**6) if r[1] != "[kernel.kallsyms]"][:15]:
        sym = sym.replace("|", "\\|")
        if len(sym) > 110:
            sym = sym[:107] + "..."
        print(f"| {pct:.2f} | {dso} | `{sym}` |")
print()
print(f"Raw: bench/results/{name}/ (perf reports and strace summaries as text).")
