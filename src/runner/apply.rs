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
/// `ORCHESTRATE_WORKER`, set by a line put before each. Returns each node's ledger as its
/// script printed it at the end (the run's copy).
pub async fn apply(
    cluster: &Sessions,
    prepared: &Prepared,
    topology: &str,
) -> anyhow::Result<BTreeMap<NodeName, Vec<String>>> {
    let applies: BTreeMap<NodeName, String> = prepared
        .scripts
        .iter()
        .map(|(n, s)| {
            let worker = shlex::try_quote(prepared.workers[n].path()).expect("no NUL in paths");
            let line = format!("ORCHESTRATE_WORKER={worker}; export ORCHESTRATE_WORKER\n");
            (n.clone(), line + &s.apply)
        })
        .collect();
    let (outputs, errors) = run_scripts(cluster, &applies, NODE_LEDGER).await;
    if !errors.is_empty() {
        bail!("configuring {topology} failed:\n  {}", listed(&errors));
    }
    Ok(outputs
        .into_iter()
        .map(|(node, out)| (node, ledger_copy(&out)))
        .collect())
}

/// The ledger lines an apply script printed (see [`netconf::LEDGER_COPY_PREFIX`]).
fn ledger_copy(apply_output: &str) -> Vec<String> {
    apply_output
        .lines()
        .filter_map(|l| l.strip_prefix(netconf::LEDGER_COPY_PREFIX))
        .map(str::to_owned)
        .collect()
}
