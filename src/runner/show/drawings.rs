//! What a run directory tells its report beyond the records: topology drawings (from the
//! topology copies) and the analytic model's predictions (from the copied experiment).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::plan::throughput_model::ModelParams;
use crate::plan::twin::{self, TwinLength};
use crate::plan::{Configuration, PlacementEntry, Plan};
use crate::report::{
    CellCapacity, CellPrediction, CollectiveCellPrediction, DescribePaths, DrawTopology,
    PlacementPaths, PredictThroughput, RunWires, TwinCell, TwinSetup, TwinWires, token_capacities,
};
use crate::results::RunDir;
use crate::spec::{HostSpec, Rate};
use crate::topology::{NamedHostCosts, Topology};

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

/// The analytic model's predictions and the placements' paths for a run, from the experiment
/// copied into its directory (re-planned once: the plan is deterministic, so the placements
/// are the ones that ran).
pub struct RunModel {
    experiment: PathBuf,
    plan: OnceLock<Option<Plan>>,
    /// The twin's cells per setup asked for: a study may ask twice.
    twins: Mutex<Vec<(TwinSetup, Vec<TwinCell>)>>,
}

impl RunModel {
    pub fn new(run_dir: &Path) -> RunModel {
        RunModel {
            experiment: RunDir::new(run_dir).experiment_toml(),
            plan: OnceLock::new(),
            twins: Mutex::new(Vec::new()),
        }
    }

    /// The run's plan; without one the report goes without the model and the paths, and
    /// the log says why.
    fn plan(&self) -> Option<&Plan> {
        self.plan
            .get_or_init(|| {
                let Ok(e) = crate::plan::load(&self.experiment) else {
                    tracing::warn!(
                        "{}: cannot be loaded, so the report shows no model predictions",
                        self.experiment.display()
                    );
                    return None;
                };
                crate::plan::expand(&e)
                    .map_err(|err| {
                        tracing::warn!(
                            "re-planning {} for the model: {err}",
                            self.experiment.display()
                        )
                    })
                    .ok()
            })
            .as_ref()
    }

    /// Every token cell of the plan in the simulated twin, as `setup` says.
    fn simulate(&self, setup: TwinSetup) -> Vec<TwinCell> {
        let Some(plan) = self.plan() else {
            return Vec::new();
        };
        let wired: Vec<(&Configuration, Topology)> = plan
            .measured_configurations()
            .map(|c| {
                let t = match setup.wires {
                    TwinWires::AsRun => c.topology.clone(),
                    TwinWires::Rewired { rate_bps, host } => twin::rewired(
                        &c.topology,
                        Rate::from_bits_per_s(rate_bps),
                        &NamedHostCosts::from_spec(&HostSpec::Profile(host)),
                    ),
                };
                (c, t)
            })
            .collect();
        // Every token cell, each its own simulation.
        let jobs: Vec<(&Configuration, &Topology, &PlacementEntry, u64)> = wired
            .iter()
            .flat_map(|(c, t)| {
                c.placements
                    .iter()
                    .flat_map(move |e| e.predictions.iter().map(move |p| (*c, t, e, p.size_bytes)))
            })
            .collect();
        let params = ModelParams {
            hop_latency: std::time::Duration::from_nanos(setup.stack_ns),
            ..ModelParams::default()
        };
        let simulate =
            |&(c, t, entry, size): &(&Configuration, &Topology, &PlacementEntry, u64)| {
                let o = twin::token(
                    t,
                    &entry.placement,
                    size,
                    &params,
                    plan.seed,
                    TwinLength::default(),
                )?;
                Some(TwinCell {
                    topology: c.topology.name.to_string(),
                    bonding: c.bonding_label(),
                    placement: entry.placement.kind,
                    pairs: entry.pairs,
                    size_bytes: size,
                    aggregate_mbit_s: o.aggregate_mbit_s,
                    collisions_per_frame: o.collisions_per_frame,
                    retransmissions: o.retransmissions,
                })
            };
        // Independent simulations, dealt out over the machine's cores in turn (neighbouring
        // cells cost alike).
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = &jobs;
        let mut done: Vec<(usize, TwinCell)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    s.spawn(move || {
                        (w..jobs.len())
                            .step_by(workers)
                            .filter_map(|i| simulate(&jobs[i]).map(|c| (i, c)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a twin simulation does not panic"))
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, c)| c).collect()
    }
}

impl DescribePaths for RunModel {
    fn paths(&self) -> Vec<PlacementPaths> {
        let Some(plan) = self.plan() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in plan.measured_configurations() {
            let bonding = c.bonding_label();
            for entry in &c.placements {
                // The pairs' hops both ways (and any other ways multipath routes allow), and
                // each wire they cross as what it is; addresses differ between topologies
                // that are wired alike, so they are left out.
                let pairs: Vec<serde_json::Value> = entry
                    .placement
                    .pairs
                    .iter()
                    .map(|p| {
                        let wires: Vec<serde_json::Value> = p
                            .path
                            .segments
                            .iter()
                            .map(|name| {
                                let seg = c.topology.segments.iter().find(|s| &s.name == name);
                                serde_json::json!({
                                    "name": name,
                                    "rate": seg.map(|s| s.rate.to_string()),
                                    "medium": seg.map(|s| format!("{:?}", s.medium)),
                                    "emulation": seg.map(|s| format!("{:?}", s.emulation)),
                                })
                            })
                            .collect();
                        serde_json::json!({
                            "client": p.client,
                            "server": p.server,
                            "hops": p.path.hops,
                            "reply": p.path.reply,
                            "alternatives": p.path.alternatives,
                            "wires": wires,
                        })
                    })
                    .collect();
                out.push(PlacementPaths {
                    topology: c.topology.name.to_string(),
                    bonding: bonding.clone(),
                    placement: entry.placement.kind,
                    pairs: entry.pairs,
                    signature: serde_json::Value::Array(pairs).to_string(),
                });
            }
        }
        out
    }
}

/// Any run's wires, from its own plan ([`RunModel`]): what `--compare` and the regression
/// check screen each run with.
pub struct PlannedWires;

impl RunWires for PlannedWires {
    fn capacities_of(&self, run_dir: &Path) -> Vec<CellCapacity> {
        RunModel::new(run_dir).capacities()
    }
}

impl PredictThroughput for RunModel {
    fn predictions(&self) -> Vec<CellPrediction> {
        let Some(plan) = self.plan() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in plan.measured_configurations() {
            let bonding = c.bonding_label();

            for entry in &c.placements {
                let placement = entry.placement.kind;
                for p in &entry.predictions {
                    out.push(CellPrediction {
                        topology: c.topology.name.to_string(),
                        bonding: bonding.clone(),
                        placement,
                        pairs: entry.pairs,
                        prediction: p.clone(),
                    });
                }
            }
        }
        out
    }

    fn collective_predictions(&self) -> Vec<CollectiveCellPrediction> {
        let Some(plan) = self.plan() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in plan.measured_configurations() {
            let bonding = c.bonding_label();
            for entry in &c.placements {
                let Some(pattern) = entry_pattern(plan, c, entry) else {
                    continue;
                };
                for m in &entry.collective_predictions {
                    out.push(CollectiveCellPrediction {
                        topology: c.topology.name.to_string(),
                        bonding: bonding.clone(),
                        pattern: pattern.as_str().to_owned(),
                        ranks: entry.pairs,
                        size_bytes: m.size_bytes,
                        time_us: m.time_us,
                        limit: m.limit.clone(),
                    });
                }
            }
        }
        out
    }

    fn twin_cells(&self, setup: TwinSetup) -> Vec<TwinCell> {
        let mut twins = self.twins.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, cells)) = twins.iter().find(|(s, _)| *s == setup) {
            return cells.clone();
        }
        let cells = self.simulate(setup);
        twins.push((setup, cells.clone()));
        cells
    }

    fn capacities(&self) -> Vec<CellCapacity> {
        let mut out = token_capacities(&self.predictions());
        let Some(plan) = self.plan() else {
            return out;
        };
        for c in plan.measured_configurations() {
            for entry in &c.placements {
                let Some(capacity_mbit_s) = entry.bulk_capacity_mbit_s else {
                    continue;
                };
                let Some(pattern) = entry_pattern(plan, c, entry) else {
                    continue;
                };
                out.push(CellCapacity {
                    topology: c.topology.name.to_string(),
                    bonding: c.bonding_label(),
                    placement: entry.placement.kind,
                    pairs: entry.pairs,
                    pattern,
                    size_bytes: None,
                    capacity_mbit_s,
                });
            }
        }
        out
    }
}

/// The pattern of a configuration's placement entry: its workload's, which any of its points
/// says.
fn entry_pattern(
    plan: &Plan,
    c: &Configuration,
    entry: &PlacementEntry,
) -> Option<orchestrate_worker::record::Pattern> {
    plan.points
        .iter()
        .find(|p| p.configuration == c.id && p.workload == entry.workload)
        .map(|p| p.pattern)
}
