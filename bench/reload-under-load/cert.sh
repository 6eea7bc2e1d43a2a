# A self-signed certificate for the TLS scenarios of bench/reload-under-load.toml (the load
# does not verify it), written once into DIR: cert.pem, key.pem, and both in one file for
# HAProxy (haproxy.pem).
set -eu
dir=$1
[ -s "$dir/haproxy.pem" ] && exit 0
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj /CN=127.0.0.1 -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
cat "$dir/cert.pem" "$dir/key.pem" >"$dir/haproxy.pem"
