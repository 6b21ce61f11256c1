//! What a netns cluster is made of, planned from its name, its wiring and its management
//! subnet alone, and written into the state file before any of it is made: `down` removes
//! exactly this (and whatever else carries the cluster's names).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::ClusterName;
use crate::vcluster::wires::{Wiring, switch_service};

/// Nodes on one management bridge: a Linux bridge takes at most 1023 ports.
pub const NODES_PER_BRIDGE: usize = 1000;
/// Each bridge's share of the management subnet: room for [`NODES_PER_BRIDGE`] nodes.
const BRIDGE_PREFIX_LEN: u8 = 22;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetnsRecord {
    /// The management network, shared out among the bridges.
    pub subnet: Ipv4Net,
    /// The management bridges on the host, each holding its share's first address.
    pub bridges: Vec<Bridge>,
    /// Every node, then every switch, each in its own namespace.
    pub members: Vec<Member>,
    /// Each node's sshd, once started.
    #[serde(default)]
    pub sshd: Vec<Sshd>,
    /// The process holding the nodes' template mount namespace while they start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Sshd>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bridge {
    pub name: String,
    /// Its share of the management subnet; the bridge holds the first address, the gateway
    /// of the nodes on it.
    pub subnet: Ipv4Net,
    /// Its MAC address, set when it is made (a bridge would otherwise take its lowest
    /// port's, changing as ports join) so that every node can hold it as a permanent
    /// neighbour entry (see `mgmt::inside_lines`). Absent in clusters brought up before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

impl Bridge {
    pub fn gateway(&self) -> Ipv4Addr {
        nth_address(self.subnet, 1)
    }
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
    /// Which of the bridges a node's veth is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<usize>,
    /// A node's `mgmt0` MAC address, chosen here so that the host can know it without asking
    /// (see `mgmt::create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// Bridge `j`'s MAC address: locally administered, unicast, from the cluster's id, so that
/// two clusters' bridges differ too.
fn bridge_mac(c: &ClusterName, j: usize) -> String {
    let id = u32::from_str_radix(&c.short_id(), 16).unwrap_or(0);
    format!(
        "02:62:{:02x}:{:02x}:{:02x}:{:02x}",
        (id >> 16) & 0xff,
        (id >> 8) & 0xff,
        id & 0xff,
        j & 0xff
    )
}

/// Node `k`'s `mgmt0` MAC address: locally administered, unicast, unique in the cluster.
fn mgmt_mac(k: usize) -> String {
    let b = (k as u32).to_be_bytes();
    format!("02:6f:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3])
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

    /// The host's links of the management network: the bridges, then the nodes' veth ends.
    pub fn mgmt_links(&self) -> Vec<String> {
        self.bridges
            .iter()
            .map(|b| b.name.clone())
            .chain(self.members.iter().filter_map(|m| m.mgmt_end.clone()))
            .collect()
    }

    /// The bridge a member's management veth is on.
    pub fn bridge_of(&self, m: &Member) -> Option<&Bridge> {
        m.bridge.and_then(|j| self.bridges.get(j))
    }
}

fn nth_address(net: Ipv4Net, n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(net.network()) + n)
}

/// The cluster's namespaces, management links and addresses: node `k` is namespace
/// `namespace(k)` on bridge `k / NODES_PER_BRIDGE`, whose share of `subnet` is the `/22`
/// of that number, with the address `2 + k % NODES_PER_BRIDGE` in it; switch `j` is
/// namespace `namespace(nodes + j)`.
pub fn plan(c: &ClusterName, wiring: &Wiring, subnet: Ipv4Net) -> Result<NetnsRecord> {
    let count = wiring.nodes.len().div_ceil(NODES_PER_BRIDGE).max(1);
    let shares: Vec<Ipv4Net> = subnet
        .subnets(BRIDGE_PREFIX_LEN.max(subnet.prefix_len()))
        .map(|s| s.take(count).collect())
        .unwrap_or_default();
    let share_room = shares
        .first()
        .map(|s| (1usize << (32 - u32::from(s.prefix_len()))).saturating_sub(3))
        .unwrap_or(0);
    if shares.len() < count || share_room < NODES_PER_BRIDGE.min(wiring.nodes.len()) {
        return Err(Error::Wiring(format!(
            "{} nodes do not fit the management subnet {subnet} ({} bridges of {} nodes)",
            wiring.nodes.len(),
            shares.len(),
            share_room.min(NODES_PER_BRIDGE)
        )));
    }
    let bridges: Vec<Bridge> = shares
        .iter()
        .enumerate()
        .map(|(j, s)| Bridge {
            name: c.mgmt_bridge(j),
            subnet: *s,
            mac: Some(bridge_mac(c, j)),
        })
        .collect();
    let nodes = wiring.nodes.iter().enumerate().map(|(k, n)| Member {
        name: n.name.clone(),
        role: Role::Node,
        namespace: c.namespace(k),
        address: Some(nth_address(
            shares[k / NODES_PER_BRIDGE],
            2 + (k % NODES_PER_BRIDGE) as u32,
        )),
        mgmt_end: Some(c.mgmt_end(k)),
        bridge: Some(k / NODES_PER_BRIDGE),
        mac: Some(mgmt_mac(k)),
    });
    let switches = wiring.switches.iter().enumerate().map(|(j, sw)| Member {
        name: switch_service(&sw.name),
        role: Role::Switch,
        namespace: c.namespace(wiring.nodes.len() + j),
        address: None,
        mgmt_end: None,
        bridge: None,
        mac: None,
    });
    Ok(NetnsRecord {
        subnet,
        bridges,
        members: nodes.chain(switches).collect(),
        sshd: Vec::new(),
        template: None,
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
        assert_eq!(r.bridges.len(), 1);
        assert_eq!(
            r.bridges[0].gateway(),
            "10.250.8.1".parse::<Ipv4Addr>().unwrap()
        );
        let addresses: Vec<Ipv4Addr> = r.nodes().filter_map(|m| m.address).collect();
        assert_eq!(addresses.len(), w.nodes.len());
        assert_eq!(addresses[0], "10.250.8.2".parse::<Ipv4Addr>().unwrap());
        let mut unique = addresses.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), addresses.len());
        assert!(!addresses.contains(&r.bridges[0].gateway()));
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
    fn more_nodes_than_a_bridge_takes_are_shared_out_among_bridges() {
        let c = ClusterName::parse("big").unwrap();
        let mut b = Wiring::builder("big").segment(
            "bus",
            10_000_000,
            crate::vcluster::wires::Medium::Shared,
        );
        for k in 0..1500 {
            b = b.node(format!("n{k}"), [("eth1", "bus")]);
        }
        let w = b.build().unwrap();
        let r = plan(&c, &w, "10.255.248.0/21".parse().unwrap()).unwrap();
        assert_eq!(r.bridges.len(), 2);
        assert_eq!(
            r.bridges[1].subnet,
            "10.255.252.0/22".parse::<Ipv4Net>().unwrap()
        );
        for m in r.nodes() {
            let bridge = r.bridge_of(m).unwrap();
            assert!(bridge.subnet.contains(&m.address.unwrap()), "{m:?}");
            assert_ne!(m.address.unwrap(), bridge.gateway());
        }
        let on_first = r.nodes().filter(|m| m.bridge == Some(0)).count();
        assert_eq!(on_first, NODES_PER_BRIDGE);
        let mut addresses: Vec<Ipv4Addr> = r.nodes().filter_map(|m| m.address).collect();
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 1500);
        let mut macs: Vec<&str> = r.nodes().filter_map(|m| m.mac.as_deref()).collect();
        macs.sort();
        macs.dedup();
        assert_eq!(macs.len(), 1500);
        assert!(
            macs.iter().all(|m| m.starts_with("02:")),
            "locally administered"
        );
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
