#!/usr/bin/env bash
# Mixed attack soak (issue 23): every hostile-client shape at once against gatebench's proxy,
# plus connections held open up to near the connection cap, while a steady open-model load of
# legitimate requests runs. Checks:
#   - the legitimate load has 0 errors and its p99 stays within 2 x the quiet p99, judged against
#     each of two quiet runs of the same load, one before the attacks and one after them (the
#     lower of the two decides: one quiet minute on a shared box was a noisy baseline, 1.4 to
#     3.05 ms in three soaks of 2026-11-28);
#   - the proxy's open files and RSS return to their baseline (taken after the quiet run) once
#     the attacks stop and the timers have run out (SETTLE seconds).
#
#   bench/hostile-soak.sh                 # 10 minutes
#   DURATION=60 bench/hostile-soak.sh     # a short trial
#
# Environment: DURATION (600 s of attacks), QUIET (180 s: each quiet run), RATE (200 req/s legitimate,
# POST 64 bytes, open model), CONNS (32), TIMER (3 s: the proxy's header, body, send and idle
# timeouts), MAXCONN (512: the proxy's --max-connections), HOLD (400 idle connections held open,
# reopened as the proxy closes them), SIZE (4194304: the echo's GET answer, which slow readers
# ask for), SETTLE (45 s after the attacks: more than the timers and the 30 s upstream pool idle
# timeout), SHAPES (every shape of hostile_clients.py but the connection flood, which HOLD
# replaces), PACE (0.1 s: the least time between the starts of two runs of one shape, at most 10
# runs a second each; a PING flood ends within a millisecond at the GOAWAY, and unpaced it
# became a flood of ~5,500 new connections a second), ATTACKERS (idle: the attack clients under
# SCHED_IDLE; nice19: at nice 19, as before), GATEBENCH, KEEP_TMP.
# Layout: the proxy alone on core 0; the echo, the legitimate load and the attack clients on
# core 1, the attack clients under SCHED_IDLE (`chrt --idle 0`), each shape one long-lived
# process. Real attackers run on other machines: on a 2-core box, Python attack loops at normal
# priority took the generator's (and the proxy's) CPU, and the legitimate p99 then measured the
# shared box, not the proxy (the runs of 2026-11-28 morning: 4.9 ms against 1.1 ms quiet with
# every process unpinned). At nice 19 they still delayed the generator's and the echo's
# wake-ups on core 1 (60 s trials of the same load: p99 5.6 ms at nice 19, 2.2 ms under
# SCHED_IDLE, which the kernel preempts at once); and a new process per attack run (the
# harness of those runs) cost kernel time the scheduler cannot cut short. The attacks still get
# every cycle the measured processes leave, so the proxy sees them at full force (its CPU
# seconds over the attacks are in the results).
# Results: bench/results/hostile-soak-<stamp>.tsv (samples every 10 s and the checks) and .md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

DURATION=${DURATION:-600}
QUIET=${QUIET:-180}
RATE=${RATE:-200}
CONNS=${CONNS:-32}
TIMER=${TIMER:-3}
MAXCONN=${MAXCONN:-512}
HOLD=${HOLD:-400}
SIZE=${SIZE:-4194304}
SETTLE=${SETTLE:-45}
PACE=${PACE:-0.1}
SHAPES=${SHAPES:-idle-h2-preface stalled-h2-body slow-reader-h1 slow-reader-h2 rapid-reset ping-flood trickled-head}
ATTACKERS=${ATTACKERS:-idle}
case $ATTACKERS in
  idle) attacker=(chrt --idle 0 taskset -c 1) ;;
  nice19) attacker=(nice -n 19 taskset -c 1) ;;
  *) gb_die "ATTACKERS must be idle or nice19, got '$ATTACKERS'" ;;
esac
for v in DURATION QUIET RATE CONNS TIMER MAXCONN HOLD SIZE SETTLE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done
[[ $PACE =~ ^[0-9]+(\.[0-9]+)?$ ]] || gb_die "PACE must be a number of seconds, got '$PACE'"
((HOLD + CONNS < MAXCONN)) || gb_die "HOLD + CONNS must stay under MAXCONN (the legitimate load needs room)"

gb_init
gb_need_cmd python3
gb_need_gatebench
gb_need_two_cores

gb_gatebench_serve "$GB_TMP/echo" 1 echo --port 0 --threads 1 --size "$SIZE"
ECHO_PORT=$GB_SERVE_PORT
gb_gatebench_serve "$GB_TMP/proxy" 0 proxy --port 0 --threads 1 --http2 \
  --upstream "http://127.0.0.1:$ECHO_PORT" \
  --client-header-timeout "${TIMER}s" --client-body-timeout "${TIMER}s" \
  --send-timeout "${TIMER}s" --idle-timeout "${TIMER}s" --max-connections "$MAXCONN"
PROXY=$GB_SERVE_PID
PORT=$GB_SERVE_PORT

out=$(gb_results_file hostile-soak)
fds() { find "/proc/$PROXY/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss() { gb_pids_rss_kib "$PROXY" | cut -d' ' -f1; }
sample() { printf 'sample\t%s\t%s\t%s\t%s\n' "$1" "$(date +%s)" "$(rss)" "$(fds)" >>"$out"; }
load() {
  taskset -c 1 "$GATEBENCH" load "http://127.0.0.1:$PORT/" -R "$RATE" -c "$CONNS" -d "${1}s" -t 1 -q \
    -m POST --payload-size 64 --json "$2" >"$2.log" 2>&1
}
{
  printf '# duration %ss, quiet %ss, rate %s, conns %s, timer %ss, maxconn %s, hold %s, size %s, attackers %s, shapes %s; %s; gatebench %s\n' \
    "$DURATION" "$QUIET" "$RATE" "$CONNS" "$TIMER" "$MAXCONN" "$HOLD" "$SIZE" "$ATTACKERS" "$SHAPES" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(git -C "$GB_ROOT" rev-parse --short HEAD)"
  printf 'kind\tphase\tepoch_or_metric\trss_kib_or_value\topen_files\n'
} >"$out"

gb_log "quiet run before the attacks: ${QUIET}s at $RATE req/s"
load "$QUIET" "$GB_TMP/quiet.json"
sleep "$SETTLE"
sample baseline

gb_log "attacks for ${DURATION}s, with the same load"
cpu0=$(gb_proc_cpu_secs "$PROXY")
end=$(($(date +%s) + DURATION))
attack_pids=()
for shape in $SHAPES; do
  # One process per shape, repeating it until the end (UNTIL), a run at most every PACE
  # seconds: no process start per attack.
  UNTIL=$end PACE=$PACE "${attacker[@]}" python3 "$here/hostile_clients.py" "$shape" soak "$PORT" "$PORT" 15 \
    >>"$GB_TMP/attacks-$shape.tsv" 2>/dev/null &
  attack_pids+=("$!")
  gb_track_pid "$!"
done
HOLD=$HOLD "${attacker[@]}" python3 "$here/hostile_clients.py" hold-connections soak "$PORT" "$PORT" "$DURATION" \
  >>"$GB_TMP/attacks-hold.tsv" 2>/dev/null &
attack_pids+=("$!")
gb_track_pid "$!"
load "$DURATION" "$GB_TMP/soak.json" &
load_pid=$!
gb_track_pid "$load_pid"
while gb_pid_alive "$load_pid"; do
  sample attack
  sleep 10
done
wait "$load_pid" || true
printf 'metric\tattack\tproxy_cpu_seconds\t%s\t\n' "$(awk -v a="$(gb_proc_cpu_secs "$PROXY")" -v b="$cpu0" 'BEGIN { printf "%.2f", a - b }')" >>"$out"
for pid in "${attack_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
cat "$GB_TMP"/attacks-*.tsv >"$GB_TMP/attacks.tsv"
gb_log "attacks over; settling ${SETTLE}s"
sleep "$SETTLE"
sample after
gb_log "quiet run after the attacks: ${QUIET}s at $RATE req/s"
load "$QUIET" "$GB_TMP/quiet-after.json"

python3 - "$out" "$GB_TMP/quiet.json" "$GB_TMP/soak.json" "$GB_TMP/attacks.tsv" "$DURATION" "$GB_TMP/quiet-after.json" <<'PY' | tee "${out%.tsv}.md"
import json, sys
out, quiet, soak, attacks, duration, quiet_after = sys.argv[1:7]

def stats(path):
    m = json.load(open(path))["measurement"]
    pct = {float(p["p"]): p["ms"] for p in m.get("latency", {}).get("percentiles", [])}
    return m.get("outcomes", {}), pct.get(99.0), m.get("error_percent"), m.get("throughput_rps")

rows = [l.rstrip("\n").split("\t") for l in open(out) if l.startswith("sample")]
proxy_cpu = next(float(l.split("\t")[3]) for l in open(out) if l.startswith("metric\tattack\tproxy_cpu_seconds"))
base = next(r for r in rows if r[1] == "baseline")
after = next(r for r in rows if r[1] == "after")
peak_rss = max(int(r[3]) for r in rows)
peak_fds = max(int(r[4]) for r in rows)
q_out, q_p99, q_err, q_rps = stats(quiet)
a_out, a_p99, a_err, a_rps = stats(quiet_after)
low_p99 = min(p for p in (q_p99, a_p99) if p is not None) if (q_p99, a_p99) != (None, None) else None
s_out, s_p99, s_err, s_rps = stats(soak)
errors = sum(v for k, v in s_out.items() if k != "ok")
shapes = {}
for line in open(attacks):
    f = line.rstrip("\n").split("\t")
    if len(f) >= 3:
        shapes.setdefault(f[0], {}).setdefault(f[2].split(" ")[0], 0)
        shapes[f[0]][f[2].split(" ")[0]] += 1
checks = [
    ("legitimate load: 0 errors", errors == 0, "%d non-ok outcomes of %d" % (errors, sum(s_out.values()))),
    ("legitimate p99 within 2 x quiet p99 (the lower quiet run)", s_p99 is not None and low_p99 is not None and s_p99 <= 2 * low_p99,
     "%.2f ms vs quiet %.2f ms before, %.2f ms after" % (s_p99 or -1, q_p99 or -1, a_p99 or -1)),
    ("quiet runs: 0 errors", sum(v for k, v in q_out.items() if k != "ok") + sum(v for k, v in a_out.items() if k != "ok") == 0,
     "before %s, after %s" % (json.dumps({k: v for k, v in q_out.items() if v}), json.dumps({k: v for k, v in a_out.items() if v}))),
    ("open files back to baseline", int(after[4]) <= int(base[4]), "%s after, %s baseline, peak %d" % (after[4], base[4], peak_fds)),
    ("RSS back to baseline (+25 %)", int(after[3]) <= 1.25 * int(base[3]),
     "%s KiB after, %s KiB baseline, peak %d KiB" % (after[3], base[3], peak_rss)),
]
print("From `%s`: %s" % (out.split("/")[-1], open(out).readline()[1:].strip()))
print()
print("| check | result | measured |")
print("|---|---|---|")
for name, ok, what in checks:
    print("| %s | %s | %s |" % (name, "pass" if ok else "FAIL", what))
print()
print("Legitimate load: quiet %.0f req/s before and %.0f after, soak %.0f req/s; outcomes during the soak: %s." % (q_rps or 0, a_rps or 0, s_rps or 0, json.dumps(s_out)))
print()
print("The proxy's CPU during the attacks: %.1f s in %s s (%.1f %% of its core)." % (proxy_cpu, duration, 100 * proxy_cpu / float(duration)))
print()
print("Attack runs by shape and outcome: " + "; ".join("%s: %s" % (k, ", ".join("%s %d" % kv for kv in sorted(v.items()))) for k, v in sorted(shapes.items())) + ".")
for name, ok, what in checks:
    print("check\t%s\t%s\t%s" % (name, "pass" if ok else "fail", what), file=open(out, "a"))
PY
