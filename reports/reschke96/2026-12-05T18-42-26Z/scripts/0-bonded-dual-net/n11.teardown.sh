#!/bin/sh
# Teardown bonded-dual-net on n11.
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
    if "$@"; then forget "$n"; else echo "teardown bonded-dual-net on n11: step $n failed: $*" >&2; status=1; fi
}
release_slave() { ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }
rundir=$(dirname "$ledger")
stop_bond() {
    pid=$1; dev=$2
    if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- " bond --name $dev "; then
        kill -TERM "$pid" || return 1
        tries=0
        while kill -0 "$pid" 2>/dev/null; do
            tries=$((tries + 1))
            if [ "$tries" -gt 50 ]; then kill -KILL "$pid"; sleep 0.2; break; fi
            sleep 0.1
        done
        ! kill -0 "$pid" 2>/dev/null || return 1
    fi
    grep '"event":"exit"' "$rundir/bond-$dev.log" 2>/dev/null
    rm -f "$rundir/bond-$dev.log" "$rundir/bond-$dev.stats" "$rundir/bond-$dev.tmp"
}

# 1. start userspace bond bond0 (balance-rr) over eth1, eth2
undo 1 stop_bond "$(value_of 1)" bond0

[ -s "$ledger" ] || rm -f "$ledger"
exit $status
