//! `model.csv`: each token-test cell beside the analytic model's prediction, and for a cell
//! outside the tolerance its measured cause (`measured_cause`: the counters the run has, as
//! report.md gives them, `over the wire`, or `unexplained`; empty within the tolerance).

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};
use crate::report::predicted::ModelRow;

pub struct ModelCsv;

impl Exporter for ModelCsv {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        if report.model.is_empty() {
            return Ok(Vec::new());
        }
        let mut s = String::from(
            "topology,bonding,bond_driver,placement,pairs,size_bytes,measured_mbit_s,\
             model_mbit_s,measured_over_model,within_tolerance,bound,wire_capacity_mbit_s,\
             over_the_wire,measured_cause\n",
        );
        for r in &report.model {
            let k = &r.key;
            // A figure over the wire is left empty: it is not a measurement.
            let shown = (!r.over_the_wire()).then_some(r);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&k.config.topology),
                csv_field(&k.config.bonding),
                k.config.bond_driver.map(|d| d.as_str()).unwrap_or(""),
                k.config.placement.as_str(),
                k.pairs,
                k.size_bytes,
                csv_f64(shown.map(|r| r.measured_mbit_s)),
                csv_f64(Some(r.predicted_mbit_s)),
                csv_f64(shown.map(ModelRow::ratio)),
                r.within_tolerance(),
                csv_field(&r.bound),
                csv_f64(r.capacity_mbit_s),
                r.over_the_wire(),
                csv_field(&r.cause.as_ref().map(|c| c.text()).unwrap_or_default()),
            );
        }
        Ok(vec![RenderedFile {
            path: "model.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}
