#!/bin/sh
# Apply bond4-kernel on n04.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply bond4-kernel on n04: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir modprobe rm rmdir sed tail; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1 eth2; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
[ -d /sys/module/bonding ] || { command -v modinfo >/dev/null 2>&1 && modinfo bonding >/dev/null 2>&1; } \
    || fail "the kernel has no bonding driver (CONFIG_BONDING); use driver = \"userspace\""
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. create bond bond0 (balance-rr)
if [ -d /sys/module/bonding ]; then was=loaded; else was=absent; fi; ip link add bond0 type bond mode balance-rr miimon 100; recorded 1 "$was"

# 2. enslave eth1 to bond0
recorded 2 "$(link_state eth1)"; ip link set dev eth1 down; ip link set dev eth1 master bond0

# 3. enslave eth2 to bond0
recorded 3 "$(link_state eth2)"; ip link set dev eth2 down; ip link set dev eth2 master bond0

# 4. bring bond0 up
if ! link_is_up bond0; then ip link set dev bond0 up; recorded 4; fi

# 5. address 10.111.0.4/24 on bond0
ip addr add 10.111.0.4/24 dev bond0; recorded 5

# The ledger as it stands, for the controller to keep in the run directory: should this
# node lose it, teardown still knows what the run changed.
sed 's/^/ledger-copy /' "$ledger"
