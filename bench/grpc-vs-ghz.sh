#!/usr/bin/env bash
# gatebench's gRPC load against ghz (github.com/bojand/ghz, installed from the Go module proxy by
# this script) on the same server: gatebench's own gRPC echo, one thread, pinned to its core.
#
#   bench/grpc-vs-ghz.sh                    # 5 interleaved unary runs × 10 s per tool, then a
#                                           # 10-minute bidirectional streaming run
#   RUNS=3 DURATION=5 STREAM_SECS=60 bench/grpc-vs-ghz.sh   # a short trial
#
# Environment: RUNS (5), DURATION (10 s per unary run), WARMUP (3 s, one unrecorded run per
# tool first), CONC (50 calls in flight), CONNS (5 HTTP/2 connections), SIZE (64: the body of
# each gatebench.echo.v1.Payload), STREAM_SECS (600; 0 skips the streaming run), STREAM_CALLS
# (100 bidirectional calls in flight), STREAM_RATE (100 messages/s on each), GHZ_VERSION
# (v0.120.0), SERVER_CORE (0), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if
# missing; the script runs a copy), NICE (0).
#
# Unary: both generators call /gatebench.echo.v1.Echo/Unary with the same Payload (SIZE bytes
# of "x"), CONC calls in flight over CONNS connections, one core (gatebench -t 1; ghz --cpus 1,
# GOMAXPROCS 1), for DURATION seconds each, interleaved. The server counts what it served: the
# echo's origin statistics (`--stats`, read over HTTP/1.1 before and after each run) give the
# calls (HTTP/2 streams) and the gRPC messages it received. calls/s is server-counted calls ÷
# DURATION; CPU per call is the generator's user + system CPU (GNU time) ÷ those calls.
#
# Streaming: gatebench alone, STREAM_CALLS bidirectional streams of messages at STREAM_RATE
# each, new calls as old ones end, for STREAM_SECS; the check is that the echo received
# exactly the messages gatebench says it sent, and sent exactly those gatebench received.
# (ghz counts calls, not the messages within them, so it has no figure to compare here.)
#
# Raw per-run data: bench/results/grpc-vs-ghz-<stamp>.tsv; Markdown on stdout and in the .md
# beside it, printed by bench/grpc_vs_ghz_summary.py (which bench/figures.py runs again).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONC=${CONC:-50}
CONNS=${CONNS:-5}
SIZE=${SIZE:-64}
STREAM_SECS=${STREAM_SECS:-600}
STREAM_CALLS=${STREAM_CALLS:-100}
STREAM_RATE=${STREAM_RATE:-100}
GHZ_VERSION=${GHZ_VERSION:-v0.120.0}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
for v in RUNS DURATION CONC CONNS SIZE STREAM_CALLS STREAM_RATE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done
for v in WARMUP STREAM_SECS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || gb_die "$v must be a whole number of seconds, got '${!v}'"
done
((CONC % CONNS == 0)) || gb_die "CONC must be a multiple of CONNS (gatebench puts CONC/CONNS calls on each connection)"
((STREAM_CALLS % 2 == 0)) || gb_die "STREAM_CALLS must be even (two connections)"

gb_init
gb_need_two_cores
gb_need_gnu_time
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_cmd go golang-go
gb_need_gatebench
gb_snapshot_gatebench

# ghz from the Go module proxy, into the target directory (not the repository, not $PATH).
GHZ_BIN="$GB_ROOT/target/bench-tools/ghz-$GHZ_VERSION/ghz"
if [[ ! -x $GHZ_BIN ]]; then
  gb_log "go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
  mkdir -p "$(dirname "$GHZ_BIN")"
  GOBIN=$(dirname "$GHZ_BIN") GOFLAGS=-mod=mod go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >&2
fi
[[ -x $GHZ_BIN ]] || gb_die "ghz not installed at $GHZ_BIN"

# The commit the measured binary was built from is the one checked out now (the binary is
# copied above); later commits during the run must not be named.
commit=$(git -C "$GB_ROOT" rev-parse --short HEAD)
gb_gatebench_serve "$GB_TMP/echo" "$SERVER_CORE" echo --port 0 --threads 1 --http2 --stats
PORT=$GB_SERVE_PORT
ECHO=$GB_SERVE_PID
METHOD=gatebench.echo.v1.Echo
PROTO="$GB_ROOT/proto/gatebench/echo/v1/echo.proto"
body_b64=$(python3 -c "import base64,sys; print(base64.b64encode(b'x'*int(sys.argv[1])).decode())" "$SIZE")

# origin — "calls messages_received messages_sent" the echo has counted so far.
origin() {
  gb_http_get "$PORT" /__gatebench/origin | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(o["h2_streams"], o["grpc_messages_received"], o["grpc_messages_sent"])'
}

# run_tool TOOL SECONDS OUT — one unary run pinned to GEN_CORE; sets rc.
run_tool() {
  local tool=$1 secs=$2 out=$3 tmo=$(($2 + 30))
  rc=0
  case $tool in
    gatebench)
      gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        "$GATEBENCH" load "grpc://127.0.0.1:$PORT/$METHOD/Unary" -c "$CONNS" --streams $((CONC / CONNS)) \
        -d "${secs}s" -t 1 -q --no-probe --grpc-size "$SIZE" --json "$out.json" >"$out.out" 2>"$out.err" || rc=$?
      ;;
    ghz)
      GOMAXPROCS=1 gb_timed "$out.time" "$GEN_CORE" "$tmo" \
        "$GHZ_BIN" --insecure --proto "$PROTO" --call "$METHOD.Unary" -d "{\"body\":\"$body_b64\"}" \
        -c "$CONC" --connections "$CONNS" -z "${secs}s" --cpus 1 -O json -o "$out.json" \
        "127.0.0.1:$PORT" >"$out.out" 2>"$out.err" || rc=$?
      ;;
  esac
}

results=$(gb_results_file grpc-vs-ghz)
tsv="$GB_TMP/runs.tsv"
printf 'kind\trun\ttool\trc\tseconds\tserver_calls\tserver_received\tserver_sent\ttool_ok\ttool_sent\ttool_received\tcpu_user_s\tcpu_sys_s\twall_s\n' >"$tsv"

row() { # KIND RUN TOOL OUT BEFORE AFTER SECONDS
  local kind=$1 run=$2 tool=$3 out=$4 secs=$7 b a
  read -r -a b <<<"$5"
  read -r -a a <<<"$6"
  local wall=NA user=NA sys=NA ok=NA sent=NA received=NA
  [[ -s $out.time ]] && read -r wall user sys <"$out.time"
  if [[ -s $out.json ]]; then
    read -r ok sent received < <(python3 - "$tool" "$out.json" <<'PY'
import json, sys
tool, path = sys.argv[1:3]
r = json.load(open(path))
if tool == "ghz":
    # ghz: calls by status name; it does not count messages.
    print(r.get("statusCodeDistribution", {}).get("OK", 0), "NA", "NA")
else:
    g = r["grpc"]
    print(g["calls"].get("ok", 0), g["messages_sent"], g["messages_received"])
PY
    ) || true
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$run" "$tool" "$rc" "$secs" \
    $((a[0] - b[0])) $((a[1] - b[1])) $((a[2] - b[2])) "$ok" "$sent" "$received" "$user" "$sys" "$wall" >>"$tsv"
}

gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
if ((WARMUP > 0)); then
  for t in gatebench ghz; do
    gb_log "warm-up: $t for ${WARMUP}s"
    run_tool "$t" "$WARMUP" "$GB_TMP/warmup-$t"
    [[ $rc -eq 0 ]] || gb_die "warm-up of $t exited $rc: $(tail -n3 "$GB_TMP/warmup-$t.err")"
  done
fi
for ((run = 1; run <= RUNS; run++)); do
  for t in gatebench ghz; do
    gb_log "unary run $run/$RUNS: $t"
    before=$(origin)
    run_tool "$t" "$DURATION" "$GB_TMP/run$run-$t"
    sleep 0.5
    row unary "$run" "$t" "$GB_TMP/run$run-$t" "$before" "$(origin)" "$DURATION"
  done
done

if ((STREAM_SECS > 0)); then
  gb_log "bidirectional streams: $STREAM_CALLS calls × $STREAM_RATE messages/s for ${STREAM_SECS}s"
  out="$GB_TMP/stream-gatebench"
  before=$(origin)
  rc=0
  gb_timed "$out.time" "$GEN_CORE" $((STREAM_SECS + 120)) \
    "$GATEBENCH" load "grpc://127.0.0.1:$PORT/$METHOD/Bidi" --grpc-kind bidi \
    --grpc-messages $((STREAM_RATE * 10)) --grpc-message-rate "$STREAM_RATE" -c 2 --streams $((STREAM_CALLS / 2)) \
    -d "${STREAM_SECS}s" -t 1 -q --no-probe --grpc-size "$SIZE" --json "$out.json" >"$out.out" 2>"$out.err" || rc=$?
  sleep 0.5
  row bidi 1 gatebench "$out" "$before" "$(origin)" "$STREAM_SECS"
fi
gb_pid_alive "$ECHO" || gb_die "the echo died during the runs"

{
  printf '# %s, %s cores (%s); echo: gatebench serve echo --http2 --threads 1 on core %s; generators on core %s; %s; ghz %s; unary: %s runs x %ss, %s in flight over %s connections, Payload body %s B; streams: %s bidi calls x %s msg/s for %ss\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" "$(uname -r)" "$SERVER_CORE" "$GEN_CORE" \
    "$("$GATEBENCH" --version | head -n1) ($commit)" "$GHZ_VERSION" \
    "$RUNS" "$DURATION" "$CONC" "$CONNS" "$SIZE" "$STREAM_CALLS" "$STREAM_RATE" "$STREAM_SECS"
  cat "$tsv"
} >"$results"
python3 "$here/grpc_vs_ghz_summary.py" "$results" | tee "${results%.tsv}.md"
