#!/usr/bin/env python3
"""The Prometheus side of bench/prometheus-check.sh: PromQL queries against a real Prometheus
that scraped a `gatebench load --metrics` run, the Grafana dashboard's check, and the summary
that sets PromQL's figures beside gatebench's own record.

    bench/prometheus_check.py query PROM_URL RUN        # the run's PromQL, each answer saved under RUN/promql/
    bench/prometheus_check.py dashboard PROM_URL DASHBOARD RUN
                                                        # the dashboard: structure, every expr sent to Prometheus
    bench/prometheus_check.py summary RUN               # the Markdown summary (stdout), from RUN alone
    bench/prometheus_check.py tsv RUN                   # the comparisons, one row per check (stdout)

RUN is the run's directory (bench/results/prometheus-check-STAMP/): `record.json` (the load's
`--json` record), `params.tsv` (the script's settings and the load's start and exit times, Unix
seconds) and what the commands above write there. `summary` and `tsv` read only that directory,
so `bench/figures.py --check` prints the summary again from the committed data.

Only the Python standard library.
"""

import json
import math
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

JOB = "gatebench"
# The exported histogram's upper bounds, seconds (crates/loadgen/src/metrics/mod.rs, BUCKETS).
BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
# What Grafana fills in for its own variables when the check sends a dashboard's expr.
GRAFANA_BUILTINS = {"__rate_interval": "10s", "__interval": "1s", "__range": "60s", "__interval_ms": "1000",
                    "__range_s": "60"}


def params(run):
    out = {}
    with open(os.path.join(run, "params.tsv"), encoding="utf-8") as f:
        for line in f:
            if "\t" in line:
                k, v = line.rstrip("\n").split("\t", 1)
                out[k] = v
    return out


def record(run):
    with open(os.path.join(run, "record.json"), encoding="utf-8") as f:
        return json.load(f)


def windows(run):
    """The instants the queries are evaluated at (Unix seconds) and the ranges they look back
    over, from the record and the load's exit time."""
    p, r = params(run), record(run)
    start = r["started_at_unix_us"] / 1e6 if r.get("started_at_unix_us") else r["started_at_unix_ms"] / 1e3
    warmup = r["config"].get("warmup_s") or 0
    meas_start = start + warmup
    meas_end = meas_start + r["measurement"]["duration_s"]
    exit_t = float(p["load_exit_unix"])
    # The whole run up to the load's exit: max_over_time of a counter over it is its last value.
    end_eval = exit_t
    whole = math.ceil(end_eval - start) + 5
    # Scrape health while the endpoint was up: from the start to a second before the exit.
    up_eval = exit_t - 1.0
    up_range = max(1, math.floor(up_eval - start) - 1)
    mid = meas_start + (meas_end - meas_start) / 2
    return {"start": start, "meas_start": meas_start, "meas_end": meas_end, "exit": exit_t,
            "end_eval": end_eval, "whole": whole, "up_eval": up_eval, "up_range": up_range, "mid": mid}


def sel(extra="", instance=None):
    s = f'job="{JOB}"'
    if instance is not None:
        s += f',instance="{instance}"'
    return "{" + s + ("," + extra if extra else "") + "}"


def with_remote_write(run):
    """Whether the run also pushed by remote write (and scraped the protobuf form, native
    histograms on): runs from before that have neither."""
    return params(run).get("remote_write") == "1"


def queries(run):
    """name -> (PromQL, evaluation time, what it is)."""
    if with_remote_write(run):
        return queries_v2(run)
    w, p = windows(run), params(run)
    rng = f"{w['whole']}s"
    rate_window = p.get("rate_window", "10s")
    m = 'phase="measurement"'
    ok = m + ',outcome="ok"'
    wu = 'phase="warmup"'
    return {
        "requests_total": (f"sum(max_over_time(gatebench_requests_total{sel(m)}[{rng}]))", w["end_eval"],
                           "requests of the measurement, every outcome (last value of the counters)"),
        "requests_ok": (f'sum(max_over_time(gatebench_requests_total{sel(ok)}[{rng}]))',
                        w["end_eval"], "ok requests of the measurement"),
        "requests_warmup": (f'sum(max_over_time(gatebench_requests_total{sel(wu)}[{rng}]))', w["end_eval"],
                            "requests of the warm-up, every outcome"),
        "requests_run": (f"sum(max_over_time(gatebench_requests_total{sel()}[{rng}]))", w["end_eval"],
                         "requests of the whole run, both phases"),
        "latency_count": (f"sum(max_over_time(gatebench_request_duration_seconds_count{sel(m)}[{rng}]))", w["end_eval"],
                          "latency values of the measurement (the histogram's _count)"),
        "requests_by_outcome": (f"max by (outcome) (max_over_time(gatebench_requests_total{sel(m)}[{rng}]))",
                                w["end_eval"], "requests of the measurement by outcome"),
        "buckets_final": (f"max by (le) (max_over_time(gatebench_request_duration_seconds_bucket{sel(m)}[{rng}]))",
                          w["end_eval"], "the measurement's final cumulative buckets"),
        "p50": (f"histogram_quantile(0.5, max by (le) (max_over_time(gatebench_request_duration_seconds_bucket{sel(m)}[{rng}])))",
                w["end_eval"], "p50 from the final buckets"),
        "p90": (f"histogram_quantile(0.9, max by (le) (max_over_time(gatebench_request_duration_seconds_bucket{sel(m)}[{rng}])))",
                w["end_eval"], "p90 from the final buckets"),
        "p99": (f"histogram_quantile(0.99, max by (le) (max_over_time(gatebench_request_duration_seconds_bucket{sel(m)}[{rng}])))",
                w["end_eval"], "p99 from the final buckets"),
        "rate_ok_mid": (f'sum(rate(gatebench_requests_total{sel(ok)}[{rate_window}]))', w["mid"],
                        "ok responses per second over the window ending mid-measurement"),
        "phase_max": (f"max_over_time(gatebench_phase{sel()}[{rng}])", w["end_eval"],
                      "the last phase scraped (2: done)"),
        "up_sum": (f"sum_over_time(up{sel()}[{w['up_range']}s])", w["up_eval"], "successful scrapes while the endpoint was up"),
        "up_count": (f"count_over_time(up{sel()}[{w['up_range']}s])", w["up_eval"], "scrapes while the endpoint was up"),
        "scrape_samples": (f"max_over_time(scrape_samples_scraped{sel()}[{rng}])", w["end_eval"],
                           "samples per scrape"),
    }


def queries_v2(run):
    """The queries of a run with remote write and a protobuf scrape (native histograms on):
    the scraped series (instance = the metrics address), whose latency is a native histogram,
    and the remote-written ones (instance = the host's name), whose latency is the classic
    buckets."""
    w, p = windows(run), params(run)
    rng = f"{w['whole']}s"
    rate_window = p.get("rate_window", "10s")
    sc, rw = p["scrape_instance"], p["remote_instance"]
    m = 'phase="measurement"'
    ok = m + ',outcome="ok"'
    wu = 'phase="warmup"'
    out = {}
    for pre, inst, src in (("", sc, "scraped"), ("rw_", rw, "remote-written")):
        s = lambda extra="": sel(extra, inst)  # noqa: E731
        out.update({
            pre + "requests_total": (f"sum(max_over_time(gatebench_requests_total{s(m)}[{rng}]))", w["end_eval"],
                                     f"requests of the measurement, every outcome ({src})"),
            pre + "requests_ok": (f"sum(max_over_time(gatebench_requests_total{s(ok)}[{rng}]))", w["end_eval"],
                                  f"ok requests of the measurement ({src})"),
            pre + "requests_warmup": (f"sum(max_over_time(gatebench_requests_total{s(wu)}[{rng}]))", w["end_eval"],
                                      f"requests of the warm-up, every outcome ({src})"),
            pre + "requests_run": (f"sum(max_over_time(gatebench_requests_total{s()}[{rng}]))", w["end_eval"],
                                   f"requests of the whole run, both phases ({src})"),
            pre + "rate_ok_mid": (f"sum(rate(gatebench_requests_total{s(ok)}[{rate_window}]))", w["mid"],
                                  f"ok responses per second over the window ending mid-measurement ({src})"),
            pre + "phase_max": (f"max(max_over_time(gatebench_phase{s()}[{rng}]))", w["end_eval"],
                                f"the last phase ({src}; 2: done)"),
        })
    # The native histogram (scraped), as an instant vector 1.5 s before the load's exit: within
    # the linger, when the endpoint still served the final figures. (Prometheus 2.42's
    # *_over_time functions, last_over_time included, do not take native histograms.)
    nat = f"gatebench_request_duration_seconds{sel(m, sc)}"
    t = w["exit"] - 1.5
    out["native_count"] = (f"histogram_count({nat})", t, "the native histogram's count (scraped)")
    out["native_sum"] = (f"histogram_sum({nat})", t, "the native histogram's sum (scraped)")
    for q in (50, 90, 99):
        out[f"native_p{q}"] = (f"histogram_quantile({q / 100:g}, {nat})", t,
                               f"p{q} from the native histogram (scraped)")
    # The classic buckets (remote-written).
    out["rw_latency_count"] = (f"sum(max_over_time(gatebench_request_duration_seconds_count{sel(m, rw)}[{rng}]))",
                               w["end_eval"], "latency values of the measurement (remote-written _count)")
    out["rw_buckets_final"] = (f"max by (le) (max_over_time(gatebench_request_duration_seconds_bucket{sel(m, rw)}[{rng}]))",
                               w["end_eval"], "the measurement's final cumulative buckets (remote-written)")
    for q in (50, 90, 99):
        out[f"rw_p{q}"] = (f"histogram_quantile({q / 100:g}, max by (le) (max_over_time("
                           f"gatebench_request_duration_seconds_bucket{sel(m, rw)}[{rng}])))",
                           w["end_eval"], f"p{q} from the final classic buckets (remote-written)")
    out["up_sum"] = (f"sum_over_time(up{sel()}[{w['up_range']}s])", w["up_eval"], "successful scrapes while the endpoint was up")
    out["up_count"] = (f"count_over_time(up{sel()}[{w['up_range']}s])", w["up_eval"], "scrapes while the endpoint was up")
    out["scrape_samples"] = (f"max_over_time(scrape_samples_scraped{sel()}[{rng}])", w["end_eval"], "samples per scrape")
    out["rw_samples"] = (f"count_over_time(gatebench_phase{sel('', rw)}[{rng}])", w["end_eval"],
                         "remote-written samples of gatebench_phase (one per push)")
    return out


def api(base, path, args):
    url = base.rstrip("/") + path + "?" + urllib.parse.urlencode(args)
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:  # 400/422: a PromQL error, with a JSON body
        try:
            return json.load(e)
        except ValueError:
            return {"status": "error", "errorType": f"http {e.code}", "error": str(e)}


def cmd_query(base, run):
    out = os.path.join(run, "promql")
    os.makedirs(out, exist_ok=True)
    for name, (expr, t, what) in queries(run).items():
        resp = api(base, "/api/v1/query", {"query": expr, "time": f"{t:.3f}"})
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"query": expr, "time": round(t, 3), "what": what, "response": resp}, f, indent=1)
            f.write("\n")
        if resp.get("status") != "success":
            print(f"prometheus_check: {name}: {resp.get('errorType')}: {resp.get('error')}", file=sys.stderr)
    return 0


def saved(run, name):
    with open(os.path.join(run, "promql", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def scalar(run, name):
    """The single value of a saved instant query, or None (no series, or an error)."""
    resp = saved(run, name)["response"]
    if resp.get("status") != "success":
        return None
    res = resp["data"]["result"]
    if len(res) != 1:
        return None
    return float(res[0]["value"][1])


def bucket_of(seconds):
    """(lower, upper] edges of the exported bucket that holds a value."""
    lo = 0.0
    for b in BUCKETS:
        if seconds <= b:
            return lo, b
        lo = b
    return lo, math.inf


def pct(rec, p):
    for e in rec["measurement"]["latency"]["percentiles"]:
        if float(e["p"]) == p:
            return e["ms"] / 1e3
    return None


def fmt_s(x):
    if x is None:
        return "none"
    if math.isinf(x):
        return "+Inf"
    return f"{x * 1e3:.3f} ms"


def comparisons(run):
    """One row per check: check, promql, gatebench, bound, pass."""
    rec, p = record(run), params(run)
    meas = rec["measurement"]
    rows = []

    def exact(check, name, want):
        got = scalar(run, name)
        ok = got is not None and got == want
        rows.append((check, "none" if got is None else f"{got:.0f}", f"{want}", "exact (equal)", ok))

    # A series' phase is the second a request finished in; the record's, the phase it was sent
    # in (docs/metrics.md): the warm-up's requests still in flight at its end are counted in
    # the measurement's series. So each phase may differ from the record by those requests,
    # at most one per connection, and by the same number in both; the whole run is exact.
    conns = rec["config"]["connections"]
    warm_rec = rec["warmup"]["requests"] if rec.get("warmup") else 0
    got_m, got_w = scalar(run, "requests_total"), scalar(run, "requests_warmup") if rec.get("warmup") else 0.0
    moved = None if got_m is None else got_m - meas["requests"]
    moved_w = None if got_w is None else warm_rec - got_w
    ok = moved is not None and moved == moved_w and 0 <= moved <= conns
    rows.append(("requests of the measurement (every outcome)", "none" if got_m is None else f"{got_m:.0f}",
                 f"{meas['requests']}",
                 f"the record's + the warm-up's requests in flight at its end (0 to {conns}, the same "
                 f"number the warm-up's series lacks): {moved_w if moved_w is not None else '?':.0f}", ok))
    for check, name, want in (("ok requests of the measurement", "requests_ok", meas["outcomes"]["ok"]),
                              ("latency values of the measurement (histogram `_count`)", "latency_count",
                               meas["latency"]["count"])):
        got = scalar(run, name)
        ok = got is not None and moved is not None and 0 <= got - want <= moved
        rows.append((check, "none" if got is None else f"{got:.0f}", f"{want}",
                     f"the record's + 0 to {moved if moved is not None else '?':.0f} (those in flight)", ok))
    exact("requests of the whole run (both phases)", "requests_run",
          meas["requests"] + (rec["warmup"]["requests"] if rec.get("warmup") else 0))
    for q in (50.0, 90.0, 99.0):
        name = f"p{int(q)}"
        got, want = scalar(run, name), pct(rec, q)
        lo, hi = bucket_of(want)
        ok = got is not None and want is not None and lo < got <= hi
        hi_s = "+Inf" if math.isinf(hi) else f"{hi * 1e3:g} ms"
        rows.append((f"{name} (histogram_quantile over the final buckets)", fmt_s(got), fmt_s(want),
                     f"in gatebench's {name} bucket ({lo * 1e3:g} ms, {hi_s}]", ok))
    target = float(p["rate"])
    tol = float(p["rate_tolerance"])
    got = scalar(run, "rate_ok_mid")
    ok = got is not None and abs(got - target) <= tol * target
    rows.append((f"rate(ok[{p.get('rate_window', '10s')}]) mid-measurement", "none" if got is None else f"{got:.1f}/s",
                 f"target {target:g}/s", f"within ±{tol * 100:g} % of the target", ok))
    got = scalar(run, "phase_max")
    rows.append(("last phase scraped (gatebench_phase)", "none" if got is None else f"{got:g}", "2 (done)",
                 "equal: the final figures were scraped", got == 2))
    s, c = scalar(run, "up_sum"), scalar(run, "up_count")
    rows.append(("scrapes that succeeded while the endpoint was up", "none" if s is None else f"{s:.0f} of {c:.0f}",
                 "every one", "all (up == 1)", s is not None and c is not None and c > 0 and s == c))
    dash = os.path.join(run, "dashboard-check.tsv")
    if os.path.isfile(dash):
        with open(dash, encoding="utf-8") as f:
            lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
        body = lines[1:]
        bad = [l for l in body if l[-1] != "ok"]
        rows.append(("Grafana dashboard: structure, every expr accepted by Prometheus, every metric exported",
                     f"{len(body) - len(bad)} of {len(body)} items ok", "—",
                     "no PromQL error, no unknown metric or variable", not bad and bool(body)))
    return rows


# The native histogram's schema (crates/loadgen/src/metrics/native.rs): bucket i holds
# (2^((i-1)/8), 2^(i/8)] seconds.
SCHEMA = 3


def native_index(v):
    """The index of the native bucket that holds v seconds (v > 0)."""
    i = math.ceil(math.log2(v) * 2 ** SCHEMA)
    if v > 2 ** (i / 2 ** SCHEMA):
        i += 1
    elif v <= 2 ** ((i - 1) / 2 ** SCHEMA):
        i -= 1
    return i


def native_edges(i):
    return 2 ** ((i - 1) / 2 ** SCHEMA), 2 ** (i / 2 ** SCHEMA)


def comparisons_v2(run):
    """The checks of a run with remote write and a protobuf scrape: one row each, as
    comparisons()."""
    rec, p = record(run), params(run)
    meas = rec["measurement"]
    warm = rec.get("warmup")
    conns = rec["config"]["connections"]
    rows = []
    n = lambda x: "none" if x is None else f"{x:.0f}"  # noqa: E731
    run_total = meas["requests"] + (warm["requests"] if warm else 0)
    target = float(p["rate"])
    tol = float(p["rate_tolerance"])
    for pre, src in (("rw_", "remote write"), ("", "scrape (protobuf)")):
        got = scalar(run, pre + "requests_run")
        rows.append((f"{src}: requests of the whole run (both phases)", n(got), f"{run_total}", "exact (equal)",
                     got is not None and got == run_total))
        got_m = scalar(run, pre + "requests_total")
        got_w = scalar(run, pre + "requests_warmup") if warm else 0.0
        moved = None if got_m is None else got_m - meas["requests"]
        moved_w = None if got_w is None else (warm["requests"] if warm else 0) - got_w
        ok = moved is not None and moved == moved_w and 0 <= moved <= conns
        rows.append((f"{src}: requests of the measurement (every outcome)", n(got_m), f"{meas['requests']}",
                     f"the record's + the warm-up's requests in flight at its end (0 to {conns}, the same "
                     f"number the warm-up's series lacks): {moved_w if moved_w is not None else '?':.0f}", ok))
        got = scalar(run, pre + "requests_ok")
        want = meas["outcomes"]["ok"]
        ok = got is not None and moved is not None and 0 <= got - want <= moved
        rows.append((f"{src}: ok requests of the measurement", n(got), f"{want}",
                     f"the record's + 0 to {moved if moved is not None else '?':.0f} (those in flight)", ok))
        if pre == "rw_":
            got = scalar(run, "rw_latency_count")
            want = meas["latency"]["count"]
            ok = got is not None and moved is not None and 0 <= got - want <= moved
            rows.append((f"{src}: latency values of the measurement (`_count`)", n(got), f"{want}",
                         f"the record's + 0 to {moved if moved is not None else '?':.0f} (those in flight)", ok))
            rw_moved = moved
        got = scalar(run, pre + "rate_ok_mid")
        rows.append((f"{src}: rate(ok[{p.get('rate_window', '10s')}]) mid-measurement",
                     "none" if got is None else f"{got:.1f}/s", f"target {target:g}/s",
                     f"within ±{tol * 100:g} % of the target", got is not None and abs(got - target) <= tol * target))
        got = scalar(run, pre + "phase_max")
        rows.append((f"{src}: last phase (gatebench_phase)", "none" if got is None else f"{got:g}", "2 (done)",
                     "equal: the final figures arrived", got == 2))
    # Classic buckets, remote-written: the quantile within the bucket holding the record's.
    for q in (50.0, 90.0, 99.0):
        got, want = scalar(run, f"rw_p{int(q)}"), pct(rec, q)
        lo, hi = bucket_of(want)
        hi_s = "+Inf" if math.isinf(hi) else f"{hi * 1e3:g} ms"
        rows.append((f"remote write: p{int(q)} (histogram_quantile over the final classic buckets)", fmt_s(got),
                     fmt_s(want), f"in gatebench's p{int(q)} bucket ({lo * 1e3:g} ms, {hi_s}]",
                     got is not None and want is not None and lo < got <= hi))
    # The native histogram, scraped.
    got = scalar(run, "native_count")
    want = meas["latency"]["count"]
    moved = scalar(run, "requests_total")
    moved = None if moved is None else moved - meas["requests"]
    ok = got is not None and moved is not None and 0 <= got - want <= moved
    rows.append(("native histogram: count (histogram_count)", n(got), f"{want}",
                 f"the record's + 0 to {moved if moved is not None else '?':.0f} (those in flight)", ok))
    got = scalar(run, "native_sum")
    want_sum = meas["latency"]["mean_ms"] * meas["latency"]["count"] / 1e3
    ok = got is not None and abs(got - want_sum) <= 0.005 * want_sum
    rows.append(("native histogram: sum (histogram_sum)", "none" if got is None else f"{got:.3f} s",
                 f"{want_sum:.3f} s (mean × count)", "within 0.5 % (values at their sub-bucket's top, and those in flight)", ok))
    for q in (50.0, 90.0, 99.0):
        got, want = scalar(run, f"native_p{int(q)}"), pct(rec, q)
        if got is None or want is None or got <= 0:
            rows.append((f"native histogram: p{int(q)} (histogram_quantile)", fmt_s(got), fmt_s(want),
                         "within one native bucket", False))
            continue
        gi, wi = native_index(got), native_index(want)
        lo, hi = native_edges(wi)
        rows.append((f"native histogram: p{int(q)} (histogram_quantile)", fmt_s(got), fmt_s(want),
                     f"within one native bucket of gatebench's ({lo * 1e3:.3f} ms, {hi * 1e3:.3f} ms]: "
                     f"{gi - wi:+d} bucket{'s' if abs(gi - wi) != 1 else ''}", abs(gi - wi) <= 1))
    s_, c = scalar(run, "up_sum"), scalar(run, "up_count")
    rows.append(("scrapes that succeeded while the endpoint was up", "none" if s_ is None else f"{s_:.0f} of {c:.0f}",
                 "every one", "all (up == 1)", s_ is not None and c is not None and c > 0 and s_ == c))
    err = os.path.join(run, "load-stderr.txt")
    said = []
    if os.path.isfile(err):
        with open(err, encoding="utf-8") as f:
            said = [l.strip() for l in f if "--remote-write" in l]
    pushes = scalar(run, "rw_samples")
    rows.append(("remote-write pushes Prometheus took (gatebench_phase samples)", n(pushes),
                 "no failure said on stderr" if not said else "; ".join(said),
                 "at least one a second of load, none failed", pushes is not None and not said
                 and pushes >= float(p.get("load_seconds", 0))))
    dash = os.path.join(run, "dashboard-check.tsv")
    if os.path.isfile(dash):
        with open(dash, encoding="utf-8") as f:
            lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
        body = lines[1:]
        bad = [l for l in body if l[-1] != "ok"]
        rows.append(("Grafana dashboard: structure, every expr accepted by Prometheus, every metric exported",
                     f"{len(body) - len(bad)} of {len(body)} items ok", "—",
                     "no PromQL error, no unknown metric or variable", not bad and bool(body)))
    return rows


def checks(run):
    return comparisons_v2(run) if with_remote_write(run) else comparisons(run)


def cmd_tsv(run):
    print("check\tpromql\tgatebench\tbound\tpass")
    for r in checks(run):
        print("\t".join(r[:4]) + "\t" + ("pass" if r[4] else "FAIL"))
    return 0


def cmd_summary(run):
    rec, p = record(run), params(run)
    stamp = os.path.basename(run.rstrip("/")).removeprefix("prometheus-check-")
    date, t = stamp.split("T")
    rows = checks(run)
    print(f"# Prometheus check, {date}T{t[:2]}:{t[2:4]}Z")
    print()
    if with_remote_write(run):
        print(f"gatebench {rec['tool']['version']} against `gatebench serve echo --delay {p['delay']}`; "
              f"`gatebench load -R {p['rate']} -c {p['conns']} -d {p['duration']} --warmup {p['warmup']} "
              f"--metrics … --metrics-linger {p['linger']} --remote-write …/api/v1/write`: scraped every "
              f"{p['scrape_interval']} (the protobuf exposition: native histograms on) and pushed to by remote "
              f"write every {p.get('remote_write_interval', '1s')}, into one {p['prometheus_version']} "
              f"(`--enable-feature=native-histograms --web.enable-remote-write-receiver`). Scraped series: "
              f"instance `{p['scrape_instance']}`; remote-written: instance `{p['remote_instance']}`. "
              f"Raw data: `prometheus-check-{stamp}/` (record, PromQL answers), "
              f"comparisons: `prometheus-check-{stamp}.tsv`.")
    else:
        print(f"gatebench {rec['tool']['version']} against `gatebench serve echo --delay {p['delay']}`; "
              f"`gatebench load -R {p['rate']} -c {p['conns']} -d {p['duration']} --warmup {p['warmup']} "
              f"--metrics … --metrics-linger {p['linger']}`, scraped every {p['scrape_interval']} by "
              f"{p['prometheus_version']}. Raw data: `prometheus-check-{stamp}/` (record, PromQL answers), "
              f"comparisons: `prometheus-check-{stamp}.tsv`.")
    print()
    print("### Checks")
    print()
    print("| check | PromQL | gatebench's record | bound | result |")
    print("|---|---:|---:|---|---|")
    for c, got, want, bound, ok in rows:
        print(f"| {c} | {got} | {want} | {bound} | {'pass' if ok else '**fail**'} |")
    print()
    print("- buckets of the exported histogram (upper bounds, s): "
          + ", ".join(f"{b:g}" for b in BUCKETS) + ", +Inf; a quantile from them is interpolated "
          "linearly within the bucket that holds it, so one bucket is the bound")
    if with_remote_write(run):
        print(f"- the native histogram: schema {SCHEMA}, bucket i = (2^((i-1)/8), 2^(i/8)] s, each about 9 % wider "
              "than the one below; PromQL's quantile is interpolated within a bucket, so one bucket either side "
              "is the bound")
    n = scalar(run, "scrape_samples")
    if n is not None:
        print(f"- samples per scrape: {n:.0f}")
    lint = os.path.join(run, "promtool-check-metrics.txt")
    if os.path.isfile(lint):
        with open(lint, encoding="utf-8") as f:
            text = [l.strip() for l in f if l.strip()]
        print("- `promtool check metrics` on a scrape mid-run: "
              + ("no complaint" if not text else "; ".join(f"`{l}`" for l in text)))
    failed = [r[0] for r in rows if not r[4]]
    print()
    print("**Result: pass**" if not failed else f"**Result: fail** ({'; '.join(failed)})")
    return 0


# ---------------------------------------------------------------------------
# The Grafana dashboard
# ---------------------------------------------------------------------------

VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?")


def dashboard_items(dash, scenario):
    """(item, problem or None, expr to send or None) for the dashboard's structure and each
    panel target; the variables are replaced as Grafana would with this run's values."""
    items = []
    for key in ("title", "uid", "panels", "templating", "schemaVersion"):
        items.append((f"field {key}", None if key in dash else "missing", None))
    sv = dash.get("schemaVersion")
    items.append(("schemaVersion is an integer", None if isinstance(sv, int) and sv > 0 else f"{sv!r}", None))
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    values = {"scenario": scenario, "instance": ".*", "phase": "(measurement|warmup)"}
    ds = variables.get("datasource")
    items.append(("datasource variable of type prometheus",
                  None if ds and ds.get("type") == "datasource" and ds.get("query") == "prometheus" else "missing", None))
    ids = set()
    for panel in dash.get("panels", []):
        t = panel.get("title", "?")
        prob = []
        if panel.get("id") in ids:
            prob.append(f"id {panel.get('id')} twice")
        ids.add(panel.get("id"))
        g = panel.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")) or g.get("x", 0) + g.get("w", 0) > 24:
            prob.append(f"gridPos {g}")
        if not panel.get("type"):
            prob.append("no type")
        if (panel.get("datasource") or {}).get("uid") != "${datasource}":
            prob.append("datasource is not ${datasource}")
        if not panel.get("targets"):
            prob.append("no targets")
        items.append((f"panel '{t}'", "; ".join(prob) or None, None))
        refs = set()
        for tg in panel.get("targets", []):
            expr = tg.get("expr", "")
            if not tg.get("refId") or tg.get("refId") in refs:
                items.append((f"panel '{t}' target {tg.get('refId')}", "refId missing or repeated", None))
            refs.add(tg.get("refId"))
            unknown = [v for v in VAR.findall(expr) if v not in variables and v not in GRAFANA_BUILTINS]
            if unknown:
                items.append((f"panel '{t}' {tg.get('refId')}", f"unknown variables {unknown}", None))
                continue

            def fill(m):
                n = m.group(1)
                return GRAFANA_BUILTINS.get(n) or values.get(n) or ".*"

            items.append((f"panel '{t}' {tg.get('refId')}", None, VAR.sub(fill, expr)))
    for name, v in variables.items():
        if v.get("type") == "query":
            q = v.get("query", {})
            q = q.get("query") if isinstance(q, dict) else q
            m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)", q or "")
            if not m:
                items.append((f"variable {name}", f"query {q!r} is not label_values(SELECTOR, LABEL)", None))
            else:
                items.append((f"variable {name}", None, ("label", VAR.sub(lambda x: values.get(x.group(1), ".*"), m.group(1)),
                                                           m.group(2))))
    return items


def cmd_dashboard(base, path, run):
    p = params(run)
    t = windows(run)["mid"]
    rows = [("item", "sent to Prometheus", "series", "result")]
    try:
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
    except ValueError as e:
        rows.append((f"{path} is JSON", "", "", f"not JSON: {e}"))
        dash = None
    if dash is not None:
        rows.append((f"{os.path.basename(path)} is JSON", "", "", "ok"))
        metrics = set()
        for item, prob, expr in dashboard_items(dash, p["scenario"]):
            if prob:
                rows.append((item, "", "", prob))
            elif expr is None:
                rows.append((item, "", "", "ok"))
            elif isinstance(expr, tuple):  # a label_values variable
                _, match, label = expr
                resp = api(base, f"/api/v1/label/{label}/values",
                           {"match[]": match, "start": f"{t - 60:.3f}", "end": f"{t:.3f}"})
                vals = resp.get("data") or []
                ok = resp.get("status") == "success" and vals
                rows.append((item, f"label {label} of {match}", str(len(vals)),
                             "ok" if ok else f"no values: {resp.get('error', '')}"))
            else:
                metrics.update(re.findall(r"\b(gatebench_[a-z_]+?)(?:_bucket)?\b", expr))
                resp = api(base, "/api/v1/query", {"query": expr, "time": f"{t:.3f}"})
                if resp.get("status") == "success":
                    rows.append((item, expr, str(len(resp["data"]["result"])), "ok"))
                else:
                    rows.append((item, expr, "", f"PromQL error: {resp.get('errorType')}: {resp.get('error')}"))
        for name in sorted(metrics):
            expr = f'count({{__name__=~"{name}(_bucket)?",job="{JOB}"}})'
            resp = api(base, "/api/v1/query", {"query": expr, "time": f"{t:.3f}"})
            ok = resp.get("status") == "success" and resp["data"]["result"]
            rows.append((f"metric {name} exported", expr, str(len(resp.get("data", {}).get("result", []))),
                         "ok" if ok else "not in the scrape"))
    with open(os.path.join(run, "dashboard-check.tsv"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write("\t".join(x.replace("\t", " ").replace("\n", " ") for x in r) + "\n")
    bad = [r for r in rows[1:] if r[-1] != "ok"]
    for r in bad:
        print(f"prometheus_check: dashboard: {r[0]}: {r[-1]}", file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "query" and len(argv) == 4:
        return cmd_query(argv[2], argv[3])
    if len(argv) >= 2 and argv[1] == "dashboard" and len(argv) == 5:
        return cmd_dashboard(argv[2], argv[3], argv[4])
    if len(argv) == 3 and argv[1] == "summary":
        return cmd_summary(argv[2])
    if len(argv) == 3 and argv[1] == "tsv":
        return cmd_tsv(argv[2])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
