//! What a netns cluster is made of, planned from its name, its wiring and its management
//! subnet alone, and written into the state file before any of it is made: `down` removes
//! exactly this (and whatever else carries the cluster's names).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::ClusterName;
use crate::vcluster::wires::{Wiring, switch_service};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetnsRecord {
    /// The management network; the host's bridge holds its first address.
    pub subnet: Ipv4Net,
    /// The management bridge on the host.
    pub bridge: String,
    /// Every node, then every switch, each in its own namespace.
    pub members: Vec<Member>,
    /// Each node's sshd, once started.
    #[serde(default)]
    pub sshd: Vec<Sshd>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Node,
    Switch,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// The topology's name for it (a switch's by its service name, as its wires name it).
    pub name: String,
    pub role: Role,
    pub namespace: String,
    /// A node's address on the management network (`mgmt0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Ipv4Addr>,
    /// The host end of a node's management veth, on the bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mgmt_end: Option<String>,
}

/// An sshd process as started: its pid, and its start time (clock ticks after boot, field 22
/// of /proc/<pid>/stat), so that a later process with the same pid is never taken for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sshd {
    pub node: String,
    pub pid: u32,
    pub started: u64,
}

impl NetnsRecord {
    /// The bridge's address, the nodes' gateway to the host.
    pub fn gateway(&self) -> Ipv4Addr {
        nth_address(self.subnet, 1)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.role == Role::Node)
    }

    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    /// The namespaces, in member order.
    pub fn namespaces(&self) -> Vec<String> {
        self.members.iter().map(|m| m.namespace.clone()).collect()
    }

    /// The host's links of the management network: the bridge, then the nodes' veth ends.
    pub fn mgmt_links(&self) -> Vec<String> {
        std::iter::once(self.bridge.clone())
            .chain(self.members.iter().filter_map(|m| m.mgmt_end.clone()))
            .collect()
    }
}

fn nth_address(net: Ipv4Net, n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(net.network()) + n)
}

/// The cluster's namespaces, management links and addresses: node `k` is namespace
/// `namespace(k)` with address `subnet + 2 + k`; switch `j` is namespace `namespace(nodes + j)`.
pub fn plan(c: &ClusterName, wiring: &Wiring, subnet: Ipv4Net) -> Result<NetnsRecord> {
    // The network and broadcast addresses and the gateway are not the nodes'.
    let room = (1u64 << (32 - u32::from(subnet.prefix_len()))).saturating_sub(3);
    if wiring.nodes.len() as u64 > room {
        return Err(Error::Wiring(format!(
            "{} nodes do not fit the management subnet {subnet} ({room} addresses)",
            wiring.nodes.len()
        )));
    }
    let nodes = wiring.nodes.iter().enumerate().map(|(k, n)| Member {
        name: n.name.clone(),
        role: Role::Node,
        namespace: c.namespace(k),
        address: Some(nth_address(subnet, 2 + k as u32)),
        mgmt_end: Some(c.mgmt_end(k)),
    });
    let switches = wiring.switches.iter().enumerate().map(|(j, sw)| Member {
        name: switch_service(&sw.name),
        role: Role::Switch,
        namespace: c.namespace(wiring.nodes.len() + j),
        address: None,
        mgmt_end: None,
    });
    Ok(NetnsRecord {
        subnet,
        bridge: c.mgmt_bridge(),
        members: nodes.chain(switches).collect(),
        sshd: Vec::new(),
    })
}

/// A record as `up` writes it, with one sshd started: for tests of what stores it.
#[cfg(test)]
pub fn sample(c: &ClusterName, wiring: &Wiring) -> NetnsRecord {
    let mut r = plan(c, wiring, "10.250.8.0/21".parse().expect("a network")).expect("it fits");
    r.sshd.push(Sshd {
        node: wiring.nodes[0].name.clone(),
        pid: 4242,
        started: 123_456,
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::wires::mesh;

    #[test]
    fn every_member_gets_its_namespace_and_every_node_an_address_of_its_own() {
        let c = ClusterName::parse("mesh").unwrap();
        let w = mesh(true);
        let r = plan(&c, &w, "10.250.8.0/21".parse().unwrap()).unwrap();
        assert_eq!(r.members.len(), w.nodes.len() + w.switches.len());
        assert_eq!(r.gateway(), "10.250.8.1".parse::<Ipv4Addr>().unwrap());
        let addresses: Vec<Ipv4Addr> = r.nodes().filter_map(|m| m.address).collect();
        assert_eq!(addresses.len(), w.nodes.len());
        assert_eq!(addresses[0], "10.250.8.2".parse::<Ipv4Addr>().unwrap());
        let mut unique = addresses.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), addresses.len());
        assert!(!addresses.contains(&r.gateway()));
        for m in &r.members {
            assert!(c.owns_namespace(&m.namespace), "{m:?}");
            assert_eq!(m.role == Role::Node, m.mgmt_end.is_some(), "{m:?}");
        }
        let mut ns = r.namespaces();
        ns.dedup();
        assert_eq!(ns.len(), r.members.len());
        assert!(r.mgmt_links().iter().all(|l| c.owns_mgmt_link(l)));
    }

    #[test]
    fn too_many_nodes_for_the_subnet_are_refused() {
        let c = ClusterName::parse("mesh").unwrap();
        let w = mesh(true);
        // A /30 holds one node beside the gateway.
        let err = plan(&c, &w, "10.250.8.0/30".parse().unwrap()).unwrap_err();
        assert!(err.to_string().contains("do not fit"), "{err}");
    }
}
