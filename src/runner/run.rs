//! The run as a whole: the earlier attempt's ledger undone, each configuration in plan order on
//! nodes from the source, then the manifest closed and the report written.

use std::collections::BTreeSet;

use tokio::sync::watch;

use crate::plan::{self, Point};
use crate::remote::NodeSource;
use crate::results::run_dir::read_ledger;

use super::configuration::ConfigurationRun;
use super::node::agent;
use super::node::worker_binary::WorkerBuild;
use super::options::RunOptions;
use super::show::drawings::{RunDrawings, RunModel};
use super::show::events::{self, Event, EventLog};
use super::show::progress;
use super::start::OpenRun;
use super::state::{RunState, Stopped, Summary};
use super::teardown::teardown_from_ledger;

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
    let events = EventLog::open(opts.events.as_ref())?;
    let done = writer.done_points()?;
    if !opts.quiet {
        eprintln!("run directory: {}", writer.root().display());
    }
    writer.log(&format!(
        "run of {} ({} points, {} already done)",
        experiment.name,
        plan.points.len(),
        done.len()
    ));
    // A ledger left by an earlier attempt is undone first: apply refuses to stack on it.
    if let Some(l) = read_ledger(&writer.dir)? {
        if !opts.quiet {
            eprintln!(
                "undoing the configuration an earlier attempt left on {} node(s)",
                l.nodes.len()
            );
        }
        teardown_from_ledger(writer.root(), source).await?;
    }
    let worker = WorkerBuild::read(&opts.worker)?;
    let progress = progress::Progress::start(&plan, &done, opts.quiet);
    events.emit(Event::RunStarted {
        experiment: experiment.name.to_string(),
        run_dir: writer.root().to_owned(),
        points: plan.points.len(),
        done_before: done.len(),
        configurations: plan.configurations.len(),
        estimate_s: events::secs(progress.left()),
    });
    let mut state = RunState {
        summary: Summary {
            dir: writer.root().to_owned(),
            ok: 0,
            failed: 0,
            untimed: 0,
            skipped: done.len(),
            stopped: None,
            references: String::new(),
            references_failed: 0,
        },
        progress,
        events,
        writer,
        manifest,
        interrupted,
    };
    state.save_manifest()?;
    let measured = Configurations {
        experiment: &experiment,
        plan: &plan,
        done: &done,
        source,
        worker: &worker,
        opts,
    }
    .run(&mut state)
    .await;
    match measured {
        Ok(()) => finish(state),
        Err(e) => {
            state.finished(Some(format!("{e:#}")));
            Err(e)
        }
    }
}

/// The configurations of a run, each on nodes from `source`, in plan order.
struct Configurations<'a> {
    experiment: &'a plan::Experiment,
    plan: &'a plan::Plan,
    /// Points finished by an earlier attempt.
    done: &'a BTreeSet<u32>,
    source: &'a dyn NodeSource,
    worker: &'a WorkerBuild,
    opts: &'a RunOptions,
}

impl Configurations<'_> {
    async fn run(&self, state: &mut RunState) -> anyhow::Result<()> {
        for config in &self.plan.configurations {
            let todo: Vec<&Point> = self
                .plan
                .points
                .iter()
                .filter(|p| p.configuration == config.id && !self.done.contains(&(p.id as u32)))
                .collect();
            if todo.is_empty() {
                continue;
            }
            if state.is_interrupted() {
                state.stop(Stopped::Interrupted);
                break;
            }
            state
                .progress
                .configuration_started(config, config.topology.nodes.len());
            let result = self.one(config, todo, state).await;
            if let Err(e) = &result {
                state.events.emit(Event::Failure {
                    configuration: Some(config.id),
                    point: None,
                    message: format!("{e:#}"),
                });
            }
            result?;
            if state.summary.stopped.is_some() {
                break;
            }
        }
        Ok(())
    }

    /// One configuration: nodes obtained, measured, given back.
    async fn one(
        &self,
        config: &plan::Configuration,
        todo: Vec<&Point>,
        state: &mut RunState,
    ) -> anyhow::Result<()> {
        let nodes = self.source.obtain(&config.topology).await?;
        let configuration = ConfigurationRun {
            exp: self.experiment,
            config,
            todo,
            nodes: &nodes,
            worker: self.worker,
            opts: self.opts,
        };
        let result = configuration.execute(state).await;
        let released = self.source.release(nodes).await;
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
        Ok(())
    }
}

/// Closes the run: the manifest's end time, then the report.
fn finish(mut state: RunState) -> anyhow::Result<Summary> {
    state.finished(None);
    state.manifest.finished_unix_ns = Some(agent::now_ns());
    state.writer.write_manifest(&state.manifest)?;
    let root = state.writer.root();
    let drawer = RunDrawings::new(root);
    let model = RunModel::new(root);
    let report_opts = crate::report::ReportOptions {
        topology: Some(&drawer),
        model: Some(&model),
        paths: Some(&model),
        ..Default::default()
    };
    match crate::report::report_and_check(root, &report_opts) {
        Ok(written) => {
            state.progress.note(&format!(
                "report: {} file(s) in {}",
                written.files.len(),
                root.display()
            ));
            state.summary.references =
                crate::report::references_text(&written.references, written.statistic);
            state.summary.references_failed = written.references.failed();
        }
        Err(e) => eprintln!(
            "report: {e} (rerun `orchestrate report {}`)",
            root.display()
        ),
    }
    Ok(state.summary)
}
