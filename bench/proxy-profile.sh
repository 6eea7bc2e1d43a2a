#!/usr/bin/env bash
# Where a proxy's time goes in the simple setting (issue 21, point 7): gatebench's proxy and
# nginx's, each alone on one core, under wrk GETs of a 1 KiB file from an nginx origin.
#
#   bench/proxy-profile.sh                        # both proxies, ~1 min
#
# Per proxy, while `wrk -t1 -cCONNS` runs on GEN_CORE against it:
#   - perf: `perf record -g -p PID` for PERF_S seconds; the top symbols by self time
#     (`perf report --no-children --sort dso,symbol`), and the shares by DSO (kernel, binary, libc);
#   - strace: `strace -c -f -p PID` for STRACE_S seconds; the calls of each system call, divided
#     by the requests the origin served in the same window (its stub_status count; this is why
#     the origin is nginx here). strace slows the proxy; the counts per request stay
#     meaningful (each request makes the same calls), the req/s under strace do not.
#   - CPU per request: the proxy's CPU seconds (/proc) ÷ the requests in the perf window.
# Layout as proxy-vs-peers.sh: the proxy on PROXY_CORE, wrk and the origin on GEN_CORE; nginx
# with `keepalive 128` (≥ CONNS).
#
# Environment: CONNS (100), PAYLOAD (1024), PERF_S (4), STRACE_S (3), WARM_S (2), TOOLS
# ("gatebench nginx"), PROXY_CORE (0), GEN_CORE (1), GATEBENCH, NICE, KEEP_TMP.
# Output: bench/results/proxy-profile-<date>.md (tables) and bench/results/proxy-profile-<date>/
# (each proxy's perf report and strace summary as text, wrk's report, and windows.tsv: proxy,
# requests and seconds of the perf window, the proxy's CPU-s in it, requests and seconds of the
# strace window; the perf.data files are not kept). Kernel and user-space CPU per request: the
# CPU per request split by perf's share of samples in [kernel.kallsyms].
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

CONNS=${CONNS:-100}
PAYLOAD=${PAYLOAD:-1024}
PERF_S=${PERF_S:-4}
STRACE_S=${STRACE_S:-3}
WARM_S=${WARM_S:-2}
TOOLS=${TOOLS:-gatebench nginx}
PROXY_CORE=${PROXY_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
read -r -a tools <<<"$TOOLS"

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd wrk wrk
gb_need_cmd perf linux-perf
gb_need_cmd strace strace
gb_need_nginx
gb_need_gatebench
gb_snapshot_gatebench

results=$(gb_results_file proxy-profile)
outdir=${results%.tsv}
mkdir -p "$outdir"

# The origin: one nginx worker on GEN_CORE, a 1 KiB file at /1k.
oport=$(gb_free_port)
gb_nginx_file_origin "$GB_TMP/origin" "$GEN_CORE" "$PAYLOAD" "$oport"

declare -A port=() pid=()
for t in "${tools[@]}"; do
  case $t in
    nginx)
      p=$(gb_free_port)
      gb_nginx_proxy_conf "$GB_TMP/nginx-proxy" "$p" 1024 128 "127.0.0.1:$oport"
      gb_nginx_start "$GB_TMP/nginx-proxy" "$PROXY_CORE" "$p"
      port[$t]=$p
      pid[$t]=${GB_NGINX_WORKERS[0]} # the worker does the proxying
      ;;
    gatebench)
      gb_gatebench_serve "$GB_TMP/gatebench-proxy" "$PROXY_CORE" proxy --port 0 --threads 1 \
        --upstream "http://127.0.0.1:$oport"
      port[$t]=$GB_SERVE_PORT
      pid[$t]=$GB_SERVE_PID
      ;;
    *) gb_die "unknown proxy '$t' (gatebench, nginx)" ;;
  esac
  got=$(gb_http_get "${port[$t]}" /1k) || gb_die "$t: GET /1k failed"
  [[ $got == "$(cat "$GB_TMP/origin/www/1k")" ]] || gb_die "$t: GET /1k did not return the file"
done

# One proxy under load: perf, then strace, each window counted by the origin.
profile() {
  local t=$1 p=${pid[$1]} wpid n0 n1 n2 n3 c0 c1 spid secs
  secs=$((WARM_S + PERF_S + STRACE_S + 4))
  taskset -c "$GEN_CORE" wrk -t1 -c"$CONNS" -d"${secs}s" "http://127.0.0.1:${port[$t]}/1k" \
    >"$outdir/$t-wrk.txt" 2>&1 &
  wpid=$!
  gb_track_pid "$wpid"
  sleep "$WARM_S"
  n0=$(gb_nginx_requests "$oport")
  c0=$(gb_proc_cpu_secs "$p")
  perf record -q -g -p "$p" -o "$GB_TMP/$t.perf.data" -- sleep "$PERF_S" >/dev/null 2>&1
  c1=$(gb_proc_cpu_secs "$p")
  n1=$(gb_nginx_requests "$oport")
  sleep 1
  n2=$(gb_nginx_requests "$oport")
  strace -c -f -p "$p" -o "$outdir/$t-strace.txt" >/dev/null 2>&1 &
  spid=$!
  gb_track_pid "$spid"
  sleep "$STRACE_S"
  kill -INT "$spid"
  wait "$spid" 2>/dev/null || true
  gb_untrack_pid "$spid"
  n3=$(gb_nginx_requests "$oport")
  wait "$wpid" || true
  gb_untrack_pid "$wpid"
  perf report -i "$GB_TMP/$t.perf.data" --no-children --sort dso,symbol --stdio --percent-limit 0.5 -g none \
    2>/dev/null | grep -v '^$' >"$outdir/$t-perf.txt" || true
  perf report -i "$GB_TMP/$t.perf.data" --no-children --sort dso --stdio -g none \
    2>/dev/null | grep -v '^$' >"$outdir/$t-perf-dso.txt" || true
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$((n1 - n0))" "$PERF_S" "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')" \
    "$((n3 - n2))" "$STRACE_S" >>"$outdir/windows.tsv"
}

: >"$outdir/windows.tsv"
for t in "${tools[@]}"; do
  gb_log "profiling $t (pid ${pid[$t]})"
  profile "$t"
done

# The summary: windows, syscalls per request, DSO shares, top symbols; from the run's directory
# alone (bench/proxy_profile_summary.py), so bench/figures.py --check can print it again.
printf '%s\t%s\n' conns "$CONNS" payload "$PAYLOAD" at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  gatebench "$("$GATEBENCH" --version | head -n1) (${GATEBENCH_SRC#"$GB_ROOT"/})" \
  nginx "$("$GB_NGINX" -v 2>&1 | sed 's|.*: ||')" >"$outdir/meta.tsv"
python3 "$here/proxy_profile_summary.py" "$outdir" >"${results%.tsv}.md"
cat "${results%.tsv}.md"
