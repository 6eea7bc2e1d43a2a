#!/usr/bin/env bash
# Regenerate crates/cli/symbol-order.txt: the functions the gatebench binary executes in the
# workloads whose memory matters, in the order lld should lay them out (docs/build.md).
#
#   scripts/symbol-order.sh                   # build, trace, rewrite crates/cli/symbol-order.txt
#   GATEBENCH=/path/to/gatebench scripts/symbol-order.sh
#
# Run it after large code or dependency changes (new hot functions, or a toolchain bump that
# renames symbols): entries that no longer name a function are ignored by the linker
# (--no-warn-symbol-ordering), so a stale file only loses the benefit, never breaks the build.
#
# Method: every process is run under valgrind's callgrind (installed with apt if missing),
# which records each function that executes, by its mangled symbol name (--demangle=no), with
# its instruction count. The services are dumped once when they report their address (the
# startup: argument parsing, tracing, runtime) and again when they stop (the serving), each
# under a short native `gatebench load` on loopback:
#   serve proxy (HTTP/1.1 clients: the measured benchmark) and serve proxy --http2 (h2c),
#   serve echo --http2 (HTTP/1.1 then h2c), serve balance --http2 over two echo backends
#   (HTTP/1.1 then h2c), and gatebench load itself (HTTP/1.1, then --h2c) against a native echo.
# scripts/symbol_order.py merges the dumps: functions executed only while starting first, then
# those executed while serving, the proxy's first, then the echo backend's, the balancer's and
# the generator's (each group by instruction count, hottest first); only the binary's own text
# symbols are kept (checked against `nm`). The linker places the listed functions in that
# order at the start of .text, so a process touches a few contiguous pages instead of pieces of
# the whole 10 MiB text.
#
# Environment: GATEBENCH (target/release/gatebench, built with `cargo build --release -p
# gatebench` if missing; traced from a copy without debuginfo, same symbols), OUT
# (crates/cli/symbol-order.txt), SECS (3: seconds of load per traced phase), KEEP_TMP (1: keep
# the temp dir on failure). Binds port 0 on 127.0.0.1 only; stops every process by PID.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

OUT=${OUT:-crates/cli/symbol-order.txt}
[[ $OUT == /* ]] || OUT="$root/$OUT"
SECS=${SECS:-3}
[[ $SECS =~ ^[1-9][0-9]*$ ]] || gb_die "SECS must be a positive integer, got '$SECS'"

gb_init
gb_need_cmd valgrind valgrind
gb_need_cmd callgrind_control valgrind
gb_need_cmd objcopy binutils
gb_need_cmd nm binutils
gb_need_cmd python3 python3
gb_need_gatebench
# A copy without debuginfo: valgrind starts in seconds instead of reading 50 MB of line tables;
# .symtab (the names lld sees) is kept.
objcopy --strip-debug "$GATEBENCH" "$GB_TMP/gatebench"
GB="$GB_TMP/gatebench"
dumps="$GB_TMP/dumps"
mkdir -p "$dumps"

# wait_listening LOG PID — the port from the service's "listening on http://127.0.0.1:PORT".
wait_listening() {
  local log=$1 pid=$2 i line=""
  for ((i = 0; i < 600; i++)); do
    line=$(grep -m1 -o 'listening on http://127\.0\.0\.1:[0-9]*' "$log" 2>/dev/null || true)
    [[ -n $line ]] && break
    gb_pid_alive "$pid" || break
    sleep 0.1
  done
  [[ -n $line ]] || gb_die "pid $pid did not report a listening address: $(tail -n3 "$log.err" 2>/dev/null)"
  echo "${line##*:}"
}

# native_serve LOG ARGS... — an untraced service; sets PORT and PID.
native_serve() {
  local log=$1
  shift
  "$GB" serve "$@" </dev/null >"$log" 2>"$log.err" &
  PID=$!
  gb_track_pid "$PID"
  PORT=$(wait_listening "$log" "$PID")
}

# traced_serve NAME ARGS... — a service under callgrind, its startup dumped once it listens;
# sets PORT and PID. The dumps are $dumps/NAME.out.1 (startup) and $dumps/NAME.out (the rest).
traced_serve() {
  local name=$1
  shift
  valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-line=no \
    --callgrind-out-file="$dumps/$name.out" "$GB" serve "$@" \
    </dev/null >"$GB_TMP/$name.log" 2>"$GB_TMP/$name.log.err" &
  PID=$!
  gb_track_pid "$PID"
  PORT=$(wait_listening "$GB_TMP/$name.log" "$PID")
  callgrind_control --dump=startup "$PID" >"$GB_TMP/$name.ctl" 2>&1 ||
    gb_die "callgrind_control --dump $PID failed: $(tail -n3 "$GB_TMP/$name.ctl")"
  gb_log "traced serve $* (pid $PID, port $PORT): startup dumped"
}

# load URL ARGS... — a native `gatebench load` for SECS seconds, 1 KiB POST bodies.
load() {
  local url=$1
  shift
  "$GB" load "$url" -c 20 -d "${SECS}s" -t 1 -q -m POST --payload-size 1024 "$@" \
    >/dev/null 2>"$GB_TMP/load.err" || gb_die "gatebench load $url $* failed: $(tail -n3 "$GB_TMP/load.err")"
}

# stop PID — SIGTERM and wait: callgrind writes the final dump as the process exits.
stop() {
  gb_stop_pid "$1"
  gb_untrack_pid "$1"
}

# 1. serve proxy as the benchmark runs it (HTTP/1.1 clients), then with --http2 (h2c clients);
#    the backend is a native echo.
native_serve "$GB_TMP/echo0.log" echo --port 0 --threads 1 --http2
echo_pid=$PID echo_url="http://127.0.0.1:$PORT"
traced_serve proxy-h1 proxy --port 0 --threads 1 --upstream "$echo_url"
load "http://127.0.0.1:$PORT/"
stop "$PID"
traced_serve proxy-h2c proxy --port 0 --threads 1 --http2 --upstream "$echo_url"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"

# 2. serve echo (HTTP/1.1, then h2c).
traced_serve echo echo --port 0 --threads 1 --http2
load "http://127.0.0.1:$PORT/"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"

# 3. serve balance over two echo backends (HTTP/1.1, then h2c).
native_serve "$GB_TMP/echo1.log" echo --port 0 --threads 1 --http2
echo1_pid=$PID echo1_url="http://127.0.0.1:$PORT"
traced_serve balance balance --port 0 --threads 1 --http2 --upstream "$echo_url" --upstream "$echo1_url"
load "http://127.0.0.1:$PORT/"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"
stop "$echo1_pid"

# 4. gatebench load itself against the native echo (HTTP/1.1, then h2c); one dump per run.
for proto in h1 h2c; do
  extra=()
  [[ $proto == h2c ]] && extra=(--h2c)
  valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-line=no \
    --callgrind-out-file="$dumps/load-$proto.out" "$GB" load "$echo_url/" -c 20 -d "${SECS}s" \
    -t 1 -q -m POST --payload-size 1024 "${extra[@]}" </dev/null >/dev/null 2>"$GB_TMP/vload.err" &
  pid=$!
  gb_track_pid "$pid"
  wait "$pid" || gb_die "traced gatebench load ($proto) failed: $(tail -n3 "$GB_TMP/vload.err")"
  gb_untrack_pid "$pid"
  gb_log "traced gatebench load ($proto)"
done
stop "$echo_pid"

# 5. Merge: the binary's defined function symbols, as lld sees them.
# "NAME SIZE" (hex) of each defined function symbol.
nm -S --defined-only "$GB" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ { print $4, $2 } NF == 3 && $2 ~ /^[tTwW]$/ { print $3, 0 }' >"$GB_TMP/text-symbols"
python3 "$root/scripts/symbol_order.py" --binary "$GB" --symbols "$GB_TMP/text-symbols" \
  --out "$OUT" \
  startup:"$dumps/proxy-h1.out.1" serving:"$dumps/proxy-h1.out" \
  startup:"$dumps/proxy-h2c.out.1" serving:"$dumps/proxy-h2c.out" \
  startup:"$dumps/echo.out.1" serving:"$dumps/echo.out" \
  startup:"$dumps/balance.out.1" serving:"$dumps/balance.out" \
  run:"$dumps/load-h1.out" run:"$dumps/load-h2c.out"
gb_log "wrote ${OUT#"$root"/}"
