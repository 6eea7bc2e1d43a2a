#!/usr/bin/env bash
# How gatebench's proxy, nginx and HAProxy use their upstream connections, seen from the
# origin: each in front of gatebench's echo (`serve echo --id origin --stats`), the same closed
# load from the client side, and the echo's own count of the connections the proxy opened.
#
#   bench/upstream-efficiency.sh                    # 3 runs × 10 s per proxy, 100 users
#   RUNS=1 DURATION=5s bench/upstream-efficiency.sh
#   TOOLS="gatebench haproxy" bench/upstream-efficiency.sh
#
# Per run: a fresh echo (so its counts start at zero) on GEN_CORE, the proxy alone on
# PROXY_CORE (one worker or thread), keep-alive on both sides: nginx `proxy_pass` to an
# `upstream` with `keepalive NGINX_KEEPALIVE` (HTTP/1.1, Connection ""), HAProxy mode http with
# `http-reuse always`, gatebench's proxy with its pool. The generator:
#   gatebench load http://127.0.0.1:PORT/ -c CONNS -d DURATION -t 1 -q --no-probe --json F   (GET)
# (no probe: its connection, apart from the load's, would be one more for the kernel to count).
# The echo's statistics (GET /__gatebench/origin) are read before and after the load; their
# difference gives the upstream connections opened, the requests that reached the origin, and
# from those upstream connections per 1,000 requests and requests per upstream connection.
# A proxy that pools well opens about as many connections as it has concurrent requests, once.
# The kernel's count of accepted connections (Tcp PassiveOpens, /proc/net/snmp) over the load,
# less the load's own connections to the proxy, checks the origin's count: on a machine where
# nothing else opens connections meanwhile, the two are equal.
#
# Environment: RUNS (3), DURATION (10s), CONNS (100), TOOLS ("gatebench nginx haproxy"),
# NGINX_KEEPALIVE (128: nginx's idle upstream connections cached; fewer than CONNS means
# reconnecting), MAXCONN (1024), PROXY_CORE (0), GEN_CORE (1), GATEBENCH
# (target/release/gatebench, built if missing), NICE (0). nginx and HAProxy are installed from
# Debian when missing (bench/lib.sh).
# Raw per-run data: bench/results/upstream-efficiency-<date>.tsv; Markdown on stdout and in the
# .md beside it, printed from the .tsv by bench/upstream_efficiency_summary.py.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-100}
TOOLS=${TOOLS:-gatebench nginx haproxy}
NGINX_KEEPALIVE=${NGINX_KEEPALIVE:-128}
MAXCONN=${MAXCONN:-1024}
PROXY_CORE=${PROXY_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

for v in RUNS CONNS NGINX_KEEPALIVE MAXCONN; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done
dur_s=$(gb_duration_secs "$DURATION")
[[ $dur_s -ge 1 ]] || gb_die "DURATION must be at least 1s"
read -r -a tools <<<"$TOOLS"
[[ ${#tools[@]} -ge 1 ]] || gb_die "TOOLS is empty"
for t in "${tools[@]}"; do
  case $t in gatebench | nginx | haproxy) ;; *) gb_die "unknown proxy '$t' (gatebench, nginx, haproxy)" ;; esac
done

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_gatebench
gb_snapshot_gatebench
for t in "${tools[@]}"; do
  case $t in
    nginx) gb_need_nginx ;;
    haproxy) gb_need_haproxy ;;
  esac
done

# origin_counts PORT — "connections_opened requests" of the echo on PORT.
origin_counts() {
  gb_http_get "$1" /__gatebench/origin | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(o["connections_opened"], o["requests"])'
}

# passive_opens — the kernel's count of accepted TCP connections in this network namespace
# (Tcp PassiveOpens in /proc/net/snmp).
passive_opens() {
  awk '$1 == "Tcp:" && $2 ~ /^[0-9]+$/ { print $7; exit }' /proc/net/snmp
}

# client_opened FILE — the connections the load opened to the proxy, from its record.
client_opened() {
  python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["measurement"]["connections"]["opened"])' "$1"
}

# start_proxy TOOL RUN UPSTREAM_PORT — the proxy in front of the echo; sets PROXY_PID and PORT.
start_proxy() {
  local tool=$1 run=$2 up=$3 dir="$GB_TMP/$1-$2"
  mkdir -p "$dir"
  case $tool in
    gatebench)
      gb_gatebench_serve "$dir/proxy" "$PROXY_CORE" proxy --port 0 --threads 1 \
        --upstream "http://127.0.0.1:$up"
      PROXY_PID=$GB_SERVE_PID PORT=$GB_SERVE_PORT
      ;;
    nginx)
      PORT=$(gb_free_port)
      gb_nginx_proxy_conf "$dir" "$PORT" "$MAXCONN" "$NGINX_KEEPALIVE" "127.0.0.1:$up"
      gb_nginx_start "$dir" "$PROXY_CORE" "$PORT"
      PROXY_PID=$GB_NGINX_PID
      ;;
    haproxy)
      PORT=$(gb_free_port)
      gb_haproxy_conf "$dir/haproxy.cfg" "$PORT" "$MAXCONN" "127.0.0.1:$up"
      gb_haproxy_start "$dir/haproxy.cfg" "$PROXY_CORE" "$PORT"
      PROXY_PID=$GB_HAPROXY_PID
      ;;
  esac
}

results=$(gb_results_file upstream-efficiency)
printf 'run\ttool\tconns\tnginx_keepalive\tduration_s\tclient_ok\torigin_requests\tupstream_connections\tkernel_upstream_accepts\n' >"$results"
for ((run = 1; run <= RUNS; run++)); do
  for t in "${tools[@]}"; do
    gb_gatebench_serve "$GB_TMP/echo-$t-$run" "$GEN_CORE" echo --port 0 --threads 1 --id origin --stats
    echo_pid=$GB_SERVE_PID echo_port=$GB_SERVE_PORT
    start_proxy "$t" "$run" "$echo_port"
    read -r c0 r0 < <(origin_counts "$echo_port")
    p0=$(passive_opens)
    json="$GB_TMP/load-$t-$run.json"
    nice -n "$GB_NICE" taskset -c "$GEN_CORE" "$GATEBENCH" load "http://127.0.0.1:$PORT/" \
      -c "$CONNS" -d "${dur_s}s" -t 1 -q --no-probe --json "$json" >/dev/null 2>"$json.err" \
      || gb_log "$t run $run: the load exited non-zero (see the record's errors)"
    # The exchanges in flight at the load's end finish (and may open connections) first.
    sleep 0.5
    p1=$(passive_opens)
    read -r c1 r1 < <(origin_counts "$echo_port")
    # What the kernel accepted during the load, less the load's own connections to the proxy:
    # the connections the proxy opened to the origin, counted by the kernel.
    kernel=$((p1 - p0 - $(client_opened "$json")))
    read -r _ ok < <(gb_gatebench_json "$json")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$t" "$CONNS" "$NGINX_KEEPALIVE" "$dur_s" "$ok" \
      $((r1 - r0)) $((c1 - c0)) "$kernel" >>"$results"
    gb_log "$t run $run: $ok answered, origin saw $((r1 - r0)) requests on $((c1 - c0)) new connections (kernel: $kernel)"
    gb_stop_pid "$PROXY_PID"
    gb_stop_pid "$echo_pid"
  done
done

md="${results%.tsv}.md"
python3 "$here/upstream_efficiency_summary.py" "$results" | tee "$md"
gb_log "raw data: $results"
