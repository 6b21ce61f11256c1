//! The virtual cluster as a source of nodes: for each topology, a cluster with its wires — the
//! one already up under the topology's name if it matches, else one brought up for the run.

use std::path::PathBuf;

use anyhow::Context;
use futures_util::future::BoxFuture;

use crate::remote::{MediumFiles, NodeSource, Nodes};
use crate::topology::Topology;

use super::by_kind::{down, status, up};
use super::cluster_dir::ClusterDir;
use super::docker::ImageOptions;
use super::names::ClusterName;
use super::state::Kind;
use super::status::list_clusters;
use super::up::{DEFAULT_MEDIUM_SEED, UpOptions};
use super::wires::Wiring;

/// What a VM cluster's nodes run on, from its state file; `None` for other kinds.
fn platform(dir: &ClusterDir) -> Option<String> {
    let vm = super::state::State::load(&dir.state_file()).ok()??.vm?;
    Some(format!(
        "VM nodes: QEMU with {} ({}: {}), Debian kernel {}, {} MiB per guest",
        vm.accel.as_str().to_uppercase(),
        match vm.accel {
            super::vm::guest::Accel::Kvm => "the host's CPU",
            super::vm::guest::Accel::Tcg => "emulated CPU",
        },
        vm.accel_reason,
        vm.kernel,
        vm.memory_mib
    ))
}

/// Virtual clusters under one state directory.
pub struct VirtualClusters {
    /// Root of the clusters' directories.
    pub state_dir: PathBuf,
    /// Leave clusters this run brought up running at the end.
    pub keep: bool,
    /// The experiment file, recorded in each cluster's state as where it came from.
    pub source: PathBuf,
    /// What a cluster brought up for the run is made of (`[cluster] kind`); a cluster
    /// already up is used only if it is of this kind.
    pub kind: Kind,
}

impl VirtualClusters {
    fn nodes(dir: &ClusterDir, name: ClusterName, created: bool) -> Nodes {
        Nodes {
            inventory: dir.inventory(),
            owner: Some(name.to_string()),
            medium: Some(MediumFiles {
                socket: dir.medium_socket(),
                config: dir.medium_config(),
            }),
            created,
            platform: platform(dir),
        }
    }

    /// The cluster `name`, up already (`cluster up` by hand, or an earlier --keep-cluster):
    /// usable as it is only when every member runs and its wires are the planned ones.
    fn reuse(&self, t: &Topology, name: ClusterName, wiring: &Wiring) -> anyhow::Result<Nodes> {
        let status = status(&name, &self.state_dir)?;
        let down_hint = format!(
            "`orchestrate cluster down --name {name} --state-dir {}`",
            self.state_dir.display()
        );
        if status.kind != self.kind {
            anyhow::bail!(
                "virtual cluster {name} is up as a {} cluster, and {} asks for {}; take it down \
                 ({down_hint}) so the run can bring it up as planned",
                status.kind.as_str(),
                t.name,
                self.kind.as_str()
            );
        }
        // A cluster built with other wires (another emulation or host profile, say) would
        // measure something else than the plan says.
        if status.wiring.as_ref().is_some_and(|w| !w.carries(wiring)) {
            anyhow::bail!(
                "virtual cluster {name} is up with other wires than {} asks for (emulation, host \
                 costs or members differ); take it down ({down_hint}) so the run can bring it up \
                 as planned",
                t.name
            );
        }
        let stopped: Vec<String> = status
            .members
            .iter()
            .filter(|m| m.state != "running")
            .map(|m| format!("{} ({})", m.name, m.state))
            .collect();
        if !stopped.is_empty() {
            anyhow::bail!(
                "virtual cluster {name} exists but {} not running; take it down ({down_hint}) so \
                 the run can bring it up afresh",
                stopped.join(", ")
            );
        }
        tracing::info!("using virtual cluster {name}, which is already up");
        let dir = ClusterDir::new(&self.state_dir, &name);
        Ok(Self::nodes(&dir, name, false))
    }

    async fn bring_up(
        &self,
        t: &Topology,
        name: ClusterName,
        wiring: Wiring,
    ) -> anyhow::Result<Nodes> {
        let opts = UpOptions {
            name: name.clone(),
            state_dir: self.state_dir.clone(),
            image: ImageOptions::default(),
            source: self.source.display().to_string(),
            keep_on_failure: false,
            medium_seed: DEFAULT_MEDIUM_SEED,
            kind: self.kind,
        };
        tracing::info!("bringing up virtual cluster {name} for {}", t.name);
        let report = tokio::task::spawn_blocking(move || up(&wiring, &opts)).await??;
        tracing::info!(
            "virtual cluster {name} up in {:.1} s",
            report.elapsed.as_secs_f64()
        );
        Ok(Self::nodes(&report.dir, name, true))
    }
}

impl NodeSource for VirtualClusters {
    fn obtain<'a>(&'a self, t: &'a Topology) -> BoxFuture<'a, anyhow::Result<Nodes>> {
        Box::pin(async move {
            let wiring = Wiring::from_topology(t)?;
            let name = ClusterName::from_label(t.name.as_str())?;
            if self.still_exists(name.as_str())? {
                self.reuse(t, name, &wiring)
            } else {
                self.bring_up(t, name, wiring).await
            }
        })
    }

    fn release(&self, nodes: Nodes) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let Some(owner) = nodes.owner.filter(|_| nodes.created && !self.keep) else {
                return Ok(());
            };
            let name = ClusterName::parse(&owner)?;
            let state = self.state_dir.clone();
            let gone = name.clone();
            tokio::task::spawn_blocking(move || down(&gone, &state))
                .await?
                .with_context(|| {
                    format!(
                        "taking down virtual cluster {name} (`orchestrate cluster down --name {name}` retries)"
                    )
                })?;
            Ok(())
        })
    }

    fn still_exists(&self, owner: &str) -> anyhow::Result<bool> {
        Ok(list_clusters()?.iter().any(|c| c == owner))
    }
}
