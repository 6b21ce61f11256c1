#!/bin/sh
# Apply single-net on n11.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply single-net on n11: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir rm rmdir sed tail; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. bring eth1 up
if ! link_is_up eth1; then ip link set dev eth1 up; recorded 1; fi

# 2. address 10.111.0.11/24 on eth1
ip addr add 10.111.0.11/24 dev eth1; recorded 2

# The ledger as it stands, for the controller to keep in the run directory: should this
# node lose it, teardown still knows what the run changed.
sed 's/^/ledger-copy /' "$ledger"
