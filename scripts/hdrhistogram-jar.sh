#!/usr/bin/env bash
# Prints the path of HdrHistogram's Java jar (org.hdrhistogram:HdrHistogram), fetching it from
# Maven Central with `mvn dependency:get` the first time. The jar carries HdrHistogram's own
# log tools, which read gatebench's interval logs (`--hlog`):
#
#   java -cp "$(scripts/hdrhistogram-jar.sh)" org.HdrHistogram.HistogramLogProcessor -i run.hlog
#
# The jar lands in Maven's local repository (~/.m2/repository, or MAVEN_REPO_LOCAL), so a
# machine downloads it once; later calls only check its SHA-256 and print the path. The version
# and checksum are pinned below: a jar that does not match is refused, not used.
#
# Run as root on Debian, it first installs java and Maven when they are missing.
#
# Environment: HDRHISTOGRAM_JAR (use this jar instead; printed as is, not checked),
# MAVEN_REPO_LOCAL (Maven's local repository).
# Exit status: 0 the path is on stdout; 2 the jar is not there and cannot be fetched (the reason
# on stderr, one line). Progress goes to stderr, so `$(...)` captures the path only.
set -euo pipefail

version=2.2.2
# SHA-256 of HdrHistogram-2.2.2.jar as published on Maven Central (its .sha1 is
# 7959933ebcc0f05b2eaa5af0a0c8689fa257b15c).
sha256=22d1d4316c4ec13a68b559e98c8256d69071593731da96136640f864fa14fad8

die() { echo "hdrhistogram-jar: $*" >&2; exit 2; }

# java (to run the tools) and mvn (to fetch the jar) from Debian when missing, as root.
missing=()
command -v java >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [[ ${#missing[@]} -gt 0 && $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "hdrhistogram-jar: installing ${missing[*]} from Debian" >&2
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >&2 ||
        die "apt-get install ${missing[*]} failed (its output above)"
fi

if [[ -n "${HDRHISTOGRAM_JAR:-}" ]]; then
    [[ -f "$HDRHISTOGRAM_JAR" ]] || die "HDRHISTOGRAM_JAR=$HDRHISTOGRAM_JAR: no such file"
    echo "$HDRHISTOGRAM_JAR"
    exit 0
fi

repo=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
jar=$repo/org/hdrhistogram/HdrHistogram/$version/HdrHistogram-$version.jar

if [[ ! -f "$jar" ]]; then
    # One fetch at a time: concurrent callers (parallel tests, CI steps) wait for the first.
    mkdir -p "$repo"
    if command -v flock >/dev/null; then
        exec 9>"$repo/.hdrhistogram-jar.lock"
        flock 9
    fi
fi
if [[ ! -f "$jar" ]]; then
    command -v mvn >/dev/null ||
        die "mvn not found: install Maven (Debian: apt-get install maven) or set HDRHISTOGRAM_JAR"
    echo "hdrhistogram-jar: fetching org.hdrhistogram:HdrHistogram:$version from Maven Central" >&2
    log=$(mktemp -t hdrhistogram-jar.XXXXXX)
    if ! mvn -B -q dependency:get "-Dmaven.repo.local=$repo" \
        "-Dartifact=org.hdrhistogram:HdrHistogram:$version" -Dtransitive=false >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        die "mvn dependency:get org.hdrhistogram:HdrHistogram:$version failed (its output above)"
    fi
    rm -f "$log"
    [[ -f "$jar" ]] || die "mvn succeeded but $jar is not there"
fi

got=$(sha256sum "$jar" | cut -d' ' -f1)
[[ "$got" == "$sha256" ]] || die "$jar: SHA-256 $got, expected $sha256; remove it and run again"
echo "$jar"
