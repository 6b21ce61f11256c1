//! Which figures a report has and what is in them; [`super::export::svg`] draws them.
//!
//! A panel holds at most [`MAX_SERIES`] series: more are split by placement (and, if still
//! too many, in chunks), so each line can be followed. A figure whose series all sit at one x
//! value is a bar chart, not a row of lone points. Every series has a [`Style`]: a colour and
//! a shape (marker and line pattern), the same for a configuration in every panel; when runs
//! are compared, the colour tells the run and the shape the configuration.

use std::collections::BTreeMap;

use super::compare::ComparisonTable;
use super::data::{Config, Measure};
use super::document::Report;
use super::format::size;
use super::intervals::IntervalNames;
use super::netpipe_curves::netpipe_rate;
use super::short_labels::ShortLabels;
use crate::results::Statistic;
use orchestrate_worker::record::Pattern;

/// Most series one panel holds before it is split.
pub const MAX_SERIES: usize = 6;

/// How a series is told apart: `colour` indexes a palette, `shape` a marker and a line
/// pattern together, so series differ in grey and in print too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Style {
    pub colour: usize,
    pub shape: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Interval per point: (x, low, high).
    pub whiskers: Vec<(f64, f64, f64)>,
    /// Reference data from elsewhere (an imported baseline), drawn without markers.
    pub reference: bool,
    pub style: Style,
    /// What a crowded panel is split by (the placement); references go in every part.
    pub facet: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

/// How a figure is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Lines with markers over x.
    Lines,
    /// One bar per series: every series has the one same x, named in the panel titles.
    Bars,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension, under `figures/`.
    pub stem: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A logarithmic x axis of sizes in bytes (ticks in B/KiB/MiB).
    pub x_log: bool,
    pub y_log: bool,
    /// Whether the x values are a few measured ones (sizes, pair counts) that several series
    /// share: their markers are then set a little apart sideways so none hides another.
    pub dodge: bool,
    pub chart: Chart,
    pub panels: Vec<Panel>,
    /// What the whiskers are, when there are any.
    pub note: Option<String>,
}

const SIZE_AXIS: &str = "message size [B]";
const RATE_AXIS: &str = "throughput [Mbit/s]";

/// All figures of a report, in a fixed order.
pub fn figures(report: &Report) -> Vec<Figure> {
    let stat = report.statistic;
    let mut out = Vec::new();
    // Series are named by report.md's legend table: short label and placement.
    let labels = ShortLabels::of(
        report.comparison.iter().flat_map(|t| &t.configs),
        &report.runs,
    );
    let name = |c: &Config| format!("{} {}", labels.get(c), c.placement.as_str());
    for t in &report.comparison {
        out.push(throughput_vs_size(t, stat, &name));
        out.extend(throughput_vs_pairs(t, stat, &name));
        out.extend(latency_vs_size(t, &name));
    }
    if let Some(f) = netpipe_figure(report, &name) {
        out.push(f);
    }
    let mut out: Vec<Figure> = out.into_iter().map(shaped).collect();
    // Its pairs are one point's, each to be followed: never split into panels.
    out.extend(progress_figure(report));
    out
}

/// How the pairs of the heaviest point delivered over time, with the common window the
/// aggregate counts marked: a pair served unevenly shows as a curve that is not flat.
fn progress_figure(report: &Report) -> Option<Figure> {
    let p = report.progress.as_ref()?;
    let peak = p
        .pairs
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|pt| pt.1))
        .fold(0.0, f64::max);
    let mut series: Vec<Series> = p
        .pairs
        .iter()
        .enumerate()
        .map(|(i, (pair, pts))| Series {
            label: format!("pair {pair}"),
            points: pts.clone(),
            whiskers: Vec::new(),
            reference: false,
            style: Style {
                colour: i,
                shape: i,
            },
            facet: None,
        })
        .collect();
    let (ws, we) = p.window_s;
    series.push(Series {
        label: "common window (what the aggregate counts)".into(),
        points: vec![(ws, peak), (ws, 0.0), (we, 0.0), (we, peak)],
        whiskers: Vec::new(),
        reference: true,
        style: Style {
            colour: p.pairs.len(),
            shape: 0,
        },
        facet: None,
    });
    let k = &p.key;
    Some(Figure {
        stem: format!("progress-{}", k.measure.slug()),
        title: format!(
            "Delivery over time: {}, {} {}, {} (point {}, repetition {})",
            k.config.label(),
            k.pairs,
            if k.pairs == 1 { "pair" } else { "pairs" },
            size(k.size_bytes),
            p.point,
            p.rep
        ),
        x_label: "time since the first pair started [s]".into(),
        y_label: format!(
            "payload per {:.0} ms [Mbit/s]",
            super::data::PROGRESS_BIN_S * 1e3
        ),
        x_log: false,
        y_log: false,
        dodge: false,
        chart: Chart::Lines,
        panels: vec![Panel {
            title: k.measure.label(),
            series,
        }],
        note: Some(
            "Each pair's payload per bin, from its worker's samples every 10 ms; the aggregate \
             counts what falls between the window's edges."
                .into(),
        ),
    })
}

/// A figure made readable: bars when it has one x value, else crowded panels split.
fn shaped(mut fig: Figure) -> Figure {
    if let Some(x) = only_x(&fig) {
        let at = if fig.x_log {
            size(x as u64)
        } else {
            pairs_title(x as u32)
        };
        fig.chart = Chart::Bars;
        for p in &mut fig.panels {
            p.title = if p.title.is_empty() {
                at.clone()
            } else {
                format!("{}, {at}", p.title)
            };
        }
        return fig;
    }
    fig.panels = fig.panels.into_iter().flat_map(facet).collect();
    fig
}

/// The x value every point of a figure has, if they all have the same one.
fn only_x(fig: &Figure) -> Option<f64> {
    let mut xs = fig
        .panels
        .iter()
        .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let first = xs.next()?;
    xs.all(|x| x == first).then_some(first)
}

/// Splits a panel with more than [`MAX_SERIES`] series by their facet (the placement), then
/// in chunks if a part is still crowded; reference series go in every part.
fn facet(panel: Panel) -> Vec<Panel> {
    let (references, own): (Vec<Series>, Vec<Series>) =
        panel.series.into_iter().partition(|s| s.reference);
    if own.len() <= MAX_SERIES {
        let mut series = own;
        series.extend(references);
        return vec![Panel {
            title: panel.title,
            series,
        }];
    }
    let mut groups: Vec<(Option<String>, Vec<Series>)> = Vec::new();
    for s in own {
        match groups.iter_mut().find(|(f, _)| *f == s.facet) {
            Some((_, g)) => g.push(s),
            None => groups.push((s.facet.clone(), vec![s])),
        }
    }
    let mut out = Vec::new();
    for (name, group) in groups {
        let chunks: Vec<&[Series]> = group.chunks(MAX_SERIES).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut parts: Vec<String> = [panel.title.clone(), name.clone().unwrap_or_default()]
                .into_iter()
                .filter(|t| !t.is_empty())
                .collect();
            if chunks.len() > 1 {
                parts.push(format!("part {} of {}", i + 1, chunks.len()));
            }
            let mut series = chunk.to_vec();
            series.extend(references.iter().cloned());
            out.push(Panel {
                title: parts.join(", "),
                series,
            });
        }
    }
    out
}

/// Gives each configuration its style, the same in every panel of a figure. Configurations
/// of compared runs share a shape and differ in colour.
#[derive(Default)]
struct StyleBook {
    runs: Vec<String>,
    shapes: Vec<String>,
}

impl StyleBook {
    fn config(&mut self, config: &Config, extra: &str) -> Style {
        let plain = Config {
            run: None,
            ..config.clone()
        };
        let shape = index_of(&mut self.shapes, &format!("{}{extra}", plain.label()));
        let colour = match &config.run {
            Some(run) => index_of(&mut self.runs, run),
            None => shape,
        };
        Style { colour, shape }
    }

    /// A series that is not a configuration of a run (an imported baseline).
    fn other(&mut self, label: &str) -> Style {
        let shape = index_of(&mut self.shapes, label);
        Style {
            colour: shape,
            shape,
        }
    }
}

fn index_of(list: &mut Vec<String>, item: &str) -> usize {
    list.iter().position(|x| x == item).unwrap_or_else(|| {
        list.push(item.to_owned());
        list.len() - 1
    })
}

fn series(label: String, style: Style, config: &Config) -> Series {
    Series {
        label,
        points: Vec::new(),
        whiskers: Vec::new(),
        reference: false,
        style,
        facet: Some(config.placement.as_str().to_owned()),
    }
}

/// Throughput vs size, one panel per pair count.
fn throughput_vs_size(t: &ComparisonTable, stat: Statistic, name: &Namer) -> Figure {
    let m = t.measure;
    let mut book = StyleBook::default();
    let mut panels: BTreeMap<u32, Vec<Series>> = BTreeMap::new();
    for (col, config) in t.configs.iter().enumerate() {
        let style = book.config(config, "");
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
            let mut s = series(name(config), style, config);
            s.points = points;
            panels.entry(pairs).or_default().push(s);
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
        // Small messages' throughput is orders of magnitude below large ones': on a linear
        // axis every 4 B and 64 B point would sit on zero.
        y_log: true,
        dodge: true,
        chart: Chart::Lines,
        panels: panels
            .into_iter()
            .map(|(pairs, series)| Panel {
                title: pairs_title(pairs),
                series,
            })
            .collect(),
        note: None,
    }
}

/// Throughput vs pairs at the largest size, with an interval for the median as whiskers.
fn throughput_vs_pairs(t: &ComparisonTable, stat: Statistic, name: &Namer) -> Option<Figure> {
    let m = t.measure;
    let largest = t.rows.iter().map(|r| r.size_bytes).max()?;
    let mut book = StyleBook::default();
    let rows: Vec<_> = t.rows.iter().filter(|r| r.size_bytes == largest).collect();
    let series: Vec<Series> = t
        .configs
        .iter()
        .enumerate()
        .map(|(col, config)| {
            let mut s = series(name(config), book.config(config, ""), config);
            for row in &rows {
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
    let names = IntervalNames::of(
        (0..t.configs.len()).flat_map(|c| rows.iter().filter_map(move |r| t.cell(r, c))),
    );
    let note = names.heading().map(|h| match names.other() {
        Some(o) => format!("Whiskers: {h}; where the tables mark †, {o}."),
        None => format!("Whiskers: {h}."),
    });
    Some(Figure {
        stem: format!("throughput-vs-pairs-{}", m.slug()),
        title: format!(
            "Aggregate throughput vs pairs at {} ({}, {})",
            size(largest),
            m.label(),
            stat.as_str()
        ),
        x_label: "pairs [count]".into(),
        y_label: RATE_AXIS.into(),
        x_log: false,
        y_log: false,
        dodge: true,
        chart: Chart::Lines,
        panels: vec![Panel {
            title: String::new(),
            series,
        }],
        note,
    })
}

/// Latency vs size at the smallest pair count (the least loaded case); none when no cell
/// has a latency.
fn latency_vs_size(t: &ComparisonTable, name: &Namer) -> Option<Figure> {
    let m = t.measure;
    let pairs = t.rows.iter().map(|r| r.pairs).min()?;
    let mut book = StyleBook::default();
    let series: Vec<Series> = t
        .configs
        .iter()
        .enumerate()
        .map(|(col, config)| {
            let mut s = series(name(config), book.config(config, ""), config);
            s.points = t
                .rows
                .iter()
                .filter(|r| r.pairs == pairs)
                .filter_map(|r| {
                    let c = t.cell(r, col)?;
                    Some((r.size_bytes as f64, c.latency.p50_us.filter(|v| *v > 0.0)?))
                })
                .collect();
            s
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        stem: format!("latency-vs-size-{}", m.slug()),
        title: format!(
            "One-way latency vs message size ({}, p50, {})",
            m.label(),
            pairs_title(pairs)
        ),
        x_label: SIZE_AXIS.into(),
        y_label: "one-way latency [µs]".into(),
        x_log: true,
        y_log: true,
        dodge: true,
        chart: Chart::Lines,
        panels: vec![Panel {
            title: String::new(),
            series,
        }],
        note: None,
    })
}

/// A configuration's name in a figure's legend.
type Namer<'a> = dyn Fn(&Config) -> String + 'a;

/// A panel's title by its pair count: `1 pair`, `4 pairs`.
fn pairs_title(pairs: u32) -> String {
    format!("{pairs} {}", if pairs == 1 { "pair" } else { "pairs" })
}

/// NetPIPE's own view: throughput of one pair vs block size, this run's NetPIPE-like
/// patterns at one pair beside every imported baseline table.
fn netpipe_figure(report: &Report, label: &Namer) -> Option<Figure> {
    let stat = report.statistic;
    let mut book = StyleBook::default();
    let mut all = Vec::new();
    for t in &report.comparison {
        if !matches!(
            t.measure.pattern,
            Pattern::Pingpong | Pattern::Stream | Pattern::Token
        ) {
            continue;
        }
        for (col, config) in t.configs.iter().enumerate() {
            let netpipe = netpipe_rate(t.measure.pattern);
            let points: Vec<(f64, f64)> = t
                .rows
                .iter()
                .filter(|r| r.pairs == 1)
                .filter_map(|r| Some((r.size_bytes as f64, t.cell(r, col)?.value(stat)?)))
                .map(|(size, rate)| (size, netpipe * rate))
                .collect();
            if !points.is_empty() {
                let name = measure_name(t.measure);
                let style = book.config(config, &format!(" ({name})"));
                let mut s = series(format!("{} ({name})", label(config)), style, config);
                s.points = points;
                all.push(s);
            }
        }
    }
    for b in &report.netpipe {
        for (i, table) in b.tables.iter().enumerate() {
            let label = b.table_label(i);
            all.push(Series {
                style: book.other(&label),
                label,
                points: table
                    .rows
                    .iter()
                    .map(|r| (r.bytes_per_block as f64, r.mbit_s * table.mbit_scale()))
                    .collect(),
                whiskers: Vec::new(),
                reference: true,
                facet: None,
            });
        }
    }
    if all.is_empty() {
        return None;
    }
    Some(Figure {
        stem: "netpipe".into(),
        title: "Throughput vs block size, NetPIPE style (1 pair)".into(),
        x_label: "block size [B]".into(),
        y_label: RATE_AXIS.into(),
        x_log: true,
        y_log: false,
        dodge: false,
        chart: Chart::Lines,
        panels: vec![Panel {
            title: String::new(),
            series: all,
        }],
        note: None,
    })
}

fn measure_name(m: Measure) -> &'static str {
    m.pattern.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::PlacementKind;

    fn config(topology: &str, placement: PlacementKind, run: Option<&str>) -> Config {
        Config {
            run: run.map(str::to_owned),
            topology: topology.into(),
            bonding: "none".into(),
            bond_driver: None,
            placement,
        }
    }

    fn line(c: &Config, book: &mut StyleBook, xs: &[f64]) -> Series {
        let mut s = series(c.label(), book.config(c, ""), c);
        s.points = xs.iter().map(|&x| (x, 1.0)).collect();
        s
    }

    fn figure(series: Vec<Series>) -> Figure {
        Figure {
            stem: "f".into(),
            title: "f".into(),
            x_label: "x [B]".into(),
            y_label: "y [Mbit/s]".into(),
            x_log: true,
            y_log: false,
            dodge: true,
            chart: Chart::Lines,
            panels: vec![Panel {
                title: "1 pair".into(),
                series,
            }],
            note: None,
        }
    }

    #[test]
    fn a_crowded_panel_is_split_by_placement() {
        let mut book = StyleBook::default();
        let mut all = Vec::new();
        for i in 0..5 {
            all.push(line(
                &config(&format!("t{i}"), PlacementKind::LocalWire, None),
                &mut book,
                &[4.0, 64.0],
            ));
        }
        for i in 0..3 {
            all.push(line(
                &config(&format!("t{i}"), PlacementKind::RemoteWire, None),
                &mut book,
                &[4.0, 64.0],
            ));
        }
        let fig = shaped(figure(all));
        let titles: Vec<&str> = fig.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["1 pair, local-wire", "1 pair, remote-wire"]);
        assert!(fig.panels.iter().all(|p| p.series.len() <= MAX_SERIES));
        assert_eq!(fig.chart, Chart::Lines);
    }

    #[test]
    fn one_x_value_makes_a_bar_chart_titled_by_it() {
        let mut book = StyleBook::default();
        let all: Vec<Series> = (0..8)
            .map(|i| {
                line(
                    &config(&format!("t{i}"), PlacementKind::LocalWire, None),
                    &mut book,
                    &[2097152.0],
                )
            })
            .collect();
        let fig = shaped(figure(all));
        assert_eq!(fig.chart, Chart::Bars);
        assert_eq!(fig.panels.len(), 1, "bars are labelled directly, not split");
        assert_eq!(fig.panels[0].title, "1 pair, 2 MiB");
    }

    #[test]
    fn compared_runs_differ_in_colour_and_share_shapes_per_configuration() {
        let mut book = StyleBook::default();
        let a = book.config(
            &config("topology-a", PlacementKind::LocalWire, Some("before")),
            "",
        );
        let b = book.config(
            &config("topology-b", PlacementKind::LocalWire, Some("before")),
            "",
        );
        let c = book.config(
            &config("topology-a", PlacementKind::LocalWire, Some("after")),
            "",
        );
        assert_eq!(a.shape, c.shape);
        assert_ne!(a.colour, c.colour);
        assert_ne!(a.shape, b.shape);
        assert_eq!(a.colour, b.colour);
    }
}
