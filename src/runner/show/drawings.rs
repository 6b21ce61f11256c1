//! What a run directory tells its report beyond the records: topology drawings (from the
//! topology copies) and the analytic model's predictions (from the copied experiment).

use std::path::{Path, PathBuf};

use crate::report::{CellPrediction, DrawTopology, PredictThroughput};
use crate::results::RunDir;

/// Draws the topologies a run directory holds (`topologies/<name>.toml`).
pub struct RunDrawings {
    run: RunDir,
}

impl RunDrawings {
    pub fn new(run_dir: &Path) -> RunDrawings {
        RunDrawings {
            run: RunDir::new(run_dir),
        }
    }
}

impl DrawTopology for RunDrawings {
    fn draw_svg(&self, topology: &str) -> Option<String> {
        let t = crate::topology::load(&self.run.topology_toml(topology)).ok()?;
        Some(crate::topology::draw::svg(&t))
    }
}

/// The analytic model's predictions for a run, from the experiment copied into its directory
/// (re-planned: the plan is deterministic, so the placements are the ones that ran).
pub struct RunModel {
    experiment: PathBuf,
}

impl RunModel {
    pub fn new(run_dir: &Path) -> RunModel {
        RunModel {
            experiment: RunDir::new(run_dir).experiment_toml(),
        }
    }
}

impl PredictThroughput for RunModel {
    fn predictions(&self) -> Vec<CellPrediction> {
        // Without a plan the report goes without the model section; say why.
        let Ok(e) = crate::plan::load(&self.experiment) else {
            tracing::warn!(
                "{}: cannot be loaded, so the report shows no model predictions",
                self.experiment.display()
            );
            return Vec::new();
        };
        let plan = match crate::plan::expand(&e) {
            Ok(p) => p,
            Err(err) => {
                tracing::warn!(
                    "re-planning {} for the model: {err}",
                    self.experiment.display()
                );
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for c in &plan.configurations {
            let bonding = c.bonding_label();
            let token_bucket = c
                .topology
                .segments
                .iter()
                .any(|s| s.emulation == crate::spec::topology::Emulation::Rate);
            for entry in &c.placements {
                let placement = entry.placement.kind;
                for p in &entry.predictions {
                    out.push(CellPrediction {
                        topology: c.topology.name.to_string(),
                        bonding: bonding.clone(),
                        placement,
                        pairs: entry.pairs,
                        token_bucket,
                        prediction: p.clone(),
                    });
                }
            }
        }
        out
    }
}
