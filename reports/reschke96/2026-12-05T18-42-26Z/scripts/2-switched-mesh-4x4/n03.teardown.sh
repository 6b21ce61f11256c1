#!/bin/sh
# Teardown switched-mesh-4x4 on n03.
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
    if "$@"; then forget "$n"; else echo "teardown switched-mesh-4x4 on n03: step $n failed: $*" >&2; status=1; fi
}
release_slave() { ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }

# 4. address 10.111.1.3/24 on eth2
undo 4 ip addr del 10.111.1.3/24 dev eth2

# 3. address 10.111.0.3/24 on eth1
undo 3 ip addr del 10.111.0.3/24 dev eth1

# 2. bring eth2 up
undo 2 ip link set dev eth2 down

# 1. bring eth1 up
undo 1 ip link set dev eth1 down

[ -s "$ledger" ] || rm -f "$ledger"
exit $status
