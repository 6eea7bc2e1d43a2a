#!/usr/bin/env bash
# The opt-in ordered release binary: builds `gatebench` for release, traces the functions it
# executes in the workloads whose memory matters, and links it again with those functions laid
# out first in .text, in one run (docs/build.md, "The ordered release binary"). Nothing is
# written into the repository: the order, the linker script and the binary go to
# target/release-ordered/ (under Cargo's target directory).
#
#   scripts/release-ordered.sh     # prints the path of the ordered binary:
#                                  # target/release-ordered/gatebench
#
# The default build (`cargo build --release`) links plainly: an order traced once and kept in
# the repository goes stale with every code change, so this step traces the very build it
# links, and is worth running where the services' memory counts (the ordered proxy maps ~3 MiB
# less of the binary under load; docs/build.md, "Measured").
#
# 1. `cargo build --release -p gatebench` (target/release/gatebench, linked plainly).
# 2. The binary must have been linked by lld (`Linker: LLD` in its .comment section):
#    --symbol-ordering-file is an lld option. rustc links x86_64- and aarch64-unknown-linux-gnu
#    with its bundled rust-lld by default (Rust 1.90+, aarch64 1.95+) unless a linker is
#    configured (RUSTFLAGS, .cargo/config.toml); with any other linker the step stops here.
# 3. Trace: every process is run under valgrind's callgrind (installed with apt if missing),
#    which records each function that executes, by its mangled symbol name (--demangle=no),
#    with its instruction count. The services are dumped once when they report their address
#    (the startup: argument parsing, tracing, runtime) and again when they stop (the serving),
#    each under a short native `gatebench load` on loopback:
#    serve proxy (HTTP/1.1 clients: the measured benchmark) and serve proxy --http2 (h2c),
#    serve echo --http2 (HTTP/1.1 then h2c), serve balance --http2 over two echo backends
#    (HTTP/1.1 then h2c), and gatebench load itself (HTTP/1.1, then --h2c) against a native
#    echo. A copy of the binary without debuginfo is traced (same symbols; valgrind starts in
#    seconds instead of reading 50 MB of line tables).
# 4. scripts/symbol_order.py merges the dumps into target/release-ordered/symbol-order.txt:
#    functions executed only while starting first, then those executed while serving, the
#    proxy's first, then the echo backend's, the balancer's and the generator's (each group by
#    instruction count, hottest first); only the binary's own text symbols are kept (`nm`). It
#    also writes target/release-ordered/symbol-order.ld, a linker script that places ThinLTO's
#    promoted functions (`NAME.llvm.HASH`) by a pattern without the HASH.
# 5. `cargo rustc --release -p gatebench --bin gatebench -- -C link-arg=-Wl,--symbol-ordering-
#    file=…,--no-warn-symbol-ordering,--script=…`: only the gatebench crate is compiled and
#    linked again (its dependencies are fresh from step 1), with the traced functions first in
#    .text. The result is copied to target/release-ordered/gatebench and checked (how many of
#    the order's names it holds); the plain build is kept as target/release-ordered/
#    gatebench.plain (bench/binary-layout.sh compares the two). cargo rustc's extra arguments
#    are not part of Cargo's fingerprint, so the plain build is then copied back to
#    target/release/gatebench (and its hard link in target/release/deps/): a later `cargo
#    build --release` finds it fresh and it is what it says.
#
# Environment: SECS (3: seconds of load per traced phase), KEEP_TMP (1: keep the temp dir on
# failure). Binds port 0 on 127.0.0.1 only; stops every process by PID.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

SECS=${SECS:-3}
[[ $SECS =~ ^[1-9][0-9]*$ ]] || gb_die "SECS must be a positive integer, got '$SECS'"

gb_init
command -v cargo >/dev/null || gb_die "cargo not found"
gb_need_cmd readelf binutils
gb_need_cmd objcopy binutils
gb_need_cmd nm binutils
gb_need_cmd python3 python3

# 1. The plain release build.
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
out="$target/release-ordered"
# `-Wl,` splits its argument at commas.
[[ $out != *,* ]] || gb_die "the target directory's path has a comma ($target): -Wl, cannot pass it"
GATEBENCH="$target/release/gatebench"
# `cargo rustc`'s extra arguments are not part of Cargo's fingerprint: after the ordered link
# (step 5) Cargo would take the ordered binary in target/release for the plain build, so step 5
# puts the plain one back. A run stopped in between leaves this marker: put it back now.
relinking="$out/.relinking"
if [[ -e $relinking ]]; then
  [[ -x $out/gatebench.plain && -e $(<"$relinking") ]] ||
    gb_die "a previous run stopped while relinking and the plain binary is gone: touch" \
      "crates/cli/src/main.rs and run again (the gatebench crate must be compiled again)"
  gb_log "a previous run stopped while relinking: putting the plain build back"
  cp --remove-destination "$out/gatebench.plain" "$(<"$relinking")"
  ln -f "$(<"$relinking")" "$GATEBENCH"
  rm -f "$relinking"
fi
gb_log "cargo build --release -p gatebench"
cargo build --release -p gatebench >&2
[[ -x $GATEBENCH ]] || gb_die "$GATEBENCH missing after cargo build --release"

# 2. lld only.
# (grep without -q: it reads all of readelf's output, no SIGPIPE under pipefail.)
linked_by_lld() { readelf -p .comment "$1" 2>/dev/null | grep 'Linker: LLD' >/dev/null; }
linked_by_lld "$GATEBENCH" || gb_die "$GATEBENCH was not linked by lld (no 'Linker: LLD' in" \
  "its .comment section): the symbol ordering file is an lld option, and this toolchain or" \
  "configuration links with another linker (a configured linker, RUSTFLAGS, or a target where" \
  "rustc's default is not its bundled rust-lld). No ordered binary is written; the plain one" \
  "is $GATEBENCH."
gb_log "$GATEBENCH: linked by $(readelf -p .comment "$GATEBENCH" | grep -o 'Linker: LLD [0-9.]*')"
# The plain build kept beside the ordered one, to compare them (bench/binary-layout.sh).
mkdir -p "$out"
rm -f "$out/gatebench" "$out/gatebench.plain" "$out/symbol-order.txt" "$out/symbol-order.ld"
cp "$GATEBENCH" "$out/gatebench.plain"

# 3. Trace.
gb_need_cmd valgrind valgrind
gb_need_cmd callgrind_control valgrind
objcopy --strip-debug "$GATEBENCH" "$GB_TMP/gatebench"
GB="$GB_TMP/gatebench"
dumps="$GB_TMP/dumps"
mkdir -p "$dumps"

# wait_listening LOG PID — the port from the service's "listening on http://127.0.0.1:PORT".
wait_listening() {
  local log=$1 pid=$2 i line=""
  for ((i = 0; i < 600; i++)); do
    line=$(grep -m1 -o 'listening on http://127\.0\.0\.1:[0-9]*' "$log" 2>/dev/null || true)
    [[ -n $line ]] && break
    gb_pid_alive "$pid" || break
    sleep 0.1
  done
  [[ -n $line ]] || gb_die "pid $pid did not report a listening address: $(tail -n3 "$log.err" 2>/dev/null)"
  echo "${line##*:}"
}

# native_serve LOG ARGS... — an untraced service; sets PORT and PID.
native_serve() {
  local log=$1
  shift
  "$GB" serve "$@" </dev/null >"$log" 2>"$log.err" &
  PID=$!
  gb_track_pid "$PID"
  PORT=$(wait_listening "$log" "$PID")
}

# traced_serve NAME ARGS... — a service under callgrind, its startup dumped once it listens;
# sets PORT and PID. The dumps are $dumps/NAME.out.1 (startup) and $dumps/NAME.out (the rest).
traced_serve() {
  local name=$1
  shift
  valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-line=no \
    --callgrind-out-file="$dumps/$name.out" "$GB" serve "$@" \
    </dev/null >"$GB_TMP/$name.log" 2>"$GB_TMP/$name.log.err" &
  PID=$!
  gb_track_pid "$PID"
  PORT=$(wait_listening "$GB_TMP/$name.log" "$PID")
  callgrind_control --dump=startup "$PID" >"$GB_TMP/$name.ctl" 2>&1 ||
    gb_die "callgrind_control --dump $PID failed: $(tail -n3 "$GB_TMP/$name.ctl")"
  gb_log "traced serve $* (pid $PID, port $PORT): startup dumped"
}

# load URL ARGS... — a native `gatebench load` for SECS seconds, 1 KiB POST bodies.
load() {
  local url=$1
  shift
  "$GB" load "$url" -c 20 -d "${SECS}s" -t 1 -q -m POST --payload-size 1024 "$@" \
    >/dev/null 2>"$GB_TMP/load.err" || gb_die "gatebench load $url $* failed: $(tail -n3 "$GB_TMP/load.err")"
}

# stop PID — SIGTERM and wait: callgrind writes the final dump as the process exits.
stop() {
  gb_stop_pid "$1"
  gb_untrack_pid "$1"
}

# 3a. serve proxy as the benchmark runs it (HTTP/1.1 clients), then with --http2 (h2c clients);
#    the backend is a native echo.
native_serve "$GB_TMP/echo0.log" echo --port 0 --threads 1 --http2
echo_pid=$PID echo_url="http://127.0.0.1:$PORT"
traced_serve proxy-h1 proxy --port 0 --threads 1 --upstream "$echo_url"
load "http://127.0.0.1:$PORT/"
stop "$PID"
traced_serve proxy-h2c proxy --port 0 --threads 1 --http2 --upstream "$echo_url"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"

# 3b. serve echo (HTTP/1.1, then h2c).
traced_serve echo echo --port 0 --threads 1 --http2
load "http://127.0.0.1:$PORT/"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"

# 3c. serve balance over two echo backends (HTTP/1.1, then h2c).
native_serve "$GB_TMP/echo1.log" echo --port 0 --threads 1 --http2
echo1_pid=$PID echo1_url="http://127.0.0.1:$PORT"
traced_serve balance balance --port 0 --threads 1 --http2 --upstream "$echo_url" --upstream "$echo1_url"
load "http://127.0.0.1:$PORT/"
load "http://127.0.0.1:$PORT/" --h2c
stop "$PID"
stop "$echo1_pid"

# 3d. gatebench load itself against the native echo (HTTP/1.1, then h2c); one dump per run.
for proto in h1 h2c; do
  extra=()
  [[ $proto == h2c ]] && extra=(--h2c)
  valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-line=no \
    --callgrind-out-file="$dumps/load-$proto.out" "$GB" load "$echo_url/" -c 20 -d "${SECS}s" \
    -t 1 -q -m POST --payload-size 1024 "${extra[@]}" </dev/null >/dev/null 2>"$GB_TMP/vload.err" &
  pid=$!
  gb_track_pid "$pid"
  wait "$pid" || gb_die "traced gatebench load ($proto) failed: $(tail -n3 "$GB_TMP/vload.err")"
  gb_untrack_pid "$pid"
  gb_log "traced gatebench load ($proto)"
done
stop "$echo_pid"

# 4. Merge: the binary's defined function symbols, as lld sees them: "NAME SIZE" (hex).
nm -S --defined-only "$GB" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ { print $4, $2 } NF == 3 && $2 ~ /^[tTwW]$/ { print $3, 0 }' >"$GB_TMP/text-symbols"
order="$out/symbol-order.txt" script="$out/symbol-order.ld"
python3 "$root/scripts/symbol_order.py" --binary "$GB" --symbols "$GB_TMP/text-symbols" \
  --out "$order" --script-out "$script" \
  startup:"$dumps/proxy-h1.out.1" serving:"$dumps/proxy-h1.out" \
  startup:"$dumps/proxy-h2c.out.1" serving:"$dumps/proxy-h2c.out" \
  startup:"$dumps/echo.out.1" serving:"$dumps/echo.out" \
  startup:"$dumps/balance.out.1" serving:"$dumps/balance.out" \
  run:"$dumps/load-h1.out" run:"$dumps/load-h2c.out"
gb_log "wrote $order and $script"

# 5. Link again with the order: only the gatebench crate is rebuilt.
link="-Wl,--symbol-ordering-file=$order,--no-warn-symbol-ordering"
[[ -s $script ]] && link+=",--script=$script"
# Cargo keeps the binary in target/release/deps/ and hard-links it to target/release/gatebench;
# cargo rustc overwrites both. They get the plain build back once the ordered one is copied out.
deps_bin=$(find "$target/release/deps" -maxdepth 1 -type f -samefile "$GATEBENCH" | head -n1)
[[ -n $deps_bin ]] || gb_die "no file in $target/release/deps is $GATEBENCH (hard link)"
echo "$deps_bin" >"$relinking"
gb_log "cargo rustc --release -p gatebench --bin gatebench -- -C link-arg=$link"
rc=0
cargo rustc --release -p gatebench --bin gatebench -- -C "link-arg=$link" >&2 || rc=$?
[[ $rc -ne 0 ]] || cp "$GATEBENCH" "$out/gatebench.tmp"
cp --remove-destination "$out/gatebench.plain" "$deps_bin"
ln -f "$deps_bin" "$GATEBENCH"
rm -f "$relinking"
[[ $rc -eq 0 ]] || gb_die "cargo rustc (the ordered link) failed; $GATEBENCH is the plain build"
linked_by_lld "$out/gatebench.tmp" || gb_die "the ordered link was not made by lld"
mv "$out/gatebench.tmp" "$out/gatebench"
"$out/gatebench" --version >/dev/null || gb_die "$out/gatebench --version failed"
# The order's names the ordered binary holds, and whether the linker placed them first: of its
# text symbols by address, the first as many as it holds should be nearly all from the order
# (or other copies of a ThinLTO-promoted one, `NAME.llvm.*`, which the linker script's patterns
# place with it).
nm -n --defined-only "$out/gatebench" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $3 }' >"$GB_TMP/ordered-symbols"
read -r found total first < <(python3 - "$order" "$GB_TMP/ordered-symbols" <<'PY'
import sys
order = [l.strip() for l in open(sys.argv[1]) if l.strip()]
by_addr = [l.strip() for l in open(sys.argv[2]) if l.strip()]
want = set(order)
stem = lambda n: n[: n.find(".llvm.") + 6] if ".llvm." in n else None
stems = {stem(n) for n in order} - {None}
held = want.intersection(by_addr)
head = by_addr[: len(held)]
print(len(held), len(order), sum(n in want or stem(n) in stems for n in head))
PY
)
gb_log "$found of $total ordered names are functions of the ordered binary; $first of its first" \
  "$found text symbols by address are ordered ones"
[[ $found -gt 0 && $((first * 10)) -ge $((found * 9)) ]] ||
  gb_die "the ordered link did not place the traced functions first ($first of $found)"
gb_log "ordered binary: $out/gatebench"
echo "$out/gatebench"
