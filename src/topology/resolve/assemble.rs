//! The checked and addressed pieces put together as a [`Topology`], its routes still to come.

use crate::topology::draft::{Draft, DraftSegment};
use crate::topology::graph::{
    Attachment, Bond, Interface, NamedHostCosts, Node, Port, Segment, Topology,
};

use super::bonds::Bonds;
use super::hosts::Addressing;
use super::wiring::Wiring;

pub(super) fn assemble(
    draft: &Draft,
    wiring: Wiring,
    bonds: &Bonds,
    addressing: Addressing,
) -> Topology {
    let nodes = (0..draft.nodes.len())
        .map(|ni| node(draft, ni, &wiring, bonds, &addressing))
        .collect();
    let segments = draft.segments.iter().map(|s| segment(s, &wiring)).collect();
    Topology {
        name: draft.name.clone(),
        description: draft.description.clone(),
        nodes,
        segments,
        networks: wiring.networks,
        subnets: addressing.subnets,
    }
}

/// The node at position `ni` in the draft, with its interfaces, bonds and host costs; no
/// routes yet, and not forwarding.
fn node(draft: &Draft, ni: usize, wiring: &Wiring, bonds: &Bonds, addressing: &Addressing) -> Node {
    let name = &draft.nodes[ni].0;
    let address_of = &addressing.address_of;
    Node {
        name: name.clone(),
        interfaces: wiring.interfaces[ni]
            .iter()
            .map(|(ifname, seg)| Interface {
                name: ifname.clone(),
                segment: seg.clone(),
                attachment: match bonds.master(ni, ifname) {
                    Some(master) => Attachment::BondSlave(master.clone()),
                    None => Attachment::Address(address_of[&(ni, ifname.clone())]),
                },
            })
            .collect(),
        bonds: bonds.per_node[ni]
            .iter()
            .map(|b| Bond {
                address: address_of[&(ni, b.name.clone())],
                ..b.clone()
            })
            .collect(),
        routes: Vec::new(),
        forwarding: false,
        mptcp: None,
        ecmp: None,
        // The last host costs given for the node win; else the topology's.
        host: NamedHostCosts::from_spec(
            draft
                .node_hosts
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map_or(&draft.host, |(_, h)| h),
        ),
    }
}

fn segment(s: &DraftSegment, wiring: &Wiring) -> Segment {
    Segment {
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
        network: wiring.network_of(&s.name.0),
    }
}
