//! `comparison.csv`: the comparison in long form — one row per cell × configuration, plain
//! snake_case columns with units in their names, so it loads into pandas, R or Polars as it
//! is and pivots there. Rows follow the report's tables: measurement, then (pairs, size), then
//! configuration with the baseline first.
//!
//! | column | what |
//! |---|---|
//! | `run` | the run's label; only when several runs are compared |
//! | `pattern`, `protocol`, `pairs`, `size_bytes` | the measurement and the row |
//! | `configuration` | topology, bonding and placement in words (the report's column heading) |
//! | `topology`, `bonding`, `bond_driver`, `placement` | the configuration's parts |
//! | `statistic` | which statistic `value_mbit_s` is: `best`, `median` or `mean` |
//! | `value_mbit_s` | aggregate throughput, Mbit/s (10^6 bit/s); empty when every attempt failed |
//! | `ci_low_mbit_s`, `ci_high_mbit_s`, `ci_coverage` | the median's interval and the probability it covers the median |
//! | `n` | successful repetitions |
//! | `baseline` | the configuration this one is compared with (`run: configuration` when runs are compared); empty for baselines |
//! | `ratio_to_baseline` | `value_mbit_s` over the baseline's |
//! | `rank` | 1 for the highest value among the row's configurations with the same placement (its alternatives) |
//! | `winner_significance` | whether the winner among those alternatives is told apart from its runner-up: `clear` (Welch on the logarithms, Holm-corrected over the report), `not_shown`, `same_path` (a tie: the same hops and wires), `too_few` (n < 3) or `alone` |
//! | `ratio_ci_low`, `ratio_ci_high` | the 95% interval of the ratio to the baseline (of geometric means, Welch) |

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::compare::{ComparisonRow, ComparisonTable};
use crate::report::data::Config;
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};
use crate::results::Statistic;

pub struct ComparisonCsv;

const COLUMNS: &str = "pattern,protocol,pairs,size_bytes,configuration,topology,bonding,\
                       bond_driver,placement,statistic,value_mbit_s,ci_low_mbit_s,ci_high_mbit_s,\
                       ci_coverage,n,baseline,ratio_to_baseline,rank,winner_significance,\
                       ratio_ci_low,ratio_ci_high";

impl Exporter for ComparisonCsv {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let with_run = report.cells.iter().any(|c| c.key.config.run.is_some());
        let mut s = String::new();
        if with_run {
            s.push_str("run,");
        }
        s.push_str(COLUMNS);
        s.push('\n');
        for t in &report.comparison {
            for row in &t.rows {
                let ranks = ranks(t, row, report.statistic);
                for (col, rank) in ranks.into_iter().enumerate() {
                    if row.cells[col].is_some() {
                        line(&mut s, t, row, col, rank, report.statistic, with_run);
                    }
                }
            }
        }
        Ok(vec![RenderedFile {
            path: "comparison.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}

/// One configuration's cell in one row.
fn line(
    s: &mut String,
    t: &ComparisonTable,
    row: &ComparisonRow,
    col: usize,
    rank: Option<usize>,
    statistic: Statistic,
    with_run: bool,
) {
    let config = &t.configs[col];
    let cell = t.cell(row, col);
    let ci = cell.and_then(|c| c.ci());
    if with_run {
        s.push_str(&csv_field(config.run.as_deref().unwrap_or("")));
        s.push(',');
    }
    let _ = writeln!(
        s,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        t.measure.pattern.as_str(),
        t.measure.protocol.as_str(),
        row.pairs,
        row.size_bytes,
        csv_field(&without_run(config)),
        csv_field(&config.topology),
        csv_field(&config.bonding),
        config.bond_driver.map(|d| d.as_str()).unwrap_or(""),
        config.placement.as_str(),
        statistic.as_str(),
        csv_f64(cell.and_then(|c| c.value(statistic))),
        csv_f64(ci.map(|c| c.low)),
        csv_f64(ci.map(|c| c.high)),
        csv_f64(ci.map(|c| c.coverage)),
        cell.map(|c| c.n()).unwrap_or(0),
        row.baseline[col]
            .map(|b| csv_field(&t.configs[b].label()))
            .unwrap_or_default(),
        csv_f64(row.ratio[col]),
        rank.map(|r| r.to_string()).unwrap_or_default(),
        row.contest_of(&t.configs, col)
            .map(|c| c.significance.slug())
            .unwrap_or_default(),
        csv_f64(row.ratio_interval[col].map(|i| i.low)),
        csv_f64(row.ratio_interval[col].map(|i| i.high)),
    );
}

/// The configuration's label without its run, which has a column of its own.
fn without_run(c: &Config) -> String {
    Config {
        run: None,
        ..c.clone()
    }
    .label()
}

/// Each column's rank by value among the row's columns of its placement, 1 for the highest;
/// ties keep column order, as the winner does. `None` for columns without a value.
fn ranks(t: &ComparisonTable, row: &ComparisonRow, statistic: Statistic) -> Vec<Option<usize>> {
    let mut out = vec![None; t.configs.len()];
    for contest in &row.contests {
        let mut ranked: Vec<(usize, f64)> = (0..t.configs.len())
            .filter(|&col| t.configs[col].placement == contest.placement)
            .filter_map(|col| t.cell(row, col)?.value(statistic).map(|v| (col, v)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (rank, (col, _)) in ranked.into_iter().enumerate() {
            out[col] = Some(rank + 1);
        }
    }
    out
}
