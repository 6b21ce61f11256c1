//! `summary.csv`: one row per cell with every statistic, for scripts and spreadsheets.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};

pub struct SummaryCsv;

impl Exporter for SummaryCsv {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let with_run = report.cells.iter().any(|c| c.key.config.run.is_some());
        let mut s = String::new();
        if with_run {
            s.push_str("run,");
        }
        s.push_str(
            "pattern,protocol,topology,bonding,bond_driver,placement,pairs,size_bytes,\
             n_ok,n_failed,failed_trials,best_mbit_s,median_mbit_s,mean_mbit_s,\
             ci_low_mbit_s,ci_high_mbit_s,ci_coverage,per_pair_mean_mbit_s,per_pair_min_mbit_s,\
             latency_p50_us,latency_p90_us,latency_p99_us,latency_max_us\n",
        );
        for c in &report.cells {
            let k = &c.key;
            if with_run {
                s.push_str(&csv_field(k.config.run.as_deref().unwrap_or("")));
                s.push(',');
            }
            let agg = c.aggregate;
            let ci = c.ci();
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                k.measure.pattern.as_str(),
                k.measure.protocol.as_str(),
                csv_field(&k.config.topology),
                csv_field(&k.config.bonding),
                k.config.bond_driver.map(|d| d.as_str()).unwrap_or(""),
                k.config.placement.as_str(),
                k.pairs,
                k.size_bytes,
                c.n(),
                c.failed_attempts,
                c.failed_trials,
                csv_f64(agg.map(|a| a.best)),
                csv_f64(agg.map(|a| a.median)),
                csv_f64(agg.map(|a| a.mean)),
                csv_f64(ci.map(|c| c.low)),
                csv_f64(ci.map(|c| c.high)),
                csv_f64(ci.map(|c| c.coverage)),
                csv_f64(c.per_pair_mean_mbit_s),
                csv_f64(c.per_pair_min_mbit_s),
                csv_f64(c.latency.p50_us),
                csv_f64(c.latency.p90_us),
                csv_f64(c.latency.p99_us),
                csv_f64(c.latency.max_us),
            );
        }
        Ok(vec![RenderedFile {
            path: "summary.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}
