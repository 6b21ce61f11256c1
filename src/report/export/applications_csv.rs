//! `applications.csv`: one row per collective cell (configuration, collective, size, and who
//! ran it: the worker, or an MPI library on the same cluster): its
//! time per iteration, the interval, the ranks' spread, the ratio to the baseline and the
//! model beside it.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};

pub struct ApplicationsCsv;

impl Exporter for ApplicationsCsv {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let Some(a) = &report.applications else {
            return Ok(Vec::new());
        };
        let mut s = String::from(
            "topology,bonding,placement,ranks,pattern,algorithm,implementation,library,size_bytes,statistic,time_us,\
             ci_low_us,ci_high_us,ci_coverage,repetitions,not_counted,fastest_rank_us,\
             slowest_rank_us,iterations,tcp_retransmissions,to_baseline,model_us,\
             measured_over_model,model_limit\n",
        );
        for c in a.cells.iter().chain(&a.peer_cells) {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&c.topology),
                csv_field(&c.bonding),
                c.placement.as_str(),
                c.ranks,
                c.pattern.as_str(),
                csv_field(&c.algorithm),
                csv_field(c.implementation.as_deref().unwrap_or("worker")),
                csv_field(c.library.as_deref().unwrap_or_default()),
                c.size_bytes,
                a.statistic.as_str(),
                csv_f64(Some(c.value_us)),
                csv_f64(c.interval.map(|i| i.low)),
                csv_f64(c.interval.map(|i| i.high)),
                csv_f64(c.interval.map(|i| i.coverage)),
                c.repetitions.len(),
                c.not_counted,
                csv_f64(Some(c.fastest_rank_us)),
                csv_f64(Some(c.slowest_rank_us)),
                c.iterations,
                c.retransmissions.map(|r| r.to_string()).unwrap_or_default(),
                csv_f64(c.to_baseline),
                csv_f64(c.model.as_ref().map(|m| m.0)),
                csv_f64(c.model.as_ref().map(|m| c.value_us / m.0)),
                csv_field(c.model.as_ref().map_or("", |m| m.1.as_str())),
            );
        }
        Ok(vec![RenderedFile {
            path: "applications.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}
