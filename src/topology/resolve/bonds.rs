//! Bonds: each checked against its node's interfaces and the options its mode takes; then the
//! rule they make possible, that a node attaches to a network once except through a bond.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::spec::topology::{BondDriver, BondMode, DriverChoice};
use crate::spec::{IfName, Name, SpecErrors};
use crate::topology::draft::{Draft, DraftBond};
use crate::topology::graph::Bond;

use super::errors::Errors;
use super::nodes::NodeIndex;
use super::wiring::Wiring;

/// The checked bonds, still without addresses.
pub(super) struct Bonds {
    /// Per node (by position in the draft), its bonds in the order given.
    pub(super) per_node: Vec<Vec<Bond>>,
    /// The bond each slave interface belongs to, by node position and interface.
    slave_of: BTreeMap<(usize, IfName), IfName>,
}

impl Bonds {
    /// The bond an interface is a slave of, if it is one.
    pub(super) fn master(&self, node: usize, interface: &IfName) -> Option<&IfName> {
        self.slave_of.get(&(node, interface.clone()))
    }

    pub(super) fn is_slave(&self, node: usize, interface: &IfName) -> bool {
        self.master(node, interface).is_some()
    }
}

pub(super) fn check_bonds(
    draft: &Draft,
    nodes: &NodeIndex,
    wiring: &Wiring,
    errs: &mut Errors,
) -> Result<Bonds, SpecErrors> {
    let mut bonds = Bonds {
        per_node: vec![Vec::new(); draft.nodes.len()],
        slave_of: BTreeMap::new(),
    };
    for b in &draft.bonds {
        let (node, nspan) = &b.node;
        let Some(ni) = nodes.find(node, nspan, errs) else {
            continue;
        };
        let ifaces = &wiring.interfaces[ni];
        check_name(b, ifaces, &bonds.per_node[ni], errs);
        check_slaves(b, ni, ifaces, &mut bonds.slave_of, errs);
        check_mode_options(b, errs);
        bonds.per_node[ni].push(Bond {
            name: b.name.0.clone(),
            mode: b.mode.0,
            slaves: b.slaves.iter().map(|(s, _)| s.clone()).collect(),
            miimon: b.miimon,
            xmit_hash_policy: b.xmit_hash_policy.as_ref().map(|(x, _)| *x),
            primary: b.primary.as_ref().map(|(p, _)| p.clone()),
            driver: b.driver,
            address: Ipv4Net::default(),
        });
    }
    errs.check()?;
    Ok(bonds)
}

/// A bond's name is new on its node, and it has slaves.
fn check_name(b: &DraftBond, ifaces: &BTreeMap<IfName, Name>, earlier: &[Bond], errs: &mut Errors) {
    let node = &b.node.0;
    let (name, bspan) = &b.name;
    if ifaces.contains_key(name) {
        errs.push(
            bspan,
            format!("bond `{name}` on {node} has the name of one of its interfaces"),
        );
    }
    if earlier.iter().any(|x| &x.name == name) {
        errs.push(bspan, format!("bond `{name}` is defined twice on {node}"));
    }
    match b.slaves.as_slice() {
        [] => errs.push(bspan, format!("bond `{name}` has no slaves")),
        [(only, sspan)] => errs.push_help(
            sspan,
            format!("bond `{name}` on {node} has one slave; a bond needs two or more"),
            format!("give the address to `{only}` itself, or add a second slave"),
        ),
        _ => {}
    }
}

/// Each slave is an interface of the node and a slave of no other bond.
fn check_slaves(
    b: &DraftBond,
    ni: usize,
    ifaces: &BTreeMap<IfName, Name>,
    slave_of: &mut BTreeMap<(usize, IfName), IfName>,
    errs: &mut Errors,
) {
    let node = &b.node.0;
    let name = &b.name.0;
    for (slave, sspan) in &b.slaves {
        if !ifaces.contains_key(slave) {
            let have: Vec<&str> = ifaces.keys().map(|i| i.as_str()).collect();
            errs.push_help(
                sspan,
                format!("bond `{name}` on {node}: slave `{slave}` is not an interface of {node}"),
                format!(
                    "{node} has {}",
                    if have.is_empty() {
                        "no interfaces".into()
                    } else {
                        have.join(", ")
                    }
                ),
            );
        } else if let Some(other) = slave_of.insert((ni, slave.clone()), name.clone()) {
            errs.push(
                sspan,
                format!("{node}:{slave} is already a slave of bond `{other}`"),
            );
        }
    }
}

/// The transmit hash policy, the primary and the driver each suit the bond's mode.
fn check_mode_options(b: &DraftBond, errs: &mut Errors) {
    let (mode, mspan) = &b.mode;
    if let Some((_, xspan)) = &b.xmit_hash_policy
        && !matches!(
            mode,
            BondMode::BalanceXor
                | BondMode::Ieee8023ad
                | BondMode::BalanceTlb
                | BondMode::BalanceAlb
        )
    {
        errs.push(
            xspan,
            format!("xmit_hash_policy does not apply to mode {mode}"),
        );
    }
    // The userspace bond cannot honour modes that need the switch's cooperation (802.3ad)
    // or ARP rewriting (tlb, alb); say so now rather than when the node runs it.
    if b.driver == DriverChoice::Named(BondDriver::Userspace)
        && matches!(
            mode,
            BondMode::Ieee8023ad | BondMode::BalanceTlb | BondMode::BalanceAlb
        )
    {
        errs.push_help(
            mspan,
            format!("mode {mode} needs the kernel's bonding driver; the userspace bond does not emulate it"),
            "use driver = \"kernel\" on nodes that have it, or balance-rr, active-backup, balance-xor or broadcast".into(),
        );
    }
    if let Some((primary, pspan)) = &b.primary {
        if !matches!(
            mode,
            BondMode::ActiveBackup | BondMode::BalanceTlb | BondMode::BalanceAlb
        ) {
            errs.push(pspan, format!("primary does not apply to mode {mode}"));
        } else if !b.slaves.iter().any(|(s, _)| s == primary) {
            errs.push(
                pspan,
                format!("primary `{primary}` is not one of the bond's slaves"),
            );
        }
    }
}

/// A node may attach to a network once, except through a bond's slaves.
pub(super) fn check_single_attachment(
    draft: &Draft,
    wiring: &Wiring,
    bonds: &Bonds,
    errs: &mut Errors,
) -> Result<(), SpecErrors> {
    for (ni, (node, nspan)) in draft.nodes.iter().enumerate() {
        let mut seen: BTreeMap<Name, &IfName> = BTreeMap::new();
        for (ifname, seg) in &wiring.interfaces[ni] {
            if bonds.is_slave(ni, ifname) {
                continue;
            }
            let net = wiring.network_of(seg);
            if let Some(other) = seen.insert(net.clone(), ifname) {
                errs.push_help(
                    nspan,
                    format!("{node} has both {other} and {ifname} on network `{net}`; a node attaches to a network once"),
                    "bond the two interfaces, or put them on different networks".into(),
                );
            }
        }
    }
    errs.check()
}
