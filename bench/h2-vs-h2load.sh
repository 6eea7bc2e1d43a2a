#!/usr/bin/env bash
# gatebench's HTTP/2 load generator against h2load (nghttp2): 10 connections × 10 concurrent
# streams, one generator thread, a one-core nginx (http2) returning a fixed 13-byte body,
# over h2c (cleartext, prior knowledge) and over TLS (h2 negotiated by ALPN).
#
#   bench/h2-vs-h2load.sh                          # both modes; 5 runs × 5 s per tool and mode
#   NICE=-10 RUNS=3 bench/h2-vs-h2load.sh
#   MODES=h2c bench/h2-vs-h2load.sh                # cleartext only
#
# Environment: RUNS (5), DURATION (5s), WARMUP (2s, one unrecorded run per tool and mode
# first; 0: none), CONNS (10), STREAMS (10, concurrent streams per connection), MODES
# ("h2c tls"), TOOLS ("gatebench h2load"), BASELINE (h2load, the tool ratios are taken to),
# SERVER_CORE (0), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if missing; the
# script runs a copy), NICE (0; e.g. -10 as root gives server and generators priority).
#
# nginx runs pinned to SERVER_CORE with three listeners: HTTP/1.1 (stub_status only, for
# counting), h2c and TLS (h2 via ALPN; a self-signed certificate made in the temp dir).
# Generators run pinned to GEN_CORE, interleaved (per run: every mode × every tool):
#   h2load -c CONNS -m STREAMS -D SECS -t 1 URL               (http:// = h2c prior knowledge)
#   gatebench load URL --h2c|--http2 -k -c CONNS --streams STREAMS -d SECS -t 1 -q --json F
# Raw per-run data: bench/results/h2-vs-h2load-<date>.tsv (a `mode` column first); Markdown
# on stdout and in the .md beside it. See bench/README.md for the method.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
MODES=${MODES:-h2c tls}
TOOLS=${TOOLS:-gatebench h2load}
BASELINE=${BASELINE:-h2load}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS must be a positive integer, got '$RUNS'"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || gb_die "CONNS must be a positive integer, got '$CONNS'"
[[ $STREAMS =~ ^[1-9][0-9]*$ ]] || gb_die "STREAMS must be a positive integer, got '$STREAMS'"
dur_s=$(gb_duration_secs "$DURATION")
warm_s=$(gb_duration_secs "$WARMUP")
[[ $dur_s -ge 1 ]] || gb_die "DURATION must be at least 1s"
read -r -a tools <<<"$TOOLS"
read -r -a modes <<<"$MODES"
[[ ${#tools[@]} -ge 1 ]] || gb_die "TOOLS is empty"
[[ ${#modes[@]} -ge 1 ]] || gb_die "MODES is empty"
for t in "${tools[@]}"; do
  case $t in gatebench | h2load) ;; *) gb_die "unknown tool '$t' (gatebench, h2load)" ;; esac
done
for m in "${modes[@]}"; do
  case $m in h2c | tls) ;; *) gb_die "unknown mode '$m' (h2c, tls)" ;; esac
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
    h2load) gb_need_cmd h2load nghttp2-client ;;
    gatebench) gb_need_gatebench && gb_snapshot_gatebench ;;
  esac
done

tool_version() {
  case $1 in
    h2load) h2load --version 2>&1 | head -n1 ;;
    gatebench) echo "$("$GATEBENCH" --version 2>&1 | head -n1) (${GATEBENCH_SRC#"$GB_ROOT"/})" ;;
  esac
}

# --- the server: one nginx worker, HTTP/1.1 (status) + h2c + TLS listeners ------------------------
# nginx 1.22: HTTP/2 is enabled per listener (`listen … http2`; `http2 on;` is 1.25.1+), and
# `http2_max_requests` is obsolete since 1.19.7 (nginx -t warns): keepalive_requests
# (1,000,000 in gb_nginx_hello_conf) also caps requests per HTTP/2 connection, so no
# connection is closed during a run. http2_max_concurrent_streams stays at its default, 128.
status_port=$(gb_free_port)
h2c_port=$(gb_free_port)
tls_port=$(gb_free_port)
srv="$GB_TMP/nginx"
gb_nginx_hello_conf "$srv" "$status_port" 1
gb_self_signed_cert "$srv/tls"
gb_nginx_add_listen "$srv" "$h2c_port" http2
gb_nginx_add_listen "$srv" "$tls_port" ssl http2
gb_nginx_add_tls "$srv" "$srv/tls/cert.pem" "$srv/tls/key.pem"
gb_nginx_start "$srv" "$SERVER_CORE" "$status_port"
gb_wait_port "$h2c_port" 5
gb_wait_port "$tls_port" 5
body=$(gb_http_get "$status_port" /)
[[ $body == "Hello, world!" ]] || gb_die "unexpected body from nginx: '$body'"

mode_url() {
  case $1 in
    h2c) echo "http://127.0.0.1:$h2c_port/" ;;
    tls) echo "https://127.0.0.1:$tls_port/" ;;
  esac
}

# --- one run of one tool -------------------------------------------------------------------------
# run_tool TOOL SECONDS OUT — the generator pinned to GEN_CORE under /usr/bin/time, in the mode
# $mode; sets rc, tool_rps and tool_ok (responses the tool counted as 2xx).
run_tool() {
  local tool=$1 secs=$2 out=$3 tmo=$(($2 + 30)) url proto
  url=$(mode_url "$mode")
  rc=0
  case $tool in
    h2load)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        h2load -c "$CONNS" -m "$STREAMS" -D "$secs" -t 1 "$url" >"$out.out" 2>"$out.err" || rc=$?
      ;;
    gatebench)
      if [[ $mode == h2c ]]; then proto=(--h2c); else proto=(--http2 -k); fi
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        "$GATEBENCH" load "$url" "${proto[@]}" -c "$CONNS" --streams "$STREAMS" -d "${secs}s" -t 1 \
        -q --json "$out.json" >"$out.out" 2>"$out.err" || rc=$?
      ;;
  esac
  tool_rps=NA
  tool_ok=NA
  [[ $rc -eq 0 ]] || return 0
  case $tool in
    h2load)
      # "finished in 5.00s, 86012.20 req/s, 2.79MB/s", "status codes: 430061 2xx, 0 3xx, …";
      # h2load exits 0 even when nothing succeeded, hence tool_ok; it must also have spoken
      # HTTP/2 ("Application protocol: h2c" in cleartext, "h2" over TLS, not http/1.1).
      tool_rps=$(awk '/^finished in/ { print $4 }' "$out.out")
      tool_ok=$(awk '/^status codes:/ { print $3 }' "$out.out")
      if ! grep -Eq '^Application protocol: h2c?$' "$out.out"; then
        gb_log "h2load did not use HTTP/2: $(grep '^Application protocol' "$out.out" || echo none)"
        rc=99
      fi
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
results=$(gb_results_file h2-vs-h2load)
tsv="$GB_TMP/runs.tsv"
printf 'mode\t%s\n' "$(gb_runs_tsv_header)" >"$tsv"

gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
for mode in "${modes[@]}"; do
  for t in "${tools[@]}"; do
    [[ $warm_s -gt 0 ]] || break
    gb_log "warm-up: $t $mode for ${warm_s}s"
    run_tool "$t" "$warm_s" "$GB_TMP/warmup-$mode-$t"
    [[ $rc -eq 0 ]] || gb_log "warm-up of $t $mode exited $rc: $(tail -n3 "$GB_TMP/warmup-$mode-$t.err")"
  done
done

for ((run = 1; run <= RUNS; run++)); do
  for mode in "${modes[@]}"; do
    for t in "${tools[@]}"; do
      gb_log "run $run/$RUNS, $mode:"
      row=$(gb_measured_run "$run" "$t" "$dur_s" "$status_port" "$GB_TMP/run$run-$mode-$t" run_tool)
      printf '%s\t%s\n' "$mode" "$row" >>"$tsv"
    done
  done
done

cp "$tsv" "$results"

# --- report ------------------------------------------------------------------------------------------
report() {
  local mode sub
  echo "## gatebench load vs h2load — HTTP/2, $CONNS connections × $STREAMS streams, 1 generator thread"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); nginx $("$GB_NGINX" -v 2>&1 | sed 's|.*/||') (http2) with 1 worker on core $SERVER_CORE, 13-byte body;"
  echo "generators on core $GEN_CORE; $RUNS interleaved runs × ${dur_s}s each (per run: every mode × every tool) after a ${warm_s}s warm-up; medians;"
  echo "NICE=$GB_NICE (0: the benchmark shares the cores with other processes on equal terms)."
  for t in "${tools[@]}"; do echo "- $t: $(tool_version "$t")"; done
  for mode in "${modes[@]}"; do
    sub="$GB_TMP/summary-$mode.tsv"
    awk -F'\t' -v m="$mode" 'NR == 1 || $1 == m' "$results" | cut -f2- >"$sub"
    echo
    case $mode in
      h2c) echo "### h2c (cleartext, prior knowledge): \`$(mode_url h2c)\`" ;;
      tls) echo "### h2 over TLS (ALPN, self-signed ECDSA P-256 certificate): \`$(mode_url tls)\`" ;;
    esac
    echo
    gb_summarize "$sub" "$BASELINE"
    echo
    gb_paired_ratios "$sub" "$BASELINE"
  done
  echo
  gb_report_notes
  echo "Raw runs: ${results#"$GB_ROOT"/}"
}
report | tee "${results%.tsv}.md"
