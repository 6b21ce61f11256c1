//! What a caller chooses about a report: [`ReportOptions`], and the NetPIPE files to draw
//! beside it.

use std::path::PathBuf;

use super::predicted::PredictThroughput;
use super::same_paths::DescribePaths;
use super::topology::DrawTopology;
use super::wire_screen::RunWires;
use crate::results::Statistic;

/// A NetPIPE output file to draw as a named baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct NetpipeSource {
    pub name: String,
    pub path: PathBuf,
}

/// Choices for a report; the defaults come from the run's manifest.
#[derive(Default)]
pub struct ReportOptions<'a> {
    /// Overrides the manifest's statistic (median when neither names one).
    pub statistic: Option<Statistic>,
    /// Overrides the manifest's baseline topology.
    pub baseline: Option<String>,
    pub netpipe: Vec<NetpipeSource>,
    /// Draws topologies for the report when set (see [`super::topology`]).
    pub topology: Option<&'a dyn DrawTopology>,
    /// Also write PNG copies of the figures (needs the `png` feature).
    pub png: bool,
    /// The analytic model's predictions, shown beside the measurement when given.
    pub model: Option<&'a dyn PredictThroughput>,
    /// The paths of the run's placements: configurations that send a cell's pairs the same
    /// way are a tie, whatever their numbers.
    pub paths: Option<&'a dyn DescribePaths>,
    /// Each run's wires, for `--compare` and the regression check: their runs' points above
    /// what their wires carry are set aside as in their own reports. (One run's report takes
    /// its capacities from `model`.)
    pub wires: Option<&'a dyn RunWires>,
}
