//! Resolution: a [`Draft`] checked for meaning and turned into a [`Topology`] with networks,
//! subnets, addresses, routes and forwarding worked out. Every problem is reported with the
//! span it came from; nothing half-resolved escapes.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::topology::{BondMode, RoutingMode};
use crate::spec::{IfName, Name, NodeName, SourceFile, SpecError, SpecErrors, best_match};

use super::draft::{Draft, Span};
use super::graph::{
    Attachment, Bond, Host, Interface, Link, Network, Node, Port, Route, Segment, Subnet, Topology,
};
use super::{paths, routing};

struct Errors<'a> {
    source: &'a SourceFile,
    list: Vec<SpecError>,
}

impl Errors<'_> {
    fn push(&mut self, span: &Span, message: impl Into<String>) {
        self.list
            .push(self.source.error(span.clone(), message, None));
    }
    fn push_help(&mut self, span: &Span, message: impl Into<String>, help: String) {
        self.list
            .push(self.source.error(span.clone(), message, Some(help)));
    }
    /// Ends a stage: later stages assume earlier ones held.
    fn check(&mut self) -> Result<(), SpecErrors> {
        if self.list.is_empty() {
            Ok(())
        } else {
            Err(SpecErrors {
                errors: std::mem::take(&mut self.list),
            })
        }
    }
}

fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match best_match(word, candidates) {
        Some(m) => format!("did you mean `{m}`?"),
        None => "check the spelling against the names defined in this file".into(),
    }
}

pub fn resolve(draft: Draft, source: &SourceFile) -> Result<Topology, SpecErrors> {
    let mut errs = Errors {
        source,
        list: Vec::new(),
    };

    // Nodes.
    let mut node_ix: BTreeMap<&NodeName, usize> = BTreeMap::new();
    for (i, (name, span)) in draft.nodes.iter().enumerate() {
        if node_ix.insert(name, i).is_some() {
            errs.push(span, format!("node `{name}` is listed twice"));
        }
    }
    let node_names: Vec<&str> = draft.nodes.iter().map(|(n, _)| n.as_str()).collect();
    let unknown_node = |errs: &mut Errors, name: &NodeName, span: &Span| {
        errs.push_help(
            span,
            format!("unknown node `{name}`"),
            suggest(name.as_str(), node_names.iter().copied()),
        );
    };

    // Segments and the interfaces they imply.
    let mut seg_ix: BTreeMap<&Name, usize> = BTreeMap::new();
    let mut port_seen: BTreeMap<(&NodeName, &IfName), &Name> = BTreeMap::new();
    for (i, seg) in draft.segments.iter().enumerate() {
        let (name, span) = &seg.name;
        if seg_ix.insert(name, i).is_some() {
            errs.push(span, format!("segment `{name}` is defined twice"));
        }
        if seg.members.len() < 2 {
            errs.push_help(
                span,
                format!(
                    "segment `{name}` has {} member(s); a wire needs at least two",
                    seg.members.len()
                ),
                "add members as \"node:interface\", or remove the segment".into(),
            );
        }
        for p in &seg.members {
            if !node_ix.contains_key(&p.node) {
                unknown_node(&mut errs, &p.node, &p.span);
            } else if let Some(other) = port_seen.insert((&p.node, &p.interface), name) {
                errs.push(
                    &p.span,
                    format!("{}:{} is already on segment `{other}`; an interface attaches to one segment", p.node, p.interface),
                );
            }
        }
    }
    errs.check()?;

    // Switches join segments into networks; a segment on its own is its own network.
    let mut switch_of: BTreeMap<&Name, &Name> = BTreeMap::new();
    let mut switch_names = BTreeSet::new();
    for sw in &draft.switches {
        let (name, span) = &sw.name;
        if !switch_names.insert(name) {
            errs.push(span, format!("switch `{name}` is defined twice"));
        }
        if seg_ix.contains_key(name) {
            errs.push(span, format!("switch `{name}` has the same name as a segment; networks are named after them, so names must differ"));
        }
        if sw.segments.len() < 2 {
            errs.push(
                span,
                format!(
                    "switch `{name}` joins {} segment(s); a switch joins at least two",
                    sw.segments.len()
                ),
            );
        }
        for (seg, sspan) in &sw.segments {
            if !seg_ix.contains_key(seg) {
                errs.push_help(
                    sspan,
                    format!("unknown segment `{seg}`"),
                    suggest(seg.as_str(), seg_ix.keys().map(|s| s.as_str())),
                );
            } else if let Some(other) = switch_of.insert(seg, name) {
                errs.push(
                    sspan,
                    format!("segment `{seg}` is already joined by switch `{other}`"),
                );
            }
        }
    }
    errs.check()?;

    let mut networks: Vec<Network> = Vec::new();
    for seg in &draft.segments {
        let seg_name = &seg.name.0;
        match switch_of.get(seg_name) {
            Some(sw) if networks.iter().any(|n| &n.name == *sw) => {}
            Some(sw) => {
                let sw_spec = draft
                    .switches
                    .iter()
                    .find(|s| &s.name.0 == *sw)
                    .expect("checked");
                networks.push(Network {
                    name: (*sw).clone(),
                    segments: sw_spec.segments.iter().map(|(s, _)| s.clone()).collect(),
                    switch: Some((*sw).clone()),
                });
            }
            None => networks.push(Network {
                name: seg_name.clone(),
                segments: vec![seg_name.clone()],
                switch: None,
            }),
        }
    }
    let network_of = |seg: &Name| -> Name { (*switch_of.get(seg).unwrap_or(&seg)).clone() };

    // Per-node interfaces, sorted by name.
    let mut ifaces: Vec<BTreeMap<IfName, Name>> = vec![BTreeMap::new(); draft.nodes.len()];
    for seg in &draft.segments {
        for p in &seg.members {
            ifaces[node_ix[&p.node]].insert(p.interface.clone(), seg.name.0.clone());
        }
    }

    // Bonds.
    let mut bonds: Vec<Vec<(Bond, Span)>> = vec![Vec::new(); draft.nodes.len()];
    let mut slave_of: BTreeMap<(usize, IfName), IfName> = BTreeMap::new();
    for b in &draft.bonds {
        let (node, nspan) = &b.node;
        let Some(&ni) = node_ix.get(node) else {
            unknown_node(&mut errs, node, nspan);
            continue;
        };
        let (name, bspan) = &b.name;
        if ifaces[ni].contains_key(name) {
            errs.push(
                bspan,
                format!("bond `{name}` on {node} has the name of one of its interfaces"),
            );
        }
        if bonds[ni].iter().any(|(x, _)| &x.name == name) {
            errs.push(bspan, format!("bond `{name}` is defined twice on {node}"));
        }
        if b.slaves.is_empty() {
            errs.push(bspan, format!("bond `{name}` has no slaves"));
        }
        for (slave, sspan) in &b.slaves {
            if !ifaces[ni].contains_key(slave) {
                let have: Vec<&str> = ifaces[ni].keys().map(|i| i.as_str()).collect();
                errs.push_help(
                    sspan,
                    format!(
                        "bond `{name}` on {node}: slave `{slave}` is not an interface of {node}"
                    ),
                    format!(
                        "{node} has {}",
                        if have.is_empty() {
                            "no interfaces".into()
                        } else {
                            have.join(", ")
                        }
                    ),
                );
            } else if let Some(other) = slave_of.insert((ni, slave.clone()), name.clone()) {
                errs.push(
                    sspan,
                    format!("{node}:{slave} is already a slave of bond `{other}`"),
                );
            }
        }
        let (mode, mspan) = &b.mode;
        if let Some((_, xspan)) = &b.xmit_hash_policy
            && !matches!(
                mode,
                BondMode::BalanceXor
                    | BondMode::Ieee8023ad
                    | BondMode::BalanceTlb
                    | BondMode::BalanceAlb
            )
        {
            errs.push(
                xspan,
                format!("xmit_hash_policy does not apply to mode {mode}"),
            );
        }
        // The userspace bond cannot honour modes that need the switch's cooperation (802.3ad)
        // or ARP rewriting (tlb, alb); say so now rather than when the node runs it.
        if b.driver == crate::spec::topology::BondDriver::Userspace
            && matches!(
                mode,
                BondMode::Ieee8023ad | BondMode::BalanceTlb | BondMode::BalanceAlb
            )
        {
            errs.push_help(
                mspan,
                format!("mode {mode} needs the kernel's bonding driver; the userspace bond does not emulate it"),
                "use driver = \"kernel\" on nodes that have it, or balance-rr, active-backup, balance-xor or broadcast".into(),
            );
        }
        if let Some((primary, pspan)) = &b.primary {
            if !matches!(
                mode,
                BondMode::ActiveBackup | BondMode::BalanceTlb | BondMode::BalanceAlb
            ) {
                errs.push(pspan, format!("primary does not apply to mode {mode}"));
            } else if !b.slaves.iter().any(|(s, _)| s == primary) {
                errs.push(
                    pspan,
                    format!("primary `{primary}` is not one of the bond's slaves"),
                );
            }
        }
        bonds[ni].push((
            Bond {
                name: name.clone(),
                mode: *mode,
                slaves: b.slaves.iter().map(|(s, _)| s.clone()).collect(),
                miimon: b.miimon,
                xmit_hash_policy: b.xmit_hash_policy.as_ref().map(|(x, _)| *x),
                primary: b.primary.as_ref().map(|(p, _)| p.clone()),
                driver: b.driver,
                address: Ipv4Net::default(),
            },
            bspan.clone(),
        ));
    }
    errs.check()?;

    // A node may attach to a network once, except through a bond's slaves.
    for (ni, (node, nspan)) in draft.nodes.iter().enumerate() {
        let mut seen: BTreeMap<Name, &IfName> = BTreeMap::new();
        for (ifname, seg) in &ifaces[ni] {
            if slave_of.contains_key(&(ni, ifname.clone())) {
                continue;
            }
            let net = network_of(seg);
            if let Some(other) = seen.insert(net.clone(), ifname) {
                errs.push_help(
                    nspan,
                    format!("{node} has both {other} and {ifname} on network `{net}`; a node attaches to a network once"),
                    "bond the two interfaces, or put them on different networks".into(),
                );
            }
        }
    }
    errs.check()?;

    // Subnets: one per network for plain interfaces, one per set of networks for bonds.
    // Keys are the networks a link's wires reach; order: plain networks first, then bonds.
    #[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
    struct LinkRef {
        node: usize,
        interface: IfName,
    }
    let mut groups: Vec<(Vec<Name>, Vec<LinkRef>)> = Vec::new();
    let mut add_link =
        |key: Vec<Name>, link: LinkRef| match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(link),
            None => groups.push((key, vec![link])),
        };
    for net in &networks {
        for (ni, node_ifaces) in ifaces.iter().enumerate() {
            for (ifname, seg) in node_ifaces {
                if network_of(seg) == net.name && !slave_of.contains_key(&(ni, ifname.clone())) {
                    add_link(
                        vec![net.name.clone()],
                        LinkRef {
                            node: ni,
                            interface: ifname.clone(),
                        },
                    );
                }
            }
        }
    }
    for (ni, node_bonds) in bonds.iter().enumerate() {
        for (b, _) in node_bonds {
            let mut key: Vec<Name> = b
                .slaves
                .iter()
                .map(|s| network_of(&ifaces[ni][s]))
                .collect();
            key.sort();
            add_link(
                key,
                LinkRef {
                    node: ni,
                    interface: b.name.clone(),
                },
            );
        }
    }

    // Address overrides.
    let mut overrides: BTreeMap<(usize, IfName), (Ipv4Net, Span)> = BTreeMap::new();
    for a in &draft.addresses {
        let (node, nspan) = &a.node;
        let Some(&ni) = node_ix.get(node) else {
            unknown_node(&mut errs, node, nspan);
            continue;
        };
        let (ifname, ispan) = &a.interface;
        let is_bond = bonds[ni].iter().any(|(b, _)| &b.name == ifname);
        if let Some(master) = slave_of.get(&(ni, ifname.clone())) {
            errs.push(
                ispan,
                format!(
                    "{node}:{ifname} is a slave of bond `{master}`; give the address to `{master}`"
                ),
            );
        } else if !is_bond && !ifaces[ni].contains_key(ifname) {
            let mut have: Vec<&str> = ifaces[ni].keys().map(|i| i.as_str()).collect();
            have.extend(bonds[ni].iter().map(|(b, _)| b.name.as_str()));
            errs.push_help(
                ispan,
                format!("{node} has no interface `{ifname}`"),
                suggest(ifname.as_str(), have),
            );
        } else if overrides
            .insert((ni, ifname.clone()), (a.address.0, a.address.1.clone()))
            .is_some()
        {
            errs.push(
                &a.address.1,
                format!("{node}:{ifname} is given an address twice"),
            );
        }
    }
    errs.check()?;

    // Prefixes: a subnet with overrides takes their network; the others are carved from base.
    let (base, base_span) = &draft.base;
    let (prefix_len, prefix_span) = &draft.prefix;
    if *prefix_len < base.prefix_len() || *prefix_len > 30 {
        errs.push(
            prefix_span,
            format!(
                "prefix {prefix_len} does not fit: expected between the base's /{} and /30",
                base.prefix_len()
            ),
        );
        errs.check()?;
    }
    let mut prefixes: Vec<Option<Ipv4Net>> = vec![None; groups.len()];
    for (gi, (_, links)) in groups.iter().enumerate() {
        for l in links {
            if let Some((net, span)) = overrides.get(&(l.node, l.interface.clone())) {
                let trunc = net.trunc();
                match prefixes[gi] {
                    None => prefixes[gi] = Some(trunc),
                    Some(p) if p != trunc => errs.push(
                        span,
                        format!("address {net} is not in {p}, the subnet already given to the other interfaces on this network"),
                    ),
                    Some(_) => {}
                }
            }
        }
    }
    let fixed: Vec<(Ipv4Net, usize)> = prefixes
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (p, i)))
        .collect();
    for (i, (a, ai)) in fixed.iter().enumerate() {
        for (b, bi) in &fixed[i + 1..] {
            if a.contains(&b.network()) || b.contains(&a.network()) {
                let span = overrides
                    .iter()
                    .find(|((n, ifn), _)| {
                        groups[*bi]
                            .1
                            .iter()
                            .any(|l| l.node == *n && &l.interface == ifn)
                    })
                    .map(|(_, (_, s))| s.clone())
                    .unwrap_or(0..0);
                errs.push(
                    &span,
                    format!(
                        "subnet {b} overlaps {a}, used on network(s) {}",
                        groups[*ai]
                            .0
                            .iter()
                            .map(|n| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }
    errs.check()?;
    let mut candidates = base.subnets(*prefix_len).expect("prefix checked");
    for p in prefixes.iter_mut().filter(|p| p.is_none()) {
        let next = candidates.find(|c| {
            !fixed
                .iter()
                .any(|(f, _)| f.contains(&c.network()) || c.contains(&f.network()))
        });
        match next {
            Some(c) => *p = Some(c),
            None => {
                errs.push_help(
                    base_span,
                    format!("addressing base {base} has too few /{prefix_len} subnets for the {} this topology needs", groups.len()),
                    "choose a larger base or a longer prefix".into(),
                );
                return Err(errs.check().expect_err("just pushed"));
            }
        }
    }

    // Host addresses: node i gets host i+1 on every subnet, unless given by hand.
    let mut subnets: Vec<Subnet> = Vec::new();
    let mut address_of: BTreeMap<(usize, IfName), Ipv4Net> = BTreeMap::new();
    for ((key, links), prefix) in groups.iter().zip(&prefixes) {
        let prefix = prefix.expect("assigned");
        let taken: BTreeSet<Ipv4Addr> = links
            .iter()
            .filter_map(|l| {
                overrides
                    .get(&(l.node, l.interface.clone()))
                    .map(|(a, _)| a.addr())
            })
            .collect();
        let mut used = taken.clone();
        let mut out = Vec::new();
        for l in links {
            let addr = match overrides.get(&(l.node, l.interface.clone())) {
                Some((a, span)) => {
                    if a.addr() == prefix.network() || a.addr() == prefix.broadcast() {
                        errs.push(
                            span,
                            format!(
                                "{} is the network or broadcast address of {prefix}",
                                a.addr()
                            ),
                        );
                    }
                    a.addr()
                }
                None => {
                    let mut host = l.node as u32 + 1;
                    loop {
                        let cand = Ipv4Addr::from(u32::from(prefix.network()) + host);
                        if !prefix.contains(&cand) || cand == prefix.broadcast() {
                            errs.push(
                                prefix_span,
                                format!(
                                    "subnet {prefix} has no room for node {}",
                                    draft.nodes[l.node].0
                                ),
                            );
                            break cand;
                        }
                        if used.insert(cand) {
                            break cand;
                        }
                        host += 1;
                    }
                }
            };
            let net = Ipv4Net::new(addr, prefix.prefix_len()).expect("valid length");
            address_of.insert((l.node, l.interface.clone()), net);
            out.push(Link {
                node: draft.nodes[l.node].0.clone(),
                interface: l.interface.clone(),
                address: addr,
            });
        }
        let mut dup = BTreeSet::new();
        for l in &out {
            if !dup.insert(l.address) {
                errs.push(
                    &(0..0),
                    format!("address {} is used twice on {prefix}", l.address),
                );
            }
        }
        subnets.push(Subnet {
            prefix,
            networks: key.clone(),
            links: out,
        });
    }
    errs.check()?;

    let mut nodes: Vec<Node> = draft
        .nodes
        .iter()
        .enumerate()
        .map(|(ni, (name, _))| Node {
            name: name.clone(),
            interfaces: ifaces[ni]
                .iter()
                .map(|(ifname, seg)| Interface {
                    name: ifname.clone(),
                    segment: seg.clone(),
                    attachment: match slave_of.get(&(ni, ifname.clone())) {
                        Some(master) => Attachment::BondSlave(master.clone()),
                        None => Attachment::Address(address_of[&(ni, ifname.clone())]),
                    },
                })
                .collect(),
            bonds: bonds[ni]
                .iter()
                .map(|(b, _)| Bond {
                    address: address_of[&(ni, b.name.clone())],
                    ..b.clone()
                })
                .collect(),
            routes: Vec::new(),
            forwarding: false,
            host: Host::from_spec(
                draft
                    .node_hosts
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map_or(&draft.host, |(_, h)| h),
            ),
        })
        .collect();

    let segments: Vec<Segment> = draft
        .segments
        .iter()
        .map(|s| Segment {
            name: s.name.0.clone(),
            rate: s.rate,
            medium: s.medium,
            emulation: s.emulation,
            members: s
                .members
                .iter()
                .map(|p| Port {
                    node: p.node.clone(),
                    interface: p.interface.clone(),
                })
                .collect(),
            network: network_of(&s.name.0),
        })
        .collect();

    let mut topology = Topology {
        name: draft.name.clone(),
        description: draft.description.clone(),
        nodes: Vec::new(),
        segments,
        networks,
        subnets,
    };

    // Routes: the given tables, or computed ones.
    let explicit = match draft.routing {
        RoutingMode::Explicit => true,
        RoutingMode::Computed => false,
        RoutingMode::Auto => !draft.routes.is_empty(),
    };
    let mut route_spans: BTreeMap<NodeName, Span> = BTreeMap::new();
    if explicit {
        for r in &draft.routes {
            let (node, nspan) = &r.node;
            let Some(&ni) = node_ix.get(node) else {
                unknown_node(&mut errs, node, nspan);
                continue;
            };
            route_spans
                .entry(node.clone())
                .or_insert_with(|| r.via.1.clone());
            let (to, tspan) = &r.to;
            let (via, vspan) = &r.via;
            let links: Vec<(IfName, Ipv4Net)> =
                nodes[ni].links().map(|(i, a)| (i.clone(), a)).collect();
            if let Some((ifn, a)) = links
                .iter()
                .find(|(_, a)| a.trunc().contains(&to.network()) || to.contains(&a.network()))
            {
                errs.push(tspan, format!("route to {to} on {node} overlaps {}, which {node} reaches directly on {ifn}", a.trunc()));
                continue;
            }
            let Some((dev, _)) = links.iter().find(|(_, a)| a.trunc().contains(via)) else {
                let attached: Vec<String> = links
                    .iter()
                    .map(|(i, a)| format!("{} on {i}", a.trunc()))
                    .collect();
                errs.push_help(
                    vspan,
                    format!("route via {via}: {via} is not on a network {node} is attached to, so it is not a neighbour"),
                    format!("{node} is attached to {}", attached.join(", ")),
                );
                continue;
            };
            if topology
                .subnets
                .iter()
                .all(|s| s.links.iter().all(|l| l.address != *via))
            {
                errs.push(vspan, format!("route via {via}: no node has that address"));
                continue;
            }
            if nodes[ni].routes.iter().any(|x| x.to == *to) {
                errs.push(tspan, format!("{node} has two routes to {to}"));
                continue;
            }
            nodes[ni].routes.push(Route {
                to: *to,
                via: *via,
                dev: dev.clone(),
            });
        }
        errs.check()?;
    } else {
        topology.nodes = nodes;
        routing::compute_routes(&mut topology);
        nodes = std::mem::take(&mut topology.nodes);
    }
    // A node forwards exactly when some route's next hop is one of its addresses.
    let next_hops: BTreeSet<Ipv4Addr> = nodes
        .iter()
        .flat_map(|n| n.routes.iter().map(|r| r.via))
        .collect();
    for n in &mut nodes {
        n.forwarding = n.addresses().iter().any(|a| next_hops.contains(a));
    }
    topology.nodes = nodes;

    // Prove every ordered pair reaches the other and back, with no loop or black hole.
    if let Err(problems) = paths::check_all(&topology) {
        let total = problems.len();
        for p in problems.into_iter().take(8) {
            // Point at a route of the node where the packet was lost, else of the sender,
            // else at the first route given: the tables are what needs fixing.
            let span = route_spans
                .get(&p.at)
                .or_else(|| route_spans.get(&p.from))
                .or_else(|| draft.routes.first().map(|r| &r.via.1))
                .cloned()
                .unwrap_or(0..0);
            errs.push(&span, format!("path check: {}", p.message));
        }
        if total > 8 {
            errs.push(
                &(0..0),
                format!("path check: {} more unreachable pairs", total - 8),
            );
        }
        errs.check()?;
    }
    Ok(topology)
}
