//! This run's one-pair curves in NetPIPE's terms: per configuration and NetPIPE-like measure
//! (ping-pong, stream, token) with data at one pair, the blocks' sizes, rates and times. The
//! NetPIPE exporter writes them (`netpipe/*.txt`) and report.md links them, both from here, so
//! the two cannot drift apart.

use orchestrate_worker::record::Pattern;

use super::document::Report;
use super::netpipe::NetpipeTable;

/// One configuration's curve for one measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Where the curve's file goes, relative to the output directory.
    pub path: String,
    /// `<configuration>: <measure> (<statistic>)`.
    pub heading: String,
    /// (bytes per block, Mbit/s, time per block in s), by size; never empty.
    pub rows: Vec<(u64, f64, f64)>,
    pub pattern: Pattern,
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
        let netpipe = netpipe_rate(t.measure.pattern);
        for (col, config) in t.configs.iter().enumerate() {
            // Time is derived from the headline rate; Mbit/s is bit/µs.
            let rows: Vec<(u64, f64, f64)> = t
                .rows
                .iter()
                .filter(|r| r.pairs == 1)
                .filter_map(|r| Some((r.size_bytes, netpipe * t.cell(r, col)?.value(stat)?)))
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
                pattern: t.measure.pattern,
            });
        }
    }
    out
}

/// NetPIPE's rate over the report's for `pattern`. The report counts the payload a pair
/// delivers one way per second; NetPIPE's ping-pong counts a block per one-way time, and a
/// block crosses twice per round trip: twice the report's figure. The others agree.
pub fn netpipe_rate(pattern: Pattern) -> f64 {
    match pattern {
        Pattern::Pingpong => 2.0,
        _ => 1.0,
    }
}

/// The pattern a NetPIPE table measured, from its title: ping-pong or streaming (NetPIPE's
/// two modes); `None` when the title names neither.
pub fn table_pattern(table: &NetpipeTable) -> Option<Pattern> {
    let title = table.title.as_deref()?.to_ascii_lowercase();
    if title.contains("ping") {
        Some(Pattern::Pingpong)
    } else if title.contains("stream") {
        Some(Pattern::Stream)
    } else {
        None
    }
}

/// One block size both a table and a curve of the same pattern have: (bytes, the table's
/// Mbit/s in 10^6 bit/s, the curve's).
pub fn against(table: &NetpipeTable, curve: &Curve) -> Vec<(u64, f64, f64)> {
    if table_pattern(table) != Some(curve.pattern) {
        return Vec::new();
    }
    let scale = table.mbit_scale();
    curve
        .rows
        .iter()
        .filter_map(|&(bytes, rate, _)| {
            let row = table.rows.iter().find(|r| r.bytes_per_block == bytes)?;
            Some((bytes, row.mbit_s * scale, rate))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use orchestrate_worker::netpipe::{self, NetpipeRow};

    fn row(bytes: u64, time_s: f64, mbit_s: f64) -> NetpipeRow {
        NetpipeRow {
            time_s,
            mbit_s,
            bits_per_block: bytes * 8,
            bytes_per_block: bytes,
            variance: 0.0,
        }
    }

    #[test]
    fn a_table_meets_the_curve_of_its_mode_in_decimal_megabits() {
        let text = "TCP/IP Network performance: Ping/pong of packets between nodes\n\
                    0.001612 77.546241 131072 16384 0.0\n\
                    0.000256 30.536154 8192 1024 0.0\n";
        let table = &netpipe::parse(text).unwrap()[0];
        let curve = |pattern| Curve {
            path: String::new(),
            heading: String::new(),
            rows: vec![(1024, 31.5, 0.0), (16384, 81.0, 0.0), (4096, 58.0, 0.0)],
            pattern,
        };
        let rows = against(table, &curve(Pattern::Pingpong));
        assert_eq!(rows.len(), 2, "only the sizes both have");
        // 77.55 binary megabits are 81.3 decimal ones.
        assert_eq!(rows[1].0, 16384);
        assert!((rows[1].1 - 81.31).abs() < 0.01, "{rows:?}");
        assert_eq!(rows[1].2, 81.0);
        assert!(against(table, &curve(Pattern::Stream)).is_empty());
        let untitled = NetpipeTable {
            title: None,
            latency_s: None,
            rows: vec![row(1024, 1e-4, 80.0)],
        };
        assert_eq!(table_pattern(&untitled), None);
    }
}
