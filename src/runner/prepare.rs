//! Preparing a configuration's nodes before anything on them changes: install the worker where
//! a node lacks this build, in a directory checked on the node
//! ([`worker_install`](super::node::worker_install)), probe every node, take the kernel's bonding
//! driver where the probe found it (`driver = "auto"`), and render each node's scripts for
//! what the node turned out to be.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use orchestrate_worker::invocation::Invocation;

use crate::netconf::{self, NodeScripts};
use crate::plan::Configuration;
use crate::remote::Sessions;
use crate::results::BondDriver;
use crate::spec::NodeName;
use crate::topology::Node;

use super::node::fanout::{EXEC_TIMEOUT, listed, on_all};
use super::node::worker_binary::WorkerBuild;
use super::node::worker_install::{self, InstalledWorker, NODE_PARENT, OnNode};

/// The worker's probe of each node, as JSON.
pub type Probes = BTreeMap<NodeName, serde_json::Value>;

/// A configuration fitted to its nodes.
pub struct Prepared {
    /// The worker on each node, checked there before it ran.
    pub workers: BTreeMap<NodeName, InstalledWorker>,
    pub probes: Probes,
    /// Which driver carries the configuration's bonds; `None` when it has none.
    pub bond_driver: Option<BondDriver>,
    pub scripts: BTreeMap<NodeName, NodeScripts>,
}

/// Installs and probes on every node, then settles drivers and renders scripts. Fails, having
/// changed nothing but the installed worker, when any node cannot be prepared.
pub async fn prepare(
    cluster: &Sessions,
    config: &Configuration,
    worker: &WorkerBuild,
) -> anyhow::Result<Prepared> {
    let names: Vec<NodeName> = config
        .topology
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    let (prepared, errors) = on_all(&names, |n| install_and_probe(cluster, n, worker)).await;
    if !errors.is_empty() {
        bail!(
            "preparing the nodes failed, nothing was changed:\n  {}",
            listed(&errors)
        );
    }
    let (workers, probes) = prepared
        .into_iter()
        .map(|(n, (w, p))| ((n.clone(), w), (n, p)))
        .unzip();
    let settled = settle_drivers(config, &probes);
    let bond_driver = settled
        .iter()
        .flat_map(|n| n.bonds.iter())
        .next()
        // Settled bonds name their driver; an `auto` left over renders the kernel's.
        .map(|b| b.driver.named().unwrap_or(BondDriver::Kernel));
    let scripts = settled
        .iter()
        .map(|n| (n.name.clone(), netconf::render(&config.topology, n)))
        .collect();
    Ok(Prepared {
        workers,
        probes,
        bond_driver,
        scripts,
    })
}

async fn install_and_probe(
    cluster: &Sessions,
    n: NodeName,
    worker: &WorkerBuild,
) -> anyhow::Result<(InstalledWorker, serde_json::Value)> {
    let on_node = OnNode { cluster, node: &n };
    let installed = worker_install::install(&on_node, worker, NODE_PARENT).await?;
    let probe = installed.command(&Invocation::Probe);
    let out = cluster.run(&n, &probe, None, EXEC_TIMEOUT).await?;
    let probe = serde_json::from_str(&out.stdout)
        .with_context(|| format!("{n}: the probe's output is not JSON"))?;
    Ok((installed, probe))
}

/// The configuration's nodes with `driver = "auto"` bonds given the kernel driver where the
/// node's probe found it, the userspace bond elsewhere.
fn settle_drivers(config: &Configuration, probes: &Probes) -> Vec<Node> {
    config
        .topology
        .nodes
        .iter()
        .map(|n| {
            let has = probes
                .get(&n.name)
                .and_then(|p| p["bonding"]["present"].as_bool())
                .unwrap_or(false);
            netconf::settle_bond_drivers(n, has)
        })
        .collect()
}
