#!/bin/sh
# Teardown routed-mesh-4x4 on n01.
# Undoes, in reverse, each change the ledger (first argument, default /run/orchestrate/ledger)
# records, and forgets it once undone; a change that cannot be undone stays in the ledger and
# makes the script fail, so it can be retried. Nothing the ledger does not name is touched.
set -u
ledger=${1:-/run/orchestrate/ledger}
[ -f "$ledger" ] || exit 0
status=0
has() { grep -q "^$1\( \|\$\)" "$ledger"; }
value_of() { sed -n "s/^$1 //p" "$ledger" | tail -n 1; }
forget() { rest=$(grep -v "^$1\( \|\$\)" "$ledger"); printf '%s' "$rest${rest:+
}" >"$ledger"; }
undo() {
    n=$1; shift
    has "$n" || return 0
    if "$@"; then forget "$n"; else echo "teardown routed-mesh-4x4 on n01: step $n failed: $*" >&2; status=1; fi
}
release_slave() { ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }

# 11. route 10.111.7.0/24 via 10.111.0.4 dev eth1
undo 11 ip route del 10.111.7.0/24 via 10.111.0.4 dev eth1

# 10. route 10.111.6.0/24 via 10.111.0.3 dev eth1
undo 10 ip route del 10.111.6.0/24 via 10.111.0.3 dev eth1

# 9. route 10.111.5.0/24 via 10.111.0.2 dev eth1
undo 9 ip route del 10.111.5.0/24 via 10.111.0.2 dev eth1

# 8. route 10.111.3.0/24 via 10.111.4.13 dev eth2
undo 8 ip route del 10.111.3.0/24 via 10.111.4.13 dev eth2

# 7. route 10.111.2.0/24 via 10.111.4.9 dev eth2
undo 7 ip route del 10.111.2.0/24 via 10.111.4.9 dev eth2

# 6. route 10.111.1.0/24 via 10.111.4.5 dev eth2
undo 6 ip route del 10.111.1.0/24 via 10.111.4.5 dev eth2

# 5. sysctl net.ipv4.ip_forward=1
undo 5 sysctl -qw "net.ipv4.ip_forward=$(value_of 5)"

# 4. address 10.111.4.1/24 on eth2
undo 4 ip addr del 10.111.4.1/24 dev eth2

# 3. address 10.111.0.1/24 on eth1
undo 3 ip addr del 10.111.0.1/24 dev eth1

# 2. bring eth2 up
undo 2 ip link set dev eth2 down

# 1. bring eth1 up
undo 1 ip link set dev eth1 down

[ -s "$ledger" ] || rm -f "$ledger"
exit $status
