#!/usr/bin/env bash
# Prints the Markdown table of docs/fuzzing.md from a fuzz log written by
# `FUZZ_LOG=FILE scripts/fuzz.sh …` (one block per run: target, seconds, libFuzzer's final
# statistics, result).
#
#   scripts/fuzz-table.sh bench/results/fuzz-DATE.txt
set -euo pipefail
[[ $# -eq 1 && -f "$1" ]] || { echo "usage: scripts/fuzz-table.sh LOG" >&2; exit 2; }
awk '
function flush() {
    if (target != "") {
        printf "| `%s` | %s | %s | %s | %s | %s |\n", target, seconds, runs, rate, added, result
    }
    target = ""; seconds = ""; runs = "-"; rate = "-"; added = "-"; result = ""
}
BEGIN {
    print "| target | seconds | inputs run | inputs/s | new corpus entries | result |"
    print "|---|---:|---:|---:|---:|---|"
}
/^target: /                         { flush(); target = $2 }
/^seconds: /                        { seconds = $2 }
/^stat::number_of_executed_units:/  { runs = $2 }
/^stat::average_exec_per_sec:/      { rate = $2 }
/^stat::new_units_added:/           { added = $2 }
/^result: /                         { sub(/^result: /, ""); result = $0 }
END                                 { flush() }
' "$1"
