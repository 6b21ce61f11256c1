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
    /// The virtual cluster the nodes belong to, if any.
    pub cluster: Option<vc::ClusterName>,
    /// The medium emulator's control socket, for per-segment statistics: the virtual
    /// cluster's (it exists only while an emulator runs); `None` for real machines.
    pub medium_socket: Option<PathBuf>,
    /// The medium emulator's configuration file, for the run's manifest.
    pub medium_config: Option<PathBuf>,
    /// Whether this run brought the cluster up (and so takes it down).
    created: bool,
}

pub struct Provider {
    pub spec: ClusterSpec,
    /// Root of the virtual clusters' directories.
    pub state_dir: PathBuf,
    /// Leave virtual clusters up at the end.
    pub keep: bool,
}

impl Provider {
    /// Nodes for `t`: the inventory file as it is, or a virtual cluster with `t`'s wires —
    /// the one already up under the topology's name if every member runs, else a new one.
    pub async fn obtain(&self, t: &Topology, source: &Path) -> anyhow::Result<Nodes> {
        match &self.spec {
            ClusterSpec::Inventory { path } => Ok(Nodes {
                inventory: path.clone(),
                cluster: None,
                medium_socket: None,
                medium_config: None,
                created: false,
            }),
            ClusterSpec::Docker => {
                let wiring = vc::Wiring::from_topology(t)?;
                let name = vc::ClusterName::from_label(t.name.as_str())?;
                if vc::list_clusters()?.iter().any(|c| c == name.as_str()) {
                    // Up already (`cluster up` by hand, or an earlier --keep-cluster): use it
                    // as it is and leave it up afterwards.
                    let status = vc::status(&name, &self.state_dir)?;
                    let stopped: Vec<String> = status
                        .members
                        .iter()
                        .filter(|m| m.state != "running")
                        .map(|m| format!("{} ({})", m.name, m.state))
                        .collect();
                    // A cluster built with other wires (another emulation or host profile, say)
                    // would measure something else than the plan says.
                    if status.wiring.as_ref().is_some_and(|w| *w != wiring) {
                        anyhow::bail!(
                            "virtual cluster {name} is up with other wires than {} asks for                              (emulation, host costs or members differ); take it down                              (`orchestrate cluster down --name {name} --state-dir {}`) so the run                              can bring it up as planned",
                            t.name,
                            self.state_dir.display()
                        );
                    }
                    if !stopped.is_empty() {
                        anyhow::bail!(
                            "virtual cluster {name} exists but {} not running; take it down \
                             (`orchestrate cluster down --name {name} --state-dir {}`) so the run \
                             can bring it up afresh",
                            stopped.join(", "),
                            self.state_dir.display()
                        );
                    }
                    tracing::info!("using virtual cluster {name}, which is already up");
                    let dir = vc::ClusterDir::new(&self.state_dir, &name);
                    return Ok(Nodes {
                        inventory: dir.inventory(),
                        medium_socket: Some(dir.medium_socket()),
                        medium_config: Some(dir.medium_config()),
                        cluster: Some(name),
                        created: false,
                    });
                }
                let opts = vc::UpOptions {
                    name: name.clone(),
                    state_dir: self.state_dir.clone(),
                    image: vc::ImageOptions::default(),
                    source: source.display().to_string(),
                    keep_on_failure: false,
                    medium_seed: vc::DEFAULT_MEDIUM_SEED,
                };
                tracing::info!("bringing up virtual cluster {name} for {}", t.name);
                let report = tokio::task::spawn_blocking(move || vc::up(&wiring, &opts)).await??;
                tracing::info!(
                    "virtual cluster {name} up in {:.1} s",
                    report.elapsed.as_secs_f64()
                );
                Ok(Nodes {
                    inventory: report.dir.inventory(),
                    medium_socket: Some(report.dir.medium_socket()),
                    medium_config: Some(report.dir.medium_config()),
                    cluster: Some(name),
                    created: true,
                })
            }
        }
    }

    /// Gives the nodes back: takes down a virtual cluster this run brought up, unless asked
    /// to keep it.
    pub async fn release(&self, nodes: Nodes) -> anyhow::Result<()> {
        if let Some(name) = nodes.cluster
            && nodes.created
            && !self.keep
        {
            let state = self.state_dir.clone();
            tokio::task::spawn_blocking(move || vc::down(&name, &state)).await??;
        }
        Ok(())
    }
}
