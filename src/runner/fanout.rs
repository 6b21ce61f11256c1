//! Doing one thing on every node at once, and collecting what failed as "node: cause" lines.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::remote::Cluster;
use crate::spec::NodeName;

/// How long one command on a node may take.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// Joins per-node futures; returns the values of those that succeeded and the errors of the
/// others.
pub async fn on_all<F, Fut, T>(nodes: &[NodeName], f: F) -> (BTreeMap<NodeName, T>, Vec<String>)
where
    F: Fn(NodeName) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let results = futures_util::future::join_all(nodes.iter().map(|n| {
        let fut = f(n.clone());
        async move { (n.clone(), fut.await) }
    }))
    .await;
    let mut ok = BTreeMap::new();
    let mut errors = Vec::new();
    for (n, r) in results {
        match r {
            Ok(v) => {
                ok.insert(n, v);
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    (ok, errors)
}

/// Runs each node's script at once on every node: fed to `sh` on stdin, with `env` before the
/// command and the node-side ledger as the script's argument. Returns each successful node's
/// standard output, and "node: cause" for the others.
pub async fn run_scripts(
    cluster: &Cluster,
    scripts: &BTreeMap<NodeName, String>,
    env: &str,
    ledger: &str,
) -> (BTreeMap<NodeName, String>, Vec<String>) {
    let nodes: Vec<NodeName> = scripts.keys().cloned().collect();
    let command = format!("{env} sh -s -- {ledger}").trim_start().to_owned();
    on_all(&nodes, |n| {
        let command = &command;
        async move {
            let out = cluster
                .run(&n, command, Some(scripts[&n].as_bytes()), EXEC_TIMEOUT)
                .await?;
            Ok(out.stdout)
        }
    })
    .await
}

/// Joins `lines` for an error message, one indented line each.
pub fn listed(lines: &[String]) -> String {
    lines.join("\n  ")
}
