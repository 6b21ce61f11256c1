//! Which figures a report has and what is in them; [`super::export::svg`] draws them.

use std::collections::BTreeMap;

use super::compare::ComparisonTable;
use super::data::Measure;
use super::document::Report;
use crate::results::Statistic;
use orchestrate_worker::record::Pattern;

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Confidence interval per point: (x, low, high).
    pub whiskers: Vec<(f64, f64, f64)>,
    /// Reference data from elsewhere (an imported baseline), drawn without markers.
    pub reference: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension, under `figures/`.
    pub stem: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub panels: Vec<Panel>,
}

const SIZE_AXIS: &str = "message size [bytes]";
const RATE_AXIS: &str = "aggregate throughput [Mbit/s]";

/// All figures of a report, in a fixed order.
pub fn figures(report: &Report) -> Vec<Figure> {
    let stat = report.statistic;
    let mut out = Vec::new();
    for t in &report.comparison {
        out.push(throughput_vs_size(t, stat));
        out.extend(throughput_vs_pairs(t, stat));
        out.extend(latency_vs_size(t));
    }
    if let Some(f) = netpipe_figure(report) {
        out.push(f);
    }
    out
}

/// Throughput vs size, one panel per pair count.
fn throughput_vs_size(t: &ComparisonTable, stat: Statistic) -> Figure {
    let m = t.measure;
    let mut panels: BTreeMap<u32, Vec<Series>> = BTreeMap::new();
    for (col, config) in t.configs.iter().enumerate() {
        let mut by_pairs: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
        for row in &t.rows {
            if let Some(v) = t.cell(row, col).and_then(|c| c.value(stat)) {
                by_pairs
                    .entry(row.pairs)
                    .or_default()
                    .push((row.size_bytes as f64, v));
            }
        }
        for (pairs, points) in by_pairs {
            panels.entry(pairs).or_default().push(Series {
                label: config.label(),
                points,
                whiskers: Vec::new(),
                reference: false,
            });
        }
    }
    Figure {
        stem: format!("throughput-vs-size-{}", m.slug()),
        title: format!(
            "Aggregate throughput vs message size ({}, {})",
            m.label(),
            stat.as_str()
        ),
        x_label: SIZE_AXIS.into(),
        y_label: RATE_AXIS.into(),
        x_log: true,
        y_log: false,
        panels: panels
            .into_iter()
            .map(|(pairs, series)| Panel {
                title: pairs_title(pairs),
                series,
            })
            .collect(),
    }
}

/// Throughput vs pairs at the largest size, with the median's confidence interval.
fn throughput_vs_pairs(t: &ComparisonTable, stat: Statistic) -> Option<Figure> {
    let m = t.measure;
    let largest = t.rows.iter().map(|r| r.size_bytes).max()?;
    let series = t
        .configs
        .iter()
        .enumerate()
        .map(|(col, config)| {
            let rows = t.rows.iter().filter(|r| r.size_bytes == largest);
            let mut s = Series {
                label: config.label(),
                points: Vec::new(),
                whiskers: Vec::new(),
                reference: false,
            };
            for row in rows {
                if let Some(c) = t.cell(row, col) {
                    if let Some(v) = c.value(stat) {
                        s.points.push((row.pairs as f64, v));
                    }
                    if let Some(ci) = c.ci() {
                        s.whiskers.push((row.pairs as f64, ci.low, ci.high));
                    }
                }
            }
            s
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    Some(Figure {
        stem: format!("throughput-vs-pairs-{}", m.slug()),
        title: format!(
            "Aggregate throughput vs pairs at {} ({}, {})",
            super::format::size(largest),
            m.label(),
            stat.as_str()
        ),
        x_label: "pairs [count]".into(),
        y_label: RATE_AXIS.into(),
        x_log: false,
        y_log: false,
        panels: vec![Panel {
            title: "bars: 95% confidence interval of the median".into(),
            series,
        }],
    })
}

/// Latency vs size at the smallest pair count (the least loaded case); none when no cell
/// has a latency.
fn latency_vs_size(t: &ComparisonTable) -> Option<Figure> {
    let m = t.measure;
    let pairs = t.rows.iter().map(|r| r.pairs).min()?;
    let series: Vec<Series> = t
        .configs
        .iter()
        .enumerate()
        .map(|(col, config)| Series {
            label: config.label(),
            points: t
                .rows
                .iter()
                .filter(|r| r.pairs == pairs)
                .filter_map(|r| {
                    let c = t.cell(r, col)?;
                    Some((r.size_bytes as f64, c.latency.p50_us.filter(|v| *v > 0.0)?))
                })
                .collect(),
            whiskers: Vec::new(),
            reference: false,
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        stem: format!("latency-vs-size-{}", m.slug()),
        title: format!("One-way latency vs message size ({}, p50)", m.label()),
        x_label: SIZE_AXIS.into(),
        y_label: "one-way latency [µs]".into(),
        x_log: true,
        y_log: true,
        panels: vec![Panel {
            title: pairs_title(pairs),
            series,
        }],
    })
}

/// A panel's title by its pair count: `1 pair`, `4 pairs`.
fn pairs_title(pairs: u32) -> String {
    format!("{pairs} {}", if pairs == 1 { "pair" } else { "pairs" })
}

/// NetPIPE's own view: throughput of one pair vs block size, this run's NetPIPE-like
/// patterns at one pair beside every imported baseline table.
fn netpipe_figure(report: &Report) -> Option<Figure> {
    let stat = report.statistic;
    let mut series = Vec::new();
    for t in &report.comparison {
        if !matches!(
            t.measure.pattern,
            Pattern::Pingpong | Pattern::Stream | Pattern::Token
        ) {
            continue;
        }
        for (col, config) in t.configs.iter().enumerate() {
            let points: Vec<(f64, f64)> = t
                .rows
                .iter()
                .filter(|r| r.pairs == 1)
                .filter_map(|r| Some((r.size_bytes as f64, t.cell(r, col)?.value(stat)?)))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    label: format!("{} ({})", config.label(), measure_name(t.measure)),
                    points,
                    whiskers: Vec::new(),
                    reference: false,
                });
            }
        }
    }
    for b in &report.netpipe {
        for (i, table) in b.tables.iter().enumerate() {
            series.push(Series {
                label: b.table_label(i),
                points: table
                    .rows
                    .iter()
                    .map(|r| (r.bytes_per_block as f64, r.mbit_s))
                    .collect(),
                whiskers: Vec::new(),
                reference: true,
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        stem: "netpipe".into(),
        title: "Throughput vs block size, NetPIPE style (1 pair)".into(),
        x_label: "block size [bytes]".into(),
        y_label: "throughput [Mbit/s]".into(),
        x_log: true,
        y_log: false,
        panels: vec![Panel {
            title: String::new(),
            series,
        }],
    })
}

fn measure_name(m: Measure) -> &'static str {
    m.pattern.as_str()
}
