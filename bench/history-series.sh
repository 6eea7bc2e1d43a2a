#!/usr/bin/env bash
# A real series for `gatebench history`: gatebench's own proxy run as ten "versions" of
# bench/history-series.toml (5 repeats each, open model at 2,000 req/s), where versions 6 to
# 10 run the proxy with `--work 20us` (20 µs of CPU spent on each request before it is
# forwarded, a small known added cost). Each version is stored with `run --history`; then
# `history changes` must find the change at version 6 and nowhere else.
#
#   bench/history-series.sh        # ~4 minutes; RUNS (10), CHANGE_AT (6), WORK (20us)
#
# Raw data, committed: bench/results/history-series-<stamp>/ with each version's results
# directory (v1 … v10), the history database (history.sqlite) and what `history changes`
# printed (changes.txt, changes.json). Binds 127.0.0.1 port 0 only; every process is the
# runner's, stopped by PID.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-10}
CHANGE_AT=${CHANGE_AT:-6}
WORK=${WORK:-20us}
[[ $RUNS =~ ^[1-9][0-9]*$ && $CHANGE_AT =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS and CHANGE_AT are positive integers"

gb_init
gb_need_gatebench
out="$GB_ROOT/bench/results/history-series-$(date +%Y-%m-%dT%H%M%S)"
mkdir -p "$out"
db="$out/history.sqlite"
for ((v = 1; v <= RUNS; v++)); do
  extra=()
  if ((v >= CHANGE_AT)); then
    extra=(--sut-args "--work $WORK")
  fi
  gb_log "version $v ${extra[*]:-}"
  "$GATEBENCH" run bench/history-series.toml --out "$out/v$v" --history "$db" \
    --version "$v" "${extra[@]}" >"$out/v$v.log" 2>&1 ||
    gb_die "version $v failed: $(tail -n 3 "$out/v$v.log")"
done
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$GATEBENCH" history changes --history "$db" | tee "$out/changes.txt"
"$GATEBENCH" history changes --history "$db" --json "$out/changes.json" >/dev/null
# The summary docs/history.md prints its table from (bench/figures.py).
{
  echo "# History series: ${RUNS} versions, --work $WORK from version $CHANGE_AT"
  echo
  echo "Measured $started on $(nproc) cores; each version: bench/history-series.toml, 5 repeats."
  echo "Raw data: bench/results/$(basename "$out")/ (each version's results directory, the"
  echo "history database, what \`gatebench history changes\` printed)."
  echo
  grep '^|' "$out/changes.txt"
  echo
  grep -v '^|' "$out/changes.txt" | grep -v '^History: ' | sed '/^$/d' | sed 's/^/- /'
} >"$out.md"
# What the results directories hold that is derived (report.html, plots) is left out of the
# committed data: `gatebench report DIR` writes it again.
rm -rf "$out"/v*/report.html "$out"/v*/plots
gb_log "raw data: ${out#"$GB_ROOT"/}"
