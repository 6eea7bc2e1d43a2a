#!/usr/bin/env bash
# Arrival programs: does the achieved rate follow the program, second by second? gatebench's
# open model with a rate that changes (steps, ramp, sine) up to 50k req/s, against a one-core
# nginx; each second's count taken twice — from the generator's own per-second record
# (`timeline` in the JSON) and from nginx's access log (one `$msec` line per request) — and
# set against the program's target for that second.
#
#   bench/arrival-programs.sh                       # 3 runs of each program (~3 min)
#   RUNS=1 PROGRAMS="steps:10k,20k/5s" bench/arrival-programs.sh
#
# Environment: RUNS (3), PROGRAMS (below), CONNS (200), SERVER_CORE (0), GEN_CORE (1),
# GATEBENCH (target/release/gatebench, built if missing), NICE (0).
#
# nginx runs pinned to SERVER_CORE, gatebench (one thread) to GEN_CORE; programs are
# interleaved (A B C A B C …). Raw per-second data: bench/results/arrival-programs-<date>.tsv;
# Markdown on stdout. See bench/README.md for the method.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-3}
PROGRAMS=${PROGRAMS:-"steps:10k,20k,30k,40k,50k/4s ramp:5k..50k/20s sine:30k±20k/20s"}
CONNS=${CONNS:-200}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || gb_die "RUNS must be a positive integer, got '$RUNS'"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || gb_die "CONNS must be a positive integer, got '$CONNS'"
read -r -a programs <<<"$PROGRAMS"
[[ ${#programs[@]} -ge 1 ]] || gb_die "PROGRAMS is empty"

gb_init
gb_need_two_cores
gb_need_cmd python3 python3
gb_need_cmd timeout coreutils
gb_need_nginx
gb_need_gatebench
gb_snapshot_gatebench

# --- the server: nginx's hello, with an access log of each request's end time ----------------
port=$(gb_free_port)
srv="$GB_TMP/nginx"
gb_nginx_hello_conf "$srv" "$port" 1
cat >"$srv/extra.conf" <<CONF
access_log $srv/access.log stamp buffer=1m flush=1s;
CONF
sed -i "s|^    access_log off;|    log_format stamp '\$msec';\n    access_log off;|" "$srv/nginx.conf"
gb_nginx_start "$srv" "$SERVER_CORE" "$port"
url="http://127.0.0.1:$port/"
[[ $(gb_http_get "$port" /) == "Hello, world!" ]] || gb_die "unexpected body from nginx"

results=$(gb_results_file arrival-programs)
tsv="$GB_TMP/seconds.tsv"
printf 'program\trun\tsecond\ttarget\tsent\tserved\tself_check_clean\tsend_lag_p99_ms\n' >"$tsv"

gb_warn_if_busy "$SERVER_CORE" "$GEN_CORE"
for ((run = 1; run <= RUNS; run++)); do
  for p in "${programs[@]}"; do
    out="$GB_TMP/run$run-${p//[^a-z0-9]/_}"
    : >"$srv/access.log"
    kill -USR1 "$GB_NGINX_PID" # reopen the (emptied) log
    sleep 0.5
    gb_log "run $run: -R $p"
    nice -n "$GB_NICE" taskset -c "$GEN_CORE" timeout 300 \
      "$GATEBENCH" load "$url" -c "$CONNS" -t 1 -R "$p" --warmup 2s -q --no-probe \
      --json "$out.json" >"$out.out" 2>"$out.err" || gb_die "gatebench failed: $(tail -n3 "$out.err")"
    sleep 1.5 # nginx flushes its log buffer every second
    cp "$srv/access.log" "$out.log"
    python3 - "$out.json" "$out.log" "$p" "$run" >>"$tsv" <<'PY'
import json, math, sys
record, log, program, run = sys.argv[1:5]
r = json.load(open(record))
# The generator's seconds run from its start (record start, wall clock); t_s counts from the
# measurement, after the warm-up.
base = r["started_at_unix_ms"] / 1000.0 + r["config"]["warmup_s"]
served = {}
for line in open(log):
    line = line.strip()
    if line:
        s = math.floor(float(line) - base)
        served[s] = served.get(s, 0) + 1
clean = "yes" if r["valid"] else "no"
lag = r["self_check"]["send_lag"]
lag99 = next((p["ms"] for p in lag["percentiles"] if abs(p["p"] - 99) < 1e-9), float("nan"))
for s in r["timeline"]:
    if s["t_s"] < 0 or s["length_s"] < 0.999:
        continue
    t = int(round(s["t_s"]))
    print(f"{program}\t{run}\t{t}\t{s['target_rate']:.1f}\t{s['sent']}\t{served.get(t, 0)}\t{clean}\t{lag99:.2f}")
PY
  done
done
cp "$tsv" "$results"

report() {
  echo "## Arrival programs: the achieved rate, second by second, against the program"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores ($(uname -r)); nginx $("$GB_NGINX" -v 2>&1 | sed 's|.*/||') with 1 worker on core $SERVER_CORE;"
  echo "gatebench ($("$GATEBENCH" --version | head -n1)), one thread on core $GEN_CORE, $CONNS connections, 2 s warm-up; $RUNS interleaved runs of each program."
  echo
  python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
progs = []
for r in rows:
    if r["program"] not in progs:
        progs.append(r["program"])
print("| program | runs | self-check clean | seconds | peak target req/s | generator: seconds within ±1 % | generator: worst second | nginx: seconds within ±1 % | nginx: worst second |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
for p in progs:
    for clean in ("yes", "no"):
        rs = [r for r in rows if r["program"] == p and float(r["target"]) > 0 and r["self_check_clean"] == clean]
        if not rs:
            continue
        runs = len({r["run"] for r in rs})
        def off(col):
            return [abs(int(r[col]) - float(r["target"])) / float(r["target"]) * 100 for r in rs]
        g, n = off("sent"), off("served")
        peak = max(float(r["target"]) for r in rs)
        within = lambda xs: f"{sum(x <= 1.0 for x in xs)}/{len(xs)}"
        print(f"| `{p}` | {runs} | {clean} | {len(rs)} | {peak:,.0f} | {within(g)} | {max(g):.2f} % | {within(n)} | {max(n):.2f} % |")
PY
  echo
  echo "Rows split the runs by the generator's self-check: \"no\" means it flagged itself (it sent late"
  echo "against its schedule, e.g. starved of its core by other processes) — its seconds describe the"
  echo "machine, and the record says so."
  echo "Each row pools those runs' full measured seconds. generator = requests gatebench sent in that"
  echo "second (its JSON \`timeline\`); nginx = requests nginx logged as served in the same second"
  echo "(\`\$msec\` of the access log, aligned on the record's start time). Off = |count − target| ÷ target."
  echo "Raw seconds: ${results#"$GB_ROOT"/}"
}
report | tee "${results%.tsv}.md"
