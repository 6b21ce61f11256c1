//! Two sets of repetitions compared: how many times larger one is than the other, with a 95%
//! interval, and whether the difference is shown once every comparison of the report is
//! accounted for.
//!
//! Throughputs are positive and their noise scales with them, so the comparison is made on
//! their logarithms: the difference of the mean logarithms is the logarithm of the ratio of
//! the geometric means. Welch's t (unequal variances, Welch–Satterthwaite degrees of freedom)
//! gives its 95% interval and a two-sided p-value; exponentiated, the interval is one for the
//! ratio. Two repetitions per side are the least that has a variance.
//!
//! A report makes dozens of such comparisons, and at 5% each some would come out "clear" by
//! chance alone. [`holm`] applies Holm's step-down correction over all of them, which keeps
//! the chance of even one false "clear" in the whole report at 5% under any dependence between
//! the comparisons. (The median's order-statistic interval of [`super::stats`] has no p-value,
//! and a rank test needs more than six repetitions a side to survive the correction, hence
//! a t-test here.)

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The family-wise error rate the report's "clear" keeps.
pub const ALPHA: f64 = 0.05;

/// `a` against `b`: the ratio of their geometric means, its 95% interval and the p-value of
/// "the two are equal".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioEstimate {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
}

impl RatioEstimate {
    /// Whether the 95% interval leaves out 1 (no correction for other comparisons).
    pub fn excludes_one(&self) -> bool {
        self.low > 1.0 || self.high < 1.0
    }
}

/// `a` over `b` (see the module docs); `None` with fewer than two values on a side or a
/// value that is not positive.
pub fn ratio(a: &[f64], b: &[f64]) -> Option<RatioEstimate> {
    let (ma, va, na) = log_moments(a)?;
    let (mb, vb, nb) = log_moments(b)?;
    let diff = ma - mb;
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt();
    if se == 0.0 {
        // Both sides repeat one value exactly: the difference is what it is.
        let r = diff.exp();
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(RatioEstimate {
            ratio: r,
            low: r,
            high: r,
            p_value: p,
        });
    }
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf(0.975);
    let p_value = (2.0 * t.sf((diff / se).abs())).min(1.0);
    Some(RatioEstimate {
        ratio: diff.exp(),
        low: (diff - q * se).exp(),
        high: (diff + q * se).exp(),
        p_value,
    })
}

/// Mean and sample variance of the logarithms, and the count.
fn log_moments(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.len() < 2 || !v.iter().all(|x| x.is_finite() && *x > 0.0) {
        return None;
    }
    let n = v.len() as f64;
    // Sorted sums, so the result does not depend on the order repetitions arrived in.
    let mut logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var, n))
}

/// Holm's step-down procedure at [`ALPHA`]: which of the hypotheses with these p-values are
/// rejected, in the order given. The smallest p-value is held to `α/m`, the next to
/// `α/(m−1)`, and so on until one fails; it and all larger ones stand.
pub fn holm(p_values: &[f64]) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]).then(a.cmp(&b)));
    let mut rejected = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] <= ALPHA / (m - rank) as f64 {
            rejected[i] = true;
        } else {
            break;
        }
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_a_worked_example() {
        // Logarithms of a: 1,2,3,4,5,6 (mean 3.5, variance 3.5); of b: 0,0.5,...,2.5 (mean
        // 1.25, variance 0.875). se = sqrt(3.5/6 + 0.875/6) = 0.853913; t = 2.634927;
        // df = 0.729167² / (0.583333²/5 + 0.145833²/5) = 7.352941.
        let a: Vec<f64> = (1..=6).map(|i| f64::from(i).exp()).collect();
        let b: Vec<f64> = (0..6).map(|i| (f64::from(i) * 0.5).exp()).collect();
        let r = ratio(&a, &b).unwrap();
        assert!((r.ratio.ln() - 2.25).abs() < 1e-12);
        // t(7.35) two-sided p for 2.6349 is 0.0322; its 97.5% quantile 2.3432.
        assert!((r.p_value - 0.0322).abs() < 5e-4, "{}", r.p_value);
        let half = (r.high.ln() - r.low.ln()) / 2.0;
        assert!((half - 2.3432 * 0.853913).abs() < 2e-3, "{half}");
        assert!(r.excludes_one());
    }

    #[test]
    fn the_same_values_are_no_difference() {
        let a = [5.0, 6.0, 7.0];
        let r = ratio(&a, &a).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(r.p_value > 0.99);
        assert!(!r.excludes_one());
        let exact = ratio(&[2.0, 2.0], &[1.0, 1.0]).unwrap();
        assert_eq!(
            (exact.ratio, exact.low, exact.high, exact.p_value),
            (2.0, 2.0, 2.0, 0.0)
        );
    }

    #[test]
    fn too_few_or_impossible_values_have_no_estimate() {
        assert_eq!(ratio(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(ratio(&[1.0, 0.0], &[1.0, 2.0]), None);
        assert_eq!(ratio(&[1.0, f64::NAN], &[1.0, 2.0]), None);
    }

    #[test]
    fn holm_steps_down_until_one_fails() {
        // m = 4: 0.01 ≤ 0.0125, 0.015 ≤ 0.0167, 0.03 > 0.025 stops, so 0.04 stands too
        // although it would pass on its own at 0.05.
        assert_eq!(holm(&[0.03, 0.01, 0.04, 0.015]), [false, true, false, true]);
        // One comparison is held to 5% itself.
        assert_eq!(holm(&[0.049]), [true]);
        assert_eq!(holm(&[0.051]), [false]);
        assert!(holm(&[]).is_empty());
    }
}
