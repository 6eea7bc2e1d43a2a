#!/usr/bin/env bash
# The JSON → XML converter's throughput: the criterion bench crates/services/benches/json_xml.rs
# (on the transform's `--payload-size` bodies of 1, 10 and 100 KiB and on 100 KiB of records and
# of escape-heavy nested objects), run RUNS times. At commit 3aa11e4 the bench also had a
# converter on jiter's iterator, each run timing both in one process (the A/B in docs/proxy.md).
#
#   bench/json-xml.sh
#
# Environment: RUNS (3).
# Raw data: bench/results/json-xml-<date>.tsv (one row per run, body and converter: criterion's
# median time per conversion); the summary beside it (.md) is what bench/json_xml_summary.py
# prints from that TSV.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
stamp=$(date -u +%Y-%m-%dT%H%M%S)
tsv=bench/results/json-xml-$stamp.tsv
printf 'measured\trun\tbody\tbytes\tconverter\tmedian_ns\n' >"$tsv"
for run in $(seq 1 "$RUNS"); do
    rm -rf target/criterion
    cargo bench -q -p gatebench-services --bench json_xml >&2
    python3 bench/json_xml_summary.py collect "$run" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$tsv"
done
python3 bench/json_xml_summary.py "$tsv" | tee "${tsv%.tsv}.md"
