//! What the virtual cluster needs to know about a topology: which node has which interface on
//! which segment, each segment's rate and medium, and which switches join which segments.
//! Addresses, routes and bonds are not here: the controller configures those over SSH, as on
//! real machines.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::MGMT_IFNAME;

pub use crate::topology::Medium;
pub use orchestrate_medium::host::HostCosts;

pub use crate::spec::topology::Emulation;

/// Index of a segment in [`Wiring::segments`]. Only [`WiringBuilder`] makes them, so every
/// index in a built [`Wiring`] is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SegmentId(usize);

impl SegmentId {
    pub fn index(self) -> usize {
        self.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub name: String,
    /// Bits per second.
    pub rate_bps: u64,
    pub medium: Medium,
    /// One-way delay added on the segment (needs netem).
    pub delay: Option<Duration>,
    /// Random loss in percent (needs netem).
    pub loss_percent: Option<f64>,
    /// State files written before the medium emulator existed have no field: their
    /// segments were token buckets.
    #[serde(default = "rate_emulation")]
    pub emulation: Emulation,
}

fn rate_emulation() -> Emulation {
    Emulation::Rate
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    pub interface: String,
    pub segment: SegmentId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub ports: Vec<Port>,
    /// IP forwarding at creation. Docker keeps /proc/sys read-only inside containers, so a
    /// node that must forward gets it here; the controller's scripts then find it already set
    /// and leave it alone.
    #[serde(default)]
    pub forwarding: bool,
    /// What the node's CPU spends per frame; applied by the medium emulator.
    #[serde(default)]
    pub host: HostCosts,
    /// The node's own IPv4 addresses (the controller assigns them over SSH): the medium
    /// emulator charges a frame sent from any other source as forwarded.
    #[serde(default)]
    pub own_ipv4: Vec<std::net::Ipv4Addr>,
    /// ECMP's hash policy at creation, where the node routes with ECMP: read-only inside the
    /// container like forwarding, so set here for the scripts to find.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipath_hash: Option<crate::spec::multipath::MultipathHash>,
}

/// A store-and-forward switch with one port on each of its segments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    pub name: String,
    pub segments: Vec<SegmentId>,
}

/// A topology's wires, checked for what a docker cluster can build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wiring {
    pub topology: String,
    pub segments: Vec<Segment>,
    pub nodes: Vec<Node>,
    pub switches: Vec<Switch>,
}

impl Wiring {
    pub fn builder(topology: impl Into<String>) -> WiringBuilder {
        WiringBuilder {
            topology: topology.into(),
            segments: Vec::new(),
            nodes: Vec::new(),
            switches: Vec::new(),
        }
    }

    pub fn segment(&self, id: SegmentId) -> &Segment {
        &self.segments[id.0]
    }

    pub fn segment_ids(&self) -> impl Iterator<Item = SegmentId> + '_ {
        (0..self.segments.len()).map(SegmentId)
    }

    /// The nodes attached to a segment, with the interface each uses, in node order.
    pub fn members(&self, id: SegmentId) -> Vec<(&Node, &Port)> {
        self.nodes
            .iter()
            .flat_map(|n| n.ports.iter().map(move |p| (n, p)))
            .filter(|(_, p)| p.segment == id)
            .collect()
    }

    /// The wires of a resolved topology. Bonds, addresses and routes are left to the
    /// controller; a switch becomes a switch container with a port on each of its segments.
    pub fn from_topology(t: &crate::topology::Topology) -> Result<Wiring> {
        let mut b = Wiring::builder(t.name.as_str());
        for s in &t.segments {
            b = b
                .segment(s.name.as_str(), s.rate.bits_per_s(), s.medium)
                .emulation(s.emulation);
        }
        for n in &t.nodes {
            b = b.node(
                n.name.as_str(),
                n.interfaces
                    .iter()
                    .map(|i| (i.name.as_str(), i.segment.as_str())),
            );
        }
        for net in &t.networks {
            if let Some(sw) = &net.switch {
                b = b.switch(sw.as_str(), net.segments.iter().map(|s| s.as_str()));
            }
        }
        let mut w = b.build()?;
        for node in &mut w.nodes {
            let Some(n) = t.nodes.iter().find(|n| n.name.as_str() == node.name) else {
                continue;
            };
            node.forwarding = n.forwarding;
            node.host = n.host.costs;
            node.own_ipv4 = own_addresses(n);
            node.multipath_hash = n.ecmp.as_ref().map(|e| e.hash);
        }
        Ok(w)
    }

    /// Whether a cluster built as `self` measures what `other` asks for: the same segments,
    /// ports, switches and host costs. The nodes' own addresses matter only where a host has
    /// costs (the medium emulator charges a frame from another source as forwarded), so the
    /// configurations of one topology that address its interfaces differently (its bonds, or
    /// MPTCP on the bonds' interfaces) share a cluster whose hosts are free.
    pub fn carries(&self, other: &Wiring) -> bool {
        let free = |w: &Wiring| w.nodes.iter().all(|n| n.host.is_free());
        let without_addresses = |w: &Wiring| {
            let mut w = w.clone();
            for n in &mut w.nodes {
                n.own_ipv4.clear();
            }
            w
        };
        self == other
            || (free(self) && free(other) && without_addresses(self) == without_addresses(other))
    }

    /// Segments the medium emulator carries.
    pub fn emulated_segments(&self) -> impl Iterator<Item = SegmentId> + '_ {
        self.segment_ids().filter(|&id| self.carries_frames(id))
    }

    /// Whether the medium emulator carries segment `id`.
    pub fn carries_frames(&self, id: SegmentId) -> bool {
        self.segment(id).emulation == Emulation::Frames
    }

    /// Does any segment ask for delay or loss (and so need netem)?
    pub fn needs_netem(&self) -> Vec<&Segment> {
        self.segments
            .iter()
            .filter(|s| s.delay.is_some() || s.loss_percent.is_some())
            .collect()
    }
}

/// Every address the topology gives a node, on its interfaces, its bonds and (for ECMP) `lo`.
fn own_addresses(n: &crate::topology::Node) -> Vec<std::net::Ipv4Addr> {
    let mut out: Vec<std::net::Ipv4Addr> = n
        .interfaces
        .iter()
        .filter_map(|i| match &i.attachment {
            crate::topology::Attachment::Address(net) => Some(net.addr()),
            crate::topology::Attachment::BondSlave(_) => None,
        })
        .collect();
    out.extend(n.bonds.iter().map(|b| b.address.addr()));
    out.extend(n.node_address());
    out.sort();
    out.dedup();
    out
}

/// Collects segments, nodes and switches by name and checks them in [`WiringBuilder::build`].
pub struct WiringBuilder {
    topology: String,
    segments: Vec<Segment>,
    nodes: Vec<(String, Vec<(String, String)>)>,
    switches: Vec<(String, Vec<String>)>,
}

impl WiringBuilder {
    pub fn segment(mut self, name: impl Into<String>, rate_bps: u64, medium: Medium) -> Self {
        self.segments.push(Segment {
            name: name.into(),
            rate_bps,
            medium,
            delay: None,
            loss_percent: None,
            emulation: Emulation::default(),
        });
        self
    }

    /// Sets how the segment added last is emulated.
    pub fn emulation(mut self, emulation: Emulation) -> Self {
        if let Some(s) = self.segments.last_mut() {
            s.emulation = emulation;
        }
        self
    }

    /// Adds delay and loss to the segment added last.
    pub fn impairment(mut self, delay: Option<Duration>, loss_percent: Option<f64>) -> Self {
        if let Some(s) = self.segments.last_mut() {
            s.delay = delay;
            s.loss_percent = loss_percent;
        }
        self
    }

    /// A node and its `(interface, segment)` ports.
    pub fn node<I, A, B>(mut self, name: impl Into<String>, ports: I) -> Self
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        let ports = ports
            .into_iter()
            .map(|(i, s)| (i.into(), s.into()))
            .collect();
        self.nodes.push((name.into(), ports));
        self
    }

    pub fn switch<I, S>(mut self, name: impl Into<String>, segments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.switches
            .push((name.into(), segments.into_iter().map(Into::into).collect()));
        self
    }

    pub fn build(self) -> Result<Wiring> {
        let bad = |m: String| Err(Error::Wiring(m));
        let by_name = number_segments(&self.segments)?;
        let lookup = |owner: &str, seg: &str| -> Result<SegmentId> {
            by_name.get(seg).copied().ok_or_else(|| {
                Error::Wiring(format!(
                    "{owner} refers to segment {seg:?}, which is not defined"
                ))
            })
        };
        // Node and switch names become compose service names: one namespace for both.
        let mut services = BTreeSet::new();
        let mut nodes = Vec::new();
        for (name, ports) in self.nodes {
            check_ident("node", &name, 40)?;
            if !services.insert(name.clone()) {
                return bad(format!("node {name:?} is defined twice"));
            }
            let mut ifnames = BTreeSet::new();
            let mut segs = BTreeSet::new();
            let mut out = Vec::new();
            for (ifname, seg) in ports {
                check_ifname(&name, &ifname)?;
                if !ifnames.insert(ifname.clone()) {
                    return bad(format!("node {name:?} has interface {ifname:?} twice"));
                }
                let id = lookup(&format!("node {name:?} interface {ifname:?}"), &seg)?;
                if !segs.insert(id) {
                    return bad(format!(
                        "node {name:?} has two interfaces on segment {seg:?}; a virtual node \
                         gets at most one port per segment (docker attaches a container to a \
                         network once)"
                    ));
                }
                out.push(Port {
                    interface: ifname,
                    segment: id,
                });
            }
            nodes.push(Node {
                name,
                ports: out,
                forwarding: false,
                host: HostCosts::default(),
                own_ipv4: Vec::new(),
                multipath_hash: None,
            });
        }
        let mut switches = Vec::new();
        for (name, segs) in self.switches {
            check_ident("switch", &name, 40)?;
            let service = switch_service(&name);
            if !services.insert(service.clone()) {
                return bad(format!(
                    "switch {name:?} would be service {service:?}, which is already a name"
                ));
            }
            let mut ids = Vec::new();
            for s in &segs {
                let id = lookup(&format!("switch {name:?}"), s)?;
                if ids.contains(&id) {
                    return bad(format!("switch {name:?} lists segment {s:?} twice"));
                }
                ids.push(id);
            }
            if ids.len() < 2 {
                return bad(format!("switch {name:?} joins fewer than two segments"));
            }
            switches.push(Switch {
                name,
                segments: ids,
            });
        }
        if nodes.is_empty() {
            return bad("the topology has no nodes".into());
        }
        Ok(Wiring {
            topology: self.topology,
            segments: self.segments,
            nodes,
            switches,
        })
    }
}

/// Checks each segment and gives it its id, by name.
fn number_segments(segments: &[Segment]) -> Result<BTreeMap<String, SegmentId>> {
    let bad = |m: String| Err(Error::Wiring(m));
    let mut by_name = BTreeMap::new();
    for (i, s) in segments.iter().enumerate() {
        check_ident("segment", &s.name, 40)?;
        if by_name.insert(s.name.clone(), SegmentId(i)).is_some() {
            return bad(format!("segment {:?} is defined twice", s.name));
        }
        if s.rate_bps < 8_000 {
            return bad(format!(
                "segment {:?} has rate {} bit/s; tc shapes nothing below 8 kbit/s",
                s.name, s.rate_bps
            ));
        }
        if let Some(l) = s.loss_percent
            && !(0.0..=100.0).contains(&l)
        {
            return bad(format!(
                "segment {:?}: loss {l}% is not a percentage",
                s.name
            ));
        }
    }
    Ok(by_name)
}

/// The compose service (and host name) of a switch.
pub fn switch_service(name: &str) -> String {
    format!("switch-{name}")
}

fn check_ident(what: &str, s: &str, max: usize) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= max
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Wiring(format!(
            "{what} name {s:?} must be 1 to {max} letters, digits, '_', '.' or '-', starting \
             with a letter or digit"
        )))
    }
}

fn check_ifname(node: &str, s: &str) -> Result<()> {
    check_ident("interface", s, 15)?;
    if s == "lo" || s == MGMT_IFNAME || s.starts_with("ocrn") {
        return Err(Error::Wiring(format!(
            "node {node:?}: interface name {s:?} is reserved in the virtual cluster ({MGMT_IFNAME} \
             is the management interface); choose another"
        )));
    }
    Ok(())
}

#[cfg(test)]
impl SegmentId {
    pub(crate) fn for_test(i: usize) -> SegmentId {
        SegmentId(i)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The study's switched 4x4 mesh: 8 shared buses, one switch over the rows, one over the
    /// columns.
    pub fn mesh(switched: bool) -> Wiring {
        let mut b = Wiring::builder(if switched {
            "switched-mesh-4x4"
        } else {
            "routed-mesh-4x4"
        });
        for i in 1..=4 {
            b = b.segment(format!("row{i}"), 10_000_000, Medium::Shared);
        }
        for i in 1..=4 {
            b = b.segment(format!("col{i}"), 10_000_000, Medium::Shared);
        }
        for r in 1..=4 {
            for c in 1..=4 {
                b = b.node(
                    format!("n{:02}", (r - 1) * 4 + c),
                    [("eth1", format!("row{r}")), ("eth2", format!("col{c}"))],
                );
            }
        }
        if switched {
            b = b
                .switch("rows", (1..=4).map(|i| format!("row{i}")))
                .switch("cols", (1..=4).map(|i| format!("col{i}")));
        }
        b.build().unwrap()
    }

    #[test]
    fn other_addresses_share_a_cluster_only_while_hosts_are_free() {
        let bonded = mesh(false);
        let mut readdressed = bonded.clone();
        readdressed.nodes[0].own_ipv4 = vec![[10, 111, 1, 1].into()];
        assert!(bonded.carries(&readdressed) && readdressed.carries(&bonded));

        let mut costly = bonded.clone();
        costly.nodes[0].host.forward_ns = 150_000;
        let mut costly_readdressed = costly.clone();
        costly_readdressed.nodes[0].own_ipv4 = vec![[10, 111, 1, 1].into()];
        // A node's host cost is part of the wires: neither carries the other.
        assert!(!bonded.carries(&costly) && !costly.carries(&bonded));
        assert!(!costly.carries(&costly_readdressed));

        let mut other_port = bonded.clone();
        other_port.nodes[0].ports.pop();
        assert!(!bonded.carries(&other_port));
    }

    #[test]
    fn mesh_members() {
        let w = mesh(true);
        assert_eq!(w.nodes.len(), 16);
        let row1 = w.segment_ids().next().unwrap();
        let names: Vec<_> = w
            .members(row1)
            .iter()
            .map(|(n, p)| (n.name.as_str(), p.interface.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("n01", "eth1"),
                ("n02", "eth1"),
                ("n03", "eth1"),
                ("n04", "eth1")
            ]
        );
        assert_eq!(w.switches[1].segments.len(), 4);
    }

    fn study(file: &str) -> Wiring {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies")
            .join(file);
        let t = crate::topology::load(&path).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        Wiring::from_topology(&t).unwrap()
    }

    #[test]
    fn the_study_topologies_become_wirings() {
        let sw = study("switched-mesh-4x4.toml");
        assert_eq!(
            (sw.nodes.len(), sw.segments.len(), sw.switches.len()),
            (16, 8, 2)
        );
        assert!(sw.switches.iter().all(|s| s.segments.len() == 4));
        assert!(
            sw.segments
                .iter()
                .all(|s| s.rate_bps == 10_000_000 && s.medium == Medium::Shared)
        );
        let routed = study("routed-mesh-4x4.toml");
        assert_eq!((routed.segments.len(), routed.switches.len()), (8, 0));
        assert!(routed.nodes.iter().all(|n| n.ports.len() == 2));
        let dual = study("bonded-dual-net.toml");
        assert_eq!(dual.segments.len(), 2);
        for id in dual.segment_ids() {
            assert_eq!(dual.members(id).len(), 16);
        }
    }

    #[test]
    fn wrong_wirings_are_refused_with_the_reason() {
        let e = |b: WiringBuilder| b.build().unwrap_err().to_string();
        let base = || Wiring::builder("t").segment("a", 10_000_000, Medium::Shared);
        assert!(
            e(base().node("n1", [("eth1", "b")])).contains("segment \"b\", which is not defined")
        );
        assert!(
            e(base().node("n1", [("eth1", "a"), ("eth2", "a")]))
                .contains("two interfaces on segment")
        );
        assert!(e(base().node("n1", [("mgmt0", "a")])).contains("reserved"));
        assert!(e(base().node("n1", [("eth1;rm", "a")])).contains("interface name"));
        assert!(
            e(base()
                .node("n1", [("eth1", "a")])
                .node("n1", [("eth2", "a")]))
            .contains("twice")
        );
        assert!(
            e(base().node("n1", [("eth1", "a")]).switch("s", ["a"])).contains("fewer than two")
        );
        assert!(e(Wiring::builder("t")).contains("no nodes"));
    }
}
