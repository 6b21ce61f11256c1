//! One change to a node and its exact inverse.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use orchestrate_worker::bond::BondArgs;
use serde::Serialize;

use crate::spec::IfName;
use crate::topology::{Bond, BondMode, DriverChoice, MultipathRoute, Route};

/// A change the apply script makes. Every value here is typed and validated, and is still
/// quoted when rendered.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Bring an interface up if it is down (and only then take it down again).
    LinkUp {
        dev: IfName,
    },
    /// Create a kernel bond.
    AddBond {
        bond: Bond,
    },
    /// Start the worker's userspace bond (`orchestrate-worker bond`) in the background: a TUN
    /// device carrying the bond's address, the slaves carrying its frames. The ledger records
    /// the process id; teardown stops the process, which removes the TUN device.
    StartUserspaceBond {
        bond: Bond,
    },
    /// Enslave an interface to a bond (it must be down to be enslaved).
    Enslave {
        dev: IfName,
        bond: IfName,
    },
    AddAddress {
        address: Ipv4Net,
        dev: IfName,
    },
    AddRoute {
        route: Route,
    },
    /// A route over one or more equal-cost next hops (ECMP), sent from the node's own
    /// address.
    AddMultipathRoute {
        route: MultipathRoute,
    },
    /// Set a sysctl, remembering the old value.
    Sysctl {
        key: &'static str,
        value: &'static str,
    },
    /// Set the Multipath TCP path manager's limits (extra subflows per connection, and
    /// addresses accepted from peers), remembering the old ones.
    MptcpLimits {
        subflows: u8,
        add_addr_accepted: u8,
    },
    /// Announce an address to Multipath TCP peers (a `signal` endpoint), remembering the id
    /// the kernel gives it.
    MptcpEndpoint {
        address: Ipv4Addr,
        dev: IfName,
    },
}

/// `'...'` quoting for sh: safe for any string. Values are already restricted to names,
/// numbers and addresses; quoting anyway means a future type with a looser check cannot open
/// an injection.
pub fn q(s: impl AsRef<str>) -> String {
    shlex::try_quote(s.as_ref())
        .expect("no NUL bytes in validated values")
        .into_owned()
}

/// The worker's userspace bond carrying `bond`, with the options its mode takes.
fn userspace_bond(bond: &Bond) -> BondArgs {
    BondArgs {
        name: bond.name.to_string(),
        address: bond.address.to_string(),
        mode: bond.mode,
        slaves: bond.slaves.iter().map(|s| s.to_string()).collect(),
        miimon: bond.miimon,
        primary: bond
            .primary
            .as_ref()
            .filter(|_| bond.mode == BondMode::ActiveBackup)
            .map(|p| p.to_string()),
        xmit_hash_policy: bond
            .xmit_hash_policy
            .filter(|_| bond.mode == BondMode::BalanceXor),
        stats_file: None,
    }
}

impl Step {
    /// What a person reads in the plan.
    pub fn describe(&self) -> String {
        match self {
            Step::LinkUp { dev } => format!("bring {dev} up"),
            Step::AddBond { bond } => format!("create bond {} ({})", bond.name, bond.mode),
            Step::StartUserspaceBond { bond } => format!(
                "start userspace bond {} ({}) over {}",
                bond.name,
                bond.mode,
                bond.slaves
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Step::Enslave { dev, bond } => format!("enslave {dev} to {bond}"),
            Step::AddAddress { address, dev } => format!("address {address} on {dev}"),
            Step::AddRoute { route } => {
                format!("route {} via {} dev {}", route.to, route.via, route.dev)
            }
            Step::AddMultipathRoute { route } => {
                let hops: Vec<String> = route
                    .nexthops
                    .iter()
                    .map(|h| format!("{} dev {}", h.via, h.dev))
                    .collect();
                format!(
                    "route {} from {} via {}",
                    route.to,
                    route.src,
                    hops.join(" or ")
                )
            }
            Step::Sysctl { key, value } => format!("sysctl {key}={value}"),
            Step::MptcpLimits {
                subflows,
                add_addr_accepted,
            } => format!(
                "MPTCP limits: {subflows} extra subflow(s), {add_addr_accepted} peer address(es) accepted"
            ),
            Step::MptcpEndpoint { address, dev } => {
                format!("MPTCP: announce {address} on {dev}")
            }
        }
    }

    /// The programs this step's apply and undo lines and their helpers call, beyond those
    /// every script calls (`script::BASE_TOOLS`). Checked on the node before any change; a
    /// test holds this to what the rendered scripts call.
    pub fn tools(&self) -> &'static [&'static str] {
        match self {
            Step::LinkUp { .. }
            | Step::Enslave { .. }
            | Step::AddAddress { .. }
            | Step::AddRoute { .. }
            | Step::AddMultipathRoute { .. }
            | Step::MptcpEndpoint { .. } => &[],
            // The MPTCP checks read net.mptcp.enabled; mptcp_limits squeezes `ip mptcp limits
            // show` onto one line.
            Step::MptcpLimits { .. } => &["sysctl", "tr"],
            // start_bond and stop_bond; the worker itself is checked on its own.
            Step::StartUserspaceBond { .. } => &["nohup", "sleep", "tr"],
            Step::Sysctl { .. } => &["sysctl"],
            // del_bond unloads the bonding module the apply loaded.
            Step::AddBond { .. } => &["modprobe"],
        }
    }

    /// A comment for the script reader about how the step was chosen, if it needs one.
    pub fn note(&self) -> Option<&'static str> {
        match self {
            Step::AddBond { bond } if bond.driver == DriverChoice::Auto => Some(
                "driver = \"auto\": rendered for the kernel's bonding driver; where the node's \
                 probe finds none,\n# the runner renders this bond for the userspace bond \
                 (orchestrate-worker bond) instead.",
            ),
            Step::StartUserspaceBond { .. } => Some(
                "driver = \"userspace\": a TUN device carries the address; IP packets travel \
                 below IP on the\n# slaves in Ethernet frames of ethertype 0x88B5.",
            ),
            _ => None,
        }
    }

    /// Shell lines that make the change and then record step `n` in the ledger. Steps whose
    /// undo is harmless when the change only half happened record first, so a failure halfway
    /// is still undone.
    pub fn apply(&self, n: usize) -> String {
        match self {
            Step::LinkUp { dev } => format!(
                "if ! link_is_up {d}; then ip link set dev {d} up; recorded {n}; fi",
                d = q(dev)
            ),
            Step::AddBond { bond } => {
                let mut cmd = format!(
                    "ip link add {} type bond mode {}",
                    q(&bond.name),
                    q(bond.mode.as_str())
                );
                if let Some(m) = bond.miimon {
                    cmd += &format!(" miimon {m}");
                }
                if let Some(x) = bond.xmit_hash_policy {
                    cmd += &format!(" xmit_hash_policy {}", q(x.as_str()));
                }
                // Whether the bonding module was there before: the kernel loads it for the
                // first bond, and the teardown unloads it only if this step did.
                format!(
                    "if [ -d /sys/module/bonding ]; then was=loaded; else was=absent; fi; \
                     {cmd}; recorded {n} \"$was\""
                )
            }
            Step::StartUserspaceBond { bond } => {
                // `start_bond` gives the worker the bond's name and stats file itself.
                let words: Vec<String> =
                    userspace_bond(bond).carriage_args().iter().map(q).collect();
                format!("start_bond {n} {} {}", q(&bond.name), words.join(" "))
            }
            Step::Enslave { dev, bond } => format!(
                "recorded {n} \"$(link_state {d})\"; ip link set dev {d} down; ip link set dev {d} master {b}",
                d = q(dev),
                b = q(bond)
            ),
            Step::AddAddress { address, dev } => {
                format!(
                    "ip addr add {} dev {}; recorded {n}",
                    q(address.to_string()),
                    q(dev)
                )
            }
            Step::AddRoute { route } => format!(
                "ip route add {} via {} dev {}; recorded {n}",
                q(route.to.to_string()),
                q(route.via.to_string()),
                q(&route.dev)
            ),
            Step::AddMultipathRoute { route } => {
                format!(
                    "ip route add {}; recorded {n}",
                    multipath_route_words(route)
                )
            }
            // Already at the value: nothing to change, so nothing to record or undo.
            Step::Sysctl { key, value } => format!(
                "old=$(sysctl -n {k})\nif [ \"$old\" != {v} ]; then recorded {n} \"$old\"; sysctl -qw {kv}; fi",
                k = q(key),
                v = q(value),
                kv = q(format!("{key}={value}"))
            ),
            // The old limits first: restoring them is harmless if the change did not happen.
            Step::MptcpLimits {
                subflows,
                add_addr_accepted,
            } => format!(
                "recorded {n} \"$(mptcp_limits)\"; ip mptcp limits set subflows {subflows} add_addr_accepted {add_addr_accepted}"
            ),
            // The id exists only once the endpoint does.
            Step::MptcpEndpoint { address, dev } => format!(
                "ip mptcp endpoint add {a} dev {d} signal; recorded {n} \"$(mptcp_endpoint_id {a})\"",
                a = q(address.to_string()),
                d = q(dev)
            ),
        }
    }

    /// A shell condition that holds while step `n`'s change is on the node exactly as the
    /// apply script made it. Teardown asks it only of steps it knows from the run's copy of
    /// the ledger rather than from the node's own (see `script.rs`): a change someone has
    /// altered or removed since is left alone and named, not undone over their work.
    pub fn still_made(&self, n: usize) -> String {
        match self {
            Step::LinkUp { dev } => format!("link_is_up {}", q(dev)),
            Step::AddBond { bond } => format!(
                "ip -o -d link show dev {} 2>/dev/null | grep -qF {}",
                q(&bond.name),
                q(format!(" bond mode {} ", bond.mode.as_str()))
            ),
            // `stop_bond` stops the recorded process only if it is still this bond.
            Step::StartUserspaceBond { .. } => "true".into(),
            Step::Enslave { dev, bond } => format!(
                "ip -o link show dev {} 2>/dev/null | grep -qF {}",
                q(dev),
                q(format!(" master {bond} "))
            ),
            Step::AddAddress { address, dev } => format!(
                "ip -4 -o addr show dev {} 2>/dev/null | grep -qF {}",
                q(dev),
                q(format!(" inet {address} "))
            ),
            Step::AddRoute { route } => format!(
                "[ -n \"$(ip -4 route show exact {} via {} dev {} 2>/dev/null)\" ]",
                q(route.to.to_string()),
                q(route.via.to_string()),
                q(&route.dev)
            ),
            Step::AddMultipathRoute { route } => format!(
                "ip -4 route show exact {} 2>/dev/null | grep -qF {}",
                q(route.to.to_string()),
                q(format!("src {}", route.src))
            ),
            Step::Sysctl { key, value } => {
                format!("[ \"$(sysctl -n {})\" = {} ]", q(key), q(value))
            }
            Step::MptcpLimits {
                subflows,
                add_addr_accepted,
            } => format!("mptcp_limits_are {subflows} {add_addr_accepted}"),
            Step::MptcpEndpoint { address, .. } => format!(
                "[ \"$(mptcp_endpoint_id {})\" = \"$(value_of {n})\" ]",
                q(address.to_string())
            ),
        }
    }

    /// The inverse, run by teardown only if step `n` is in the ledger.
    pub fn undo(&self, n: usize) -> String {
        match self {
            Step::LinkUp { dev } => format!("undo {n} ip link set dev {} down", q(dev)),
            Step::AddBond { bond } => {
                format!("undo {n} del_bond {} \"$(value_of {n})\"", q(&bond.name))
            }
            Step::StartUserspaceBond { bond } => {
                format!("undo {n} stop_bond \"$(value_of {n})\" {}", q(&bond.name))
            }
            Step::Enslave { dev, .. } => {
                format!("undo {n} release_slave {} \"$(value_of {n})\"", q(dev))
            }
            Step::AddAddress { address, dev } => {
                format!(
                    "undo {n} ip addr del {} dev {}",
                    q(address.to_string()),
                    q(dev)
                )
            }
            Step::AddRoute { route } => format!(
                "undo {n} ip route del {} via {} dev {}",
                q(route.to.to_string()),
                q(route.via.to_string()),
                q(&route.dev)
            ),
            Step::AddMultipathRoute { route } => {
                format!("undo {n} ip route del {}", multipath_route_words(route))
            }
            Step::Sysctl { key, .. } => format!("undo {n} sysctl -qw \"{}=$(value_of {n})\"", key),
            Step::MptcpLimits { .. } => {
                format!("undo {n} restore_mptcp_limits \"$(value_of {n})\"")
            }
            Step::MptcpEndpoint { .. } => {
                format!("undo {n} ip mptcp endpoint delete id \"$(value_of {n})\"")
            }
        }
    }
}

/// `<to> src <src>` and its next hops, as `ip route add` takes them and `ip route del`
/// matches them (the kernel deletes only a route with this source and these next hops).
fn multipath_route_words(route: &MultipathRoute) -> String {
    let mut words = format!(
        "{} src {}",
        q(route.to.to_string()),
        q(route.src.to_string())
    );
    match route.nexthops.as_slice() {
        [one] => words += &format!(" via {} dev {}", q(one.via.to_string()), q(&one.dev)),
        hops => {
            for h in hops {
                words += &format!(" nexthop via {} dev {}", q(h.via.to_string()), q(&h.dev));
            }
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_reach_the_command_unchanged() {
        for word in [
            "eth1",
            "a b",
            "$(reboot)",
            "`id`",
            "it's",
            "a\"b;c",
            "x\\y",
            "*",
            "-n",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf '%s' {}", q(word)))
                .output()
                .expect("sh runs");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                word,
                "quoted as {}",
                q(word)
            );
        }
    }
}
