#!/usr/bin/env bash
# Hostile clients against gatebench's proxy, nginx and HAProxy, side by side (issue 23): what each
# does to an idle HTTP/2 preface, a stalled HTTP/2 body, an HTTP/1.1 and an HTTP/2 client that
# stop reading, rapid reset (CVE-2023-44487), a PING flood, a trickled head, and a connection
# flood past the connection cap.
#
#   bench/hostile-clients.sh
#   TIMER=5 CAP=20 bench/hostile-clients.sh
#
# Every proxy sits in front of the same `gatebench serve echo` (GETs answer SIZE bytes, every
# answer held DELAY) and gets the same timers, TIMER seconds each, and the same connection cap
# (MAXCONN):
#   gatebench: serve proxy --http2 --client-header-timeout/--client-body-timeout/--send-timeout/
#              --idle-timeout TIMER --max-connections MAXCONN (one port, HTTP/1.1 and h2c)
#   nginx:     client_header_timeout, client_body_timeout, send_timeout, keepalive_timeout TIMER,
#              worker_connections MAXCONN; HTTP/1.1 on one port, h2c (`listen … http2`) on another
#   HAProxy:   timeout http-request, client, http-keep-alive TIMER; maxconn MAXCONN (one port;
#              HAProxy takes h2c by its preface)
# The attack clients are bench/hostile_clients.py (frames by hand, 127.0.0.1 only, each shape
# bounded by CAP seconds and its own count limit). Raw lines go to
# bench/results/hostile-clients-<stamp>.tsv; bench/hostile_clients_table.py prints the Markdown
# table from them (stdout and the .md beside it).
#
# Environment: TIMER (3), CAP (10), MAXCONN (256), FLOOD (300 connections), SIZE (33554432: more
# than every socket buffer between the upstream and a client that does not read), DELAY (200ms),
# SHAPES (all), TARGETS ("gatebench nginx haproxy"), GATEBENCH (target/release/gatebench, built
# if missing), KEEP_TMP.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

TIMER=${TIMER:-3}
CAP=${CAP:-10}
MAXCONN=${MAXCONN:-256}
FLOOD=${FLOOD:-300}
SIZE=${SIZE:-33554432}
DELAY=${DELAY:-200ms}
SHAPES=${SHAPES:-idle-h2-preface stalled-h2-body slow-reader-h1 slow-reader-h2 rapid-reset ping-flood trickled-head connection-flood}
TARGETS=${TARGETS:-gatebench nginx haproxy}
for v in TIMER CAP MAXCONN FLOOD SIZE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || gb_die "$v must be a positive integer, got '${!v}'"
done

gb_init
gb_need_cmd python3
gb_need_gatebench
for t in $TARGETS; do
  case $t in
    nginx) gb_need_nginx ;;
    haproxy) gb_need_haproxy ;;
    gatebench) ;;
    *) gb_die "unknown target '$t' (gatebench, nginx, haproxy)" ;;
  esac
done

gb_gatebench_serve "$GB_TMP/echo" 1 echo --port 0 --threads 1 --size "$SIZE" --delay "$DELAY"
ECHO_PORT=$GB_SERVE_PORT

declare -A H1 H2C
for t in $TARGETS; do
  case $t in
    gatebench)
      gb_gatebench_serve "$GB_TMP/proxy" 0 proxy --port 0 --threads 1 --http2 \
        --upstream "http://127.0.0.1:$ECHO_PORT" \
        --client-header-timeout "${TIMER}s" --client-body-timeout "${TIMER}s" \
        --send-timeout "${TIMER}s" --idle-timeout "${TIMER}s" --max-connections "$MAXCONN"
      H1[$t]=$GB_SERVE_PORT
      H2C[$t]=$GB_SERVE_PORT
      ;;
    nginx)
      dir="$GB_TMP/nginx"
      mkdir -p "$dir/temp"
      H1[$t]=$(gb_free_port)
      H2C[$t]=$(gb_free_port)
      cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections $MAXCONN; }
http {
    access_log off;
    client_header_timeout ${TIMER}s;
    client_body_timeout ${TIMER}s;
    send_timeout ${TIMER}s;
    keepalive_timeout ${TIMER}s;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    upstream backend { server 127.0.0.1:$ECHO_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:${H1[$t]};
        listen 127.0.0.1:${H2C[$t]} http2;
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://backend;
        }
    }
}
CONF
      gb_nginx_start "$dir" 0 "${H1[$t]}"
      ;;
    haproxy)
      conf="$GB_TMP/haproxy.cfg"
      H1[$t]=$(gb_free_port)
      H2C[$t]=${H1[$t]}
      cat >"$conf" <<CONF
global
    nbthread 1
    maxconn $MAXCONN
defaults
    mode http
    option http-keep-alive
    timeout connect 5s
    timeout client ${TIMER}s
    timeout server 60s
    timeout http-request ${TIMER}s
    timeout http-keep-alive ${TIMER}s
frontend fe
    bind 127.0.0.1:${H1[$t]}
    maxconn $MAXCONN
    default_backend be
backend be
    server s1 127.0.0.1:$ECHO_PORT
CONF
      gb_haproxy_start "$conf" 0 "${H1[$t]}"
      ;;
  esac
done

out=$(gb_results_file hostile-clients)
{
  printf '# timer %ss, cap %ss, maxconn %s, flood %s, size %s, delay %s; %s\n' \
    "$TIMER" "$CAP" "$MAXCONN" "$FLOOD" "$SIZE" "$DELAY" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '# versions: gatebench %s; %s; %s\n' "$(git -C "$GB_ROOT" rev-parse --short HEAD)" \
    "$(nginx -v 2>&1 | tr -d '\n')" "$(haproxy -v | head -n1 | cut -d' ' -f1-3)"
  printf 'shape\ttarget\toutcome\tseconds\tcount\tdetail\n'
} >"$out"
for shape in $SHAPES; do
  for t in $TARGETS; do
    gb_log "$shape against $t"
    FLOOD=$FLOOD python3 "$here/hostile_clients.py" "$shape" "$t" "${H1[$t]}" "${H2C[$t]}" "$CAP" \
      | tee -a "$out" >&2
    # Let each target settle (closing connections, freeing upstreams) before the next shape.
    sleep 1
  done
done
gb_log "raw lines: $out"
python3 "$here/hostile_clients_table.py" "$out" | tee "${out%.tsv}.md"
