//! The indexed checker against a plain tracer that walks every pair hop by hop with
//! linear lookups, as the kernel would forward: on the shipped topologies and on route
//! tables broken in every way the checker must catch. A file of their own: they load the shipped
//! topologies, and loading runs this very checker, so inside `paths.rs` they would make it
//! import its own caller.

use super::*;
use crate::topology::graph::Route;
use std::path::Path as FsPath;

fn shipped(name: &str) -> Topology {
    let root = FsPath::new(env!("CARGO_MANIFEST_DIR"));
    crate::topology::load(&root.join("topologies").join(name)).expect("shipped topology")
}

/// One-way trace by the book: connected subnets first, then the longest matching route.
fn plain_trace(t: &Topology, from: &NodeName, target: Ipv4Addr) -> Result<usize, String> {
    let mut cur = from.clone();
    let mut visited = BTreeSet::new();
    let mut hops = 0;
    loop {
        let node = t.node(&cur).unwrap();
        if node.addresses().contains(&target) {
            return Ok(hops);
        }
        if !visited.insert(cur.clone()) || hops > MAX_HOPS {
            return Err(loop_message(from, target, &cur));
        }
        if hops > 0 && !node.forwarding {
            return Err(no_forward_message(from, target, &cur));
        }
        let next = match node.links().find(|(_, a)| a.trunc().contains(&target)) {
            Some(_) => target,
            None => match node
                .routes
                .iter()
                .filter(|r| r.to.contains(&target))
                .max_by_key(|r| r.to.prefix_len())
            {
                Some(r) => r.via,
                None => return Err(no_route_message(from, target, &cur)),
            },
        };
        let Some((_, owner)) = t.owner_of(next) else {
            return Err(no_owner_message(from, target, next, &cur));
        };
        cur = owner.node.clone();
        hops += 1;
    }
}

fn plain_check(t: &Topology) -> Vec<String> {
    let mut out = Vec::new();
    for a in &t.nodes {
        for b in &t.nodes {
            if a.name != b.name {
                for addr in b.addresses() {
                    if let Err(m) = plain_trace(t, &a.name, addr) {
                        out.push(m);
                    }
                }
            }
        }
    }
    out
}

fn indexed_check(t: &Topology) -> Vec<String> {
    match check_all(t) {
        Ok(()) => Vec::new(),
        Err(problems) => problems.into_iter().map(|p| p.message).collect(),
    }
}

/// The routed mesh with its tables broken: a route dropped (black hole), a route's next
/// hop pointed back (loop), a next hop no node has, a forwarder that stops forwarding,
/// and a host route inside a subnet (decisions that differ within it).
fn broken_meshes() -> Vec<(String, Topology)> {
    let mesh = shipped("routed-mesh-4x4.toml");
    let mut out = Vec::new();
    let with = |what: &str, f: &dyn Fn(&mut Topology)| {
        let mut t = mesh.clone();
        f(&mut t);
        (what.to_owned(), t)
    };
    out.push(with("route dropped", &|t| {
        t.nodes[0].routes.remove(0);
    }));
    out.push(with("loop", &|t| {
        // n01 sends subnet X to a neighbour that is not on X either, and that neighbour
        // sends it back.
        let to = t.nodes[0].routes[0].to;
        let (dev, net) = t.nodes[0]
            .links()
            .next()
            .map(|(d, a)| (d.clone(), a))
            .unwrap();
        let shared = t.subnets.iter().find(|s| s.prefix == net.trunc()).unwrap();
        let neighbour = shared
            .links
            .iter()
            .find(|l| {
                l.node != t.nodes[0].name
                    && t.node(&l.node).unwrap().routes.iter().any(|r| r.to == to)
            })
            .unwrap()
            .clone();
        let n = t.node_index(&neighbour.node).unwrap();
        let r0 = t.nodes[0].routes.iter_mut().find(|r| r.to == to).unwrap();
        *r0 = Route {
            to,
            via: neighbour.address,
            dev: dev.clone(),
        };
        let rn = t.nodes[n].routes.iter_mut().find(|r| r.to == to).unwrap();
        *rn = Route {
            to,
            via: net.addr(),
            dev: neighbour.interface.clone(),
        };
    }));
    out.push(with("next hop no node has", &|t| {
        t.nodes[5].routes[1].via = "10.111.250.1".parse().unwrap();
    }));
    out.push(with("forwarder stops", &|t| {
        let n = t.nodes.iter().position(|n| n.forwarding).unwrap();
        t.nodes[n].forwarding = false;
    }));
    out.push(with("host route inside a subnet", &|t| {
        // n01 sends one address of a far subnet somewhere that drops it.
        let r = t.nodes[0].routes[0].clone();
        let host = Ipv4Net::new(
            t.subnets.iter().find(|s| s.prefix == r.to).unwrap().links[1].address,
            32,
        )
        .unwrap();
        t.nodes[0].routes.push(Route {
            to: host,
            via: "10.111.250.1".parse().unwrap(),
            dev: r.dev.clone(),
        });
    }));
    out
}

#[test]
fn the_indexed_checker_finds_what_a_plain_tracer_finds() {
    for name in [
        "routed-mesh-4x4.toml",
        "switched-mesh-4x4.toml",
        "bonded-dual-net.toml",
        "single-net.toml",
        "switched-bonded-mesh-4x4.toml",
    ] {
        let t = shipped(name);
        assert_eq!(indexed_check(&t), Vec::<String>::new(), "{name}");
        assert_eq!(plain_check(&t), Vec::<String>::new(), "{name}");
    }
    for (what, t) in broken_meshes() {
        let plain = plain_check(&t);
        assert!(!plain.is_empty(), "{what}: the breakage must show");
        assert_eq!(indexed_check(&t), plain, "{what}");
    }
}

#[test]
fn reach_counts_match_a_plain_tracer() {
    for name in [
        "routed-mesh-4x4.toml",
        "switched-mesh-4x4.toml",
        "bonded-dual-net.toml",
    ] {
        let t = shipped(name);
        let f = Forwarding::new(&t);
        for (i, a) in t.nodes.iter().enumerate() {
            let mut counts = std::collections::BTreeMap::new();
            for b in t.nodes.iter().filter(|b| b.name != a.name) {
                let best = b
                    .addresses()
                    .into_iter()
                    .filter_map(|addr| plain_trace(&t, &a.name, addr).ok())
                    .min()
                    .unwrap();
                *counts.entry(best).or_insert(0) += 1;
            }
            let counts: Vec<(usize, usize)> = counts.into_iter().collect();
            assert_eq!(f.reach_by_hops(i), counts, "{name} {}", a.name);
        }
    }
}
