#!/usr/bin/env bash
# Soak: gatebench's reference services under mixed traffic for a long time (30 minutes by
# default). Echo back-ends, a cleartext proxy, a TLS proxy, a balancer and a proxy whose
# upstream does not exist run side by side; several `gatebench load` processes in the open
# model drive HTTP/1.1, TLS, h2 and h2c at modest rates, while faults are injected: one
# back-end of the balancer is killed (SIGKILL) and restarted on the same port periodically,
# the dead-upstream proxy answers every request 502, and garbage requests, half requests
# and aborted uploads arrive on raw sockets. Every 10 s the script samples each service's
# RSS, open files and CPU from /proc/PID. At the end it checks:
#
#   - RSS after warm-up (the first sixth of the run) stays within ±10 % of its median;
#   - open files return to the baseline taken before the load (after the load stops and
#     idle connections close);
#   - the loads report no errors except the injected faults: only 5xx in the loads that
#     target the flapping balancer and the dead-upstream proxy, nothing in the others.
#
# Results: bench/results/soak-<date>.tsv (samples), .md (the summary, pass/fail per check; the
# exit status is 0 only when every check passed) and a directory of the same name with each
# load's --json record and the rest of the run's data (`soak_summary.py again DIR` reprints it).
#
#   bench/soak.sh                       # 30 minutes
#   DURATION=2m bench/soak.sh           # a short trial
#   RATE_SCALE=0.5 bench/soak.sh        # half the request rates
#
# Environment: DURATION (30m), RATE_SCALE (1), TICK (10 s between samples), FLAP_PERIOD (60 s
# between kills of the flapping back-end), FLAP_DOWN (20 s it stays down), IDLE_WAIT (120 s to
# wait for open files to return to the baseline), GATEBENCH, NICE, KEEP_TMP. See
# bench/README.md ("soak.sh").
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
gb_init

DURATION=${DURATION:-30m}
RATE_SCALE=${RATE_SCALE:-1}
TICK=${TICK:-10}
FLAP_PERIOD=${FLAP_PERIOD:-60}
FLAP_DOWN=${FLAP_DOWN:-20}
IDLE_WAIT=${IDLE_WAIT:-120}
dur_s=$(gb_duration_secs "$DURATION")
[[ $dur_s -ge 60 ]] || gb_die "DURATION must be at least 1m"
[[ $RATE_SCALE =~ ^[0-9]+(\.[0-9]+)?$ ]] || gb_die "RATE_SCALE must be a number"
for v in TICK FLAP_PERIOD FLAP_DOWN IDLE_WAIT; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || gb_die "$v must be a whole number of seconds ≥ 1"
done
[[ $FLAP_DOWN -lt $FLAP_PERIOD ]] || gb_die "FLAP_DOWN must be shorter than FLAP_PERIOD"

gb_need_gatebench
gb_snapshot_gatebench
gb_self_signed_cert "$GB_TMP/cert"
CERT=$GB_TMP/cert/cert.pem
KEY=$GB_TMP/cert/key.pem

tsv=$(gb_results_file soak)
md=${tsv%.tsv}.md
work=$GB_TMP/soak
mkdir -p "$work"

# ---------------------------------------------------------------------------------------------
# Services. Every one runs with one thread; their PIDs are tracked (stopped on exit) and kept
# by name in svc_pid. The listening line may say http:// or https://.
# ---------------------------------------------------------------------------------------------
declare -A svc_pid=() svc_port=() svc_starts=()
services=()

# soak_serve NAME ARGS… — start `gatebench serve ARGS…`, wait for its listening line.
soak_serve() {
  local name=$1 log=$work/$1 i line="" pid
  shift
  nice -n "$GB_NICE" "$GATEBENCH" serve "$@" </dev/null >>"$log.out" 2>>"$log.err" &
  pid=$!
  gb_track_pid "$pid"
  for ((i = 0; i < 100; i++)); do
    # Only the line this start printed: the log is appended to across restarts.
    line=$(grep -o 'listening on https\?://127\.0\.0\.1:[0-9]*' "$log.out" 2>/dev/null | tail -n1 || true)
    if [[ -n $line && ${svc_starts[$name]:-0} -lt $(grep -c 'listening on' "$log.out") ]]; then
      break
    fi
    line=""
    gb_pid_alive "$pid" || break
    sleep 0.1
  done
  [[ -n $line ]] || {
    tail -n5 "$log.err" >&2
    gb_die "gatebench serve $name did not report a listening address (pid $pid)"
  }
  svc_pid[$name]=$pid
  svc_port[$name]=${line##*:}
  svc_starts[$name]=$((${svc_starts[$name]:-0} + 1))
  [[ " ${services[*]} " == *" $name "* ]] || services+=("$name")
  gb_wait_port "${svc_port[$name]}" 5
  gb_log "$name: pid $pid, port ${svc_port[$name]}"
}

# The flapping back-end restarts on the port it had: the balancer knows it by that port.
flap_port=$(gb_free_port)
dead_port=$(gb_free_port) # nothing listens here: the dead-upstream proxy's upstream

soak_serve echo-c echo --port 0 --threads 1 --http2
soak_serve echo-tls echo --port 0 --threads 1 --http2 --tls --cert "$CERT" --key "$KEY"
soak_serve echo-b1 echo --port 0 --threads 1
soak_serve echo-b2 echo --port 0 --threads 1
soak_serve echo-b3 echo --port "$flap_port" --threads 1
soak_serve proxy-c proxy --port 0 --threads 1 --http2 \
  --upstream "http://127.0.0.1:${svc_port[echo-c]}"
soak_serve proxy-tls proxy --port 0 --threads 1 --http2 --tls --cert "$CERT" --key "$KEY" \
  --upstream "https://127.0.0.1:${svc_port[echo-tls]}" --insecure-upstream
soak_serve balance balance --port 0 --threads 1 \
  --upstream "http://127.0.0.1:${svc_port[echo-b1]}" \
  --upstream "http://127.0.0.1:${svc_port[echo-b2]}" \
  --upstream "http://127.0.0.1:$flap_port"
soak_serve proxy-dead proxy --port 0 --threads 1 --upstream "http://127.0.0.1:$dead_port"

# ---------------------------------------------------------------------------------------------
# Sampling: one row per service per tick.
# ---------------------------------------------------------------------------------------------
t0=$(date +%s)
printf 'phase\tt_s\tservice\tpid\trss_kib\topen_files\tcpu_s\n' >"$tsv"

sample() {
  local phase=$1 name pid rss fds cpu t
  t=$(($(date +%s) - t0))
  for name in "${services[@]}"; do
    pid=${svc_pid[$name]}
    if [[ -z $pid ]] || ! gb_pid_alive "$pid"; then
      printf '%s\t%s\t%s\tNA\tNA\tNA\tNA\n' "$phase" "$t" "$name" >>"$tsv"
      continue
    fi
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo NA)
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    cpu=$(gb_proc_cpu_secs "$pid" 2>/dev/null || echo NA)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$t" "$name" "$pid" "${rss:-NA}" "$fds" "$cpu" >>"$tsv"
  done
}

# ---------------------------------------------------------------------------------------------
# Faults on raw sockets: each probe runs in a subshell (a write to a socket the server closed
# must not SIGPIPE the script) and appends "t service kind result" to probes.tsv. `answered`
# is the status code of the first line read back (400 for garbage is the expected answer);
# `closed` means the server closed without answering, `none` that nothing came within 2 s.
# ---------------------------------------------------------------------------------------------
probes=$work/probes.tsv
printf 't_s\tservice\tkind\tresult\n' >"$probes"

probe() {
  local name=$1 kind=$2 port=${svc_port[$1]}
  (
    set +e
    trap '' PIPE
    t=$(($(date +%s) - t0))
    exec 3<>"/dev/tcp/127.0.0.1/$port" || { printf '%s\t%s\t%s\tconnect_failed\n' "$t" "$name" "$kind" >>"$probes"; exit 0; }
    case $kind in
      garbage) printf 'GARBAGE\x01\x02 / HTTP/9.9\r\nno colon here\r\n\r\n' >&3 ;;
      half_head) printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le' >&3 ;;
      half_body) printf 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n%0512d' 0 >&3 ;;
      tls_garbage) printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&3 ;;
      connect_close) ;;
    esac 2>/dev/null
    result=aborted
    if [[ $kind == garbage || $kind == tls_garbage ]]; then
      if IFS= read -r -t 2 line <&3; then
        line=${line%$'\r'}
        if [[ $line =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]]; then result=${BASH_REMATCH[1]}; else result=other; fi
      elif [[ $? -gt 128 ]]; then
        result=none
      else
        result=closed
      fi
    fi
    exec 3>&-
    printf '%s\t%s\t%s\t%s\n' "$t" "$name" "$kind" "$result" >>"$probes"
  ) || true
}

raw_faults() {
  local name
  for name in proxy-c balance echo-c; do
    probe "$name" garbage
    probe "$name" half_head
    probe "$name" half_body
    probe "$name" connect_close
  done
  for name in proxy-tls echo-tls; do
    probe "$name" tls_garbage
    probe "$name" connect_close
  done
}

# ---------------------------------------------------------------------------------------------
# The flapping back-end: SIGKILL (a crash, no drain), FLAP_DOWN s down, restart on its port.
# ---------------------------------------------------------------------------------------------
flaps=$work/flaps.tsv
printf 't_s\tevent\tpid\n' >"$flaps"
flap_next_kill=$FLAP_PERIOD
flap_next_start=""

flap() {
  local t pid
  t=$(($(date +%s) - t0))
  if [[ -z $flap_next_start && $t -ge $flap_next_kill ]]; then
    pid=${svc_pid[echo-b3]}
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    gb_untrack_pid "$pid"
    svc_pid[echo-b3]=""
    printf '%s\tkill\t%s\n' "$t" "$pid" >>"$flaps"
    flap_next_start=$((t + FLAP_DOWN))
    flap_next_kill=$((flap_next_kill + FLAP_PERIOD))
  elif [[ -n $flap_next_start && $t -ge $flap_next_start ]]; then
    soak_serve echo-b3 echo --port "$flap_port" --threads 1
    printf '%s\tstart\t%s\n' "$t" "${svc_pid[echo-b3]}" >>"$flaps"
    flap_next_start=""
  fi
}

# ---------------------------------------------------------------------------------------------
# The loads: open model (-R), one thread each, for DURATION. name|expect|args…
# expect: clean (no error of any class), 5xx-only (errors of class status_5xx at most) or
# all-5xx (every finished request status_5xx).
# ---------------------------------------------------------------------------------------------
rate() { awk -v r="$1" -v s="$RATE_SCALE" 'BEGIN { x = r * s; if (x < 1) x = 1; printf "%.0f", x }'; }
pc=${svc_port[proxy-c]} pt=${svc_port[proxy-tls]} pb=${svc_port[balance]} pd=${svc_port[proxy-dead]}
ec=${svc_port[echo-c]}
loads=(
  "h1-proxy|clean|http://127.0.0.1:$pc/ -c 8 -R $(rate 300)"
  "h1-post-proxy|clean|http://127.0.0.1:$pc/ -c 8 -R $(rate 150) -m POST --payload-size 1024 --verify"
  "h2c-proxy|clean|http://127.0.0.1:$pc/ --h2c -c 2 --streams 8 -R $(rate 250)"
  "h2c-echo|clean|http://127.0.0.1:$ec/ --h2c -c 2 --streams 8 -R $(rate 200)"
  "tls-h1-proxy|clean|https://127.0.0.1:$pt/ -k -c 8 -R $(rate 200)"
  "h2-proxy|clean|https://127.0.0.1:$pt/ --http2 -k -c 2 --streams 8 -R $(rate 250)"
  "h1-balance|5xx-only|http://127.0.0.1:$pb/ -c 16 -R $(rate 300)"
  "h1-dead-upstream|all-5xx|http://127.0.0.1:$pd/ -c 4 -R $(rate 20) --no-probe"
)

# fd_states PHASE — each service's open files by kind (TCP state, other) into fdstates.tsv.
fd_states() {
  local name args=()
  for name in "${services[@]}"; do
    [[ -n ${svc_pid[$name]} ]] && args+=("$name=${svc_pid[$name]}")
  done
  python3 "$here/soak_summary.py" fd-states "$work/fdstates.tsv" "$1" "${args[@]}"
}

printf 'phase\tservice\tkind\tcount\n' >"$work/fdstates.tsv"
sample baseline
fd_states baseline
gb_log "baseline open files taken; starting ${#loads[@]} loads for ${dur_s}s"

declare -A load_pid=()
for l in "${loads[@]}"; do
  IFS='|' read -r name expect args <<<"$l"
  # shellcheck disable=SC2086 # args is a word list on purpose
  nice -n "$GB_NICE" timeout -k 10 $((dur_s + 120)) "$GATEBENCH" load $args -t 1 -d "${dur_s}s" -q \
    --json "$work/load-$name.json" </dev/null >"$work/load-$name.out" 2>"$work/load-$name.err" &
  load_pid[$name]=$!
  gb_track_pid "${load_pid[$name]}"
  printf '%s\t%s\t%s\n' "$name" "$expect" "$args" >>"$work/loads.tsv"
done

loads_alive() {
  local p
  for p in "${load_pid[@]}"; do gb_pid_alive "$p" && return 0; done
  return 1
}

# One loop does everything timed, so every PID stays in this shell: a sample every TICK s,
# the flapping back-end's kill or restart when due, and a round of raw-socket faults every 5 s.
next=$TICK
next_raw=5
while loads_alive; do
  now=$(($(date +%s) - t0))
  if [[ $now -ge $next ]]; then
    sample load
    next=$((next + TICK))
  fi
  flap
  if [[ $now -ge $next_raw ]]; then
    raw_faults
    next_raw=$((now + 5))
  fi
  sleep 1
done
for name in "${!load_pid[@]}"; do
  wait "${load_pid[$name]}" 2>/dev/null || true
  gb_untrack_pid "${load_pid[$name]}"
done
load_end=$(($(date +%s) - t0))
gb_log "loads finished at ${load_end}s"

# The flapping back-end ends the run up, so the balancer's connection count settles.
[[ -n $flap_next_start ]] && flap_next_start=0 && flap

# After the load: wait until every service is back to its baseline open files (idle
# connections close on the services' own timeouts), sampling as we go.
declare -A base_fds=()
while IFS=$'\t' read -r phase _ name _ _ fds _; do
  [[ $phase == baseline ]] && base_fds[$name]=$fds
done <"$tsv"
settled=""
for ((w = 0; w <= IDLE_WAIT; w += 5)); do
  sample idle
  ok=1
  for name in "${services[@]}"; do
    pid=${svc_pid[$name]}
    gb_pid_alive "$pid" || continue
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    [[ $fds -le ${base_fds[$name]} ]] || ok=0
  done
  if [[ $ok -eq 1 ]]; then settled=$w; break; fi
  sleep 5
done
sample end
fd_states end
gb_log "open files ${settled:+back at baseline after ${settled}s}${settled:-not back at baseline after ${IDLE_WAIT}s}"

# ---------------------------------------------------------------------------------------------
# Summary.
# ---------------------------------------------------------------------------------------------
{
  echo "# Soak: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "gatebench $("$GATEBENCH" --version 2>&1 | awk '{ print $2 }') (${GATEBENCH_SRC#"$GB_ROOT"/})," \
    "$(nproc) cores, $(uname -sr); DURATION=$DURATION, RATE_SCALE=$RATE_SCALE, TICK=${TICK}s," \
    "FLAP_PERIOD=${FLAP_PERIOD}s, FLAP_DOWN=${FLAP_DOWN}s. Samples: \`$(basename "$tsv")\`."
  echo
  python3 "$here/soak_summary.py" --samples "$tsv" --work "$work" --duration "$dur_s" \
    --load-end "$load_end" --settled "${settled:-NA}" --idle-wait "$IDLE_WAIT"
} >"$md"
# The per-load records, probes, flaps and the run's parameters go next to the samples, so
# `soak_summary.py again` (and bench/figures.py --check) can print the summary from them.
mkdir -p "${tsv%.tsv}"
cp "$work"/load-*.json "$work/loads.tsv" "$probes" "$flaps" "$work/fdstates.tsv" "$work/params.tsv" \
  "${tsv%.tsv}/"
gb_log "wrote $tsv, $md and ${tsv%.tsv}/"
cat "$md"
grep -q '^\*\*Result: pass' "$md"
