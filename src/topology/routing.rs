//! Static routes for topologies whose subnets do not all reach each other directly (routed
//! meshes): every node gets a route to every subnet it is not on, through a neighbour one hop
//! closer to that subnet. Among equally close neighbours the least-loaded is chosen, ties by
//! node order, so the result is deterministic and forwarding is spread evenly.

use std::collections::{BTreeMap, HashMap, VecDeque};

use ipnet::Ipv4Net;

use super::graph::{Link, Route, Topology};
use crate::spec::NodeName;

/// Fills every node's `routes`. Existing routes are replaced.
pub fn compute_routes(t: &mut Topology) {
    let n = t.nodes.len();
    let node_ix: HashMap<&NodeName, usize> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (&n.name, i))
        .collect();
    // subnet index -> its links with their nodes' indices; node -> subnets it is on.
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
    let on_subnet: Vec<Vec<usize>> = links_on
        .iter()
        .map(|m| m.iter().map(|&(i, _)| i).collect())
        .collect();
    let mut subnets_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (si, nodes) in on_subnet.iter().enumerate() {
        for &ni in nodes {
            subnets_of[ni].push(si);
        }
    }
    // neighbours[a] = (b, subnet shared first) in node order.
    let neighbours: Vec<Vec<(usize, usize)>> = (0..n)
        .map(|a| {
            let mut v: BTreeMap<usize, usize> = BTreeMap::new();
            for &si in &subnets_of[a] {
                for &b in &on_subnet[si] {
                    if b != a {
                        v.entry(b).or_insert(si);
                    }
                }
            }
            v.into_iter().collect()
        })
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
