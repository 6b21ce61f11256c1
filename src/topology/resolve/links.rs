//! Which links share a subnet: one subnet per network for plain interfaces, one per set of
//! networks for bonds. Groups are keyed by the networks a link's wires reach; plain networks
//! come first, then bonds.

use crate::spec::{IfName, Name};

use super::bonds::Bonds;
use super::wiring::Wiring;

/// An addressed link (a plain interface or a bond) by node position and interface name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LinkRef {
    pub(super) node: usize,
    pub(super) interface: IfName,
}

/// The links that share one subnet, and the networks it spans.
pub(super) struct LinkGroup {
    pub(super) networks: Vec<Name>,
    pub(super) links: Vec<LinkRef>,
}

pub(super) fn group_links(wiring: &Wiring, bonds: &Bonds) -> Vec<LinkGroup> {
    let mut groups = Vec::new();
    for net in &wiring.networks {
        for (ni, node_ifaces) in wiring.interfaces.iter().enumerate() {
            for (ifname, seg) in node_ifaces {
                if wiring.network_of(seg) == net.name && !bonds.is_slave(ni, ifname) {
                    add_link(
                        &mut groups,
                        vec![net.name.clone()],
                        LinkRef {
                            node: ni,
                            interface: ifname.clone(),
                        },
                    );
                }
            }
        }
    }
    for (ni, node_bonds) in bonds.per_node.iter().enumerate() {
        for b in node_bonds {
            let mut key: Vec<Name> = b
                .slaves
                .iter()
                .map(|s| wiring.network_of(&wiring.interfaces[ni][s]))
                .collect();
            key.sort();
            add_link(
                &mut groups,
                key,
                LinkRef {
                    node: ni,
                    interface: b.name.clone(),
                },
            );
        }
    }
    groups
}

fn add_link(groups: &mut Vec<LinkGroup>, networks: Vec<Name>, link: LinkRef) {
    match groups.iter_mut().find(|g| g.networks == networks) {
        Some(g) => g.links.push(link),
        None => groups.push(LinkGroup {
            networks,
            links: vec![link],
        }),
    }
}
