//! `netpipe/*.txt`: this run's one-pair curves in NetPIPE's classic output format, so tools
//! and people used to NetPIPE can read them, and so a run can serve as a baseline for another
//! (`--netpipe NAME=run/netpipe/<file>.txt`).
//!
//! One file per configuration and NetPIPE-like measure (ping-pong, stream, token) with data at
//! one pair. Columns as NetPIPE writes them: time per block (one way, s), Mbit/s, bits per
//! block, bytes per block, variance. Time is derived from the headline rate (`bits / rate`,
//! so for `token` it is the exchange time, as the pattern defines its rate); the latency line
//! is the smallest block's time, as in NetPIPE; variance is not aggregated and written as 0.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::emulator_stats::MediaReport;
use crate::report::error::ReportError;
use orchestrate_worker::record::Pattern;

pub struct Netpipe;

impl Exporter for Netpipe {
    fn export(
        &self,
        report: &Report,
        _media: &MediaReport,
    ) -> Result<Vec<RenderedFile>, ReportError> {
        let stat = report.statistic;
        let mut out = Vec::new();
        for t in &report.comparison {
            if !matches!(
                t.measure.pattern,
                Pattern::Pingpong | Pattern::Stream | Pattern::Token
            ) {
                continue;
            }
            for (col, config) in t.configs.iter().enumerate() {
                // (bytes per block, Mbit/s, time per block in s). Mbit/s is bit/µs.
                let rows: Vec<(u64, f64, f64)> = t
                    .rows
                    .iter()
                    .filter(|r| r.pairs == 1)
                    .filter_map(|r| Some((r.size_bytes, t.cell(r, col)?.value(stat)?)))
                    .filter(|(_, rate)| *rate > 0.0)
                    .map(|(size, rate)| (size, rate, (size * 8) as f64 / rate / 1e6))
                    .collect();
                let Some(&(_, _, smallest_time)) = rows.first() else {
                    continue;
                };
                let mut s = String::new();
                let _ = writeln!(
                    s,
                    "{}: {} ({})",
                    config.label(),
                    t.measure.label(),
                    stat.as_str()
                );
                s.push('\n');
                // As NetPIPE does: the latency line is the smallest block's time.
                let _ = writeln!(s, "Latency: {smallest_time:.6}");
                s.push_str("Time Mbits/s Bits/Block Bytes/Block Variance\n");
                for (size, rate, time) in rows {
                    let _ = writeln!(s, "{time:.6} {rate:.6} {} {size} {:.6}", size * 8, 0.0);
                }
                out.push(RenderedFile {
                    path: format!("netpipe/{}-{}.txt", slug(&config.label()), t.measure.slug())
                        .into(),
                    bytes: s.into_bytes(),
                });
            }
        }
        Ok(out)
    }
}

/// A file-name-safe form of a label: lower case, runs of other characters as one `-`.
fn slug(label: &str) -> String {
    let mut s = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_matches('-').to_owned()
}
