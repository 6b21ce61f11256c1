//! The drift check: configurations run in blocks, one after another, so a machine that sped up
//! or slowed down over the run would be read as a difference between them. The plan therefore
//! ends by applying the first configuration again and measuring its reference cell once more
//! (`plan::sweep`'s drift check). Here the two measurements of that cell, hours apart, are
//! compared as any two alternatives are: the ratio of their geometric means with Welch's 95%
//! interval ([`super::contrast::ratio`]). An interval that leaves out 1 is a drift between the
//! first configuration and the last that the report names; the repetitions of the check count
//! in no cell.

use super::contrast::{self, RatioEstimate};
use super::data::{CellKey, PointSample};

/// The reference cell measured where the run first measured it and again at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftCheck {
    pub cell: CellKey,
    /// The cell's aggregates (Mbit/s) in its own configuration, and at the end of the run.
    pub first: Vec<f64>,
    pub again: Vec<f64>,
    /// Repetitions of the check that gave no sample (failed, or set aside).
    pub again_failed: usize,
    /// Hours from the middle of the first measurements to the middle of the second; `None`
    /// when a side has no sample.
    pub hours_apart: Option<f64>,
    /// Again over first, with its 95% interval; `None` with fewer than two samples a side.
    pub ratio: Option<RatioEstimate>,
}

impl DriftCheck {
    /// The interval leaves out no change: the machine drifted between the first configuration
    /// and the last.
    pub fn shown(&self) -> bool {
        self.ratio.is_some_and(|r| r.excludes_one())
    }
}

/// Compares the drift check's samples of `cell` (`again`, of `again_points` repetitions) with
/// the cell's samples in the run (`run`). A side without samples (every repetition failed or
/// missed the timing bound) gives a check with no ratio, which the report says, rather than
/// no check at all.
pub fn compare(
    cell: CellKey,
    run: &[PointSample],
    again: &[PointSample],
    again_points: usize,
) -> DriftCheck {
    let mut again_samples: Vec<&PointSample> = again.iter().filter(|s| s.key == cell).collect();
    let mut first_samples: Vec<&PointSample> = run.iter().filter(|s| s.key == cell).collect();
    let values = |v: &[&PointSample]| v.iter().map(|s| s.aggregate_mbit_s).collect::<Vec<_>>();
    let first = values(&first_samples);
    let again_values = values(&again_samples);
    let hours_apart = middle(&mut again_samples)
        .zip(middle(&mut first_samples))
        .map(|(a, f)| (a - f) / 3.6e12);
    DriftCheck {
        ratio: contrast::ratio(&again_values, &first),
        again_failed: again_points.saturating_sub(again_values.len()),
        cell,
        first,
        again: again_values,
        hours_apart,
    }
}

/// The median start of the samples' windows, in Unix ns; `None` without samples.
fn middle(samples: &mut [&PointSample]) -> Option<f64> {
    samples.sort_by_key(|s| s.window_start_unix_ns);
    let n = samples.len();
    let at = |i: usize| samples[i].window_start_unix_ns as f64;
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(at(n / 2)),
        _ => Some((at(n / 2 - 1) + at(n / 2)) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(size: u64) -> CellKey {
        CellKey::token("bus", size)
    }

    /// Six repetitions of `key(64)` around `mbit` (±1%), starting `hour` hours in.
    fn six(mbit: f64, hour: f64, first_point: u32) -> Vec<PointSample> {
        (0..6u32)
            .map(|rep| PointSample {
                point: first_point + rep,
                rep,
                key: key(64),
                aggregate_mbit_s: mbit * [0.99, 1.01, 1.0, 0.995, 1.005, 1.0][rep as usize],
                pair_mbit_s: Vec::new(),
                window_ns: 1,
                window_start_unix_ns: ((hour + f64::from(rep) / 600.0) * 3.6e12) as u64,
            })
            .collect()
    }

    #[test]
    fn the_same_cell_again_shows_no_drift_and_a_slower_one_does() {
        let mut run = six(1.0, 0.0, 0);
        // Another cell of the run, much faster: it must not be compared.
        run.extend(six(9.0, 0.5, 100).into_iter().map(|mut s| {
            s.key = key(8192);
            s
        }));
        let steady = compare(key(64), &run, &six(1.0, 2.0, 200), 6);
        assert!(!steady.shown(), "{steady:?}");
        assert_eq!((steady.first.len(), steady.again.len()), (6, 6));
        assert!(
            steady.hours_apart.is_some_and(|h| (h - 2.0).abs() < 0.01),
            "{steady:?}"
        );
        let slower = compare(key(64), &run, &six(0.9, 2.0, 200), 6);
        assert!(slower.shown(), "{slower:?}");
        let r = slower.ratio.unwrap();
        assert!((r.ratio - 0.9).abs() < 0.005 && r.high < 1.0, "{r:?}");
    }

    #[test]
    fn failed_repetitions_of_the_check_are_counted_and_too_few_give_no_interval() {
        let run = six(1.0, 0.0, 0);
        let one: Vec<PointSample> = six(1.0, 2.0, 200).into_iter().take(1).collect();
        let check = compare(key(64), &run, &one, 6);
        assert_eq!(check.again_failed, 5);
        assert_eq!(check.ratio, None);
        assert!(!check.shown());
        // Nothing at the end, or nothing in the run: a check without a ratio, not none.
        let none_again = compare(key(64), &run, &[], 6);
        assert_eq!((none_again.again_failed, none_again.ratio), (6, None));
        assert_eq!(none_again.hours_apart, None);
        let none_first = compare(key(64), &[], &six(1.0, 2.0, 200), 6);
        assert_eq!((none_first.first.len(), none_first.ratio), (0, None));
    }
}
