#!/usr/bin/env bash
# Opens a gatebench report.html in headless Chromium and checks that it renders: every plot
# drew something, the page logged no console error, it fetched nothing, and a screenshot was
# taken.
#
#   scripts/check-report-html.sh                 # builds gatebench, runs a small suite, checks it
#   scripts/check-report-html.sh RESULTS_DIR     # checks RESULTS_DIR/report.html
#   scripts/check-report-html.sh path/report.html
#
# The page checks itself once loaded (an inline script, see crates/report/src/html.rs): it
# writes `data-plot-check="ok: N plots"` (or `error: …`) on <html> and console.error()s any
# problem. This script reads that attribute from Chromium's --dump-dom, compares N with the
# number of <svg> elements in the file, and fails on any console message Chromium logs for the
# page. Installs Debian's `chromium` package when no Chromium is found (needs root or sudo).
#
# Environment: CHECK_OUT (where the screenshot and logs go; default a temporary directory that
# is kept), CHROMIUM (the browser binary), KEEP=1 keeps the generated results directory.
# Exit status: 0 the page rendered, 1 a check failed, 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${CHECK_OUT:-$(mktemp -d -t gatebench-html-check.XXXXXX)}
mkdir -p "$out"
fail() { echo "check-report-html: FAIL: $*" >&2; exit 1; }
die() { echo "check-report-html: $*" >&2; exit 2; }

# 1. The page to check.
target=${1:-}
if [[ -z "$target" ]]; then
    echo "check-report-html: building gatebench and running a small suite (about 30 s)"
    (cd "$here" && cargo build -q -p gatebench) || die "cargo build failed"
    suite="$out/suite.toml"
    cat >"$suite" <<'EOF'
[suite]
name = "report check: echo with 1 and 2 threads"
warmup = "1s"
duration = "2s"
repeats = 2

[matrix]
users = [2, 8]
sizes = [50]

[load]
threads = 1

[[scenario]]
name = "echo-1t"
title = "Echo, 1 worker thread"
backend = { serve = "echo --port {port} --delay {delay} --threads 1" }

[[scenario]]
name = "echo-2t"
title = "Echo, 2 worker threads"
backend = { serve = "echo --port {port} --delay {delay} --threads 2" }
EOF
    rm -rf "$out/results"
    "$here/target/debug/gatebench" run "$suite" --out "$out/results" >"$out/run.log" 2>&1 ||
        die "gatebench run failed: see $out/run.log"
    target="$out/results"
fi
[[ -d "$target" ]] && target="$target/report.html"
[[ -f "$target" ]] || die "no such file: $target"
page=$(cd "$(dirname "$target")" && pwd)/$(basename "$target")

# 2. Chromium, installed when missing.
browser=${CHROMIUM:-}
if [[ -z "$browser" ]]; then
    for b in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
    done
fi
if [[ -z "$browser" ]]; then
    echo "check-report-html: installing Debian's chromium package"
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >"$out/apt.log" 2>&1 || die "apt-get update failed: see $out/apt.log"
    $sudo apt-get install -y -qq chromium >>"$out/apt.log" 2>&1 ||
        die "apt-get install chromium failed: see $out/apt.log"
    browser=chromium
fi
echo "check-report-html: $("$browser" --version 2>/dev/null || echo "$browser")"

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --disable-extensions
    --hide-scrollbars --mute-audio --enable-logging=stderr --v=0)

# 3. The DOM after the page's own check ran, and everything Chromium logged.
profile=$(mktemp -d -t gatebench-chromium.XXXXXX)
trap 'rm -rf "$profile"' EXIT
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$profile" --virtual-time-budget=5000 \
    --dump-dom "file://$page" >"$out/dom.html" 2>"$out/chromium-dom.log" ||
    die "chromium --dump-dom failed: see $out/chromium-dom.log"

# 4. A screenshot, full width, tall enough to show the summary and the first cells.
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$profile" --window-size=1280,3000 \
    --screenshot="$out/report.png" "file://$page" >"$out/chromium-shot.log" 2>&1 ||
    die "chromium --screenshot failed: see $out/chromium-shot.log"

# 5. The checks.
svgs=$(grep -o '<svg ' "$page" | wc -l)
files=$(find "$(dirname "$page")/plots" -name '*.svg' 2>/dev/null | wc -l)
verdict=$(grep -o 'data-plot-check="[^"]*"' "$out/dom.html" | head -n 1 | sed 's/^data-plot-check="//; s/"$//')
echo "check-report-html: page self-check: ${verdict:-(none)}; $svgs inline SVG plots, $files SVG files"
[[ -n "$verdict" ]] || fail "the page's check did not run (no data-plot-check in the DOM)"
[[ "$verdict" == "ok: $svgs plots" ]] || fail "page self-check says: $verdict"
[[ "$svgs" -gt 0 ]] || fail "the page has no plot"
[[ "$files" -eq "$svgs" ]] || fail "$svgs plots in the page but $files SVG files in plots/"
if grep -h 'CONSOLE' "$out/chromium-dom.log" "$out/chromium-shot.log" >"$out/console.log"; then
    cat "$out/console.log" >&2
    fail "the page logged to the console (see above)"
fi
if grep -Eo '(src|href)="(https?:)?//[^"]*"' "$page" | head -n 3 | grep -q .; then
    fail "the page refers to an external resource"
fi
[[ -s "$out/report.png" ]] || fail "no screenshot was written"
size=$(wc -c <"$out/report.png")
[[ "$size" -gt 20000 ]] || fail "the screenshot is suspiciously small ($size bytes)"
echo "check-report-html: ok: $page rendered; screenshot $out/report.png ($size bytes)"
