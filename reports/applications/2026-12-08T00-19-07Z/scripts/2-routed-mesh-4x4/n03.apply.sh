#!/bin/sh
# Apply routed-mesh-4x4 on n03.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply routed-mesh-4x4 on n03: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir rm rmdir sed sysctl tail; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1 eth2; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. bring eth1 up
if ! link_is_up eth1; then ip link set dev eth1 up; recorded 1; fi

# 2. bring eth2 up
if ! link_is_up eth2; then ip link set dev eth2 up; recorded 2; fi

# 3. address 10.111.0.3/24 on eth1
ip addr add 10.111.0.3/24 dev eth1; recorded 3

# 4. address 10.111.6.3/24 on eth2
ip addr add 10.111.6.3/24 dev eth2; recorded 4

# 5. sysctl net.ipv4.ip_forward=1
old=$(sysctl -n net.ipv4.ip_forward)
if [ "$old" != 1 ]; then recorded 5 "$old"; sysctl -qw 'net.ipv4.ip_forward=1'; fi

# 6. route 10.111.1.0/24 via 10.111.6.7 dev eth2
ip route add 10.111.1.0/24 via 10.111.6.7 dev eth2; recorded 6

# 7. route 10.111.2.0/24 via 10.111.6.11 dev eth2
ip route add 10.111.2.0/24 via 10.111.6.11 dev eth2; recorded 7

# 8. route 10.111.3.0/24 via 10.111.6.15 dev eth2
ip route add 10.111.3.0/24 via 10.111.6.15 dev eth2; recorded 8

# 9. route 10.111.4.0/24 via 10.111.0.1 dev eth1
ip route add 10.111.4.0/24 via 10.111.0.1 dev eth1; recorded 9

# 10. route 10.111.5.0/24 via 10.111.0.2 dev eth1
ip route add 10.111.5.0/24 via 10.111.0.2 dev eth1; recorded 10

# 11. route 10.111.7.0/24 via 10.111.0.4 dev eth1
ip route add 10.111.7.0/24 via 10.111.0.4 dev eth1; recorded 11

# The ledger as it stands, for the controller to keep in the run directory: should this
# node lose it, teardown still knows what the run changed.
sed 's/^/ledger-copy /' "$ledger"
