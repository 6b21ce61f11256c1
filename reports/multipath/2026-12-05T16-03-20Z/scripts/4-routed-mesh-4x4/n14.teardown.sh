#!/bin/sh
# Teardown routed-mesh-4x4 on n14.
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
    if "$@"; then forget "$n"; else echo "teardown routed-mesh-4x4 on n14: step $n failed: $*" >&2; status=1; fi
}
release_slave() { ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }

# 29. route 10.255.0.16/32 from 10.255.0.14 via 10.111.3.16 dev eth1
undo 29 ip route del 10.255.0.16/32 src 10.255.0.14 via 10.111.3.16 dev eth1

# 28. route 10.255.0.15/32 from 10.255.0.14 via 10.111.3.15 dev eth1
undo 28 ip route del 10.255.0.15/32 src 10.255.0.14 via 10.111.3.15 dev eth1

# 27. route 10.255.0.13/32 from 10.255.0.14 via 10.111.3.13 dev eth1
undo 27 ip route del 10.255.0.13/32 src 10.255.0.14 via 10.111.3.13 dev eth1

# 26. route 10.255.0.12/32 from 10.255.0.14 via 10.111.5.10 dev eth2 or 10.111.3.16 dev eth1
undo 26 ip route del 10.255.0.12/32 src 10.255.0.14 nexthop via 10.111.5.10 dev eth2 nexthop via 10.111.3.16 dev eth1

# 25. route 10.255.0.11/32 from 10.255.0.14 via 10.111.5.10 dev eth2 or 10.111.3.15 dev eth1
undo 25 ip route del 10.255.0.11/32 src 10.255.0.14 nexthop via 10.111.5.10 dev eth2 nexthop via 10.111.3.15 dev eth1

# 24. route 10.255.0.10/32 from 10.255.0.14 via 10.111.5.10 dev eth2
undo 24 ip route del 10.255.0.10/32 src 10.255.0.14 via 10.111.5.10 dev eth2

# 23. route 10.255.0.9/32 from 10.255.0.14 via 10.111.5.10 dev eth2 or 10.111.3.13 dev eth1
undo 23 ip route del 10.255.0.9/32 src 10.255.0.14 nexthop via 10.111.5.10 dev eth2 nexthop via 10.111.3.13 dev eth1

# 22. route 10.255.0.8/32 from 10.255.0.14 via 10.111.5.6 dev eth2 or 10.111.3.16 dev eth1
undo 22 ip route del 10.255.0.8/32 src 10.255.0.14 nexthop via 10.111.5.6 dev eth2 nexthop via 10.111.3.16 dev eth1

# 21. route 10.255.0.7/32 from 10.255.0.14 via 10.111.5.6 dev eth2 or 10.111.3.15 dev eth1
undo 21 ip route del 10.255.0.7/32 src 10.255.0.14 nexthop via 10.111.5.6 dev eth2 nexthop via 10.111.3.15 dev eth1

# 20. route 10.255.0.6/32 from 10.255.0.14 via 10.111.5.6 dev eth2
undo 20 ip route del 10.255.0.6/32 src 10.255.0.14 via 10.111.5.6 dev eth2

# 19. route 10.255.0.5/32 from 10.255.0.14 via 10.111.5.6 dev eth2 or 10.111.3.13 dev eth1
undo 19 ip route del 10.255.0.5/32 src 10.255.0.14 nexthop via 10.111.5.6 dev eth2 nexthop via 10.111.3.13 dev eth1

# 18. route 10.255.0.4/32 from 10.255.0.14 via 10.111.5.2 dev eth2 or 10.111.3.16 dev eth1
undo 18 ip route del 10.255.0.4/32 src 10.255.0.14 nexthop via 10.111.5.2 dev eth2 nexthop via 10.111.3.16 dev eth1

# 17. route 10.255.0.3/32 from 10.255.0.14 via 10.111.5.2 dev eth2 or 10.111.3.15 dev eth1
undo 17 ip route del 10.255.0.3/32 src 10.255.0.14 nexthop via 10.111.5.2 dev eth2 nexthop via 10.111.3.15 dev eth1

# 16. route 10.255.0.2/32 from 10.255.0.14 via 10.111.5.2 dev eth2
undo 16 ip route del 10.255.0.2/32 src 10.255.0.14 via 10.111.5.2 dev eth2

# 15. route 10.255.0.1/32 from 10.255.0.14 via 10.111.5.2 dev eth2 or 10.111.3.13 dev eth1
undo 15 ip route del 10.255.0.1/32 src 10.255.0.14 nexthop via 10.111.5.2 dev eth2 nexthop via 10.111.3.13 dev eth1

# 14. sysctl net.ipv4.fib_multipath_hash_policy=1
undo 14 sysctl -qw "net.ipv4.fib_multipath_hash_policy=$(value_of 14)"

# 13. route 10.111.7.0/24 via 10.111.3.16 dev eth1
undo 13 ip route del 10.111.7.0/24 via 10.111.3.16 dev eth1

# 12. route 10.111.6.0/24 via 10.111.3.15 dev eth1
undo 12 ip route del 10.111.6.0/24 via 10.111.3.15 dev eth1

# 11. route 10.111.4.0/24 via 10.111.3.13 dev eth1
undo 11 ip route del 10.111.4.0/24 via 10.111.3.13 dev eth1

# 10. route 10.111.2.0/24 via 10.111.5.10 dev eth2
undo 10 ip route del 10.111.2.0/24 via 10.111.5.10 dev eth2

# 9. route 10.111.1.0/24 via 10.111.5.6 dev eth2
undo 9 ip route del 10.111.1.0/24 via 10.111.5.6 dev eth2

# 8. route 10.111.0.0/24 via 10.111.5.2 dev eth2
undo 8 ip route del 10.111.0.0/24 via 10.111.5.2 dev eth2

# 7. sysctl net.ipv4.ip_forward=1
undo 7 sysctl -qw "net.ipv4.ip_forward=$(value_of 7)"

# 6. address 10.255.0.14/32 on lo
undo 6 ip addr del 10.255.0.14/32 dev lo

# 5. bring lo up
undo 5 ip link set dev lo down

# 4. address 10.111.5.14/24 on eth2
undo 4 ip addr del 10.111.5.14/24 dev eth2

# 3. address 10.111.3.14/24 on eth1
undo 3 ip addr del 10.111.3.14/24 dev eth1

# 2. bring eth2 up
undo 2 ip link set dev eth2 down

# 1. bring eth1 up
undo 1 ip link set dev eth1 down

[ -s "$ledger" ] || rm -f "$ledger"
exit $status
