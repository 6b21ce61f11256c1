#!/bin/sh
# Apply bonded-dual-net on n05.
# Each change is recorded in the ledger (first argument, default /run/orchestrate/ledger) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${1:-/run/orchestrate/ledger}
fail() { echo "apply bonded-dual-net on n05: $*" >&2; exit 1; }
link_is_up() { ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }
link_state() { if link_is_up "$1"; then echo up; else echo down; fi; }
recorded() { printf '%s\n' "$*" >>"$ledger"; }

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in dirname grep ip mkdir rm sed sysctl tail tr; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
for dev in eth1 eth2; do
    ip link show dev "$dev" >/dev/null 2>&1 || fail "interface $dev is missing"
done
[ "$(sysctl -n net.mptcp.enabled 2>/dev/null)" = 1 ] \
    || fail "Multipath TCP is off in this kernel (net.mptcp.enabled is not 1, or CONFIG_MPTCP is not set)"
ip mptcp limits show >/dev/null 2>&1 || fail "ip (iproute2) here has no mptcp command, or the kernel no MPTCP path manager"
mptcp_limits() { ip mptcp limits show | tr -s ' \n' '  ' | sed 's/ *$//'; }
mptcp_endpoint_id() {
    ip mptcp endpoint show | while read -r addr word id rest; do
        if [ "$addr" = "$1" ] && [ "$word" = id ]; then echo "$id"; break; fi
    done
}
if [ -s "$ledger" ]; then
    fail "ledger $ledger is not empty: an earlier run was not torn down; run its teardown first"
fi
mkdir -p "$(dirname "$ledger")"
: >"$ledger"

# 1. bring eth1 up
if ! link_is_up eth1; then ip link set dev eth1 up; recorded 1; fi

# 2. bring eth2 up
if ! link_is_up eth2; then ip link set dev eth2 up; recorded 2; fi

# 3. address 10.111.0.5/24 on eth1
ip addr add 10.111.0.5/24 dev eth1; recorded 3

# 4. address 10.111.1.5/24 on eth2
ip addr add 10.111.1.5/24 dev eth2; recorded 4

# 5. MPTCP limits: 2 extra subflow(s), 2 peer address(es) accepted
recorded 5 "$(mptcp_limits)"; ip mptcp limits set subflows 2 add_addr_accepted 2

# 6. MPTCP: announce 10.111.0.5 on eth1
ip mptcp endpoint add 10.111.0.5 dev eth1 signal; recorded 6 "$(mptcp_endpoint_id 10.111.0.5)"

# 7. MPTCP: announce 10.111.1.5 on eth2
ip mptcp endpoint add 10.111.1.5 dev eth2 signal; recorded 7 "$(mptcp_endpoint_id 10.111.1.5)"
