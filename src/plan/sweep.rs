//! Expansion of an experiment into configurations (a topology under one multipath mode, set up
//! once) and points (one measurement), in a seeded random order within each configuration;
//! with more than one configuration, the first's reference cell once more at the end (the
//! drift check).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::netconf::{self, NodeScripts};
use crate::spec::experiment::{Pattern, PlacementKind, Protocol};
use crate::spec::multipath::{NodeMultipath, Routing};
use crate::spec::{Name, SpecError, SpecErrors};
use crate::topology::Topology;

use super::estimate;
use super::experiment::{Experiment, Variant, Workload, variants};
use super::placement::{self, Placement, PlacementError};
use super::rank_placement;
use super::throughput_model::collectives::{
    CollectivePrediction, CollectiveShape, StepSummary, predict_collective, step_summaries,
};
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

impl Plan {
    /// The configurations whose points make the report's cells: all but the drift check, which
    /// repeats one of them.
    pub fn measured_configurations(&self) -> impl Iterator<Item = &Configuration> {
        self.configurations.iter().filter(|c| c.repeats.is_none())
    }
}

/// A topology under one multipath mode: configured once, then measured point by point.
#[derive(Debug, Clone, Serialize)]
pub struct Configuration {
    pub id: usize,
    pub topology: Topology,
    /// The multipath mode swept to, or None where the topology's own bonds hold. Serialized
    /// as its label under its first name, so plans of bonding sweeps read as before.
    #[serde(rename = "bonding", serialize_with = "mode_label")]
    pub multipath: Option<NodeMultipath>,
    /// How the routes use equally short paths; written only where it is ECMP, so plans of
    /// shortest-path configurations read as before.
    #[serde(skip_serializing_if = "is_shortest")]
    pub routing: Routing,
    pub placements: Vec<PlacementEntry>,
    pub scripts: Vec<NodeScripts>,
    /// Things a reader of the plan should know: placements that do not apply, and why.
    pub notes: Vec<String>,
    /// Set on the drift check: this is configuration `repeats` applied again at the end of
    /// the run to measure its reference cell once more ([`drift_check`]). Written only there,
    /// so other configurations read as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<usize>,
}

impl Configuration {
    /// The configuration's label in records and reports: the swept mode (a bonding mode,
    /// `mptcp` or `none`), else the topology's own bonding mode(s), or "none"; under ECMP
    /// routing `ecmp`, or the mode's label with `+ecmp` where it has one.
    pub fn bonding_label(&self) -> String {
        let label = self.mode_label();
        match self.routing {
            Routing::Shortest => label,
            Routing::Ecmp if label == "none" => "ecmp".into(),
            Routing::Ecmp => format!("{label}+ecmp"),
        }
    }

    fn mode_label(&self) -> String {
        if let Some(m) = self.multipath {
            return m.label();
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
    /// For one-way TCP patterns (stream, file copy, load), the most the placement's wires
    /// carry at any size ([`throughput_model::bulk_wire_capacity`]): a measured aggregate above
    /// it is impossible. Token cells carry theirs in [`Self::predictions`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bulk_capacity_mbit_s: Option<f64>,
    /// For a collective, the model's time per iteration at each size
    /// ([`throughput_model::collectives`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collective_predictions: Vec<CollectivePrediction>,
    /// For a collective, what it runs: `alltoall pairwise`, `halo 4x4 open`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective: Option<String>,
    /// For a collective, its steps at the first size: what each sends where, over which
    /// paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collective_steps: Vec<StepSummary>,
}

/// One measurement: a workload at one size on one placement, one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub id: usize,
    pub configuration: usize,
    pub topology: Name,
    pub bonding: String,
    pub workload: usize,
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub size_bytes: u64,
    pub rep: u32,
    /// Index into the configuration's `placements`.
    pub placement_entry: usize,
    #[serde(serialize_with = "secs")]
    pub estimate: Duration,
}

fn is_shortest(r: &Routing) -> bool {
    *r == Routing::Shortest
}

fn mode_label<S: serde::Serializer>(m: &Option<NodeMultipath>, s: S) -> Result<S::Ok, S::Error> {
    match m {
        Some(m) => s.serialize_some(&m.label()),
        None => s.serialize_none(),
    }
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 10.0).round() / 10.0)
}

/// Expands `e` into its plan. Fails only when a placement is asked for that the topology
/// cannot give (too many pairs), or when the time estimate is too long to represent; each
/// error points at the workload's key at fault. Placements that do not apply at all are noted
/// and skipped.
pub fn expand(e: &Experiment) -> Result<Plan, SpecErrors> {
    let started = Instant::now();
    let mut configurations = Vec::new();
    let mut points = Vec::new();
    for (ti, topology) in e.topologies.iter().enumerate() {
        for variant in variants(topology, &e.multipath_modes, &e.routings) {
            let id = configurations.len();
            let (t, shortest) = routed(e, configured_mode(e, ti, variant), variant.routing);
            let (config, mut config_points) = configuration(e, id, t, shortest.as_ref(), variant)?;
            shuffle(&mut config_points, e.seed, id);
            points.extend(config_points);
            configurations.push(config);
        }
    }
    if configurations.len() >= 2 {
        let (again, again_points) = drift_check(&configurations[0], &points, configurations.len());
        points.extend(again_points);
        configurations.push(again);
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.id = i;
    }
    let estimate = total_estimate(e, &points, configurations.len())?;
    tracing::debug!(elapsed = ?started.elapsed(), points = points.len(), "plan expanded");
    Ok(Plan {
        experiment: e.name.clone(),
        seed: e.seed,
        configurations,
        points,
        estimate,
    })
}

/// The points' estimates and every configuration's overhead, summed; an error at the amount
/// of the workload whose point makes the sum overflow.
fn total_estimate(
    e: &Experiment,
    points: &[Point],
    configurations: usize,
) -> Result<Duration, SpecErrors> {
    let overhead = u32::try_from(configurations)
        .ok()
        .and_then(|n| CONFIGURE_OVERHEAD.checked_mul(n))
        .unwrap_or(Duration::MAX);
    points.iter().try_fold(overhead, |sum, p| {
        sum.checked_add(p.estimate)
            .ok_or_else(|| estimate_overflow(e, &e.workloads[p.workload]).into())
    })
}

fn estimate_overflow(e: &Experiment, w: &Workload) -> SpecError {
    e.source.error(
        w.spans.amount.clone(),
        "the plan's time estimate is too long to represent",
        Some("ask for fewer exchanges, a shorter duration or fewer points".into()),
    )
}

/// `shortest` with the routes `routing` asks for: as it is, or with ECMP routes added, and
/// then `shortest` itself too (ECMP configurations place their pairs on it).
fn routed(e: &Experiment, shortest: Topology, routing: Routing) -> (Topology, Option<Topology>) {
    match routing {
        Routing::Shortest => (shortest, None),
        Routing::Ecmp => {
            let hash = e
                .multipath_hash
                .expect("loading sets the hash wherever a routing is ECMP");
            (shortest.with_ecmp(hash), Some(shortest))
        }
    }
}

/// Topology `ti` as `variant`'s multipath mode runs it: its bonds in a bonding mode, or its
/// interfaces each with their own address, with or without Multipath TCP.
fn configured_mode(e: &Experiment, ti: usize, variant: Variant) -> Topology {
    let topology = &e.topologies[ti];
    let unbonded = || {
        e.unbonded[ti]
            .as_ref()
            .expect("loading resolves the unbonded variant of every topology a mode needs it for")
    };
    match variant.multipath {
        None => topology.clone(),
        Some(NodeMultipath::Bond(m)) => topology.with_bond_mode(m),
        Some(NodeMultipath::Mptcp) => unbonded().with_mptcp(),
        Some(NodeMultipath::None) => unbonded().clone(),
    }
}

/// Configuration `id`: `t` under `variant` with its scripts and every workload's placements,
/// and its points in workload order (not yet shuffled or numbered); `shortest` is `t` before
/// its ECMP routes, where it has them.
fn configuration(
    e: &Experiment,
    id: usize,
    t: Topology,
    shortest: Option<&Topology>,
    variant: Variant,
) -> Result<(Configuration, Vec<Point>), SpecErrors> {
    let mut config = Configuration {
        id,
        scripts: t.nodes.iter().map(|n| netconf::render(&t, n)).collect(),
        topology: t,
        multipath: variant.multipath,
        routing: variant.routing,
        placements: Vec::new(),
        notes: Vec::new(),
        repeats: None,
    };
    let mut points = Vec::new();
    for (wi, w) in e.workloads.iter().enumerate() {
        for &kind in &w.placements {
            for &pairs in &w.pairs {
                let Some(placement) = place_or_note(&mut config, shortest, w, kind, pairs, e.seed)
                    .map_err(|err| {
                        SpecErrors::from(e.source.error(
                            w.spans.pairs.clone(),
                            err.to_string(),
                            None,
                        ))
                    })?
                else {
                    continue;
                };
                let slot = Slot {
                    workload: wi,
                    kind,
                    pairs,
                    entry: config.placements.len(),
                };
                let collective_predictions = collective_predictions(&config, w, &placement);
                let collective_steps = collective_shape(w)
                    .zip(w.sizes.first())
                    .map(|(shape, &size)| step_summaries(&placement.ranks, &shape, size))
                    .unwrap_or_default();
                points.extend(
                    placement_points(&config, w, &slot, &placement, &collective_predictions)
                        .ok_or_else(|| SpecErrors::from(estimate_overflow(e, w)))?,
                );
                let predictions = predictions(&config, w, &placement);
                let bulk_capacity_mbit_s = bulk_capacity(&config, w, &placement);
                config.placements.push(PlacementEntry {
                    workload: wi,
                    pairs,
                    placement,
                    predictions,
                    bulk_capacity_mbit_s,
                    collective_predictions,
                    collective_steps,
                    collective: w.collective.as_ref().map(|c| c.label(w.pattern, pairs)),
                });
            }
        }
    }
    Ok((config, points))
}

/// Places `pairs` pairs of `kind` on the configuration's topology. Where no such pairs exist
/// at all, notes it on the configuration (once) and gives None: the other placements are
/// still measured. Under ECMP the pairs are those shortest paths place (`shortest`: the
/// topology before ECMP), each server reached at its node address, so both routings measure
/// the same nodes.
fn place_or_note(
    config: &mut Configuration,
    shortest: Option<&Topology>,
    w: &Workload,
    kind: PlacementKind,
    pairs: u32,
    seed: u64,
) -> Result<Option<Placement>, PlacementError> {
    if let Some(c) = &w.collective {
        // Ranks reach each other by the configuration's own routes, ECMP's included.
        return rank_placement::place_ranks(
            &config.topology,
            kind,
            pairs as usize,
            seed,
            &c.rank_nodes,
        )
        .map(Some);
    }
    let placed_on = shortest.unwrap_or(&config.topology);
    match placement::place(placed_on, kind, pairs as usize, &w.explicit_pairs) {
        Ok(p) if shortest.is_some() => placement::to_node_addresses(&config.topology, p).map(Some),
        Ok(p) => Ok(Some(p)),
        Err(PlacementError::NotApplicable { .. }) => {
            let note = format!(
                "{}: no {} pairs exist, so it is measured as the other placements only",
                config.topology.name,
                kind.as_str()
            );
            if !config.notes.contains(&note) {
                config.notes.push(note);
            }
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// Where one placement's points belong: the workload, the placement asked for, and its index
/// in the configuration's `placements`.
struct Slot {
    workload: usize,
    kind: PlacementKind,
    pairs: u32,
    entry: usize,
}

/// Every size and repetition of workload `w` on one placement, sizes in the order given;
/// `None` if a point's estimate is too long to represent.
fn placement_points(
    config: &Configuration,
    w: &Workload,
    slot: &Slot,
    placement: &Placement,
    collective: &[CollectivePrediction],
) -> Option<Vec<Point>> {
    let mut points = Vec::new();
    for (i, &size) in w.sizes.iter().enumerate() {
        let est = match collective.get(i) {
            Some(c) => estimate::collective_point(w, c)?,
            None => estimate::point(&config.topology, w, size, placement)?,
        };
        for rep in 0..w.repetitions {
            points.push(Point {
                id: 0,
                configuration: config.id,
                topology: config.topology.name.clone(),
                bonding: config.bonding_label(),
                workload: slot.workload,
                pattern: w.pattern,
                protocol: w.protocol,
                placement: slot.kind,
                pairs: slot.pairs,
                size_bytes: size,
                rep,
                placement_entry: slot.entry,
                estimate: est,
            });
        }
    }
    Some(points)
}

/// The analytic model's expectation at each size, for the token test (the one it models), with
/// the configuration's transport.
fn predictions(config: &Configuration, w: &Workload, placement: &Placement) -> Vec<Prediction> {
    if w.pattern != Pattern::Token {
        return Vec::new();
    }
    let params = match config.multipath {
        Some(NodeMultipath::Mptcp) => ModelParams::default().mptcp(),
        _ => ModelParams::default(),
    };
    w.sizes
        .iter()
        .map(|&s| throughput_model::predict_token(&config.topology, placement, s, &params))
        .collect()
}

/// The model's time per iteration of a collective at each size, barrier included apart; empty
/// for the other patterns.
fn collective_predictions(
    config: &Configuration,
    w: &Workload,
    placement: &Placement,
) -> Vec<CollectivePrediction> {
    let Some(shape) = collective_shape(w) else {
        return Vec::new();
    };
    w.sizes
        .iter()
        .map(|&s| {
            predict_collective(
                &config.topology,
                &placement.ranks,
                &shape,
                s,
                &ModelParams::default(),
            )
        })
        .collect()
}

/// What collective `w` runs, as the model takes it; `None` for the other patterns.
fn collective_shape(w: &Workload) -> Option<CollectiveShape<'_>> {
    w.collective.as_ref().map(|c| CollectiveShape {
        pattern: w.pattern,
        algorithm: c.algorithm,
        grid: c.grid,
        periodic: c.periodic,
        root: c.root as usize,
    })
}

/// The wires' bound on a one-way TCP pattern's aggregate (stream, file copy, load); `None`
/// for the others, and under MPTCP.
fn bulk_capacity(config: &Configuration, w: &Workload, placement: &Placement) -> Option<f64> {
    let one_way = matches!(
        w.pattern,
        Pattern::Stream | Pattern::Filecopy | Pattern::Load
    );
    if !one_way || w.protocol != Protocol::Tcp || config.multipath == Some(NodeMultipath::Mptcp) {
        return None;
    }
    throughput_model::bulk_wire_capacity(&config.topology, placement, &ModelParams::default())
}

/// The drift check: configuration `first` applied once more as configuration `id`, after all
/// the others, to measure its reference cell again. Configurations run in blocks, so a machine
/// that sped up or slowed down over the run would otherwise be read as a difference between
/// them; the reference cell's two measurements, hours apart, show how much of that there is.
/// The reference cell is the first configuration's cheapest (least estimated time over its
/// repetitions; the first in workload, placement and size order among equals), so the check
/// costs one reconfiguration and a few seconds. Its points keep their workload, placement and
/// size, in repetition order.
fn drift_check(first: &Configuration, points: &[Point], id: usize) -> (Configuration, Vec<Point>) {
    let mut cells: BTreeMap<(usize, usize, u64), Duration> = BTreeMap::new();
    for p in points.iter().filter(|p| p.configuration == first.id) {
        *cells
            .entry((p.workload, p.placement_entry, p.size_bytes))
            .or_default() += p.estimate;
    }
    let reference = cells
        .iter()
        .min_by_key(|(cell, estimate)| (**estimate, **cell))
        .map(|(cell, _)| *cell);
    let mut again: Vec<Point> = points
        .iter()
        .filter(|p| {
            p.configuration == first.id
                && Some((p.workload, p.placement_entry, p.size_bytes)) == reference
        })
        .map(|p| Point {
            configuration: id,
            ..p.clone()
        })
        .collect();
    again.sort_by_key(|p| p.rep);
    let config = Configuration {
        id,
        repeats: Some(first.id),
        // Its notes were said once, on the first.
        notes: Vec::new(),
        ..first.clone()
    };
    (config, again)
}

/// Random order within a configuration, so that drift over time (thermal, other load) does
/// not line up with size or pair count; configurations stay in blocks because reconfiguring
/// every node costs seconds.
fn shuffle(points: &mut [Point], seed: u64, configuration: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed ^ (configuration as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    points.shuffle(&mut rng);
}

/// Applying and tearing down a configuration on every node, and checking its paths.
pub const CONFIGURE_OVERHEAD: Duration = Duration::from_secs(5);
