//! The report's one judgement type, [`Verdict`], and one rule for "did this get worse?",
//! used by the regression check between two runs ([`super::regression`]). An experiment's
//! reference values have bounds of their own instead ([`super::references`]).
//!
//! A measurement is its headline value and the interval for its median ([`super::stats`]).
//! Against an earlier measurement (or a reference value, an interval of one point) it is
//!
//! - **worse** when the change `(new − old) / old` is below `−threshold` **and** the two
//!   intervals do not overlap;
//! - **better** when the change is above `+threshold` and they do not overlap;
//! - **same** otherwise: either the change is within the threshold or the data cannot tell.
//!
//! Both conditions are needed: the threshold says what size of change matters, the intervals
//! say whether the change is more than repetition noise. A cell with one repetition has no
//! interval and stands for its value alone, so with n = 1 only the threshold decides.

use serde::Serialize;

use super::data::CellSummary;
use super::format::{human, percent};
use crate::results::Statistic;
use crate::spec::reference::Percent;

/// The rule as the command line prints it, for a threshold `t`.
pub fn rule(t: Percent) -> String {
    format!(
        "worse = change below -{t} and the two intervals do not overlap; \
         better = above +{t} and not overlapping; same otherwise"
    )
}

/// A measured (or expected) throughput: the headline value and the median's interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value_mbit_s: f64,
    pub ci_low_mbit_s: f64,
    pub ci_high_mbit_s: f64,
    /// Probability the interval covers the median; `None` for a single value.
    pub ci_coverage: Option<f64>,
    pub n: usize,
}

impl Estimate {
    /// A cell's headline value under `statistic` and its median's interval; `None` when every
    /// attempt of the cell failed.
    pub fn of_cell(cell: &CellSummary, statistic: Statistic) -> Option<Estimate> {
        let value = cell.value(statistic)?;
        let (low, high, coverage) = match cell.ci() {
            Some(ci) => (ci.low, ci.high, Some(ci.coverage)),
            None => (value, value, None),
        };
        Some(Estimate {
            value_mbit_s: value,
            ci_low_mbit_s: low,
            ci_high_mbit_s: high,
            ci_coverage: coverage,
            n: cell.n(),
        })
    }

    /// An exact value, such as a reference: an interval of one point.
    pub fn exact(value_mbit_s: f64) -> Estimate {
        Estimate {
            value_mbit_s,
            ci_low_mbit_s: value_mbit_s,
            ci_high_mbit_s: value_mbit_s,
            ci_coverage: None,
            n: 0,
        }
    }

    /// `66.76–67.14 (97%)`; a single repetition has no interval.
    pub fn interval_text(&self) -> String {
        match self.ci_coverage {
            Some(cov) => format!(
                "{}–{} ({})",
                human(self.ci_low_mbit_s),
                human(self.ci_high_mbit_s),
                percent(cov)
            ),
            None => "n=1".into(),
        }
    }

    fn overlaps(&self, other: &Estimate) -> bool {
        self.ci_low_mbit_s <= other.ci_high_mbit_s && other.ci_low_mbit_s <= self.ci_high_mbit_s
    }
}

/// The report's one judgement type. Four kinds of question get one:
///
/// - a measurement against an earlier one, by the rule above
///   ([`Better`](Self::Better) … [`New`](Self::New));
/// - a measurement against a reference's bounds ([`Within`](Self::Within),
///   [`Below`](Self::Below), [`Above`](Self::Above), or [`Missing`](Self::Missing));
/// - a study's published finding against this run ([`Agrees`](Self::Agrees) …
///   [`NotMeasured`](Self::NotMeasured));
/// - a study's question asked of this run ([`Yes`](Self::Yes), [`InPart`](Self::InPart),
///   [`No`](Self::No)).
///
/// Each variant has its own words ([`Verdict::as_str`]), which are also its JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "better")]
    Better,
    #[serde(rename = "same")]
    Same,
    #[serde(rename = "worse")]
    Worse,
    /// Expected (measured before, or named by a reference) but without a value now.
    #[serde(rename = "missing")]
    Missing,
    /// Measured now but not before: nothing to compare with.
    #[serde(rename = "new")]
    New,
    /// Within a reference's bounds.
    #[serde(rename = "within")]
    Within,
    /// Below a reference's lower bound.
    #[serde(rename = "below")]
    Below,
    /// Above a reference's upper bound.
    #[serde(rename = "above")]
    Above,
    #[serde(rename = "agrees")]
    Agrees,
    /// The direction holds, the size of the effect does not (or only one half holds).
    #[serde(rename = "agrees in part")]
    AgreesInPart,
    #[serde(rename = "disagrees")]
    Disagrees,
    /// The run lacks the cells the finding needs.
    #[serde(rename = "not measured in this run")]
    NotMeasured,
    #[serde(rename = "yes")]
    Yes,
    #[serde(rename = "in part")]
    InPart,
    #[serde(rename = "no")]
    No,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Better => "better",
            Self::Same => "same",
            Self::Worse => "worse",
            Self::Missing => "missing",
            Self::New => "new",
            Self::Within => "within",
            Self::Below => "below",
            Self::Above => "above",
            Self::Agrees => "agrees",
            Self::AgreesInPart => "agrees in part",
            Self::Disagrees => "disagrees",
            Self::NotMeasured => "not measured in this run",
            Self::Yes => "yes",
            Self::InPart => "in part",
            Self::No => "no",
        }
    }

    /// Whether this verdict fails a check: a drop, a value outside a reference's bounds, or
    /// a value that is no longer there (a check that passes when the measurement stopped
    /// working would check nothing).
    pub fn fails(self) -> bool {
        matches!(
            self,
            Self::Worse | Self::Missing | Self::Below | Self::Above
        )
    }

    /// As a check's table shows it: failing verdicts in capitals, so they stand out in a long
    /// table.
    pub fn check_text(self) -> String {
        if self.fails() {
            self.as_str().to_uppercase()
        } else {
            self.as_str().to_owned()
        }
    }
}

/// The change from `old` to `new`, as a fraction of `old`, and its verdict.
pub fn judge(old: &Estimate, new: &Estimate, threshold: Percent) -> (f64, Verdict) {
    let change = (new.value_mbit_s - old.value_mbit_s) / old.value_mbit_s;
    let t = threshold.fraction();
    let apart = !old.overlaps(new);
    let verdict = if apart && change < -t {
        Verdict::Worse
    } else if apart && change > t {
        Verdict::Better
    } else {
        Verdict::Same
    };
    (change, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, low: f64, high: f64) -> Estimate {
        Estimate {
            value_mbit_s: value,
            ci_low_mbit_s: low,
            ci_high_mbit_s: high,
            ci_coverage: Some(0.95),
            n: 6,
        }
    }

    fn pct(s: &str) -> Percent {
        s.parse().unwrap()
    }

    #[test]
    fn a_drop_beyond_the_threshold_with_apart_intervals_is_worse() {
        let (change, v) = judge(&est(100.0, 98.0, 102.0), &est(80.0, 79.0, 81.0), pct("5%"));
        assert!((change + 0.2).abs() < 1e-12);
        assert_eq!(v, Verdict::Worse);
        let (_, v) = judge(&est(80.0, 79.0, 81.0), &est(100.0, 98.0, 102.0), pct("5%"));
        assert_eq!(v, Verdict::Better);
    }

    #[test]
    fn overlapping_intervals_or_a_small_change_are_the_same() {
        // 20% down, but the intervals overlap: noise cannot be ruled out.
        let (_, v) = judge(&est(100.0, 70.0, 110.0), &est(80.0, 75.0, 90.0), pct("5%"));
        assert_eq!(v, Verdict::Same);
        // Apart, but only 3% down.
        let (_, v) = judge(&est(100.0, 99.5, 100.5), &est(97.0, 96.5, 97.5), pct("5%"));
        assert_eq!(v, Verdict::Same);
    }

    #[test]
    fn a_reference_is_a_point() {
        let r = Estimate::exact(100.0);
        assert_eq!(
            judge(&r, &est(85.0, 84.0, 86.0), pct("10%")).1,
            Verdict::Worse
        );
        assert_eq!(
            judge(&r, &est(85.0, 80.0, 101.0), pct("10%")).1,
            Verdict::Same
        );
        assert_eq!(
            judge(&r, &est(95.0, 94.0, 96.0), pct("10%")).1,
            Verdict::Same
        );
    }
}
