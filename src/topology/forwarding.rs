//! The topology's forwarding decisions, indexed so that each costs a few hash lookups: the
//! path checker, placement and the plan's reach summary ask millions of them on a 64×64 mesh,
//! where a search through every node's name and every subnet's links per hop made planning
//! cubic in the node count.
//!
//! The decisions are the kernel's: a connected subnet first (the first of the node's links
//! whose subnet holds the target), then the longest matching static route, single or
//! multipath (ECMP).

use rustc_hash::FxHashMap as HashMap;
use std::cell::OnceCell;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::{IfName, Name, NodeName};

use super::graph::{MultipathRoute, Route, Topology};

/// What a node does with a packet for an address it does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<'t> {
    /// The target is on a subnet of one of the node's links: sent straight to it.
    Connected { dev: &'t IfName },
    /// Sent to a next hop by a static route.
    Via { dev: &'t IfName, via: Ipv4Addr },
    /// Sent to one of a multipath route's next hops, chosen per flow by the kernel's hash.
    Split { route: &'t MultipathRoute },
    /// No connected subnet and no route holds the target.
    NoRoute,
}

/// A route of either kind in a node's table.
#[derive(Debug, Clone, Copy)]
enum AnyRoute<'t> {
    One(&'t Route),
    Split(&'t MultipathRoute),
}

/// One node's links and routing table.
struct Table<'t> {
    /// Addressed links (plain interfaces, then bonds), in the order `Node::links` gives them.
    links: Vec<(&'t IfName, Ipv4Net)>,
    /// The node's own address on `lo`, where it routes with ECMP.
    node_address: Option<Ipv4Addr>,
    /// Routes by destination network; where two share one, the last listed (as
    /// `Iterator::max_by_key` picks among equal prefix lengths), multipath routes last.
    routes: HashMap<Ipv4Net, AnyRoute<'t>>,
    /// The prefix lengths the routes use, longest first.
    route_lengths: Vec<u8>,
}

/// A topology with its nodes, addresses and routing tables indexed.
pub struct Forwarding<'t> {
    topology: &'t Topology,
    node_ix: HashMap<&'t NodeName, usize>,
    segment_ix: HashMap<&'t Name, usize>,
    /// Which node holds an address.
    owner: HashMap<Ipv4Addr, usize>,
    tables: Vec<Table<'t>>,
    /// Per subnet, what walks towards it share; made on first use.
    pub(super) views: OnceCell<Vec<SubnetView>>,
}

/// What the walks towards one subnet share: whether every node decides alike for all its
/// addresses, and the owner of each of its addresses.
pub(super) struct SubnetView {
    pub(super) alike: bool,
    pub(super) owners: Vec<Option<usize>>,
}

impl<'t> Forwarding<'t> {
    pub fn new(topology: &'t Topology) -> Self {
        let node_ix: HashMap<&NodeName, usize> = topology
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (&n.name, i))
            .collect();
        // As `Topology::owner_of` answers: the first subnet and link that hold the address.
        let mut owner = HashMap::default();
        for link in topology.subnets.iter().flat_map(|s| &s.links) {
            if let Some(&i) = node_ix.get(&link.node) {
                owner.entry(link.address).or_insert(i);
            }
        }
        for (i, node) in topology.nodes.iter().enumerate() {
            if let Some(a) = node.node_address() {
                owner.entry(a).or_insert(i);
            }
        }
        let tables = topology
            .nodes
            .iter()
            .map(|node| {
                let split = node.ecmp.iter().flat_map(|e| &e.routes);
                let mut route_lengths: Vec<u8> = node
                    .routes
                    .iter()
                    .map(|r| r.to.prefix_len())
                    .chain(split.clone().map(|r| r.to.prefix_len()))
                    .collect();
                route_lengths.sort_unstable_by(|a, b| b.cmp(a));
                route_lengths.dedup();
                let routes = node
                    .routes
                    .iter()
                    .map(|r| (r.to.trunc(), AnyRoute::One(r)))
                    .chain(split.map(|r| (r.to.trunc(), AnyRoute::Split(r))))
                    .collect();
                Table {
                    links: node.links().collect(),
                    node_address: node.node_address(),
                    routes,
                    route_lengths,
                }
            })
            .collect();
        Forwarding {
            topology,
            node_ix,
            segment_ix: topology
                .segments
                .iter()
                .enumerate()
                .map(|(i, s)| (&s.name, i))
                .collect(),
            owner,
            tables,
            views: OnceCell::new(),
        }
    }

    pub fn topology(&self) -> &'t Topology {
        self.topology
    }

    pub fn node_index(&self, name: &NodeName) -> Option<usize> {
        self.node_ix.get(name).copied()
    }

    pub fn segment_index(&self, name: &Name) -> Option<usize> {
        self.segment_ix.get(name).copied()
    }

    /// The node that holds `addr`.
    pub fn owner(&self, addr: Ipv4Addr) -> Option<usize> {
        self.owner.get(&addr).copied()
    }

    /// Whether node `node` holds `addr` on one of its links.
    pub fn holds(&self, node: usize, addr: Ipv4Addr) -> bool {
        let table = &self.tables[node];
        table.node_address == Some(addr) || table.links.iter().any(|(_, a)| a.addr() == addr)
    }

    /// What node `node` does with a packet for `target`.
    pub fn decide(&self, node: usize, target: Ipv4Addr) -> Decision<'t> {
        let table = &self.tables[node];
        if let Some((dev, _)) = table
            .links
            .iter()
            .find(|(_, a)| a.trunc().contains(&target))
        {
            return Decision::Connected { dev };
        }
        for &len in &table.route_lengths {
            let net = Ipv4Net::new(target, len)
                .expect("a route's own length")
                .trunc();
            match table.routes.get(&net) {
                Some(AnyRoute::One(r)) => {
                    return Decision::Via {
                        dev: &r.dev,
                        via: r.via,
                    };
                }
                Some(AnyRoute::Split(route)) => return Decision::Split { route },
                None => {}
            }
        }
        Decision::NoRoute
    }

    /// The address node `node` sends from on `dev`.
    pub fn source_on(&self, node: usize, dev: &IfName) -> Option<Ipv4Addr> {
        self.tables[node]
            .links
            .iter()
            .find(|(i, _)| *i == dev)
            .map(|(_, a)| a.addr())
    }

    /// Where `addr` comes among node `node`'s addresses (its links' order), for sorting.
    pub(super) fn address_rank(&self, node: usize, addr: Ipv4Addr) -> usize {
        self.tables[node]
            .links
            .iter()
            .position(|(_, a)| a.addr() == addr)
            .unwrap_or(usize::MAX)
    }

    /// Every network a node's links or routes name: the decisions for a subnet are the same
    /// for all its addresses unless one of these lies strictly inside it.
    pub(super) fn networks(&self) -> impl Iterator<Item = Ipv4Net> + '_ {
        self.tables.iter().flat_map(|t| {
            t.links
                .iter()
                .map(|(_, a)| a.trunc())
                .chain(t.routes.keys().copied())
        })
    }
}
