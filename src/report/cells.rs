//! From samples to one summary per cell.

use std::collections::BTreeMap;

use super::aggregate::Aggregated;
use super::data::{CellKey, CellSummary, FailureReason, Latency};
use super::stats::rep_stats;

/// One summary per cell that has a sample, a failure or a latency figure, sorted by key. A
/// cell whose every attempt failed is kept, with no statistics and its failure count.
pub fn summarize(agg: &Aggregated) -> Vec<CellSummary> {
    #[derive(Default)]
    struct Acc {
        aggregates: Vec<f64>,
        pair_rates: Vec<f64>,
        failed_attempts: usize,
        failed_trials: u64,
    }
    let mut cells: BTreeMap<&CellKey, Acc> = BTreeMap::new();
    for s in &agg.samples {
        let acc = cells.entry(&s.key).or_default();
        acc.aggregates.push(s.aggregate_mbit_s);
        acc.pair_rates.extend_from_slice(&s.pair_mbit_s);
    }
    for f in &agg.failures {
        let acc = cells.entry(&f.key).or_default();
        acc.failed_attempts += 1;
        if let FailureReason::TrialErrors { trials, .. } = f.reason {
            acc.failed_trials += trials;
        }
    }
    cells
        .into_iter()
        .map(|(key, acc)| {
            let mut rates = acc.pair_rates.clone();
            rates.sort_by(f64::total_cmp);
            let mut repetitions = acc.aggregates.clone();
            repetitions.sort_by(f64::total_cmp);
            CellSummary {
                key: key.clone(),
                aggregate: rep_stats(&acc.aggregates),
                repetitions,
                per_pair_mean_mbit_s: (!rates.is_empty())
                    .then(|| rates.iter().sum::<f64>() / rates.len() as f64),
                per_pair_min_mbit_s: rates.first().copied(),
                latency: agg.latency.get(key).copied().unwrap_or(Latency::default()),
                tcp: agg.tcp.get(key).copied(),
                cpu: agg.cpu.get(key).copied(),
                failed_attempts: acc.failed_attempts,
                failed_trials: acc.failed_trials,
            }
        })
        .collect()
}
