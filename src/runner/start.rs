//! Opening a run: a new run directory for an experiment, or the one of a run being resumed —
//! which must still plan the same points — with whatever an earlier attempt left configured
//! undone first.

use std::path::Path;

use anyhow::{Context, bail};

use crate::plan::experiment::Cluster;
use crate::plan::{self, Experiment, Plan};
use crate::remote::slurm::Allocation;
use crate::results::run_dir::{RunDir, RunWriter, trust};
use crate::results::{Manifest, SlurmJob, ToolInfo};
use crate::spec::SpecErrors;

/// A run directory ready to take points.
pub struct OpenRun {
    pub experiment: Experiment,
    pub plan: Plan,
    pub writer: RunWriter,
}

/// What to open: a new run of an experiment, or an earlier run to finish.
#[derive(Debug, Clone, Copy)]
pub enum RunStart<'a> {
    New {
        experiment: &'a Path,
        out_root: &'a Path,
    },
    Resume(&'a Path),
}

impl OpenRun {
    pub fn open(start: RunStart<'_>) -> anyhow::Result<OpenRun> {
        match start {
            RunStart::New {
                experiment,
                out_root,
            } => {
                let experiment = load(experiment)?;
                let plan = plan::expand(&experiment)?;
                let writer = RunWriter::create(out_root, &experiment, &plan)?;
                Ok(OpenRun {
                    experiment,
                    plan,
                    writer,
                })
            }
            RunStart::Resume(dir) => resume(dir),
        }
    }

    /// The manifest as far as it is known before any node is reached: kept from an earlier
    /// attempt where there is one, with this tool and the experiment's settings.
    pub fn initial_manifest(&self) -> Manifest {
        let e = &self.experiment;
        let mut m = self.writer.dir.manifest().unwrap_or_default();
        m.tool = Some(ToolInfo {
            name: Some("orchestrate".into()),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            commit: option_env!("ORCHESTRATE_COMMIT")
                .map(str::to_owned)
                .or_else(git_commit),
        });
        m.experiment = Some(e.name.to_string());
        m.seed = Some(e.seed);
        m.statistic = e.workloads.first().map(|w| w.statistic);
        m.baseline = e.baseline.as_ref().map(|b| b.to_string());
        m.started_unix_ns
            .get_or_insert_with(super::node::agent::now_ns);
        m.topologies = self
            .plan
            .configurations
            .iter()
            .map(|c| c.topology.name.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if let Cluster::Slurm { .. } = &e.cluster
            && let Some(job) = slurm_job_from_env()
            && !m.slurm_jobs.contains(&job)
        {
            m.slurm_jobs.push(job);
        }
        m
    }
}

fn resume(dir: &Path) -> anyhow::Result<OpenRun> {
    let run = RunDir::new(dir);
    trust::check(&run)?;
    let experiment = load(&run.experiment_toml())?;
    let plan = plan::expand(&experiment)?;
    let old: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.plan_json()).context("reading the run's plan.json")?,
    )?;
    if old["points"] != serde_json::to_value(&plan)?["points"] {
        bail!(
            "{}: the experiment no longer plans the same points as when the run started; resume needs the same plan",
            dir.display()
        );
    }
    let writer = RunWriter::open(dir)?;
    Ok(OpenRun {
        experiment,
        plan,
        writer,
    })
}

/// The experiment, and the inventory it names checked against its topologies (or the Slurm
/// allocation it runs in, for room): before a run creates anything, every problem with either
/// is reported at once.
fn load(path: &Path) -> anyhow::Result<Experiment> {
    let listed = |errors: SpecErrors| {
        let text: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        anyhow::anyhow!("{}", text.join("\n"))
    };
    let experiment = plan::load(path).map_err(listed)?;
    if let Some(checked) = plan::check_inventory(&experiment).map_err(listed)? {
        for note in &checked.unused {
            eprintln!("note: {note}");
        }
    }
    if let Cluster::Slurm { .. } = &experiment.cluster {
        let allocation = Allocation::from_env()?;
        for t in &experiment.topologies {
            allocation.fits(t)?;
        }
    }
    Ok(experiment)
}

/// The Slurm job this process runs in, from the variables `salloc` and `sbatch` set; `None`
/// outside an allocation.
fn slurm_job_from_env() -> Option<SlurmJob> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    Some(SlurmJob {
        job_id: var("SLURM_JOB_ID")?,
        nodelist: var(crate::remote::slurm::NODELIST_VAR)?,
        cluster: var("SLURM_CLUSTER_NAME"),
        partition: var("SLURM_JOB_PARTITION"),
    })
}

fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
