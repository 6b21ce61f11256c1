//! Tests of ECMP routing on the shipped routed mesh. A file of their own: they load the
//! topology, and loading runs this very routing, so inside `routing.rs` they would make it
//! import its own caller.

use super::*;
use crate::topology::paths;

fn shipped(name: &str) -> Topology {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    crate::topology::load(&root.join("topologies").join(name)).expect("shipped topology")
}

#[test]
fn ecmp_on_the_routed_mesh_splits_exactly_where_two_shortest_ways_exist() {
    let mesh = shipped("routed-mesh-4x4.toml");
    let t = ecmp(&mesh, MultipathHash::L4);
    paths::check_all(&t).expect("every branch arrives");
    let shares = |a: &crate::topology::Node, b: &crate::topology::Node| {
        a.interfaces
            .iter()
            .any(|i| b.interfaces.iter().any(|o| o.segment == i.segment))
    };
    for (i, node) in t.nodes.iter().enumerate() {
        let e = node.ecmp.as_ref().expect("every node");
        assert_eq!(e.routes.len(), 15, "{}", node.name);
        assert!(t.subnets.iter().all(|s| !s.prefix.contains(&e.address)));
        for r in &e.routes {
            assert_eq!(r.src, e.address);
            let to = t
                .nodes
                .iter()
                .find(|n| n.node_address() == Some(r.to.addr()));
            let to = to.expect("a route per other node");
            // On a shared bus: straight to it; else through either node that shares a
            // bus with both (one on each of the node's buses).
            let want = if shares(node, to) { 1 } else { 2 };
            assert_eq!(r.nexthops.len(), want, "{} -> {}", node.name, to.name);
            let devs: std::collections::BTreeSet<_> = r.nexthops.iter().map(|h| &h.dev).collect();
            assert_eq!(devs.len(), want, "one next hop per bus");
        }
        assert_eq!(
            e.address,
            Ipv4Addr::from(u32::from(mesh_base(&t)) + 1 + i as u32)
        );
    }
    // The subnet routes are the shortest-path ones, untouched.
    for (a, b) in mesh.nodes.iter().zip(&t.nodes) {
        assert_eq!(a.routes, b.routes);
    }
}

fn mesh_base(t: &Topology) -> Ipv4Addr {
    node_address_prefix(t).unwrap().network()
}

#[test]
fn node_addresses_keep_clear_of_the_topologys_subnets() {
    let mut t = shipped("routed-mesh-4x4.toml");
    t.subnets[0].prefix = "10.255.0.0/24".parse().unwrap();
    let p = node_address_prefix(&t).unwrap();
    assert_eq!(p, "10.254.0.0/16".parse::<Ipv4Net>().unwrap());
}

#[test]
fn a_broken_multipath_branch_is_found() {
    let mut t = ecmp(&shipped("routed-mesh-4x4.toml"), MultipathHash::L4);
    let route = t.nodes[0]
        .ecmp
        .as_mut()
        .unwrap()
        .routes
        .iter_mut()
        .find(|r| r.nexthops.len() == 2)
        .unwrap();
    route.nexthops[1].via = "10.111.250.1".parse().unwrap();
    let problems = paths::check_all(&t).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].message.contains("no node has 10.111.250.1"),
        "{}",
        problems[0].message
    );
}
