//! The words a workload and a reference share to name traffic: the worker's pattern and
//! protocol, and how a point's pairs are placed. Apart from both, so that neither spec file
//! reaches into the other.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// The worker's types: what a workload asks for is what the records say was measured.
pub use orchestrate_worker::record::{Pattern, Protocol};

/// How the pairs of a point are placed on the topology.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Both ends of every pair share a wire (bus, segment or bond).
    LocalWire,
    /// No pair shares a wire: its traffic crosses at least one forwarding node or switch.
    RemoteWire,
    /// Pairs named one by one in the workload's `explicit_pairs`; for a collective, its
    /// ranks' nodes named in `rank_nodes`.
    Explicit,
    /// A collective's ranks on the topology's nodes in their order: rank r on the r-th node
    /// (on a 4×4 mesh, a 4×4 process grid lies on the node grid).
    RowMajor,
    /// A collective's ranks on the nodes in an order drawn from the experiment's seed.
    Random,
}

impl PlacementKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementKind::LocalWire => "local-wire",
            PlacementKind::RemoteWire => "remote-wire",
            PlacementKind::Explicit => "explicit",
            PlacementKind::RowMajor => "row-major",
            PlacementKind::Random => "random",
        }
    }

    /// Whether this places a collective's ranks rather than pairs.
    pub fn places_ranks(self) -> bool {
        matches!(self, PlacementKind::RowMajor | PlacementKind::Random)
    }
}
