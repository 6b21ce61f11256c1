//! This run's one-pair curves in NetPIPE's terms: per configuration and NetPIPE-like measure
//! (ping-pong, stream, token) with data at one pair, the blocks' sizes, rates and times. The
//! NetPIPE exporter writes them (`netpipe/*.txt`) and report.md links them, both from here, so
//! the two cannot drift apart.

use orchestrate_worker::record::Pattern;

use super::document::Report;

/// One configuration's curve for one measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Where the curve's file goes, relative to the output directory.
    pub path: String,
    /// `<configuration>: <measure> (<statistic>)`.
    pub heading: String,
    /// (bytes per block, Mbit/s, time per block in s), by size; never empty.
    pub rows: Vec<(u64, f64, f64)>,
}

/// Every one-pair curve of `report`, in table and configuration order.
pub fn curves(report: &Report) -> Vec<Curve> {
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
            // Time is derived from the headline rate; Mbit/s is bit/µs.
            let rows: Vec<(u64, f64, f64)> = t
                .rows
                .iter()
                .filter(|r| r.pairs == 1)
                .filter_map(|r| Some((r.size_bytes, t.cell(r, col)?.value(stat)?)))
                .filter(|(_, rate)| *rate > 0.0)
                .map(|(size, rate)| (size, rate, (size * 8) as f64 / rate / 1e6))
                .collect();
            if rows.is_empty() {
                continue;
            }
            out.push(Curve {
                path: format!("netpipe/{}-{}.txt", slug(&config.label()), t.measure.slug()),
                heading: format!(
                    "{}: {} ({})",
                    config.label(),
                    t.measure.label(),
                    stat.as_str()
                ),
                rows,
            });
        }
    }
    out
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
