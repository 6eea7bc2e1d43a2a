#!/usr/bin/env bash
# HTTP/2 conformance of gatebench's built-in services with h2spec (RFC 7540/9113, HPACK).
#
# Installs h2spec from the Go module proxy when missing, starts each service on a free loopback
# port — over h2c (prior knowledge) and over TLS (ALPN h2, self-signed certificate) — runs every
# h2spec case against it, and stops it by PID. Exit status 0 only when every case passed.
#
#   bench/h2-conformance.sh                  # the echo back-end and the proxy (in front of an echo)
#   SERVICES="echo" bench/h2-conformance.sh
#
# One case is known and explained in docs/conformance.md: over h2c, on a port that serves HTTP/1.1
# and h2c together, h2spec's "invalid connection preface" (3.5/2) is an invalid HTTP/1.1 request
# line and gets HTTP/1.1's 400 before the close. Only that case on h2c is accepted; any other
# failure makes the script exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVICES=${SERVICES:-echo proxy}
GATEBENCH=${GATEBENCH:-target/release/gatebench}
H2SPEC_VERSION=${H2SPEC_VERSION:-v2.6.0}

if ! command -v go >/dev/null; then
  echo "h2-conformance: Go is needed to install h2spec (apt-get install -y golang)" >&2
  exit 2
fi
GOBIN_DIR=$(go env GOPATH)/bin
H2SPEC=$(command -v h2spec || true)
if [ -z "$H2SPEC" ] && [ -x "$GOBIN_DIR/h2spec" ]; then H2SPEC=$GOBIN_DIR/h2spec; fi
if [ -z "$H2SPEC" ]; then
  echo "== installing h2spec $H2SPEC_VERSION (Go module github.com/summerwind/h2spec/cmd/h2spec)"
  GOFLAGS=-mod=mod go install "github.com/summerwind/h2spec/cmd/h2spec@$H2SPEC_VERSION" \
    || GOFLAGS=-mod=mod go install github.com/summerwind/h2spec/cmd/h2spec@latest
  H2SPEC=$GOBIN_DIR/h2spec
fi
[ -x "$GATEBENCH" ] || cargo build --release -p gatebench

work=$(mktemp -d)
pid=""
backend_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  for p in $pid $backend_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts `gatebench serve ARGS...` on port 0, writing its output to $work/NAME.out; sets $port.
launch() {
  local name=$1
  shift
  "$GATEBENCH" serve "$@" --port 0 >"$work/$name.out" 2>&1 &
  launched=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(grep -o 'listening on https\?://127\.0\.0\.1:[0-9]*' "$work/$name.out" | head -1 | sed 's/.*://' || true)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "h2-conformance: gatebench serve $* did not start:" >&2
  cat "$work/$name.out" >&2
  exit 2
}

# Starts SERVICE with ARGS (the proxy in front of a fresh cleartext echo); sets $pid and $port.
start() {
  local service=$1
  shift
  if [ "$service" = proxy ]; then
    launch backend echo --threads 1
    backend_pid=$launched
    launch serve proxy --threads 1 --upstream "http://127.0.0.1:$port" "$@"
  else
    launch serve "$service" "$@"
  fi
  pid=$launched
}

stop() {
  for p in $pid $backend_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pid=""
  backend_pid=""
}

failed=0
printf '| service | transport | cases | passed | failed |\n|---|---|---|---|---|\n' >"$work/table.md"
for service in $SERVICES; do
  for transport in h2c tls; do
    if [ "$transport" = tls ]; then
      start "$service" --http2 --tls
      flags=(-t -k)
    else
      start "$service" --http2
      flags=()
    fi
    out="$work/$service-$transport.txt"
    "$H2SPEC" -h 127.0.0.1 -p "$port" "${flags[@]}" -o 5 >"$out" 2>&1 || true
    stop
    summary=$(grep -E '^[0-9]+ tests, ' "$out" | tail -1)
    total=$(echo "$summary" | sed -E 's/^([0-9]+) tests.*/\1/')
    passed=$(echo "$summary" | sed -E 's/.* ([0-9]+) passed.*/\1/')
    nfail=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    echo "== $service over $transport: $summary"
    # The one explained case (docs/conformance.md): 3.5/2 over h2c.
    unexplained=$(grep -E '^ +× [0-9]+: ' "$out" | sort -u | grep -v -E '× 2: Sends invalid connection preface' || true)
    if [ "$transport" = tls ]; then
      unexplained=$(grep -E '^ +× [0-9]+: ' "$out" | sort -u || true)
    fi
    if [ -z "$summary" ] || [ -n "$unexplained" ]; then
      failed=1
      grep -B3 -A8 '×' "$out" || cat "$out"
    elif [ "$nfail" != 0 ]; then
      echo "   (the one failure is 3.5/2, explained in docs/conformance.md)"
    fi
    printf '| %s | %s | %s | %s | %s |\n' "$service" "$transport" "${total:-?}" "${passed:-?}" "${nfail:-?}" >>"$work/table.md"
  done
done
echo
cat "$work/table.md"
exit "$failed"
