//! The path checker: follows the kernel's forwarding decisions (connected subnets first, then
//! the longest matching static route) hop by hop, so that before any run every ordered pair is
//! proven to reach the other and back without a loop or a black hole. Where a multipath
//! (ECMP) route splits, every branch is followed and proven.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde::Serialize;

use crate::spec::{IfName, Name, NodeName};

use ipnet::Ipv4Net;

use super::forwarding::{Decision, Forwarding, SubnetView};
use super::graph::Topology;

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
    /// The address the source sends from (its interface on the first hop, or the address a
    /// multipath route names).
    pub source: Ipv4Addr,
    pub hops: Vec<Hop>,
    pub reply: Vec<Hop>,
    /// Every segment the request or the reply crosses, on any of its ways.
    pub segments: BTreeSet<Name>,
    /// Where multipath (ECMP) routes split: the other ways a connection may take, the kernel
    /// choosing one per flow by its hash; `hops` and `reply` are the first. Empty where the
    /// routes give one way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Way>,
}

/// One way of a path whose routes split: the request's hops and the reply's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Way {
    pub hops: Vec<Hop>,
    pub reply: Vec<Hop>,
}

impl Path {
    pub fn hop_count(&self) -> usize {
        self.hops.len()
    }

    /// Nodes that forward the request, in order.
    pub fn forwarders(&self) -> Vec<&NodeName> {
        self.hops.iter().skip(1).map(|h| &h.from).collect()
    }

    /// Every way a connection may take: the first, then the alternatives.
    pub fn ways(&self) -> Vec<Way> {
        let first = Way {
            hops: self.hops.clone(),
            reply: self.reply.clone(),
        };
        std::iter::once(first)
            .chain(self.alternatives.iter().cloned())
            .collect()
    }
}

impl Way {
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

/// The most ways one target may be reached by: multipath routes that split more often than
/// this are refused as a problem, not followed.
pub const MAX_WAYS: usize = 64;

/// Every way `from` can reach `to`: one path per address of `to`, shortest first, then by
/// address.
pub fn options(t: &Topology, from: &NodeName, to: &NodeName) -> Vec<Path> {
    let f = Forwarding::new(t);
    match (f.node_index(from), f.node_index(to)) {
        (Some(from), Some(to)) => f.options(from, to),
        _ => Vec::new(),
    }
}

/// Checks every ordered pair of nodes and every address of the destination.
pub fn check_all(t: &Topology) -> Result<(), Vec<PathProblem>> {
    Forwarding::new(t).check_all()
}

/// For one node: how many other nodes it reaches in 1, 2, ... hops (shortest over their
/// addresses).
pub fn reach_by_hops(t: &Topology, from: &NodeName) -> Vec<(usize, usize)> {
    let f = Forwarding::new(t);
    f.node_index(from)
        .map(|from| f.reach_by_hops(from))
        .unwrap_or_default()
}

/// One hop by node index.
#[derive(Debug, Clone, Copy)]
struct Step<'t> {
    from: usize,
    dev: &'t IfName,
    to: usize,
}

/// A walk in progress: the hops so far, the nodes they left, and the ways found.
struct Walk<'t> {
    origin: usize,
    target: Ipv4Addr,
    steps: Vec<Step<'t>>,
    visited: Vec<usize>,
    /// Multipath routes on the way so far whose other branches are still to walk.
    open_splits: usize,
    ways: Vec<(Vec<Step<'t>>, Ipv4Addr)>,
}

/// How a packet for a subnet leaves the last node of a [`Chain`].
#[derive(Debug, Clone, Copy)]
enum ChainEnd {
    /// The last node is on the subnet and sends straight to the target.
    Delivers,
    /// The last node's next hop is already on the chain.
    LoopsBackTo(usize),
    /// The last node's route names a next hop no node has.
    NoOwner(Ipv4Addr),
    /// The last node has no route.
    NoRoute,
    /// The chain is longer than any path may be.
    TooLong,
    /// The last node's route is multipath: its branches are walked one by one.
    Splits,
}

/// The nodes a packet for any address of one subnet passes, from its sender until it reaches
/// the subnet or is lost. Valid where every node decides alike for all of the subnet's
/// addresses (see [`Forwarding::decides_alike`]).
struct Chain {
    nodes: Vec<usize>,
    end: ChainEnd,
}

impl<'t> Forwarding<'t> {
    /// Follows a packet hop by hop, by node index, making the path checker's checks in the
    /// kernel's order: arrived, looped, a non-forwarder in the way, no route, no next hop.
    /// Gives the first way, and the address it is sent from; see [`Self::walk`] for all.
    fn steps(
        &self,
        from: usize,
        target: Ipv4Addr,
    ) -> Result<(Vec<Step<'t>>, Ipv4Addr), PathProblem> {
        let mut ways = self.walk(from, target)?;
        Ok(ways.swap_remove(0))
    }

    /// Every way a packet from node `from` to `target` may take (one where no multipath
    /// route splits), each with the address it is sent from, checked as [`Self::steps`]
    /// says on every branch: the first problem on any branch fails the whole.
    fn walk(
        &self,
        from: usize,
        target: Ipv4Addr,
    ) -> Result<Vec<(Vec<Step<'t>>, Ipv4Addr)>, PathProblem> {
        let mut walk = Walk {
            origin: from,
            target,
            steps: Vec::new(),
            visited: Vec::new(),
            open_splits: 0,
            ways: Vec::new(),
        };
        self.walk_on(&mut walk, from, None)?;
        Ok(walk.ways)
    }

    fn walk_on(
        &self,
        w: &mut Walk<'t>,
        cur: usize,
        source: Option<Ipv4Addr>,
    ) -> Result<(), PathProblem> {
        let t = self.topology();
        let name = |i: usize| t.nodes[i].name.clone();
        let (from, target) = (w.origin, w.target);
        let problem = |at: usize, message: String| PathProblem {
            from: name(from),
            at: name(at),
            message,
        };
        if self.holds(cur, target) {
            if w.ways.len() == MAX_WAYS {
                return Err(problem(
                    cur,
                    format!(
                        "{} -> {target}: more than {MAX_WAYS} equal-cost ways",
                        name(from)
                    ),
                ));
            }
            // With no split open behind it, this is the walk's only way: no copy needed.
            let steps = if w.open_splits == 0 {
                std::mem::take(&mut w.steps)
            } else {
                w.steps.clone()
            };
            w.ways.push((steps, source.unwrap_or(target)));
            return Ok(());
        }
        if w.visited.contains(&cur) || w.steps.len() > MAX_HOPS {
            return Err(problem(cur, loop_message(&name(from), target, &name(cur))));
        }
        if !w.steps.is_empty() && !t.nodes[cur].forwarding {
            return Err(problem(
                cur,
                no_forward_message(&name(from), target, &name(cur)),
            ));
        }
        w.visited.push(cur);
        match self.decide(cur, target) {
            Decision::Connected { dev } => self.hop(w, cur, dev, target, source)?,
            Decision::Via { dev, via } => self.hop(w, cur, dev, via, source)?,
            Decision::Split { route } => {
                w.open_splits += 1;
                for h in &route.nexthops {
                    self.hop(w, cur, &h.dev, h.via, source.or(Some(route.src)))?;
                }
                w.open_splits -= 1;
            }
            Decision::NoRoute => {
                return Err(problem(
                    cur,
                    no_route_message(&name(from), target, &name(cur)),
                ));
            }
        }
        w.visited.pop();
        Ok(())
    }

    /// One hop of a walk, from node `cur` out of `dev` to the owner of `next_addr`, and the
    /// rest of the walk from there.
    fn hop(
        &self,
        w: &mut Walk<'t>,
        cur: usize,
        dev: &'t IfName,
        next_addr: Ipv4Addr,
        source: Option<Ipv4Addr>,
    ) -> Result<(), PathProblem> {
        let Some(owner) = self.owner(next_addr) else {
            let name = |i: usize| self.topology().nodes[i].name.clone();
            return Err(PathProblem {
                from: name(w.origin),
                at: name(cur),
                message: no_owner_message(&name(w.origin), w.target, next_addr, &name(cur)),
            });
        };
        let source = source.or_else(|| self.source_on(cur, dev));
        w.steps.push(Step {
            from: cur,
            dev,
            to: owner,
        });
        self.walk_on(w, owner, source)?;
        w.steps.pop();
        Ok(())
    }

    fn hops(&self, steps: &[Step]) -> Vec<Hop> {
        let nodes = &self.topology().nodes;
        steps
            .iter()
            .map(|s| Hop {
                from: nodes[s.from].name.clone(),
                dev: s.dev.clone(),
                to: nodes[s.to].name.clone(),
            })
            .collect()
    }

    /// The path from node `from` to `target` and the reply's path back, with every other
    /// way multipath routes allow.
    pub fn round_trip(&self, from: usize, target: Ipv4Addr) -> Result<Path, PathProblem> {
        let ways = self.round_trip_ways(from, target)?;
        let mut segments = Vec::new();
        for (there, back, _) in &ways {
            for s in there.iter().chain(back) {
                self.hop_segments(s, &mut segments);
            }
        }
        let segments = segments
            .into_iter()
            .map(|i| self.topology().segments[i].name.clone())
            .collect();
        let source = ways[0].2;
        let mut ways = ways.into_iter().map(|(there, back, _)| Way {
            hops: self.hops(&there),
            reply: self.hops(&back),
        });
        let first = ways.next().expect("a walk that succeeds has a way");
        Ok(Path {
            target,
            source,
            hops: first.hops,
            reply: first.reply,
            segments,
            alternatives: ways.collect(),
        })
    }

    /// Each way there with each way back: the kernel hashes the reply on its own (on the
    /// 2×2 mesh of `tests/ecmp_netns.rs`, about a third of L4-hashed flows' ACKs came back
    /// through the other forwarder). The address the request is sent from comes last.
    #[allow(clippy::type_complexity)]
    fn round_trip_ways(
        &self,
        from: usize,
        target: Ipv4Addr,
    ) -> Result<Vec<(Vec<Step<'t>>, Vec<Step<'t>>, Ipv4Addr)>, PathProblem> {
        let mut out = Vec::new();
        for (there, source) in self.walk(from, target)? {
            let to = there.last().map_or(from, |s| s.to);
            let mut backs = self.walk(to, source)?;
            let last = backs.pop().expect("a walk that succeeds has a way");
            for (back, _) in backs {
                out.push((there.clone(), back, source));
            }
            out.push((there, last.0, source));
        }
        Ok(out)
    }

    /// Segments a hop's frames cross: the sender's and the receiver's segment on the
    /// network, for each of the sender's wires (all slaves of a bond), as indices.
    fn hop_segments(&self, step: &Step, out: &mut Vec<usize>) {
        let t = self.topology();
        let (a, b) = (&t.nodes[step.from], &t.nodes[step.to]);
        let physical: Vec<&IfName> = match a.bonds.iter().find(|x| &x.name == step.dev) {
            Some(bond) => bond.slaves.iter().collect(),
            None => vec![step.dev],
        };
        for ifname in physical {
            let Some(seg) = a
                .interface(ifname)
                .and_then(|i| self.segment_index(&i.segment))
            else {
                continue;
            };
            out.push(seg);
            // The receiver's interfaces on the same network, plain or bond slaves alike.
            for other in &b.interfaces {
                if let Some(oseg) = self.segment_index(&other.segment)
                    && t.segments[oseg].network == t.segments[seg].network
                {
                    out.push(oseg);
                }
            }
        }
    }

    /// The hop count of the way from node `from` to `target`, and the segments the round
    /// trip crosses (indices, sorted): what placement weighs, without building the path.
    pub fn round_trip_segments(
        &self,
        from: usize,
        target: Ipv4Addr,
    ) -> Option<(usize, Vec<usize>)> {
        let ways = self.round_trip_ways(from, target).ok()?;
        let mut segments = Vec::new();
        for (there, back, _) in &ways {
            for s in there.iter().chain(back) {
                self.hop_segments(s, &mut segments);
            }
        }
        segments.sort_unstable();
        segments.dedup();
        Some((ways[0].0.len(), segments))
    }

    /// Every way node `from` can reach node `to`: one path per address of `to`, shortest
    /// first, then by address.
    pub fn options(&self, from: usize, to: usize) -> Vec<Path> {
        let mut paths: Vec<Path> = self.topology().nodes[to]
            .addresses()
            .into_iter()
            .filter_map(|a| self.round_trip(from, a).ok())
            .collect();
        paths.sort_by_key(|p| (p.hop_count(), p.target));
        paths
    }

    /// Whether every node decides alike for every address of `subnet`: no link's or route's
    /// network lies strictly inside it.
    fn decides_alike(&self, subnet: Ipv4Net, networks: &[Ipv4Net]) -> bool {
        !networks
            .iter()
            .any(|n| n.prefix_len() > subnet.prefix_len() && subnet.contains(&n.network()))
    }

    /// The chain from node `from` towards the subnet that holds `any_address`.
    fn chain(&self, from: usize, any_address: Ipv4Addr) -> Chain {
        let mut nodes = vec![from];
        loop {
            let cur = *nodes.last().expect("starts with the sender");
            if nodes.len() - 1 > MAX_HOPS {
                return Chain {
                    nodes,
                    end: ChainEnd::TooLong,
                };
            }
            let end = match self.decide(cur, any_address) {
                Decision::Connected { .. } => ChainEnd::Delivers,
                Decision::NoRoute => ChainEnd::NoRoute,
                Decision::Split { .. } => ChainEnd::Splits,
                Decision::Via { via, .. } => match self.owner(via) {
                    None => ChainEnd::NoOwner(via),
                    Some(next) if nodes.contains(&next) => ChainEnd::LoopsBackTo(next),
                    Some(next) => {
                        nodes.push(next);
                        continue;
                    }
                },
            };
            return Chain { nodes, end };
        }
    }

    /// What [`Self::steps`] would find for a target on the chain's subnet held by node
    /// `owner`: its hop count, or the problem, from the same checks in the same order.
    fn follow(&self, chain: &Chain, owner: usize, target: Ipv4Addr) -> Result<usize, PathProblem> {
        let t = self.topology();
        let name = |i: usize| t.nodes[i].name.clone();
        let from = chain.nodes[0];
        let problem = |at: usize, message: String| PathProblem {
            from: name(from),
            at: name(at),
            message,
        };
        for (k, &cur) in chain.nodes.iter().enumerate() {
            if cur == owner {
                return Ok(k);
            }
            if k > MAX_HOPS {
                return Err(problem(cur, loop_message(&name(from), target, &name(cur))));
            }
            if k > 0 && !t.nodes[cur].forwarding {
                return Err(problem(
                    cur,
                    no_forward_message(&name(from), target, &name(cur)),
                ));
            }
        }
        let last = *chain.nodes.last().expect("starts with the sender");
        match chain.end {
            ChainEnd::Delivers => Ok(chain.nodes.len()),
            ChainEnd::LoopsBackTo(at) => {
                Err(problem(at, loop_message(&name(from), target, &name(at))))
            }
            ChainEnd::NoOwner(via) => Err(problem(
                last,
                no_owner_message(&name(from), target, via, &name(last)),
            )),
            ChainEnd::NoRoute => Err(problem(
                last,
                no_route_message(&name(from), target, &name(last)),
            )),
            ChainEnd::TooLong => Err(problem(
                last,
                loop_message(&name(from), target, &name(last)),
            )),
            ChainEnd::Splits => self.walk(from, target).map(|ways| ways[0].0.len()),
        }
    }

    /// Per subnet, what every sender's walk needs: whether all nodes decide alike for it,
    /// and the owner of each of its addresses. Made once per topology, not once per sender.
    fn subnet_views(&self) -> &[SubnetView] {
        self.views.get_or_init(|| {
            let mut networks: Vec<Ipv4Net> = self.networks().collect();
            networks.sort_unstable();
            networks.dedup();
            self.topology()
                .subnets
                .iter()
                .map(|subnet| SubnetView {
                    alike: self.decides_alike(subnet.prefix, &networks),
                    owners: subnet.links.iter().map(|l| self.owner(l.address)).collect(),
                })
                .collect()
        })
    }

    /// For each subnet, the hop count (or the problem) from node `from` to each of the
    /// subnet's addresses not its own, with the address's owner: one chain per subnet where
    /// every node decides alike for it, else one trace per address.
    fn one_way_from(
        &self,
        from: usize,
        views: &[SubnetView],
        mut visit: impl FnMut(usize, Ipv4Addr, Result<usize, PathProblem>),
    ) {
        for (subnet, view) in self.topology().subnets.iter().zip(views) {
            let chain = view
                .alike
                .then(|| subnet.links.first())
                .flatten()
                .map(|l| self.chain(from, l.address));
            let clean = chain.as_ref().is_some_and(|c| self.is_clean(c));
            for (link, owner) in subnet.links.iter().zip(&view.owners) {
                let Some(owner) = *owner else {
                    continue;
                };
                if owner == from {
                    continue;
                }
                let outcome = match &chain {
                    // Nothing on the way can fail: the hop count is where the owner is on the
                    // chain, or one past its end.
                    Some(chain) if clean => Ok(chain
                        .nodes
                        .iter()
                        .position(|&n| n == owner)
                        .unwrap_or(chain.nodes.len())),
                    Some(chain) => self.follow(chain, owner, link.address),
                    None => self.steps(from, link.address).map(|(s, _)| s.len()),
                };
                visit(owner, link.address, outcome);
            }
        }
    }

    /// Whether a chain reaches its subnet with every node after the sender forwarding.
    fn is_clean(&self, chain: &Chain) -> bool {
        let nodes = &self.topology().nodes;
        matches!(chain.end, ChainEnd::Delivers)
            && chain.nodes.len() <= MAX_HOPS
            && chain.nodes[1..].iter().all(|&n| nodes[n].forwarding)
    }

    /// Checks that every node reaches every address of every other node, its ECMP address
    /// too over every branch of the multipath routes. A round trip
    /// fails only if one of its two one-way traces does, and every reply is itself one of
    /// these traces (to the sender's address), so checking each one-way trace once proves
    /// every round trip. Problems come in the order of sender, destination node, and the
    /// destination's addresses.
    pub fn check_all(&self) -> Result<(), Vec<PathProblem>> {
        let views = self.subnet_views();
        let mut problems: Vec<((usize, usize, usize), PathProblem)> = Vec::new();
        let nodes = &self.topology().nodes;
        for from in 0..nodes.len() {
            self.one_way_from(from, views, |owner, address, outcome| {
                if let Err(p) = outcome {
                    let rank = self.address_rank(owner, address);
                    problems.push(((from, owner, rank), p));
                }
            });
            // ECMP's node addresses, every branch; after the node's interface addresses.
            for (to, node) in nodes.iter().enumerate().filter(|&(to, _)| to != from) {
                if let Some(address) = node.node_address()
                    && let Err(p) = self.walk(from, address)
                {
                    problems.push(((from, to, usize::MAX), p));
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        problems.sort_by_key(|(key, _)| *key);
        Err(problems.into_iter().map(|(_, p)| p).collect())
    }

    /// For node `from`: how many other nodes it reaches in 1, 2, ... hops (shortest over
    /// their addresses). Counts the way there; the replies are proven by [`Self::check_all`].
    pub fn reach_by_hops(&self, from: usize) -> Vec<(usize, usize)> {
        let views = self.subnet_views();
        let mut best: Vec<Option<usize>> = vec![None; self.topology().nodes.len()];
        self.one_way_from(from, views, |owner, _, outcome| {
            if let Ok(hops) = outcome {
                let b = &mut best[owner];
                *b = Some(b.map_or(hops, |h| h.min(hops)));
            }
        });
        let mut counts = std::collections::BTreeMap::new();
        for hops in best.into_iter().flatten() {
            *counts.entry(hops).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }
}

fn loop_message(from: &NodeName, target: Ipv4Addr, at: &NodeName) -> String {
    format!("{from} -> {target} loops back to {at}")
}

fn no_forward_message(from: &NodeName, target: Ipv4Addr, at: &NodeName) -> String {
    format!("{from} -> {target}: {at} would have to forward but does not")
}

fn no_route_message(from: &NodeName, target: Ipv4Addr, at: &NodeName) -> String {
    format!("{from} -> {target}: {at} has no route to {target} (black hole)")
}

fn no_owner_message(from: &NodeName, target: Ipv4Addr, via: Ipv4Addr, at: &NodeName) -> String {
    format!("{from} -> {target}: no node has {via} (black hole at {at})")
}

#[cfg(test)]
mod tests;
