//! `manifest.json`: what was run, with what, where. Every key is optional when reading, so
//! that manifests from older or partial runs still load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::schema::BondDriver;
use crate::spec::experiment::Statistic;

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
    /// The Slurm allocations the run's nodes came from, one per attempt (a resumed run may
    /// run in another allocation); empty unless `[cluster] kind = "slurm"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slurm_jobs: Vec<SlurmJob>,
    /// Per topology, what its nodes ran on where the node source knows (VM nodes: KVM or
    /// TCG, the guest kernel).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub platforms: BTreeMap<String, String>,
}

/// A Slurm allocation as `salloc` or `sbatch` described it to the run, so that a reader can
/// find the job in the cluster's accounting.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_JOB_NODELIST`, as Slurm wrote it (`cn[003-018]`).
    pub nodelist: String,
    /// `SLURM_CLUSTER_NAME`, where Slurm set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// `SLURM_JOB_PARTITION`, where Slurm set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}
