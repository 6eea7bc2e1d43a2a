#!/usr/bin/env bash
# Opens every page of a gatebench trend site (crates/history/src/site.rs) in headless Chromium
# from the file system and checks that it renders: the page's own check says every plot drew
# its lines (`data-plot-check="ok: N plots"` with N the number of <svg> in the file), the page
# logged nothing to the console, refers to nothing outside the site, and one screenshot is
# taken (of the first scenario page) to look at.
#
#   scripts/check-site.sh            # builds the synthetic demo site and checks it
#   scripts/check-site.sh SITE_DIR   # checks SITE_DIR (its index.html and every page below)
#
# Environment: CHECK_OUT (screenshot and logs; default a kept temporary directory), CHROMIUM
# (the browser binary). Installs Debian's `chromium` when none is found (needs root or sudo).
# Exit status: 0 every page rendered, 1 a check failed, 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${CHECK_OUT:-$(mktemp -d -t gatebench-site-check.XXXXXX)}
mkdir -p "$out"
fail() { echo "check-site: FAIL: $*" >&2; exit 1; }
die() { echo "check-site: $*" >&2; exit 2; }

site=${1:-}
if [[ -z "$site" ]]; then
    site="$out/site"
    rm -rf "$site"
    (cd "$here" && cargo run -q -p gatebench-history --example demo-site -- "$site") ||
        die "could not build the demo site"
fi
[[ -f "$site/index.html" ]] || die "no index.html in $site"
site=$(cd "$site" && pwd)

browser=${CHROMIUM:-}
if [[ -z "$browser" ]]; then
    for b in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
    done
fi
if [[ -z "$browser" ]]; then
    echo "check-site: installing Debian's chromium package"
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >"$out/apt.log" 2>&1 || die "apt-get update failed: see $out/apt.log"
    $sudo apt-get install -y -qq chromium >>"$out/apt.log" 2>&1 ||
        die "apt-get install chromium failed: see $out/apt.log"
    browser=chromium
fi

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --disable-extensions
    --hide-scrollbars --mute-audio --enable-logging=stderr --v=0)
profile=$(mktemp -d -t gatebench-chromium.XXXXXX)
trap 'rm -rf "$profile"' EXIT

pages=0
plots=0
while IFS= read -r page; do
    pages=$((pages + 1))
    name=${page#"$site"/}
    log="$out/$(echo "$name" | tr '/' '_').log"
    timeout 120 "$browser" "${flags[@]}" --user-data-dir="$profile" --virtual-time-budget=5000 \
        --dump-dom "file://$page" >"$out/dom.html" 2>"$log" ||
        die "chromium --dump-dom failed on $name: see $log"
    svgs=$({ grep -o '<svg ' "$page" || true; } | wc -l)
    verdict=$(grep -o 'data-plot-check="[^"]*"' "$out/dom.html" | head -n 1 |
        sed 's/^data-plot-check="//; s/"$//')
    [[ -n "$verdict" ]] || fail "$name: the page's check did not run"
    [[ "$verdict" == "ok: $svgs plots" ]] || fail "$name: page self-check says: $verdict"
    if grep -h 'CONSOLE' "$log" >"$out/console.log"; then
        cat "$out/console.log" >&2
        fail "$name: the page logged to the console"
    fi
    if grep -Eo '(src|href)="(https?:)?//[^"]*"' "$page" | grep -q .; then
        fail "$name: the page refers to an external resource"
    fi
    # Every chart has points to draw.
    if grep -q 'data-points="0"' "$page"; then
        fail "$name: a chart has no points"
    fi
    plots=$((plots + svgs))
done < <(find "$site" -name '*.html' | sort)
[[ "$pages" -gt 0 ]] || fail "no pages"

first=$(find "$site" -mindepth 2 -name '*.html' ! -name 'release-*' | sort | head -n 1)
if [[ -n "$first" ]]; then
    timeout 120 "$browser" "${flags[@]}" --user-data-dir="$profile" --window-size=1280,2400 \
        --screenshot="$out/scenario.png" "file://$first" >"$out/chromium-shot.log" 2>&1 ||
        die "chromium --screenshot failed: see $out/chromium-shot.log"
    [[ -s "$out/scenario.png" ]] || fail "no screenshot was written"
fi
echo "check-site: ok: $pages pages, $plots plots rendered in $("$browser" --version 2>/dev/null || echo "$browser"); screenshot $out/scenario.png"
