#!/usr/bin/env bash
# What `gatebench load --metrics` costs the generator (issue 25: at most 1 % more CPU per
# request at >= 100k req/s, "measure it side by side"): the same load run without and with
# --metrics, the latter scraped every second the way Prometheus scrapes it with native
# histograms on (the protobuf exposition, the larger of the two forms to encode), against a
# one-core nginx returning a fixed 13-byte body (as bench/loadgen-vs-peers.sh), HTTP/1.1
# keep-alive, 100 connections, one generator thread.
#
#   bench/metrics-cost.sh                      # 12 pairs × 10 s, ~4.5 min
#   RUNS=4 DURATION=5s bench/metrics-cost.sh   # a quick look
#
# Environment: RUNS (12), DURATION (10s), WARMUP (2s, one unrecorded run of each first), CONNS
# (100), SCRAPE_EVERY (1, seconds between scrapes), PROFILE (1: one more run under perf),
# ACCEPT (Prometheus 2.42's Accept header with
# native histograms on; `text/plain` scrapes the text form), SERVER_CORE (0: nginx and the
# scraper), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if missing), NICE (0).
#
# The two tools are `gatebench` (no --metrics) and `gatebench-metrics`; each pair runs back to
# back, their order swapped every pair (A B, B A, …) so that a drift of the machine falls on
# both alike. Generator CPU (user + sys, GNU time) per request served (nginx's stub_status) is
# the figure; the verdict is the median of the per-pair ratios gatebench-metrics ÷ gatebench
# against 1.01, over the pairs whose two runs both served >= 100k req/s (the issue's condition;
# a run below it shared its cores with other work), inconclusive when fewer than half did. Every scrape's HTTP status is kept, and a run whose scrapes failed is refused.
#
# Results: bench/results/metrics-cost-<date>.tsv (one row per run, bench/lib.sh's columns),
# .md (the summary: gb_summarize's table, the paired ratios, the verdict).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-12}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-100}
SCRAPE_EVERY=${SCRAPE_EVERY:-1}
ACCEPT=${ACCEPT:-application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
BOUND=1.01

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS must be a positive integer, got '$RUNS'"
dur_s=$(gb_duration_secs "$DURATION")
warm_s=$(gb_duration_secs "$WARMUP")
[[ $dur_s -ge 3 ]] || gb_die "DURATION must be at least 3s (scrapes every ${SCRAPE_EVERY}s)"

gb_init
gb_need_two_cores
gb_need_gnu_time
gb_need_cmd python3 python3
gb_need_cmd curl curl
gb_need_cmd timeout coreutils
gb_need_nginx
gb_need_gatebench
gb_snapshot_gatebench

port=$(gb_free_port)
srv="$GB_TMP/nginx"
gb_nginx_hello_conf "$srv" "$port" 1
gb_nginx_start "$srv" "$SERVER_CORE" "$port"
url="http://127.0.0.1:$port/"
body=$(gb_http_get "$port" /)
[[ $body == "Hello, world!" ]] || gb_die "unexpected body from nginx: '$body'"

# scrape_loop PORT OUT — GET /metrics every SCRAPE_EVERY s on the server's core, each status
# code a line of OUT (000: no answer); runs until stopped by its PID. One long-lived Python
# process, as a Prometheus is one process: a curl started every second cost the server's core
# enough (fork, exec, TLS-less set-up) to lower nginx's rate by a few percent.
scrape_loop() {
  exec taskset -c "$SERVER_CORE" python3 -c '
import http.client, sys, time
port, out, accept, every = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
nxt = time.monotonic()
while True:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/metrics", headers={"Accept": accept})
        r = c.getresponse()
        r.read()
        code = r.status
        c.close()
    except OSError:
        code = "000"
    with open(out, "a") as f:
        f.write(f"{code}\n")
    nxt += every
    time.sleep(max(0.0, nxt - time.monotonic()))
' "$1" "$2" "$ACCEPT" "$SCRAPE_EVERY"
}

# run_tool TOOL SECONDS OUT — as bench/loadgen-vs-peers.sh's: sets rc, tool_rps, tool_ok.
run_tool() {
  local tool=$1 secs=$2 out=$3 tmo=$(($2 + 30)) mport scraper=""
  local -a extra=()
  rc=0
  if [[ $tool == gatebench-metrics ]]; then
    mport=$(gb_free_port)
    extra=(--metrics "127.0.0.1:$mport")
    : >"$out.scrapes"
    # The first scrapes find nothing listening until gatebench is up: started a moment later.
    (sleep 0.5 && scrape_loop "$mport" "$out.scrapes") &
    scraper=$!
    gb_track_pid "$scraper"
  fi
  gb_timed "$out.time" "$GEN_CORE" "$tmo" \
    "$GATEBENCH" load "$url" -c "$CONNS" -d "${secs}s" --threads 1 -q --json "$out.json" \
    "${extra[@]}" >"$out.out" 2>"$out.err" || rc=$?
  if [[ -n $scraper ]]; then
    gb_stop_pid "$scraper"
    gb_untrack_pid "$scraper"
  fi
  tool_rps=NA
  tool_ok=NA
  [[ $rc -eq 0 ]] || return 0
  read -r tool_rps tool_ok < <(gb_gatebench_json "$out.json") || true
  if [[ $tool_rps =~ ^[0-9.]+$ ]]; then tool_rps=$(printf '%.1f' "$tool_rps"); else tool_rps=NA; fi
  [[ -n $tool_ok ]] || tool_ok=NA
  if [[ $tool == gatebench-metrics ]]; then
    # Scrapes while the load ran: one per SCRAPE_EVERY s but the first and the last, all 200.
    local good all
    good=$(grep -c '^200$' "$out.scrapes" || true)
    all=$(grep -c . "$out.scrapes" || true)
    # (run_tool runs inside gb_measured_run's command substitution: a file, not a variable.)
    printf '%s of %s\n' "$good" "$all" >>"$GB_TMP/scrapes.txt"
    if ((good < secs / SCRAPE_EVERY - 2)); then
      gb_log "$tool: only $good of $all scrapes answered 200; the run is refused"
      rc=97
    fi
  fi
}

results=$(gb_results_file metrics-cost)
md=${results%.tsv}.md
tsv="$GB_TMP/runs.tsv"
gb_runs_tsv_header >"$tsv"
gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
if [[ $warm_s -gt 0 ]]; then
  for t in gatebench gatebench-metrics; do
    gb_log "warm-up: $t for ${warm_s}s"
    run_tool "$t" "$warm_s" "$GB_TMP/warmup-$t"
  done
fi
: >"$GB_TMP/scrapes.txt"
for ((run = 1; run <= RUNS; run++)); do
  order=(gatebench gatebench-metrics)
  ((run % 2 == 0)) && order=(gatebench-metrics gatebench)
  for t in "${order[@]}"; do
    row=$(gb_measured_run "$run" "$t" "$dur_s" "$port" "$GB_TMP/run$run-$t" run_tool)
    printf '%s\n' "$row" >>"$tsv"
  done
done
cp "$tsv" "$results"

# One more run with --metrics under perf (cpu-clock sampling: this VM has no hardware counters):
# the exporter's own share of the generator's CPU, read directly rather than as a difference
# of two noisy runs — the samples in the metrics server's and scrapes' threads, and the self
# time of gatebench_loadgen::metrics functions in any thread (what they call without inlining,
# e.g. a BTreeMap's insert, is not counted: the figure is a floor of the exporter's share, a
# close one). PROFILE=0 leaves it out.
profile_line=""
if [[ ${PROFILE:-1} == 1 ]] && command -v perf >/dev/null; then
  prof=$GB_TMP/profile
  mport=$(gb_free_port)
  : >"$prof.scrapes"
  (sleep 0.5 && scrape_loop "$mport" "$prof.scrapes") &
  scraper=$!
  gb_track_pid "$scraper"
  gb_log "profiling one run with --metrics (perf record, ${dur_s}s)"
  nice -n "$GB_NICE" taskset -c "$GEN_CORE" perf record -q -F 999 -o "$prof.data" -- \
    "$GATEBENCH" load "$url" -c "$CONNS" -d "${dur_s}s" --threads 1 -q --metrics "127.0.0.1:$mport" \
    >/dev/null 2>"$prof.err" || gb_log "perf record failed: $(tail -n2 "$prof.err" | tr '\n' ' ')"
  gb_stop_pid "$scraper"
  gb_untrack_pid "$scraper"
  if [[ -s $prof.data ]]; then
    perf report -i "$prof.data" --stdio --no-children --sort comm,sym --show-nr-samples \
      --percent-limit 0 2>/dev/null >"$prof.txt" || true
    profile_line=$(python3 - "$prof.txt" "$(grep -c '^200$' "$prof.scrapes" || true)" <<'PY'
import re, sys
total = exporter_threads = exporter_fns = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[[.k]\]\s+(.*)", line)
    if not m:
        continue
    n, comm, sym = int(m.group(1)), m.group(2), m.group(3)
    total += n
    if comm.startswith(("gatebench-metri", "gatebench-scrap")):
        exporter_threads += n
    elif "gatebench_loadgen::metrics" in sym:
        exporter_fns += n
if total:
    share = 100.0 * (exporter_threads + exporter_fns) / total
    print(f"- profile of one more run with --metrics ({sys.argv[2]} scrapes answered 200; perf, cpu-clock at 999 Hz): "
          f"{total} samples of the generator; the exporter's: {exporter_threads} in the metrics server's and "
          f"scrapes' threads, {exporter_fns} in gatebench_loadgen::metrics functions elsewhere (self): "
          f"{share:.2f} % of the generator's CPU")
PY
)
  fi
fi

verdict() {
  python3 - "$results" "$BOUND" <<'PY'
import csv, statistics, sys
path, bound = sys.argv[1], float(sys.argv[2])
with open(path) as f:
    rows = [r for r in csv.DictReader(f, delimiter="\t") if r.get("ok") == "1"]
runs = {}
for r in rows:
    runs.setdefault(r["run"], {})[r["tool"]] = r
pairs = [b for b in runs.values() if "gatebench" in b and "gatebench-metrics" in b]
# The bound is stated at >= 100k req/s: a pair counts when both its runs served that many (a
# run below it shared its cores with something else on this machine).
fast = [b for b in pairs if min(float(b[t]["stub_rps"]) for t in b) >= 100000]
ratio = lambda b: float(b["gatebench-metrics"]["gen_cpu_per_100k"]) / float(b["gatebench"]["gen_cpu_per_100k"])  # noqa: E731
rps = [float(r["stub_rps"]) for r in rows]
if rps:
    print(f"- req/s served, every run: {min(rps):,.0f} to {max(rps):,.0f}; pairs with both runs at >= 100k "
          f"req/s: {len(fast)} of {len(pairs)}")
if pairs:
    print("- generator CPU per request with --metrics scraped ÷ without, per pair: "
          + ", ".join(f"{ratio(b):.3f}" + ("" if b in fast else " (below 100k)") for b in pairs))
print()
if len(fast) * 2 < max(len(pairs), 1) or not fast:
    print(f"**Result: inconclusive** (only {len(fast)} of {len(pairs)} pairs at >= 100k req/s)")
    sys.exit(0)
m = statistics.median(ratio(b) for b in fast)
print(f"**Result: {'pass' if m <= bound else 'fail'}** (median ratio over the {len(fast)} pairs at >= 100k "
      f"req/s: {m:.3f}, bound {bound})")
PY
}

{
  echo "# Exporter cost, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "$(nproc) cores ($(uname -r)); nginx $("$GB_NGINX" -v 2>&1 | sed 's|.*/||') with 1 worker on core $SERVER_CORE, 13-byte body;"
  echo "\`gatebench load -c $CONNS --threads 1 -d ${dur_s}s\` on core $GEN_CORE, without and with \`--metrics\`, scraped every ${SCRAPE_EVERY} s"
  echo "(Accept: \`${ACCEPT%%;*}\`…) from core $SERVER_CORE; $RUNS pairs, order swapped every pair, after a ${warm_s}s warm-up; medians."
  echo "$("$GATEBENCH" --version 2>&1 | head -n1); NICE=$GB_NICE."
  echo
  gb_summarize "$results" gatebench
  echo
  gb_paired_ratios "$results" gatebench gatebench-metrics
  echo "- scrapes answered 200 in each run with --metrics: $(paste -sd, "$GB_TMP/scrapes.txt" | sed 's/,/, /g')"
  [[ -z $profile_line ]] || echo "$profile_line"
  verdict
  echo
  gb_report_notes
  echo "Raw runs: ${results#"$GB_ROOT"/}"
} >"$md"
cat "$md"
gb_log "results: ${results#"$GB_ROOT"/}, ${md#"$GB_ROOT"/}"
grep -q '^\*\*Result: pass' "$md"
