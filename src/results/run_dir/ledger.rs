//! The controller's ledger in a run directory (`ledger.json`): which nodes may still hold a
//! configuration, written by the run and read back by `orchestrate teardown` and `--resume`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::spec::NodeName;

use super::layout::RunDir;

/// The controller's ledger: which nodes have a configuration applied and not yet torn down.
/// Written before anything is applied and removed once teardown succeeded everywhere, so
/// `orchestrate teardown <run-dir>` can finish what a crashed controller left.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ledger {
    pub configuration: usize,
    pub topology: String,
    /// The inventory the nodes were reached through.
    pub inventory: PathBuf,
    /// Where the node-side ledger lives on each node.
    pub node_ledger: String,
    /// Nodes that may still hold changes.
    pub nodes: Vec<NodeName>,
    /// What the nodes vanish with, if they do (see [`crate::remote::Nodes::owner`]): when it
    /// is gone, so are the changes. Ledgers of earlier versions call it `virtual_cluster`.
    #[serde(default, alias = "virtual_cluster")]
    pub owner: Option<String>,
    /// The run's copy of each node's own ledger, as its apply script printed it when done:
    /// what teardown undoes (change by change, only where it is still as the run made it)
    /// on a node whose ledger was lost. A node applied without a change has an empty copy; a
    /// node not here had not finished applying.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub copies: BTreeMap<NodeName, Vec<String>>,
}

/// The run's ledger; `None` when it has none (nothing applied yet, or all torn down).
pub fn read_ledger(run: &RunDir) -> anyhow::Result<Option<Ledger>> {
    match std::fs::read_to_string(run.ledger_json()) {
        Ok(t) => Ok(Some(serde_json::from_str(&t)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}
