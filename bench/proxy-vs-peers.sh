#!/usr/bin/env bash
# gatebench's reference intermediaries against nginx and HAProxy: speed and memory.
#
#   proxy:   1 KiB POST bodies through a reverse proxy to one echo backend:
#            gatebench serve proxy, nginx proxy_pass (upstream keep-alive), HAProxy (mode http)
#   balance: the same through a round-robin balancer to five echo backends:
#            gatebench serve balance, nginx upstream (round robin), HAProxy balance roundrobin
#
#   bench/proxy-vs-peers.sh                        # both modes; 5 runs × 5 s per proxy and mode
#   NICE=-10 RUNS=3 bench/proxy-vs-peers.sh        # the published run
#   MODE=balance bench/proxy-vs-peers.sh           # one mode only (proxy or balance)
#   TOOLS="nginx haproxy" bench/proxy-vs-peers.sh  # leave a proxy out
#   SETTING=simple RUNS=3 bench/proxy-vs-peers.sh  # the simple setting (issue 21, point 7), below
#   BEFORE=/tmp/gatebench-old bench/proxy-vs-peers.sh  # an older build as one more proxy
#
# The simple setting is what a user would measure first: SETTING=simple stands for ORIGIN=nginx
# GEN=wrk METHOD=GET NGINX_KEEPALIVE=128 MODE=proxy TOOLS="gatebench nginx"; any of them given
# explicitly wins, so one difference at a time from either setting is one variable:
#   ORIGIN  echo (gatebench serve echo --threads 1; GET answers PAYLOAD bytes) or nginx (one nginx
#           worker serving a fixed PAYLOAD-byte file at /1k; a POST gets the same file)
#   GEN     gatebench (gatebench load … -t 1) or wrk (wrk -t1 -cCONNS --latency; POST by a Lua script)
#   METHOD  POST (a PAYLOAD-byte JSON body) or GET
# BEFORE=PATH adds `gatebench-before`, that binary's proxy/balancer, to the same interleaved
# rotation (after gatebench); the summary then has an after ÷ before line of paired ratios.
#
# Environment: MODE ("proxy balance"; "both" is the same), RUNS (5), DURATION (5s), WARMUP (2s,
# one unrecorded run per proxy and mode first; 0: none), CONNS (100), PAYLOAD (1024, bytes of
# the POST body), BACKENDS (5, echo backends behind the balancer), TOOLS ("gatebench nginx
# haproxy"; gatebench-before is added after gatebench when BEFORE is set), SETTING (simple: see
# above), ORIGIN (echo), GEN (gatebench), METHOD (POST), BEFORE (unset), BASELINE (nginx: req/s, p99 and RSS ratios), RSS_BASELINE (haproxy: a second RSS
# ratio), MAXCONN (1024: nginx worker_connections, HAProxy maxconn; nginx's RSS grows with it),
# NGINX_KEEPALIVE (64: nginx's `keepalive`, idle upstream connections cached), PROXY_CORE (0), GEN_CORE
# (1), GATEBENCH (target/release/gatebench, built if missing; the script runs a copy), NICE (0;
# e.g. -10 as root gives everything measured priority), KEEP_TMP (1: keep the temp dir on
# failure).
#
# Layout (shared/MEASURING.md, "for a proxy"): each proxy alone on PROXY_CORE with one worker
# or thread; the generator and the origins (echo backends, `gatebench serve echo --threads 1`, or
# one nginx worker) together on GEN_CORE. All proxies of a mode run side by side (idle when not measured); the runs are
# interleaved A B C A B C. The generator is the same for all of them (GEN=gatebench, METHOD=POST):
#   gatebench load URL -c CONNS -d SECS -t 1 -q -m POST --payload-size PAYLOAD --json F
# Per run: req/s, p50, p99 and errors from the generator's JSON record (wrk: its report); the proxy's CPU seconds
# (/proc, nginx master + worker) per 100k responses; its largest VmRSS, RssAnon and PSS (nginx:
# master + worker summed) sampled every 0.5 s from 1 s into the run to 0.5 s before its end; TCP connects
# during the run (system-wide ActiveOpens: the generator's CONNS plus the proxy's reconnects to
# its upstreams); both cores' busy time (/proc/stat). gatebench's proxy and balancer are skipped, with a message, while
# `gatebench serve proxy|balance --help` fails (the services are not in the binary yet).
# Raw per-run data: bench/results/proxy-vs-peers-<date>.tsv (a `mode` column first); Markdown
# on stdout and in the .md beside it. See bench/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

SETTING=${SETTING:-}
case $SETTING in
  "") ;;
  simple)
    : "${ORIGIN:=nginx}" "${GEN:=wrk}" "${METHOD:=GET}" "${NGINX_KEEPALIVE:=128}" "${MODE:=proxy}"
    : "${TOOLS:=gatebench nginx}"
    ;;
  *) gb_die "unknown SETTING '$SETTING' (simple, or unset)" ;;
esac
ORIGIN=${ORIGIN:-echo}
GEN=${GEN:-gatebench}
METHOD=${METHOD:-POST}
BEFORE=${BEFORE:-}
MODE=${MODE:-proxy balance}
RUNS=${RUNS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-100}
PAYLOAD=${PAYLOAD:-1024}
BACKENDS=${BACKENDS:-5}
TOOLS=${TOOLS:-gatebench nginx haproxy}
BASELINE=${BASELINE:-nginx}
RSS_BASELINE=${RSS_BASELINE:-haproxy}
MAXCONN=${MAXCONN:-1024}
NGINX_KEEPALIVE=${NGINX_KEEPALIVE:-64}
PROXY_CORE=${PROXY_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

[[ $MODE == both ]] && MODE="proxy balance"
for v in RUNS CONNS PAYLOAD BACKENDS MAXCONN NGINX_KEEPALIVE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done
dur_s=$(gb_duration_secs "$DURATION")
warm_s=$(gb_duration_secs "$WARMUP")
[[ $dur_s -ge 1 ]] || gb_die "DURATION must be at least 1s"
read -r -a tools <<<"$TOOLS"
read -r -a modes <<<"$MODE"
[[ ${#tools[@]} -ge 1 ]] || gb_die "TOOLS is empty"
[[ ${#modes[@]} -ge 1 ]] || gb_die "MODE is empty"
case $ORIGIN in echo | nginx) ;; *) gb_die "unknown ORIGIN '$ORIGIN' (echo, nginx)" ;; esac
case $GEN in gatebench | wrk) ;; *) gb_die "unknown GEN '$GEN' (gatebench, wrk)" ;; esac
case $METHOD in GET | POST) ;; *) gb_die "unknown METHOD '$METHOD' (GET, POST)" ;; esac
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
    gatebench | nginx | haproxy) ;;
    gatebench-before) [[ -n $BEFORE ]] || gb_die "TOOLS has gatebench-before but BEFORE (its binary) is not set" ;;
    *) gb_die "unknown proxy '$t' (gatebench, gatebench-before, nginx, haproxy)" ;;
  esac
done
for m in "${modes[@]}"; do
  case $m in proxy | balance) ;; *) gb_die "unknown mode '$m' (proxy, balance)" ;; esac
done

gb_init

# --- what we need ----------------------------------------------------------------------------------
gb_need_two_cores
gb_need_gnu_time
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_gatebench # the generator and the echo backends, whatever TOOLS says
gatebench_built=$(date -u -r "$GATEBENCH" +%Y-%m-%dT%H:%M:%SZ)
gb_snapshot_gatebench
# The older build, copied like the current one so that a rebuild cannot swap it mid-run.
BEFORE_COPY=""
if [[ -n $BEFORE ]]; then
  [[ -x $BEFORE ]] || gb_die "BEFORE=$BEFORE is not an executable"
  before_built=$(date -u -r "$BEFORE" +%Y-%m-%dT%H:%M:%SZ)
  BEFORE_COPY="$GB_TMP/gatebench-before"
  cp "$BEFORE" "$BEFORE_COPY" || gb_die "cannot copy $BEFORE"
fi
for t in "${tools[@]}"; do
  case $t in
    nginx) gb_need_nginx ;;
    haproxy) gb_need_haproxy ;;
  esac
done
[[ $ORIGIN == nginx ]] && gb_need_nginx
[[ $GEN == wrk ]] && gb_need_cmd wrk wrk
# nginx and HAProxy size themselves from the open-files limit; use all of it (20,000 here).
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true

# tools_for MODE — the proxies to measure in MODE: TOOLS less gatebench when its service is
# not in the binary.
declare -A mode_tools=()
for m in "${modes[@]}"; do
  list=()
  for t in "${tools[@]}"; do
    if [[ $t == gatebench ]] && ! "$GATEBENCH" serve "$m" --help >/dev/null 2>&1; then
      gb_log "skipping gatebench in $m mode: \`gatebench serve $m --help\` fails with" \
        "${GATEBENCH_SRC#"$GB_ROOT"/} ($("$GATEBENCH" --version 2>&1 | head -n1)); the service is not in this binary"
      continue
    fi
    if [[ $t == gatebench-before ]] && ! "$BEFORE_COPY" serve "$m" --help >/dev/null 2>&1; then
      gb_log "skipping gatebench-before in $m mode: \`$BEFORE serve $m --help\` fails"
      continue
    fi
    list+=("$t")
  done
  [[ ${#list[@]} -ge 1 ]] || gb_die "nothing to measure in $m mode"
  mode_tools[$m]="${list[*]}"
done

tool_version() {
  case $1 in
    gatebench) echo "$("$GATEBENCH" --version 2>&1 | head -n1) (${GATEBENCH_SRC#"$GB_ROOT"/}, built $gatebench_built)" ;;
    gatebench-before) echo "$("$BEFORE_COPY" --version 2>&1 | head -n1) ($BEFORE, built $before_built)" ;;
    wrk) wrk -v 2>&1 | head -n1 | awk '{ print $1, $2 }' ;;
    nginx) "$GB_NGINX" -v 2>&1 | sed 's|.*: ||' ;;
    haproxy) "$GB_HAPROXY" -v 2>&1 | head -n1 | awk '{ print "HAProxy", $3 }' ;;
  esac
}

# --- the origins, all on GEN_CORE -----------------------------------------------------------------------
# echo_ports: one per backend; echo_pids: the origin processes (their CPU is the backend column).
n_back=1
[[ " ${modes[*]} " == *" balance "* ]] && n_back=$BACKENDS
echo_ports=()
echo_pids=()
url_path=/
if [[ $ORIGIN == echo ]]; then
  for ((i = 1; i <= n_back; i++)); do
    gb_gatebench_serve "$GB_TMP/echo$i" "$GEN_CORE" echo --port 0 --threads 1 --size "$PAYLOAD"
    echo_ports+=("$GB_SERVE_PORT")
    echo_pids+=("$GB_SERVE_PID")
  done
else
  # One nginx worker with a listener per backend, each serving the same PAYLOAD-byte file at /1k.
  origin="$GB_TMP/origin"
  for ((i = 1; i <= n_back; i++)); do echo_ports+=("$(gb_free_port)"); done
  gb_nginx_file_origin "$origin" "$GEN_CORE" "$PAYLOAD" "${echo_ports[@]}"
  echo_pids=("$GB_NGINX_PID" "${GB_NGINX_WORKERS[@]}")
  url_path=/1k
fi

# --- the proxies, each alone on PROXY_CORE ------------------------------------------------------------
declare -A proxy_port=() proxy_pids=()
for m in "${modes[@]}"; do
  if [[ $m == proxy ]]; then ups=("127.0.0.1:${echo_ports[0]}"); else ups=("${echo_ports[@]/#/127.0.0.1:}"); fi
  read -r -a mt <<<"${mode_tools[$m]}"
  for t in "${mt[@]}"; do
    case $t in
      nginx)
        port=$(gb_free_port)
        gb_nginx_proxy_conf "$GB_TMP/nginx-$m" "$port" "$MAXCONN" "$NGINX_KEEPALIVE" "${ups[@]}"
        gb_nginx_start "$GB_TMP/nginx-$m" "$PROXY_CORE" "$port"
        proxy_pids[$m-$t]="$GB_NGINX_PID ${GB_NGINX_WORKERS[*]}"
        ;;
      haproxy)
        port=$(gb_free_port)
        gb_haproxy_conf "$GB_TMP/haproxy-$m.cfg" "$port" "$MAXCONN" "${ups[@]}"
        gb_haproxy_start "$GB_TMP/haproxy-$m.cfg" "$PROXY_CORE" "$port"
        proxy_pids[$m-$t]=$GB_HAPROXY_PID
        ;;
      gatebench | gatebench-before)
        upargs=()
        for u in "${ups[@]}"; do upargs+=(--upstream "http://$u"); done
        bin=$GATEBENCH
        [[ $t == gatebench-before ]] && bin=$BEFORE_COPY
        GATEBENCH=$bin gb_gatebench_serve "$GB_TMP/$t-$m" "$PROXY_CORE" "$m" --port 0 --threads 1 "${upargs[@]}"
        port=$GB_SERVE_PORT
        proxy_pids[$m-$t]=$GB_SERVE_PID
        ;;
    esac
    proxy_port[$m-$t]=$port
  done
done

# Every proxy must pass the origin's answers through intact before it is measured: with the echo,
# 200 POSTs, --verify; with nginx, the file's bytes by one GET, then 200 requests all 2xx.
for m in "${modes[@]}"; do
  read -r -a mt <<<"${mode_tools[$m]}"
  for t in "${mt[@]}"; do
    chk="$GB_TMP/check-$m-$t"
    rc=0
    if [[ $ORIGIN == echo ]]; then
      chkargs=(-m POST --payload-size "$PAYLOAD" --verify)
    else
      got=$(gb_http_get "${proxy_port[$m-$t]}" /1k) || gb_die "$t ($m): GET /1k through the proxy failed"
      [[ $got == "$(cat "$origin/www/1k")" ]] || gb_die "$t ($m): GET /1k through the proxy did not return the file"
      chkargs=(-m "$METHOD")
      [[ $METHOD == POST ]] && chkargs+=(--payload-size "$PAYLOAD")
    fi
    taskset -c "$GEN_CORE" "$GATEBENCH" load "http://127.0.0.1:${proxy_port[$m-$t]}$url_path" -n 200 -c 4 -t 1 \
      -q "${chkargs[@]}" --json "$chk.json" >"$chk.out" 2>"$chk.err" || rc=$?
    read -r _ _ _ err okn < <(gb_gatebench_load_stats "$chk.json" 2>/dev/null || echo NA NA NA NA NA)
    [[ $rc -eq 0 && $okn == 200 ]] \
      || gb_die "$t ($m) failed the check (exit $rc, $okn of 200 ok, errors $err %): $(tail -n3 "$chk.err" | tr '\n' ' ')"
  done
done

# --- the generator -------------------------------------------------------------------------------------
# wrk's POST: a Lua script with a PAYLOAD-byte JSON body (gatebench's --payload-size shape).
if [[ $GEN == wrk && $METHOD == POST ]]; then
  python3 - "$PAYLOAD" "$GB_TMP/post.lua" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
head = '{"size":"%dB","payload":"' % n
body = head + "x" * max(0, n - len(head) - 2) + '"}'
with open(path, "w") as f:
    f.write('wrk.method = "POST"\n')
    f.write('wrk.headers["Content-Type"] = "application/json"\n')
    f.write("wrk.body = '%s'\n" % body)
PY
fi

# wrk_stats OUT — "rps p50_ms p99_ms error_pct ok" from a `wrk --latency` report: errors are
# non-2xx/3xx responses and socket errors, per request made.
wrk_stats() {
  awk '
    function ms(v) {
      if (v ~ /us$/) return v * 0.001
      if (v ~ /ms$/) return v + 0
      if (v ~ /s$/) return v * 1000
      return "NA"
    }
    / requests in / { n = $1 }
    /^Requests\/sec:/ { rps = $2 }
    /^ +50%/ { p50 = ms($2) }
    /^ +99%/ { p99 = ms($2) }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    /Socket errors:/ { gsub(",", ""); serr = $4 + $6 + $8 + $10 }
    END {
      if (n == "" || rps == "") { print "NA NA NA NA NA"; exit }
      printf "%s %s %s %.3f %d\n", rps, (p50 == "" ? "NA" : p50), (p99 == "" ? "NA" : p99),
        (n > 0 ? (bad + serr) * 100 / n : 0), n - bad
    }' "$1"
}

# gen_run URL SECS OUT — the generator pinned to GEN_CORE under /usr/bin/time; sets rc.
gen_run() {
  local url=$1 secs=$2 out=$3
  local -a args
  rc=0
  if [[ $GEN == wrk ]]; then
    args=(-t1 -c"$CONNS" -d"${secs}s" --latency)
    [[ $METHOD == POST ]] && args+=(-s "$GB_TMP/post.lua")
    gb_timed "$out.time" "$GEN_CORE" $((secs + 30)) wrk "${args[@]}" "$url" >"$out.out" 2>"$out.err" || rc=$?
  else
    args=(-c "$CONNS" -d "${secs}s" -t 1 -q -m "$METHOD")
    [[ $METHOD == POST ]] && args+=(--payload-size "$PAYLOAD")
    gb_timed "$out.time" "$GEN_CORE" $((secs + 30)) \
      "$GATEBENCH" load "$url" "${args[@]}" --json "$out.json" >"$out.out" 2>"$out.err" || rc=$?
  fi
}

# --- one run of one proxy ----------------------------------------------------------------------------
# run_one MODE RUN TOOL SECONDS OUT — the generator pinned to GEN_CORE under /usr/bin/time, the
# proxy's CPU and RSS and both cores' time around it. Prints one TSV row (tsv_header columns).
tsv_header() {
  printf '%s\n' "mode	run	tool	ok	exit	duration_s	elapsed_s	responses	rps	p50_ms	p99_ms	error_pct	rss_mib	anon_mib	tcp_connects	proxy_cpu_s	proxy_cpu_per_100k	proxy_util	gen_util	backend_util	proxy_core_busy	gen_core_busy	proxy_core_other	gen_core_other	backend_cpu_s	pss_mib	origin	gen	method"
}

run_one() {
  local m=$1 run=$2 t=$3 secs=$4 out=$5 url rc=0 spid p i
  local -a pids
  read -r -a pids <<<"${proxy_pids[$m-$t]}"
  url="http://127.0.0.1:${proxy_port[$m-$t]}$url_path"
  local ao0 ao1 c0 c1 b0 b1 pj0 pj1 gj0 gj1 elapsed=NA user=NA sys=NA rps=NA p50=NA p99=NA err=NA okn=NA rss=NA anon=NA pss=NA
  local -a bcpu0 bcpu1
  c0=$(gb_pids_cpu_secs "${pids[@]}")
  for p in "${echo_pids[@]}"; do bcpu0+=("$(gb_proc_cpu_secs "$p")"); done
  ao0=$(gb_tcp_active_opens)
  pj0=$(gb_core_jiffies "$PROXY_CORE")
  gj0=$(gb_core_jiffies "$GEN_CORE")
  gb_rss_sampler "$out.rss" 1 "$(awk -v s="$secs" 'BEGIN { print s - 0.5 }')" "${pids[@]}" &
  spid=$!
  gb_track_pid "$spid"
  taskset -pc "$GEN_CORE" "$spid" >/dev/null 2>&1 || true
  gen_run "$url" "$secs" "$out"
  pj1=$(gb_core_jiffies "$PROXY_CORE")
  gj1=$(gb_core_jiffies "$GEN_CORE")
  c1=$(gb_pids_cpu_secs "${pids[@]}")
  ao1=$(gb_tcp_active_opens)
  for p in "${echo_pids[@]}"; do bcpu1+=("$(gb_proc_cpu_secs "$p")"); done
  wait "$spid" 2>/dev/null || true
  gb_untrack_pid "$spid"
  if [[ -s $out.rss ]]; then
    read -r rss anon pss < <(awk '{ printf "%.2f %.2f %s\n", $1 / 1024, $2 / 1024, ($3 == "NA" ? "NA" : sprintf("%.2f", $3 / 1024)) }' "$out.rss")
  fi
  if [[ -s $out.time ]]; then read -r elapsed user sys < <(tail -n1 "$out.time"); fi
  if [[ $rc -eq 0 && $GEN == wrk ]]; then
    read -r rps p50 p99 err okn < <(wrk_stats "$out.out") || true
  elif [[ $rc -eq 0 && -s $out.json ]]; then
    read -r rps p50 p99 err okn < <(gb_gatebench_load_stats "$out.json") || true
  fi
  b0=0 b1=0
  local bdelta=()
  for ((i = 0; i < ${#echo_pids[@]}; i++)); do
    bdelta+=("$(awk -v a="${bcpu0[i]}" -v b="${bcpu1[i]}" 'BEGIN { printf "%.2f", b - a }')")
    b0=$(awk -v a="$b0" -v b="${bcpu0[i]}" 'BEGIN { printf "%.2f", a + b }')
    b1=$(awk -v a="$b1" -v b="${bcpu1[i]}" 'BEGIN { printf "%.2f", a + b }')
  done
  local ok=1
  if [[ $rc -ne 0 || $rps == NA || $elapsed == NA || $okn == NA || $okn == 0 ]]; then
    ok=0
    gb_log "run $run $t ($m) failed (exit $rc, ${okn} ok): $(tail -n3 "$out.err" 2>/dev/null | tr '\n' ' ')"
  fi
  local IFS=,
  awk -v m="$m" -v run="$run" -v tool="$t" -v ok="$ok" -v rc="$rc" -v dur="$secs" -v el="$elapsed" \
    -v okn="$okn" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v err="$err" -v rss="$rss" -v anon="$anon" -v pss="$pss" -v conns=$((ao1 - ao0)) \
    -v u="$user" -v s="$sys" -v c0="$c0" -v c1="$c1" -v b0="$b0" -v b1="$b1" -v bd="${bdelta[*]}" \
    -v pbusy="$(gb_core_busy "$pj0" "$pj1")" -v gbusy="$(gb_core_busy "$gj0" "$gj1")" \
    -v psirq="$(gb_core_softirq "$pj0" "$pj1")" -v gsirq="$(gb_core_softirq "$gj0" "$gj1")" \
    -v origin="$ORIGIN" -v gen="$GEN" -v method="$METHOD" 'BEGIN {
      OFS = "\t"
      pu = "NA"; gu = "NA"; bu = "NA"; po = "NA"; go = "NA"; per = "NA"
      if (el != "NA" && el + 0 > 0) {
        pu = sprintf("%.3f", (c1 - c0) / el)
        bu = sprintf("%.3f", (b1 - b0) / el)
        if (u != "NA") gu = sprintf("%.3f", (u + s) / el)
        if (pbusy != "NA") po = sprintf("%.3f", max0(pbusy - pu - psirq))
        if (gbusy != "NA" && gu != "NA") go = sprintf("%.3f", max0(gbusy - gu - bu - gsirq))
      }
      if (okn != "NA" && okn + 0 > 0) per = sprintf("%.4f", (c1 - c0) / okn * 100000)
      if (rps != "NA") rps = sprintf("%.1f", rps)
      if (p50 != "NA") p50 = sprintf("%.3f", p50)
      if (p99 != "NA") p99 = sprintf("%.3f", p99)
      print m, run, tool, ok, rc, dur, el, okn, rps, p50, p99, err, rss, anon, conns, sprintf("%.2f", c1 - c0),
            per, pu, gu, bu, pbusy, gbusy, po, go, bd, pss, origin, gen, method
    }
    function max0(x) { return x < 0 ? 0 : x }'
}

# --- warm-up, then the interleaved runs ----------------------------------------------------------------
# Rows go to a temp file first, to bench/results/ only when every run has been made.
results=$(gb_results_file proxy-vs-peers)
tsv="$GB_TMP/runs.tsv"
tsv_header >"$tsv"

gb_warn_if_busy "$PROXY_CORE" "$GEN_CORE"
for m in "${modes[@]}"; do
  read -r -a mt <<<"${mode_tools[$m]}"
  if [[ $warm_s -gt 0 ]]; then
    for t in "${mt[@]}"; do
      gb_log "warm-up: $t ($m) for ${warm_s}s"
      run_one "$m" 0 "$t" "$warm_s" "$GB_TMP/warmup-$m-$t" >/dev/null
    done
  fi
  for ((run = 1; run <= RUNS; run++)); do
    for t in "${mt[@]}"; do
      row=$(run_one "$m" "$run" "$t" "$dur_s" "$GB_TMP/run$run-$m-$t")
      printf '%s\n' "$row" >>"$tsv"
      IFS=$'\t' read -r -a f <<<"$row"
      gb_log "run $run/$RUNS $m $t: ${f[8]} req/s, p99 ${f[10]} ms, errors ${f[11]} %, RSS ${f[12]} MiB" \
        "(anon ${f[13]}, PSS ${f[25]}), ${f[14]} TCP connects, proxy CPU ${f[17]} of a core (${f[16]} s per 100k);" \
        "core $PROXY_CORE busy ${f[20]} (other ${f[22]}), core $GEN_CORE busy ${f[21]} (other ${f[23]});" \
        "backend CPU-s ${f[24]}"
    done
  done
done

cp "$tsv" "$results"

# --- report ----------------------------------------------------------------------------------------------
report() {
  local m sub t what gen_cmd origin_txt
  # The default setting keeps the wording of the summaries published before the options.
  if [[ $ORIGIN == echo && $METHOD == POST ]]; then
    what="${PAYLOAD}-byte POST echo"
  elif [[ $ORIGIN == echo ]]; then
    what="GET of a ${PAYLOAD}-byte body from the echo"
  else
    what="$METHOD of a ${PAYLOAD}-byte file from nginx"
  fi
  if [[ $GEN == wrk ]]; then
    gen_cmd="wrk -t1 -c$CONNS --latency"
    [[ $METHOD == POST ]] && gen_cmd+=" -s post.lua (${PAYLOAD}-byte JSON body)"
  else
    gen_cmd="gatebench load -c $CONNS -t 1 -m $METHOD"
    [[ $METHOD == POST ]] && gen_cmd+=" --payload-size $PAYLOAD"
  fi
  if [[ $ORIGIN == echo ]]; then
    origin_txt="echo backends (\`gatebench serve echo --threads 1 --size $PAYLOAD\`)"
  else
    origin_txt="the nginx origin (one worker, a ${PAYLOAD}-byte file at /1k, $("$GB_NGINX" -v 2>&1 | sed 's|.*: ||'))"
  fi
  echo "## Reference intermediaries: ${tools[*]} — $what, $CONNS connections"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); each proxy alone on core $PROXY_CORE with one worker/thread;"
  echo "generator (\`$gen_cmd\`) and $origin_txt on core $GEN_CORE;"
  echo "$RUNS interleaved runs × ${dur_s}s per proxy and mode after a ${warm_s}s warm-up; medians; NICE=$GB_NICE."
  echo "Setting: ORIGIN=$ORIGIN GEN=$GEN METHOD=$METHOD NGINX_KEEPALIVE=$NGINX_KEEPALIVE${SETTING:+ (SETTING=$SETTING)}."
  for t in "${tools[@]}"; do echo "- $t: $(tool_version "$t")"; done
  for m in "${modes[@]}"; do
    sub="$GB_TMP/summary-$m.tsv"
    awk -F'\t' -v m="$m" 'NR == 1 || $1 == m' "$results" | cut -f2- >"$sub"
    echo
    case $m in
      proxy) echo "### proxy: one $ORIGIN origin (nginx \`proxy_pass\` + upstream keepalive $NGINX_KEEPALIVE; HAProxy \`http-reuse always\`)" ;;
      balance) echo "### balance: $n_back $ORIGIN origins, round robin (nginx \`upstream\` + keepalive $NGINX_KEEPALIVE; HAProxy \`balance roundrobin\`)" ;;
    esac
    [[ " ${mode_tools[$m]} " == *" gatebench "* || " ${tools[*]} " != *" gatebench "* ]] \
      || echo "(gatebench skipped: \`gatebench serve $m\` is not in this binary.)"
    echo
    gb_proxy_summarize "$sub" "$BASELINE" "$RSS_BASELINE"
  done
  echo
  cat <<'EOT'
req/s, p50, p99 and errors: the generator's JSON record (wrk: its report; errors = non-2xx + socket errors). RSS under load: the proxy's largest VmRSS
in a run (nginx: master + worker summed), sampled every 0.5 s; the median over runs of those maxima.
anon = the RssAnon part of it (heap, stacks), the rest being resident pages of binaries and libraries;
PSS = /proc/PID/smaps_rollup Pss, the same maxima, shared pages divided among the processes mapping them.
Compare proxies by anon or PSS beside RSS: a binary's resident pages follow its size and layout.
TCP connects per run: system-wide connect()s during the run (/proc/net/snmp ActiveOpens): the generator's
connections (+1 for its probe) and any upstream connections the proxy opened (or closed and reopened).
proxy CPU-s per 100k req = the proxy's user+sys CPU ÷ responses × 100,000. process CPU = CPU-s ÷ wall s
(the generator + backend column adds the generator's and the origins' CPU on the other core).
core busy with the benchmark = core busy (/proc/stat) − other load; ≈ 1.00 on the proxy core: the proxy
was the limit. other load = core busy − measured processes − (soft)irq: other people's work.
EOT
  echo "Raw runs: ${results#"$GB_ROOT"/}"
}
report | tee "${results%.tsv}.md"
