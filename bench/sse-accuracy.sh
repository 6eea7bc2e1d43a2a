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
# 2. The proxy per event. The same model (no jitter) at CONNS_PROXY concurrent streams, measured
#    directly and through `gatebench serve proxy`, one run each: time to first byte, time to
#    first token and inter-token gaps, p50 and p99, and the difference. The first token's
#    difference is an upper bound of what the proxy adds to one event (it also holds the
#    request's way in); the gaps' p99 shows whether events were held back and bunched.
#
#   bench/sse-accuracy.sh                       # ~40 s of load in all
#   DURATION=20s CONNS_PROXY=500 bench/sse-accuracy.sh
#   bench/sse-accuracy.sh --report bench/results/sse-accuracy-DATE.tsv   # re-print a result
#
# Environment: CONNS (50, streams of the accuracy run), DURATION (10s per run), WARMUP (2s),
# TOKENS (50 per stream), CONNS_PROXY (1000), SERVER_CORE (0: the echo, and the proxy),
# GEN_CORE (1: the generator), GATEBENCH (target/release/gatebench, built if missing), NICE (0).
#
# Raw: one row per figure in bench/results/sse-accuracy-<date>.tsv (measured_ms: gatebench's
# figure, through the proxy in part 2; reference_ms: the server's own in part 1, direct in part
# 2; `meta` rows carry the set-up in words), the gatebench records and the server's log in
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
print("| figure | direct | through the proxy | added |")
print("|---|---:|---:|---:|")
for r in rows:
    if r["part"] != "proxy":
        continue
    d, v = float(r["reference_ms"]), float(r["measured_ms"])
    print(f"| {r['figure']} | {d:.2f} ms | {v:.2f} ms | {v - d:+.2f} ms |")
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

# 2. The proxy per event: no jitter, CONNS_PROXY streams, direct then through the proxy.
gb_gatebench_serve "$GB_TMP/echo" "$SERVER_CORE" echo --port 0 --threads 1 \
  --chat-first-token 200ms --chat-interval 20ms --chat-tokens "$TOKENS"
backend="127.0.0.1:$GB_SERVE_PORT"
gb_gatebench_serve "$GB_TMP/proxy" "$SERVER_CORE" proxy --port 0 --threads 1 \
  --upstream "http://$backend/"
proxy_port=$GB_SERVE_PORT
load direct "http://$backend/v1/chat/completions" "$CONNS_PROXY"
load via-proxy "http://127.0.0.1:$proxy_port/v1/chat/completions" "$CONNS_PROXY"

python3 - "$records" "$results" "$CONNS" "$CONNS_PROXY" "$DURATION" "$WARMUP" "$TOKENS" \
  "$(nproc) cores ($(uname -r)); $("$GATEBENCH" --version | head -n1); echo (1 thread) and proxy (1 thread) on core $SERVER_CORE, generator (1 thread) on core $GEN_CORE" <<'PY'
import json, sys, datetime
d, out, conns, conns_proxy, duration, warmup, tokens, machine = sys.argv[1:9]

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
def row(part, figure, g, s):
    rows.append((part, figure, f"{g:.4f}", f"{s:.4f}"))
def at(summary, p):
    return next(x["ms"] for x in summary["percentiles"] if x["p"] == p)
for p in (50, 99):
    row("accuracy", f"time to first token p{p}", at(acc["time_to_first_event"], p), rank(ttft, p))
for p in (50, 99):
    row("accuracy", f"inter-token p{p}", at(acc["inter_event"], p), rank(gaps, p))
direct = json.load(open(f"{d}/direct.json"))
via = json.load(open(f"{d}/via-proxy.json"))
for key, name in (("time_to_first_byte", "time to first byte"), ("time_to_first_event", "time to first token"), ("inter_event", "inter-token gap")):
    for p in (50, 99):
        row("proxy", f"{name} p{p}", at(via["stream"][key], p), at(direct["stream"][key], p))

def counts(r):
    o, s = r["measurement"]["outcomes"], r["stream"]
    errs = {k: v for k, v in o.items() if v and k not in ("ok", "in_flight")}
    return f"{s['completed']} streams complete, {s['events']} tokens ({s['events_per_s']:.0f}/s), errors: {errs or 'none'}"
meta = [
    ("when", f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}, {machine}."),
    ("accuracy_setup", f"first token after 200 ms, then a token every 20 ms ± 5 ms (uniform), {tokens} tokens a stream; `gatebench load --llm -c {conns}` for {duration} after a {warmup} warm-up (closed model)"),
    ("accuracy_counts", f"gatebench: {counts(json.load(open(f'{d}/accuracy.json')))}. The server's own: {len(ttft)} streams, {len(gaps)} gaps, from its --chat-log (every stream it finished, warm-up included). Server times run from the request's arrival to the moment the echo handed each event to its HTTP server; gatebench's from the request's send to the read that brought the event, so the first token differs by the request's and the event's trips over loopback."),
    ("proxy_setup", f"first token after 200 ms, then a token every 20 ms, {tokens} tokens a stream; {conns_proxy} concurrent streams for {duration} after a {warmup} warm-up, directly and through `gatebench serve proxy` (one run each)"),
    ("proxy_counts", f"Direct: {counts(direct)}. Through the proxy: {counts(via)}. The first token's difference holds the request's way in through the proxy as well as the event's way out: an upper bound of what the proxy adds to one event. An event held back for the next would show as gaps near 0 and 40 ms, moving the gaps' p99."),
]
with open(out, "w") as f:
    f.write("part\tfigure\tmeasured_ms\treference_ms\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
    for k, v in meta:
        f.write(f"meta\t{k}\t{v}\t\n")
PY
report "$results" | tee "${results%.tsv}.md"
