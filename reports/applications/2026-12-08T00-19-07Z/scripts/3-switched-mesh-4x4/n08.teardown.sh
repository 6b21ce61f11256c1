#!/bin/sh
# Teardown switched-mesh-4x4 on n08.
# Undoes, in reverse, each change the ledger (first argument, default /run/orchestrate/ledger)
# records, and forgets it once undone; a change that cannot be undone stays in the ledger and
# makes the script fail, so it can be retried. Nothing the ledger does not name is touched.
#
# A line before this script may set ORCHESTRATE_LEDGER_COPY to the controller's copy of
# this node's ledger, kept in the run directory. A step the copy holds and the node's ledger
# does not (the ledger was lost, or cut short) is undone only if its change is still exactly
# as the run made it; otherwise it is left alone and named, and the script fails.
set -u
ledger=${1:-/run/orchestrate/ledger}
status=0
has() { grep -q "^$1\( \|\$\)" "$ledger"; }
value_of() { sed -n "s/^$1 //p" "$ledger" | tail -n 1; }
forget() { rest=$(grep -v "^$1\( \|\$\)" "$ledger"); printf '%s' "$rest${rest:+
}" >"$ledger"; }
from_copy=' '
if [ -n "${ORCHESTRATE_LEDGER_COPY:-}" ]; then
    mkdir -p "$(dirname "$ledger")" && : >>"$ledger" \
        || { echo "teardown switched-mesh-4x4 on n08: cannot write $ledger" >&2; exit 1; }
    old_ifs=$IFS
    IFS='
'
    for line in $ORCHESTRATE_LEDGER_COPY; do
        n=${line%%[!0-9]*}
        has "$n" && continue
        printf '%s\n' "$line" >>"$ledger"
        from_copy="$from_copy$n "
    done
    IFS=$old_ifs
fi
if [ ! -f "$ledger" ]; then echo no-ledger; exit 0; fi
[ "$from_copy" = ' ' ] || echo "from-copy:$from_copy"
checked() { [ "${from_copy#* $1 }" != "$from_copy" ]; }
left_alone() {
    echo "teardown switched-mesh-4x4 on n08: left alone step $1 ($2): it is no longer as the run made it" >&2
    forget "$1"; status=1
}
undo() {
    n=$1; shift
    has "$n" || return 0
    if "$@"; then forget "$n"; else echo "teardown switched-mesh-4x4 on n08: step $n failed: $*" >&2; status=1; fi
}
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
release_slave() { ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }

# 4. address 10.111.1.8/24 on eth2
if has 4 && checked 4 && ! { ip -4 -o addr show dev eth2 2>/dev/null | grep -qF ' inet 10.111.1.8/24 '; }; then left_alone 4 'address 10.111.1.8/24 on eth2'; fi
undo 4 ip addr del 10.111.1.8/24 dev eth2

# 3. address 10.111.0.8/24 on eth1
if has 3 && checked 3 && ! { ip -4 -o addr show dev eth1 2>/dev/null | grep -qF ' inet 10.111.0.8/24 '; }; then left_alone 3 'address 10.111.0.8/24 on eth1'; fi
undo 3 ip addr del 10.111.0.8/24 dev eth1

# 2. bring eth2 up
if has 2 && checked 2 && ! { link_is_up eth2; }; then left_alone 2 'bring eth2 up'; fi
undo 2 ip link set dev eth2 down

# 1. bring eth1 up
if has 1 && checked 1 && ! { link_is_up eth1; }; then left_alone 1 'bring eth1 up'; fi
undo 1 ip link set dev eth1 down

if [ ! -s "$ledger" ]; then
    rm -f "$ledger"
    rmdir "$(dirname "$ledger")" 2>/dev/null || :
fi
exit $status
