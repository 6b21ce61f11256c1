#!/bin/sh
# Apply bonded-dual-net on n04.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply bonded-dual-net on n04: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir nohup rm rmdir sed sleep tail tr; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1 eth2; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
worker=${ORCHESTRATE_WORKER:-orchestrate-worker}
command -v "$worker" >/dev/null 2>&1 \
    || fail "$worker is not installed: the userspace bond needs it (or set ORCHESTRATE_WORKER)"
[ -c /dev/net/tun ] || fail "/dev/net/tun is missing: the userspace bond needs the kernel's TUN driver"
rundir=$(dirname "$ledger")
start_bond() {
    n=$1; dev=$2; shift 2
    log="$rundir/bond-$dev.log"
    nohup "$worker" bond --name "$dev" --stats-file "$rundir/bond-$dev.stats" "$@" \
        </dev/null >"$log" 2>&1 &
    pid=$!
    recorded "$n" "$pid"
    tries=0
    until grep -q '"event":"ready"' "$log" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || fail "userspace bond $dev exited: $(tail -n 3 "$log")"
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || fail "userspace bond $dev not ready after 10 s (see $log)"
        sleep 0.1
    done
}
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. start userspace bond bond0 (balance-rr) over eth1, eth2
# driver = "userspace": a TUN device carries the address; IP packets travel below IP on the
# slaves in Ethernet frames of ethertype 0x88B5.
start_bond 1 bond0 --address 10.111.0.4/24 --mode balance-rr --slave eth1 --slave eth2 --miimon 100

# The ledger as it stands, for the controller to keep in the run directory: should this
# node lose it, teardown still knows what the run changed.
sed 's/^/ledger-copy /' "$ledger"
