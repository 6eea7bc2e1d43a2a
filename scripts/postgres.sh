#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries are installed, for the release history's tests
# (crates/history/tests/it/postgres.rs), and prints their directory
# (/usr/lib/postgresql/<major>/bin). The tests start their own server from these binaries on a
# temporary data directory with a unix socket and no TCP port, and stop it by its PID; nothing
# here starts a server.
#
# Run as root on Debian, it installs the `postgresql` package when the binaries are missing
# (`apt-get update` first). The package would start its own cluster's service: a policy-rc.d
# that refuses service starts is put in place for the install (unless one is already there),
# so no server is left running. The package also creates the `postgres` system user, which
# the tests run the server as when they run as root (initdb and postgres refuse root).
#
# Exit status: 0 the directory is on stdout; 2 the binaries are not there and cannot be
# installed (the reason on stderr, one line). Progress goes to stderr.
set -euo pipefail

die() { echo "postgres.sh: $*" >&2; exit 2; }

bin_dir() {
    # The newest major version that has both programs (sort -V: 9.6 before 15).
    local d best=""
    while read -r d; do
        [[ -x "$d/initdb" && -x "$d/postgres" ]] && best=$d
    done < <(compgen -G '/usr/lib/postgresql/*/bin' | sort -V)
    [[ -n "$best" ]] && echo "$best"
}

if ! dir=$(bin_dir); then
    [[ $EUID -eq 0 ]] || die "PostgreSQL's server binaries are missing; run this script as root to install them"
    command -v apt-get >/dev/null || die "PostgreSQL's server binaries are missing and apt-get is not here"
    policy=/usr/sbin/policy-rc.d
    made_policy=false
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# Put here by gatebench scripts/postgres.sh for the install only.\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made_policy=true
    fi
    echo "postgres.sh: installing postgresql from Debian" >&2
    status=0
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; } >&2 || status=$?
    if $made_policy; then rm -f "$policy"; fi
    [[ $status -eq 0 ]] || die "apt-get install postgresql failed (its output above)"
    dir=$(bin_dir) || die "postgresql is installed but no /usr/lib/postgresql/*/bin/initdb is there"
fi

if [[ $EUID -eq 0 ]] && ! id -u postgres >/dev/null 2>&1; then
    die "no 'postgres' user to run the server as (root may not); reinstall the postgresql-common package"
fi
echo "$dir"
