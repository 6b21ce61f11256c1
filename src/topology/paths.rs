//! The path checker: follows the kernel's forwarding decisions (connected subnets first, then
//! the longest matching static route) hop by hop, so that before any run every ordered pair is
//! proven to reach the other and back without a loop or a black hole.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde::Serialize;

use crate::spec::{IfName, Name, NodeName};

use super::graph::{Attachment, Topology};

/// One link crossed: from a node, out of an interface, to the next node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub from: NodeName,
    pub dev: IfName,
    pub to: NodeName,
}

/// A path from a node to an address, and the reply's path back to the source address.
#[derive(Debug, Clone, Serialize)]
pub struct Path {
    pub target: Ipv4Addr,
    /// The address the source sends from (its interface on the first hop).
    pub source: Ipv4Addr,
    pub hops: Vec<Hop>,
    pub reply: Vec<Hop>,
    /// Every segment the request or the reply crosses.
    pub segments: BTreeSet<Name>,
}

impl Path {
    pub fn hop_count(&self) -> usize {
        self.hops.len()
    }

    /// Nodes that forward the request, in order.
    pub fn forwarders(&self) -> Vec<&NodeName> {
        self.hops.iter().skip(1).map(|h| &h.from).collect()
    }
}

/// Why a pair does not work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathProblem {
    /// The node the packet was sent from.
    pub from: NodeName,
    /// The node where the packet was lost or looped.
    pub at: NodeName,
    pub message: String,
}

const MAX_HOPS: usize = 64;

/// Follows packets from `from` to `target`.
pub fn trace(
    t: &Topology,
    from: &NodeName,
    target: Ipv4Addr,
) -> Result<(Vec<Hop>, Ipv4Addr), PathProblem> {
    let mut hops: Vec<Hop> = Vec::new();
    let mut visited = BTreeSet::new();
    let mut cur = from.clone();
    let mut source = None;
    loop {
        let node = t.node(&cur).expect("nodes on a path exist");
        if node.addresses().contains(&target) {
            return Ok((hops, source.unwrap_or(target)));
        }
        if !visited.insert(cur.clone()) || hops.len() > MAX_HOPS {
            return Err(PathProblem {
                from: from.clone(),
                at: cur.clone(),
                message: format!("{from} -> {target} loops back to {cur}"),
            });
        }
        if !hops.is_empty() && !node.forwarding {
            return Err(PathProblem {
                from: from.clone(),
                at: cur.clone(),
                message: format!("{from} -> {target}: {cur} would have to forward but does not"),
            });
        }
        // Connected subnets first, as the kernel does, then the longest matching route.
        let connected = node.links().find(|(_, a)| a.trunc().contains(&target));
        let (dev, next_addr) = match connected {
            Some((dev, _)) => (dev.clone(), target),
            None => match node
                .routes
                .iter()
                .filter(|r| r.to.contains(&target))
                .max_by_key(|r| r.to.prefix_len())
            {
                Some(r) => (r.dev.clone(), r.via),
                None => {
                    return Err(PathProblem {
                        from: from.clone(),
                        at: cur.clone(),
                        message: format!(
                            "{from} -> {target}: {cur} has no route to {target} (black hole)"
                        ),
                    });
                }
            },
        };
        let Some((_, owner)) = t.owner_of(next_addr) else {
            return Err(PathProblem {
                from: from.clone(),
                at: cur.clone(),
                message: format!(
                    "{from} -> {target}: no node has {next_addr} (black hole at {cur})"
                ),
            });
        };
        if source.is_none() {
            source = node
                .links()
                .find(|(i, _)| **i == dev)
                .map(|(_, a)| a.addr());
        }
        hops.push(Hop {
            from: cur.clone(),
            dev,
            to: owner.node.clone(),
        });
        cur = owner.node.clone();
    }
}

/// The path to `target` and the reply's path back.
pub fn round_trip(t: &Topology, from: &NodeName, target: Ipv4Addr) -> Result<Path, PathProblem> {
    let (hops, source) = trace(t, from, target)?;
    let to = hops
        .last()
        .map(|h| h.to.clone())
        .unwrap_or_else(|| from.clone());
    let (reply, _) = trace(t, &to, source)?;
    let mut segments = BTreeSet::new();
    for h in hops.iter().chain(&reply) {
        segments.extend(hop_segments(t, h));
    }
    Ok(Path {
        target,
        source,
        hops,
        reply,
        segments,
    })
}

/// Segments a hop's frames cross: the sender's and the receiver's segment on the network, for
/// each of the sender's wires (all slaves of a bond).
fn hop_segments(t: &Topology, hop: &Hop) -> BTreeSet<Name> {
    let (Some(a), Some(b)) = (t.node(&hop.from), t.node(&hop.to)) else {
        return BTreeSet::new();
    };
    let physical: Vec<&IfName> = match a.bonds.iter().find(|x| x.name == hop.dev) {
        Some(bond) => bond.slaves.iter().collect(),
        None => vec![&hop.dev],
    };
    let mut out = BTreeSet::new();
    for ifname in physical {
        let Some(seg) = a.interface(ifname).and_then(|i| t.segment(&i.segment)) else {
            continue;
        };
        out.insert(seg.name.clone());
        // The receiver's interface on the same network.
        for other in &b.interfaces {
            if let Some(oseg) = t.segment(&other.segment)
                && oseg.network == seg.network
            {
                let carries = match &other.attachment {
                    Attachment::Address(_) => true,
                    Attachment::BondSlave(_) => true,
                };
                if carries {
                    out.insert(oseg.name.clone());
                }
            }
        }
    }
    out
}

/// Every way `from` can reach `to`: one path per address of `to`, shortest first, then by
/// address.
pub fn options(t: &Topology, from: &NodeName, to: &NodeName) -> Vec<Path> {
    let Some(node) = t.node(to) else {
        return Vec::new();
    };
    let mut paths: Vec<Path> = node
        .addresses()
        .into_iter()
        .filter_map(|a| round_trip(t, from, a).ok())
        .collect();
    paths.sort_by_key(|p| (p.hop_count(), p.target));
    paths
}

/// Checks every ordered pair of nodes and every address of the destination.
pub fn check_all(t: &Topology) -> Result<(), Vec<PathProblem>> {
    let mut problems = Vec::new();
    for a in &t.nodes {
        for b in &t.nodes {
            if a.name == b.name {
                continue;
            }
            for addr in b.addresses() {
                if let Err(p) = round_trip(t, &a.name, addr) {
                    problems.push(p);
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// For one node: how many other nodes it reaches in 1, 2, ... hops (shortest over their
/// addresses).
pub fn reach_by_hops(t: &Topology, from: &NodeName) -> Vec<(usize, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for b in &t.nodes {
        if &b.name == from {
            continue;
        }
        if let Some(p) = options(t, from, &b.name).first() {
            *counts.entry(p.hop_count()).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}
