#!/usr/bin/env bash
# Server-sent event streams: how exactly gatebench times tokens, and what gatebench's reference
# proxy adds to each event.
#
# 1. Accuracy. The echo's emulated model (`serve echo`, POST /v1/chat/completions with
#    "stream": true) sends its first token 200 ms after a request and then a token every 20 ms
#    ± 5 ms (uniform jitter), and logs its own times (--chat-log: request → first token, then
#    every gap, as it handed each event to its server). `gatebench load --llm` measures the same
#    streams. The script sets gatebench's time to first token and inter-token p50/p99 beside the
#    server's own, computed from the log.
# 2. The proxy per event. The same model (no jitter), each token stamped with the echo's clock
#    as it wrote the event (`serve echo --chat-stamp`), at CONNS_PROXY concurrent streams,
#    measured directly and through `gatebench serve proxy`, RUNS interleaved pairs: the delay
#    of every event from the echo's stamp to the generator's read (one-way, the same clock),
#    direct and through the proxy, p50/p99/p99.9/max, medians over the runs, and the paired
#    difference — what the proxy adds to each event. The proxy has core SERVER_CORE to itself;
#    the echo and the generator share GEN_CORE, in both modes. Time to first byte, first token
#    and the gaps are set beside them.
#
#   bench/sse-accuracy.sh                       # ~90 s of load in all
#   DURATION=20s CONNS_PROXY=500 bench/sse-accuracy.sh
#   bench/sse-accuracy.sh --report bench/results/sse-accuracy-DATE.tsv   # re-print a result
#
# Environment: CONNS (50, streams of the accuracy run), DURATION (10s per run), WARMUP (2s),
# TOKENS (50 per stream), CONNS_PROXY (1000), RUNS (3 pairs), SERVER_CORE (0: the echo of part
# 1, the proxy of part 2), GEN_CORE (1: the generator, and the echo of part 2), GATEBENCH
# (target/release/gatebench, built if missing), NICE (0).
#
# Raw: one row per figure in bench/results/sse-accuracy-<date>.tsv (measured_ms: gatebench's
# figure, through the proxy in part 2; reference_ms: the server's own in part 1, direct in part
# 2, medians over the runs; `added_ms`: part 2's median of the paired differences; `meta` rows
# carry the set-up in words), the gatebench records and the server's log in
# bench/results/sse-accuracy-<date>/; the Markdown report on stdout and beside the TSV (.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

report() {
  python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t", quoting=csv.QUOTE_NONE))
meta = {r["figure"]: r["measured_ms"] for r in rows if r["part"] == "meta"}
print("## Server-sent events: token timing accuracy, and the proxy per event")
print()
print(meta.get("when", ""))
print()
print(f"### Accuracy: {meta['accuracy_setup']}")
print()
print("| figure | gatebench | the server's own | difference |")
print("|---|---:|---:|---:|")
for r in rows:
    if r["part"] != "accuracy":
        continue
    g, s = float(r["measured_ms"]), float(r["reference_ms"])
    print(f"| {r['figure']} | {g:.2f} ms | {s:.2f} ms | {g - s:+.2f} ms |")
print()
print(meta.get("accuracy_counts", ""))
print()
print(f"### The proxy per event: {meta['proxy_setup']}")
print()
print("| figure | direct | through the proxy | added (paired runs) |")
print("|---|---:|---:|---:|")
for r in rows:
    if r["part"] != "proxy":
        continue
    d, v = float(r["reference_ms"]), float(r["measured_ms"])
    added = float(r["added_ms"]) if r.get("added_ms") else v - d
    print(f"| {r['figure']} | {d:.3f} ms | {v:.3f} ms | {added:+.3f} ms |")
print()
print(meta.get("proxy_counts", ""))
PY
}

if [[ "${1:-}" == --report ]]; then
  [[ -f "${2:-}" ]] || gb_die "usage: bench/sse-accuracy.sh --report FILE.tsv"
  report "$2"
  exit 0
fi

CONNS=${CONNS:-50}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
TOKENS=${TOKENS:-50}
CONNS_PROXY=${CONNS_PROXY:-1000}
RUNS=${RUNS:-3}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_gatebench
gb_snapshot_gatebench
results=$(gb_results_file sse-accuracy)
records="${results%.tsv}"
mkdir -p "$records"
gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"

# load NAME URL CONNS EXTRA... — one `gatebench load --llm` run, its record kept.
load() {
  local name=$1 url=$2 conns=$3
  shift 3
  gb_log "$name: $conns streams for $DURATION after $WARMUP"
  nice -n "$GB_NICE" taskset -c "$GEN_CORE" timeout 600 \
    "$GATEBENCH" load "$url" --llm --max-tokens "$TOKENS" -c "$conns" -t 1 -d "$DURATION" \
    --warmup "$WARMUP" --timeout 30s --stall 5s -q --json "$records/$name.json" "$@" \
    >"$GB_TMP/$name.out" 2>"$GB_TMP/$name.err" \
    || gb_die "gatebench load ($name) failed: $(tail -n3 "$GB_TMP/$name.err")"
}

# 1. Accuracy: first token after 200 ms, a token every 20 ms ± 5 ms, the server's own log.
gb_gatebench_serve "$GB_TMP/echo-jitter" "$SERVER_CORE" echo --port 0 --threads 1 \
  --chat-first-token 200ms --chat-interval 20ms --chat-jitter 5ms --chat-tokens "$TOKENS" \
  --chat-log "$GB_TMP/chat.log"
load accuracy "http://127.0.0.1:$GB_SERVE_PORT/v1/chat/completions" "$CONNS"
cp "$GB_TMP/chat.log" "$records/server-chat.log"
gb_stop_pid "$GB_SERVE_PID"

# 2. The proxy per event: no jitter, stamped tokens, CONNS_PROXY streams, direct and through
# the proxy in interleaved pairs. The proxy alone on SERVER_CORE; the echo beside the generator.
gb_gatebench_serve "$GB_TMP/echo" "$GEN_CORE" echo --port 0 --threads 1 \
  --chat-first-token 200ms --chat-interval 20ms --chat-tokens "$TOKENS" --chat-stamp
backend="127.0.0.1:$GB_SERVE_PORT"
gb_gatebench_serve "$GB_TMP/proxy" "$SERVER_CORE" proxy --port 0 --threads 1 \
  --upstream "http://$backend/"
proxy_port=$GB_SERVE_PORT
for ((run = 1; run <= RUNS; run++)); do
  load "direct-$run" "http://$backend/v1/chat/completions" "$CONNS_PROXY"
  load "via-proxy-$run" "http://127.0.0.1:$proxy_port/v1/chat/completions" "$CONNS_PROXY"
done

python3 - "$records" "$results" "$CONNS" "$CONNS_PROXY" "$DURATION" "$WARMUP" "$TOKENS" "$RUNS" \
  "$(nproc) cores ($(uname -r)); $("$GATEBENCH" --version | head -n1); accuracy: the echo (1 thread) on core $SERVER_CORE, the generator (1 thread) on core $GEN_CORE; the proxy per event: the proxy (1 thread) alone on core $SERVER_CORE, the echo (1 thread) and the generator (1 thread) on core $GEN_CORE" <<'PY'
import json, sys, datetime, statistics
d, out, conns, conns_proxy, duration, warmup, tokens, runs, machine = sys.argv[1:10]
runs = int(runs)

def rank(xs, p):
    """Nearest-rank percentile, as HdrHistogram reports it (the value at or below which p % lie)."""
    xs = sorted(xs)
    k = max(1, -(-len(xs) * p // 100))
    return xs[int(k) - 1]

ttft, gaps = [], []
for line in open(f"{d}/server-chat.log"):
    us = [int(x) for x in line.split()]
    if us:
        ttft.append(us[0] / 1e3)
        gaps.extend(u / 1e3 for u in us[1:])
acc = json.load(open(f"{d}/accuracy.json"))["stream"]
rows = []
def row(part, figure, g, s, added=None):
    rows.append((part, figure, f"{g:.4f}", f"{s:.4f}", "" if added is None else f"{added:.4f}"))
def at(summary, p):
    return next(x["ms"] for x in summary["percentiles"] if x["p"] == p)
for p in (50, 99):
    row("accuracy", f"time to first token p{p}", at(acc["time_to_first_event"], p), rank(ttft, p))
for p in (50, 99):
    row("accuracy", f"inter-token p{p}", at(acc["inter_event"], p), rank(gaps, p))
direct = [json.load(open(f"{d}/direct-{i}.json")) for i in range(1, runs + 1)]
via = [json.load(open(f"{d}/via-proxy-{i}.json")) for i in range(1, runs + 1)]
def fig(r, key, p):
    s = r["stream"].get(key)
    if s is None:
        sys.exit(f"no {key} in a record: was the echo stamping its events (--chat-stamp)?")
    if p == "max":
        return s["max_ms"]
    return at(s, p)
for key, name, ps in (
    ("event_delay", "event delay, echo's stamp to the generator's read,", (50, 99, 99.9, "max")),
    ("time_to_first_byte", "time to first byte", (50, 99)),
    ("time_to_first_event", "time to first token", (50, 99)),
    ("inter_event", "inter-token gap", (50, 99)),
):
    for p in ps:
        dv = [fig(r, key, p) for r in direct]
        vv = [fig(r, key, p) for r in via]
        label = f"{name} {'max' if p == 'max' else f'p{p:g}'}"
        row("proxy", label, statistics.median(vv), statistics.median(dv),
            statistics.median(v - x for v, x in zip(vv, dv)))

def counts(r):
    o, s = r["measurement"]["outcomes"], r["stream"]
    errs = {k: v for k, v in o.items() if v and k not in ("ok", "in_flight")}
    return f"{s['completed']} streams complete, {s['events']} tokens ({s['events_per_s']:.0f}/s), errors: {errs or 'none'}"
meta = [
    ("when", f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}, {machine}."),
    ("accuracy_setup", f"first token after 200 ms, then a token every 20 ms ± 5 ms (uniform), {tokens} tokens a stream; `gatebench load --llm -c {conns}` for {duration} after a {warmup} warm-up (closed model)"),
    ("accuracy_counts", f"gatebench: {counts(json.load(open(f'{d}/accuracy.json')))}. The server's own: {len(ttft)} streams, {len(gaps)} gaps, from its --chat-log (every stream it finished, warm-up included). Server times run from the request's arrival to the moment the echo handed each event to its HTTP server; gatebench's from the request's send to the read that brought the event, so the first token differs by the request's and the event's trips over loopback."),
    ("proxy_setup", f"first token after 200 ms, then a token every 20 ms, {tokens} tokens a stream, each token stamped by the echo as it wrote it (`--chat-stamp`); {conns_proxy} concurrent streams for {duration} after a {warmup} warm-up, directly and through `gatebench serve proxy`, {runs} interleaved pairs of runs; medians over the runs"),
    ("proxy_counts", "Direct: " + "; ".join(counts(r) for r in direct) + ". Through the proxy: " + "; ".join(counts(r) for r in via) + ". The event delay runs from the echo's wall clock as it produced the event to the generator's read that brought it (one machine, one clock): its difference between the two modes is what the proxy adds to each event, at every percentile; added = the median of the paired runs' differences. The first token's difference also holds the request's way in through the proxy. An event held back for the next would show as an event delay near the 20 ms interval."),
]
with open(out, "w") as f:
    f.write("part\tfigure\tmeasured_ms\treference_ms\tadded_ms\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
    for k, v in meta:
        f.write(f"meta\t{k}\t{v}\t\t\n")
PY
report "$results" | tee "${results%.tsv}.md"
