#!/usr/bin/env bash
# The capacity search (`gatebench load --find-max`) repeated on gatebench's echo held to one
# core: does it find the same answer each time, and how long does it take?
#
#   bench/capacity-search.sh                       # 3 searches, p99<10ms,errors<0.1%
#   REPEATS=5 SLO='p99<5ms' bench/capacity-search.sh
#
# Environment: REPEATS (3), SLO ('p99<10ms,errors<0.1%'), CONNS (100), STEP (5s),
# PRECISION (2), SERVER_CORE (0), GEN_CORE (1), GATEBENCH (target/release/gatebench, built if
# missing), NICE (0).
#
# The echo (`gatebench serve echo --threads 1`) runs pinned to SERVER_CORE, the searching
# generator (one thread) to GEN_CORE; the echo restarts before every search. Raw rows:
# bench/results/capacity-search-<date>.tsv (one per search) and the searches' JSON records
# beside it; Markdown on stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

REPEATS=${REPEATS:-3}
SLO=${SLO:-p99<10ms,errors<0.1%}
CONNS=${CONNS:-100}
STEP=${STEP:-5s}
PRECISION=${PRECISION:-2}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || gb_die "REPEATS must be a positive integer, got '$REPEATS'"

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_gatebench
gb_snapshot_gatebench

results=$(gb_results_file capacity-search)
records="${results%.tsv}"
mkdir -p "$GB_TMP/records"
tsv="$GB_TMP/searches.tsv"
printf 'repeat\tverdict\tmax_rate\tfailed_rate\tuncertainty_percent\tknee_rate\tsteps\tseconds\n' >"$tsv"

gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
for ((i = 1; i <= REPEATS; i++)); do
  gb_gatebench_serve "$GB_TMP/echo-$i" "$SERVER_CORE" echo --port 0 --threads 1
  echo_pid=$GB_SERVE_PID
  port=$GB_SERVE_PORT
  gb_log "search $i against the echo (pid $echo_pid, core $SERVER_CORE)"
  t0=$(gb_now)
  nice -n "$GB_NICE" taskset -c "$GEN_CORE" timeout 600 \
    "$GATEBENCH" load "http://127.0.0.1:$port/" -c "$CONNS" -t 1 --find-max --slo "$SLO" \
    --step-duration "$STEP" --precision "$PRECISION" -q \
    --json "$GB_TMP/records/search-$i.json" >"$GB_TMP/search-$i.out" 2>"$GB_TMP/search-$i.err" \
    || gb_die "search $i failed: $(tail -n3 "$GB_TMP/search-$i.err")"
  t1=$(gb_now)
  gb_stop_pid "$echo_pid"
  gb_untrack_pid "$echo_pid"
  python3 - "$GB_TMP/records/search-$i.json" "$i" "$t0" "$t1" >>"$tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = lambda v: "" if v is None else f"{v:.1f}"
secs = float(sys.argv[4]) - float(sys.argv[3])
print("\t".join([sys.argv[2], r["verdict"], f(r["max_rate"]), f(r["failed_rate"]),
                 f(r["uncertainty_percent"]), f(r["knee_rate"]), str(len(r["steps"])), f"{secs:.1f}"]))
PY
done
cp "$tsv" "$results"
mkdir -p "$records"
cp "$GB_TMP"/records/*.json "$records/"

report() {
  echo "## Capacity search: the same answer each time?"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); gatebench echo (1 thread) on core $SERVER_CORE,"
  echo "the search (\`--find-max --slo '$SLO' --step-duration $STEP --precision $PRECISION\`, $CONNS connections, 1 thread) on core $GEN_CORE; $REPEATS searches, the echo restarted before each."
  echo
  python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| search | verdict | max rate within SLO, req/s | failed at, req/s | steps | time, s |")
print("|---:|---|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['repeat']} | {r['verdict']} | {float(r['max_rate'] or 0):,.0f} | {float(r['failed_rate'] or 0):,.0f} | {r['steps']} | {float(r['seconds']):.0f} |")
found = [float(r["max_rate"]) for r in rows if r["verdict"] == "found"]
slowest = max(float(r["seconds"]) for r in rows)
print()
if len(found) == len(rows) and found:
    med = statistics.median(found)
    spread = (max(found) - min(found)) / med * 100
    print(f"Answers: median {med:,.0f} req/s; spread (max − min) ÷ median = {spread:.1f} %; "
          f"slowest search {slowest:.0f} s.")
    ok = spread <= 5 and slowest < 120
    print(f"Figure (the same answer within 5 % in every search, each under 2 minutes): "
          f"**{'reached' if ok else 'not reached'}**.")
else:
    # An answer that is not `found` (the step limit, the generator) is no answer to compare.
    print(f"Answers: {len(found)} of {len(rows)} searches found one; slowest search {slowest:.0f} s.")
    print("Figure (the same answer within 5 % in every search, each under 2 minutes): "
          "**not reached** (not every search found an answer).")
PY
  echo
  echo "Raw: ${results#"$GB_ROOT"/} and the searches' records in ${records#"$GB_ROOT"/}/"
}
report | tee "${results%.tsv}.md"
