#!/usr/bin/env bash
# A real Prometheus scrapes a running `gatebench load --metrics` and takes its remote writes,
# and PromQL over the run is set beside gatebench's own record (issue 25, points 1 and 2):
# Debian's `prometheus` on loopback with a generated configuration (scrape_interval 1s, a
# temporary TSDB, `--enable-feature=native-histograms` so that it scrapes the protobuf
# exposition, `--web.enable-remote-write-receiver`), an echo back-end, and one open-model load
# (`-R 2000 -c 20 -d 60s --warmup 5s --metrics ADDR --metrics-linger 5s --remote-write
# PROMETHEUS/api/v1/write --json`). Scraped series carry instance=ADDR; remote-written ones
# instance=<host name>. After the run, Prometheus's HTTP API (/api/v1/query) answers, for each
# of the two ways in:
#
#   - the whole run's requests: the last value of `gatebench_requests_total` (max_over_time
#     over the run) against the record's: exactly equal; each phase's within the requests in
#     flight across the warm-up's end (docs/metrics.md);
#   - `rate(gatebench_requests_total{outcome="ok"}[10s])` in the middle of the measurement
#     against the target rate: within ±5 %;
#   - the last phase is 2 (done: the linger let Prometheus scrape the final figures, the last
#     push carried them);
# and:
#   - the native histogram (scraped): histogram_count and histogram_sum against the record's
#     count and mean × count; p50, p90, p99 by `histogram_quantile` against the record's
#     percentiles: within one native bucket (schema 3, crates/loadgen/src/metrics/native.rs);
#   - the classic buckets (remote-written): p50, p90, p99 within the exported bucket that holds
#     gatebench's figure (buckets 0.5 ms … 10 s);
#   - every scrape while the endpoint was up succeeded; the pushes arrived, once a second, and
#     gatebench said no remote-write failure;
#   - the Grafana dashboard (dashboards/gatebench-load.json): valid JSON, its structure, every
#     panel's expr sent to this Prometheus (an error fails), every metric it names exported.
#
# It also keeps a scrape's body and `promtool check metrics`'s opinion of it (reported, not
# judged), and the targets page mid-run (a scrape error would show there).
#
# Results: bench/results/prometheus-check-<date>.tsv (the comparisons), .md (the summary) and a
# directory of the same name (record.json, params.tsv, promql/*.json — each query, its time
# and Prometheus's answer —, dashboard-check.tsv, metrics.txt, promtool-check-metrics.txt,
# targets.json, prometheus.yml). `bench/prometheus_check.py summary DIR` prints the summary
# again from the directory alone. Exit status 1 when a check fails.
#
#   bench/prometheus-check.sh                        # ~75 s of load, ~2 min in all
#   DURATION=20s bench/prometheus-check.sh           # a quicker trial
#
# Environment: RATE (2000), CONNS (20), DURATION (60s), WARMUP (5s), DELAY (2ms, the echo's),
# LINGER (5s), SCRAPE_INTERVAL (1s), REMOTE_WRITE_INTERVAL (1s), RATE_WINDOW (10s),
# RATE_TOLERANCE (0.05), SCENARIO
# (prometheus-check, the --metrics-label), SERVER_CORE (0: echo and Prometheus), GEN_CORE (1),
# GATEBENCH, NICE, KEEP_TMP. Installing Debian's prometheus may start a system Prometheus on
# :9090; it is stopped by the PID its service wrote (checked to be prometheus), never by name,
# and ours listens on a free loopback port anyway.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
gb_init

RATE=${RATE:-2000}
CONNS=${CONNS:-20}
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-5s}
DELAY=${DELAY:-2ms}
LINGER=${LINGER:-5s}
REMOTE_WRITE_INTERVAL=${REMOTE_WRITE_INTERVAL:-1s}
SCRAPE_INTERVAL=${SCRAPE_INTERVAL:-1s}
RATE_WINDOW=${RATE_WINDOW:-10s}
RATE_TOLERANCE=${RATE_TOLERANCE:-0.05}
SCENARIO=${SCENARIO:-prometheus-check}
SERVER_CORE=${SERVER_CORE:-0}
GEN_CORE=${GEN_CORE:-1}
dur_s=$(gb_duration_secs "$DURATION")
warm_s=$(gb_duration_secs "$WARMUP")
linger_s=$(gb_duration_secs "$LINGER")
[[ $dur_s -ge 20 ]] || gb_die "DURATION must be at least 20s (the rate check looks at the middle)"
[[ $linger_s -ge 3 ]] || gb_die "LINGER must be at least 3s (the final figures need a scrape)"

gb_need_two_cores
gb_need_cmd curl curl
gb_need_gatebench
gb_snapshot_gatebench

# Debian's prometheus: install if missing; stop the system service it may start (by the PID
# file its init script or systemd unit wrote, checked to be prometheus).
stop_system_prometheus() {
  local pid="" comm
  if [[ -r /run/prometheus/prometheus.pid ]]; then
    pid=$(tr -d ' \n' </run/prometheus/prometheus.pid)
  elif command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    pid=$(systemctl show --property MainPID --value prometheus 2>/dev/null || true)
  fi
  [[ $pid =~ ^[1-9][0-9]*$ ]] && gb_pid_alive "$pid" || return 0
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  [[ $comm == prometheus ]] || return 0
  gb_log "stopping the system prometheus (pid $pid)"
  gb_stop_pid "$pid"
}
if ! command -v prometheus >/dev/null; then
  gb_apt_install prometheus
  command -v prometheus >/dev/null || gb_die "prometheus missing after apt-get install prometheus"
fi
stop_system_prometheus
PROMETHEUS=$(command -v prometheus)
PROMTOOL=$(command -v promtool || true)
prom_version=$("$PROMETHEUS" --version 2>&1 | head -n1 | sed 's/ (.*//')

tsv=$(gb_results_file prometheus-check)
md=${tsv%.tsv}.md
run=${tsv%.tsv}
mkdir -p "$run"

# --- Prometheus, scraping the load's metrics address ------------------------------------------
prom_port=$(gb_free_port)
metrics_port=$(gb_free_port)
while [[ $metrics_port == "$prom_port" ]]; do metrics_port=$(gb_free_port); done
pdir=$GB_TMP/prometheus
mkdir -p "$pdir/data"
cat >"$pdir/prometheus.yml" <<EOF
# Written by bench/prometheus-check.sh.
global:
  scrape_interval: $SCRAPE_INTERVAL
  scrape_timeout: $SCRAPE_INTERVAL
  evaluation_interval: $SCRAPE_INTERVAL
scrape_configs:
  - job_name: gatebench
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
EOF
cp "$pdir/prometheus.yml" "$run/prometheus.yml"
if [[ -n $PROMTOOL ]]; then
  "$PROMTOOL" check config "$pdir/prometheus.yml" >"$pdir/check-config.txt" 2>&1 \
    || { cat "$pdir/check-config.txt" >&2; gb_die "promtool check config failed"; }
fi
# GOMAXPROCS=1 and pinned beside the echo, away from the generator's core.
GOMAXPROCS=1 nice -n "$GB_NICE" taskset -c "$SERVER_CORE" "$PROMETHEUS" \
  --config.file="$pdir/prometheus.yml" \
  --storage.tsdb.path="$pdir/data" \
  --storage.tsdb.retention.time=1d \
  --web.listen-address="127.0.0.1:$prom_port" \
  --enable-feature=native-histograms \
  --web.enable-remote-write-receiver \
  </dev/null >"$pdir/prometheus.log" 2>&1 &
prom_pid=$!
gb_track_pid "$prom_pid"
prom_url=http://127.0.0.1:$prom_port
for ((i = 0; i < 300; i++)); do
  curl -fsS "$prom_url/-/ready" >/dev/null 2>&1 && break
  gb_pid_alive "$prom_pid" || { tail -n 20 "$pdir/prometheus.log" >&2; gb_die "prometheus exited"; }
  sleep 0.1
done
curl -fsS "$prom_url/-/ready" >/dev/null 2>&1 || gb_die "prometheus not ready on $prom_url after 30 s"
gb_log "prometheus pid $prom_pid on $prom_url ($prom_version), scraping 127.0.0.1:$metrics_port every $SCRAPE_INTERVAL"

# --- The back-end and the load ----------------------------------------------------------------
gb_gatebench_serve "$GB_TMP/echo" "$SERVER_CORE" echo --port 0 --threads 1 --delay "$DELAY"
record=$run/record.json
gb_log "gatebench load -R $RATE -c $CONNS -d $DURATION --warmup $WARMUP --metrics 127.0.0.1:$metrics_port --remote-write $prom_url/api/v1/write (~$((warm_s + dur_s + linger_s)) s)"
load_start=$(gb_now)
nice -n "$GB_NICE" taskset -c "$GEN_CORE" "$GATEBENCH" load "http://127.0.0.1:$GB_SERVE_PORT/" \
  -R "$RATE" -c "$CONNS" -t 1 -d "$DURATION" --warmup "$WARMUP" \
  --metrics "127.0.0.1:$metrics_port" --metrics-label "scenario=$SCENARIO" --metrics-linger "$LINGER" \
  --remote-write "$prom_url/api/v1/write" --remote-write-interval "$REMOTE_WRITE_INTERVAL" \
  --json "$record" </dev/null >"$run/load-report.txt" 2>"$GB_TMP/load.err" &
load_pid=$!
gb_track_pid "$load_pid"

# Mid-measurement: one scrape's body as Prometheus sees it, promtool's lint of it, and the
# targets page (a scrape error would be its lastError).
sleep $((warm_s + dur_s / 2 + 1))
gb_pid_alive "$load_pid" || { cat "$GB_TMP/load.err" >&2; gb_die "gatebench load exited early"; }
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$run/metrics.txt" || gb_die "GET /metrics failed"
if [[ -n $PROMTOOL ]]; then
  "$PROMTOOL" check metrics <"$run/metrics.txt" >"$run/promtool-check-metrics.txt" 2>&1 || true
fi
curl -fsS "$prom_url/api/v1/targets" | python3 -m json.tool >"$run/targets.json"

load_rc=0
wait "$load_pid" || load_rc=$?
load_exit=$(gb_now)
gb_untrack_pid "$load_pid"
cp "$GB_TMP/load.err" "$run/load-stderr.txt"
[[ $load_rc -eq 0 ]] || { cat "$GB_TMP/load.err" >&2; gb_die "gatebench load exited with status $load_rc"; }
[[ -s $record ]] || gb_die "gatebench load wrote no record"
sleep 2  # the scrape that finds the endpoint gone, and the TSDB's head caught up

{
  printf 'rate\t%s\nconns\t%s\nduration\t%s\nwarmup\t%s\ndelay\t%s\nlinger\t%s\n' \
    "$RATE" "$CONNS" "$DURATION" "$WARMUP" "$DELAY" "$LINGER"
  printf 'scrape_interval\t%s\nrate_window\t%s\nrate_tolerance\t%s\nscenario\t%s\n' \
    "$SCRAPE_INTERVAL" "$RATE_WINDOW" "$RATE_TOLERANCE" "$SCENARIO"
  printf 'prometheus_version\t%s\nload_start_unix\t%s\nload_exit_unix\t%s\n' \
    "$prom_version" "$load_start" "$load_exit"
  printf 'gatebench\t%s\n' "$("$GATEBENCH" --version 2>/dev/null | head -n1)"
  printf 'remote_write\t1\nremote_write_interval\t%s\nscrape_instance\t127.0.0.1:%s\nremote_instance\t%s\nload_seconds\t%s\n' \
    "$REMOTE_WRITE_INTERVAL" "$metrics_port" "$(uname -n)" "$((warm_s + dur_s))"
} >"$run/params.tsv"

python3 "$here/prometheus_check.py" query "$prom_url" "$run"
python3 "$here/prometheus_check.py" dashboard "$prom_url" "$GB_ROOT/dashboards/gatebench-load.json" "$run" || true
python3 "$here/prometheus_check.py" tsv "$run" >"$tsv"
python3 "$here/prometheus_check.py" summary "$run" >"$md"
cat "$md"
gb_log "results: ${tsv#"$GB_ROOT"/}, ${md#"$GB_ROOT"/}, ${run#"$GB_ROOT"/}/"
grep -q '^\*\*Result: pass\*\*$' "$md"
