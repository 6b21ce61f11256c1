//! The report's data: configurations, measures, cells and what is known about each, failed
//! point attempts. Every stage of a report works on these, so they sit below all of them.

use orchestrate_worker::record::{Pattern, Protocol};

use super::stats::{MedianCi, RepStats};
use crate::results::{BondDriver, PlacementKind, Statistic};

/// One configuration under test: a topology with its bonding and pair placement (and, when
/// comparing runs, the run it came from). Columns of the comparison tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Config {
    /// Label of the run, set only when several runs are compared.
    pub run: Option<String>,
    pub topology: String,
    pub bonding: String,
    pub bond_driver: Option<BondDriver>,
    pub placement: PlacementKind,
}

impl Config {
    /// Human label, e.g. `<topology> local-wire` or
    /// `<topology> balance-rr (userspace bond) local-wire`. A userspace bond is named as
    /// such: it is a stand-in and readers must know.
    pub fn label(&self) -> String {
        let mut s = String::new();
        if let Some(run) = &self.run {
            s.push_str(run);
            s.push_str(": ");
        }
        s.push_str(&self.topology);
        if let Some(b) = self.bonding_label() {
            s.push(' ');
            s.push_str(&b);
        }
        s.push(' ');
        s.push_str(self.placement.as_str());
        s
    }

    /// The bonding as labels give it, `balance-rr (userspace bond)`; `None` without a bond.
    pub fn bonding_label(&self) -> Option<String> {
        (self.bonding != "none").then(|| match self.bond_driver {
            Some(BondDriver::Userspace) => format!("{} (userspace bond)", self.bonding),
            _ => self.bonding.clone(),
        })
    }
}

/// The measurement a table is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Measure {
    pub pattern: Pattern,
    pub protocol: Protocol,
}

impl Measure {
    pub fn label(&self) -> String {
        format!("{}/{}", self.pattern.as_str(), self.protocol.as_str())
    }

    pub fn slug(&self) -> String {
        format!("{}-{}", self.pattern.as_str(), self.protocol.as_str())
    }
}

/// A cell: one configuration at one pair count and size for one measurement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub measure: Measure,
    pub config: Config,
    pub pairs: u32,
    pub size_bytes: u64,
}

#[cfg(test)]
impl CellKey {
    /// One pair of `size_bytes` tokens over TCP, local-wire and unbonded on `topology`: the
    /// cell the report's unit tests start from.
    pub fn token(topology: &str, size_bytes: u64) -> CellKey {
        CellKey {
            measure: Measure {
                pattern: orchestrate_worker::record::Pattern::Token,
                protocol: orchestrate_worker::record::Protocol::Tcp,
            },
            config: Config {
                run: None,
                topology: topology.into(),
                bonding: "none".into(),
                bond_driver: None,
                placement: crate::results::PlacementKind::LocalWire,
            },
            pairs: 1,
            size_bytes,
        }
    }
}

/// One successful repetition of a point, reduced to its window.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSample {
    pub point: u32,
    pub rep: u32,
    pub key: CellKey,
    /// Sum over pairs of the bytes each moved inside the common window, as Mbit/s.
    pub aggregate_mbit_s: f64,
    pub pair_mbit_s: Vec<f64>,
    pub window_ns: u64,
    /// When the window opened (Unix ns): the drift check orders repetitions by it.
    pub window_start_unix_ns: u64,
}

/// Why a point attempt does not count as a sample.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureReason {
    /// The runner marked the attempt failed (its error text).
    Runner(String),
    /// The attempt is marked ok but no record of it exists.
    NoRecords,
    /// Fewer pairs have successful trials than the point ran.
    MissingPairs { measured: u32, planned: u32 },
    /// The pairs' measurement intervals never overlapped, so no aggregate exists.
    NoOverlap,
    /// Some trials reported an error (how many, and the first error text).
    TrialErrors { trials: u64, first: String },
    /// The aggregate is more than the wires of its pairs can carry (kbit/s, so that reasons
    /// stay comparable): an artefact, not a measurement ([`super::wire_screen`]).
    OverTheWire {
        measured_kbit_s: u64,
        capacity_kbit_s: u64,
    },
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Runner(e) => write!(f, "{e}"),
            Self::NoRecords => write!(f, "marked ok but has no records"),
            Self::MissingPairs { measured, planned } => {
                write!(
                    f,
                    "only {measured} of {planned} pairs have successful trials"
                )
            }
            Self::NoOverlap => write!(f, "pairs never overlapped in time"),
            Self::TrialErrors { trials, first } => {
                let s = if *trials == 1 { "" } else { "s" };
                write!(f, "{trials} trial{s} reported errors: {first}")
            }
            Self::OverTheWire {
                measured_kbit_s,
                capacity_kbit_s,
            } => {
                let (m, c) = (*measured_kbit_s as f64 / 1e3, *capacity_kbit_s as f64 / 1e3);
                // Three significant digits, unless they would print the two alike.
                let (m, c) = match (super::format::human(m), super::format::human(c)) {
                    (a, b) if a == b => (format!("{m:.3}"), format!("{c:.3}")),
                    pair => pair,
                };
                write!(
                    f,
                    "its aggregate of {m} Mbit/s is more than its wires carry ({c} Mbit/s): \
                     not a measurement"
                )
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Failure {
    pub key: CellKey,
    pub point: u32,
    pub rep: u32,
    pub reason: FailureReason,
    /// TCP's counters over the failed attempt(s), where its records carried them: what the
    /// connections went through before the point failed.
    pub tcp: Option<TcpEvidence>,
}

/// Latency percentiles over all successful trials of a cell, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latency {
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
}

/// How each pair of one point's repetition delivered its payload over time, from the workers'
/// progress samples: the report draws one, so a reader sees what the aggregate's window cut.
#[derive(Debug, Clone, PartialEq)]
pub struct PointProgress {
    pub key: CellKey,
    pub point: u32,
    pub rep: u32,
    /// The common window, seconds after the earliest trial start of the point.
    pub window_s: (f64, f64),
    /// Per pair, in pair order: (seconds after the earliest trial start, Mbit/s over the bin
    /// that ends there), one point per [`PROGRESS_BIN_S`].
    pub pairs: Vec<(u32, Vec<(f64, f64)>)>,
}

/// The bin a pair's rate is drawn over, seconds: ten of the workers' 10 ms samples.
pub const PROGRESS_BIN_S: f64 = 0.1;

/// TCP's own counters over a cell's counted points, both ends of every connection summed
/// (read by the worker from TCP_INFO at each trial's start and end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct TcpEvidence {
    /// Trial records that carried counters (UDP, MPTCP and older workers' records do not).
    pub trials: u64,
    /// Segments retransmitted.
    pub retransmissions: u64,
    /// Reorderings the sender detected.
    pub reorderings: u64,
    /// Duplicate segments the receiver reported (D-SACK): spurious retransmissions.
    pub dsack_dups: u64,
    /// Segments that arrived out of order.
    pub out_of_order: u64,
}

impl TcpEvidence {
    /// `3 retransmissions, 0 out-of-order segments, 1 D-SACK duplicate (12 trial records)`.
    pub fn text(&self) -> String {
        format!(
            "{} retransmissions, {} out-of-order segments, {} reorderings seen, {} D-SACK \
             duplicates ({} trial records)",
            self.retransmissions, self.out_of_order, self.reorderings, self.dsack_dups, self.trials
        )
    }
}

impl std::ops::AddAssign for TcpEvidence {
    fn add_assign(&mut self, other: Self) {
        self.trials += other.trials;
        self.retransmissions += other.retransmissions;
        self.reorderings += other.reorderings;
        self.dsack_dups += other.dsack_dups;
        self.out_of_order += other.out_of_order;
    }
}

/// The nodes' CPU over a cell's counted points: the busy time each trial record's worker read
/// from its kernel (`node_cpu_busy_ms`, both ends), and the payload those trials delivered.
/// On VM and real nodes each end's count is its node's own; on container and namespace nodes
/// every end counts the one host they share.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuEvidence {
    /// Trial records that carried a count (older workers' do not).
    pub trials: u64,
    /// Busy CPU time, ms, summed over those records.
    pub busy_ms: f64,
    /// Payload bytes the same trials delivered, counted once per trial (on the side that
    /// times the pattern).
    pub bytes: u64,
}

impl CpuEvidence {
    /// Busy CPU ms per MB (10⁶ bytes) of payload; `None` without payload.
    pub fn ms_per_mb(&self) -> Option<f64> {
        (self.bytes > 0).then(|| self.busy_ms / (self.bytes as f64 / 1e6))
    }
}

impl std::ops::AddAssign for CpuEvidence {
    fn add_assign(&mut self, other: Self) {
        self.trials += other.trials;
        self.busy_ms += other.busy_ms;
        self.bytes += other.bytes;
    }
}

/// Everything known about one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSummary {
    pub key: CellKey,
    /// Aggregate throughput over the repetitions; `None` when every attempt failed.
    pub aggregate: Option<RepStats>,
    /// The aggregate of each successful repetition, Mbit/s, ascending: what comparisons
    /// between cells are computed from ([`super::contrast`]).
    pub repetitions: Vec<f64>,
    /// Mean over repetitions and pairs of one pair's throughput, Mbit/s.
    pub per_pair_mean_mbit_s: Option<f64>,
    /// Slowest pair seen in any repetition, Mbit/s: shows unfair sharing a sum hides.
    pub per_pair_min_mbit_s: Option<f64>,
    pub latency: Latency,
    /// TCP's counters during the cell's counted points; `None` where no record carried them.
    pub tcp: Option<TcpEvidence>,
    /// The nodes' CPU during the cell's counted points; `None` where no record carried it.
    pub cpu: Option<CpuEvidence>,
    pub failed_attempts: usize,
    /// Errored trials in the cell's failed attempts.
    pub failed_trials: u64,
}

#[cfg(test)]
impl CellSummary {
    /// A cell of one repetition at `mbit_s`, with nothing else known: what the report's unit
    /// tests build runs from.
    pub fn of_value(key: CellKey, mbit_s: f64) -> CellSummary {
        CellSummary {
            key,
            aggregate: super::stats::rep_stats(&[mbit_s]),
            repetitions: vec![mbit_s],
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Latency::default(),
            tcp: None,
            cpu: None,
            failed_attempts: 0,
            failed_trials: 0,
        }
    }
}

impl CellSummary {
    /// The headline figure under `statistic`.
    pub fn value(&self, statistic: Statistic) -> Option<f64> {
        self.aggregate.map(|s| match statistic {
            Statistic::Best => s.best,
            Statistic::Median => s.median,
            Statistic::Mean => s.mean,
        })
    }

    pub fn ci(&self) -> Option<MedianCi> {
        self.aggregate.and_then(|s| s.ci)
    }

    pub fn n(&self) -> usize {
        self.aggregate.map_or(0, |s| s.n)
    }
}
