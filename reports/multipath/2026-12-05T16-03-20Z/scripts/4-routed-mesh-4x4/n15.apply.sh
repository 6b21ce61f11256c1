#!/bin/sh
# Apply routed-mesh-4x4 on n15.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply routed-mesh-4x4 on n15: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir rm sed sysctl tail; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1 eth2; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
[ -e /proc/sys/net/ipv4/fib_multipath_hash_policy ] \
    || fail "the kernel has no multipath routes (CONFIG_IP_ROUTE_MULTIPATH): ECMP needs them"
[ -z "$(ip -4 -o addr show to 10.255.0.0/16)$(ip -4 route show root 10.255.0.0/16)$(ip -4 route show match 10.255.0.0/16 | grep -v '^default')" ] \
    || fail "ECMP's node addresses come from 10.255.0.0/16, which this node already uses (an address in it, or a route to or over it), so routes to them could take its traffic"
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. bring eth1 up
if ! link_is_up eth1; then ip link set dev eth1 up; recorded 1; fi

# 2. bring eth2 up
if ! link_is_up eth2; then ip link set dev eth2 up; recorded 2; fi

# 3. address 10.111.3.15/24 on eth1
ip addr add 10.111.3.15/24 dev eth1; recorded 3

# 4. address 10.111.6.15/24 on eth2
ip addr add 10.111.6.15/24 dev eth2; recorded 4

# 5. bring lo up
if ! link_is_up lo; then ip link set dev lo up; recorded 5; fi

# 6. address 10.255.0.15/32 on lo
ip addr add 10.255.0.15/32 dev lo; recorded 6

# 7. sysctl net.ipv4.ip_forward=1
old=$(sysctl -n net.ipv4.ip_forward)
if [ "$old" != 1 ]; then recorded 7 "$old"; sysctl -qw 'net.ipv4.ip_forward=1'; fi

# 8. route 10.111.0.0/24 via 10.111.6.3 dev eth2
ip route add 10.111.0.0/24 via 10.111.6.3 dev eth2; recorded 8

# 9. route 10.111.1.0/24 via 10.111.6.7 dev eth2
ip route add 10.111.1.0/24 via 10.111.6.7 dev eth2; recorded 9

# 10. route 10.111.2.0/24 via 10.111.6.11 dev eth2
ip route add 10.111.2.0/24 via 10.111.6.11 dev eth2; recorded 10

# 11. route 10.111.4.0/24 via 10.111.3.13 dev eth1
ip route add 10.111.4.0/24 via 10.111.3.13 dev eth1; recorded 11

# 12. route 10.111.5.0/24 via 10.111.3.14 dev eth1
ip route add 10.111.5.0/24 via 10.111.3.14 dev eth1; recorded 12

# 13. route 10.111.7.0/24 via 10.111.3.16 dev eth1
ip route add 10.111.7.0/24 via 10.111.3.16 dev eth1; recorded 13

# 14. sysctl net.ipv4.fib_multipath_hash_policy=1
old=$(sysctl -n net.ipv4.fib_multipath_hash_policy)
if [ "$old" != 1 ]; then recorded 14 "$old"; sysctl -qw 'net.ipv4.fib_multipath_hash_policy=1'; fi

# 15. route 10.255.0.1/32 from 10.255.0.15 via 10.111.6.3 dev eth2 or 10.111.3.13 dev eth1
ip route add 10.255.0.1/32 src 10.255.0.15 nexthop via 10.111.6.3 dev eth2 nexthop via 10.111.3.13 dev eth1; recorded 15

# 16. route 10.255.0.2/32 from 10.255.0.15 via 10.111.6.3 dev eth2 or 10.111.3.14 dev eth1
ip route add 10.255.0.2/32 src 10.255.0.15 nexthop via 10.111.6.3 dev eth2 nexthop via 10.111.3.14 dev eth1; recorded 16

# 17. route 10.255.0.3/32 from 10.255.0.15 via 10.111.6.3 dev eth2
ip route add 10.255.0.3/32 src 10.255.0.15 via 10.111.6.3 dev eth2; recorded 17

# 18. route 10.255.0.4/32 from 10.255.0.15 via 10.111.6.3 dev eth2 or 10.111.3.16 dev eth1
ip route add 10.255.0.4/32 src 10.255.0.15 nexthop via 10.111.6.3 dev eth2 nexthop via 10.111.3.16 dev eth1; recorded 18

# 19. route 10.255.0.5/32 from 10.255.0.15 via 10.111.6.7 dev eth2 or 10.111.3.13 dev eth1
ip route add 10.255.0.5/32 src 10.255.0.15 nexthop via 10.111.6.7 dev eth2 nexthop via 10.111.3.13 dev eth1; recorded 19

# 20. route 10.255.0.6/32 from 10.255.0.15 via 10.111.6.7 dev eth2 or 10.111.3.14 dev eth1
ip route add 10.255.0.6/32 src 10.255.0.15 nexthop via 10.111.6.7 dev eth2 nexthop via 10.111.3.14 dev eth1; recorded 20

# 21. route 10.255.0.7/32 from 10.255.0.15 via 10.111.6.7 dev eth2
ip route add 10.255.0.7/32 src 10.255.0.15 via 10.111.6.7 dev eth2; recorded 21

# 22. route 10.255.0.8/32 from 10.255.0.15 via 10.111.6.7 dev eth2 or 10.111.3.16 dev eth1
ip route add 10.255.0.8/32 src 10.255.0.15 nexthop via 10.111.6.7 dev eth2 nexthop via 10.111.3.16 dev eth1; recorded 22

# 23. route 10.255.0.9/32 from 10.255.0.15 via 10.111.6.11 dev eth2 or 10.111.3.13 dev eth1
ip route add 10.255.0.9/32 src 10.255.0.15 nexthop via 10.111.6.11 dev eth2 nexthop via 10.111.3.13 dev eth1; recorded 23

# 24. route 10.255.0.10/32 from 10.255.0.15 via 10.111.6.11 dev eth2 or 10.111.3.14 dev eth1
ip route add 10.255.0.10/32 src 10.255.0.15 nexthop via 10.111.6.11 dev eth2 nexthop via 10.111.3.14 dev eth1; recorded 24

# 25. route 10.255.0.11/32 from 10.255.0.15 via 10.111.6.11 dev eth2
ip route add 10.255.0.11/32 src 10.255.0.15 via 10.111.6.11 dev eth2; recorded 25

# 26. route 10.255.0.12/32 from 10.255.0.15 via 10.111.6.11 dev eth2 or 10.111.3.16 dev eth1
ip route add 10.255.0.12/32 src 10.255.0.15 nexthop via 10.111.6.11 dev eth2 nexthop via 10.111.3.16 dev eth1; recorded 26

# 27. route 10.255.0.13/32 from 10.255.0.15 via 10.111.3.13 dev eth1
ip route add 10.255.0.13/32 src 10.255.0.15 via 10.111.3.13 dev eth1; recorded 27

# 28. route 10.255.0.14/32 from 10.255.0.15 via 10.111.3.14 dev eth1
ip route add 10.255.0.14/32 src 10.255.0.15 via 10.111.3.14 dev eth1; recorded 28

# 29. route 10.255.0.16/32 from 10.255.0.15 via 10.111.3.16 dev eth1
ip route add 10.255.0.16/32 src 10.255.0.15 via 10.111.3.16 dev eth1; recorded 29
