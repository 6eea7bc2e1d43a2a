#!/usr/bin/env bash
# How much of the gatebench binary stays resident in `gatebench serve proxy` under load: the
# figure the opt-in ordered release binary (scripts/release-ordered.sh, docs/build.md) is for.
#
#   scripts/release-ordered.sh && bench/binary-layout.sh   # plain vs ordered, 5 runs each
#   BINARIES="before=/tmp/gb-old after=target/release/gatebench" bench/binary-layout.sh
#
# BINARIES: LABEL=PATH pairs; their runs are interleaved (A B A B ...). Each binary is copied
# first (a fresh file: its page-cache pages are its own), as bench/proxy-vs-peers.sh does. The
# default compares the two builds scripts/release-ordered.sh leaves of one commit: the plain
# one it traced (target/release-ordered/gatebench.plain) and the ordered one.
#
# Per run: `gatebench serve echo --port 0 --threads 1` on GEN_CORE, its memory sampled once it
# listens (idle); `gatebench serve proxy --port 0 --threads 1` on PROXY_CORE in front of it;
#   gatebench load PROXY/ -c 100 -d 6s -t 1 -q -m POST --payload-size 1024
# on GEN_CORE. The proxy's /proc/PID/status (VmRSS, RssAnon, RssFile), its PSS
# (/proc/PID/smaps_rollup `Pss:`: shared pages divided among the processes that map them) and
# the Rss of each of the binary's mappings in /proc/PID/smaps are sampled every 0.5 s from 1 s
# into the load to its end; a run's figure is the largest sample. Every run starts fresh
# processes. RSS counts the binary's pages the process touched; the anonymous part (heap,
# stacks) is the service's own, so a comparison of services reads anon or PSS beside RSS. The
# proxy, the echo backend and the generator run the same copy of a binary, so its pages they
# all touch count a third in each one's PSS.
#
# Environment: RUNS (5, per binary), DURATION (6s), CONNS (100), PAYLOAD (1024), PROXY_CORE (0),
# GEN_CORE (1), BINARIES (plain=target/release-ordered/gatebench.plain
# ordered=target/release-ordered/gatebench), NICE (0).
# Raw per-run data: bench/results/binary-layout-<date>.tsv; medians on stdout and in the .md
# beside it (bench/binary_layout_summary.py, which prints them again from a committed TSV).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-6s}
CONNS=${CONNS:-100}
PAYLOAD=${PAYLOAD:-1024}
PROXY_CORE=${PROXY_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
BINARIES=${BINARIES:-plain=target/release-ordered/gatebench.plain ordered=target/release-ordered/gatebench}
for v in RUNS CONNS PAYLOAD; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done
dur_s=$(gb_duration_secs "$DURATION")
[[ $dur_s -ge 2 ]] || gb_die "DURATION must be at least 2s"

gb_init
gb_need_two_cores
labels=()
declare -A bins
for pair in $BINARIES; do
  label=${pair%%=*} path=${pair#*=}
  [[ $label =~ ^[A-Za-z0-9_.-]+$ && $pair == *=* ]] || gb_die "BINARIES: expected LABEL=PATH, got '$pair'"
  [[ $path == /* ]] || path="$GB_ROOT/$path"
  if [[ $path == "$GB_ROOT/target/release/gatebench" && ! -x $path ]]; then
    GATEBENCH=$path gb_need_gatebench
  fi
  [[ $path == "$GB_ROOT/target/release-ordered/"* && ! -x $path ]] &&
    gb_die "$path: no such binary; run scripts/release-ordered.sh first"
  [[ -x $path ]] || gb_die "$path: no such binary"
  mkdir -p "$GB_TMP/$label"
  cp "$path" "$GB_TMP/$label/gatebench"
  bins[$label]="$GB_TMP/$label/gatebench"
  labels+=("$label")
done
[[ ${#labels[@]} -ge 1 ]] || gb_die "BINARIES is empty"

# status_kib PID FIELD — a /proc/PID/status field in KiB.
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# pss_kib PID — the process's PSS in KiB (/proc/PID/smaps_rollup).
pss_kib() { awk '$1 == "Pss:" { print $2; exit }' "/proc/$1/smaps_rollup"; }

# binary_rss PID — "text_kib rodata_kib data_kib": Rss of the binary's r-xp, r--p and rw-p
# mappings (the r--p ones summed: the read-only segment before the text and RELRO after it).
binary_rss() {
  awk -v bin="$GATEBENCH" '
    /^[0-9a-f]+-[0-9a-f]+ / { perm = $2; mine = ($6 == bin); next }
    mine && $1 == "Rss:" {
      if (perm ~ /x/) t += $2; else if (perm ~ /w/) d += $2; else r += $2
    }
    END { printf "%d %d %d\n", t, r, d }' "/proc/$1/smaps"
}

tsv=$(gb_results_file binary-layout)
printf 'label\trun\tbinary_bytes\tproxy_vmrss_kib\tproxy_anon_kib\tproxy_file_kib\tproxy_text_kib\tproxy_ro_kib\tproxy_data_kib\techo_idle_rss_kib\trps\tproxy_pss_kib\techo_idle_anon_kib\techo_idle_pss_kib\n' >"$tsv"

for ((run = 1; run <= RUNS; run++)); do
  for label in "${labels[@]}"; do
    GATEBENCH=${bins[$label]}
    bin_bytes=$(stat -c %s "$GATEBENCH")
    gb_gatebench_serve "$GB_TMP/echo-$label-$run" "$GEN_CORE" echo --port 0 --threads 1
    echo_pid=$GB_SERVE_PID
    sleep 0.5
    echo_idle=$(status_kib "$echo_pid" VmRSS)
    echo_idle_anon=$(status_kib "$echo_pid" RssAnon)
    echo_idle_pss=$(pss_kib "$echo_pid")
    gb_gatebench_serve "$GB_TMP/proxy-$label-$run" "$PROXY_CORE" proxy --port 0 --threads 1 \
      --upstream "http://127.0.0.1:$GB_SERVE_PORT"
    proxy_pid=$GB_SERVE_PID
    proxy_port=$GB_SERVE_PORT
    nice -n "$GB_NICE" taskset -c "$GEN_CORE" "$GATEBENCH" load "http://127.0.0.1:$proxy_port/" \
      -c "$CONNS" -d "${dur_s}s" -t 1 -q -m POST --payload-size "$PAYLOAD" \
      --json "$GB_TMP/load$run.json" >/dev/null 2>"$GB_TMP/load$run.err" &
    load_pid=$!
    gb_track_pid "$load_pid"
    sleep 1
    best="0 0 0 0 0 0 0"
    end=$(($(date +%s) + dur_s - 1))
    while (($(date +%s) < end)) && gb_pid_alive "$load_pid"; do
      sample="$(status_kib "$proxy_pid" VmRSS) $(status_kib "$proxy_pid" RssAnon) $(status_kib "$proxy_pid" RssFile) $(binary_rss "$proxy_pid") $(pss_kib "$proxy_pid")"
      best=$(python3 -c 'import sys; a, b = (list(map(int, s.split())) for s in sys.argv[1:]); print(*[max(x, y) for x, y in zip(a, b)])' "$best" "$sample")
      sleep 0.5
    done
    wait "$load_pid" || gb_die "gatebench load failed: $(tail -n3 "$GB_TMP/load$run.err")"
    rps=$(gb_gatebench_json "$GB_TMP/load$run.json" | cut -d' ' -f1)
    gb_stop_pid "$proxy_pid"
    gb_stop_pid "$echo_pid"
    read -r vm anon file text ro data pss <<<"$best"
    printf '%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n' "$label" "$run" "$bin_bytes" "$vm" \
      "$anon" "$file" "$text" "$ro" "$data" "$echo_idle" "$rps" "$pss" "$echo_idle_anon" \
      "$echo_idle_pss" >>"$tsv"
    gb_log "$label run $run: proxy VmRSS $vm KiB (anon $anon, file $file; text $text, r-- $ro; PSS $pss)," \
      "echo idle VmRSS $echo_idle KiB (anon $echo_idle_anon, PSS $echo_idle_pss), $rps req/s"
  done
done

gb_log "raw data: ${tsv#"$GB_ROOT"/}"
python3 "$here/binary_layout_summary.py" "$tsv" | tee "${tsv%.tsv}.md"
