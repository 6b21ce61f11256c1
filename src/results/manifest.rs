//! `manifest.json`: what was run, with what, where. Every key is optional when reading, so
//! that manifests from older or partial runs still load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::schema::BondDriver;

/// The statistic a run reports as its headline figure.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    /// Best of the repetitions, as the 1996 study reported.
    Best,
    /// Median of the repetitions, with a distribution-free 95% confidence interval.
    #[default]
    Median,
    /// Arithmetic mean of the repetitions.
    Mean,
}

impl Statistic {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Median => "median",
            Self::Mean => "mean",
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct ToolInfo {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub commit: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    #[serde(default)]
    pub tool: Option<ToolInfo>,
    #[serde(default)]
    pub experiment: Option<String>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub statistic: Option<Statistic>,
    /// Topology every other one is compared against.
    #[serde(default)]
    pub baseline: Option<String>,
    #[serde(default)]
    pub started_unix_ns: Option<u64>,
    #[serde(default)]
    pub finished_unix_ns: Option<u64>,
    /// Probe output per node, kept as the probe wrote it.
    #[serde(default)]
    pub nodes: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub topologies: Vec<String>,
    #[serde(default)]
    pub bond_drivers: BTreeMap<String, Option<BondDriver>>,
    /// Per configuration (`<id>-<topology>`), the medium emulator's configuration as it ran:
    /// segments with their collision window, queue and turnaround, ports, nodes' host costs,
    /// seed. Absent for token-bucket wires and real machines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub media: BTreeMap<String, serde_json::Value>,
}
