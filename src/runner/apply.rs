//! Applying a configuration: the ledger first, so a crash at any later moment leaves a record
//! of what to undo, then every node's apply script at once.

use std::collections::BTreeMap;

use anyhow::bail;

use crate::netconf;
use crate::remote::Cluster;
use crate::spec::NodeName;

use super::fanout::{listed, run_scripts};
use super::prepare::Prepared;
use super::worker_binary::WorkerBuild;

/// Where scripts keep their ledger on the nodes.
pub const NODE_LEDGER: &str = netconf::DEFAULT_LEDGER;

/// Runs every node's apply script; the scripts find the worker through `ORCHESTRATE_WORKER`.
pub async fn apply(
    cluster: &Cluster,
    prepared: &Prepared,
    worker: &WorkerBuild,
    topology: &str,
) -> anyhow::Result<()> {
    let env = format!("ORCHESTRATE_WORKER={}", worker.node_path);
    let applies: BTreeMap<NodeName, String> = prepared
        .scripts
        .iter()
        .map(|(n, s)| (n.clone(), s.apply.clone()))
        .collect();
    let (_, errors) = run_scripts(cluster, &applies, &env, NODE_LEDGER).await;
    if !errors.is_empty() {
        bail!("configuring {topology} failed:\n  {}", listed(&errors));
    }
    Ok(())
}
