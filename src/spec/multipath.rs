//! How a node with several interfaces onto the same nodes uses them, as an experiment sweeps
//! it on topologies with bonds: channel bonding below IP (the 1996 study's answer), Multipath
//! TCP above it (today's), or neither; and how a routed topology uses several equally short
//! paths: one per destination (the study's static routes) or all of them (ECMP).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::names::InvalidValue;
use super::topology::BondMode;

/// One multipath mode, spelled `"bond:<mode>"`, `"mptcp"` or `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeMultipath {
    /// The topology's bonds, in this bonding mode.
    Bond(BondMode),
    /// No bonds: each of the bond's interfaces holds its own address on its own subnet, and
    /// TCP is Multipath TCP, one subflow per interface.
    Mptcp,
    /// No bonds, plain TCP: the same addresses as `Mptcp`, so a connection uses one interface.
    None,
}

impl NodeMultipath {
    /// Whether the configuration keeps the topology's bonds.
    pub fn bond_mode(self) -> Option<BondMode> {
        match self {
            NodeMultipath::Bond(m) => Some(m),
            NodeMultipath::Mptcp | NodeMultipath::None => None,
        }
    }

    /// The configuration's label in plans, records and reports: the bonding mode's own name
    /// for a bond (as before multipath modes existed, so earlier runs read alike), else
    /// `mptcp` or `none`.
    pub fn label(self) -> String {
        match self {
            NodeMultipath::Bond(m) => m.as_str().to_owned(),
            NodeMultipath::Mptcp => "mptcp".to_owned(),
            NodeMultipath::None => "none".to_owned(),
        }
    }
}

impl FromStr for NodeMultipath {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, InvalidValue> {
        match s {
            "mptcp" => Ok(NodeMultipath::Mptcp),
            "none" => Ok(NodeMultipath::None),
            _ => match s.strip_prefix("bond:") {
                Some(mode) => mode.parse().map(NodeMultipath::Bond).map_err(InvalidValue),
                None => Err(InvalidValue(format!(
                    "unknown multipath mode {s:?}; expected \"bond:<bonding mode>\" (e.g. \
                     \"bond:balance-rr\"), \"mptcp\" or \"none\""
                ))),
            },
        }
    }
}

impl fmt::Display for NodeMultipath {
    /// The spelling the spec takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeMultipath::Bond(m) => write!(f, "bond:{m}"),
            NodeMultipath::Mptcp => f.write_str("mptcp"),
            NodeMultipath::None => f.write_str("none"),
        }
    }
}

impl Serialize for NodeMultipath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodeMultipath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for NodeMultipath {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NodeMultipath".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(bond:.+|mptcp|none)$",
            "description": "\"bond:<bonding mode>\", \"mptcp\" or \"none\".",
        })
    }
}

/// How a routed topology's computed routes use the paths between two nodes, one
/// configuration each (`[multipath] routing = ["shortest", "ecmp"]`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Routing {
    /// One route per destination subnet, through the least-loaded of the next hops one step
    /// closer (the study's tables).
    #[default]
    Shortest,
    /// Equal-cost multipath: every node also gets an address of its own on `lo`, and a route
    /// to every other node's such address over every next hop one step closer; the kernel
    /// picks one per flow by its multipath hash.
    Ecmp,
}

impl Routing {
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::Shortest => "shortest",
            Routing::Ecmp => "ecmp",
        }
    }
}

impl fmt::Display for Routing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the kernel hashes to choose among a multipath route's next hops
/// (`net.ipv4.fib_multipath_hash_policy`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MultipathHash {
    /// Source and destination address (policy 0): every flow between two nodes takes one path.
    L3,
    /// Addresses, ports and protocol (policy 1): each connection hashes on its own.
    #[default]
    L4,
}

impl MultipathHash {
    /// The value of `net.ipv4.fib_multipath_hash_policy`.
    pub fn policy(self) -> &'static str {
        match self {
            MultipathHash::L3 => "0",
            MultipathHash::L4 => "1",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MultipathHash::L3 => "l3",
            MultipathHash::L4 => "l4",
        }
    }
}

impl fmt::Display for MultipathHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_reads_back_as_written() {
        for s in ["bond:balance-rr", "bond:active-backup", "mptcp", "none"] {
            let m: NodeMultipath = s.parse().unwrap();
            assert_eq!(m.to_string(), s);
        }
        assert_eq!(
            "bond:0".parse::<NodeMultipath>().unwrap(),
            NodeMultipath::Bond(BondMode::BalanceRr)
        );
    }

    #[test]
    fn labels_keep_the_bonding_modes_own_names() {
        assert_eq!(
            NodeMultipath::Bond(BondMode::BalanceRr).label(),
            "balance-rr"
        );
        assert_eq!(NodeMultipath::Mptcp.label(), "mptcp");
        assert_eq!(NodeMultipath::None.label(), "none");
    }

    #[test]
    fn unknown_modes_say_what_is_expected() {
        for bad in ["balance-rr", "bond:", "bond:fast", "MPTCP", ""] {
            let err = bad.parse::<NodeMultipath>().unwrap_err().to_string();
            assert!(
                err.contains("bond:") || err.contains("bonding mode"),
                "{bad:?}: {err}"
            );
        }
    }
}
