//! Small-sample statistics over repetitions: median, a distribution-free confidence interval
//! for it, best and mean.
//!
//! The confidence interval is the order-statistic (binomial) interval for the median: with `n`
//! sorted samples, `[x_(k), x_(n+1-k)]` covers the true median with probability
//! `1 - 2·P(B ≤ k-1)`, `B ~ Binomial(n, 1/2)`, whatever the distribution. No resampling, so no
//! seed and nothing random in the report. It needs `n ≥ 6` to reach 95%; below that the widest
//! interval, `[min, max]`, is reported with the coverage it really has (50% at n = 2, 75% at
//! 3, 87.5% at 4, 93.75% at 5) and the report says so. One sample has no interval.

/// An interval for the median and the probability that it covers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianCi {
    pub low: f64,
    pub high: f64,
    /// Coverage probability of the interval, in (0, 1].
    pub coverage: f64,
}

impl MedianCi {
    /// Whether the interval reaches the 95% the report promises.
    pub fn is_95(&self) -> bool {
        self.coverage >= 0.95
    }

    pub fn overlaps(&self, other: &MedianCi) -> bool {
        self.low <= other.high && other.low <= self.high
    }
}

/// What an interval for the median is, which follows from the number of repetitions alone:
/// headings and notes name it rather than promise 95% for every interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntervalKind {
    /// `n ≥ 6`: the order-statistic interval reaching at least 95%.
    Ci95,
    /// `2 ≤ n ≤ 5`: no interval reaches 95%; `[min, max]` with the coverage it has.
    Range,
}

impl IntervalKind {
    /// The kind of interval `n` repetitions give; `None` for fewer than 2.
    pub fn for_n(n: usize) -> Option<Self> {
        match n {
            0 | 1 => None,
            2..=5 => Some(Self::Range),
            _ => Some(Self::Ci95),
        }
    }

    /// What the interval is, for a heading: `the median's 95% confidence interval (order
    /// statistics, n=6)` or `[min, max], too few repetitions for 95% (it covers the median
    /// with 75% at n=3)`. `ns` are the repetition counts of the cells it describes, sorted
    /// and without duplicates.
    pub fn describe(self, ns: &[usize]) -> String {
        let counts: Vec<String> = ns.iter().map(|n| format!("n={n}")).collect();
        match self {
            Self::Ci95 => format!(
                "the median's 95% confidence interval (order statistics, {})",
                counts.join(", ")
            ),
            Self::Range => {
                let cover: Vec<String> = ns
                    .iter()
                    .map(|&n| format!("{} at n={n}", super::format::percent(coverage(n, 1))))
                    .collect();
                format!(
                    "[min, max], too few repetitions for 95% (it covers the median with {})",
                    cover.join(", ")
                )
            }
        }
    }
}

/// Summary of one set of repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepStats {
    pub n: usize,
    pub best: f64,
    pub median: f64,
    pub mean: f64,
    pub ci: Option<MedianCi>,
}

/// Statistics of `values`, or `None` when there are none. NaNs are not expected (rates come
/// from positive windows) and sort last.
pub fn rep_stats(values: &[f64]) -> Option<RepStats> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    // Sum in sorted order so the mean does not depend on the order records arrived in.
    let mean = v.iter().sum::<f64>() / n as f64;
    Some(RepStats {
        n,
        best: v[n - 1],
        median,
        mean,
        ci: median_ci(&v),
    })
}

/// Order-statistic interval for the median of sorted `v` (see the module docs).
fn median_ci(sorted: &[f64]) -> Option<MedianCi> {
    let n = sorted.len();
    if n < 2 {
        return None;
    }
    // Largest k with coverage >= 95%; k = 1 (min..max) when none reaches it.
    let mut best_k = 1;
    for k in 1..=n / 2 {
        if coverage(n, k) >= 0.95 {
            best_k = k;
        } else {
            break;
        }
    }
    Some(MedianCi {
        low: sorted[best_k - 1],
        high: sorted[n - best_k],
        coverage: coverage(n, best_k),
    })
}

/// `1 - 2·P(B ≤ k-1)` for `B ~ Binomial(n, 1/2)`.
fn coverage(n: usize, k: usize) -> f64 {
    let tail: f64 = (0..k).map(|i| binomial(n, i)).sum::<f64>() * 0.5f64.powi(n as i32);
    1.0 - 2.0 * tail
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_samples_report_their_real_coverage() {
        assert!(rep_stats(&[5.0]).unwrap().ci.is_none());
        let two = rep_stats(&[1.0, 3.0]).unwrap();
        assert_eq!(two.median, 2.0);
        assert_eq!(two.ci.unwrap().coverage, 0.5);
        let five = rep_stats(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap().ci.unwrap();
        assert_eq!((five.low, five.high, five.coverage), (1.0, 5.0, 0.9375));
        assert!(!five.is_95());
    }

    #[test]
    fn six_samples_reach_95_percent_with_the_extremes() {
        let ci = rep_stats(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
            .unwrap()
            .ci
            .unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 6.0));
        assert!((ci.coverage - 0.96875).abs() < 1e-12);
    }

    #[test]
    fn larger_samples_narrow_the_interval() {
        // n = 20: the classic table gives ranks 6 and 15 (coverage 95.86%).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = rep_stats(&v).unwrap().ci.unwrap();
        assert_eq!((ci.low, ci.high), (6.0, 15.0));
        assert!((ci.coverage - 0.958611).abs() < 1e-6);
    }

    #[test]
    fn interval_kinds_follow_the_repetitions_and_say_what_they_are() {
        assert_eq!(IntervalKind::for_n(1), None);
        assert_eq!(IntervalKind::for_n(3), Some(IntervalKind::Range));
        assert_eq!(IntervalKind::for_n(6), Some(IntervalKind::Ci95));
        for n in 2..12 {
            let v: Vec<f64> = (0..n).map(f64::from).collect();
            let ci = rep_stats(&v).unwrap().ci.unwrap();
            let kind = IntervalKind::for_n(n as usize).unwrap();
            assert_eq!(kind == IntervalKind::Ci95, ci.is_95(), "n={n}");
        }
        assert_eq!(
            IntervalKind::Range.describe(&[2, 3]),
            "[min, max], too few repetitions for 95% (it covers the median with 50% at n=2, 75% at n=3)"
        );
        assert_eq!(
            IntervalKind::Ci95.describe(&[6]),
            "the median's 95% confidence interval (order statistics, n=6)"
        );
    }

    #[test]
    fn best_and_mean() {
        let s = rep_stats(&[2.0, 8.0, 5.0]).unwrap();
        assert_eq!((s.best, s.mean, s.median), (8.0, 5.0, 5.0));
    }
}
