//! The collectives' section ("Applications"): each collective's time per iteration on every
//! configuration, its ratio to the baseline, the model beside it, and the answer to the 1996
//! paper's anticipation that "while some problems may exhibit sensitivities to the network
//! choices, many others will be less dramatically impacted".
//!
//! A point's figure is what the OSU micro-benchmarks print: the mean over ranks of each
//! rank's mean time per iteration, with the fastest and slowest rank beside it. A cell is a
//! configuration, collective and size; its repetitions (attempts that counted) combine by the
//! report's statistic, the best being the shortest time.

mod cells;
mod ranks;

pub use cells::{AppCell, Applications, CollectiveCellPrediction, PEER_AGREEMENT, Spread};

use super::error::ReportError;
use crate::results::{PointRow, RunDir, Statistic};

/// The section of the run in `dir`, from its collectives' point attempts; `None` when it ran
/// none.
pub fn build(
    dir: &RunDir,
    points: &[PointRow],
    model: &[CollectiveCellPrediction],
    statistic: Statistic,
    baseline: Option<&str>,
) -> Result<Option<Applications>, ReportError> {
    if points.is_empty() {
        return Ok(None);
    }
    let records = ranks::read(dir)?;
    Ok(Some(cells::applications(
        points, &records, model, statistic, baseline,
    )))
}
