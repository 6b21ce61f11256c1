//! The analytic model beside the measurement: for each token-test cell, what the wires allow
//! (from `plan::throughput_model`) and the measured/predicted ratio, with a likely cause where the two
//! differ by more than [`TOLERANCE`].
//!
//! The report does not know topologies; whoever does implements [`PredictThroughput`] (the
//! runner re-plans the run directory's experiment) and hands it over in
//! [`super::ReportOptions::model`].

use super::data::{CellKey, CellSummary};
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
    /// The configuration's wires were token buckets (`emulation = "rate"`), not the
    /// frame-by-frame medium: small frames and idle wires then cost less than on Ethernet.
    pub token_bucket: bool,
    pub prediction: Prediction,
}

/// Gives the model's predictions for a run.
pub trait PredictThroughput {
    fn predictions(&self) -> Vec<CellPrediction>;
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
    /// Set when measured and predicted differ by more than [`TOLERANCE`].
    pub likely_cause: Option<Cause>,
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

/// Token-test cells with a prediction, in cell order.
pub fn rows(
    cells: &[CellSummary],
    predictions: &[CellPrediction],
    stat: Statistic,
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
                    likely_cause: None,
                };
                if !row.within_tolerance() {
                    row.likely_cause = Some(likely_cause(&row, p.token_bucket));
                }
                row
            })
        })
        .collect()
}

/// Why a cell strays from the model: what the model leaves out. Many cells share a cause, so
/// the report names each once and refers to it from the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// Below: balance-rr reorders segments.
    BondReordering,
    /// Below: a forwarding node's CPU limits, and delays acknowledgements.
    HostBound,
    /// Below, latency-bound: the nodes' own overheads exceed the per-hop cost.
    HostOverheads,
    /// Above, latency-bound on token buckets: no serialization time for a lone frame.
    TokenBucketIdle,
    /// Above, latency-bound: the stacks were faster than the per-hop cost.
    FastStacks,
    /// Below with several pairs: CSMA/CD capture and token waits on a shared bus.
    BusContention,
    /// Below with one pair: the wire idles between turns.
    OnePairTurns,
    /// Above on a busy bus: uneven service stretches the common window.
    UnevenService,
    /// Above with small frames on token buckets: no preamble, gap or padding charged.
    TokenBucketFraming,
    /// Above: frames of consecutive tokens overlap on separate segments.
    Pipelining,
    /// Above what the wires can carry: not a measurement but an artefact of the aggregate.
    OverTheWire,
}

impl Cause {
    /// A few words that name the cause in a table.
    pub fn short(self) -> &'static str {
        match self {
            Self::BondReordering => "balance-rr reordering",
            Self::HostBound => "forwarding CPU",
            Self::HostOverheads => "host overheads",
            Self::TokenBucketIdle => "token bucket: no serialization",
            Self::FastStacks => "faster stacks",
            Self::BusContention => "bus contention",
            Self::OnePairTurns => "idle between turns",
            Self::UnevenService => "uneven CSMA/CD service",
            Self::TokenBucketFraming => "token bucket: no framing overhead",
            Self::Pipelining => "pipelining across hops",
            Self::OverTheWire => "over the wire",
        }
    }

    /// The cause in full.
    pub fn explanation(self) -> &'static str {
        match self {
            Self::BondReordering => {
                "balance-rr stripes packets over the slaves, so segments arrive out of order: TCP \
                 answers with duplicate acknowledgements and retransmits, which the model leaves out"
            }
            Self::HostBound => {
                "host-bound: a forwarding node's CPU is the bottleneck, and its queue of frames \
                 also delays the acknowledgements, so TCP's window stalls more than the model's \
                 steady flow assumes"
            }
            Self::HostOverheads => {
                "latency-bound: each exchange pays system calls, veth and bridge hops and the \
                 scheduling of many containers on few cores, more than the model's fixed cost per hop"
            }
            Self::TokenBucketIdle => {
                "latency-bound, the wire idle between tokens: an emulated bus is a token bucket, \
                 which limits the rate but lets a lone frame through at once, where a real 10 Mbit/s \
                 wire spends each frame's serialization time on every hop (75 µs for the smallest \
                 frame, 1.2 ms for a full one); the model counts that time"
            }
            Self::FastStacks => {
                "latency-bound and faster than the model: the nodes' own stacks took less than the \
                 model's fixed cost per hop on this run (the wire's time the emulator charges \
                 exactly)"
            }
            Self::BusContention => {
                "pairs contend for a shared bus: CSMA/CD's capture effect lets one station keep the \
                 wire while others back off (and drop frames after 16 collisions), and a bus idles \
                 while its pairs wait for their tokens to come back"
            }
            Self::OnePairTurns => {
                "one pair alternates directions on the wire: each token waits for the last one's \
                 acknowledgement, leaving the wire idle between turns"
            }
            Self::UnevenService => {
                "above a busy bus's capacity: CSMA/CD serves the pairs unevenly (a station that wins \
                 keeps winning), so they finish at different times, and the aggregate over the window \
                 in which all pairs ran counts the slower ones at their average over their whole run, \
                 which includes the time after the faster ones had finished and left them the wire"
            }
            Self::TokenBucketFraming => {
                "above the model with small frames: the emulated bus (tbf) charges a frame's length \
                 from the Ethernet header on, while a real 10 Mbit/s wire also spends preamble, \
                 inter-frame gap, checksum and padding to 64 bytes (up to 50 bytes more per frame), \
                 which the model counts"
            }
            Self::Pipelining => {
                "above the wire-time model: frames of consecutive tokens overlap on the path's \
                 separate segments (pipelining across hops), which the model counts one after another"
            }
            Self::OverTheWire => {
                "the figure is more than the cell's wires can carry (their frames' time alone, \
                 both directions of every token, no acknowledgements, collisions or host costs), \
                 so it is not printed: the aggregate over the window in which all pairs ran \
                 counts a trial that straddles the window's edge in proportion to its overlap, \
                 as if its rate were even, and pairs a busy bus serves unevenly are counted at \
                 their whole-trial average"
            }
        }
    }
}

/// The usual reason a cell strays from the model, from what the model leaves out.
fn likely_cause(r: &ModelRow, token_bucket: bool) -> Cause {
    if r.over_the_wire() {
        return Cause::OverTheWire;
    }
    let below = r.ratio() < 1.0;
    let bonded_rr = r.key.config.bonding.contains("balance-rr");
    let host_bound = r.bound.starts_with("host ");
    match (r.bound.as_str(), below) {
        (_, true) if bonded_rr => Cause::BondReordering,
        (_, true) if host_bound => Cause::HostBound,
        ("latency", true) => Cause::HostOverheads,
        ("latency", false) if token_bucket => Cause::TokenBucketIdle,
        ("latency", false) => Cause::FastStacks,
        (_, true) if r.key.pairs > 1 => Cause::BusContention,
        (_, true) => Cause::OnePairTurns,
        (b, false) if b.starts_with("segment") && r.key.pairs > 1 && !token_bucket => {
            Cause::UnevenService
        }
        (_, false) if r.key.size_bytes < 1024 && token_bucket => Cause::TokenBucketFraming,
        (_, false) => Cause::Pipelining,
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
            likely_cause: None,
        };
        if !r.within_tolerance() {
            r.likely_cause = Some(likely_cause(&r, false));
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
        assert_eq!(over.likely_cause, Some(Cause::OverTheWire));
        // Under its wires and near the model: an ordinary agreeing cell.
        let fine = row(4.1, 4.0, Some(4.25));
        assert!(!fine.over_the_wire() && fine.within_tolerance());
        assert_eq!(fine.likely_cause, None);
        // Without a known capacity nothing is claimed.
        assert!(!row(5.35, 5.0, None).over_the_wire());
    }
}
