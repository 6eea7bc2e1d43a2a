#!/usr/bin/env bash
# Builds the seed 000 passthrough against one Netty release into build/<version>/:
#
#   ./build.sh 4.2.9.Final     # then: java -cp 'build/4.2.9.Final/lib/*:build/4.2.9.Final/classes' Passthrough ...
#
# Maven fetches netty-codec-http <version> and its dependencies from Maven Central into its
# local repository (~/.m2/repository) once and copies them to build/<version>/lib; javac
# compiles src/Passthrough.java against them. Idempotent: when the classes are newer than the
# source and the pom, it only says so (a second call costs milliseconds, no network).
# Needs java, javac and mvn; run as root on Debian, it installs them when missing.
# Exit status: 0 built (or up to date), 1 a step failed (its output on stderr).
set -euo pipefail
cd "$(dirname "$0")"
version=${1:?usage: build.sh NETTY_VERSION (e.g. 4.2.9.Final)}
out=build/$version
class=$out/classes/Passthrough.class

missing=()
command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [[ ${#missing[@]} -gt 0 && $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "seed-000: installing ${missing[*]} from Debian" >&2
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi

if [[ -f $class && $class -nt src/Passthrough.java && $class -nt pom.xml ]]; then
    echo "seed-000: $out is up to date"
    exit 0
fi
rm -rf "$out"
mkdir -p "$out/lib" "$out/classes"
# One Maven at a time in the local repository (two scenarios' setups may run back to back).
mvn -B -q -Dstyle.color=never -f pom.xml "-Dnetty.version=$version" dependency:copy-dependencies \
    "-DoutputDirectory=$out/lib" -DincludeScope=runtime
javac -d "$out/classes" -cp "$out/lib/*" src/Passthrough.java
echo "seed-000: built $out ($(ls "$out/lib" | wc -l) jars)"
