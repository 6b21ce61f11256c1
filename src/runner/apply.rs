//! Applying a configuration: the ledger first, so a crash at any later moment leaves a record
//! of what to undo, then every node's apply script at once.

use std::collections::BTreeMap;

use anyhow::bail;

use crate::netconf;
use crate::remote::Sessions;
use crate::spec::NodeName;

use super::node::fanout::{listed, run_scripts};
use super::prepare::Prepared;

/// Where scripts keep their ledger on the nodes.
pub const NODE_LEDGER: &str = netconf::DEFAULT_LEDGER;

/// Runs every node's apply script; the scripts find the node's worker through
/// `ORCHESTRATE_WORKER`, set by a line put before each.
pub async fn apply(cluster: &Sessions, prepared: &Prepared, topology: &str) -> anyhow::Result<()> {
    let applies: BTreeMap<NodeName, String> = prepared
        .scripts
        .iter()
        .map(|(n, s)| {
            let worker = shlex::try_quote(prepared.workers[n].path()).expect("no NUL in paths");
            let line = format!("ORCHESTRATE_WORKER={worker}; export ORCHESTRATE_WORKER\n");
            (n.clone(), line + &s.apply)
        })
        .collect();
    let (_, errors) = run_scripts(cluster, &applies, NODE_LEDGER).await;
    if !errors.is_empty() {
        bail!("configuring {topology} failed:\n  {}", listed(&errors));
    }
    Ok(())
}
