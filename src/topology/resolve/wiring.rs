//! Layer 2: the segments that wire the nodes' interfaces, the switches that join segments into
//! networks, and the interfaces each node ends up with.

use std::collections::{BTreeMap, BTreeSet};

use crate::spec::{IfName, Name, NodeName, SpecErrors};
use crate::topology::draft::Draft;
use crate::topology::graph::Network;

use super::errors::{Errors, suggest};
use super::nodes::NodeIndex;

/// The checked layer-2 layout.
pub(super) struct Wiring<'d> {
    /// The switch joining each segment that has one.
    switch_of: BTreeMap<&'d Name, &'d Name>,
    /// A network per switch, and one per segment without a switch, in the segments' order.
    pub(super) networks: Vec<Network>,
    /// Per node (by position in the draft), its interfaces by name and the segment of each.
    pub(super) interfaces: Vec<BTreeMap<IfName, Name>>,
}

impl Wiring<'_> {
    /// The network a segment belongs to: its switch's, else its own.
    pub(super) fn network_of(&self, seg: &Name) -> Name {
        (*self.switch_of.get(seg).unwrap_or(&seg)).clone()
    }
}

/// Checks the segments and switches and works out the networks and interfaces they make.
pub(super) fn wire<'d>(
    draft: &'d Draft,
    nodes: &NodeIndex,
    errs: &mut Errors,
) -> Result<Wiring<'d>, SpecErrors> {
    let segments = check_segments(draft, nodes, errs);
    errs.check()?;
    check_attached(draft, errs);
    errs.check()?;
    let switch_of = join_switches(draft, &segments, errs);
    errs.check()?;
    Ok(Wiring {
        networks: networks(draft, &switch_of),
        interfaces: interfaces(draft, nodes),
        switch_of,
    })
}

/// Each segment named once, with two members or more, each an interface of a known node that
/// is on no other segment. Returns the segments' names.
fn check_segments<'d>(
    draft: &'d Draft,
    nodes: &NodeIndex,
    errs: &mut Errors,
) -> BTreeSet<&'d Name> {
    let mut names = BTreeSet::new();
    let mut port_seen: BTreeMap<(&NodeName, &IfName), &Name> = BTreeMap::new();
    for seg in &draft.segments {
        let (name, span) = &seg.name;
        if !names.insert(name) {
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
            if !nodes.contains(&p.node) {
                nodes.report_unknown(&p.node, &p.span, errs);
            } else if let Some(other) = port_seen.insert((&p.node, &p.interface), name) {
                errs.push(
                    &p.span,
                    format!("{}:{} is already on segment `{other}`; an interface attaches to one segment", p.node, p.interface),
                );
            }
        }
    }
    names
}

/// Every node is on some segment: one that is not could reach no other node.
fn check_attached(draft: &Draft, errs: &mut Errors) {
    let attached: BTreeSet<&NodeName> = draft
        .segments
        .iter()
        .flat_map(|s| s.members.iter().map(|p| &p.node))
        .collect();
    for (node, span) in &draft.nodes {
        if !attached.contains(node) {
            errs.push_help(
                span,
                format!("node `{node}` is on no segment, so it can reach no other node"),
                format!("add \"{node}:eth1\" to a segment's members, or remove the node"),
            );
        }
    }
}

/// Each switch named once and apart from the segments, joining two known segments or more that
/// no other switch joins. Returns the switch joining each segment.
fn join_switches<'d>(
    draft: &'d Draft,
    segments: &BTreeSet<&'d Name>,
    errs: &mut Errors,
) -> BTreeMap<&'d Name, &'d Name> {
    let mut switch_of = BTreeMap::new();
    let mut switch_names = BTreeSet::new();
    for sw in &draft.switches {
        let (name, span) = &sw.name;
        if !switch_names.insert(name) {
            errs.push(span, format!("switch `{name}` is defined twice"));
        }
        if segments.contains(name) {
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
            if !segments.contains(seg) {
                errs.push_help(
                    sspan,
                    format!("unknown segment `{seg}`"),
                    suggest(seg.as_str(), segments.iter().map(|s| s.as_str())),
                );
            } else if let Some(other) = switch_of.insert(seg, name) {
                errs.push(
                    sspan,
                    format!("segment `{seg}` is already joined by switch `{other}`"),
                );
            }
        }
    }
    switch_of
}

/// Switches join segments into networks; a segment on its own is its own network.
fn networks(draft: &Draft, switch_of: &BTreeMap<&Name, &Name>) -> Vec<Network> {
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
    networks
}

/// Per-node interfaces, sorted by name, with the segment each is on.
fn interfaces(draft: &Draft, nodes: &NodeIndex) -> Vec<BTreeMap<IfName, Name>> {
    let mut ifaces: Vec<BTreeMap<IfName, Name>> = vec![BTreeMap::new(); draft.nodes.len()];
    for seg in &draft.segments {
        for p in &seg.members {
            ifaces[nodes.position(&p.node)].insert(p.interface.clone(), seg.name.0.clone());
        }
    }
    ifaces
}
