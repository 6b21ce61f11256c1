//! Measuring a configuration's points: one agent and one worker server per node for the whole
//! configuration, the nodes' clock offsets, then each point in turn, its records and the
//! medium's statistics stored as it finishes.
//!
//! The servers accept only clients that prove a secret drawn afresh for the configuration: it
//! lives exactly as long as the servers that check it, goes to the nodes only over the agents'
//! SSH channels, and is never written down.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;
use orchestrate_worker::agent::AgentEvent;
use orchestrate_worker::auth::Secret;
use orchestrate_worker::invocation::Invocation;
use orchestrate_worker::ready::ServerReady;
use orchestrate_worker::serve_args::ServeArgs;

use crate::plan::{Configuration, Experiment, Point};
use crate::results::{BondDriver, MediaContext, MediaRow, PointRow, PointStatus};
use crate::spec::NodeName;
use crate::topology::Topology;

use super::listen::listen_addresses;
use super::medium_stats::Sampler;
use super::mpi::MpiLauncher;
use super::node::agent::Agent;
use super::node::fanout::{listed, on_all};
use super::node::worker_install::InstalledWorker;
use super::options::{OnError, RunOptions, Timing};
use super::point::{self, Outcome, PointContext};
use super::show::events::{self, Event as RunEvent, Figures};
use super::state::RunState;
use super::state::Stopped;

/// What measuring a configuration needs beyond the nodes.
pub struct Measurement<'a> {
    pub exp: &'a Experiment,
    pub config: &'a Configuration,
    pub todo: &'a [&'a Point],
    pub opts: &'a RunOptions,
    pub workers: &'a BTreeMap<NodeName, InstalledWorker>,
    pub bond_driver: Option<BondDriver>,
    /// The medium emulator's control socket, where the wires are emulated.
    pub medium_socket: Option<&'a Path>,
}

impl Measurement<'_> {
    pub async fn run(
        &self,
        cluster: &crate::remote::Sessions,
        state: &mut RunState,
    ) -> anyhow::Result<()> {
        let names: Vec<NodeName> = self
            .config
            .topology
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        let secret = &Secret::generate();
        let (agents, errors) = on_all(&names, |n| async move {
            Ok(Agent::open(cluster, &n, &self.workers[&n], secret.clone()).await?)
        })
        .await;
        if !errors.is_empty() {
            close_all(&agents).await;
            bail!("starting the agents failed:\n  {}", listed(&errors));
        }
        let mpi = match self.mpi_launcher(cluster, &names) {
            Ok(m) => m,
            Err(e) => {
                close_all(&agents).await;
                bail!("{e}");
            }
        };
        let mut medium = Sampler::open(self.medium_socket);
        let result = self
            .with_agents(&names, &agents, mpi.as_ref(), medium.as_mut(), state)
            .await;
        // The configuration's totals, before anything is torn down (the emulator goes with
        // the cluster).
        if let Some(m) = medium.as_mut() {
            let t = &self.config.topology;
            let total = m
                .total(
                    self.config.id as u32,
                    t.name.as_str(),
                    &self.config.bonding_label(),
                )
                .await;
            if let Err(e) = state.writer.append_media_total(&total) {
                state
                    .writer
                    .log(&format!("writing media-total.jsonl: {e:#}"));
            }
        }
        close_all(&agents).await;
        result
    }

    /// What runs the points of this configuration that Open MPI runs, if it has any.
    fn mpi_launcher(
        &self,
        cluster: &crate::remote::Sessions,
        names: &[NodeName],
    ) -> Result<Option<MpiLauncher>, String> {
        let uses_mpi = self
            .todo
            .iter()
            .any(|p| self.exp.workloads[p.workload].runs_on_open_mpi());
        if !uses_mpi {
            return Ok(None);
        }
        MpiLauncher::new(cluster, names).map(Some)
    }

    async fn with_agents(
        &self,
        names: &[NodeName],
        agents: &BTreeMap<NodeName, Agent>,
        mpi: Option<&MpiLauncher>,
        mut medium: Option<&mut Sampler>,
        state: &mut RunState,
    ) -> anyhow::Result<()> {
        start_servers(names, agents, &self.config.topology, self.opts.port).await?;
        let offsets = clock_offsets(names, agents).await?;
        let ctx = PointContext {
            exp: self.exp,
            config: self.config,
            agents,
            offsets: &offsets,
            port: self.opts.port,
            bond_driver: self.bond_driver,
            mpi,
        };
        let mut medium_warned = false;
        let prior = state.writer.attempts()?;
        for p in self.todo {
            state.progress.point_started(p);
            state.events.emit(point_started(self.config, p));
            let t0 = Instant::now();
            let first = prior.get(&(p.id as u32)).copied().unwrap_or(0);
            let mut attempt = first;
            let outcome = loop {
                let outcome = tokio::select! {
                    o = point::run(&ctx, p, attempt, medium.as_deref_mut()) => Some(o),
                    _ = state.interrupted.wait_for(|stop| *stop) => None,
                };
                let Some(mut outcome) = outcome else {
                    state.stop(Stopped::Interrupted);
                    state.writer.log(&format!(
                        "point {} interrupted; its partial results are not kept",
                        p.id
                    ));
                    return Ok(());
                };
                if outcome.row.status == PointStatus::Failed {
                    name_silent_nodes(&mut outcome, agents).await;
                }
                if let Some(m) = medium.as_deref_mut() {
                    let (lines, hosts) = m.take(&media_context(self.config, &outcome.row));
                    if outcome.row.status == PointStatus::Ok
                        && self.opts.timing == Timing::Enforce
                        && let Some(why) = timing_not_kept(&lines)
                    {
                        outcome.row.status = PointStatus::Untimed;
                        outcome.row.error = Some(why);
                    }
                    state.writer.append_media(&lines, &hosts)?;
                    if let Some(e) = m.error().filter(|_| !medium_warned) {
                        medium_warned = true;
                        state.warn(&format!(
                            "the medium emulator's statistics are unavailable from point {} on ({e}); the run goes on without them",
                            p.id
                        ));
                    }
                }
                state.writer.append_point(&outcome.records, &outcome.row)?;
                if outcome.row.status == PointStatus::Untimed
                    && attempt - first < self.opts.remeasure
                {
                    attempt += 1;
                    state.writer.log(&format!(
                        "point {}: {}; measuring it again ({} of {})",
                        p.id,
                        outcome.row.error.as_deref().unwrap_or_default(),
                        attempt - first,
                        self.opts.remeasure
                    ));
                    continue;
                }
                break outcome;
            };
            let figures = Figures::of(&outcome.records);
            if !self.tally(p, outcome.row, figures, t0.elapsed(), state) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Counts a finished point, shows it and reports it; false when the run is to stop here.
    fn tally(
        &self,
        p: &Point,
        row: PointRow,
        figures: Figures,
        took: Duration,
        state: &mut RunState,
    ) -> bool {
        match row.status {
            PointStatus::Ok => state.summary.ok += 1,
            PointStatus::Failed => state.summary.failed += 1,
            PointStatus::Untimed => state.summary.untimed += 1,
        }
        let line = state
            .progress
            .point_finished(p, took, row.error.as_deref().unwrap_or("ok"));
        state.writer.log(&line);
        let s = &state.summary;
        state.events.emit(RunEvent::PointFinished {
            point: p.id,
            status: row.status,
            error: row.error.clone(),
            seconds: events::secs(took),
            figures,
            done: s.ok + s.failed + s.skipped,
            total: state.progress.total(),
            left_s: events::secs(state.progress.left()),
        });
        // An untimed point's reason travels in its point_finished event; it is no failure.
        if let Some(error) = row
            .error
            .as_ref()
            .filter(|_| row.status == PointStatus::Failed)
        {
            state.events.emit(RunEvent::Failure {
                configuration: Some(p.configuration),
                point: Some(p.id),
                message: error.clone(),
            });
        }
        // A point the emulator did not keep time for is not the point's fault: the run goes
        // on whatever `--on-error` says.
        if row.status == PointStatus::Failed && self.opts.on_error == OnError::Stop {
            state.stop(Stopped::PointFailed(format!(
                "point {} failed: {}",
                p.id,
                row.error.unwrap_or_default()
            )));
            return false;
        }
        true
    }
}

/// Why a point's timing cannot be trusted: the first segment whose lateness was outside
/// its bound during the point (`None` when every segment kept it).
fn timing_not_kept(lines: &[MediaRow]) -> Option<String> {
    let s = &lines.iter().find(|l| !l.stats.timing_kept())?.stats;
    let b = s.timing_bound();
    Some(format!(
        "the medium emulator did not keep its timing bound on segment {} (p99 late by {:.1} \
         µs writing frames, {:.1} µs putting them on the wire, the latest {:.0} µs; bound: \
         p99 within {:.1} µs, none over {:.0} µs)",
        s.segment,
        s.lateness_p99_us,
        s.entry_p99_us,
        s.lateness_max_us.max(s.entry_max_us),
        b.p99_us,
        b.max_us
    ))
}

/// The event of `p` beginning.
fn point_started(config: &Configuration, p: &Point) -> RunEvent {
    RunEvent::PointStarted {
        point: p.id,
        configuration: p.configuration,
        topology: p.topology.to_string(),
        bonding: config.bonding_label(),
        pattern: p.pattern,
        protocol: p.protocol,
        placement: p.placement,
        pairs: p.pairs,
        size_bytes: p.size_bytes,
        rep: p.rep,
        estimate_s: events::secs(p.estimate),
    }
}

/// One worker server per node, listening on `port` of each of the node's experiment
/// addresses for the whole configuration.
async fn start_servers(
    names: &[NodeName],
    agents: &BTreeMap<NodeName, Agent>,
    topology: &Topology,
    port: u16,
) -> anyhow::Result<()> {
    let (_, errors) = on_all(names, |n| async move {
        let listen = listen_addresses(topology, &n, port)?;
        if listen.is_empty() {
            // No address, so no client can reach it: nothing to serve.
            return Ok(());
        }
        let a = &agents[&n];
        let serve = ServeArgs {
            spool_dir: Some(a.private_dir().into()),
            ..ServeArgs::new(listen)
        };
        let mut task = a.spawn(Invocation::Serve(serve).to_args()).await?;
        match task.next(&n, Duration::from_secs(20)).await? {
            AgentEvent::Line { line, .. } if ServerReady::from_line(&line).is_some() => Ok(()),
            other => bail!("{n}: the server did not start: {other:?}"),
        }
    })
    .await;
    if !errors.is_empty() {
        bail!("starting the servers failed:\n  {}", listed(&errors));
    }
    Ok(())
}

/// Each node's wall clock minus the controller's, in ns.
async fn clock_offsets(
    names: &[NodeName],
    agents: &BTreeMap<NodeName, Agent>,
) -> anyhow::Result<BTreeMap<NodeName, i64>> {
    let (offsets, errors) = on_all(
        names,
        |n| async move { Ok(agents[&n].clock_offset().await?.0) },
    )
    .await;
    if !errors.is_empty() {
        bail!("measuring clock offsets failed:\n  {}", listed(&errors));
    }
    Ok(offsets)
}

/// A pair's error often shows only the symptom (a timeout); names the nodes that stopped
/// answering, which is usually the cause.
async fn name_silent_nodes(outcome: &mut Outcome, agents: &BTreeMap<NodeName, Agent>) {
    let silent = unresponsive(agents).await;
    if !silent.is_empty() {
        let names: Vec<String> = silent.iter().map(|n| n.to_string()).collect();
        let err = outcome.row.error.take().unwrap_or_default();
        outcome.row.error = Some(format!("{} stopped answering ({err})", names.join(", ")));
    }
}

/// Nodes whose agent does not answer a clock probe within a few seconds.
async fn unresponsive(agents: &BTreeMap<NodeName, Agent>) -> Vec<NodeName> {
    let probes = agents.iter().map(|(n, a)| async move {
        let answered = tokio::time::timeout(Duration::from_secs(5), a.clock_offset()).await;
        (n.clone(), matches!(answered, Ok(Ok(_))))
    });
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect()
}

async fn close_all(agents: &BTreeMap<NodeName, Agent>) {
    futures_util::future::join_all(agents.values().map(|a| a.close())).await;
}

/// The keys a `media.jsonl` line shares with the point's records.
fn media_context(config: &Configuration, row: &PointRow) -> MediaContext {
    MediaContext {
        configuration: config.id as u32,
        point: row.point,
        topology: row.topology.clone(),
        bonding: row.bonding.clone(),
        placement: row.placement,
        pairs: row.pairs,
        pattern: row.pattern,
        protocol: row.protocol,
        size_bytes: row.size_bytes,
        rep: row.rep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(file: &str) -> Topology {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies")
            .join(file);
        crate::topology::load(&path).expect("a shipped topology loads")
    }

    #[test]
    fn servers_listen_on_every_experiment_address_and_nowhere_else() {
        for file in ["routed-mesh-4x4.toml", "bonded-dual-net.toml"] {
            let t = topology(file);
            for node in &t.nodes {
                let listen = listen_addresses(&t, &node.name, 7171).unwrap();
                let want: Vec<String> = node
                    .addresses()
                    .iter()
                    .map(|a| format!("{a}:7171"))
                    .collect();
                assert_eq!(listen, want, "{file} {}", node.name);
                assert!(!listen.is_empty());
                assert!(listen.iter().all(|l| !l.starts_with("0.0.0.0")));
            }
        }
    }

    #[test]
    fn under_ecmp_servers_listen_on_the_node_address_too() {
        let t =
            topology("routed-mesh-4x4.toml").with_ecmp(crate::spec::multipath::MultipathHash::L4);
        for node in &t.nodes {
            let listen = listen_addresses(&t, &node.name, 7171).unwrap();
            let own = format!("{}:7171", node.node_address().unwrap());
            assert_eq!(listen.last(), Some(&own), "{listen:?}");
            assert_eq!(listen.len(), node.addresses().len() + 1);
        }
    }

    #[test]
    fn a_node_outside_the_topology_is_an_error() {
        let t = topology("bonded-dual-net.toml");
        let stranger: NodeName = "not-a-node".parse().unwrap();
        assert!(listen_addresses(&t, &stranger, 7171).is_err());
    }
}
