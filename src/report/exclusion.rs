//! Whether leaving out the attempts the emulator did not keep time for moves the figures.
//!
//! A point whose attempt missed the timing bound is measured again, and only an attempt that
//! kept it counts. That is a selection, and a reviewer asks what it selects: attempts at the
//! same rates as those left out (the bound then removes only attempts whose frame timing was
//! wrong), or faster or slower ones (longer, slower attempts are likelier to catch a host
//! stall, and whatever stalls the emulator may slow the nodes too). So the report measures it:
//! each left-out attempt is aggregated exactly as a counted one is (the pairs' common window,
//! [`super::aggregate`]; set aside the same way when above its wires), and in every cell that
//! has both, the median of the left-out attempts is set against the median of the counted
//! ones. All left-out attempts are aggregated at once, each posing as a repetition of its own,
//! so the check costs one aggregation of samples alone over what the report's one pass over the
//! records gathered ([`super::gather`]), not one full aggregation per attempt number.

use std::collections::BTreeMap;

use super::aggregate::{self, CellKeys};
use super::data::{CellKey, Failure, PointSample};
use super::error::ReportError;
use super::gather::{AttemptId, Gathered};
use super::stats::{RepStats, rep_stats};
use super::wire_screen::{self, CellCapacity};
use crate::results::{PointRow, PointStatus};

/// The left-out attempts against the counted ones, over the cells that have both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exclusion {
    /// Left-out attempts that gave an aggregate (some left no records, or no overlap).
    pub attempts: usize,
    /// Cells with at least one left-out attempt and one counted.
    pub cells: usize,
    /// Per cell, the left-out attempts' median over the counted attempts' median; summarised
    /// over cells (median, with its order-statistic interval).
    pub ratio: RepStats,
    /// Cells whose left-out median lies outside the counted attempts' [min, max].
    pub outside_range: usize,
}

/// Measures the left-out attempts of `points` (drift-check points excluded by the caller)
/// against `counted`, the samples the cells are made of, keyed as they are (`label`). `None`
/// when no attempt was left out, or the records cannot tell attempts apart (runs from before
/// re-measurement).
pub fn measure(
    gathered: &Gathered,
    points: &[PointRow],
    counted: &[PointSample],
    keys: &CellKeys<'_>,
    capacities: &[CellCapacity],
) -> Result<Option<Exclusion>, ReportError> {
    let left_out: Vec<&PointRow> = points
        .iter()
        .filter(|p| p.status == PointStatus::Untimed)
        .collect();
    if left_out.is_empty() || !gathered.has_attempts {
        return Ok(None);
    }
    // The aggregation takes one attempt per (point, rep) as the one that counts. Each left-out
    // attempt poses as a repetition of its own (numbered by its place in `left_out`), so that
    // one aggregation takes them all.
    let posing: Vec<(AttemptId, PointRow)> = left_out
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let id = AttemptId {
                point: p.point,
                rep: p.rep,
                attempt: p.attempt,
            };
            let row = PointRow {
                rep: i as u32,
                status: PointStatus::Ok,
                ..(*p).clone()
            };
            (id, row)
        })
        .collect();
    let samples = aggregate::samples_only(gathered, &posing, keys)?;
    let mut ignored: Vec<Failure> = Vec::new();
    let samples = wire_screen::set_aside(samples, capacities, &mut ignored);
    Ok(compare(counted, &samples))
}

/// The comparison itself, per cell and then over cells.
fn compare(counted: &[PointSample], left_out: &[PointSample]) -> Option<Exclusion> {
    let kept = by_cell(counted);
    let mut ratios = Vec::new();
    let mut attempts = 0;
    let mut outside_range = 0;
    for (key, values) in by_cell(left_out) {
        let Some(k) = kept.get(key).and_then(|v| rep_stats(v)) else {
            continue;
        };
        let Some(l) = rep_stats(&values) else {
            continue;
        };
        let (lo, hi) = kept[key]
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if k.median > 0.0 {
            ratios.push(l.median / k.median);
            attempts += values.len();
            outside_range += usize::from(l.median < lo || l.median > hi);
        }
    }
    Some(Exclusion {
        attempts,
        cells: ratios.len(),
        ratio: rep_stats(&ratios)?,
        outside_range,
    })
}

/// Each cell's aggregates.
fn by_cell(samples: &[PointSample]) -> BTreeMap<&CellKey, Vec<f64>> {
    let mut m: BTreeMap<&CellKey, Vec<f64>> = BTreeMap::new();
    for s in samples {
        m.entry(&s.key).or_default().push(s.aggregate_mbit_s);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(size: u64) -> CellKey {
        CellKey::token("bus", size)
    }

    fn sample(size: u64, mbit_s: f64) -> PointSample {
        PointSample {
            point: 0,
            rep: 0,
            key: key(size),
            aggregate_mbit_s: mbit_s,
            pair_mbit_s: vec![mbit_s],
            window_ns: 1_000_000_000,
            window_start_unix_ns: 0,
        }
    }

    #[test]
    fn left_out_attempts_slower_than_the_counted_ones_show_as_a_ratio_below_one() {
        let counted: Vec<_> = (0..6)
            .flat_map(|i| [sample(64, 10.0 + i as f64 * 0.1), sample(512, 20.0)])
            .collect();
        // Half as fast at 64 B (median 5.0 against 10.25), at par at 512 B.
        let left_out = [
            sample(64, 4.0),
            sample(64, 5.0),
            sample(64, 6.0),
            sample(512, 20.0),
        ];
        let e = compare(&counted, &left_out).unwrap();
        assert_eq!((e.attempts, e.cells), (4, 2));
        assert_eq!(e.outside_range, 1, "only the 64 B cell's median is outside");
        let expected = [5.0 / 10.25, 1.0];
        assert!((e.ratio.median - (expected[0] + expected[1]) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_cell_without_counted_attempts_is_not_compared() {
        let counted = [sample(64, 10.0)];
        let left_out = [sample(512, 1.0)];
        assert_eq!(compare(&counted, &left_out), None);
    }
}
