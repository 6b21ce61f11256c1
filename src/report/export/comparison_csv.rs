//! `comparison.csv`: the pivot — a row per (measurement, pairs, size), a group of columns per
//! configuration, then the winner and whether the win is clear.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::data::Config;
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};
use crate::report::media::MediaReport;

pub struct ComparisonCsv;

impl Exporter for ComparisonCsv {
    fn export(
        &self,
        report: &Report,
        _media: &MediaReport,
    ) -> Result<Vec<RenderedFile>, ReportError> {
        // Columns: every configuration of every table, in first-seen order.
        let mut configs: Vec<&Config> = Vec::new();
        for t in &report.comparison {
            for c in &t.configs {
                if !configs.contains(&c) {
                    configs.push(c);
                }
            }
        }
        let stat = report.statistic.as_str();
        let mut s = String::from("pattern,protocol,pairs,size_bytes");
        for c in &configs {
            let l = c.label();
            for suffix in [
                format!("{stat} [Mbit/s]"),
                "ci_low [Mbit/s]".into(),
                "ci_high [Mbit/s]".into(),
                "n".into(),
                "ratio to baseline".into(),
            ] {
                s.push(',');
                s.push_str(&csv_field(&format!("{l} {suffix}")));
            }
        }
        s.push_str(",winner,runner_up,significance\n");
        for t in &report.comparison {
            for row in &t.rows {
                let _ = write!(
                    s,
                    "{},{},{},{}",
                    t.measure.pattern.as_str(),
                    t.measure.protocol.as_str(),
                    row.pairs,
                    row.size_bytes
                );
                for c in &configs {
                    let col = t.configs.iter().position(|x| x == *c);
                    let cell = col.and_then(|i| t.cell(row, i));
                    let ci = cell.and_then(|c| c.ci());
                    let _ = write!(
                        s,
                        ",{},{},{},{},{}",
                        csv_f64(cell.and_then(|c| c.value(report.statistic))),
                        csv_f64(ci.map(|c| c.low)),
                        csv_f64(ci.map(|c| c.high)),
                        cell.map(|c| c.n().to_string()).unwrap_or_default(),
                        csv_f64(col.and_then(|i| row.ratio[i])),
                    );
                }
                let name = |i: Option<usize>| {
                    i.map(|i| csv_field(&t.configs[i].label()))
                        .unwrap_or_default()
                };
                let _ = writeln!(
                    s,
                    ",{},{},{}",
                    name(row.winner),
                    name(row.runner_up),
                    row.significance.as_str()
                );
            }
        }
        Ok(vec![RenderedFile {
            path: "comparison.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}
