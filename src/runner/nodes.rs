//! Where a configuration's nodes come from: an inventory of real machines, or the virtual
//! cluster brought up for the topology. Either way the rest of the runner gets an inventory
//! file and nothing else.

use std::path::{Path, PathBuf};

use crate::plan::experiment::Cluster as ClusterSpec;
use crate::topology::Topology;
use crate::vcluster as vc;

/// Nodes obtained for one configuration, and what to give back afterwards.
pub struct Nodes {
    pub inventory: PathBuf,
    cluster: Option<vc::ClusterName>,
}

pub struct Provider {
    pub spec: ClusterSpec,
    /// Root of the virtual clusters' directories.
    pub state_dir: PathBuf,
    /// Leave virtual clusters up at the end.
    pub keep: bool,
}

impl Provider {
    /// Nodes for `t`: the inventory file as it is, or a virtual cluster with `t`'s wires
    /// (reused when one of that name is already up with the same wiring).
    pub async fn obtain(&self, t: &Topology, source: &Path) -> anyhow::Result<Nodes> {
        match &self.spec {
            ClusterSpec::Inventory { path } => Ok(Nodes {
                inventory: path.clone(),
                cluster: None,
            }),
            ClusterSpec::Docker => {
                let wiring = vc::Wiring::from_topology(t)?;
                let name = vc::ClusterName::from_label(t.name.as_str())?;
                let opts = vc::UpOptions {
                    name: name.clone(),
                    state_dir: self.state_dir.clone(),
                    image: vc::ImageOptions::default(),
                    source: source.display().to_string(),
                    keep_on_failure: false,
                };
                tracing::info!("bringing up virtual cluster {name} for {}", t.name);
                let report = tokio::task::spawn_blocking(move || vc::up(&wiring, &opts)).await??;
                tracing::info!(
                    "virtual cluster {name} up in {:.1} s",
                    report.elapsed.as_secs_f64()
                );
                Ok(Nodes {
                    inventory: report.dir.inventory(),
                    cluster: Some(name),
                })
            }
        }
    }

    /// Gives the nodes back: takes a virtual cluster down unless asked to keep it.
    pub async fn release(&self, nodes: Nodes) -> anyhow::Result<()> {
        if let Some(name) = nodes.cluster
            && !self.keep
        {
            let state = self.state_dir.clone();
            tokio::task::spawn_blocking(move || vc::down(&name, &state)).await??;
        }
        Ok(())
    }
}
