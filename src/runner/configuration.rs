//! One configuration (a topology under one bonding mode) on the nodes a source gave for it, in
//! stages: connect, [prepare](super::prepare), [programs](super::programs), ledger and
//! [apply](super::apply), [path proofs](super::path_proofs), [measure](super::measure),
//! [teardown](super::teardown). Teardown runs whatever happened after the ledger was written.

use crate::plan::{Configuration, Experiment, Point};
use crate::remote::{Nodes, Sessions};
use crate::results::run_dir::Ledger;
use crate::spec::NodeName;

use super::apply::{self, NODE_LEDGER};
use super::node::connect::connect;
use super::node::worker_binary::WorkerBuild;
use super::options::RunOptions;
use super::path_proofs::verify_paths;
use super::prepare::{self, Prepared};
use super::programs;
use super::show::events::Event;
use super::state::RunState;
use super::teardown::teardown;

pub struct ConfigurationRun<'a> {
    pub exp: &'a Experiment,
    pub config: &'a Configuration,
    /// The configuration's points not measured yet.
    pub todo: Vec<&'a Point>,
    pub nodes: &'a Nodes,
    pub worker: &'a WorkerBuild,
    pub opts: &'a RunOptions,
}

impl ConfigurationRun<'_> {
    pub async fn execute(&self, state: &mut RunState) -> anyhow::Result<()> {
        let t = &self.config.topology;
        let names: Vec<NodeName> = t.nodes.iter().map(|n| n.name.clone()).collect();
        let cluster = connect(
            &self.nodes.inventory,
            &names,
            "cannot reach every node, nothing was changed",
        )
        .await?;
        state.writer.log(&format!(
            "configuration {} ({}): connected to {} node(s)",
            self.config.id,
            t.name,
            names.len()
        ));
        let result = self.on_session(&cluster, names, state).await;
        cluster.close().await;
        result
    }

    async fn on_session(
        &self,
        cluster: &Sessions,
        names: Vec<NodeName>,
        state: &mut RunState,
    ) -> anyhow::Result<()> {
        let began = std::time::Instant::now();
        let prepared = prepare::prepare(cluster, self.config, self.worker).await?;
        programs::check(cluster, self.exp, self.config, &prepared).await?;
        state.writer.log(&format!(
            "configuration {}: every node prepared (worker checked, probed, programs found) in \
             {:.1} s",
            self.config.id,
            began.elapsed().as_secs_f64()
        ));
        self.record_preparation(&prepared, state)?;
        let mut ledger = Ledger {
            configuration: self.config.id,
            topology: self.config.topology.name.to_string(),
            inventory: std::path::absolute(&self.nodes.inventory)?,
            node_ledger: NODE_LEDGER.into(),
            nodes: names,
            owner: self.nodes.owner.clone(),
            copies: Default::default(),
        };
        state.writer.write_ledger(&ledger)?;
        let outcome = self
            .apply_and_measure(cluster, &prepared, &mut ledger, state)
            .await;
        teardown(cluster, self.config, &prepared, ledger, state).await?;
        outcome
    }

    /// What the nodes turned out to be, in the manifest; their scripts in the run directory.
    fn record_preparation(&self, prepared: &Prepared, state: &mut RunState) -> anyhow::Result<()> {
        let t = &self.config.topology;
        let m = &mut state.manifest;
        for (n, p) in &prepared.probes {
            m.nodes.insert(n.to_string(), p.clone());
        }
        if let Some(platform) = &self.nodes.platform {
            m.platforms.insert(t.name.to_string(), platform.clone());
        }
        if let Some(medium) = self
            .nodes
            .medium
            .as_ref()
            .and_then(|f| std::fs::read_to_string(&f.config).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
        {
            m.media
                .insert(format!("{}-{}", self.config.id, t.name), medium);
        }
        // A topology bonded in one configuration and not in another (a bond, then MPTCP, on
        // the same wires) keeps the driver of its bond: the manifest says what bonded it.
        let driver = m.bond_drivers.entry(t.name.to_string()).or_default();
        *driver = prepared.bond_driver.or(*driver);
        state
            .writer
            .write_scripts(self.config.id, t.name.as_str(), prepared.scripts.values())
    }

    async fn apply_and_measure(
        &self,
        cluster: &Sessions,
        prepared: &Prepared,
        ledger: &mut Ledger,
        state: &mut RunState,
    ) -> anyhow::Result<()> {
        let t = &self.config.topology;
        let began = std::time::Instant::now();
        ledger.copies = apply::apply(cluster, prepared, t.name.as_str()).await?;
        state.writer.write_ledger(ledger)?;
        state.writer.log(&format!(
            "configuration {}: applied on every node in {:.1} s",
            self.config.id,
            began.elapsed().as_secs_f64()
        ));
        verify_paths(self.config, cluster).await?;
        state.events.emit(Event::ConfigurationUp {
            configuration: self.config.id,
            topology: t.name.to_string(),
            bonding: self.config.bonding_label(),
            nodes: t.nodes.len(),
        });
        let measurement = super::measure::Measurement {
            exp: self.exp,
            config: self.config,
            todo: &self.todo,
            opts: self.opts,
            workers: &prepared.workers,
            bond_driver: prepared.bond_driver,
            medium_socket: self.nodes.medium.as_ref().map(|f| f.socket.as_path()),
        };
        measurement.run(cluster, state).await
    }
}
