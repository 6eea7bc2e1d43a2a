#!/usr/bin/env bash
# Several generator hosts against one target, on the testbed of scripts/testbed.sh: nginx in the
# `sut` namespace, `gatebench load --shard I/N --start-at T` in the generator namespaces (gen1,
# gen2, gen3), their records merged with `gatebench merge`. Four figures (docs/hosts.md):
#
#  (a) target-limited: nginx with one worker on core 0, the generators on core 1, one thread
#      each; one generator (gen1, -c CONNS) against two (gen1 + gen2, shards 0/2 and 1/2 of the
#      same -c CONNS, one --start-at), alternated A B A B; req/s from the merged record and from
#      nginx's own count (stub_status), and the ratio two ÷ one;
#  (b) generator-limited: nginx with two workers on both cores, each generator one thread held
#      to GEN_QUOTA % of one core by a cgroup CPU quota (so one generator is the limit, not the
#      target); one generator (-c B_CONNS) against two shards of the same -c, alternated; the
#      ratio, each shard's self-check (CPU, warnings) and how long its quota throttled it;
#  (c) SCALE_CONNS concurrent keep-alive connections from three generator hosts (one shard each)
#      against nginx with two workers, at SCALE_RATE req/s in all (the open model opens each
#      connection at its first request, so the warm-up, SCALE_WARMUP, must hold SCALE_CONNS
#      requests: then every connection is open and idle most of the time); errors in the merged
#      record, the generators' own count of connections opened and nginx's count of accepted
#      ones (stub_status `accepts`, less the script's own status requests);
#  (d) the shards' start skew (`merged.start_skew_ms`) over every merged run of two or more
#      shards, and the clock offset of each namespace, measured as gatebench does before a run
#      (`gatebench host clock` over ssh, eight round trips, the shortest kept); part `start`
#      adds START_RUNS short runs of three shards (gen1, gen2, gen3 on both cores, -c 30, 2 s)
#      against nginx with two workers, for the skew alone.
#
#   bench/multi-generator.sh                  all parts (~5 min)
#   PARTS="scale" bench/multi-generator.sh    only (c) (target generator scale start: a b c d)
#
# Environment: RUNS (3 per setup in a and b), DURATION (5s), WARMUP (2s), CONNS (200),
# GEN_QUOTA (30, % of one core per generator in b), B_CONNS (100, connections in b), SCALE_CONNS (30000),
# SCALE_RATE (3000), SCALE_DURATION (20s), SCALE_WARMUP (12s), START_RUNS (8), START_LEAD (3, seconds from
# launching the shards to their --start-at), GATEBENCH, NICE, KEEP_TMP.
#
# Needs root (namespaces, sysctls in them, cgroups). Brings the testbed up when it is not, and
# then takes it down at the end. Inside the namespaces it sets, and puts back at the end when the
# testbed stays: net.core.somaxconn and net.ipv4.tcp_max_syn_backlog to 65535 in `sut` (nginx
# listens with backlog=65535), net.ipv4.ip_local_port_range to "1024 65535" in gen1..gen3.
# Everything it starts is stopped by PID. Results: bench/results/multi-generator-<date>.tsv (one
# row per run), .md (the summary, also on stdout) and a directory of the same name (the shards'
# and merged records, clock.tsv, params.tsv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
gb_init

RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-200}
GEN_QUOTA=${GEN_QUOTA:-30}
B_CONNS=${B_CONNS:-100}
SCALE_CONNS=${SCALE_CONNS:-30000}
SCALE_RATE=${SCALE_RATE:-3000}
SCALE_DURATION=${SCALE_DURATION:-20s}
SCALE_WARMUP=${SCALE_WARMUP:-12s}
START_LEAD=${START_LEAD:-3}
START_RUNS=${START_RUNS:-8}
PARTS=${PARTS:-"target generator scale start"}

[[ $(id -u) == 0 ]] || gb_die "needs root (network namespaces, sysctls in them, cgroups)"
DUR_S=$(gb_duration_secs "$DURATION")
WARM_S=$(gb_duration_secs "$WARMUP")
SDUR_S=$(gb_duration_secs "$SCALE_DURATION")
SWARM_S=$(gb_duration_secs "$SCALE_WARMUP")
gb_need_two_cores
gb_need_nginx
gb_need_gatebench
gb_snapshot_gatebench

STATE=${GATEBENCH_TESTBED_DIR:-/run/gatebench-testbed}
SUT_ADDR=10.77.0.20
BROUGHT_UP=0
SYSCTL_RESTORE=()

mg_cleanup() {
  local rc=$? i
  for ((i = ${#GB_PIDS[@]} - 1; i >= 0; i--)); do
    gb_stop_pid "${GB_PIDS[i]}"
  done
  GB_PIDS=()
  gb_remove_cgroups
  if [[ $BROUGHT_UP == 1 ]]; then
    "$GB_ROOT/scripts/testbed.sh" down >&2 || true
  else
    for i in "${SYSCTL_RESTORE[@]}"; do
      # "NS KEY VALUE"
      read -r ns key val <<<"$i"
      ip netns exec "$ns" sysctl -q -w "$key=$val" >/dev/null 2>&1 || true
    done
  fi
  mg_return "$rc"
  gb_cleanup
}
mg_return() { return "$1"; }
trap mg_cleanup EXIT

# --------------------------------------------------------------------------------------------
# The testbed and its limits
# --------------------------------------------------------------------------------------------

if ! "$GB_ROOT/scripts/testbed.sh" status >/dev/null 2>&1; then
  gb_log "bringing the testbed up (scripts/testbed.sh up)"
  "$GB_ROOT/scripts/testbed.sh" up >&2
  BROUGHT_UP=1
fi
SSH=(ssh -F "$STATE/ssh_config" -o BatchMode=yes -o ConnectTimeout=5)

# mg_sysctl HOST KEY VALUE — set a sysctl in a host's namespace, remembering the old value.
mg_sysctl() {
  local ns=gbtb-$1 key=$2 val=$3 old
  old=$(ip netns exec "$ns" sysctl -n "$key" | tr '\t' ' ')
  SYSCTL_RESTORE+=("$ns $key $old")
  ip netns exec "$ns" sysctl -q -w "$key=$val" >/dev/null
  echo "$1	$key	$old	$val" >>"$OUTDIR/sysctl.tsv"
}

OUT_TSV=$(gb_results_file multi-generator)
STEM=${OUT_TSV%.tsv}
OUTDIR=$STEM
mkdir -p "$OUTDIR"
printf 'host\tkey\tbefore\tset\n' >"$OUTDIR/sysctl.tsv"
mg_sysctl sut net.core.somaxconn 65535
mg_sysctl sut net.ipv4.tcp_max_syn_backlog 65535
for h in gen1 gen2 gen3; do mg_sysctl "$h" net.ipv4.ip_local_port_range "1024 65535"; done

# Every process this script starts inherits the hard open-files limit as its soft one
# (nginx's workers get worker_rlimit_nofile on top).
NOFILE=$(ulimit -Hn)
ulimit -n "$NOFILE"

{
  printf 'key\tvalue\n'
  printf 'measured_at\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf 'cores\t%s\n' "$(nproc)"
  printf 'kernel\t%s\n' "$(uname -r)"
  printf 'nginx\t%s\n' "$("$GB_NGINX" -v 2>&1 | sed 's/^nginx version: //')"
  printf 'gatebench\t%s\n' "$("$GATEBENCH" --version)"
  printf 'open_files_hard_limit\t%s\n' "$NOFILE"
  printf 'runs\t%s\nduration_s\t%s\nwarmup_s\t%s\nconns\t%s\n' "$RUNS" "$DUR_S" "$WARM_S" "$CONNS"
  printf 'gen_quota_pct\t%s\n' "$GEN_QUOTA"
  printf 'scale_conns\t%s\nscale_rate\t%s\nscale_duration_s\t%s\nscale_warmup_s\t%s\n' \
    "$SCALE_CONNS" "$SCALE_RATE" "$SDUR_S" "$SWARM_S"
  printf 'nice\t%s\n' "$GB_NICE"
  printf 'delay\t%s\n' "$(cat "$STATE/delay" 2>/dev/null || echo unknown)"
} >"$OUTDIR/params.tsv"

# --------------------------------------------------------------------------------------------
# Clock offsets: `gatebench host clock` over ssh, as the runner measures them
# --------------------------------------------------------------------------------------------

mg_clock() {
  python3 - "$GATEBENCH" "$STATE/ssh_config" "$@" <<'PY'
import subprocess, sys, time
exe, cfg, hosts = sys.argv[1], sys.argv[2], sys.argv[3:]
print("host\toffset_ms\tuncertainty_ms\trtts_ms")
for h in hosts:
    p = subprocess.Popen(["ssh", "-F", cfg, "-o", "BatchMode=yes", h, exe + " host clock"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    p.stdin.write("t\n"); p.stdin.flush(); p.stdout.readline()  # the session's start, not counted
    best, rtts = None, []
    for _ in range(8):
        t0 = time.time()
        p.stdin.write("t\n"); p.stdin.flush()
        remote = float(p.stdout.readline())
        t1 = time.time()
        rtt = t1 - t0
        rtts.append(rtt)
        off = remote - (t0 + rtt / 2)
        if best is None or rtt < best[0]:
            best = (rtt, off)
    p.stdin.close(); p.wait()
    print(f"{h}\t{best[1] * 1e3:+.3f}\t{best[0] / 2 * 1e3:.3f}\t" + ",".join(f"{r * 1e3:.3f}" for r in rtts))
PY
}
gb_log "clock offsets of gen1 gen2 gen3 sut"
mg_clock gen1 gen2 gen3 sut >"$OUTDIR/clock.tsv"

# --------------------------------------------------------------------------------------------
# nginx in the sut namespace
# --------------------------------------------------------------------------------------------

# mg_stub PORT — "active accepts requests" from nginx's stub_status, over the bridge.
mg_stub() {
  local fd line n=0 body=() in_body=0
  exec {fd}<>"/dev/tcp/$SUT_ADDR/$1" || gb_die "stub_status on $SUT_ADDR:$1 unreachable"
  printf 'GET /nginx_status HTTP/1.0\r\nHost: sut\r\n\r\n' >&"$fd"
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    if [[ $in_body == 1 ]]; then body+=("$line"); elif [[ -z $line ]]; then in_body=1; fi
  done <&"$fd"
  exec {fd}>&-
  # "Active connections: N" / "server accepts handled requests" / " A H R" / "Reading: …"
  read -r _ _ n <<<"${body[0]}"
  read -r a _ r <<<"${body[2]}"
  [[ $n =~ ^[0-9]+$ && $a =~ ^[0-9]+$ && $r =~ ^[0-9]+$ ]] || gb_die "cannot parse stub_status: ${body[*]}"
  echo "$n $a $r"
}

NGINX_PORT=18080
NGINX_PID=""
# mg_nginx_start WORKERS CORES — nginx with WORKERS workers pinned to CORES in the sut namespace,
# on $SUT_ADDR:NGINX_PORT (reuseport: one listening socket per worker, so the kernel spreads the
# connections evenly; backlog 65535), worker_rlimit_nofile = the hard limit.
mg_nginx_start() {
  local workers=$1 cores=$2 dir="$GB_TMP/nginx-$1" i
  gb_nginx_hello_conf "$dir" "$NGINX_PORT" "$workers"
  sed -i "s|listen 127.0.0.1:$NGINX_PORT;|listen $SUT_ADDR:$NGINX_PORT reuseport backlog=65535;|;
          s|^worker_processes $workers;|worker_processes $workers;\nworker_rlimit_nofile $NOFILE;|;
          s|worker_connections 20000;|worker_connections $((NOFILE - 100));|" "$dir/nginx.conf"
  ip netns exec gbtb-sut "$GB_NGINX" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" \
    || gb_die "nginx -t failed for $dir/nginx.conf"
  ip netns exec gbtb-sut nice -n "$GB_NICE" taskset -c "$cores" \
    "$GB_NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" </dev/null >"$dir/stdout.log" 2>&1 &
  NGINX_PID=$!
  gb_track_pid "$NGINX_PID"
  for ((i = 0; i < 100; i++)); do
    (exec 3<>"/dev/tcp/$SUT_ADDR/$NGINX_PORT") 2>/dev/null && break
    sleep 0.1
  done
  [[ $(cat "/proc/$NGINX_PID/comm" 2>/dev/null) == nginx ]] || gb_die "nginx did not start (see $dir/error.log)"
  GB_NGINX_WORKERS=()
  for ((i = 0; i < 50; i++)); do
    mapfile -t GB_NGINX_WORKERS < <(gb_children "$NGINX_PID")
    [[ ${#GB_NGINX_WORKERS[@]} -ge $workers ]] && break
    sleep 0.1
  done
  # The readiness connection above may wait in the queue of a worker's own (reuseport) listening
  # socket until that worker runs: wait until nginx's accepted count stops moving, so that no
  # connection of the script's is accepted inside a run's count.
  local prev="" cur
  for ((i = 0; i < 20; i++)); do
    sleep 0.5
    read -r _ cur _ <<<"$(mg_stub "$NGINX_PORT")"
    [[ -n $prev && $cur == $((prev + 1)) ]] && break
    prev=$cur
  done
  gb_log "nginx pid $NGINX_PID (workers ${GB_NGINX_WORKERS[*]}) in gbtb-sut, cores $cores, $SUT_ADDR:$NGINX_PORT"
  cp "$dir/nginx.conf" "$OUTDIR/nginx-$workers-workers.conf"
}

mg_nginx_stop() {
  gb_stop_pid "$NGINX_PID"
  gb_untrack_pid "$NGINX_PID"
  NGINX_PID=""
}

# --------------------------------------------------------------------------------------------
# Generators in the generator namespaces
# --------------------------------------------------------------------------------------------

GEN_PIDS=()
# mg_gen HOST CORE CGROUP OUT LOAD-ARGS… — `gatebench load LOAD-ARGS --json OUT -q` in HOST's
# namespace (`scripts/testbed.sh exec`, which keeps the CPU cgroup tree visible there, so the
# generator's self-check reads its quota's throttling), pinned to CORE, in CGROUP (or none:
# "-"), in the background.
mg_gen() {
  local host=$1 core=$2 cg=$3 out=$4
  shift 4
  if [[ $cg == - ]]; then
    "$GB_ROOT/scripts/testbed.sh" exec "$host" nice -n "$GB_NICE" taskset -c "$core" \
      "$GATEBENCH" load "$@" --json "$out" -q </dev/null >"$out.txt" 2>&1 &
  else
    # The shell puts itself into the cgroup, then execs: the PID stays the generator's.
    sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
      "$GB_ROOT/scripts/testbed.sh" exec "$host" nice -n "$GB_NICE" taskset -c "$core" \
      "$GATEBENCH" load "$@" --json "$out" -q </dev/null >"$out.txt" 2>&1 &
  fi
  GEN_PIDS+=($!)
  gb_track_pid "$!"
}

# mg_wait_gens — wait for every generator; fails naming the first that did not exit 0.
mg_wait_gens() {
  local pid bad=0
  for pid in "${GEN_PIDS[@]}"; do
    wait "$pid" || bad=$?
    gb_untrack_pid "$pid"
  done
  GEN_PIDS=()
  return "$bad"
}

# mg_sleep_until UNIX_S — sleep until that wall-clock instant (fractional seconds).
mg_sleep_until() {
  local d
  d=$(python3 -c 'import sys, time; print(max(0.0, float(sys.argv[1]) - time.time()))' "$1")
  sleep "$d"
}

# mg_record_stats MERGED — the TSV fields the merged record gives: rps requests errors error_pct
# valid skew opened shard_cpu shard_valid shard_warnings send_lag_p99 (per shard, "/"-joined).
mg_record_stats() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measurement"]
phases = [p for p in (r.get("warmup"), m) if p]
not_errors = {"ok", "in_flight", "never_sent"}
errors = sum(v for p in phases for k, v in p["outcomes"].items() if k not in not_errors)
opened = sum(p["connections"]["opened"] for p in phases)
mg = r.get("merged") or {}
shards = sorted(mg.get("shards", []), key=lambda s: s["index"])
cpu = "/".join(f'{s["self_check"]["cpu_percent"]:.0f}' for s in shards)
valid = "/".join("1" if s["valid"] else "0" for s in shards)
warn = "/".join(str(len(s["self_check"]["warnings"])) for s in shards)
def lag(s):
    sl = s["self_check"].get("send_lag")
    if not sl:
        return "NA"
    p = {float(x["p"]): x["ms"] for x in sl.get("percentiles", [])}
    return f'{p.get(99.0, float("nan")):.1f}'
lags = "/".join(lag(s) for s in shards)
print("\t".join(str(x) for x in (
    f'{m["throughput_rps"]:.1f}', m["requests"], errors, f'{m["error_percent"]:.4f}',
    1 if r["valid"] else 0, f'{mg.get("start_skew_ms", 0):.3f}', opened, cpu, valid, warn, lags)))
PY
}

printf 'part\trun\tsetup\thosts\tconnections\trate\tthreads_each\tquota_pct\trps\tnginx_rps\trequests\terrors\terror_pct\tvalid\tstart_skew_ms\tconns_opened\tnginx_accepts\tnginx_active_max\tshard_cpu_pct\tshard_valid\tshard_warnings\tshard_send_lag_p99_ms\tthrottled_s\n' >"$OUT_TSV"

# mg_run PART RUN SETUP CONNS RATE WARM_S DUR_S QUOTA EXTRA "HOST:CORE:CGROUP"… — one measured
# run: every listed host runs shard I/N of the same load (N = the number of hosts), starting at
# one --start-at; nginx's counts are read at the start, at the end of the warm-up, in the middle
# of the measurement and at its end; the records are merged and one TSV row is written.
mg_run() {
  local part=$1 run=$2 setup=$3 conns=$4 rate=$5 warm=$6 dur=$7 quota=$8 extra=$9
  shift 9
  local n=$# i=0 spec host core cg at dir files=() hosts=() cgs=() ratearg=()
  dir="$OUTDIR/$part-$setup-run$run"
  mkdir -p "$dir"
  [[ $rate == NA ]] || ratearg=(-R "$rate")
  local s0 s1 s2 s3
  s0=$(mg_stub "$NGINX_PORT")
  at=$(($(date +%s) + START_LEAD))
  for spec in "$@"; do
    IFS=: read -r host core cg <<<"$spec"
    # shellcheck disable=SC2086 # EXTRA is a list of words
    mg_gen "$host" "$core" "$cg" "$dir/shard-$i.json" "http://$SUT_ADDR:$NGINX_PORT/" \
      -c "$conns" "${ratearg[@]}" -t 1 -d "${dur}s" --warmup "${warm}s" \
      --shard "$i/$n" --start-at "$at" $extra
    files+=("$dir/shard-$i.json")
    hosts+=("$host")
    [[ $cg == - ]] || cgs+=("$cg")
    i=$((i + 1))
  done
  local thr0=0 c
  for c in "${cgs[@]}"; do thr0=$(awk -v a="$thr0" -v b="$(gb_cgroup_throttled_s "$c")" 'BEGIN { print a + b }'); done
  # nginx's counts once a second from half a second after the start to the end of the run: a
  # fixed number of reads (it ends by itself), each written once it is complete.
  local nsamples=$((warm + dur)) sampler
  (
    for ((k = 0; k < nsamples; k++)); do
      mg_sleep_until "$(awk -v a="$at" -v k="$k" 'BEGIN { printf "%.3f", a + 0.5 + k }')"
      echo "$k $(mg_stub "$NGINX_PORT")"
    done
  ) >"$dir/stub_status.txt" &
  sampler=$!
  gb_track_pid "$sampler"
  mg_sleep_until "$at"
  mg_sleep_until "$((at + warm))"
  s1=$(mg_stub "$NGINX_PORT")
  mg_sleep_until "$((at + warm + dur))"
  s2=$(mg_stub "$NGINX_PORT")
  local rc=0
  mg_wait_gens || rc=$?
  wait "$sampler" || true
  gb_untrack_pid "$sampler"
  s3=$(mg_stub "$NGINX_PORT")
  local thr=NA
  if [[ ${#cgs[@]} -gt 0 ]]; then
    thr=0
    for c in "${cgs[@]}"; do thr=$(awk -v a="$thr" -v b="$(gb_cgroup_throttled_s "$c")" 'BEGIN { print a + b }'); done
    thr=$(awk -v a="$thr" -v b="$thr0" 'BEGIN { printf "%.2f", a - b }')
  fi
  if [[ $rc != 0 ]]; then
    gb_log "$part $setup run $run: a generator failed (exit $rc): $(tail -n1 "$dir"/shard-*.json.txt | tr '\n' ' ')"
    return 1
  fi
  "$GATEBENCH" merge "${files[@]}" >"$dir/merged.json" 2>"$dir/merged.txt" \
    || gb_die "gatebench merge failed: $(tail -n1 "$dir/merged.txt")"
  local stats
  stats=$(mg_record_stats "$dir/merged.json")
  # nginx's counts: requests in the measurement window (s1 → s2, less s2's own request and the
  # sampler's reads in between), and connections accepted from before the shards started to
  # after they ended (less every status request after s0: one connection each); the most
  # connections open at once among the sampler's reads (less the read's own connection).
  local nreq nacc nact a0 a3 r1 r2 nread inwin
  read -r _ a0 _ <<<"$s0"
  read -r _ _ r1 <<<"$s1"
  read -r _ _ r2 <<<"$s2"
  read -r _ a3 _ <<<"$s3"
  nread=$(wc -l <"$dir/stub_status.txt")
  inwin=$(awk -v a="$r1" -v b="$r2" '$4 > a && $4 < b { n++ } END { print n + 0 }' "$dir/stub_status.txt")
  nreq=$(awk -v a="$r1" -v b="$r2" -v n="$inwin" -v d="$dur" 'BEGIN { printf "%.1f", (b - a - 1 - n) / d }')
  nacc=$((a3 - a0 - 3 - nread))
  nact=$(awk '$2 > m { m = $2 } END { print m - 1 }' "$dir/stub_status.txt")
  local IFS=$'\t'
  read -r -a st <<<"$stats"
  printf '%s\n' "$part	$run	$setup	$(
    IFS=+
    echo "${hosts[*]}"
  )	$conns	$rate	1	$quota	${st[0]}	$nreq	${st[1]}	${st[2]}	${st[3]}	${st[4]}	${st[5]}	${st[6]}	$nacc	$nact	${st[7]}	${st[8]}	${st[9]}	${st[10]}	$thr" >>"$OUT_TSV"
  gb_log "$part $setup run $run: ${st[0]} req/s (nginx $nreq), errors ${st[2]}, skew ${st[5]} ms, opened ${st[6]}, accepted $nacc, valid ${st[4]} (shards ${st[8]}, cpu ${st[7]} %)"
}

# --------------------------------------------------------------------------------------------
# (a) target-limited
# --------------------------------------------------------------------------------------------

if [[ " $PARTS " == *" target "* ]]; then
  gb_log "(a) target-limited: nginx 1 worker on core 0; generators on core 1, one thread each"
  mg_nginx_start 1 0
  gb_warn_if_busy 0 1
  for ((r = 1; r <= RUNS; r++)); do
    mg_run target "$r" one "$CONNS" NA "$WARM_S" "$DUR_S" NA "" gen1:1:-
    mg_run target "$r" two "$CONNS" NA "$WARM_S" "$DUR_S" NA "" gen1:1:- gen2:1:-
  done
  mg_nginx_stop
fi

# --------------------------------------------------------------------------------------------
# (b) generator-limited
# --------------------------------------------------------------------------------------------

if [[ " $PARTS " == *" generator "* ]]; then
  gb_log "(b) generator-limited: nginx 2 workers on cores 0-1; each generator one thread, $GEN_QUOTA % of one core"
  mg_nginx_start 2 0-1
  gb_cpu_cgroup gen1 "$GEN_QUOTA"
  CG1=$GB_CGROUP
  gb_cpu_cgroup gen2 "$GEN_QUOTA"
  CG2=$GB_CGROUP
  for ((r = 1; r <= RUNS; r++)); do
    mg_run generator "$r" one "$B_CONNS" NA "$WARM_S" "$DUR_S" "$GEN_QUOTA" "" "gen1:1:$CG1"
    mg_run generator "$r" two "$B_CONNS" NA "$WARM_S" "$DUR_S" "$GEN_QUOTA" "" "gen1:1:$CG1" "gen2:0:$CG2"
  done
  mg_nginx_stop
fi

# --------------------------------------------------------------------------------------------
# (c) SCALE_CONNS connections from three hosts
# --------------------------------------------------------------------------------------------

if [[ " $PARTS " == *" scale "* ]]; then
  gb_log "(c) $SCALE_CONNS keep-alive connections from gen1 gen2 gen3 at $SCALE_RATE req/s; nginx 2 workers"
  mg_nginx_start 2 0-1
  # --no-probe: nginx's accepted-connections count is then the load's alone. The connect
  # timeout is long enough for a full accept queue to drain.
  mg_run scale 1 three "$SCALE_CONNS" "$SCALE_RATE" "$SWARM_S" "$SDUR_S" NA "--no-probe --connect-timeout 10s" \
    gen1:1:- gen2:0:- gen3:1:-
  mg_nginx_stop
fi

# --------------------------------------------------------------------------------------------
# (d) start skew
# --------------------------------------------------------------------------------------------

if [[ " $PARTS " == *" start "* ]]; then
  gb_log "(d) start skew: $START_RUNS runs of three shards; nginx 2 workers"
  mg_nginx_start 2 0-1
  for ((r = 1; r <= START_RUNS; r++)); do
    mg_run start "$r" three 30 NA 0 2 NA "" gen1:0-1:- gen2:0-1:- gen3:0-1:-
  done
  mg_nginx_stop
fi

python3 "$here/multi_generator_summary.py" "$STEM" >"$STEM.md"
cat "$STEM.md"
gb_log "results: ${OUT_TSV#"$GB_ROOT"/}, ${STEM#"$GB_ROOT"/}.md and ${OUTDIR#"$GB_ROOT"/}/"
