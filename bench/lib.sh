# shellcheck shell=bash
# Shared helpers for the macro-benchmark scripts under bench/.
#
# Source it from a script that has `set -euo pipefail`:
#
#   here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
#   # shellcheck source=bench/lib.sh
#   source "$here/lib.sh"
#   gb_init            # cd to the repo root, make a temp dir, trap EXIT for cleanup
#
# Conventions: every function is prefixed `gb_`; messages go to stderr; everything a
# script starts is registered with gb_track_pid and stopped by PID on exit (never by name).
# See bench/README.md for the method these helpers implement.

# ---------------------------------------------------------------------------
# Logging, errors, repo root, temp dir, cleanup
# ---------------------------------------------------------------------------

gb_log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
gb_die() {
  gb_log "error: $*"
  exit 1
}

# Absolute path of the repository root (the parent of bench/).
GB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GB_TMP=""
GB_PIDS=()
GB_CGROUPS=()

# cd to the repo root, create $GB_TMP and install the cleanup trap.
gb_init() {
  cd "$GB_ROOT" || exit 1
  GB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gatebench-bench.XXXXXX")
  # /usr/bin/time and the generators must be able to write here even if the
  # server's workers drop privileges; the server itself only reads its config.
  chmod 755 "$GB_TMP"
  trap gb_cleanup EXIT
  gb_apply_nice
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Register a PID to be stopped on exit (SIGTERM, then SIGKILL after 5 s).
gb_track_pid() { GB_PIDS+=("$1"); }

gb_pid_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# Stop one PID: SIGTERM, wait up to 5 s, then SIGKILL.
gb_stop_pid() {
  local pid=$1 i
  gb_pid_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    gb_pid_alive "$pid" || break
    sleep 0.1
  done
  if gb_pid_alive "$pid"; then
    gb_log "pid $pid did not stop on SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

gb_cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  for ((i = ${#GB_PIDS[@]} - 1; i >= 0; i--)); do
    gb_stop_pid "${GB_PIDS[i]}"
  done
  gb_remove_cgroups
  if [[ -n $GB_AUTOGROUP_NICE0 ]]; then
    echo "$GB_AUTOGROUP_NICE0" >/proc/self/autogroup 2>/dev/null || true
  fi
  if [[ -n "$GB_TMP" && -d "$GB_TMP" ]]; then
    if [[ $rc -ne 0 && -n "${KEEP_TMP:-}" ]]; then
      gb_log "keeping $GB_TMP (KEEP_TMP set)"
    else
      rm -rf "$GB_TMP"
    fi
  fi
  exit "$rc"
}

# ---------------------------------------------------------------------------
# Installing what a script needs (Debian packages, crates.io binaries)
# ---------------------------------------------------------------------------

GB_APT_UPDATED=0

# gb_apt_install PKG... — `apt-get update` once per script, then install.
gb_apt_install() {
  command -v apt-get >/dev/null || gb_die "apt-get not found; install $* by hand"
  local log="${GB_TMP:-${TMPDIR:-/tmp}}/apt.log"
  if [[ $GB_APT_UPDATED -eq 0 ]]; then
    gb_log "apt-get update"
    apt-get update -qq >>"$log" 2>&1 || { tail -n 20 "$log" >&2; gb_die "apt-get update failed"; }
    GB_APT_UPDATED=1
  fi
  gb_log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >>"$log" 2>&1 || { tail -n 20 "$log" >&2; gb_die "apt-get install $* failed"; }
}

# gb_need_cmd CMD [DEBIAN_PACKAGE] — install the package if CMD is not on PATH.
gb_need_cmd() {
  local cmd=$1 pkg=${2:-$1}
  command -v "$cmd" >/dev/null && return 0
  gb_apt_install "$pkg"
  command -v "$cmd" >/dev/null || gb_die "$cmd still missing after installing $pkg"
}

# gb_need_cargo_bin CMD [CRATE] — `cargo install CRATE --locked` if CMD is missing
# (into cargo's default bin dir, which is added to PATH).
gb_need_cargo_bin() {
  local cmd=$1 crate=${2:-$1} bindir="${CARGO_HOME:-$HOME/.cargo}/bin"
  case ":$PATH:" in *":$bindir:"*) ;; *) PATH="$bindir:$PATH" ;; esac
  command -v "$cmd" >/dev/null && return 0
  command -v cargo >/dev/null || gb_die "$cmd missing and cargo not found"
  gb_log "cargo install $crate --locked (a few minutes)"
  cargo install "$crate" --locked >&2
  command -v "$cmd" >/dev/null || gb_die "$cmd still missing after cargo install $crate"
}

# /usr/bin/time (GNU time, for -f "%e %U %S"); the bash keyword `time` is not enough.
gb_need_gnu_time() {
  [[ -x /usr/bin/time ]] || gb_apt_install time
  [[ -x /usr/bin/time ]] || gb_die "/usr/bin/time still missing"
}

# The two cores this method uses: server on one, generator on the other.
gb_need_two_cores() {
  gb_need_cmd taskset util-linux
  local n
  n=$(nproc)
  [[ $n -ge 2 ]] || gb_die "need at least 2 cores for pinning, have $n"
}

# gatebench binary: $GATEBENCH (default target/release/gatebench, relative to the repo
# root); built with `cargo build --release -p gatebench` if missing. Sets GATEBENCH.
gb_need_gatebench() {
  GATEBENCH=${GATEBENCH:-target/release/gatebench}
  [[ $GATEBENCH == /* ]] || GATEBENCH="$GB_ROOT/$GATEBENCH"
  if [[ ! -x $GATEBENCH ]]; then
    gb_log "$GATEBENCH missing; cargo build --release -p gatebench"
    (cd "$GB_ROOT" && cargo build --release -p gatebench >&2)
  fi
  [[ -x $GATEBENCH ]] || gb_die "gatebench binary not found at $GATEBENCH"
}

# ---------------------------------------------------------------------------
# Durations, ports, HTTP on loopback
# ---------------------------------------------------------------------------

# gb_duration_secs 10s|10|2m — prints whole seconds; dies on anything else.
gb_duration_secs() {
  local d=$1
  if [[ $d =~ ^([0-9]+)s?$ ]]; then
    echo "${BASH_REMATCH[1]}"
  elif [[ $d =~ ^([0-9]+)m$ ]]; then
    echo $((BASH_REMATCH[1] * 60))
  else
    gb_die "duration '$d': use N, Ns or Nm"
  fi
}

# A free TCP port on 127.0.0.1 (the kernel picks it; tiny race until the server binds).
gb_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# gb_http_get PORT PATH — body of an HTTP/1.0 GET to 127.0.0.1:PORT (bash /dev/tcp, no
# curl needed). Prints the body only; fails if the connection cannot be made.
gb_http_get() {
  local port=$1 path=$2 line in_body=0 fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&"$fd"
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    if [[ $in_body -eq 1 ]]; then
      printf '%s\n' "$line"
    elif [[ -z $line ]]; then
      in_body=1
    fi
  done <&"$fd"
  exec {fd}>&-
}

# gb_wait_port PORT [SECONDS] — wait until something accepts on 127.0.0.1:PORT.
gb_wait_port() {
  local port=$1 secs=${2:-10} i
  for ((i = 0; i < secs * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  gb_die "nothing listening on 127.0.0.1:$port after ${secs}s"
}

# ---------------------------------------------------------------------------
# Process accounting
# ---------------------------------------------------------------------------

GB_CLK_TCK=$(getconf CLK_TCK)

# gb_proc_cpu_secs PID — user+system CPU seconds the process has used so far
# (fields 14 and 15 of /proc/PID/stat, after the parenthesised comm).
gb_proc_cpu_secs() {
  local stat rest
  stat=$(<"/proc/$1/stat")
  rest=${stat##*) }
  # rest starts at field 3 (state); utime is field 14, stime field 15.
  awk -v tck="$GB_CLK_TCK" '{ printf "%.2f\n", ($12 + $13) / tck }' <<<"$rest"
}

# gb_core_jiffies CORE — "busy total softirq" jiffies of one core from /proc/stat (busy =
# user nice system irq softirq steal; total adds idle and iowait; softirq = irq softirq).
# Busy includes the softirq time of loopback TCP, which no process is charged for, and
# whatever else ran on the core.
gb_core_jiffies() {
  awk -v c="cpu$1" '$1 == c {
    busy = $2 + $3 + $4 + $7 + $8 + $9
    print busy, busy + $5 + $6, $7 + $8
  }' /proc/stat
}

# gb_core_busy SNAP0 SNAP1 — fraction of the interval the core was busy, from two
# gb_core_jiffies snapshots.
gb_core_busy() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    dt = y[2] - x[2]
    if (dt > 0) printf "%.3f\n", (y[1] - x[1]) / dt; else print "NA"
  }'
}

# gb_core_softirq SNAP0 SNAP1 — fraction of the interval spent in irq + softirq.
gb_core_softirq() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    dt = y[2] - x[2]
    if (dt > 0) printf "%.3f\n", (y[3] - x[3]) / dt; else print "NA"
  }'
}

# gb_warn_if_busy CORE... — sample the cores for 1 s and warn if any was more than 10 %
# busy before the benchmark starts (someone else's build skews absolute numbers; ratios
# of interleaved runs suffer less). The per-run core-busy columns show it run by run.
gb_warn_if_busy() {
  local c snap=() busy
  for c in "$@"; do snap+=("$(gb_core_jiffies "$c")"); done
  sleep 1
  local i=0
  for c in "$@"; do
    busy=$(gb_core_busy "${snap[i]}" "$(gb_core_jiffies "$c")")
    if awk -v b="$busy" 'BEGIN { exit !(b != "NA" && b > 0.10) }'; then
      gb_log "warning: core $c was $(awk -v b="$busy" 'BEGIN { printf "%.0f", b * 100 }') % busy before the benchmark; other load will skew the numbers"
    fi
    i=$((i + 1))
  done
}

# gb_children PID — direct children of PID, one per line.
gb_children() {
  local f="/proc/$1/task/$1/children"
  if [[ -r $f ]]; then
    tr ' ' '\n' <"$f" | sed '/^$/d'
  else
    ps -o pid= --ppid "$1" | tr -d ' '
  fi
}

# gb_now — wall-clock seconds with nanoseconds, for elapsed times.
gb_now() { date +%s.%N; }

# Niceness for everything measured (server and generators): NICE in the environment, 0 by
# default. As root, a negative value (e.g. NICE=-10) lets a benchmark win the cores from
# other builds on a shared machine.
GB_NICE=${NICE:-0}
[[ $GB_NICE =~ ^-?[0-9]+$ ]] || { echo "NICE must be an integer" >&2; exit 1; }

GB_AUTOGROUP_NICE0=""

# With the kernel's autogroup scheduling on (kernel.sched_autogroup_enabled = 1), nice only
# ranks processes within one session, and every session (each other engineer's shell) gets
# an equal share. So a non-zero NICE is also set on this session's autogroup, and put
# back on exit. Called by gb_init.
gb_apply_nice() {
  [[ $GB_NICE -ne 0 ]] || return 0
  local ag=/proc/self/autogroup cur
  [[ -r $ag && "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" == 1 ]] || return 0
  cur=$(awk '{ print $NF }' "$ag")
  if echo "$GB_NICE" >"$ag" 2>/dev/null; then
    GB_AUTOGROUP_NICE0=$cur
    gb_log "NICE=$GB_NICE: this session's autogroup nice $cur -> $GB_NICE (restored on exit)"
  else
    gb_log "warning: cannot set the autogroup nice; NICE=$GB_NICE only ranks this session's processes"
  fi
}

# gb_timed OUT CORE TIMEOUT_S CMD... — run CMD pinned to CORE under GNU time and a hard
# timeout. Writes "elapsed user sys" (seconds) to OUT; returns CMD's exit status.
gb_timed() {
  local out=$1 core=$2 tmo=$3
  shift 3
  timeout -k 5 "$tmo" nice -n "$GB_NICE" taskset -c "$core" \
    /usr/bin/time -f '%e %U %S' -o "$out" "$@"
}

# ---------------------------------------------------------------------------
# nginx as the server under test (or the origin)
# ---------------------------------------------------------------------------

# Debian's nginx package starts a system nginx on port 80 when installed. Stop it by the
# PID in /run/nginx.pid (checked to be an nginx process), never by name.
gb_stop_system_nginx() {
  local pidfile=/run/nginx.pid pid comm
  [[ -r $pidfile ]] || return 0
  pid=$(tr -d ' \n' <"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  gb_pid_alive "$pid" || return 0
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  [[ $comm == nginx ]] || return 0
  gb_log "stopping the system nginx (pid $pid from $pidfile)"
  kill -QUIT "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 50; i++)); do
    gb_pid_alive "$pid" || return 0
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
}

# Install nginx if missing (then stop the system nginx it starts). Sets GB_NGINX.
gb_need_nginx() {
  GB_NGINX=$(command -v nginx || true)
  [[ -n $GB_NGINX ]] || { [[ -x /usr/sbin/nginx ]] && GB_NGINX=/usr/sbin/nginx; } || true
  if [[ -z $GB_NGINX ]]; then
    gb_apt_install nginx
    GB_NGINX=/usr/sbin/nginx
    [[ -x $GB_NGINX ]] || gb_die "nginx missing after apt-get install nginx"
  fi
  gb_stop_system_nginx
}

# gb_nginx_hello_conf DIR PORT [WORKERS] — write DIR/nginx.conf: 127.0.0.1:PORT, a fixed
# 13-byte "Hello, world!" on every path, keep-alive that outlives any run, no access log,
# and stub_status on /nginx_status. Extra server-level directives can be appended
# later via DIR/extra.conf (included, empty by default).
gb_nginx_hello_conf() {
  local dir=$1 port=$2 workers=${3:-1}
  mkdir -p "$dir/temp"
  : >"$dir/extra.conf"
  cat >"$dir/nginx.conf" <<EOF
# Written by bench/lib.sh (gb_nginx_hello_conf).
daemon off;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
    worker_connections 20000;
}
http {
    access_log off;
    server_tokens off;
    default_type text/plain;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    server {
        listen 127.0.0.1:$port;
        location = /nginx_status {
            stub_status;
        }
        location / {
            return 200 "Hello, world!";
        }
        include $dir/extra.conf;
    }
}
EOF
}

# gb_nginx_start DIR CORE PORT — start nginx (foreground master, tracked by PID) with
# DIR/nginx.conf pinned to CORE; wait for PORT. Sets GB_NGINX_PID (master) and
# GB_NGINX_WORKERS (array of worker PIDs).
gb_nginx_start() {
  local dir=$1 core=$2 port=$3 i
  "$GB_NGINX" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" \
    || gb_die "nginx -t failed for $dir/nginx.conf"
  nice -n "$GB_NICE" taskset -c "$core" "$GB_NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" \
    </dev/null >"$dir/stdout.log" 2>&1 &
  GB_NGINX_PID=$!
  gb_track_pid "$GB_NGINX_PID"
  gb_wait_port "$port" 10
  GB_NGINX_WORKERS=()
  for ((i = 0; i < 50; i++)); do
    mapfile -t GB_NGINX_WORKERS < <(gb_children "$GB_NGINX_PID")
    [[ ${#GB_NGINX_WORKERS[@]} -gt 0 ]] && break
    sleep 0.1
  done
  [[ ${#GB_NGINX_WORKERS[@]} -gt 0 ]] || gb_die "nginx (pid $GB_NGINX_PID) has no workers"
  gb_log "nginx pid $GB_NGINX_PID, workers ${GB_NGINX_WORKERS[*]}, core $core, port $port"
}

# gb_nginx_requests PORT — nginx's count of requests served so far (stub_status), minus
# the status request itself, so before/after differences count only the load.
gb_nginx_requests() {
  local body n
  body=$(gb_http_get "$1" /nginx_status) || gb_die "stub_status on port $1 unreachable"
  # Third line: " accepts handled requests" as three numbers.
  n=$(awk 'NR == 3 { print $3 }' <<<"$body")
  [[ $n =~ ^[0-9]+$ ]] || gb_die "cannot parse stub_status: $body"
  echo $((n - 1))
}

# gb_nginx_workers_cpu — summed CPU seconds of the nginx workers (GB_NGINX_WORKERS).
gb_nginx_workers_cpu() {
  local pid total=0 s
  for pid in "${GB_NGINX_WORKERS[@]}"; do
    s=$(gb_proc_cpu_secs "$pid")
    total=$(awk -v a="$total" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
  done
  echo "$total"
}

# ---------------------------------------------------------------------------
# Results: files, medians, the summary table
# ---------------------------------------------------------------------------

# gb_results_file NAME — bench/results/NAME-<date>.tsv (directory created).
gb_results_file() {
  mkdir -p "$GB_ROOT/bench/results"
  echo "$GB_ROOT/bench/results/$1-$(date +%Y-%m-%dT%H%M%S).tsv"
}

# gb_median NUMBER... — median of the arguments (empty or "NA" ones ignored).
gb_median() {
  printf '%s\n' "$@" | python3 -c '
import statistics, sys
xs = [float(x) for x in sys.stdin.read().split() if x not in ("", "NA")]
print(f"{statistics.median(xs):.6g}" if xs else "NA")'
}

# gb_summarize TSV [BASELINE] — Markdown table of medians per tool from a per-run TSV
# with the columns the bench scripts write (tool, ok, stub_rps, tool_rps, gen_cpu_per_100k,
# gen_util, server_util, server_core_busy, gen_core_busy, server_core_other,
# gen_core_other; missing ones show as n/a), and each tool's ratios to BASELINE's medians
# (default wrk). Runs with ok != 1 are left out. "core busy with the benchmark" is
# core busy − other load: the measured process plus the (soft)irq time its traffic causes.
gb_summarize() {
  python3 - "$1" "${2:-wrk}" <<'PY'
import csv, statistics, sys

path, base = sys.argv[1], sys.argv[2]
with open(path) as f:
    rows = list(csv.DictReader(f, delimiter="\t"))
tools = list(dict.fromkeys(r["tool"] for r in rows))

def med(tool, col):
    xs = [float(r[col]) for r in rows
          if r["tool"] == tool and r.get("ok") == "1" and r.get(col) not in (None, "", "NA")]
    return statistics.median(xs) if xs else None

def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)

def ratio(a, b):
    return None if a is None or not b else a / b

# The benchmark's own share of a core: busy minus other processes' load.
for r in rows:
    for side in ("server", "gen"):
        busy, other = r.get(f"{side}_core_busy"), r.get(f"{side}_core_other")
        ok = busy not in (None, "", "NA") and other not in (None, "", "NA")
        r[f"{side}_core_own"] = f"{float(busy) - float(other):.3f}" if ok else "NA"

cols = ["stub_rps", "tool_rps", "gen_cpu_per_100k", "gen_util", "server_util",
        "server_core_own", "gen_core_own", "server_core_other", "gen_core_other"]
stats = {}
for t in tools:
    mine = [r for r in rows if r["tool"] == t]
    stats[t] = {c: med(t, c) for c in cols}
    stats[t]["runs"] = f"{sum(r.get('ok') == '1' for r in mine)}/{len(mine)}"

b = stats.get(base, {})
print("| tool | runs ok | req/s (server-counted) | req/s (tool-reported) "
      f"| generator CPU-s per 100k req | req/s ÷ {base} | CPU per req ÷ {base} "
      "| process CPU: nginx / generator | core busy with the benchmark: server / generator "
      "| other load: server / generator |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in tools:
    s = stats[t]
    pair = lambda a, c: f"{fmt(s[a], '.2f')} / {fmt(s[c], '.2f')}"
    print(f"| {t} | {s['runs']} | {fmt(s['stub_rps'], ',.0f')} | {fmt(s['tool_rps'], ',.0f')} "
          f"| {fmt(s['gen_cpu_per_100k'], '.3f')} "
          f"| {fmt(ratio(s['stub_rps'], b.get('stub_rps')), '.3f')} "
          f"| {fmt(ratio(s['gen_cpu_per_100k'], b.get('gen_cpu_per_100k')), '.3f')} "
          f"| {pair('server_util', 'gen_util')} "
          f"| {pair('server_core_own', 'gen_core_own')} "
          f"| {pair('server_core_other', 'gen_core_other')} |")
PY
}

# ---------------------------------------------------------------------------
# TLS and HTTP/2 listeners, a snapshot of the gatebench binary
# ---------------------------------------------------------------------------

# gb_self_signed_cert DIR — write DIR/cert.pem and DIR/key.pem: a self-signed ECDSA P-256
# certificate for 127.0.0.1 and localhost (subjectAltName), valid 2 days. Installs openssl
# if missing. Clients connect with -k / --insecure (or trust DIR/cert.pem).
gb_self_signed_cert() {
  local dir=$1
  gb_need_cmd openssl openssl
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" >"$dir/openssl.log" 2>&1 \
    || { cat "$dir/openssl.log" >&2; gb_die "openssl req -x509 failed"; }
}

# gb_nginx_add_listen DIR PORT [PARAMS…] — add `listen 127.0.0.1:PORT PARAMS;` to the server
# written by gb_nginx_hello_conf (via DIR/extra.conf). nginx 1.22 spellings: `http2` (a
# cleartext listener then speaks h2c by prior knowledge only, no HTTP/1.1), `ssl`, `ssl http2`
# (ALPN offers h2 and http/1.1). The server's first listener stays plain HTTP/1.1, for
# stub_status. Call gb_nginx_add_tls once when any listener has `ssl`.
gb_nginx_add_listen() {
  local dir=$1 port=$2
  shift 2
  echo "listen 127.0.0.1:$port${*:+ $*};" >>"$dir/extra.conf"
}

# gb_nginx_add_tls DIR CERT KEY — certificate and key for the server's `ssl` listeners;
# a session cache, so a tool that reconnects may resume.
gb_nginx_add_tls() {
  cat >>"$1/extra.conf" <<EOT
ssl_certificate $2;
ssl_certificate_key $3;
ssl_session_cache shared:gbSSL:1m;
EOT
}

# gb_snapshot_gatebench — after gb_need_gatebench: copy the binary into $GB_TMP and point
# GATEBENCH at the copy, so a rebuild by someone else cannot swap it mid-run. The original
# path stays in GATEBENCH_SRC (exported, for reports).
gb_snapshot_gatebench() {
  export GATEBENCH_SRC=$GATEBENCH
  cp "$GATEBENCH" "$GB_TMP/gatebench" || gb_die "cannot copy $GATEBENCH"
  GATEBENCH="$GB_TMP/gatebench"
}

# gb_gatebench_json FILE — "throughput_rps ok" from a `gatebench load --json` record.
gb_gatebench_json() {
  python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["measurement"]
print(m["throughput_rps"], m["outcomes"]["ok"])' "$1"
}

# ---------------------------------------------------------------------------
# One measured run (every nginx-backed comparison script uses it)
# ---------------------------------------------------------------------------

# The per-run TSV columns gb_measured_run writes (gb_summarize reads them by name).
gb_runs_tsv_header() {
  printf '%s\n' "run	tool	ok	exit	duration_s	elapsed_s	served	stub_rps	tool_rps	tool_ok	gen_user_s	gen_sys_s	gen_cpu_s	gen_cpu_per_100k	gen_util	server_cpu_s	server_util	server_core_busy	gen_core_busy	server_core_other	gen_core_other"
}

# gb_measured_run RUN TOOL DUR_S STATUS_PORT OUT RUNFN — one measured run of TOOL: nginx's stub_status count (on STATUS_PORT) and worker CPU and both
# cores' /proc/stat times before and after `RUNFN TOOL DUR_S OUT`. RUNFN must run the
# generator with `gb_timed "$OUT.time" "$GEN_CORE" …` and set the globals rc (exit status),
# tool_rps and tool_ok (the tool's own req/s and 2xx count, or NA). Uses SERVER_CORE (0)
# and GEN_CORE (1) and GB_NGINX_WORKERS. Prints one TSV row (gb_runs_tsv_header columns)
# on stdout and a progress line on stderr. ok = 0 when the tool failed or reported no 2xx.
gb_measured_run() {
  local run=$1 tool=$2 dur_s=$3 sport=$4 out=$5 runfn=$6
  local sc=${SERVER_CORE:-0} gc=${GEN_CORE:-1}
  local before after c0 c1 sj0 sj1 gj0 gj1 elapsed=NA user=NA sys=NA ok=1 row
  local -a f
  before=$(gb_nginx_requests "$sport")
  c0=$(gb_nginx_workers_cpu)
  sj0=$(gb_core_jiffies "$sc")
  gj0=$(gb_core_jiffies "$gc")
  "$runfn" "$tool" "$dur_s" "$out"
  sj1=$(gb_core_jiffies "$sc")
  gj1=$(gb_core_jiffies "$gc")
  after=$(gb_nginx_requests "$sport")
  c1=$(gb_nginx_workers_cpu)
  # GNU time's last line is "elapsed user sys" (a line before it says why the command
  # failed, if it did).
  if [[ -s $out.time ]]; then read -r elapsed user sys < <(tail -n1 "$out.time"); fi
  tool_rps=${tool_rps:-NA} tool_ok=${tool_ok:-NA}
  if [[ $rc -ne 0 || $tool_rps == NA || $elapsed == NA || $tool_ok == 0 ]]; then
    ok=0
    gb_log "run $run $tool failed (exit $rc, tool 2xx ${tool_ok:-NA}): $(tail -n3 "$out.err" 2>/dev/null | tr '\n' ' ')"
  fi
  row=$(awk -v run="$run" -v tool="$tool" -v ok="$ok" -v rc="$rc" -v dur="$dur_s" \
    -v el="$elapsed" -v served=$((after - before)) -v trps="$tool_rps" -v tok="$tool_ok" \
    -v u="$user" -v s="$sys" -v c0="$c0" -v c1="$c1" \
    -v sbusy="$(gb_core_busy "$sj0" "$sj1")" -v gbusy="$(gb_core_busy "$gj0" "$gj1")" \
    -v ssirq="$(gb_core_softirq "$sj0" "$sj1")" -v gsirq="$(gb_core_softirq "$gj0" "$gj1")" 'BEGIN {
      OFS = "\t"
      sother = "NA"; gother = "NA"
      if (el == "NA" || el + 0 <= 0) { rps = "NA"; gcore = "NA"; score = "NA" }
      else {
        rps = sprintf("%.0f", served / el)
        score = sprintf("%.3f", (c1 - c0) / el)
        gcore = (u == "NA") ? "NA" : sprintf("%.3f", (u + s) / el)
        # What else used the cores: busy minus the measured process minus (soft)irq.
        if (sbusy != "NA") sother = sprintf("%.3f", max0(sbusy - score - ssirq))
        if (gbusy != "NA" && gcore != "NA") gother = sprintf("%.3f", max0(gbusy - gcore - gsirq))
      }
      cpu = (u == "NA") ? "NA" : sprintf("%.2f", u + s)
      per = (u == "NA" || served <= 0) ? "NA" : sprintf("%.4f", (u + s) / served * 100000)
      print run, tool, ok, rc, dur, el, served, rps, trps, tok, u, s, cpu, per, gcore,
            sprintf("%.2f", c1 - c0), score, sbusy, gbusy, sother, gother
    }
    function max0(x) { return x < 0 ? 0 : x }')
  IFS=$'\t' read -r -a f <<<"$row"
  gb_log "run $run $tool: ${f[7]} req/s served (tool says ${f[8]}); generator ${f[14]} of a core," \
    "nginx worker ${f[16]}; core $sc busy ${f[17]} (other load ${f[19]}), core $gc busy ${f[18]} (other load ${f[20]})"
  printf '%s\n' "$row"
}

# gb_report_notes — the legend printed under a gb_summarize table.
gb_report_notes() {
  cat <<'EOT'
req/s (server-counted) = nginx stub_status requests during the run ÷ the generator's wall time.
CPU per 100k = generator user+sys CPU-s ÷ requests served × 100,000. process CPU = CPU-s ÷ wall s.
core busy with the benchmark = the core's busy time (/proc/stat) less other load: the process plus
the loopback (soft)irq time no process is charged for. ≈ 1.00 on the server core: nginx was the
bottleneck; ≈ 1.00 on the generator core with the server below it: the generator was.
other load = core busy − the measured process − (soft)irq: other processes (e.g. someone's build);
near 0 is clean, except on a side with idle time, where other work only filled the idle time.
EOT
}

# gb_paired_ratios TSV [BASELINE [TOOL]] — for each tool (only TOOL when given; e.g. gatebench
# against BASELINE gatebench-before, a before/after pair), its ratios to BASELINE (default wrk) within
# each run (same run number: the two ran back to back), then the median and range over the
# runs, as Markdown lines. On a noisy shared machine these paired ratios move less than the
# ratio of medians, because drift between runs cancels within a pair. Runs with ok != 1
# are left out.
gb_paired_ratios() {
  python3 - "$1" "${2:-wrk}" "${3:-}" <<'PY'
import csv, statistics, sys

path, base, only = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path) as f:
    rows = [r for r in csv.DictReader(f, delimiter="\t") if r.get("ok") == "1"]
runs = {}
for r in rows:
    runs.setdefault(r["run"], {})[r["tool"]] = r
tools = [t for t in dict.fromkeys(r["tool"] for r in rows) if t != base and (not only or t == only)]

def ratios(tool, col):
    out = []
    for by in runs.values():
        a, b = by.get(tool, {}).get(col), by.get(base, {}).get(col)
        try:
            if float(b) > 0:
                out.append(float(a) / float(b))
        except (TypeError, ValueError):
            pass
    return out

def show(xs):
    if not xs:
        return "n/a"
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f}, {len(xs)} pairs)"

for t in tools:
    print(f"- paired per-run ratios {t} ÷ {base}, median (range): "
          f"req/s (server-counted) {show(ratios(t, 'stub_rps'))}; "
          f"CPU per request {show(ratios(t, 'gen_cpu_per_100k'))}")
PY
}

# ---------------------------------------------------------------------------
# Intermediaries (proxy-vs-peers.sh): HAProxy, nginx as a proxy, gatebench's services,
# memory and CPU of a group of processes
# ---------------------------------------------------------------------------

# Debian's haproxy package starts a system HAProxy when installed. Stop it by the PID in
# /run/haproxy.pid (checked to be a haproxy process; with master-worker it is the master,
# which takes its workers down), never by name.
gb_stop_system_haproxy() {
  local pidfile=/run/haproxy.pid pid comm i
  [[ -r $pidfile ]] || return 0
  pid=$(head -n1 "$pidfile" | tr -d ' \n')
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  gb_pid_alive "$pid" || return 0
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  [[ $comm == haproxy ]] || return 0
  gb_log "stopping the system haproxy (pid $pid from $pidfile)"
  kill -USR1 "$pid" 2>/dev/null || true # soft stop
  for ((i = 0; i < 50; i++)); do
    gb_pid_alive "$pid" || return 0
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
}

# Install HAProxy if missing (then stop the system haproxy it starts). Sets GB_HAPROXY.
gb_need_haproxy() {
  GB_HAPROXY=$(command -v haproxy || true)
  [[ -n $GB_HAPROXY ]] || { [[ -x /usr/sbin/haproxy ]] && GB_HAPROXY=/usr/sbin/haproxy; } || true
  if [[ -z $GB_HAPROXY ]]; then
    gb_apt_install haproxy
    GB_HAPROXY=/usr/sbin/haproxy
    [[ -x $GB_HAPROXY ]] || gb_die "haproxy missing after apt-get install haproxy"
  fi
  gb_stop_system_haproxy
}

# gb_nginx_proxy_conf DIR PORT MAXCONN KEEPALIVE HOST:PORT... — write DIR/nginx.conf: one worker,
# a reverse proxy on 127.0.0.1:PORT to an `upstream` of the given servers (round robin, the
# default, when there are several) with a cache of KEEPALIVE idle upstream connections
# (`keepalive`; proxy_http_version 1.1, Connection ""; a connection released while the cache
# is full is closed, so fewer than the concurrent requests means some reconnecting), keep-alive on both sides that outlives any run,
# no access log, worker_connections MAXCONN, stub_status on /nginx_status.
gb_nginx_proxy_conf() {
  local dir=$1 port=$2 maxconn=$3 keepalive=$4 servers="" s
  shift 4
  for s in "$@"; do servers+="        server $s;"$'\n'; done
  mkdir -p "$dir/temp"
  cat >"$dir/nginx.conf" <<EOF
# Written by bench/lib.sh (gb_nginx_proxy_conf).
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
    worker_connections $maxconn;
}
http {
    access_log off;
    server_tokens off;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    upstream backend {
$servers        keepalive $keepalive;
        keepalive_requests 1000000;
        keepalive_timeout 75s;
    }
    server {
        listen 127.0.0.1:$port;
        location = /nginx_status {
            stub_status;
        }
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://backend;
        }
    }
}
EOF
}

# gb_nginx_file_origin DIR CORE BYTES PORT… — an origin as a user would set one up: one nginx
# worker pinned to CORE with a listener on each PORT (the first also serves stub_status), each
# serving the same fixed BYTES-byte file at /1k (a POST gets the same file: the static module
# answers it 405, which `error_page 405 =200 $uri` turns into a GET of the file). The file is
# DIR/www/1k. Sets GB_NGINX_PID and GB_NGINX_WORKERS (gb_nginx_start).
gb_nginx_file_origin() {
  local dir=$1 core=$2 bytes=$3 p
  shift 3
  mkdir -p "$dir/www"
  head -c "$bytes" /dev/zero | tr '\0' 'x' >"$dir/www/1k"
  gb_nginx_hello_conf "$dir" "$1" 1
  for p in "${@:2}"; do gb_nginx_add_listen "$dir" "$p"; done
  cat >>"$dir/extra.conf" <<EOT
location = /1k {
    root $dir/www;
    default_type application/octet-stream;
    error_page 405 =200 \$uri;
}
EOT
  gb_nginx_start "$dir" "$core" "$1"
}

# gb_haproxy_conf FILE PORT MAXCONN HOST:PORT... — write an HAProxy config: one thread,
# HTTP mode, keep-alive to clients and servers (http-reuse always), frontend on
# 127.0.0.1:PORT, one backend with the given servers, `balance roundrobin`; global maxconn
# MAXCONN (HAProxy needs about two descriptors per connection, keep it under the open-files
# limit); no logging.
gb_haproxy_conf() {
  local file=$1 port=$2 maxconn=$3 i=0 s
  shift 3
  {
    cat <<EOF
# Written by bench/lib.sh (gb_haproxy_conf).
global
    nbthread 1
    maxconn $maxconn
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 75s
    timeout server 75s
    timeout http-keep-alive 75s
    timeout http-request 10s
frontend fe
    bind 127.0.0.1:$port
    default_backend be
backend be
    balance roundrobin
EOF
    for s in "$@"; do
      i=$((i + 1))
      echo "    server s$i $s"
    done
  } >"$file"
}

# gb_haproxy_start CONF CORE PORT — HAProxy in the foreground (-db: no daemon, no
# master-worker, so one process), pinned to CORE, tracked by PID; wait for PORT.
# Sets GB_HAPROXY_PID.
gb_haproxy_start() {
  local conf=$1 core=$2 port=$3
  "$GB_HAPROXY" -c -q -f "$conf" >"$conf.check" 2>&1 \
    || { cat "$conf.check" >&2; gb_die "haproxy -c failed for $conf"; }
  nice -n "$GB_NICE" taskset -c "$core" "$GB_HAPROXY" -db -f "$conf" \
    </dev/null >"$conf.log" 2>&1 &
  GB_HAPROXY_PID=$!
  gb_track_pid "$GB_HAPROXY_PID"
  gb_wait_port "$port" 10
  gb_log "haproxy pid $GB_HAPROXY_PID, core $core, port $port"
}

# gb_gatebench_serve LOG CORE ARGS… — start `$GATEBENCH serve ARGS…` (use --port 0) pinned
# to CORE, tracked by PID; wait for its "… listening on http://127.0.0.1:PORT/" line on
# stdout (LOG.out; stderr goes to LOG.err). Sets GB_SERVE_PID and GB_SERVE_PORT. With
# GB_SERVE_CGROUP set (a gb_cpu_cgroup path), the service runs in that cgroup.
gb_gatebench_serve() {
  local log=$1 core=$2 i line=""
  shift 2
  # The shell joins the cgroup (none: stays where it is), then execs: the PID stays the service's.
  sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "${GB_SERVE_CGROUP:-}" \
    nice -n "$GB_NICE" taskset -c "$core" "$GATEBENCH" serve "$@" \
    </dev/null >"$log.out" 2>"$log.err" &
  GB_SERVE_PID=$!
  gb_track_pid "$GB_SERVE_PID"
  GB_SERVE_PORT=""
  for ((i = 0; i < 100; i++)); do
    line=$(grep -m1 -o 'listening on http://127\.0\.0\.1:[0-9]*' "$log.out" 2>/dev/null || true)
    [[ -n $line ]] && break
    gb_pid_alive "$GB_SERVE_PID" || break
    sleep 0.1
  done
  [[ -n $line ]] || {
    tail -n5 "$log.err" >&2
    gb_die "gatebench serve $1 did not report a listening address (pid $GB_SERVE_PID)"
  }
  GB_SERVE_PORT=${line##*:}
  gb_wait_port "$GB_SERVE_PORT" 5
  gb_log "gatebench serve $1 pid $GB_SERVE_PID, core $core, port $GB_SERVE_PORT"
}

# gb_cpu_cgroup NAME PCT [PERIOD_US] — a cgroup (v1 cpu controller) that holds its processes to
# PCT % of one core, the quota renewed every PERIOD_US (100000: the kernel's default; a short
# period keeps each pause short); sets GB_CGROUP to its path, removed by gb_cleanup. Needs root.
gb_cpu_cgroup() {
  local period=${3:-100000}
  [[ -d /sys/fs/cgroup/cpu ]] || gb_die "no cgroup cpu controller at /sys/fs/cgroup/cpu (a CPU quota needs it)"
  GB_CGROUP=/sys/fs/cgroup/cpu/gatebench-bench-$$-$1
  mkdir -p "$GB_CGROUP" || gb_die "cannot create $GB_CGROUP (a CPU quota needs root)"
  GB_CGROUPS+=("$GB_CGROUP")
  echo "$period" >"$GB_CGROUP/cpu.cfs_period_us"
  echo $((period * $2 / 100)) >"$GB_CGROUP/cpu.cfs_quota_us"
}

# gb_cgroup_throttled_s CGROUP — seconds its processes have waited for quota so far.
gb_cgroup_throttled_s() {
  awk '$1 == "throttled_time" { printf "%.2f\n", $2 / 1e9 }' "$1/cpu.stat"
}

# gb_remove_cgroups — remove the cgroups gb_cpu_cgroup made (their processes stopped first).
gb_remove_cgroups() {
  local cg
  for cg in "${GB_CGROUPS[@]}"; do rmdir "$cg" 2>/dev/null || true; done
  GB_CGROUPS=()
}

# gb_untrack_pid PID — forget a PID registered with gb_track_pid (after the script has waited
# for it itself), so cleanup cannot signal a process that later reuses the number.
gb_untrack_pid() {
  local i
  for i in "${!GB_PIDS[@]}"; do
    [[ ${GB_PIDS[i]} == "$1" ]] && unset 'GB_PIDS[i]'
  done
  GB_PIDS=("${GB_PIDS[@]}")
}

# gb_pids_rss_kib PID… — "VmRSS RssAnon Pss" (KiB) summed over the processes; a process that is
# gone adds 0. RssAnon is the private part (heap, stacks); VmRSS adds the resident pages of the
# binary and its shared libraries, whole in each process that maps them; Pss (/proc/PID/
# smaps_rollup) counts a shared page divided by the number of processes mapping it. Pss is NA
# when a live process's smaps_rollup cannot be read (another user's process, not as root).
gb_pids_rss_kib() {
  local pid k v _u rss=0 anon=0 pss=0 p
  for pid in "$@"; do
    while read -r k v _u; do
      case $k in
        VmRSS:) rss=$((rss + v)) ;;
        RssAnon:) anon=$((anon + v)) && break ;;
      esac
    done 2>/dev/null <"/proc/$pid/status" || true
    [[ $pss == NA ]] && continue
    if p=$(awk '$1 == "Pss:" { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null) && [[ -n $p ]]; then
      pss=$((pss + p))
    elif gb_pid_alive "$pid"; then
      pss=NA
    fi
  done
  echo "$rss $anon $pss"
}

# gb_pids_cpu_secs PID… — summed user+system CPU seconds of the processes so far.
gb_pids_cpu_secs() {
  local pid total=0 s
  for pid in "$@"; do
    s=$(gb_proc_cpu_secs "$pid" 2>/dev/null || echo 0)
    total=$(awk -v a="$total" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
  done
  echo "$total"
}

# gb_tcp_active_opens — the kernel's count of TCP connect()s so far (ActiveOpens in
# /proc/net/snmp), system-wide: a before/after difference around a run counts the generator's
# connections plus the ones a proxy opened to its upstreams (plus anyone else's).
gb_tcp_active_opens() {
  awk '$1 == "Tcp:" && $6 ~ /^[0-9]+$/ { print $6; exit }' /proc/net/snmp
}

# gb_rss_sampler OUT FROM_S TO_S PID… — run in the background: after FROM_S seconds, sample
# the processes' summed VmRSS, RssAnon and Pss (gb_pids_rss_kib) every 0.5 s up to TO_S seconds
# from the start, and write the largest of each, "VmRSS RssAnon Pss" in KiB (Pss NA if a sample
# had none), to OUT (rewritten after every sample). Pin it away from the system under test
# (`taskset -pc CORE $!`); it costs a few reads of /proc and one `sleep` per sample.
gb_rss_sampler() {
  local out=$1 from=$2 to=$3 max=0 amax=0 pmax=0 cur anon pss i n
  shift 3
  n=$(awk -v a="$from" -v b="$to" 'BEGIN { n = int((b - a) * 2) + 1; print (n < 1 ? 1 : n) }')
  sleep "$from"
  for ((i = 0; i < n; i++)); do
    read -r cur anon pss < <(gb_pids_rss_kib "$@")
    [[ $cur -gt $max ]] && max=$cur
    [[ $anon -gt $amax ]] && amax=$anon
    if [[ $pss == NA || $pmax == NA ]]; then
      pmax=NA
    elif [[ $pss -gt $pmax ]]; then
      pmax=$pss
    fi
    echo "$max $amax $pmax" >"$out"
    [[ $i -lt $((n - 1)) ]] && sleep 0.5
  done
  return 0
}

# gb_gatebench_load_stats FILE — "throughput_rps p50_ms p99_ms error_percent ok" from a
# `gatebench load --json` record (NA for what is missing).
gb_gatebench_load_stats() {
  python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["measurement"]
pct = {float(p["p"]): p["ms"] for p in m.get("latency", {}).get("percentiles", [])}
na = lambda x: "NA" if x is None else x
print(na(m.get("throughput_rps")), na(pct.get(50.0)), na(pct.get(99.0)),
      na(m.get("error_percent")), na(m.get("outcomes", {}).get("ok")))' "$1"
}

# gb_proxy_summarize TSV BASELINE [BASELINE2] — Markdown table of medians per tool from the
# per-run TSV of proxy-vs-peers.sh (columns tool, ok, rps, p50_ms, p99_ms, error_pct,
# rss_mib, anon_mib, tcp_connects, proxy_cpu_per_100k, proxy_util, gen_util, backend_util, proxy_core_busy,
# gen_core_busy, proxy_core_other, gen_core_other; pss_mib in runs from 2026-11-28 on), the
# ratios of a tool's medians to BASELINE's (req/s, p99, RSS) and to BASELINE2's RSS, then the
# paired per-run ratios (same run number), median and range, and, when the TSV has both
# gatebench and gatebench-before (BEFORE=), the after ÷ before pairs. Runs with ok != 1 are left out.
# With a pss_mib column, PSS and the anon ratios are printed beside RSS and its ratios (older
# files, without it, print their tables as they were published).
gb_proxy_summarize() {
  python3 - "$1" "$2" "${3:-}" <<'PY'
import csv, statistics, sys

path, base, base2 = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path) as f:
    rows = list(csv.DictReader(f, delimiter="\t"))
tools = list(dict.fromkeys(r["tool"] for r in rows))
good = [r for r in rows if r.get("ok") == "1"]

def num(r, col):
    try:
        return float(r[col])
    except (KeyError, TypeError, ValueError):
        return None

for r in rows:
    for side in ("proxy", "gen"):
        b, o = num(r, f"{side}_core_busy"), num(r, f"{side}_core_other")
        r[f"{side}_core_own"] = "NA" if b is None or o is None else f"{b - o:.3f}"
    g, k = num(r, "gen_util"), num(r, "backend_util")
    r["genback_util"] = "NA" if g is None or k is None else f"{g + k:.3f}"

def med(tool, col):
    xs = [num(r, col) for r in good if r["tool"] == tool]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)

def ratio(a, b):
    return None if a is None or not b else a / b

cols = ["rps", "p50_ms", "p99_ms", "error_pct", "rss_mib", "anon_mib", "pss_mib", "tcp_connects", "proxy_cpu_per_100k", "proxy_util",
        "genback_util", "proxy_core_own", "gen_core_own", "proxy_core_other", "gen_core_other"]
st = {t: {c: med(t, c) for c in cols} for t in tools}
B, B2 = st.get(base, {}), st.get(base2, {})
# Private memory and PSS beside RSS: shared binary pages must not decide a comparison.
has_pss = bool(rows) and "pss_mib" in rows[0]
r2 = f" | RSS ÷ {base2}" if base2 else ""
pss_h = " | PSS under load MiB" if has_pss else ""
anon_r = (f" | anon ÷ {base}" + (f" | anon ÷ {base2}" if base2 else "")) if has_pss else ""
print(f"| proxy | runs ok | req/s | p50 ms | p99 ms | errors % | RSS under load MiB | of it anon MiB{pss_h} "
      f"| TCP connects per run | proxy CPU-s per 100k req | req/s ÷ {base} | p99 ÷ {base} | RSS ÷ {base}{r2}{anon_r} "
      "| process CPU: proxy / generator + backend | core busy with the benchmark: proxy / generator "
      "| other load: proxy / generator |")
n_extra = (1 + (2 if base2 else 1)) if has_pss else 0
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if base2 else "")
      + "---:|" * n_extra + "---:|---:|---:|")
for t in tools:
    s = st[t]
    n_ok = sum(r["tool"] == t for r in good)
    n = sum(r["tool"] == t for r in rows)
    pair = lambda a, c: f"{fmt(s[a], '.2f')} / {fmt(s[c], '.2f')}"
    extra = f" | {fmt(ratio(s['rss_mib'], B2.get('rss_mib')), '.3f')}" if base2 else ""
    pss_c = f" | {fmt(s['pss_mib'], '.1f')}" if has_pss else ""
    anon_c = ""
    if has_pss:
        anon_c = f" | {fmt(ratio(s['anon_mib'], B.get('anon_mib')), '.3f')}"
        if base2:
            anon_c += f" | {fmt(ratio(s['anon_mib'], B2.get('anon_mib')), '.3f')}"
    print(f"| {t} | {n_ok}/{n} | {fmt(s['rps'], ',.0f')} | {fmt(s['p50_ms'], '.2f')} "
          f"| {fmt(s['p99_ms'], '.2f')} | {fmt(s['error_pct'], '.2f')} | {fmt(s['rss_mib'], '.1f')} "
          f"| {fmt(s['anon_mib'], '.1f')}{pss_c} | {fmt(s['tcp_connects'], ',.0f')} "
          f"| {fmt(s['proxy_cpu_per_100k'], '.3f')} "
          f"| {fmt(ratio(s['rps'], B.get('rps')), '.3f')} "
          f"| {fmt(ratio(s['p99_ms'], B.get('p99_ms')), '.3f')} "
          f"| {fmt(ratio(s['rss_mib'], B.get('rss_mib')), '.3f')}{extra}{anon_c} "
          f"| {pair('proxy_util', 'genback_util')} | {pair('proxy_core_own', 'gen_core_own')} "
          f"| {pair('proxy_core_other', 'gen_core_other')} |")

runs = {}
for r in good:
    runs.setdefault(r["run"], {})[r["tool"]] = r

def paired(tool, ref, col):
    out = []
    for by in runs.values():
        a, b = num(by.get(tool, {}), col), num(by.get(ref, {}), col)
        if a is not None and b:
            out.append(a / b)
    return out

def show(xs):
    if not xs:
        return "n/a"
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f}, {len(xs)} pairs)"

print()
for t in tools:
    if t == base:
        continue
    line = (f"- paired per-run ratios {t} ÷ {base}, median (range): req/s {show(paired(t, base, 'rps'))}; "
            f"p99 {show(paired(t, base, 'p99_ms'))}; RSS {show(paired(t, base, 'rss_mib'))}")
    if has_pss:
        line += f"; anon {show(paired(t, base, 'anon_mib'))}; PSS {show(paired(t, base, 'pss_mib'))}"
    if base2 and t != base2 and base2 in tools:
        line += f"; RSS ÷ {base2} {show(paired(t, base2, 'rss_mib'))}"
        if has_pss:
            line += f"; anon ÷ {base2} {show(paired(t, base2, 'anon_mib'))}"
    print(line)
# A build from before a change measured in the same rotation (BEFORE= in proxy-vs-peers.sh):
# the after ÷ before pair, per run, is the figure that says whether the change regressed.
if "gatebench" in tools and "gatebench-before" in tools:
    print(f"- paired per-run ratios gatebench ÷ gatebench-before (after ÷ before), median (range): "
          f"req/s {show(paired('gatebench', 'gatebench-before', 'rps'))}; "
          f"p99 {show(paired('gatebench', 'gatebench-before', 'p99_ms'))}; "
          f"proxy CPU per request {show(paired('gatebench', 'gatebench-before', 'proxy_cpu_per_100k'))}; "
          f"anon {show(paired('gatebench', 'gatebench-before', 'anon_mib'))}")
PY
}
