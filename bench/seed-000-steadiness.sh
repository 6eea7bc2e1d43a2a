#!/usr/bin/env bash
# Which of seed 000's figures are steady enough, on this shared 2-core machine, to decide
# between two versions, and how long must cells be? Runs examples/seed-000.toml (the Netty
# passthrough, v1 and v2 interleaved) at several measurement lengths with repeats, and prints
# the coefficient of variation between repeats of one cell (same version, same point) of
# throughput, mean latency, p99 latency and the SUT's CPU time per request.
#
#   bench/seed-000-steadiness.sh                             # 2 s, 10 s, 30 s cells, ~18 min
#   DURATIONS="2s 10s" REPEATS=3 bench/seed-000-steadiness.sh
#
# Environment: DURATIONS ("2s 10s 30s"), WARMUP (2s), REPEATS (5), CELLS (the --include
# globs, "*_u100_s1000_* *_u500_s1000_*": 100 and 500 users at 1000 B), GATEBENCH
# (target/release/gatebench, built if missing), NICE (0).
#
# Raw data: bench/results/seed-000-steadiness-<date>.tsv, one row per cell and repeat (the
# measurement's figures from each run's summary.json), and each run's summary.json and
# environment.json under bench/results/seed-000-steadiness-<date>/<duration>/. The Markdown
# summary (bench/steadiness_summary.py on the .tsv) goes to stdout and beside the .tsv.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

DURATIONS=${DURATIONS:-2s 10s 30s}
WARMUP=${WARMUP:-2s}
REPEATS=${REPEATS:-5}
CELLS=${CELLS:-*_u100_s1000_* *_u500_s1000_*}
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || gb_die "REPEATS must be a positive integer, got '$REPEATS'"

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_gatebench
gb_snapshot_gatebench

results=$(gb_results_file seed-000-steadiness)
raw="${results%.tsv}"
include=()
for g in $CELLS; do include+=(--include "$g"); done

gb_warn_if_busy 0 1
for d in $DURATIONS; do
  out="$GB_TMP/run-$d"
  gb_log "seed 000 at $d cells: $REPEATS repeats, warm-up $WARMUP"
  "$GATEBENCH" run "$GB_ROOT/examples/seed-000.toml" --warmup "$WARMUP" --duration "$d" \
    --repeats "$REPEATS" "${include[@]}" --out "$out" >"$GB_TMP/run-$d.log" 2>&1 ||
    gb_die "the $d run failed: $(tail -n3 "$GB_TMP/run-$d.log")"
  mkdir -p "$raw/$d"
  cp "$out/summary.json" "$out/environment.json" "$raw/$d/"
done

python3 - "$raw" $DURATIONS >"$results" <<'PY'
import json, os, sys
raw, durations = sys.argv[1], sys.argv[2:]
cols = ["duration", "scenario", "users", "size_bytes", "repeat", "status", "throughput_rps",
        "mean_ms", "p99_ms", "sut_cpu_us_per_request", "generator_bound", "loadavg_mean"]
print("\t".join(cols))
for d in durations:
    s = json.load(open(os.path.join(raw, d, "summary.json")))
    for m in s["measurement"]:
        row = dict(m, duration=d)
        print("\t".join("" if row.get(c) is None else str(row[c]) for c in cols))
PY
python3 "$here/steadiness_summary.py" "$results" | tee "${results%.tsv}.md"
