//! Where the nodes of a configuration come from. The runner asks a [`NodeSource`] for nodes
//! with a topology's wires and gets an inventory back; whether they are machines in a rack, a
//! virtual cluster brought up for the occasion or a Slurm allocation ([`super::slurm`]) is the
//! source's business alone.

use std::path::PathBuf;

use futures_util::future::BoxFuture;

use crate::topology::Topology;

/// Nodes for one configuration, and what to give back afterwards.
#[derive(Debug, Clone)]
pub struct Nodes {
    /// The inventory to reach them through.
    pub inventory: PathBuf,
    /// What the nodes vanish with, when they do (a virtual cluster's name): recorded in the
    /// run's ledger, so a later teardown knows that once it is gone, so are the run's changes.
    pub owner: Option<String>,
    /// The link emulator's files, where the wires are emulated.
    pub medium: Option<MediumFiles>,
    /// Whether obtaining them created them, so that releasing them takes them away.
    pub created: bool,
    /// What the nodes run on, where the source knows better than the nodes can tell (VM
    /// nodes: QEMU with KVM or TCG, the guest kernel, memory): recorded in the manifest.
    pub platform: Option<String>,
}

impl Nodes {
    /// Machines that were there before the run and stay after it, reached through `inventory`.
    pub fn existing(inventory: PathBuf) -> Nodes {
        Nodes {
            inventory,
            owner: None,
            medium: None,
            created: false,
            platform: None,
        }
    }
}

/// Where the emulator of a configuration's wires can be asked for statistics.
#[derive(Debug, Clone)]
pub struct MediumFiles {
    /// Its control socket (it exists only while the emulator runs).
    pub socket: PathBuf,
    /// Its configuration as it runs, for the run's manifest.
    pub config: PathBuf,
}

/// A provider of nodes.
pub trait NodeSource: Send + Sync {
    /// Nodes wired as `t` says.
    fn obtain<'a>(&'a self, t: &'a Topology) -> BoxFuture<'a, anyhow::Result<Nodes>>;

    /// Gives `nodes` back (e.g. takes down what [`obtain`](Self::obtain) brought up). Machines
    /// that outlive the run need nothing.
    fn release(&self, _nodes: Nodes) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async { Ok(()) })
    }

    /// Whether nodes recorded under `owner` (see [`Nodes::owner`]) still exist. Machines that
    /// outlive the run always do, and so does what a run left configured on them.
    fn still_exists(&self, _owner: &str) -> anyhow::Result<bool> {
        Ok(true)
    }
}

/// The machines of an inventory file: there before the run, there after it.
pub struct InventoryFile {
    pub path: PathBuf,
}

impl NodeSource for InventoryFile {
    fn obtain<'a>(&'a self, _: &'a Topology) -> BoxFuture<'a, anyhow::Result<Nodes>> {
        Box::pin(async move { Ok(Nodes::existing(self.path.clone())) })
    }
}
