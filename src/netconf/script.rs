//! Rendering a node's steps as its apply and teardown scripts.

use std::fmt::Write as _;

use serde::Serialize;

use ipnet::Ipv4Net;
use orchestrate_worker::bond::BondArgs;

use crate::spec::{IfName, NodeName};
use crate::topology::{Attachment, Bond, BondDriver, BondMode, DriverChoice, Node, Topology};

use super::steps::{Step, q};

/// Where scripts keep the ledger on a node unless told otherwise (their first argument).
pub const DEFAULT_LEDGER: &str = "/run/orchestrate/ledger";

/// What starts each line of the ledger the apply script prints when it is done, for the
/// controller to keep in the run directory (the run's copy of the node's ledger).
pub const LEDGER_COPY_PREFIX: &str = "ledger-copy ";

/// What the teardown script prints, and nothing else, when the node has no ledger and the
/// controller sent no copy: it cannot tell "nothing was applied" from "the ledger was lost".
pub const NO_LEDGER_LINE: &str = "no-ledger";

/// What starts the line the teardown script prints when it took steps from the run's copy
/// (the step numbers follow).
pub const FROM_COPY_PREFIX: &str = "from-copy:";

/// The variable a line put before the teardown script sets to the run's copy of the node's
/// ledger (see [`copy_preamble`]).
const COPY_VARIABLE: &str = "ORCHESTRATE_LEDGER_COPY";

/// A node's configuration for one topology.
#[derive(Debug, Clone, Serialize)]
pub struct NodeScripts {
    pub node: NodeName,
    pub steps: Vec<Step>,
    pub apply: String,
    pub teardown: String,
    /// Every program the two scripts call (shell builtins aside), sorted: the apply script
    /// checks them all before its first change, since a change whose undo cannot run must
    /// not be made.
    pub tools: Vec<&'static str>,
}

/// The programs every apply and teardown script calls: `ip` and `grep` in the link helpers
/// and interface checks, `mkdir` and `dirname` to make the ledger's directory, `grep`,
/// `sed`, `tail`, `rm` and `rmdir` to read, rewrite and remove the ledger and its directory.
pub const BASE_TOOLS: &[&str] = &[
    "dirname", "grep", "ip", "mkdir", "rm", "rmdir", "sed", "tail",
];

/// The programs `steps` need, with those every script needs, sorted and once each.
fn tools(steps: &[Step]) -> Vec<&'static str> {
    let mut tools: Vec<&'static str> = BASE_TOOLS
        .iter()
        .chain(steps.iter().flat_map(|s| s.tools()))
        .copied()
        .collect();
    tools.sort_unstable();
    tools.dedup();
    tools
}

/// Whether the worker's userspace bond carries `bond` (it then owns the bond's address and
/// link state too). `auto` renders the kernel path; the runner decides from the node's probe.
fn userspace(bond: &Bond) -> bool {
    bond.driver == DriverChoice::Named(BondDriver::Userspace)
}

/// Modes the userspace bond refuses (it has no switch to negotiate with and no ARP to
/// rewrite); a userspace bond in one of them fails the apply script's checks.
fn refused_in_userspace(mode: BondMode) -> bool {
    matches!(
        mode,
        BondMode::Ieee8023ad | BondMode::BalanceTlb | BondMode::BalanceAlb
    )
}

/// The steps that give `node` its part of `topology`, in the order they must run: bonds before
/// their slaves are enslaved, links up before addresses, addresses before routes through them.
fn steps(node: &Node) -> Vec<Step> {
    let mut steps = Vec::new();
    for bond in &node.bonds {
        if userspace(bond) {
            steps.push(Step::StartUserspaceBond { bond: bond.clone() });
            continue;
        }
        steps.push(Step::AddBond { bond: bond.clone() });
        for slave in &bond.slaves {
            steps.push(Step::Enslave {
                dev: slave.clone(),
                bond: bond.name.clone(),
            });
        }
    }
    for iface in &node.interfaces {
        if let Attachment::Address(_) = iface.attachment {
            steps.push(Step::LinkUp {
                dev: iface.name.clone(),
            });
        }
    }
    for bond in node.bonds.iter().filter(|b| !userspace(b)) {
        steps.push(Step::LinkUp {
            dev: bond.name.clone(),
        });
    }
    for (dev, address) in node.links() {
        if node.bonds.iter().any(|b| &b.name == dev && userspace(b)) {
            continue;
        }
        steps.push(Step::AddAddress {
            address,
            dev: dev.clone(),
        });
    }
    if let Some(address) = node.node_address() {
        // ECMP's node address: on lo, which no wire carries, so every path to it is alike.
        let lo: IfName = "lo".parse().expect("a valid interface name");
        steps.push(Step::LinkUp { dev: lo.clone() });
        steps.push(Step::AddAddress {
            address: Ipv4Net::from(address),
            dev: lo,
        });
    }
    if let Some(mptcp) = &node.mptcp {
        let limit = mptcp.path_limit();
        steps.push(Step::MptcpLimits {
            subflows: limit,
            add_addr_accepted: limit,
        });
        for (dev, address) in mptcp.endpoints() {
            steps.push(Step::MptcpEndpoint {
                address: *address,
                dev: dev.clone(),
            });
        }
    }
    if node.forwarding {
        steps.push(Step::Sysctl {
            key: "net.ipv4.ip_forward",
            value: "1",
        });
    }
    for route in &node.routes {
        steps.push(Step::AddRoute {
            route: route.clone(),
        });
    }
    if let Some(ecmp) = &node.ecmp {
        // After the address, which the routes send from.
        steps.push(Step::Sysctl {
            key: "net.ipv4.fib_multipath_hash_policy",
            value: ecmp.hash.policy(),
        });
        for route in &ecmp.routes {
            steps.push(Step::AddMultipathRoute {
                route: route.clone(),
            });
        }
    }
    steps
}

/// Deletes a kernel bond; when the apply found the bonding module absent (the ledger says
/// `absent`; ledgers before this record say nothing) and no bond is left, unloads it too, so
/// that the node's kernel is as the run found it.
const KERNEL_BOND_DELETE: &str = r#"del_bond() {
    ip link del "$1" || return 1
    masters=
    [ -r /sys/class/net/bonding_masters ] && read -r masters </sys/class/net/bonding_masters
    if [ "$2" = absent ] && [ -z "$masters" ]; then
        modprobe -r bonding 2>/dev/null || true
    fi
}
"#;

/// Renders `node`'s apply and teardown scripts for `topology`.
pub fn render(topology: &Topology, node: &Node) -> NodeScripts {
    let steps = steps(node);
    let tools = tools(&steps);
    NodeScripts {
        node: node.name.clone(),
        apply: apply_script(topology, node, &steps, &tools),
        teardown: teardown_script(topology, node, &steps),
        steps,
        tools,
    }
}

fn apply_script(t: &Topology, node: &Node, steps: &[Step], tools: &[&str]) -> String {
    let mut s = String::new();
    let who = format!("{} on {}", t.name, node.name);
    let _ = write!(
        s,
        r#"#!/bin/sh
# Apply {who}.
# Each change is recorded in the ledger (first argument, default {DEFAULT_LEDGER}) as soon
# as it is made; the teardown script undoes exactly what the ledger holds, in reverse.
set -eu
ledger=${{1:-{DEFAULT_LEDGER}}}
fail() {{ echo "apply {who}: $*" >&2; exit 1; }}
link_is_up() {{ ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }}
link_state() {{ if link_is_up "$1"; then echo up; else echo down; fi; }}
recorded() {{ printf '%s\n' "$*" >>"$ledger"; }}

# Check everything before changing anything: first every program this script and its
# teardown call.
missing=
for tool in {tools}; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] || fail "missing tools:$missing (install them; nothing was changed)"
"#,
        tools = tools.join(" ")
    );
    let devs: Vec<String> = node.interfaces.iter().map(|i| q(&i.name)).collect();
    if !devs.is_empty() {
        let _ = writeln!(
            s,
            "for dev in {}; do\n    ip link show dev \"$dev\" >/dev/null 2>&1 || fail \"interface $dev is missing\"\ndone",
            devs.join(" ")
        );
    }
    if node.bonds.iter().any(|b| !userspace(b)) {
        s += "[ -d /sys/module/bonding ] || { command -v modinfo >/dev/null 2>&1 && modinfo bonding >/dev/null 2>&1; } \\\n    || fail \"the kernel has no bonding driver (CONFIG_BONDING); use driver = \\\"userspace\\\"\"\n";
    }
    if node.bonds.iter().any(userspace) {
        s += &userspace_bond_checks();
        for b in node
            .bonds
            .iter()
            .filter(|b| userspace(b) && refused_in_userspace(b.mode))
        {
            let _ = writeln!(
                s,
                "fail {}",
                q(format!(
                    "bond {}: mode {} needs the kernel bonding driver (the userspace bond \
                     refuses it); use driver = \"kernel\" on nodes that have it",
                    b.name, b.mode
                ))
            );
        }
    }
    if node.mptcp.is_some() {
        s += MPTCP_CHECKS;
        s += MPTCP_READERS;
    }
    if let Some(e) = &node.ecmp {
        s += "[ -e /proc/sys/net/ipv4/fib_multipath_hash_policy ] \\\n    || fail \"the kernel has no multipath routes (CONFIG_IP_ROUTE_MULTIPATH): ECMP needs them\"\n";
        // The node addresses must be ours alone: on a machine that already uses the network
        // they come from, routes to them would take over someone else's traffic.
        let _ = writeln!(
            s,
            "[ -z \"$(ip -4 -o addr show to {p})$(ip -4 route show root {p})$(ip -4 route show match {p} | grep -v '^default')\" ] \\\n    || fail {msg}",
            p = q(e.prefix.to_string()),
            msg = q(format!(
                "ECMP's node addresses come from {}, which this node already uses (an address \
                 in it, or a route to or over it), so routes to them could take its traffic",
                e.prefix
            ))
        );
    }
    s += "if [ -s \"$ledger\" ]; then\n    fail \"ledger $ledger is not empty: an earlier run was not torn down; run its teardown first\"\nfi\nmkdir -p \"$(dirname \"$ledger\")\"\n: >\"$ledger\"\n";
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        let _ = write!(s, "\n# {n}. {}\n", step.describe());
        if let Some(note) = step.note() {
            let _ = writeln!(s, "# {note}");
        }
        let _ = writeln!(s, "{}", step.apply(n));
    }
    let _ = write!(
        s,
        "\n# The ledger as it stands, for the controller to keep in the run directory: should this\n\
         # node lose it, teardown still knows what the run changed.\n\
         sed 's/^/{LEDGER_COPY_PREFIX}/' \"$ledger\"\n"
    );
    s
}

/// Apply-script checks and helper for userspace bonds. The worker is found on PATH unless
/// ORCHESTRATE_WORKER names it. `start_bond` records the process id before waiting for the
/// bond's ready line, so a bond that starts but never gets ready is still stopped by teardown.
fn userspace_bond_checks() -> String {
    // The worker's own words for a bond named $dev that writes its stats in the run directory.
    let head: Vec<String> = BondArgs::head_args("$dev", "$rundir/bond-$dev.stats")
        .iter()
        .map(|w| expanded(w))
        .collect();
    format!(
        r#"worker=${{ORCHESTRATE_WORKER:-orchestrate-worker}}
command -v "$worker" >/dev/null 2>&1 \
    || fail "$worker is not installed: the userspace bond needs it (or set ORCHESTRATE_WORKER)"
[ -c /dev/net/tun ] || fail "/dev/net/tun is missing: the userspace bond needs the kernel's TUN driver"
rundir=$(dirname "$ledger")
start_bond() {{
    n=$1; dev=$2; shift 2
    log="$rundir/bond-$dev.log"
    nohup "$worker" {head} "$@" \
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
}}
"#,
        head = head.join(" ")
    )
}

/// Apply-script checks for Multipath TCP: the kernel must have it on (a node without it is
/// refused before any change, not measured as plain TCP), and `ip` must know `mptcp`.
const MPTCP_CHECKS: &str = r#"[ "$(sysctl -n net.mptcp.enabled 2>/dev/null)" = 1 ] \
    || fail "Multipath TCP is off in this kernel (net.mptcp.enabled is not 1, or CONFIG_MPTCP is not set)"
ip mptcp limits show >/dev/null 2>&1 || fail "ip (iproute2) here has no mptcp command, or the kernel no MPTCP path manager"
"#;

/// Shell helpers reading Multipath TCP's state, for both scripts: `mptcp_limits` prints the
/// limits as `ip mptcp limits set` takes them back; `mptcp_endpoint_id` finds the id the
/// kernel gave an address's endpoint.
const MPTCP_READERS: &str = r#"mptcp_limits() { ip mptcp limits show | tr -s ' \n' '  ' | sed 's/ *$//'; }
mptcp_endpoint_id() {
    ip mptcp endpoint show | while read -r addr word id rest; do
        if [ "$addr" = "$1" ] && [ "$word" = id ]; then echo "$id"; break; fi
    done
}
"#;

/// Teardown helpers for Multipath TCP: `restore_mptcp_limits` puts back the limits
/// `mptcp_limits` recorded, refusing anything but the words and numbers it writes (the value
/// is split into arguments); `mptcp_limits_are` checks that the limits a run set are in force.
const MPTCP_RESTORE: &str = r#"restore_mptcp_limits() {
    case "$1" in ''|*[!a-z0-9_\ ]*) echo "unexpected MPTCP limits in the ledger: $1" >&2; return 1 ;; esac
    ip mptcp limits set $1
}
mptcp_limits_are() {
    l=" $(mptcp_limits) "
    case "$l" in *" subflows $1 "*) ;; *) return 1 ;; esac
    case "$l" in *" add_addr_accepted $2 "*) ;; *) return 1 ;; esac
}
"#;

/// Teardown helper for userspace bonds: stop the recorded process if it is still the bond
/// (the process id may have been reused), print its final counters on stdout, and remove its
/// log and stats files. The TUN device goes with the process.
fn userspace_bond_stop() -> String {
    // A bond is known by the words it was started with: `bond --name DEV`.
    let head = BondArgs::head_args("$dev", "");
    format!(
        r#"rundir=$(dirname "$ledger")
stop_bond() {{
    pid=$1; dev=$2
    if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- " {subcommand} {name_flag} $dev "; then
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
}}
"#,
        subcommand = head[0],
        name_flag = head[1]
    )
}

/// The line the controller puts before a teardown script to hand it the run's copy of the
/// node's ledger. Only ledger lines as apply scripts write them are accepted (a step number of
/// the script's `steps`, then letters, digits, blanks and `_.:/,-`), so the copy, read from the
/// run directory, cannot carry shell (a quote, an expansion, a glob) onto the node.
pub fn copy_preamble(copy: &[String], steps: usize) -> Result<String, String> {
    for line in copy {
        let (n, value) = line.split_once(' ').unwrap_or((line, ""));
        let step_ok = n.parse::<usize>().is_ok_and(|n| (1..=steps).contains(&n));
        // What `recorded` writes: numbers, words, tab-separated sysctl values.
        let value_ok = value.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, ' ' | '\t' | '_' | '.' | ':' | '/' | ',' | '-')
        });
        if !step_ok || !value_ok {
            return Err(format!(
                "the run's copy of the ledger holds {line:?}, which no apply script of {steps} \
                 steps writes"
            ));
        }
    }
    Ok(format!("{COPY_VARIABLE}='{}'\n", copy.join("\n")))
}

/// A word the shell expands (it names a variable) in double quotes, any other as it is.
fn expanded(word: &str) -> String {
    if word.contains('$') {
        format!("\"{word}\"")
    } else {
        word.to_owned()
    }
}

fn teardown_script(t: &Topology, node: &Node, steps: &[Step]) -> String {
    let mut s = String::new();
    let who = format!("{} on {}", t.name, node.name);
    let _ = write!(
        s,
        r#"#!/bin/sh
# Teardown {who}.
# Undoes, in reverse, each change the ledger (first argument, default {DEFAULT_LEDGER})
# records, and forgets it once undone; a change that cannot be undone stays in the ledger and
# makes the script fail, so it can be retried. Nothing the ledger does not name is touched.
#
# A line before this script may set {COPY_VARIABLE} to the controller's copy of
# this node's ledger, kept in the run directory. A step the copy holds and the node's ledger
# does not (the ledger was lost, or cut short) is undone only if its change is still exactly
# as the run made it; otherwise it is left alone and named, and the script fails.
set -u
ledger=${{1:-{DEFAULT_LEDGER}}}
status=0
has() {{ grep -q "^$1\( \|\$\)" "$ledger"; }}
value_of() {{ sed -n "s/^$1 //p" "$ledger" | tail -n 1; }}
forget() {{ rest=$(grep -v "^$1\( \|\$\)" "$ledger"); printf '%s' "$rest${{rest:+
}}" >"$ledger"; }}
from_copy=' '
if [ -n "${{{COPY_VARIABLE}:-}}" ]; then
    mkdir -p "$(dirname "$ledger")" && : >>"$ledger" \
        || {{ echo "teardown {who}: cannot write $ledger" >&2; exit 1; }}
    old_ifs=$IFS
    IFS='
'
    for line in ${COPY_VARIABLE}; do
        n=${{line%%[!0-9]*}}
        has "$n" && continue
        printf '%s\n' "$line" >>"$ledger"
        from_copy="$from_copy$n "
    done
    IFS=$old_ifs
fi
if [ ! -f "$ledger" ]; then echo {NO_LEDGER_LINE}; exit 0; fi
[ "$from_copy" = ' ' ] || echo "{FROM_COPY_PREFIX}$from_copy"
checked() {{ [ "${{from_copy#* $1 }}" != "$from_copy" ]; }}
left_alone() {{
    echo "teardown {who}: left alone step $1 ($2): it is no longer as the run made it" >&2
    forget "$1"; status=1
}}
undo() {{
    n=$1; shift
    has "$n" || return 0
    if "$@"; then forget "$n"; else echo "teardown {who}: step $n failed: $*" >&2; status=1; fi
}}
link_is_up() {{ ip -o link show dev "$1" | grep -q '[<,]UP[,>]'; }}
release_slave() {{ ip link set dev "$1" nomaster && ip link set dev "$1" "$2"; }}
"#
    );
    if steps.iter().any(|x| matches!(x, Step::AddBond { .. })) {
        s += KERNEL_BOND_DELETE;
    }
    if steps
        .iter()
        .any(|x| matches!(x, Step::StartUserspaceBond { .. }))
    {
        s += &userspace_bond_stop();
    }
    if steps
        .iter()
        .any(|x| matches!(x, Step::MptcpLimits { .. } | Step::MptcpEndpoint { .. }))
    {
        s += MPTCP_READERS;
        s += MPTCP_RESTORE;
    }
    for (i, step) in steps.iter().enumerate().rev() {
        let n = i + 1;
        let what = step.describe();
        let _ = write!(
            s,
            "\n# {n}. {what}\nif has {n} && checked {n} && ! {{ {}; }}; then left_alone {n} {}; fi\n{}\n",
            step.still_made(n),
            q(&what),
            step.undo(n)
        );
    }
    // The ledger's directory is the tool's own (apply makes it): it goes too once nothing
    // else is in it, so a torn-down node keeps no trace of the run.
    s += "\nif [ ! -s \"$ledger\" ]; then\n    rm -f \"$ledger\"\n    rmdir \"$(dirname \"$ledger\")\" 2>/dev/null || :\nfi\nexit $status\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_copy_of_ledger_lines_becomes_one_quoted_assignment() {
        let copy = lines(&["1", "2 down", "5 4096\t131072\t6291456", "7 subflows 2"]);
        let line = copy_preamble(&copy, 7).unwrap();
        assert_eq!(line, format!("{COPY_VARIABLE}='{}'\n", copy.join("\n")));
        // The shell reads back exactly the lines.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{line}printf '%s' \"${COPY_VARIABLE}\""))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), copy.join("\n"));
    }

    #[test]
    fn a_copy_no_apply_script_could_have_written_is_refused() {
        for bad in [
            "0 x",         // no step 0
            "8",           // beyond the script's steps
            "x 1",         // not a step number
            "3 it's",      // a quote would end the assignment
            "3 $(reboot)", // expansions
            "3 `id`",
            "3 a\\b",
            "3 a\"b",
            "3 *", // a glob
            "3 a;b",
            "",
        ] {
            assert!(
                copy_preamble(&lines(&["1", bad]), 7).is_err(),
                "{bad:?} was accepted"
            );
        }
    }
}
