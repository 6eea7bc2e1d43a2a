#!/usr/bin/env bash
# Gateways under change: what reloads and a killed back-end cost gatebench's proxy and balancer,
# nginx and HAProxy, each under a steady open-model load, from the events of two suites.
#
#   bench/gateways-under-change.sh        # ~25 minutes
#
# 1. bench/reload-under-load.toml: 100 reloads (one a second) of each proxy at 5,000 req/s, over
#    h1c and with TLS on the client side (h1); the configuration does not change. A control
#    (gatebench's proxy with an event that does nothing) shows the machine's own p99 spread.
# 2. examples/failover.toml in full: one of five back-ends killed and started again behind
#    gatebench's balancer, nginx and HAProxy, 3 repeats.
#
# nginx and HAProxy are installed from Debian by the suites' own setup when missing; the TLS
# scenarios' certificate is made by bench/reload-under-load/cert.sh. Raw rows (one per event
# firing, from the cells' records): bench/results/gateways-under-change-<date>.tsv; the tables,
# printed from them by bench/gateways_under_change_summary.py, on stdout and in the .md beside.
# Environment: GATEBENCH (target/release/gatebench, built if missing), KEEP=1 keeps the results
# directories (under the bench's temporary directory otherwise removed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd openssl openssl
gb_need_gatebench
gb_snapshot_gatebench

out=${KEEP:+$GB_ROOT/results/gateways-under-change-$(date +%Y%m%dT%H%M%S)}
out=${out:-$GB_TMP}
dirs=()
for suite in bench/reload-under-load.toml examples/failover.toml; do
  name=$(basename "$suite" .toml)
  gb_log "gatebench run $suite"
  # Cells that failed are left out of the tables (their records say why); the run goes on.
  "$GATEBENCH" run "$suite" --out "$out/$name" >"$GB_TMP/$name.log" 2>&1 \
    || gb_log "$suite: gatebench run exited $? (see $out/$name)"
  tail -1 "$GB_TMP/$name.log" >&2
  dirs+=("$out/$name")
done

results=$(gb_results_file gateways-under-change)
python3 "$here/gateways_under_change_summary.py" extract "${dirs[@]}" >"$results"
md="${results%.tsv}.md"
python3 "$here/gateways_under_change_summary.py" "$results" | tee "$md"
gb_log "raw data: $results"
