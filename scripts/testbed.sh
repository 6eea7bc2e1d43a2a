#!/usr/bin/env bash
# A testbed of hosts on one machine: Linux network namespaces joined by a bridge, each with its
# own OpenSSH server, for running suites whose [hosts] are ssh:// hosts (docs/hosts.md).
#
#   scripts/testbed.sh up       build it (idempotent: an intact testbed is left as it is)
#   scripts/testbed.sh down     stop the sshd processes by the PIDs recorded, delete it all
#   scripts/testbed.sh status   say what is up, and reach every host over ssh
#   scripts/testbed.sh exec HOST CMD…   run CMD in HOST's namespace (it becomes CMD: same PID)
#
# Hosts (the root namespace is 10.77.0.1 on the bridge; gatebench runs there):
#
#   gen1 10.77.0.10   gen2 10.77.0.11   gen3 10.77.0.12   sut 10.77.0.20   backend 10.77.0.30
#
# Each host is a namespace `gbtb-<host>` with one veth end on the bridge `gbtb0`, its loopback,
# and no default route: its address exists only inside these namespaces and nothing routes out
# (no forwarding or NAT is set up). Each runs `/usr/sbin/sshd -f <its config>` on its own address,
# port 22, with its own host key; one client key is authorized for root on every host. The
# state (keys, configs, PID files, logs) is under $GATEBENCH_TESTBED_DIR (default
# /run/gatebench-testbed), with `ssh_config` naming the hosts, so
#
#   ssh -F /run/gatebench-testbed/ssh_config sut uname -a
#   GATEBENCH_SSH_CONFIG=/run/gatebench-testbed/ssh_config gatebench run examples/testbed.toml
#
# Every host shares this machine's filesystem and users. So that each host still has its own
# gatebench cache (the binary gatebench copies over ssh), sshd gives each session
# XDG_CACHE_HOME=$STATE/<host>/cache. sshd accepts PATH from the client (AcceptEnv), so a test
# can make a host that lacks tools (`SetEnv PATH=…` in its ssh_config).
#
# `ip netns exec` mounts a fresh /sys for the namespace, which hides /sys/fs/cgroup. A load
# generator there could not read its cgroup's CPU throttling, part of its self-check, so each
# host's sshd (and `exec`) mounts the machine's CPU cgroup hierarchy again inside its own mount
# namespace: v1's `cpu` controller, or the v2 unified tree.
#
# A LAN-like delay (0.1 ms each way, `tc qdisc … netem`) is added where the kernel has
# sch_netem; where it does not ("Specified qdisc kind is unknown"), the testbed runs without
# it, and `up` and `status` say which. Needs root; installs openssh-server, openssh-client and
# iproute2 from Debian when missing.
set -euo pipefail

STATE=${GATEBENCH_TESTBED_DIR:-/run/gatebench-testbed}
BRIDGE=gbtb0
ROOT_ADDR=10.77.0.1
HOSTS="gen1:10.77.0.10 gen2:10.77.0.11 gen3:10.77.0.12 sut:10.77.0.20 backend:10.77.0.30"
DELAY=0.1ms

say() { echo "testbed: $*"; }

# in_ns NS CMD… — exec CMD in network namespace NS with the CPU cgroup hierarchy visible (see
# the header). Best effort: without a cgroup CPU controller CMD runs all the same.
in_ns() {
    local ns=$1
    shift
    # shellcheck disable=SC2016 # expanded by the inner shell
    exec ip netns exec "$ns" sh -c '
        if grep -Eq "^[0-9]+:([^:]*,)?cpu(,[^:]*)?:" /proc/self/cgroup; then
            mount -t tmpfs gbtb-cgroup /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/cpu \
                && mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu
        else
            mount -t cgroup2 cgroup2 /sys/fs/cgroup
        fi 2>/dev/null
        exec "$@"' sh "$@"
}
die() {
    echo "testbed: $*" >&2
    exit 2
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces and sshd)"
}

install_tools() {
    local missing=()
    [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
    command -v ssh >/dev/null || missing+=(openssh-client)
    command -v ssh-keygen >/dev/null || missing+=(openssh-client)
    command -v ip >/dev/null || missing+=(iproute2)
    command -v tc >/dev/null || missing+=(iproute2)
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
            die "cannot install ${missing[*]}"
    fi
}

# Whether one host's namespace exists, its sshd (by recorded PID) runs, and ssh reaches it.
host_intact() {
    local name=$1
    ip netns list | grep -qw "gbtb-$name" || return 1
    [ -f "$STATE/$name/sshd.pid" ] || return 1
    kill -0 "$(cat "$STATE/$name/sshd.pid")" 2>/dev/null || return 1
    ssh -F "$STATE/ssh_config" -o ConnectTimeout=3 "$name" true 2>/dev/null || return 1
}

# Whether what the hosts share is there: the state directory with its keys, and the bridge.
base_intact() {
    [ -f "$STATE/ssh_config" ] && [ -f "$STATE/id_ed25519" ] && [ -f "$STATE/known_hosts" ] &&
        [ -f "$STATE/authorized_keys" ] && ip link show "$BRIDGE" >/dev/null 2>&1
}

# Whether every host is intact.
intact() {
    base_intact || return 1
    local h
    for h in $HOSTS; do
        host_intact "${h%%:*}" || return 1
    done
}

# Stop one host's sshd and delete its namespace and its client entries. The sshd is stopped by
# its recorded PID; a process still in the namespace (an sshd whose PID file is gone) by the
# PIDs `ip netns pids` lists for that namespace.
remove_host() {
    local name=$1 pid
    if [ -f "$STATE/$name/sshd.pid" ]; then
        kill "$(cat "$STATE/$name/sshd.pid")" 2>/dev/null || true
    fi
    if ip netns list | grep -qw "gbtb-$name"; then
        for pid in $(ip netns pids "gbtb-$name" 2>/dev/null); do
            kill "$pid" 2>/dev/null || true
        done
    fi
    ip netns del "gbtb-$name" 2>/dev/null || true
    ip link del "gbtb-$name" 2>/dev/null || true
    # Its lines in the shared client files (its `Host NAME` block runs to the blank line).
    if [ -f "$STATE/known_hosts" ]; then
        grep -v "^$name," "$STATE/known_hosts" >"$STATE/known_hosts.new" || true
        mv "$STATE/known_hosts.new" "$STATE/known_hosts"
    fi
    if [ -f "$STATE/ssh_config" ]; then
        awk -v h="Host $name" '$0 == h { skip = 1 } !skip { print } skip && $0 == "" { skip = 0 }' \
            "$STATE/ssh_config" >"$STATE/ssh_config.new"
        mv "$STATE/ssh_config.new" "$STATE/ssh_config"
    fi
    rm -rf "${STATE:?}/$name"
}

up() {
    need_root
    if intact; then
        say "already up ($STATE)"
        status
        return
    fi
    install_tools
    ip netns add __gbtb_probe 2>/dev/null && ip netns del __gbtb_probe ||
        die "cannot create network namespaces here (ip netns add failed)"
    # A testbed that lacks only some hosts (made before a host was added here, or one whose
    # sshd died) keeps its other hosts, so whoever is using them is not cut off.
    if ! base_intact; then
        down >/dev/null 2>&1 || true
        mkdir -p "$STATE"
        chmod 700 "$STATE"
        ssh-keygen -q -t ed25519 -N '' -C gatebench-testbed -f "$STATE/id_ed25519"
        cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
        : >"$STATE/known_hosts"
        : >"$STATE/ssh_config"
        echo "none (the kernel lacks sch_netem)" >"$STATE/delay"
        ip link add "$BRIDGE" type bridge
        ip addr add "$ROOT_ADDR/24" dev "$BRIDGE"
        ip link set "$BRIDGE" up
    fi
    mkdir -p /run/sshd

    local h name addr ns
    for h in $HOSTS; do
        name=${h%%:*}
        addr=${h##*:}
        ns=gbtb-$name
        host_intact "$name" && continue
        remove_host "$name"
        mkdir -p "$STATE/$name/cache"
        ip netns add "$ns"
        ip link add "gbtb-$name" type veth peer name eth0 netns "$ns"
        ip link set "gbtb-$name" master "$BRIDGE" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev eth0
        ip -n "$ns" link set eth0 up
        if ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$DELAY" 2>/dev/null; then
            echo "netem $DELAY each way" >"$STATE/delay"
        fi

        ssh-keygen -q -t ed25519 -N '' -C "testbed-$name" -f "$STATE/$name/ssh_host_ed25519_key"
        cat >"$STATE/$name/sshd_config" <<EOF
ListenAddress $addr:22
HostKey $STATE/$name/ssh_host_ed25519_key
PidFile $STATE/$name/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
AcceptEnv PATH LANG LC_*
SetEnv XDG_CACHE_HOME=$STATE/$name/cache
PrintMotd no
LogLevel ERROR
EOF
        (in_ns "$ns" /usr/sbin/sshd -f "$STATE/$name/sshd_config" -E "$STATE/$name/sshd.log")
        echo "$name,$addr $(cut -d' ' -f1,2 "$STATE/$name/ssh_host_ed25519_key.pub")" >>"$STATE/known_hosts"
        cat >>"$STATE/ssh_config" <<EOF
Host $name
    HostName $addr
    User root
    IdentityFile $STATE/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $STATE/known_hosts
    StrictHostKeyChecking yes

EOF
        # sshd writes its PID file once it listens.
        for _ in $(seq 50); do
            ssh -F "$STATE/ssh_config" -o ConnectTimeout=2 "$name" true 2>/dev/null && break
            sleep 0.1
        done
    done
    intact || die "hosts are not all reachable over ssh (see $STATE/*/sshd.log)"
    say "up"
    status
}

down() {
    need_root
    local h
    for h in $HOSTS; do
        remove_host "${h%%:*}"
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -rf "$STATE"
    say "down"
}

status() {
    if ! [ -f "$STATE/ssh_config" ]; then
        say "not up"
        return 1
    fi
    local h name addr ok=0
    for h in $HOSTS; do
        name=${h%%:*}
        addr=${h##*:}
        if ssh -F "$STATE/ssh_config" -o ConnectTimeout=3 "$name" true 2>/dev/null; then
            say "  $name $addr ssh ok (netns gbtb-$name, sshd pid $(cat "$STATE/$name/sshd.pid"))"
        else
            say "  $name $addr UNREACHABLE"
            ok=1
        fi
    done
    say "delay: $(cat "$STATE/delay" 2>/dev/null || echo unknown)"
    say "ssh config: $STATE/ssh_config (GATEBENCH_SSH_CONFIG=$STATE/ssh_config)"
    return $ok
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
exec)
    [ $# -ge 3 ] || die "usage: $0 exec HOST CMD…"
    [ -e "/run/netns/gbtb-$2" ] || die "no testbed host $2 (scripts/testbed.sh up)"
    ns=gbtb-$2
    shift 2
    in_ns "$ns" "$@"
    ;;
*)
    echo "usage: $0 up|down|status|exec HOST CMD…" >&2
    exit 2
    ;;
esac
