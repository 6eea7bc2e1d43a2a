#!/usr/bin/env bash
# Figures of running across hosts, on the testbed of scripts/testbed.sh (docs/hosts.md):
#
#  - the clock offset of every host, as gatebench measures it before a run (hosts.json of one
#    run of examples/testbed.toml, one cell);
#  - what sampling the SUT on its host costs: `gatebench host sample` (the process the runner
#    starts there) sampling an idle `gatebench serve echo` once a second for SECONDS (default
#    60), its CPU time read from /proc/PID/stat on that host just before it is stopped.
#
#   bench/hosts.sh [SECONDS]     writes bench/results/hosts-<UTC stamp>/ and its summary .md
#
# Needs root (the testbed) and a built gatebench (target/release, else target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_WANTED=${1:-60}
STATE=/run/gatebench-testbed
scripts/testbed.sh up >/dev/null
GB=${GATEBENCH:-}
if [ -z "$GB" ]; then
    for c in target/release/gatebench target/debug/gatebench; do
        if [ -x "$c" ]; then GB=$c; break; fi
    done
fi
[ -x "$GB" ] || { echo "no gatebench built (cargo build)" >&2; exit 2; }
STAMP=$(date -u +%Y-%m-%dT%H%M%S)
OUT=bench/results/hosts-$STAMP
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# 1. Clock offsets (and the binary copy) from one cell of the testbed suite.
"$GB" run examples/testbed.toml --include passthrough-h1c-h1c --out "$TMP/run" >"$TMP/run.txt"
cp "$TMP/run/hosts.json" "$OUT/hosts.json"

# 2. Sampling cost on the SUT host.
SSH="ssh -F $STATE/ssh_config -o BatchMode=yes"
REMOTE_GB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["gatebench"])' "$OUT/hosts.json")
$SSH sut "set -e; setsid $REMOTE_GB serve echo --host 0.0.0.0 --port 0 >/dev/null 2>&1 & e=\$!; \
  trap 'kill \$e 2>/dev/null' EXIT; sleep 0.5; \
  f=/tmp/gatebench-bench-stdin.\$\$; rm -f \$f; mkfifo \$f; exec 3<>\$f; rm -f \$f; \
  $REMOTE_GB host sample --pgid \$e --interval-ms 1000 <&3 >/tmp/gatebench-bench-samples.\$\$ & s=\$!; \
  sleep $SECONDS_WANTED; stat=\$(cat /proc/\$s/stat); kill \$s; wait \$s 2>/dev/null || true; \
  lines=\$(wc -l </tmp/gatebench-bench-samples.\$\$); rm -f /tmp/gatebench-bench-samples.\$\$; \
  procs=\$(ls -d /proc/[0-9]* | wc -l); \
  echo \"\$stat\" | awk -v secs=$SECONDS_WANTED -v lines=\$lines -v procs=\$procs -v tck=\$(getconf CLK_TCK) \
   '{ s=\$0; sub(/^.*\\) /, \"\", s); split(s, f, \" \"); \
      printf \"host\\tseconds\\tsamples\\tutime_ticks\\tstime_ticks\\tclk_tck\\tprocesses_on_host\\n\"; \
      printf \"sut\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n\", secs, lines, f[12], f[13], tck, procs }'" \
  >"$OUT/sampling.tsv"

echo "$GB" | grep -q release && echo release >"$OUT/build" || echo "debug (unoptimized)" >"$OUT/build"
python3 bench/hosts_summary.py "$OUT" >"bench/results/hosts-$STAMP.md"
cat "bench/results/hosts-$STAMP.md"
