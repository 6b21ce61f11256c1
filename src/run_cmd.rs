//! `orchestrate run` and `orchestrate teardown`: which nodes a run gets (the experiment's
//! inventory, or virtual clusters), Ctrl-C, and what the exit code says.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use orchestrate::plan;
use orchestrate::remote::slurm::Allocation;
use orchestrate::remote::{InventoryFile, NodeSource, SlurmAllocation};
use orchestrate::results::RunDir;
use orchestrate::runner::EventsTo;
use orchestrate::runner::{self, OnError, OpenRun, RunOptions, RunStart, Stopped};
use orchestrate::vcluster::{self, VirtualClusters};

#[derive(Args)]
pub struct RunArgs {
    /// The experiment file (not needed with --resume).
    #[arg(required_unless_present = "resume")]
    experiment: Option<PathBuf>,
    /// Finish a run that stopped: only the points not yet done, into the same directory.
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "experiment")]
    resume: Option<PathBuf>,
    /// Print the plan and touch nothing (the same as `orchestrate plan`).
    #[arg(long)]
    pub dry_run: bool,
    /// Leave virtual clusters up at the end.
    #[arg(long)]
    keep_cluster: bool,
    /// What a failed point does to the run.
    #[arg(long, value_enum, default_value = "stop")]
    on_error: OnError,
    /// Root of the run directories.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    out: PathBuf,
    /// Port of the worker servers on the nodes.
    #[arg(long, default_value_t = 7171)]
    port: u16,
    /// The worker binary to install on the nodes (default: the one beside this program).
    #[arg(long, value_name = "PATH")]
    worker: Option<PathBuf>,
    /// Where virtual clusters keep their files.
    #[arg(long, default_value = vcluster::DEFAULT_STATE_DIR, value_name = "DIR")]
    state_dir: PathBuf,
    /// How many more times to measure a point during which the medium emulator did not keep
    /// its timing bound (p99 lateness within one contention slot and no frame over 1 ms, at
    /// both ends of every segment the point used). A point still outside it after that
    /// counts nowhere and is listed with the failures; `--resume` measures it again. Four
    /// by default: on a 2-vCPU virtual machine the host stalls the emulator for 2-15 ms now
    /// and then, which puts one frame over 1 ms in about a third of first attempts and in
    /// most of a 20 s point's; with two more attempts 6% of the quick start's points never
    /// kept the bound.
    #[arg(long, default_value_t = 4, value_name = "N")]
    remeasure: u32,
    /// What a point the medium emulator did not keep time for becomes: `enforce` marks it
    /// untimed and measures it again; `record` keeps it as measured (the report still flags
    /// it), for checking the chain on a machine too busy to keep time, not for results.
    #[arg(long, value_enum, default_value = "enforce")]
    timing: runner::Timing,
    /// Write the run's events as JSON lines to FILE, or to stdout with `-`.
    ///
    /// One object per line, written as it happens, each with `type` and `time` (RFC 3339,
    /// UTC): `run_started` (experiment, run_dir, points, done_before, configurations,
    /// estimate_s); `configuration_up` (configuration, topology, bonding, nodes);
    /// `point_started` (point, configuration, topology, bonding, pattern, protocol, placement,
    /// pairs, size_bytes, rep, estimate_s); `point_finished` (point, status ok|failed|untimed, error,
    /// seconds, figures {pairs, throughput_mbit_s: the pairs' mean rates summed, latency_us:
    /// the clients' median}, done, total, left_s); `failure` (configuration, point, message);
    /// `warning` (message); `teardown` (configuration, clean, nodes_left); `run_finished` (ok,
    /// failed, untimed, skipped, stopped, error, seconds). Times are in seconds.
    #[arg(long, value_name = "FILE|-")]
    events: Option<EventsTo>,
}

impl RunArgs {
    /// The experiment file: the one given, or the copy in the run to resume.
    pub fn experiment_file(&self) -> PathBuf {
        match (&self.experiment, &self.resume) {
            (_, Some(dir)) => RunDir::new(dir).experiment_toml(),
            (Some(e), None) => e.clone(),
            (None, None) => unreachable!("clap requires one"),
        }
    }

    fn start(&self) -> RunStart<'_> {
        match (&self.experiment, &self.resume) {
            (_, Some(dir)) => RunStart::Resume(dir),
            (Some(e), None) => RunStart::New {
                experiment: e,
                out_root: &self.out,
            },
            (None, None) => unreachable!("clap requires one"),
        }
    }
}

/// `orchestrate run`: 0 when no point failed (untimed points are not failures: the report
/// lists them), 130 when interrupted, 1 otherwise. With
/// `quiet`, only warnings and errors reach stderr.
pub fn run(args: RunArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let open = OpenRun::open(args.start())?;
    let source = node_source(
        &open.experiment,
        args.state_dir.clone(),
        args.keep_cluster,
        open.writer.root(),
    );
    let opts = RunOptions {
        on_error: args.on_error,
        port: args.port,
        worker: vcluster::locate_worker(args.worker.as_deref())?,
        quiet,
        events: args.events.clone(),
        remeasure: args.remeasure,
        timing: args.timing,
    };
    let rt = tokio::runtime::Runtime::new()?;
    let summary = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "interrupted: stopping the clients and tearing down every node (records so far are kept)"
                );
                let _ = tx.send(true);
            }
        });
        runner::run(open, &*source, &opts, rx).await
    })?;
    if !quiet {
        let untimed = match summary.untimed {
            0 => String::new(),
            n => format!(
                ", {n} untimed (the medium emulator did not keep its timing bound however often \
                 measured: left out of the report, listed there; --resume measures them again)"
            ),
        };
        eprintln!(
            "{} point(s) ok, {} failed{untimed}, {} done before; results in {}",
            summary.ok,
            summary.failed,
            summary.skipped,
            summary.dir.display()
        );
    }
    // What the experiment expects, after the run's own tally: a failed reference is a result,
    // so it is printed even with --quiet.
    eprint!("{}", summary.references);
    let resume = format!("orchestrate run --resume {}", summary.dir.display());
    Ok(match &summary.stopped {
        None if summary.failed == 0 && summary.references_failed > 0 => {
            ExitCode::from(orchestrate::report::CHECK_FAILED)
        }
        None if summary.failed == 0 => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
        Some(Stopped::Interrupted) => {
            eprintln!("resume with: {resume}");
            ExitCode::from(130)
        }
        Some(Stopped::PointFailed(why)) => {
            eprintln!("stopped: {why}\nresume with: {resume}");
            ExitCode::FAILURE
        }
    })
}

/// `orchestrate teardown <run-dir>`.
pub fn teardown(run_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let state_dir = PathBuf::from(vcluster::DEFAULT_STATE_DIR);
    let source = match plan::load(&RunDir::new(&run_dir).experiment_toml()) {
        Ok(e) => node_source(&e, state_dir, true, &run_dir),
        // Without the experiment: of the sources, only virtual clusters own their nodes.
        Err(_) => Box::new(VirtualClusters {
            state_dir,
            keep: true,
            source: run_dir.clone(),
            kind: vcluster::Kind::Docker,
        }),
    };
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(runner::teardown_from_ledger(&run_dir, &*source))?;
    Ok(ExitCode::SUCCESS)
}

/// Where an experiment's nodes come from: its inventory's machines, the Slurm allocation's
/// (their inventories written into `run_dir`), or virtual clusters under `state_dir` (left up
/// at the end when `keep`).
fn node_source(
    e: &plan::Experiment,
    state_dir: PathBuf,
    keep: bool,
    run_dir: &Path,
) -> Box<dyn NodeSource> {
    match &e.cluster {
        plan::experiment::Cluster::Inventory { path, .. } => {
            Box::new(InventoryFile { path: path.clone() })
        }
        plan::experiment::Cluster::Slurm { ssh, sudo } => Box::new(SlurmAllocation {
            allocation: Allocation::from_env(),
            ssh: ssh.clone(),
            sudo: *sudo,
            dir: run_dir.to_owned(),
        }),
        plan::experiment::Cluster::Docker => Box::new(VirtualClusters {
            state_dir,
            keep,
            source: e.path.clone(),
            kind: vcluster::Kind::Docker,
        }),
        plan::experiment::Cluster::Netns => Box::new(VirtualClusters {
            state_dir,
            keep,
            source: e.path.clone(),
            kind: vcluster::Kind::Netns,
        }),
        plan::experiment::Cluster::Vm => Box::new(VirtualClusters {
            state_dir,
            keep,
            source: e.path.clone(),
            kind: vcluster::Kind::Vm,
        }),
    }
}
