#!/usr/bin/env bash
# Builds gatebench, starts the built-in echo backend on a free loopback port, loads it for a few
# seconds in both arrival models, and stops the backend (by its PID) whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-5s}
cargo build --release -p gatebench
BIN=target/release/gatebench

log=$(mktemp)
"$BIN" serve echo --port 0 >"$log" 2>&1 &
echo_pid=$!
trap 'kill "$echo_pid" 2>/dev/null; wait "$echo_pid" 2>/dev/null || true; rm -f "$log"' EXIT

url=""
for _ in $(seq 1 50); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "quickstart: the echo backend did not start:" >&2
  cat "$log" >&2
  exit 2
fi

echo "== closed model: 50 connections for $DURATION against $url"
"$BIN" load "$url" -c 50 -d "$DURATION" --warmup 1s
echo
echo "== open model: 5,000 req/s for $DURATION, POSTing 1 KiB JSON payloads, every echo verified"
"$BIN" load "$url" -c 50 -d "$DURATION" -R 5000 -m POST --payload-size 1024 --verify
