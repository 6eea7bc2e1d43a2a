#!/usr/bin/env bash
# gatebench's load generator against wrk and oha: HTTP/1.1 keep-alive, 100 connections,
# one generator thread, a one-core nginx returning a fixed 13-byte body.
#
#   bench/loadgen-vs-peers.sh                      # gatebench, wrk, oha; 5 runs × 10 s each
#   RUNS=3 DURATION=5s bench/loadgen-vs-peers.sh
#   TOOLS="wrk oha" bench/loadgen-vs-peers.sh      # leave a tool out
#   BEFORE=/tmp/gatebench-old bench/loadgen-vs-peers.sh  # an older build as one more tool
#
# Environment: RUNS (5), DURATION (10s), WARMUP (2s, one unrecorded run per tool first; 0: none),
# CONNS (100), TOOLS ("gatebench wrk oha"), BASELINE (wrk, the tool ratios are taken to),
# SERVER_CORE (0), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if missing),
# NICE (0; e.g. -10 as root gives server and generators priority over other builds),
# BEFORE (unset; a second gatebench binary, e.g. a build from before a change: it runs as the tool
# `gatebench-before`, right after gatebench in the same interleaved rotation, and the summary
# adds the paired after ÷ before ratios).
#
# nginx runs pinned to SERVER_CORE, every generator to GEN_CORE; runs are interleaved
# (A B C A B C …). Requests/s are counted by nginx's stub_status as well as taken from
# each tool's own report; generator CPU comes from /usr/bin/time, nginx's from /proc.
# Raw per-run data: bench/results/loadgen-vs-peers-<date>.tsv; Markdown on stdout.
# See bench/README.md for the method.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-100}
TOOLS=${TOOLS:-gatebench wrk oha}
BEFORE=${BEFORE:-}
BASELINE=${BASELINE:-wrk}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS must be a positive integer, got '$RUNS'"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || gb_die "CONNS must be a positive integer, got '$CONNS'"
dur_s=$(gb_duration_secs "$DURATION")
warm_s=$(gb_duration_secs "$WARMUP")
[[ $dur_s -ge 1 ]] || gb_die "DURATION must be at least 1s"
read -r -a tools <<<"$TOOLS"
[[ ${#tools[@]} -ge 1 ]] || gb_die "TOOLS is empty"
if [[ -n $BEFORE && " ${tools[*]} " != *" gatebench-before "* ]]; then
  # The older build right after gatebench, so the pair runs back to back.
  with=()
  for t in "${tools[@]}"; do
    with+=("$t")
    [[ $t == gatebench ]] && with+=(gatebench-before)
  done
  [[ " ${with[*]} " == *" gatebench-before "* ]] || with+=(gatebench-before)
  tools=("${with[@]}")
fi
for t in "${tools[@]}"; do
  case $t in
    gatebench | wrk | oha) ;;
    gatebench-before) [[ -n $BEFORE ]] || gb_die "TOOLS has gatebench-before but BEFORE (its binary) is not set" ;;
    *) gb_die "unknown tool '$t' (gatebench, gatebench-before, wrk, oha)" ;;
  esac
done

gb_init

# --- what we need ------------------------------------------------------------------------
gb_need_two_cores
gb_need_gnu_time
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_nginx
for t in "${tools[@]}"; do
  case $t in
    wrk) gb_need_cmd wrk wrk ;;
    oha) gb_need_cargo_bin oha oha ;;
    gatebench) gb_need_gatebench ;;
    gatebench-before)
      # A copy, so that a rebuild cannot swap it mid-run.
      [[ -x $BEFORE ]] || gb_die "BEFORE=$BEFORE is not an executable"
      BEFORE_COPY="$GB_TMP/gatebench-before"
      cp "$BEFORE" "$BEFORE_COPY" || gb_die "cannot copy $BEFORE"
      ;;
  esac
done

tool_version() {
  case $1 in
    wrk) wrk -v 2>&1 | head -n1 | awk '{ print $1, $2 }' ;;
    oha) oha --version 2>&1 | head -n1 ;;
    gatebench) "$GATEBENCH" --version 2>&1 | head -n1 ;;
    gatebench-before) echo "$("$BEFORE_COPY" --version 2>&1 | head -n1) ($BEFORE, built $(date -u -r "$BEFORE" +%Y-%m-%dT%H:%M:%SZ))" ;;
  esac
}

# --- the server ----------------------------------------------------------------------------
port=$(gb_free_port)
srv="$GB_TMP/nginx"
gb_nginx_hello_conf "$srv" "$port" 1
gb_nginx_start "$srv" "$SERVER_CORE" "$port"
url="http://127.0.0.1:$port/"
body=$(gb_http_get "$port" /)
[[ $body == "Hello, world!" ]] || gb_die "unexpected body from nginx: '$body'"

# --- one run of one tool ---------------------------------------------------------------------
# run_tool TOOL SECONDS OUT_PREFIX — runs the generator pinned to GEN_CORE under
# /usr/bin/time; sets rc, tool_rps and tool_ok (responses the tool counted as 200).
run_tool() {
  local tool=$1 secs=$2 out=$3 tmo=$(($2 + 30))
  rc=0
  case $tool in
    wrk)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        wrk -t1 -c"$CONNS" -d"${secs}s" "$url" >"$out.out" 2>"$out.err" || rc=$?
      ;;
    oha)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        oha -c "$CONNS" -z "${secs}s" --worker-threads 1 --no-tui --output-format json "$url" \
        >"$out.out" 2>"$out.err" || rc=$?
      ;;
    gatebench | gatebench-before)
      local bin=$GATEBENCH
      [[ $tool == gatebench-before ]] && bin=$BEFORE_COPY
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        "$bin" load "$url" -c "$CONNS" -d "${secs}s" --threads 1 -q --json "$out.json" \
        >"$out.out" 2>"$out.err" || rc=$?
      ;;
  esac
  tool_rps=NA
  tool_ok=NA
  [[ $rc -eq 0 ]] || return 0
  case $tool in
    wrk)
      # "1234567 requests in 10.00s, …", "Requests/sec: 123456.78",
      # "Non-2xx or 3xx responses: N" (only when there were some).
      tool_rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out.out")
      tool_ok=$(awk '/ requests in / { n = $1 } /^  Non-2xx or 3xx responses:/ { bad = $NF }
                     END { if (n != "") print n - bad }' "$out.out")
      ;;
    oha)
      read -r tool_rps tool_ok < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["summary"]["requestsPerSec"], d.get("statusCodeDistribution", {}).get("200", 0))' "$out.out") || true
      ;;
    gatebench | gatebench-before)
      read -r tool_rps tool_ok < <(gb_gatebench_json "$out.json") || true
      ;;
  esac
  if [[ $tool_rps =~ ^[0-9.]+$ ]]; then tool_rps=$(printf '%.1f' "$tool_rps"); else tool_rps=NA; fi
  [[ -n $tool_ok ]] || tool_ok=NA
}

# --- warm-up, then the interleaved runs --------------------------------------------------------
# Rows go to a temp file first, to bench/results/ only when every run has been made.
results=$(gb_results_file loadgen-vs-peers)
tsv="$GB_TMP/runs.tsv"
gb_runs_tsv_header >"$tsv"

gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
for t in "${tools[@]}"; do
  [[ $warm_s -gt 0 ]] || break
  gb_log "warm-up: $t for ${warm_s}s"
  run_tool "$t" "$warm_s" "$GB_TMP/warmup-$t"
  [[ $rc -eq 0 ]] || gb_log "warm-up of $t exited $rc: $(tail -n3 "$GB_TMP/warmup-$t.err")"
done

for ((run = 1; run <= RUNS; run++)); do
  for t in "${tools[@]}"; do
    row=$(gb_measured_run "$run" "$t" "$dur_s" "$port" "$GB_TMP/run$run-$t" run_tool)
    printf '%s\n' "$row" >>"$tsv"
  done
done

cp "$tsv" "$results"

# --- report ----------------------------------------------------------------------------------------
report() {
  echo "## gatebench load vs wrk vs oha — HTTP/1.1 keep-alive, $CONNS connections, 1 generator thread"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); nginx $("$GB_NGINX" -v 2>&1 | sed 's|.*/||') with 1 worker on core $SERVER_CORE, 13-byte body;"
  echo "generators on core $GEN_CORE; $RUNS interleaved runs × ${dur_s}s each after a ${warm_s}s warm-up; medians;"
  echo "NICE=$GB_NICE (0: the benchmark shares the cores with other processes on equal terms)."
  for t in "${tools[@]}"; do echo "- $t: $(tool_version "$t")"; done
  echo
  gb_summarize "$results" "$BASELINE"
  if [[ " ${tools[*]} " == *" gatebench "* && " ${tools[*]} " == *" gatebench-before "* ]]; then
    # The before/after pair (after ÷ before): the figure that says whether a change regressed.
    echo
    gb_paired_ratios "$results" gatebench-before gatebench
  fi
  echo
  echo "req/s (server-counted) = nginx stub_status requests during the run ÷ the generator's wall time."
  echo "CPU per 100k = generator user+sys CPU-s ÷ requests served × 100,000. process CPU = CPU-s ÷ wall s."
  echo "core busy with the benchmark = the core's busy time (/proc/stat) less other load: the process plus"
  echo "the loopback (soft)irq time no process is charged for. ≈ 1.00 on the server core: nginx was the"
  echo "bottleneck; ≈ 1.00 on the generator core with the server below it: the generator was."
  echo "other load = core busy − the measured process − (soft)irq: other processes (e.g. someone's build);"
  echo "near 0 is clean, except on a side with idle time, where other work only filled the idle time."
  echo "Raw runs: ${results#"$GB_ROOT"/}"
}
report | tee "${results%.tsv}.md"
