//! The analytic model beside the measurement: for each token-test cell, what the wires allow
//! (from `plan::throughput_model`) and the measured/predicted ratio; where the two differ by
//! more than [`TOLERANCE`], what the run counted that explains it ([`Cause`]), or that nothing
//! it counted does.
//!
//! The report does not know topologies; whoever does implements [`PredictThroughput`] (the
//! runner re-plans the run directory's experiment) and hands it over in
//! [`super::ReportOptions::model`].

use super::data::{CellKey, CellSummary, TcpEvidence};
use super::emulator_stats::{CellMedia, MediaReport};
use super::wire_screen::CellCapacity;
use crate::plan::throughput_model::Prediction;
use crate::results::{PlacementKind, Statistic};
use orchestrate_worker::record::Pattern;

/// Measured within ±10% of the model counts as agreeing with it.
pub const TOLERANCE: f64 = 0.10;

/// The analytic model's prediction for one token-test cell: the plan's [`Prediction`] (which
/// carries the size), with the configuration and pair count it was made for.
#[derive(Debug, Clone)]
pub struct CellPrediction {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub prediction: Prediction,
}

/// Gives the model's predictions for a run.
pub trait PredictThroughput {
    fn predictions(&self) -> Vec<CellPrediction>;

    /// The most each cell's wires can carry: the token cells' from their predictions, and
    /// whatever else the implementor knows (one-way streams).
    fn capacities(&self) -> Vec<CellCapacity> {
        token_capacities(&self.predictions())
    }

    /// The model's time per iteration of each collective cell.
    fn collective_predictions(&self) -> Vec<super::applications::CollectiveCellPrediction> {
        Vec::new()
    }

    /// The simulated twin's figure for each token cell as `setup` says; a study asks for it
    /// only when it needs it, as it costs a simulation per cell.
    fn twin_cells(&self, _setup: super::simulated::TwinSetup) -> Vec<super::simulated::TwinCell> {
        Vec::new()
    }
}

/// The token cells' wire capacities, from their predictions.
pub fn token_capacities(predictions: &[CellPrediction]) -> Vec<CellCapacity> {
    predictions
        .iter()
        .filter_map(|p| {
            Some(CellCapacity {
                topology: p.topology.clone(),
                bonding: p.bonding.clone(),
                placement: p.placement,
                pairs: p.pairs,
                pattern: Pattern::Token,
                size_bytes: Some(p.prediction.size_bytes),
                capacity_mbit_s: p.prediction.wire_capacity_mbit_s?,
            })
        })
        .collect()
}

/// One cell measured and predicted.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    pub key: CellKey,
    pub measured_mbit_s: f64,
    pub predicted_mbit_s: f64,
    pub bound: String,
    /// The most the cell's wires can carry (the plan's wire capacity); `None` where it is not
    /// known.
    pub capacity_mbit_s: Option<f64>,
    /// What the run counted that explains the difference, set when measured and predicted
    /// differ by more than [`TOLERANCE`].
    pub cause: Option<Cause>,
}

impl ModelRow {
    pub fn ratio(&self) -> f64 {
        self.measured_mbit_s / self.predicted_mbit_s
    }

    /// Within [`TOLERANCE`] of the model; never for a figure over the wire.
    pub fn within_tolerance(&self) -> bool {
        !self.over_the_wire() && (self.ratio() - 1.0).abs() <= TOLERANCE
    }

    /// The measured figure is more than the cell's wires can carry: it cannot be true, and
    /// the report does not print it as a measurement.
    pub fn over_the_wire(&self) -> bool {
        // A part in a million of slack for the rounding of the figures compared.
        self.capacity_mbit_s
            .is_some_and(|c| self.measured_mbit_s > c * (1.0 + 1e-6))
    }

    /// Every pair shares one wire (a bus, a segment or a bond): the cases the model should
    /// get right, with nothing between the ends but the medium.
    pub fn single_segment(&self) -> bool {
        self.key.config.placement == PlacementKind::LocalWire
    }
}

/// Token-test cells with a prediction, in cell order, each outside the tolerance with what the
/// run counted during its points (`media`, and the cells' TCP counters).
pub fn rows(
    cells: &[CellSummary],
    predictions: &[CellPrediction],
    stat: Statistic,
    media: &MediaReport,
) -> Vec<ModelRow> {
    cells
        .iter()
        .filter(|c| c.key.measure.pattern == Pattern::Token)
        .filter_map(|c| {
            let measured = c.value(stat)?;
            let k = &c.key;
            let p = predictions.iter().find(|p| {
                p.topology == k.config.topology
                    && p.bonding == k.config.bonding
                    && p.placement == k.config.placement
                    && p.pairs == k.pairs
                    && p.prediction.size_bytes == k.size_bytes
            })?;
            (p.prediction.aggregate_mbit_s > 0.0).then(|| {
                let mut row = ModelRow {
                    key: k.clone(),
                    measured_mbit_s: measured,
                    predicted_mbit_s: p.prediction.aggregate_mbit_s,
                    bound: p.prediction.limit(),
                    capacity_mbit_s: p.prediction.wire_capacity_mbit_s,
                    cause: None,
                };
                if !row.within_tolerance() {
                    row.cause = Some(measured_cause(&row, c.tcp, media.cell(k)));
                }
                row
            })
        })
        .collect()
}

/// What the run measured that explains a cell outside the tolerance. Only counters the run
/// has are cited; a guess at what the model leaves out is not a cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Above what the wires can carry: not a measurement but an artefact of the aggregate.
    OverTheWire,
    /// Below the model, with events the model has no room for, counted during the cell's
    /// points (those that count); never empty.
    Counted(Vec<Counted>),
    /// Nothing the run counted explains the difference.
    Unexplained,
}

/// One counter that explains a shortfall, with its total over the cell's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Segments TCP sent again (TCP_INFO, both ends).
    Retransmissions(u64),
    /// Segments that arrived out of order, or reorderings the sender detected when the
    /// receiver's count is not there (TCP_INFO).
    Reordering(u64),
    /// Frames the emulated medium dropped after 16 collisions.
    ExcessCollisionDrops(u64),
    /// Frames dropped by a full transmit queue of the emulated medium.
    QueueDrops(u64),
    /// Points during which the emulator's timing was outside its bound.
    LateTiming(usize),
}

impl Counted {
    pub fn text(self) -> String {
        match self {
            Self::Retransmissions(n) => format!("{n} retransmissions"),
            Self::Reordering(n) => format!("{n} out-of-order segments"),
            Self::ExcessCollisionDrops(n) => format!("{n} excess-collision drops"),
            Self::QueueDrops(n) => format!("{n} queue drops"),
            Self::LateTiming(n) => format!("{n} points with late timing"),
        }
    }
}

impl Cause {
    /// As the table's cause column gives it.
    pub fn text(&self) -> String {
        match self {
            Self::OverTheWire => "over the wire".into(),
            Self::Counted(list) => list.iter().map(|c| c.text()).collect::<Vec<_>>().join(", "),
            Self::Unexplained => "unexplained".into(),
        }
    }
}

/// What the run counted that explains `r` missing the model: the wires' capacity for a figure
/// above it; for one below, TCP's retransmissions and reordering and the medium's drops and
/// late timing during the cell's points. A figure above the model that its wires allow has
/// no counter to explain it.
fn measured_cause(r: &ModelRow, tcp: Option<TcpEvidence>, media: Option<&CellMedia>) -> Cause {
    if r.over_the_wire() {
        return Cause::OverTheWire;
    }
    if r.ratio() > 1.0 {
        return Cause::Unexplained;
    }
    let mut counted = Vec::new();
    if let Some(t) = tcp {
        if t.retransmissions > 0 {
            counted.push(Counted::Retransmissions(t.retransmissions));
        }
        let reordering = if t.out_of_order > 0 {
            t.out_of_order
        } else {
            t.reorderings
        };
        if reordering > 0 {
            counted.push(Counted::Reordering(reordering));
        }
    }
    if let Some(m) = media {
        if m.excess_collision_drops > 0 {
            counted.push(Counted::ExcessCollisionDrops(m.excess_collision_drops));
        }
        if m.queue_drops > 0 {
            counted.push(Counted::QueueDrops(m.queue_drops));
        }
        if m.flagged_points > 0 {
            counted.push(Counted::LateTiming(m.flagged_points));
        }
    }
    if counted.is_empty() {
        Cause::Unexplained
    } else {
        Cause::Counted(counted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::{Config, Measure};
    use orchestrate_worker::record::Protocol;

    fn row(measured: f64, predicted: f64, capacity: Option<f64>) -> ModelRow {
        let mut r = ModelRow {
            key: CellKey {
                measure: Measure {
                    pattern: Pattern::Token,
                    protocol: Protocol::Tcp,
                },
                config: Config {
                    run: None,
                    topology: "bus".into(),
                    bonding: "none".into(),
                    bond_driver: None,
                    placement: PlacementKind::LocalWire,
                },
                pairs: 7,
                size_bytes: 512,
            },
            measured_mbit_s: measured,
            predicted_mbit_s: predicted,
            bound: "segment bus".into(),
            capacity_mbit_s: capacity,
            cause: None,
        };
        if !r.within_tolerance() {
            r.cause = Some(measured_cause(&r, None, None));
        }
        r
    }

    #[test]
    fn a_figure_over_the_wire_is_never_within_the_model_and_says_so() {
        // The committed one-bus 7-pair 512 B cell: 5.35 Mbit/s on a bus that carries 4.25.
        let over = row(5.35, 5.0, Some(4.25));
        assert!(over.over_the_wire());
        assert!(
            !over.within_tolerance(),
            "within 10% of the model, yet impossible"
        );
        assert_eq!(over.cause, Some(Cause::OverTheWire));
        // Under its wires and near the model: an ordinary agreeing cell.
        let fine = row(4.1, 4.0, Some(4.25));
        assert!(!fine.over_the_wire() && fine.within_tolerance());
        assert_eq!(fine.cause, None);
        // Without a known capacity nothing is claimed.
        assert!(!row(5.35, 5.0, None).over_the_wire());
    }

    #[test]
    fn a_shortfall_cites_only_what_the_run_counted() {
        let short = row(3.0, 4.0, Some(4.25));
        // Nothing counted: no story is made up.
        assert_eq!(measured_cause(&short, None, None), Cause::Unexplained);
        let quiet = TcpEvidence {
            trials: 12,
            ..TcpEvidence::default()
        };
        assert_eq!(
            measured_cause(&short, Some(quiet), None),
            Cause::Unexplained,
            "counters read and all zero explain nothing"
        );
        let lossy = TcpEvidence {
            trials: 12,
            retransmissions: 7,
            reorderings: 2,
            out_of_order: 5,
            ..TcpEvidence::default()
        };
        let cause = measured_cause(&short, Some(lossy), None);
        assert_eq!(
            cause,
            Cause::Counted(vec![Counted::Retransmissions(7), Counted::Reordering(5)])
        );
        assert_eq!(cause.text(), "7 retransmissions, 5 out-of-order segments");
        // The same counters do not explain a figure above the model.
        let above = row(4.2, 3.5, Some(4.25));
        assert_eq!(
            measured_cause(&above, Some(lossy), None),
            Cause::Unexplained
        );
    }
}
