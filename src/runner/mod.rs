//! `orchestrate run`: reaches every node, configures it, runs each point through the nodes'
//! agents, stores every record as it arrives, and leaves every node as it found it — on real
//! machines from an inventory, or on the virtual cluster, through the same path: nodes come
//! from a [`NodeSource`], and nothing here knows whether a node is a container.
//!
//! Where each stage lives:
//! - [`start`]: open a new run directory, or the one of a run to resume (same plan, earlier
//!   attempt's ledger undone first);
//! - per configuration (a topology under one bonding mode), [`configuration`] drives, in order:
//!   obtain nodes from the source, connect ([`session`]); [`prepare`]: install the worker in
//!   a private directory checked on the node ([`worker_install`]; no upload when the node has
//!   that build, [`worker_binary`]), probe, settle bond drivers, render scripts; check that
//!   every program the run calls is on each node ([`programs`]); write the ledger and
//!   [`apply`] every node's script; prove every planned path's hop count ([`paths`]);
//!   [`measure`]: one agent and one server per node, clock offsets, then each [`point`] with
//!   the medium's statistics ([`media`]); [`teardown`] — on success, failure and Ctrl-C alike;
//! - [`rundir`] writes the run directory, [`state`] is what every stage writes to, and
//!   [`progress`] shows it;
//! - a run directory read back (`orchestrate teardown`, `--resume`) is data: refused when
//!   another user could have written it ([`run_dir_trust`]), its teardown scripts run only if
//!   they are what this controller renders ([`verified_teardown`]).

mod agent;
mod apply;
mod configuration;
mod drawings;
mod fanout;
mod measure;
mod media;
mod paths;
mod point;
mod prepare;
mod programs;
mod progress;
mod run_dir_trust;
mod rundir;
mod session;
mod start;
mod state;
mod teardown;
mod verified_teardown;
mod worker_binary;
mod worker_install;

use std::path::PathBuf;

use tokio::sync::watch;

use crate::plan::Point;
use crate::remote::NodeSource;

use configuration::ConfigurationRun;
use state::RunState;
use worker_binary::WorkerBuild;

pub use agent::Agent;
pub use drawings::{RunDrawings, RunModel};
pub use progress::LogWriter;
pub use rundir::{Ledger, RunWriter, read_ledger};
pub use start::{OpenRun, RunStart};
pub use teardown::teardown_from_ledger;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnError {
    /// Stop at the first failed point (after tearing down every reachable node).
    Stop,
    /// Record the failure and go on with the next point.
    Continue,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub on_error: OnError,
    /// Port the worker servers listen on.
    pub port: u16,
    /// The worker binary to install on nodes.
    pub worker: PathBuf,
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    pub dir: PathBuf,
    pub ok: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Why the run stopped early, if it did.
    pub stopped: Option<Stopped>,
}

/// Why a run stopped before its last point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A point failed under `--on-error stop`: which, and why.
    PointFailed(String),
}

/// Runs the points of `run` not done yet, on nodes from `source`, then writes the report.
pub async fn run(
    run: OpenRun,
    source: &dyn NodeSource,
    opts: &RunOptions,
    interrupted: watch::Receiver<bool>,
) -> anyhow::Result<Summary> {
    let manifest = run.initial_manifest();
    let OpenRun {
        experiment,
        plan,
        writer,
    } = run;
    let done = writer.done_points()?;
    eprintln!("run directory: {}", writer.root().display());
    writer.log(&format!(
        "run of {} ({} points, {} already done)",
        experiment.name,
        plan.points.len(),
        done.len()
    ));
    // A ledger left by an earlier attempt is undone first: apply refuses to stack on it.
    if let Some(l) = read_ledger(&writer.dir)? {
        eprintln!(
            "undoing the configuration an earlier attempt left on {} node(s)",
            l.nodes.len()
        );
        teardown_from_ledger(writer.root(), source).await?;
    }
    let worker = WorkerBuild::read(&opts.worker)?;
    let mut state = RunState {
        summary: Summary {
            dir: writer.root().to_owned(),
            ok: 0,
            failed: 0,
            skipped: done.len(),
            stopped: None,
        },
        progress: progress::Progress::start(plan.points.len(), done.len()),
        writer,
        manifest,
        interrupted,
    };
    state.save_manifest()?;
    for config in &plan.configurations {
        let todo: Vec<&Point> = plan
            .points
            .iter()
            .filter(|p| p.configuration == config.id && !done.contains(&(p.id as u32)))
            .collect();
        if todo.is_empty() {
            continue;
        }
        if state.is_interrupted() {
            state.stop(Stopped::Interrupted);
            break;
        }
        let nodes = source.obtain(&config.topology).await?;
        let configuration = ConfigurationRun {
            exp: &experiment,
            config,
            todo,
            nodes: &nodes,
            worker: &worker,
            opts,
        };
        let result = configuration.execute(&mut state).await;
        let released = source.release(nodes).await;
        state.save_manifest()?;
        result?;
        // The points are measured and on disk: nodes that would not go back are reported,
        // not allowed to cost the remaining configurations and the report.
        if let Err(e) = released {
            state.warn(&format!(
                "giving back the nodes of {} failed: {e:#}",
                config.topology.name
            ));
        }
        if state.summary.stopped.is_some() {
            break;
        }
    }
    finish(state)
}

/// Closes the run: the manifest's end time, then the report.
fn finish(mut state: RunState) -> anyhow::Result<Summary> {
    drop(state.progress);
    state.manifest.finished_unix_ns = Some(agent::now_ns());
    state.writer.write_manifest(&state.manifest)?;
    let root = state.writer.root();
    let drawer = RunDrawings::new(root);
    let model = RunModel::new(root);
    let report_opts = crate::report::ReportOptions {
        topology: Some(&drawer),
        model: Some(&model),
        ..Default::default()
    };
    match crate::report::report_run(root, &report_opts) {
        Ok(files) => eprintln!("report: {} file(s) in {}", files.len(), root.display()),
        Err(e) => eprintln!(
            "report: {e} (rerun `orchestrate report {}`)",
            root.display()
        ),
    }
    Ok(state.summary)
}
