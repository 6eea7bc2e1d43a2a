#!/usr/bin/env python3
"""The summary of one bench/multi-generator.sh run, printed from its raw results.

    bench/multi_generator_summary.py bench/results/multi-generator-<stamp>

reads STEM.tsv (one row per measured run) and STEM/ (params.tsv, clock.tsv, sysctl.tsv) and
prints Markdown: one `### ` section per figure, each with one table and the lines under it,
which bench/figures.py copies into docs/hosts.md. Each figure ends with a line saying whether it
was reached, from the data. Only the standard library.
"""

import csv
import os
import statistics
import sys


def rows_of(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def paired(rows, col):
    """two ÷ one per run number (the two ran back to back)."""
    by = {}
    for r in rows:
        by.setdefault(r["run"], {})[r["setup"]] = num(r[col])
    out = []
    for d in by.values():
        a, b = d.get("two"), d.get("one")
        if a is not None and b:
            out.append(a / b)
    return out


def show(xs):
    if not xs:
        return "n/a"
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f}, {len(xs)} pairs)"


def spread(xs):
    """(max − min) ÷ median of the runs: the run-to-run noise of one setup."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    return (max(xs) - min(xs)) / statistics.median(xs)


def main(stem):
    rows = rows_of(stem + ".tsv")
    params = {r["key"]: r["value"] for r in rows_of(os.path.join(stem, "params.tsv"))}
    clock = rows_of(os.path.join(stem, "clock.tsv"))
    sysctl = rows_of(os.path.join(stem, "sysctl.tsv"))
    p = params.get
    out = [f"# Several generator hosts on the testbed, {p('measured_at')}", ""]
    out.append(f"{p('cores')} cores ({p('kernel')}); {p('nginx')}; {p('gatebench')}; testbed delay: "
               f"{p('delay')}; open-files hard limit {p('open_files_hard_limit')}; NICE={p('nice')}.")

    # (a) target-limited
    a = [r for r in rows if r["part"] == "target"]
    if a:
        out += ["", "### Target-limited", ""]
        out.append("| setup | generator hosts | runs | connections in all | req/s (merged record) | "
                   "req/s (nginx's count) | errors | self-checks valid (runs) |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for s in ("one", "two"):
            rs = [r for r in a if r["setup"] == s]
            if not rs:
                continue
            out.append(f"| {s} | {rs[0]['hosts']} | {len(rs)} | {rs[0]['connections']} "
                       f"| {fmt(med(num(r['rps']) for r in rs), ',.0f')} "
                       f"| {fmt(med(num(r['nginx_rps']) for r in rs), ',.0f')} "
                       f"| {sum(int(r['errors']) for r in rs)} "
                       f"| {sum(r['valid'] == '1' for r in rs)}/{len(rs)} |")
        pm, pn = paired(a, "rps"), paired(a, "nginx_rps")
        one_n = [num(r["nginx_rps"]) for r in a if r["setup"] == "one"]
        noise = spread(one_n)
        out += ["",
                f"- nginx: one worker on core 0; generators on core 1, one thread each "
                f"(two: `--shard 0/2` and `1/2` of `-c {a[0]['connections']}`); "
                f"{p('duration_s')} s after a {p('warmup_s')} s warm-up; alternated one, two.",
                f"- paired per-run ratios two ÷ one, median (range): req/s (nginx's count) {show(pn)}; "
                f"req/s (merged record) {show(pm)}",
                f"- run-to-run spread of one generator (nginx's count, (max − min) ÷ median): "
                f"{fmt(noise, '.3f')}"]
        if pn and noise is not None:
            ok = abs(statistics.median(pn) - 1) <= max(noise, 0.02)
            out.append(f"- figure (two generators reach the same req/s as one when the target is the "
                       f"limit, within noise): **{'reached' if ok else 'not reached'}** "
                       f"(|{statistics.median(pn):.3f} − 1| {'≤' if ok else '>'} the spread "
                       f"{noise:.3f}, or 0.02 if larger)")

    # (b) generator-limited
    b = [r for r in rows if r["part"] == "generator"]
    if b:
        out += ["", "### Generator-limited", ""]
        out.append("| setup | generator hosts | runs | connections in all | req/s (merged record) | "
                   "req/s (nginx's count) | errors | shards' CPU % (of one thread, per run) "
                   "| shards' self-checks valid (per run) | quota waits (s, median) |")
        out.append("|---|---|---:|---:|---:|---:|---:|---|---|---:|")
        for s in ("one", "two"):
            rs = [r for r in b if r["setup"] == s]
            if not rs:
                continue
            out.append(f"| {s} | {rs[0]['hosts']} | {len(rs)} | {rs[0]['connections']} "
                       f"| {fmt(med(num(r['rps']) for r in rs), ',.0f')} "
                       f"| {fmt(med(num(r['nginx_rps']) for r in rs), ',.0f')} "
                       f"| {sum(int(r['errors']) for r in rs)} "
                       f"| {'; '.join(r['shard_cpu_pct'] for r in rs)} "
                       f"| {'; '.join(r['shard_valid'] for r in rs)} "
                       f"| {fmt(med(num(r['throttled_s']) for r in rs), '.2f')} |")
        pm, pn = paired(b, "rps"), paired(b, "nginx_rps")
        q = p("gen_quota_pct")
        out += ["",
                f"- This machine has 2 cores, so no generator here can have a core to itself while "
                f"nginx has spare ones. Instead each generator is one thread held to {q} % of one core "
                f"by a cgroup CPU quota (`cpu.cfs_quota_us`); nginx runs two workers on both cores. "
                f"One such generator is the limit; two shards of the same -c each have their own quota.",
                "- Per run `;`-separated, per shard `/`-separated. The self-check's CPU figure compares "
                "the generator's CPU time with its wall time, so under a quota it reads about the quota "
                f"({q} %), not 100 %; the quota waits (the time the generators' cgroups were throttled "
                "during the run, `cpu.stat`) show it was the limit. "
                + ("The self-check reads them too (`self_check.cpu_throttled_s`) and marks such a "
                   "generator invalid." if any(r["valid"] == "0" for r in b) else
                   "This run's self-check did not read them (written before it did), so it did not "
                   "flag the generator."),
                f"- paired per-run ratios two ÷ one, median (range): req/s (merged record) {show(pm)}; "
                f"req/s (nginx's count) {show(pn)}"]
        if pm:
            ok = min(pm) > 1.05
            flagged = any(r["valid"] == "0" for r in b if r["setup"] == "one")
            waits = all((num(r["throttled_s"]) or 0) > 0 for r in b if r["setup"] == "one")
            out.append(f"- figure (two generators together exceed one when the generator is the limit, "
                       f"one thread each): **{'reached' if ok else 'not reached'}** (every pair's ratio "
                       f"above 1.05: {'yes' if ok else 'no'}; the one generator throttled by its quota in "
                       f"every run: {'yes' if waits else 'no'}; its self-check said it was the bottleneck: "
                       f"{'yes' if flagged else 'no'})")

    # (c) scale
    c = [r for r in rows if r["part"] == "scale"]
    if c:
        r = c[0]
        conns = int(r["connections"])
        out += ["", "### Concurrent connections", ""]
        out.append("| generator hosts | connections asked | req/s asked | req/s (merged record) | requests "
                   "(measured) | errors (warm-up and measurement) | connections opened (generators) "
                   "| connections accepted (nginx) | most open at once (nginx) | self-checks valid "
                   "| start skew ms |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        out.append(f"| {r['hosts']} | {conns:,} | {fmt(num(r['rate']), ',.0f')} | {fmt(num(r['rps']), ',.0f')} "
                   f"| {int(r['requests']):,} | {int(r['errors'])} | {int(r['conns_opened']):,} "
                   f"| {int(r['nginx_accepts']):,} | {int(r['nginx_active_max']):,} | {r['shard_valid']} "
                   f"| {r['start_skew_ms']} |")
        e0, op, acc = int(r["errors"]) == 0, int(r["conns_opened"]) == conns, int(r["nginx_accepts"]) == conns
        held = int(r["nginx_active_max"]) >= conns
        ok = e0 and op and acc and held
        yn = lambda x: "yes" if x else "no"
        out += ["",
                f"- One shard of {conns // 3:,} connections per host, one thread each, "
                f"{p('scale_warmup_s')} s warm-up (the open model opens a connection at its first "
                f"request, so the warm-up opens them all) then {p('scale_duration_s')} s; `--no-probe`, so "
                f"nginx's accepted connections are the load's alone (less the script's status requests). "
                f"nginx: two workers on both cores, `worker_rlimit_nofile {p('open_files_hard_limit')}`, "
                f"`listen … reuseport backlog=65535`. Most open at once: the largest `Active connections` "
                f"of stub_status, read once a second through the run. Connections open as the schedule "
                f"first reaches them and close in the run's last connections ÷ rate seconds (each "
                f"connection takes its next request's slot ahead of time and closes when the schedule "
                f"has none left for it), so all are open at once between those two stretches.",
                f"- figure ({conns:,} concurrent keep-alive connections from three generator hosts, 0 errors, "
                f"nginx's accepted count matching): **{'reached' if ok else 'not reached'}** (0 errors: "
                f"{yn(e0)}; the generators opened {conns:,}: {yn(op)}; nginx accepted {conns:,}: "
                f"{yn(acc)} ({int(r['nginx_accepts']):,}); all {conns:,} open at once: {yn(held)}; "
                f"the shards' self-checks valid: {yn(all(v == '1' for v in r['shard_valid'].split('/')))}, "
                f"send lag p99 per shard {r['shard_send_lag_p99_ms']} ms)"]

    # (d) skew
    multi = [r for r in rows if "+" in r["hosts"]]
    if multi:
        sk = [num(r["start_skew_ms"]) for r in multi]
        sk = [x for x in sk if x is not None]
        out += ["", "### Start skew", ""]
        # Records written before `started_at_unix_us` give whole milliseconds (the TSV then has
        # one decimal); later ones microseconds (three decimals).
        fine = all(len(r["start_skew_ms"].partition(".")[2]) == 3 for r in multi)
        if fine:
            out.append("| part | merged runs of 2 or 3 shards | median ms | max ms | runs under 1 ms |")
            out.append("|---|---:|---:|---:|---:|")
            for part in dict.fromkeys(r["part"] for r in multi):
                ps = [num(r["start_skew_ms"]) for r in multi if r["part"] == part]
                out.append(f"| {part} | {len(ps)} | {statistics.median(ps):.3f} | {max(ps):.3f} "
                           f"| {sum(x < 1 for x in ps)} |")
            # The generator part holds each generator to a fraction of a core on purpose: a
            # shard whose cgroup has used its quota cannot run at the instant, however it waits.
            free = [num(r["start_skew_ms"]) for r in multi if r["part"] != "generator"]
            out += ["",
                    "- `merged.start_skew_ms`: the latest shard's start minus the earliest, from the "
                    "records' start times in microseconds (the moment each shard woke at the agreed "
                    "instant, which its schedule counts from).",
                    "- In the generator-limited part each generator is held to a fraction of a core by "
                    "a CPU quota: a shard whose cgroup has used its quota when the instant comes cannot "
                    "run until the quota allows it, so that part measures the quota, not the start. "
                    "The figure is judged on the other parts."]
            if free:
                out.append(f"- figure (start skew under 1 ms): **{'reached' if max(free) < 1 else 'not reached'}** "
                           f"(max {max(free):.3f} ms over the {len(free)} runs without a CPU quota)")
    if multi and not fine:
        out.append("| merged runs of 2 or 3 shards | median ms | max ms | runs at 0 ms | runs at 1 ms | runs above 1 ms |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        out.append(f"| {len(sk)} | {statistics.median(sk):.1f} | {max(sk):.1f} | {sum(x == 0 for x in sk)} "
                   f"| {sum(x == 1 for x in sk)} | {sum(x > 1 for x in sk)} |")
        out += ["",
                "- `merged.start_skew_ms`: the latest shard's start minus the earliest; the records give "
                "start times in whole milliseconds, so 0 means the shards started within the same "
                "millisecond and 1 means in adjacent ones (anything from a few µs to just under 2 ms).",
                "- largest skew by part: " + "; ".join(
                    f"{part} {max(num(r['start_skew_ms']) for r in multi if r['part'] == part):.1f} ms"
                    for part in dict.fromkeys(r["part"] for r in multi)),
                f"- figure (start skew under 1 ms): "
                f"**{'reached' if max(sk) == 0 else 'not shown' if max(sk) <= 1 else 'not reached'}** "
                f"(max {max(sk):.1f} ms at the records' 1 ms resolution)"]

    if clock:
        out += ["", "### Clock offsets", ""]
        out.append("| host | offset (ms) | ± (ms, half the shortest round trip) | round trips |")
        out.append("|---|---:|---:|---:|")
        for r in clock:
            out.append(f"| {r['host']} | {r['offset_ms']} | {r['uncertainty_ms']} | {len(r['rtts_ms'].split(','))} |")
        out += ["", "- `gatebench host clock` over ssh into each namespace, eight round trips, the "
                "shortest kept (what the runner does before a run, [above](#what-happens))."]

    if sysctl:
        out += ["", "### Limits set", ""]
        out.append("| host | sysctl | before | set |")
        out.append("|---|---|---|---|")
        for r in sysctl:
            out.append(f"| {r['host']} | `{r['key']}` | {r['before']} | {r['set']} |")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} bench/results/multi-generator-<stamp>", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
