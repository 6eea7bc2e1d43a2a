#!/usr/bin/env bash
# The JSON → XML converter's throughput: the bench crates/services/benches/json_xml.rs
# (on the transform's `--payload-size` bodies of 1, 10 and 100 KiB and on 100 KiB of records and
# of escape-heavy nested objects), run RUNS times. At commit 3aa11e4 the bench also had a
# converter on jiter's iterator, each run timing both in one process (the A/B in docs/proxy.md).
#
#   bench/json-xml.sh
#
# Environment: RUNS (3).
# Raw data: bench/results/json-xml-<date>.tsv (one row per run, body and converter: the median
# time per conversion; the A/B of 2026-11-28 was measured by criterion at commit 3aa11e4); the summary beside it (.md) is what bench/json_xml_summary.py
# prints from that TSV.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
stamp=$(date -u +%Y-%m-%dT%H%M%S)
tsv=bench/results/json-xml-$stamp.tsv
printf 'measured\trun\tbody\tbytes\tconverter\tmedian_ns\n' >"$tsv"
for run in $(seq 1 "$RUNS"); do
    measured=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    cargo bench -q -p gatebench-services --bench json_xml |
        awk -v m="$measured" -v r="$run" 'BEGIN{OFS="\t"} NF==4 {print m, r, $1, $2, $3, $4}' >>"$tsv"
done
python3 bench/json_xml_summary.py "$tsv" | tee "${tsv%.tsv}.md"
