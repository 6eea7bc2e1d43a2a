#!/usr/bin/env bash
# HTTP/2 conformance of gatebench's built-in services with h2spec (RFC 7540/9113, HPACK).
#
# Installs h2spec from the Go module proxy when missing, starts each service on a free loopback
# port — over h2c (prior knowledge) and over TLS (ALPN h2, self-signed certificate) — runs every
# h2spec case against it, and stops it by PID. Exit status 0 only when every case passed.
#
#   bench/h2-conformance.sh            # the echo backend
#   SERVICES="echo" bench/h2-conformance.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SERVICES=${SERVICES:-echo}
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
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Starts `gatebench serve ARGS...` on port 0 and sets $pid and $port.
start() {
  "$GATEBENCH" serve "$@" --port 0 >"$work/serve.out" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(grep -o 'listening on https\?://127\.0\.0\.1:[0-9]*' "$work/serve.out" | head -1 | sed 's/.*://' || true)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "h2-conformance: gatebench serve $* did not start:" >&2
  cat "$work/serve.out" >&2
  exit 2
}

stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
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
    if [ -z "$summary" ] || [ "$nfail" != 0 ]; then
      failed=1
      grep -B3 -A8 '×' "$out" || cat "$out"
    fi
    printf '| %s | %s | %s | %s | %s |\n' "$service" "$transport" "${total:-?}" "${passed:-?}" "${nfail:-?}" >>"$work/table.md"
  done
done
echo
cat "$work/table.md"
exit "$failed"
