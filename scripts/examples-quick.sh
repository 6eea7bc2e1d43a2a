#!/usr/bin/env bash
# Every example suite's short form, run as a new user runs it: from the repository root, with
# the default relative results directory (results/<stamp>), the README's release build. Prints
# one line per example (cells ok / failed, and the results directory) and exits 1 when any cell
# of any example failed, so a change to the runner can be checked against them all before it
# lands (issue 23: a relative {cell_dir} once failed 24/24 cells of seed 000 this way, while
# every test passed with an absolute --out).
#
#   scripts/examples-quick.sh                    # every example below
#   scripts/examples-quick.sh seed-001 tiny      # some of them
#
# The short form: `--quick` where the suite has a [quick] table or is short already;
# nginx-haproxy with `--warmup 1s --duration 2s` (the form the issue used). testbed.toml needs
# the namespace testbed (scripts/testbed.sh up), which this script brings up and takes down.
# seed-004 is skipped: its short form is the default suite (`gatebench run`).
set -euo pipefail
cd "$(dirname "$0")/.."

all=(tiny capacity seed-000 seed-001 seed-002 seed-003 nginx-haproxy reload failover streams testbed)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")

cargo build --release -q -p gatebench
exe=target/release/gatebench
status=0
summary=()
for name in "${names[@]}"; do
  suite="examples/$name.toml"
  [[ -f $suite ]] || { echo "examples-quick: no $suite" >&2; exit 2; }
  case $name in
    nginx-haproxy) args=(--warmup 1s --duration 2s) ;;
    *) args=(--quick) ;;
  esac
  if [[ $name == testbed ]]; then
    scripts/testbed.sh up >/dev/null
  fi
  log=$(mktemp "${TMPDIR:-/tmp}/examples-quick-$name.XXXXXX")
  set +e
  "$exe" run "$suite" "${args[@]}" >"$log" 2>&1
  rc=$?
  set -e
  if [[ $name == testbed ]]; then
    scripts/testbed.sh down >/dev/null || true
  fi
  dir=$(sed -n 's/^Results: //p' "$log" | head -1)
  cells=$(sed -n 's/^\([0-9]*\) cells, \([0-9]*\) failed\..*/\1 \2/p' "$log" | tail -1)
  read -r total failed <<<"${cells:-0 0}"
  line=$(printf '%-14s exit %-3s %3s cells, %3s failed   %s' "$name" "$rc" "$total" "$failed" "${dir:-(no results directory; see $log)}")
  summary+=("$line")
  echo "$line"
  if [[ $rc -ne 0 || $total -eq 0 || $failed -ne 0 ]]; then
    status=1
    grep -E "failed|error" "$log" | head -5 | sed 's/^/    /'
  else
    rm -f "$log"
  fi
done
echo
printf '%s\n' "${summary[@]}"
exit $status
