#!/usr/bin/env bash
# Runs gatebench's fuzz targets (fuzz/, cargo-fuzz with libFuzzer) on the pinned stable
# toolchain: sanitizer "none" needs no nightly (the coverage instrumentation libFuzzer uses is
# stable rustc flags; AddressSanitizer is what would need nightly, and the targets are safe
# Rust). Installs what is missing first: cargo-fuzz (`cargo install --locked`) and a C++
# compiler (libFuzzer is C++).
#
#   scripts/fuzz.sh TARGET SECONDS   run one target for SECONDS
#   scripts/fuzz.sh all SECONDS      run every target for SECONDS each, one after another
#   scripts/fuzz.sh list             print the targets
#
# Each run starts from the committed corpus (fuzz/corpus/TARGET, read only) and keeps what it
# finds in fuzz/work/TARGET (not committed; minimise it into the corpus with
# `cargo fuzz cmin`). A crash or a hang (20 s for one input) fails the run with libFuzzer's
# report and leaves the input in fuzz/artifacts/TARGET/. With FUZZ_LOG=FILE, each run's
# summary (target, seconds, libFuzzer's final statistics, result) is appended to FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(h2_conn hpack huffman http1_response sse h1server h1client json_xml ws_frames grpc_frames)

usage() {
    echo "usage: scripts/fuzz.sh TARGET|all SECONDS  (targets: ${TARGETS[*]})" >&2
    exit 2
}

if [[ "${1:-}" == list ]]; then
    printf '%s\n' "${TARGETS[@]}"
    exit 0
fi
[[ $# -eq 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage
if [[ "$1" == all ]]; then
    selected=("${TARGETS[@]}")
else
    [[ " ${TARGETS[*]} " == *" $1 "* ]] || usage
    selected=("$1")
fi
seconds=$2

if ! command -v c++ >/dev/null 2>&1; then
    echo "== installing a C++ compiler (libFuzzer is C++)"
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq g++ >/dev/null
    else
        echo "scripts/fuzz.sh: no C++ compiler (c++); install g++ or clang++" >&2
        exit 2
    fi
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

echo "== cargo fuzz build -s none (toolchain: $(rustc --version))"
cargo fuzz build -s none

status=0
for target in "${selected[@]}"; do
    work="fuzz/work/$target"
    mkdir -p "$work" "fuzz/corpus/$target"
    log=$(mktemp)
    echo "== $target for ${seconds}s"
    # libFuzzer's inputs grow to 4 KiB unless told; h1client takes heads up to the proxy's
    # 64 KiB limit (its input: two bytes, then up to 96 KiB of response).
    max_len=()
    [[ "$target" == h1client ]] && max_len=(-max_len=$((96 * 1024 + 2)))
    set +e
    cargo fuzz run -s none "$target" "$work" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 "${max_len[@]}" \
        -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    if [[ $rc -eq 0 ]]; then
        result=clean
    else
        result="FAILED (exit $rc)"
        status=1
        tail -n 60 "$log"
    fi
    summary=$(
        echo "target: $target"
        echo "seconds: $seconds"
        grep -E '^(Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|slowest_unit_time_sec|peak_rss_mb))' "$log" || true
        echo "result: $result"
    )
    echo "$summary"
    if [[ -n "${FUZZ_LOG:-}" ]]; then
        printf '%s\n\n' "$summary" >>"$FUZZ_LOG"
    fi
    rm -f "$log"
done
exit $status
