//! The explicit form every topology passes through on its way to the resolved graph: the spec's
//! lists with ranges expanded and generators run, each item keeping the span it came from so that
//! resolution can point errors at the text.

use std::net::Ipv4Addr;
use std::ops::Range;

use ipnet::Ipv4Net;

use crate::spec::HostSpec;
use crate::spec::topology::{
    BondMode, DriverChoice, Emulation, Medium, RoutingMode, XmitHashPolicy,
};
use crate::spec::{IfName, Name, NodeName, Rate};

pub type Span = Range<usize>;

#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub name: Name,
    pub description: Option<String>,
    pub base: (Ipv4Net, Span),
    pub prefix: (u8, Span),
    pub routing: RoutingMode,
    pub nodes: Vec<(NodeName, Span)>,
    /// Host costs of nodes without their own.
    pub host: HostSpec,
    /// Nodes given their own host costs.
    pub node_hosts: Vec<(NodeName, HostSpec)>,
    /// Emulation of segments that do not name theirs.
    pub emulation: Emulation,
    pub segments: Vec<DraftSegment>,
    pub switches: Vec<DraftSwitch>,
    pub bonds: Vec<DraftBond>,
    pub routes: Vec<DraftRoute>,
    pub addresses: Vec<DraftAddress>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftSegment {
    pub name: (Name, Span),
    pub rate: Rate,
    pub medium: Medium,
    pub emulation: Emulation,
    pub members: Vec<DraftPort>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftPort {
    pub node: NodeName,
    pub interface: IfName,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftSwitch {
    pub name: (Name, Span),
    pub segments: Vec<(Name, Span)>,
}

/// One bond on one node (a spec's bond over several nodes becomes several of these).
#[derive(Debug, Clone, PartialEq)]
pub struct DraftBond {
    pub node: (NodeName, Span),
    pub name: (IfName, Span),
    pub mode: (BondMode, Span),
    pub slaves: Vec<(IfName, Span)>,
    pub miimon: Option<u32>,
    pub xmit_hash_policy: Option<(XmitHashPolicy, Span)>,
    pub primary: Option<(IfName, Span)>,
    pub driver: DriverChoice,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftRoute {
    pub node: (NodeName, Span),
    pub to: (Ipv4Net, Span),
    pub via: (Ipv4Addr, Span),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftAddress {
    pub node: (NodeName, Span),
    pub interface: (IfName, Span),
    pub address: (Ipv4Net, Span),
}
