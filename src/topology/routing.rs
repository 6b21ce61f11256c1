//! Static routes for topologies whose subnets do not all reach each other directly (routed
//! meshes): every node gets a route to every subnet it is not on, through a neighbour one hop
//! closer to that subnet. Among equally close neighbours the least-loaded is chosen, ties by
//! node order, so the result is deterministic and forwarding is spread evenly.
//!
//! ECMP routing ([`ecmp`]) adds what one route per subnet cannot give: a subnet is one hop
//! closer through a single neighbour in a mesh of buses, so the two equally short ways
//! between nodes on different rows and columns only exist towards an address of the node's
//! own, which no wire carries.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::graph::{Ecmp, Link, MultipathHash, MultipathRoute, NextHop, Route, Topology};
use crate::spec::NodeName;

/// The most nodes ECMP routes are computed for: every node gets a route to every other
/// node's address, n² routes in all (65 280 at this size).
pub const MAX_ECMP_NODES: usize = 256;

impl Topology {
    /// The same topology with equal-cost multipath routing to an address of every node's
    /// own (see [`ecmp`]); its subnet routes stay as they are. Here rather than beside the
    /// graph's other `with_*` so that the graph does not import its routing.
    pub fn with_ecmp(&self, hash: MultipathHash) -> Topology {
        ecmp(self, hash)
    }
}

/// Fills every node's `routes`. Existing routes are replaced.
pub fn compute_routes(t: &mut Topology) {
    let n = t.nodes.len();
    let (links_on, neighbours) = adjacency(t);
    let on_subnet: Vec<Vec<usize>> = links_on
        .iter()
        .map(|m| m.iter().map(|&(i, _)| i).collect())
        .collect();
    let mut load = vec![0usize; n];
    let mut routes: Vec<Vec<Route>> = vec![Vec::new(); n];
    for (si, members) in on_subnet.iter().enumerate() {
        let dist = distances_from(members, &neighbours);
        let prefix: Ipv4Net = t.subnets[si].prefix;
        for a in 0..n {
            if dist[a] == 0 || dist[a] == usize::MAX {
                continue;
            }
            let best = neighbours[a]
                .iter()
                .filter(|(b, _)| dist[*b] + 1 == dist[a])
                .min_by_key(|(b, _)| (load[*b], *b));
            let Some(&(b, shared)) = best else { continue };
            load[b] += 1;
            let link_of = |node: usize| {
                links_on[shared]
                    .iter()
                    .find(|&&(m, _)| m == node)
                    .expect("both nodes are on the shared subnet")
                    .1
            };
            let via = link_of(b).address;
            let dev = link_of(a).interface.clone();
            routes[a].push(Route {
                to: prefix,
                via,
                dev,
            });
        }
    }
    for (node, r) in t.nodes.iter_mut().zip(routes) {
        node.routes = r;
    }
}

/// The prefixes ECMP's node addresses may come from, tried in order: the first /16 of
/// 10.0.0.0/8, from the top, that no subnet of the topology overlaps.
fn node_address_prefix(t: &Topology) -> Option<Ipv4Net> {
    (0..=255u8).rev().find_map(|b| {
        let p = Ipv4Net::new(Ipv4Addr::new(10, b, 0, 0), 16).expect("a /16");
        let free = t
            .subnets
            .iter()
            .all(|s| !s.prefix.contains(&p.network()) && !p.contains(&s.prefix.network()));
        free.then_some(p)
    })
}

/// The topology with equal-cost multipath routing: node i gets address i+1 of a free /16 on
/// `lo`, and a route to every other node's address over every neighbour one hop closer to
/// that node (in the neighbour's node order; a neighbour on two shared subnets is reached on
/// the first). Nodes that some such route goes through forward. The subnet routes stay, so
/// the interfaces' addresses are reached as before. Panics past [`MAX_ECMP_NODES`] nodes or
/// without a free /16; planning refuses both first.
pub fn ecmp(t: &Topology, hash: MultipathHash) -> Topology {
    assert!(
        t.nodes.len() <= MAX_ECMP_NODES,
        "checked when the experiment loads"
    );
    let prefix = node_address_prefix(t).expect("a /16 of 10.0.0.0/8 that no subnet overlaps");
    let base = u32::from(prefix.network());
    let address = |i: usize| Ipv4Addr::from(base + 1 + i as u32);
    let (links_on, neighbours) = adjacency(t);
    let n = t.nodes.len();
    let mut routes: Vec<Vec<MultipathRoute>> = vec![Vec::new(); n];
    let mut next_hop_of = vec![false; n];
    for target in 0..n {
        let dist = distances_from(&[target], &neighbours);
        for a in (0..n).filter(|&a| a != target && dist[a] != usize::MAX) {
            let nexthops: Vec<NextHop> = neighbours[a]
                .iter()
                .filter(|(b, _)| dist[*b] + 1 == dist[a])
                .map(|&(b, shared)| {
                    if b != target {
                        next_hop_of[b] = true;
                    }
                    let link_of = |node: usize| {
                        links_on[shared]
                            .iter()
                            .find(|&&(m, _)| m == node)
                            .expect("both nodes are on the shared subnet")
                            .1
                    };
                    NextHop {
                        via: link_of(b).address,
                        dev: link_of(a).interface.clone(),
                    }
                })
                .collect();
            routes[a].push(MultipathRoute {
                to: Ipv4Net::new(address(target), 32).expect("a /32"),
                src: address(a),
                nexthops,
            });
        }
    }
    let mut out = t.clone();
    for (i, (node, routes)) in out.nodes.iter_mut().zip(routes).enumerate() {
        node.forwarding |= next_hop_of[i];
        node.ecmp = Some(Ecmp {
            address: address(i),
            prefix,
            hash,
            routes,
        });
    }
    out
}

/// Per subnet, its links with their nodes' indices; per node, its neighbours with the first
/// subnet it shares with each, in node order.
type Adjacency<'t> = (Vec<Vec<(usize, &'t Link)>>, Vec<Vec<(usize, usize)>>);

fn adjacency(t: &Topology) -> Adjacency<'_> {
    let node_ix: HashMap<&NodeName, usize> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (&n.name, i))
        .collect();
    let links_on: Vec<Vec<(usize, &Link)>> = t
        .subnets
        .iter()
        .map(|s| {
            s.links
                .iter()
                .filter_map(|l| node_ix.get(&l.node).map(|&i| (i, l)))
                .collect()
        })
        .collect();
    let mut subnets_of: Vec<Vec<usize>> = vec![Vec::new(); t.nodes.len()];
    for (si, links) in links_on.iter().enumerate() {
        for &(ni, _) in links {
            subnets_of[ni].push(si);
        }
    }
    let neighbours = (0..t.nodes.len())
        .map(|a| {
            let mut v: BTreeMap<usize, usize> = BTreeMap::new();
            for &si in &subnets_of[a] {
                for &(b, _) in &links_on[si] {
                    if b != a {
                        v.entry(b).or_insert(si);
                    }
                }
            }
            v.into_iter().collect()
        })
        .collect();
    (links_on, neighbours)
}

/// Hop distance from any of `sources` to every node (usize::MAX where unreachable).
fn distances_from(sources: &[usize], neighbours: &[Vec<(usize, usize)>]) -> Vec<usize> {
    let mut dist = vec![usize::MAX; neighbours.len()];
    let mut queue = VecDeque::new();
    for &s in sources {
        dist[s] = 0;
        queue.push_back(s);
    }
    while let Some(a) = queue.pop_front() {
        for &(b, _) in &neighbours[a] {
            if dist[b] == usize::MAX {
                dist[b] = dist[a] + 1;
                queue.push_back(b);
            }
        }
    }
    dist
}

#[cfg(test)]
mod tests;
