//! Expansion of an experiment into configurations (a topology with one bonding mode, set up
//! once) and points (one measurement), in a seeded random order within each configuration.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::netconf::{self, NodeScripts};
use crate::spec::Name;
use crate::spec::experiment::{PatternKind, PlacementKind, ProtocolKind};
use crate::spec::topology::BondMode;
use crate::topology::Topology;

use super::estimate;
use super::experiment::Experiment;
use super::placement::{self, Placement, PlacementError};
use super::throughput_model::{self, ModelParams, Prediction};

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub experiment: Name,
    pub seed: u64,
    pub configurations: Vec<Configuration>,
    pub points: Vec<Point>,
    #[serde(serialize_with = "secs")]
    pub estimate: Duration,
}

/// A topology under one bonding mode: configured once, then measured point by point.
#[derive(Debug, Clone, Serialize)]
pub struct Configuration {
    pub id: usize,
    pub topology: Topology,
    /// The bonding mode swept to, or None where the topology's own modes hold.
    pub bonding: Option<BondMode>,
    pub placements: Vec<PlacementEntry>,
    pub scripts: Vec<NodeScripts>,
    /// Things a reader of the plan should know: placements that do not apply, and why.
    pub notes: Vec<String>,
}

impl Configuration {
    /// "none", the swept mode, or the topology's own mode(s).
    pub fn bonding_label(&self) -> String {
        if let Some(m) = self.bonding {
            return m.to_string();
        }
        let mut modes: Vec<&str> = self
            .topology
            .nodes
            .iter()
            .flat_map(|n| n.bonds.iter().map(|b| b.mode.as_str()))
            .collect();
        modes.sort();
        modes.dedup();
        if modes.is_empty() {
            "none".into()
        } else {
            modes.join("+")
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PlacementEntry {
    pub workload: usize,
    pub pairs: u32,
    pub placement: Placement,
    /// The analytic model's expectation per size, for the token test.
    pub predictions: Vec<Prediction>,
}

/// One measurement: a workload at one size on one placement, one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub id: usize,
    pub configuration: usize,
    pub topology: Name,
    pub bonding: String,
    pub workload: usize,
    pub pattern: PatternKind,
    pub protocol: ProtocolKind,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub size_bytes: u64,
    pub rep: u32,
    /// Index into the configuration's `placements`.
    pub placement_entry: usize,
    #[serde(serialize_with = "secs")]
    pub estimate: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 10.0).round() / 10.0)
}

/// Expands `e` into its plan. Fails only when a placement is asked for that the topology
/// cannot give (too many pairs); placements that do not apply at all are noted and skipped.
pub fn expand(e: &Experiment) -> Result<Plan, PlacementError> {
    let started = Instant::now();
    let mut configurations = Vec::new();
    let mut points = Vec::new();
    for topology in &e.topologies {
        let variants: Vec<Option<BondMode>> = if topology.has_bonds() && !e.bonding_modes.is_empty()
        {
            e.bonding_modes.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for bonding in variants {
            let t = match bonding {
                Some(m) => topology.with_bond_mode(m),
                None => topology.clone(),
            };
            let id = configurations.len();
            let mut config = Configuration {
                id,
                scripts: t.nodes.iter().map(|n| netconf::render(&t, n)).collect(),
                topology: t,
                bonding,
                placements: Vec::new(),
                notes: Vec::new(),
            };
            let mut config_points = Vec::new();
            for (wi, w) in e.workloads.iter().enumerate() {
                for &kind in &w.placements {
                    for &pairs in &w.pairs {
                        let placement = match placement::place(
                            &config.topology,
                            kind,
                            pairs as usize,
                            &w.explicit_pairs,
                        ) {
                            Ok(p) => p,
                            Err(PlacementError::NotApplicable { .. }) => {
                                let note = format!(
                                    "{}: no {} pairs exist, so it is measured as the other placements only",
                                    config.topology.name,
                                    kind.as_str()
                                );
                                if !config.notes.contains(&note) {
                                    config.notes.push(note);
                                }
                                continue;
                            }
                            Err(err) => return Err(err),
                        };
                        let entry = config.placements.len();
                        for &size in &w.sizes {
                            let est = estimate::point(&config.topology, w, size, &placement);
                            for rep in 0..w.repetitions {
                                config_points.push(Point {
                                    id: 0,
                                    configuration: id,
                                    topology: config.topology.name.clone(),
                                    bonding: config.bonding_label(),
                                    workload: wi,
                                    pattern: w.pattern,
                                    protocol: w.protocol,
                                    placement: kind,
                                    pairs,
                                    size_bytes: size,
                                    rep,
                                    placement_entry: entry,
                                    estimate: est,
                                });
                            }
                        }
                        let predictions = if w.pattern == PatternKind::Token {
                            w.sizes
                                .iter()
                                .map(|&s| {
                                    throughput_model::predict_token(
                                        &config.topology,
                                        &placement,
                                        s,
                                        &ModelParams::default(),
                                    )
                                })
                                .collect()
                        } else {
                            Vec::new()
                        };
                        config.placements.push(PlacementEntry {
                            workload: wi,
                            pairs,
                            placement,
                            predictions,
                        });
                    }
                }
            }
            // Random order within a configuration, so that drift over time (thermal, other
            // load) does not line up with size or pair count; configurations stay in blocks
            // because reconfiguring every node costs seconds.
            let mut rng =
                ChaCha8Rng::seed_from_u64(e.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            config_points.shuffle(&mut rng);
            points.extend(config_points);
            configurations.push(config);
        }
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.id = i;
    }
    let estimate = points.iter().map(|p| p.estimate).sum::<Duration>()
        + configurations.len() as u32 * CONFIGURE_OVERHEAD;
    tracing::debug!(elapsed = ?started.elapsed(), points = points.len(), "plan expanded");
    Ok(Plan {
        experiment: e.name.clone(),
        seed: e.seed,
        configurations,
        points,
        estimate,
    })
}

/// Applying and tearing down a configuration on every node, and checking its paths.
const CONFIGURE_OVERHEAD: Duration = Duration::from_secs(5);
