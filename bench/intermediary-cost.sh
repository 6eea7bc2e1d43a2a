#!/usr/bin/env bash
# What an intermediary adds: gatebench's reference proxy, nginx (proxy_pass, upstream
# keep-alive) and HAProxy, each in front of the same echo backend, measured with
# `gatebench cost`: the same open-model schedule sent to the backend directly and through the
# proxy, interleaved, the added latency per percentile with its confidence interval, and the
# proxy's CPU per request.
#
#   bench/intermediary-cost.sh                   # 5 repeats × 5 s per path and proxy (~6 min)
#   RATE=2000 REPEATS=3 bench/intermediary-cost.sh
#   TOOLS="gatebench nginx" bench/intermediary-cost.sh
#
# Environment: RATE (5000 req/s), CONNS (50), DURATION (5s), WARMUP (2s), REPEATS (5),
# PAYLOAD (1024, bytes of the POST body), TOOLS ("gatebench nginx haproxy"), PROXY_CORE (0),
# GEN_CORE (1), GATEBENCH (target/release/gatebench, built if missing), NICE (0).
#
# Layout as in proxy-vs-peers.sh: each proxy alone on PROXY_CORE with one worker or thread;
# the generator and the echo backend (`gatebench serve echo --threads 1`) on GEN_CORE; all
# proxies run side by side (idle when not measured). The proxy's CPU is its worker process's
# (nginx: the worker; HAProxy and gatebench: the one process). Raw: the `gatebench cost` JSON
# records in bench/results/intermediary-cost-<date>/ and one row per proxy and percentile in
# bench/results/intermediary-cost-<date>.tsv; Markdown on stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RATE=${RATE:-5000}
CONNS=${CONNS:-50}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
REPEATS=${REPEATS:-5}
PAYLOAD=${PAYLOAD:-1024}
TOOLS=${TOOLS:-gatebench nginx haproxy}
PROXY_CORE=${PROXY_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
read -r -a tools <<<"$TOOLS"
for t in "${tools[@]}"; do
  case $t in gatebench | nginx | haproxy) ;; *) gb_die "unknown proxy '$t' (gatebench, nginx, haproxy)" ;; esac
done

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_gatebench
gb_snapshot_gatebench
for t in "${tools[@]}"; do
  case $t in nginx) gb_need_nginx ;; haproxy) gb_need_haproxy ;; esac
done

gb_gatebench_serve "$GB_TMP/echo" "$GEN_CORE" echo --port 0 --threads 1
backend="127.0.0.1:$GB_SERVE_PORT"
declare -A via_port via_pid
for t in "${tools[@]}"; do
  case $t in
    nginx)
      port=$(gb_free_port)
      gb_nginx_proxy_conf "$GB_TMP/nginx" "$port" 1024 64 "$backend"
      gb_nginx_start "$GB_TMP/nginx" "$PROXY_CORE" "$port"
      via_port[nginx]=$port
      via_pid[nginx]=${GB_NGINX_WORKERS[0]}
      ;;
    haproxy)
      port=$(gb_free_port)
      gb_haproxy_conf "$GB_TMP/haproxy.cfg" "$port" 1024 "$backend"
      gb_haproxy_start "$GB_TMP/haproxy.cfg" "$PROXY_CORE" "$port"
      via_port[haproxy]=$port
      via_pid[haproxy]=$GB_HAPROXY_PID
      ;;
    gatebench)
      gb_gatebench_serve "$GB_TMP/proxy" "$PROXY_CORE" proxy --port 0 --threads 1 \
        --upstream "http://$backend/"
      via_port[gatebench]=$GB_SERVE_PORT
      via_pid[gatebench]=$GB_SERVE_PID
      ;;
  esac
done

results=$(gb_results_file intermediary-cost)
records="${results%.tsv}"
mkdir -p "$GB_TMP/records"
gb_warn_if_busy "$PROXY_CORE" "$GEN_CORE"
for t in "${tools[@]}"; do
  gb_log "$t: $REPEATS repeats of each path at $RATE req/s"
  nice -n "$GB_NICE" taskset -c "$GEN_CORE" timeout 1800 \
    "$GATEBENCH" cost --direct "http://$backend/" --via "http://127.0.0.1:${via_port[$t]}/" \
    --via-pid "${via_pid[$t]}" -R "$RATE" -c "$CONNS" -t 1 -d "$DURATION" --warmup "$WARMUP" \
    --repeats "$REPEATS" -m POST --payload-size "$PAYLOAD" -q \
    --json "$GB_TMP/records/$t.json" >"$GB_TMP/$t.out" 2>"$GB_TMP/$t.err" \
    || gb_die "gatebench cost for $t failed: $(tail -n3 "$GB_TMP/$t.err")"
done
mkdir -p "$records"
cp "$GB_TMP"/records/*.json "$records/"
python3 - "$records" "${tools[@]}" >"$results" <<'PY'
import json, sys
d, tools = sys.argv[1], sys.argv[2:]
print("proxy\tpercentile\tdirect_ms\tvia_ms\tadded_ms\tlow_ms\thigh_ms\tlevel\tcpu_us_per_request\tcpu_percent\twarnings")
for t in tools:
    r = json.load(open(f"{d}/{t}.json"))
    for a in r["added"]:
        print("\t".join(str(x) for x in [t, a["p"], a["direct_ms"], a["via_ms"], a["added_ms"], a["low_ms"],
              a["high_ms"], a["level"], r["intermediary_cpu_us_per_request"], r["intermediary_cpu_percent"],
              len(r["warnings"])]))
PY

report() {
  echo "## What the intermediary adds: gatebench proxy, nginx, HAProxy"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); each proxy with one worker on core $PROXY_CORE;"
  echo "echo backend (1 thread) and generator (1 thread) on core $GEN_CORE; \`gatebench cost\` at $RATE req/s, $CONNS connections,"
  echo "POST $PAYLOAD B, $DURATION per run after a $WARMUP warm-up, $REPEATS runs direct and $REPEATS through the proxy, interleaved."
  for t in "${tools[@]}"; do
    case $t in
      nginx) echo "- nginx: $("$GB_NGINX" -v 2>&1 | sed 's|.*/||')" ;;
      haproxy) echo "- haproxy: $("$GB_HAPROXY" -v 2>&1 | head -n1)" ;;
      gatebench) echo "- gatebench: $("$GATEBENCH" --version | head -n1)" ;;
    esac
  done
  echo
  python3 - "$results" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
tools = []
for r in rows:
    if r["proxy"] not in tools:
        tools.append(r["proxy"])
def ms(v):
    v = float(v)
    return f"{v*1000:+.0f} µs" if abs(v) < 1 else f"{v:+.2f} ms"
print("| proxy | added p50 | added p90 | added p99 | added p99.9 | proxy CPU per request | proxy CPU, % of a core |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in tools:
    rs = {float(r["percentile"]): r for r in rows if r["proxy"] == t}
    cells = []
    for p in (50.0, 90.0, 99.0, 99.9):
        r = rs[p]
        cells.append(f"{ms(r['added_ms'])} [{ms(r['low_ms'])}, {ms(r['high_ms'])}]")
    cpu = rs[50.0]
    us = "" if cpu["cpu_us_per_request"] == "None" else f"{float(cpu['cpu_us_per_request']):.1f} µs"
    pct = "" if cpu["cpu_percent"] == "None" else f"{float(cpu['cpu_percent']):.1f}"
    warn = " (warnings in the record)" if cpu["warnings"] != "0" else ""
    print(f"| {t}{warn} | " + " | ".join(cells) + f" | {us} | {pct} |")
PY
  echo
  echo "Added = Hodges-Lehmann shift (through the proxy − direct) of each run's corrected percentile; in"
  echo "brackets its distribution-free 95 % interval (Moses). CPU = the proxy process's user+system time over"
  echo "its runs ÷ responses (median). Raw: ${results#"$GB_ROOT"/} and the records in ${records#"$GB_ROOT"/}/"
}
report | tee "${results%.tsv}.md"
