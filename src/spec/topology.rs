//! The topology spec: the TOML a person writes to describe nodes and the wires between them,
//! either explicitly or through a generator. Only its shape lives here; meaning (names that
//! must exist, addresses that must not overlap) is checked when it is resolved into a
//! [`crate::topology::Topology`].

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::host::HostSpec;
use super::names::{IfName, Name, NodeName, Rate};

/// A topology file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// The topology's name; defaults to the file name without `.toml`.
    #[schemars(with = "Option<Name>")]
    pub name: Option<Spanned<Name>>,
    pub description: Option<String>,
    /// How subnets are numbered.
    #[serde(default)]
    pub addressing: AddressingSpec,
    /// How routes are found: computed by the tool, or only the `[[route]]` tables given.
    #[serde(default)]
    pub routing: RoutingMode,
    /// Build the nodes and wires from a pattern instead of listing them.
    #[schemars(with = "Option<GeneratorSpec>")]
    pub generator: Option<Spanned<GeneratorSpec>>,
    /// Host costs of every node (default `none`); `[generator]` and node entries may say
    /// otherwise. See [`super::host`] for the profiles and where their figures come from.
    #[schemars(with = "Option<HostSpec>")]
    pub host: Option<Spanned<HostSpec>>,
    /// How every segment is emulated (default `frames`); `[generator]` and `[[segment]]` may
    /// say otherwise.
    pub emulation: Option<Emulation>,
    /// Node names, or tables `{ name = "n[01-04]", host = "486dx4" }`; Slurm-style ranges such
    /// as `n[01-16]` are expanded.
    #[serde(default)]
    #[schemars(with = "Vec<NodeEntry>")]
    pub nodes: Vec<Spanned<NodeEntry>>,
    #[serde(default)]
    pub segment: Vec<SegmentSpec>,
    #[serde(default)]
    pub switch: Vec<SwitchSpec>,
    #[serde(default)]
    pub bond: Vec<BondSpec>,
    #[serde(default)]
    pub route: Vec<RouteSpec>,
    #[serde(default)]
    pub address: Vec<AddressSpec>,
}

/// Subnets are carved, in order, out of `base` with `prefix` bits each.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddressingSpec {
    #[serde(default = "default_base")]
    #[schemars(with = "String")]
    pub base: Spanned<Ipv4Net>,
    #[serde(default = "default_prefix")]
    #[schemars(with = "u8")]
    pub prefix: Spanned<u8>,
}

impl Default for AddressingSpec {
    fn default() -> Self {
        AddressingSpec {
            base: default_base(),
            prefix: default_prefix(),
        }
    }
}

/// The default base is a /16 that neither docker's default pools (172.17.0.0/16 onwards,
/// 192.168.0.0/16) nor common LAN plans use.
fn default_base() -> Spanned<Ipv4Net> {
    Spanned::new(0..0, "10.111.0.0/16".parse().expect("valid"))
}

fn default_prefix() -> Spanned<u8> {
    Spanned::new(0..0, 24)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoutingMode {
    /// Compute static routes through forwarding nodes when given no `[[route]]`; check the
    /// given ones otherwise.
    #[default]
    Auto,
    /// Always compute routes.
    Computed,
    /// Use only the `[[route]]` tables.
    Explicit,
}

/// One wire: a bus or hub (`shared`) or a switch's ports (`switched`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentSpec {
    #[schemars(with = "Name")]
    pub name: Spanned<Name>,
    #[schemars(with = "Rate")]
    pub rate: Spanned<Rate>,
    #[serde(default)]
    pub medium: Medium,
    /// How the virtual cluster emulates the wire; the topology's `emulation` when absent.
    pub emulation: Option<Emulation>,
    /// Attached interfaces as `node:interface`; ranges expand: `n[01-04]:eth1`.
    #[schemars(with = "Vec<String>")]
    pub members: Vec<Spanned<String>>,
}

// The medium emulator's type: what a topology says a segment is, the emulator emulates.
pub use orchestrate_medium::config::Medium;

/// How the virtual cluster emulates a segment's wire.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Emulation {
    /// Frame by frame (the medium emulator): serialization and framing on every frame,
    /// CSMA/CD on a shared segment, store and forward at a switch, host costs. Faithful.
    #[default]
    Frames,
    /// A token bucket (tbf) per segment: limits the rate only; a lone frame passes at once and
    /// frames never collide. Fast and approximate.
    Rate,
}

impl Emulation {
    pub fn as_str(self) -> &'static str {
        match self {
            Emulation::Frames => "frames",
            Emulation::Rate => "rate",
        }
    }
}

impl std::fmt::Display for Emulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An entry of `nodes`: a name or range, or a table giving those nodes host costs.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum NodeEntry {
    Names(String),
    Table(NodeTable),
}

/// `{ name = "n[01-04]", host = "486dx4" }`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeTable {
    /// A node name or range.
    pub name: String,
    /// These nodes' host costs, instead of the topology's.
    pub host: Option<HostSpec>,
}

impl NodeEntry {
    /// The names or range as written.
    pub fn names(&self) -> &str {
        match self {
            NodeEntry::Names(s) => s,
            NodeEntry::Table(t) => &t.name,
        }
    }

    pub fn host(&self) -> Option<HostSpec> {
        match self {
            NodeEntry::Names(_) => None,
            NodeEntry::Table(t) => t.host,
        }
    }
}

/// A string is names, a table names with settings; serde's own messages are kept for the
/// table's keys (unknown field, did you mean).
impl<'de> Deserialize<'de> for NodeEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NodeEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a node name or range such as \"n[01-16]\", or a table \
                     { name = \"n[01-04]\", host = \"486dx4\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NodeEntry, E> {
                Ok(NodeEntry::Names(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<NodeEntry, A::Error> {
                NodeTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(NodeEntry::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// A switch joining several segments into one network (one broadcast domain, one subnet).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    #[schemars(with = "Name")]
    pub name: Spanned<Name>,
    #[schemars(with = "Vec<Name>")]
    pub segments: Vec<Spanned<Name>>,
}

/// Channel bonding of several interfaces into one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BondSpec {
    #[schemars(with = "IfName")]
    pub name: Spanned<IfName>,
    /// The nodes that get this bond; all nodes when absent. Ranges expand.
    #[schemars(with = "Option<Vec<String>>")]
    pub nodes: Option<Vec<Spanned<String>>>,
    #[schemars(with = "BondMode")]
    pub mode: Spanned<BondMode>,
    #[schemars(with = "Vec<IfName>")]
    pub slaves: Vec<Spanned<IfName>>,
    #[serde(default)]
    pub driver: DriverChoice,
    /// Link monitoring interval in milliseconds (bonding driver option `miimon`).
    pub miimon: Option<u32>,
    #[schemars(with = "Option<XmitHashPolicy>")]
    pub xmit_hash_policy: Option<Spanned<XmitHashPolicy>>,
    /// The preferred slave for `active-backup`.
    #[schemars(with = "Option<IfName>")]
    pub primary: Option<Spanned<IfName>>,
}

// The worker's types: the names a topology writes are the ones the bond (kernel or
// userspace) is given.
pub use orchestrate_worker::bond::mode::{BondMode, XmitHashPolicy};

/// Which implementation carries a bond on a node.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BondDriver {
    /// The kernel's bonding driver.
    Kernel,
    /// The worker's TUN stand-in, used where the kernel has no bonding driver.
    Userspace,
}

impl BondDriver {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Userspace => "userspace",
        }
    }
}

/// The driver a bond asks for: `auto`, or one by name.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriverChoice {
    /// The kernel driver where the node has it, the worker's userspace bond otherwise; the
    /// runner settles it from the node's probe.
    #[default]
    Auto,
    #[serde(untagged)]
    Named(BondDriver),
}

impl DriverChoice {
    /// The driver named, once settled; `None` for `auto`.
    pub fn named(self) -> Option<BondDriver> {
        match self {
            Self::Auto => None,
            Self::Named(d) => Some(d),
        }
    }
}

// By hand rather than derived: serde's untagged variant would answer a misspelt driver with
// "did not match any variant" instead of listing the three names.
impl<'de> Deserialize<'de> for DriverChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const NAMES: &[&str] = &["auto", "kernel", "userspace"];
        match String::deserialize(d)?.as_str() {
            "auto" => Ok(Self::Auto),
            "kernel" => Ok(Self::Named(BondDriver::Kernel)),
            "userspace" => Ok(Self::Named(BondDriver::Userspace)),
            other => Err(serde::de::Error::unknown_variant(other, NAMES)),
        }
    }
}

/// A static route on one node.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    #[schemars(with = "NodeName")]
    pub node: Spanned<NodeName>,
    /// Destination prefix.
    #[schemars(with = "String")]
    pub to: Spanned<Ipv4Net>,
    /// Next hop: an address on a network the node is attached to.
    #[schemars(with = "String")]
    pub via: Spanned<Ipv4Addr>,
}

/// An address given by hand instead of the computed one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddressSpec {
    #[schemars(with = "NodeName")]
    pub node: Spanned<NodeName>,
    /// A physical interface that is not a bond slave, or a bond.
    #[schemars(with = "IfName")]
    pub interface: Spanned<IfName>,
    /// Address with prefix length, e.g. `192.0.2.5/24`.
    #[schemars(with = "String")]
    pub address: Spanned<Ipv4Net>,
}

/// Nodes and wires built from a pattern. Which fields apply depends on `kind`. Counts are
/// capped (see `spec::limits`): at most 4096 nodes in all, 16 buses.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    pub kind: GeneratorKind,
    /// grid: rows of the mesh.
    #[schemars(with = "Option<u32>")]
    pub rows: Option<Spanned<u32>>,
    /// grid: columns of the mesh.
    #[schemars(with = "Option<u32>")]
    pub cols: Option<Spanned<u32>>,
    /// grid: `routed` (nodes forward between buses) or `switched` (a switch joins all row
    /// buses, another all column buses).
    #[schemars(with = "Option<Interconnect>")]
    pub interconnect: Option<Spanned<Interconnect>>,
    /// bus, single: how many nodes.
    #[serde(rename = "nodes")]
    #[schemars(with = "Option<u32>")]
    pub node_count: Option<Spanned<u32>>,
    /// bus: how many parallel buses span all nodes (default 2).
    #[schemars(with = "Option<u32>")]
    pub buses: Option<Spanned<u32>>,
    /// Rate of every segment (default 10mbit).
    #[schemars(with = "Option<Rate>")]
    pub rate: Option<Spanned<Rate>>,
    /// Medium of every segment (default shared).
    pub medium: Option<Medium>,
    /// How every segment is emulated (default: the topology's `emulation`, else `frames`).
    pub emulation: Option<Emulation>,
    /// Host costs of every node (default: the topology's `host`, else `none`).
    #[schemars(with = "Option<HostSpec>")]
    pub host: Option<HostSpec>,
    /// Node name prefix (default "n"); names are zero-padded: n01..n16.
    #[schemars(with = "Option<NodeName>")]
    pub prefix: Option<NodeName>,
    /// Bond every node's interfaces (bus: over all buses; grid: row and column).
    #[schemars(with = "Option<BondTemplate>")]
    pub bond: Option<Spanned<BondTemplate>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GeneratorKind {
    Grid,
    Bus,
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Interconnect {
    Routed,
    Switched,
}

/// The bond a generator gives every node.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BondTemplate {
    #[schemars(with = "Option<IfName>")]
    pub name: Option<IfName>,
    pub mode: BondMode,
    pub miimon: Option<u32>,
    pub xmit_hash_policy: Option<XmitHashPolicy>,
    #[serde(default)]
    pub driver: DriverChoice,
}
