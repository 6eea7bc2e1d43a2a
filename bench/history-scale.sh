#!/usr/bin/env bash
# The release history at the scale issue 22 names: a synthetic series of 50 versions × 40
# cells × 5 repeats, each repeat with its latency histogram (2,000 values), made by
# crates/history/examples/synthetic-series.rs (gatebench_history::synthetic: valid results
# directories, 2 % noise, a throughput drop and a latency rise part-way). With the release
# binary it times, for SQLite and for PostgreSQL:
#   - `history add` of every version (the figure: the last one, with 49 versions stored, and
#     the slowest of all),
#   - `history changes` over the whole series (40 cells × 7 metrics),
#   - `history report` (the trend site of the whole series),
#   - `history gate` of the last version (its suite's three gates),
# and the database's size (the SQLite file; PostgreSQL's pg_database_size).
#
#   bench/history-scale.sh
#   VERSIONS=20 REPEATS=3 bench/history-scale.sh
#
# Environment: VERSIONS (50), REPEATS (5), BACKENDS ("sqlite postgres"), GATEBENCH
# (target/release/gatebench, built if missing). PostgreSQL: Debian's server binaries
# (scripts/postgres.sh installs them as root); a server is started for the run on a temporary
# data directory, a unix socket and no TCP port (as the postgres user when run as root), and
# stopped by its PID at the end.
#
# Raw data: bench/results/history-scale-<date>.tsv (backend, step, seconds, bytes; one row per
# add and per command). The Markdown summary (bench/history_scale_summary.py on the .tsv) goes
# to stdout and beside the .tsv; docs/history.md prints its table (bench/figures.py).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

VERSIONS=${VERSIONS:-50}
REPEATS=${REPEATS:-5}
BACKENDS=${BACKENDS:-sqlite postgres}
[[ $VERSIONS =~ ^[1-9][0-9]*$ ]] || gb_die "VERSIONS must be a positive integer, got '$VERSIONS'"
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || gb_die "REPEATS must be a positive integer, got '$REPEATS'"

gb_init
gb_need_cmd python3 python3
gb_need_gatebench
(cd "$GB_ROOT" && cargo build -q --release -p gatebench-history --example synthetic-series >&2) ||
  gb_die "cannot build the synthetic-series example"
gen="$GB_ROOT/target/release/examples/synthetic-series"

results=$(gb_results_file history-scale)
series="$GB_TMP/series"
gb_log "writing $VERSIONS versions × 40 cells × $REPEATS repeats"
"$gen" "$series" "$VERSIONS" "$REPEATS" >"$GB_TMP/versions.txt"
last_version=$(tail -n 1 "$GB_TMP/versions.txt" | cut -d' ' -f2)

printf 'backend\tstep\tseconds\tbytes\n' >"$results"
row() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
# The series' shape, as rows of their own (the count in the last column).
row all versions "" "$VERSIONS"
row all repeats "" "$REPEATS"
row all cells "" 40

# timed BACKEND STEP COMMAND…: runs the command, its output to $GB_TMP/last.log, and records
# the wall time.
timed() {
  local backend=$1 step=$2 t0 t1
  shift 2
  t0=$(gb_now)
  "$@" >"$GB_TMP/last.log" 2>&1 || gb_die "$backend $step failed: $(tail -n 3 "$GB_TMP/last.log")"
  t1=$(gb_now)
  row "$backend" "$step" "$(python3 -c "print(f'{$t1 - $t0:.3f}')")" ""
}

run_backend() {
  local backend=$1 url=$2 dir version date
  gb_log "$backend: adding $VERSIONS versions"
  while read -r dir version date; do
    timed "$backend" add "$GATEBENCH" history add "$dir" --version "$version" --history "$url"
  done <"$GB_TMP/versions.txt"
  gb_log "$backend: changes, report, gate"
  timed "$backend" changes "$GATEBENCH" history changes --history "$url" --json "$GB_TMP/changes-$backend.json"
  rm -rf "$GB_TMP/site-$backend"
  timed "$backend" report "$GATEBENCH" history report --out "$GB_TMP/site-$backend" --history "$url"
  # The gate's verdict (a fail: the last version lost 6 % of its throughput) is not the point.
  local t0 t1 rc=0
  t0=$(gb_now)
  "$GATEBENCH" history gate --version "$last_version" --history "$url" >"$GB_TMP/gate-$backend.log" 2>&1 || rc=$?
  t1=$(gb_now)
  [[ $rc -ne 2 ]] || gb_die "$backend gate: bad input: $(tail -n 2 "$GB_TMP/gate-$backend.log")"
  row "$backend" gate "$(python3 -c "print(f'{$t1 - $t0:.3f}')")" ""
}

for backend in $BACKENDS; do
  case $backend in
    sqlite)
      db="$GB_TMP/history.sqlite"
      run_backend sqlite "$db"
      row sqlite size "" "$(stat -c %s "$db")"
      ;;
    postgres)
      bin=$("$GB_ROOT/scripts/postgres.sh") || gb_die "no PostgreSQL server binaries (scripts/postgres.sh)"
      pg="$GB_TMP/pg"
      mkdir -p "$pg/sock"
      as=()
      if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres: "$pg"
        as=(setpriv --reuid="$(id -u postgres)" --regid="$(id -g postgres)" --clear-groups --)
      fi
      (cd "$pg" && "${as[@]}" "$bin/initdb" -D "$pg/data" -U postgres -A trust >"$pg/initdb.log" 2>&1) ||
        gb_die "initdb failed: $(tail -n 3 "$pg/initdb.log")"
      (cd "$pg" && exec "${as[@]}" "$bin/postgres" -D "$pg/data" -k "$pg/sock" -c listen_addresses='' \
        -c fsync=on >"$pg/server.log" 2>&1) &
      pgpid=$!
      gb_track_pid "$pgpid"
      for _ in $(seq 1 100); do
        [[ -S "$pg/sock/.s.PGSQL.5432" ]] && break
        sleep 0.1
      done
      [[ -S "$pg/sock/.s.PGSQL.5432" ]] || gb_die "PostgreSQL did not start: $(tail -n 3 "$pg/server.log")"
      sleep 0.5
      url="postgres://postgres@$(printf '%s' "$pg/sock" | sed 's|/|%2F|g'):5432/postgres"
      run_backend postgres "$url"
      size=$(psql -h "$pg/sock" -U postgres -d postgres -Atc "SELECT pg_database_size('postgres')")
      row postgres size "" "$size"
      gb_stop_pid "$pgpid"
      ;;
    *) gb_die "unknown backend '$backend' (sqlite or postgres)" ;;
  esac
done

summary="${results%.tsv}.md"
python3 "$here/history_scale_summary.py" "$results" >"$summary"
cat "$summary"
gb_log "raw rows: $results; summary: $summary"
