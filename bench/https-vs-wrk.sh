#!/usr/bin/env bash
# gatebench's load generator against wrk over HTTPS: HTTP/1.1 keep-alive over TLS, 100
# connections, one generator thread, a one-core nginx returning a fixed 13-byte body.
#
#   bench/https-vs-wrk.sh                          # 5 runs × 5 s per tool
#   NICE=-10 RUNS=3 bench/https-vs-wrk.sh
#
# Environment: RUNS (5), DURATION (5s), WARMUP (2s, one unrecorded run per tool first; 0: none),
# CONNS (100), TOOLS ("gatebench wrk"), BASELINE (wrk, the tool ratios are taken to),
# SERVER_CORE (0), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if missing; the
# script runs a copy), NICE (0; e.g. -10 as root gives server and generators priority).
#
# nginx runs pinned to SERVER_CORE with an HTTP/1.1 listener (stub_status, for counting) and
# a TLS listener (HTTP/1.1 only; a self-signed certificate made in the temp dir). Generators
# run pinned to GEN_CORE, interleaved (A B A B …):
#   wrk -t1 -cCONNS -dSECS https://…
#   gatebench load https://… -k -c CONNS -d SECS -t 1 -q --json F
# Raw per-run data: bench/results/https-vs-wrk-<date>.tsv; Markdown on stdout and in the .md
# beside it. See bench/README.md for the method.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-100}
TOOLS=${TOOLS:-gatebench wrk}
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
for t in "${tools[@]}"; do
  case $t in gatebench | wrk) ;; *) gb_die "unknown tool '$t' (gatebench, wrk)" ;; esac
done

gb_init

# --- what we need ------------------------------------------------------------------------------
gb_need_two_cores
gb_need_gnu_time
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_nginx
for t in "${tools[@]}"; do
  case $t in
    wrk) gb_need_cmd wrk wrk ;;
    gatebench) gb_need_gatebench && gb_snapshot_gatebench ;;
  esac
done

tool_version() {
  case $1 in
    wrk) wrk -v 2>&1 | head -n1 | awk '{ print $1, $2 }' ;;
    gatebench) echo "$("$GATEBENCH" --version 2>&1 | head -n1) (${GATEBENCH_SRC#"$GB_ROOT"/})" ;;
  esac
}

# --- the server: one nginx worker, HTTP/1.1 (status) + TLS (HTTP/1.1) listeners ---------------------
status_port=$(gb_free_port)
tls_port=$(gb_free_port)
srv="$GB_TMP/nginx"
gb_nginx_hello_conf "$srv" "$status_port" 1
gb_self_signed_cert "$srv/tls"
gb_nginx_add_listen "$srv" "$tls_port" ssl
gb_nginx_add_tls "$srv" "$srv/tls/cert.pem" "$srv/tls/key.pem"
gb_nginx_start "$srv" "$SERVER_CORE" "$status_port"
gb_wait_port "$tls_port" 5
body=$(gb_http_get "$status_port" /)
[[ $body == "Hello, world!" ]] || gb_die "unexpected body from nginx: '$body'"
url="https://127.0.0.1:$tls_port/"

# --- one run of one tool -------------------------------------------------------------------------
# run_tool TOOL SECONDS OUT — the generator pinned to GEN_CORE under /usr/bin/time; sets rc,
# tool_rps and tool_ok (responses the tool counted as 2xx).
run_tool() {
  local tool=$1 secs=$2 out=$3 tmo=$(($2 + 30))
  rc=0
  case $tool in
    wrk)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        wrk -t1 -c"$CONNS" -d"${secs}s" "$url" >"$out.out" 2>"$out.err" || rc=$?
      ;;
    gatebench)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        "$GATEBENCH" load "$url" -k -c "$CONNS" -d "${secs}s" -t 1 -q --json "$out.json" \
        >"$out.out" 2>"$out.err" || rc=$?
      ;;
  esac
  tool_rps=NA
  tool_ok=NA
  [[ $rc -eq 0 ]] || return 0
  case $tool in
    wrk)
      # "1234567 requests in 5.00s, …", "Requests/sec: 123456.78",
      # "Non-2xx or 3xx responses: N" (only when there were some).
      tool_rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out.out")
      tool_ok=$(awk '/ requests in / { n = $1 } /^  Non-2xx or 3xx responses:/ { bad = $NF }
                     END { if (n != "") print n - bad }' "$out.out")
      ;;
    gatebench)
      read -r tool_rps tool_ok < <(gb_gatebench_json "$out.json") || true
      ;;
  esac
  if [[ $tool_rps =~ ^[0-9.]+$ ]]; then tool_rps=$(printf '%.1f' "$tool_rps"); else tool_rps=NA; fi
  [[ -n $tool_ok ]] || tool_ok=NA
}

# --- warm-up, then the interleaved runs -------------------------------------------------------------
# Rows go to a temp file first, to bench/results/ only when every run has been made.
results=$(gb_results_file https-vs-wrk)
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
    gb_log "run $run/$RUNS:"
    gb_measured_run "$run" "$t" "$dur_s" "$status_port" "$GB_TMP/run$run-$t" run_tool >>"$tsv"
  done
done

cp "$tsv" "$results"

# --- report ------------------------------------------------------------------------------------------
report() {
  echo "## gatebench load vs wrk — HTTPS (HTTP/1.1 keep-alive over TLS), $CONNS connections, 1 generator thread"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); nginx $("$GB_NGINX" -v 2>&1 | sed 's|.*/||') with 1 worker on core $SERVER_CORE, 13-byte body,"
  echo "TLS listener (HTTP/1.1 only, self-signed ECDSA P-256 certificate); generators on core $GEN_CORE;"
  echo "$RUNS interleaved runs × ${dur_s}s each after a ${warm_s}s warm-up; medians;"
  echo "NICE=$GB_NICE (0: the benchmark shares the cores with other processes on equal terms)."
  for t in "${tools[@]}"; do echo "- $t: $(tool_version "$t")"; done
  echo
  gb_summarize "$results" "$BASELINE"
  echo
  gb_paired_ratios "$results" "$BASELINE"
  echo
  gb_report_notes
  echo "Raw runs: ${results#"$GB_ROOT"/}"
}
report | tee "${results%.tsv}.md"
