//! The resolved topology: every node, wire, address and route, checked and ready to render.
//! Nothing in here refers back to the spec's text; it is what the rest of the tool works on.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

pub use crate::spec::multipath::MultipathHash;
pub use crate::spec::topology::{
    BondDriver, BondMode, DriverChoice, Emulation, Medium, XmitHashPolicy,
};
use crate::spec::{IfName, Name, NodeName, Rate};
pub use orchestrate_medium::host::HostCosts;

#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    pub name: Name,
    pub description: Option<String>,
    pub nodes: Vec<Node>,
    pub segments: Vec<Segment>,
    /// Layer-2 networks: a segment on its own, or segments joined by a switch.
    pub networks: Vec<Network>,
    /// Layer-3 subnets, one per network (or per set of networks a bond spans).
    pub subnets: Vec<Subnet>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub name: NodeName,
    /// Physical interfaces, in the order the topology names them.
    pub interfaces: Vec<Interface>,
    pub bonds: Vec<Bond>,
    pub routes: Vec<Route>,
    /// Whether the node forwards packets between its networks (some route goes through it).
    pub forwarding: bool,
    /// What the node's CPU spends per frame, as the medium emulator charges it.
    pub host: NamedHostCosts,
    /// Multipath TCP's addresses, where the configuration runs it (see
    /// [`Topology::with_mptcp`]); None where TCP stays on one path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<MptcpEndpoints>,
    /// The node's own address and its routes over every equal-cost path, where the
    /// configuration routes with ECMP (see [`Topology::with_ecmp`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecmp: Option<Ecmp>,
}

/// Equal-cost multipath routing on one node: an address of its own on `lo` (a /32 no wire
/// carries, so every path to it is as good as another), and a route to every other node's
/// such address over each neighbour one hop closer to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ecmp {
    pub address: Ipv4Addr,
    /// The network every node's such address comes from; no subnet of the topology overlaps
    /// it, and the apply script refuses a node that already uses it.
    pub prefix: Ipv4Net,
    /// Set on the node: what the kernel hashes to pick a next hop.
    pub hash: MultipathHash,
    pub routes: Vec<MultipathRoute>,
}

/// `ip route add <to> src <src> nexthop via <a> dev <x> nexthop via <b> dev <y> ...`: the
/// kernel sends each flow to one of the next hops by its multipath hash. `src` makes the node
/// send from its own address, so that replies come back over multipath routes too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MultipathRoute {
    pub to: Ipv4Net,
    pub src: Ipv4Addr,
    /// One or more, in the order of the neighbours' nodes.
    pub nexthops: Vec<NextHop>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextHop {
    pub via: Ipv4Addr,
    pub dev: IfName,
}

/// The addresses a node announces to its Multipath TCP peers (the kernel path manager's
/// `signal` endpoints): every address it holds, so whichever one a connection starts on, the
/// peer opens one more subflow to each of the others. Two or more, by construction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MptcpEndpoints {
    endpoints: Vec<(IfName, Ipv4Addr)>,
}

impl MptcpEndpoints {
    /// The node's addressed links, if it has two or more (else MPTCP has nothing to add).
    pub fn of(node: &Node) -> Option<MptcpEndpoints> {
        let endpoints: Vec<(IfName, Ipv4Addr)> = node
            .links()
            .map(|(dev, net)| (dev.clone(), net.addr()))
            .collect();
        (endpoints.len() >= 2).then_some(MptcpEndpoints { endpoints })
    }

    pub fn endpoints(&self) -> &[(IfName, Ipv4Addr)] {
        &self.endpoints
    }

    /// The path manager's limits (`subflows`, `add_addr_accepted`) on every node: one per
    /// address. A connection adds one subflow per other address of its peer, but the peer may
    /// also announce the address the connection started on, and an announcement accepted
    /// counts against the limit whether or not it opens a subflow: with one fewer, half the
    /// connections on the virtual cluster's dual bus kept a single subflow.
    pub fn path_limit(&self) -> u8 {
        u8::try_from(self.endpoints.len()).unwrap_or(u8::MAX)
    }
}

/// A node's host costs and the name they go by (the profile's, or `custom`): the CPU side of
/// an emulated node, not a machine to log in to (that is `remote::Host`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedHostCosts {
    /// The profile (`none`, `486dx4`), or `custom` for costs given by hand.
    pub profile: String,
    pub costs: HostCosts,
}

impl NamedHostCosts {
    pub fn from_spec(spec: &crate::spec::HostSpec) -> NamedHostCosts {
        NamedHostCosts {
            profile: spec.name().to_owned(),
            costs: spec.costs(),
        }
    }

    /// "486dx4 (send 300 µs, receive 300 µs, forward 150 µs per frame)", or "none".
    pub fn describe(&self) -> String {
        if self.costs.is_free() {
            return self.profile.clone();
        }
        let us = |ns: u64| {
            let v = ns as f64 / 1000.0;
            if v.fract() == 0.0 {
                format!("{v:.0} µs")
            } else {
                format!("{v} µs")
            }
        };
        let per_byte = match self.costs.per_byte_ps {
            0 => String::new(),
            ps => format!(", and {} ns per byte", ps as f64 / 1000.0),
        };
        format!(
            "{} (send {}, receive {}, forward {} per frame{per_byte})",
            self.profile,
            us(self.costs.send_ns),
            us(self.costs.receive_ns),
            us(self.costs.forward_ns)
        )
    }
}

impl Default for NamedHostCosts {
    fn default() -> Self {
        NamedHostCosts::from_spec(&crate::spec::HostSpec::default())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Interface {
    pub name: IfName,
    pub segment: Name,
    pub attachment: Attachment,
}

/// What carries an interface's traffic at layer 3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attachment {
    /// The interface has its own address.
    Address(Ipv4Net),
    /// The interface is a slave of the named bond, which holds the address.
    BondSlave(IfName),
}

#[derive(Debug, Clone, Serialize)]
pub struct Bond {
    pub name: IfName,
    pub mode: BondMode,
    pub slaves: Vec<IfName>,
    pub miimon: Option<u32>,
    pub xmit_hash_policy: Option<XmitHashPolicy>,
    pub primary: Option<IfName>,
    pub driver: DriverChoice,
    pub address: Ipv4Net,
}

/// A static route: `ip route add <to> via <via> dev <dev>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    pub to: Ipv4Net,
    pub via: Ipv4Addr,
    pub dev: IfName,
}

#[derive(Debug, Clone, Serialize)]
pub struct Segment {
    pub name: Name,
    pub rate: Rate,
    pub medium: Medium,
    /// How the virtual cluster emulates this wire.
    pub emulation: Emulation,
    pub members: Vec<Port>,
    /// The network this segment belongs to.
    pub network: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Port {
    pub node: NodeName,
    pub interface: IfName,
}

#[derive(Debug, Clone, Serialize)]
pub struct Network {
    pub name: Name,
    pub segments: Vec<Name>,
    /// The switch joining the segments, if there is more than one.
    pub switch: Option<Name>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Subnet {
    pub prefix: Ipv4Net,
    /// The networks whose wires carry this subnet (several for a bond).
    pub networks: Vec<Name>,
    /// The addressed links on it: a plain interface or a bond.
    pub links: Vec<Link>,
}

/// An interface (plain or bond) that holds an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Link {
    pub node: NodeName,
    pub interface: IfName,
    pub address: Ipv4Addr,
}

impl Topology {
    pub fn node(&self, name: &NodeName) -> Option<&Node> {
        self.nodes.iter().find(|n| &n.name == name)
    }

    pub fn node_index(&self, name: &NodeName) -> Option<usize> {
        self.nodes.iter().position(|n| &n.name == name)
    }

    pub fn segment(&self, name: &Name) -> Option<&Segment> {
        self.segments.iter().find(|s| &s.name == name)
    }

    pub fn network(&self, name: &Name) -> Option<&Network> {
        self.networks.iter().find(|n| &n.name == name)
    }

    /// The subnet containing an address, and the link that owns it.
    pub fn owner_of(&self, addr: Ipv4Addr) -> Option<(&Subnet, &Link)> {
        self.subnets
            .iter()
            .find_map(|s| s.links.iter().find(|l| l.address == addr).map(|l| (s, l)))
    }

    /// Names of nodes that forward.
    pub fn forwarding_nodes(&self) -> Vec<&NodeName> {
        self.nodes
            .iter()
            .filter(|n| n.forwarding)
            .map(|n| &n.name)
            .collect()
    }

    /// Segments two nodes have in common (both have an interface on them).
    pub fn shared_segments(&self, a: &NodeName, b: &NodeName) -> BTreeSet<&Name> {
        let on = |n: &NodeName| -> BTreeSet<&Name> {
            self.node(n)
                .map(|n| n.interfaces.iter().map(|i| &i.segment).collect())
                .unwrap_or_default()
        };
        on(a).intersection(&on(b)).copied().collect()
    }

    pub fn has_bonds(&self) -> bool {
        self.nodes.iter().any(|n| !n.bonds.is_empty())
    }

    /// Whether some node reaches another only through a third: where ECMP has paths to
    /// choose among.
    pub fn has_routes(&self) -> bool {
        self.nodes.iter().any(|n| !n.routes.is_empty())
    }

    /// The same topology with every bond switched to `mode`; options that the new mode does
    /// not take are dropped, since the driver would refuse them.
    /// The same topology with Multipath TCP on every node that holds two addresses or more.
    pub fn with_mptcp(&self) -> Topology {
        let mut t = self.clone();
        for node in &mut t.nodes {
            node.mptcp = MptcpEndpoints::of(node);
        }
        t
    }

    pub fn with_bond_mode(&self, mode: BondMode) -> Topology {
        let mut t = self.clone();
        for bond in t.nodes.iter_mut().flat_map(|n| n.bonds.iter_mut()) {
            bond.mode = mode;
            if !matches!(mode, BondMode::BalanceXor | BondMode::Ieee8023ad) {
                bond.xmit_hash_policy = None;
            }
            if !matches!(
                mode,
                BondMode::ActiveBackup | BondMode::BalanceTlb | BondMode::BalanceAlb
            ) {
                bond.primary = None;
            }
        }
        t
    }
}

impl Node {
    /// Every addressed link of the node: plain interfaces with an address, then bonds.
    pub fn links(&self) -> impl Iterator<Item = (&IfName, Ipv4Net)> {
        let plain = self.interfaces.iter().filter_map(|i| match i.attachment {
            Attachment::Address(a) => Some((&i.name, a)),
            Attachment::BondSlave(_) => None,
        });
        plain.chain(self.bonds.iter().map(|b| (&b.name, b.address)))
    }

    pub fn interface(&self, name: &IfName) -> Option<&Interface> {
        self.interfaces.iter().find(|i| &i.name == name)
    }

    /// Whether the interface is a slave of one of the node's bonds.
    pub fn is_bond_slave(&self, name: &IfName) -> bool {
        self.interface(name)
            .is_some_and(|i| matches!(i.attachment, Attachment::BondSlave(_)))
    }

    pub fn addresses(&self) -> Vec<Ipv4Addr> {
        self.links().map(|(_, a)| a.addr()).collect()
    }

    /// The address ECMP routes lead to, where the configuration has them.
    pub fn node_address(&self) -> Option<Ipv4Addr> {
        self.ecmp.as_ref().map(|e| e.address)
    }
}
