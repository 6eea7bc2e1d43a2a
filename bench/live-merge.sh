#!/usr/bin/env bash
# The live merge of sharded loads on the testbed of scripts/testbed.sh (docs/hosts.md): a suite
# whose cells' load is split across gen1, gen2 and gen3, against gatebench's proxy on `sut` in
# front of the echo on `backend`. Two figures:
#
#  (a) live against final: RUNS cells of an open-model load (RATE req/s in all, DURATION after
#      WARMUP); each cell's record says whether the seconds merged live equal the exact merge
#      of the shards' records (`merged.live.equal_to_final`) and the most a merged second came
#      after its end on the wall clock (`merged.live.max_lag_s`);
#  (b) abort on every shard: RUNS cells of an arrival program that outgrows the proxy
#      (ramp:RAMP_FROM..RAMP_TO over the measurement) with `p99<ABORT_P99 over 2s abort`: how
#      long after the breach (the end of the window that breached it, `breached_at_s`) the
#      last shard's measurement ended (`measurement.duration_s`, the union of the shards').
#
#   bench/live-merge.sh          (~3 min)
#
# Environment: RUNS (3), RATE (3000), DURATION (20s), WARMUP (2s), RAMP_FROM (1000), RAMP_TO
# (60000), ABORT_P99 (5ms), GATEBENCH, NICE, KEEP_TMP.
# Needs root (the testbed's namespaces); brings the testbed up when it is not and takes it down
# again at the end. Results: bench/results/live-merge-<date>.tsv (one row per cell) and .md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
gb_init

RUNS=${RUNS:-3}
RATE=${RATE:-3000}
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-2s}
RAMP_FROM=${RAMP_FROM:-1000}
RAMP_TO=${RAMP_TO:-60000}
ABORT_P99=${ABORT_P99:-5ms}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS must be a positive integer, got '$RUNS'"
[[ $(id -u) == 0 ]] || gb_die "needs root (the testbed's network namespaces)"
gb_need_gatebench
gb_need_cmd python3

STATE=${GATEBENCH_TESTBED_DIR:-/run/gatebench-testbed}
BROUGHT_UP=0
if [[ ! -f $STATE/ssh_config ]]; then
  gb_log "bringing the testbed up"
  "$GB_ROOT/scripts/testbed.sh" up >&2
  BROUGHT_UP=1
fi
lm_down() {
  if ((BROUGHT_UP)); then
    "$GB_ROOT/scripts/testbed.sh" down >&2 || true
  fi
}
trap 'lm_down; gb_cleanup' EXIT

suite() { # NAME RATES THRESHOLDS
  cat >"$GB_TMP/$1.toml" <<EOF
[suite]
name = "live merge: $1"
warmup = "$WARMUP"
duration = "$DURATION"
repeats = $RUNS

[hosts]
sut = "ssh://sut"
backend = "ssh://backend"
generators = ["ssh://gen1", "ssh://gen2", "ssh://gen3"]
ssh_config = "$STATE/ssh_config"

[matrix]
rates = [$2]
sizes = [100]
delays = ["0ms"]

[load]
connections = 300
$3

[[scenario]]
name = "proxy"
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --upstream {upstream}" }
EOF
}

out=$(gb_results_file live-merge)
suite steady "$RATE" ""
suite abort "\"ramp:$RAMP_FROM..$RAMP_TO/$DURATION\"" "thresholds = [\"p99<$ABORT_P99 over 2s abort\"]"
for part in steady abort; do
  gb_log "part $part: $RUNS cells across gen1, gen2, gen3"
  # 99: the abort part's thresholds failed, as they are meant to.
  "$GATEBENCH" run "$GB_TMP/$part.toml" --out "$GB_TMP/out-$part" >"$GB_TMP/$part.log" 2>&1 || {
    rc=$?
    [[ $part == abort && $rc == 99 ]] || { tail -n 20 "$GB_TMP/$part.log" >&2; gb_die "gatebench run ($part) exited $rc"; }
  }
done

python3 - "$out" "$GB_TMP" "$(git -C "$GB_ROOT" rev-parse --short HEAD)" \
  "runs $RUNS, rate $RATE, duration $DURATION, warmup $WARMUP, ramp $RAMP_FROM..$RAMP_TO, abort p99<$ABORT_P99 over 2s" <<'PY'
import glob, json, statistics, sys
out, tmp, rev, params = sys.argv[1:5]
rows = []
for part in ("steady", "abort"):
    for rec in sorted(glob.glob(f"{tmp}/out-{part}/cells/*/record.json")):
        r = json.load(open(rec))
        load = r["load"]
        live = load["merged"]["live"]
        t = (load.get("thresholds") or [{}])[0]
        rows.append({
            "part": part,
            "cell": r["cell"]["id"],
            "shards": len(load["merged"]["shards"]),
            "seconds": live["seconds"],
            "equal_to_final": live["equal_to_final"],
            "max_lag_s": live["max_lag_s"],
            "responses": load["measurement"]["outcomes"]["ok"],
            "breached_at_s": t.get("breached_at_s"),
            "aborted": t.get("aborted", False),
            "measured_s": load["measurement"]["duration_s"],
        })
with open(out, "w") as f:
    f.write(f"# {params}; gatebench {rev}\n")
    keys = list(rows[0])
    f.write("\t".join(keys) + "\n")
    for r in rows:
        f.write("\t".join(str(r[k]) for k in keys) + "\n")
# The summary is printed from the .tsv alone (bench/live_merge_summary.py), so that it can be
# printed again from a committed run.
PY
python3 "$here/live_merge_summary.py" "$out" | tee "${out%.tsv}.md"
