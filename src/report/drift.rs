//! Did the machine drift while the run ran? Points run in a random order within their
//! configuration, so a drift in the host's speed (heat, other load, the hypervisor) shows as a
//! trend of each cell's repetitions against the time they ran, whatever the cell. Per cell with
//! at least [`MIN_REPETITIONS`] samples: the least-squares slope of ln(aggregate) against the
//! hour its window started. The run's drift is the median of those slopes, with the median's
//! 95% interval over cells (order statistics, as for the cells themselves): an interval that
//! excludes 0 is a drift the report names. Drift between configurations (which run in blocks)
//! is not separable from their difference here: [`super::drift_check`] measures that.

use std::collections::BTreeMap;

use super::data::{CellKey, PointSample};
use super::stats::{RepStats, rep_stats};

/// Fewer repetitions give no slope worth the name.
pub const MIN_REPETITIONS: usize = 3;

/// The run's drift, in percent of a cell's figure per hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Cells with a slope.
    pub cells: usize,
    /// Median over cells of the slope, %/h, with its interval.
    pub per_hour: RepStats,
}

impl Drift {
    /// The interval over cells excludes no drift.
    pub fn shown(&self) -> bool {
        self.per_hour
            .ci
            .is_some_and(|ci| ci.coverage >= 0.95 && (ci.low > 0.0 || ci.high < 0.0))
    }
}

/// The drift of a run's samples; `None` with no cell of [`MIN_REPETITIONS`] samples spread
/// over time.
pub fn estimate(samples: &[PointSample]) -> Option<Drift> {
    let mut by_cell: BTreeMap<&CellKey, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.aggregate_mbit_s > 0.0) {
        let hour = s.window_start_unix_ns as f64 / 3.6e12;
        by_cell
            .entry(&s.key)
            .or_default()
            .push((hour, s.aggregate_mbit_s.ln()));
    }
    let slopes: Vec<f64> = by_cell
        .values()
        .filter(|v| v.len() >= MIN_REPETITIONS)
        .filter_map(|v| slope(v))
        // ln units per hour as percent per hour.
        .map(|b| b.exp_m1() * 100.0)
        .collect();
    Some(Drift {
        cells: slopes.len(),
        per_hour: rep_stats(&slopes)?,
    })
}

/// Least-squares slope of y on x; `None` when every x is the same.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(size: u64) -> CellKey {
        CellKey::token("bus", size)
    }

    /// Twelve cells of six repetitions, interleaved over `hours`, each repetition `rate`
    /// percent per hour faster than at the start, with a wobble that averages out.
    fn run(rate_pct: f64, hours: f64) -> Vec<PointSample> {
        let mut out = Vec::new();
        let start = 1_800_000_000u64 * 1_000_000_000;
        for rep in 0..6u32 {
            for cell in 0..12u64 {
                let k = (rep as u64 * 12 + cell) as f64;
                let h = hours * k / 72.0;
                let wobble = if (rep + cell as u32) % 2 == 0 {
                    1.01
                } else {
                    0.99
                };
                out.push(PointSample {
                    point: k as u32,
                    rep,
                    key: key(cell),
                    aggregate_mbit_s: (cell + 1) as f64 * (1.0 + rate_pct / 100.0).powf(h) * wobble,
                    pair_mbit_s: Vec::new(),
                    window_ns: 1,
                    window_start_unix_ns: start + (h * 3.6e12) as u64,
                });
            }
        }
        out
    }

    #[test]
    fn a_steady_machine_shows_no_drift_and_a_drifting_one_does() {
        let steady = estimate(&run(0.0, 2.0)).unwrap();
        assert_eq!(steady.cells, 12);
        assert!(!steady.shown(), "{steady:?}");
        assert!(steady.per_hour.median.abs() < 1.0, "{steady:?}");
        let slower = estimate(&run(-5.0, 2.0)).unwrap();
        assert!(slower.shown(), "{slower:?}");
        assert!((slower.per_hour.median + 5.0).abs() < 1.0, "{slower:?}");
    }

    #[test]
    fn too_few_repetitions_give_no_estimate() {
        let two: Vec<PointSample> = run(3.0, 1.0).into_iter().filter(|s| s.rep < 2).collect();
        assert_eq!(estimate(&two), None);
    }
}
