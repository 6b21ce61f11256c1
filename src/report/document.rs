//! A report as a whole: the run(s) it covers and every section built from their cells, ready
//! for the exporters. It sits above the stages that build its sections.

use super::compare::ComparisonTable;
use super::data::{CellSummary, Failure, PointProgress};
use super::emulator_stats::MediaReport;
use super::netpipe::NetpipeBaseline;
use super::predicted::ModelRow;
use super::references::ReferenceChecks;
use super::study::StudyFindings;
use crate::results::{Manifest, Statistic};

/// A complete report for one run (or several runs compared).
#[derive(Debug, Clone)]
pub struct Report {
    /// Titles and facts of the run(s); for a comparison, one per run.
    pub runs: Vec<RunInfo>,
    pub statistic: Statistic,
    /// Sorted by key.
    pub cells: Vec<CellSummary>,
    pub comparison: Vec<ComparisonTable>,
    pub findings: Vec<String>,
    /// Token-test cells beside the analytic model's prediction.
    pub model: Vec<ModelRow>,
    /// The section of each study whose questions this run can answer ([`super::study`]).
    pub studies: Vec<StudyFindings>,
    /// What the emulated wires did; empty (`present` false) for a run on token buckets or
    /// real machines, and for a comparison across runs.
    pub media: MediaReport,
    /// Sorted.
    pub failures: Vec<Failure>,
    pub netpipe: Vec<NetpipeBaseline>,
    /// Pre-rendered topology drawings (name, SVG); see [`super::topology`].
    pub topology_drawings: Vec<(String, String)>,
    /// The experiment's reference values checked against this run ([`super::references`]).
    pub references: ReferenceChecks,
    /// How the pairs of the run's heaviest point delivered over time, when its workers
    /// sampled it (one run only).
    pub progress: Option<PointProgress>,
    /// Whether the machine drifted while the run ran ([`super::drift`]); one run only.
    pub drift: Option<super::drift::Drift>,
    /// The first configuration's reference cell measured again at the end of the run
    /// ([`super::drift_check`]); one run only, and only where its plan had one.
    pub drift_check: Option<super::drift_check::DriftCheck>,
    /// Every cell measured with both the kernel's bonding driver and the userspace bond
    /// ([`super::drivers`]).
    pub drivers: Vec<super::drivers::DriverRow>,
    /// The collectives' section, where the run measured any ([`super::applications`]); one
    /// run only.
    pub applications: Option<super::applications::Applications>,
}

/// What the report says about a run's setup.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub label: String,
    pub manifest: Manifest,
    pub baseline: Option<String>,
    pub records: u64,
    pub point_attempts: usize,
}
