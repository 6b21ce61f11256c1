//! Reaching a configuration's nodes: the inventory read, one SSH session per node.

use std::path::Path;

use crate::remote::{ConnectOptions, Inventory, Sessions};
use crate::spec::NodeName;

use super::fanout::listed;

/// Reads an inventory and connects to `nodes`; every problem is listed under `what`.
pub async fn connect(inventory: &Path, nodes: &[NodeName], what: &str) -> anyhow::Result<Sessions> {
    let inv = Inventory::load(inventory).map_err(|e| {
        let errors: Vec<String> = e.errors.iter().map(|x| x.to_string()).collect();
        anyhow::anyhow!("{}", listed(&errors))
    })?;
    Sessions::connect(&inv, nodes, &ConnectOptions::default())
        .await
        .map_err(|errs| {
            let errors: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            anyhow::anyhow!("{what}:\n  {}", listed(&errors))
        })
}
