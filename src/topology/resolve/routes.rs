//! Routes: the tables given in the file, each route checked against its node's links, or tables
//! computed from the wiring; then which nodes forward.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::topology::RoutingMode;
use crate::spec::{IfName, NodeName, SpecErrors};
use crate::topology::draft::{Draft, DraftRoute, Span};
use crate::topology::graph::{Node, Route, Subnet, Topology};
use crate::topology::routing;

use super::errors::Errors;
use super::nodes::NodeIndex;

/// Per node, where its first route was given: path-check errors point there.
pub(super) type RouteSpans = BTreeMap<NodeName, Span>;

/// Fills in every node's routes and whether it forwards. Returns where each node's routes were
/// given; computed tables come from no text, so for them it is empty.
pub(super) fn route(
    draft: &Draft,
    nodes: &NodeIndex,
    topology: &mut Topology,
    errs: &mut Errors,
) -> Result<RouteSpans, SpecErrors> {
    let explicit = match draft.routing {
        RoutingMode::Explicit => true,
        RoutingMode::Computed => false,
        RoutingMode::Auto => !draft.routes.is_empty(),
    };
    let mut route_spans = RouteSpans::new();
    if explicit {
        route_spans = explicit_routes(draft, nodes, topology, errs)?;
    } else {
        routing::compute_routes(topology);
    }
    mark_forwarding(&mut topology.nodes);
    Ok(route_spans)
}

fn explicit_routes(
    draft: &Draft,
    nodes: &NodeIndex,
    topology: &mut Topology,
    errs: &mut Errors,
) -> Result<RouteSpans, SpecErrors> {
    let mut route_spans = RouteSpans::new();
    for r in &draft.routes {
        let (node, nspan) = &r.node;
        let Some(ni) = nodes.find(node, nspan, errs) else {
            continue;
        };
        route_spans
            .entry(node.clone())
            .or_insert_with(|| r.via.1.clone());
        if let Some(route) = checked_route(r, &topology.nodes[ni], &topology.subnets, errs) {
            topology.nodes[ni].routes.push(route);
        }
    }
    errs.check()?;
    Ok(route_spans)
}

/// The route, if it leads somewhere `node` does not reach directly, through a neighbour that
/// exists, and is the node's only route there.
fn checked_route(
    r: &DraftRoute,
    node: &Node,
    subnets: &[Subnet],
    errs: &mut Errors,
) -> Option<Route> {
    let name = &node.name;
    let (to, tspan) = &r.to;
    let (via, vspan) = &r.via;
    let links: Vec<(IfName, Ipv4Net)> = node.links().map(|(i, a)| (i.clone(), a)).collect();
    if let Some((ifn, a)) = links
        .iter()
        .find(|(_, a)| a.trunc().contains(&to.network()) || to.contains(&a.network()))
    {
        errs.push(
            tspan,
            format!(
                "route to {to} on {name} overlaps {}, which {name} reaches directly on {ifn}",
                a.trunc()
            ),
        );
        return None;
    }
    let Some((dev, _)) = links.iter().find(|(_, a)| a.trunc().contains(via)) else {
        let attached: Vec<String> = links
            .iter()
            .map(|(i, a)| format!("{} on {i}", a.trunc()))
            .collect();
        errs.push_help(
            vspan,
            format!("route via {via}: {via} is not on a network {name} is attached to, so it is not a neighbour"),
            format!("{name} is attached to {}", attached.join(", ")),
        );
        return None;
    };
    if subnets
        .iter()
        .all(|s| s.links.iter().all(|l| l.address != *via))
    {
        errs.push(vspan, format!("route via {via}: no node has that address"));
        return None;
    }
    if node.routes.iter().any(|x| x.to == *to) {
        errs.push(tspan, format!("{name} has two routes to {to}"));
        return None;
    }
    Some(Route {
        to: *to,
        via: *via,
        dev: dev.clone(),
    })
}

/// A node forwards exactly when some route's next hop is one of its addresses.
fn mark_forwarding(nodes: &mut [Node]) {
    let next_hops: BTreeSet<Ipv4Addr> = nodes
        .iter()
        .flat_map(|n| n.routes.iter().map(|r| r.via))
        .collect();
    for n in nodes {
        n.forwarding = n.addresses().iter().any(|a| next_hops.contains(a));
    }
}
