//! `report.md`: setup, method, findings, tables, figures, failures and environment — the part
//! of a paper's evaluation section that can be written from data.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::compare::ComparisonTable;
use crate::report::data::{CellKey, CellSummary};
use crate::report::document::{Report, RunInfo};
use crate::report::error::ReportError;
use crate::report::figures::figures;
use crate::report::format::{human, md_cell, percent, ratio, size, unix_ns};
use crate::report::media::{ConfigMedia, LatenessSource, MediaReport};
use crate::report::predicted::TOLERANCE;
use crate::report::references;
use crate::results::Statistic;

pub struct Markdown;

impl Exporter for Markdown {
    fn export(
        &self,
        report: &Report,
        media: &MediaReport,
    ) -> Result<Vec<RenderedFile>, ReportError> {
        let mut s = String::new();
        let title = match report.runs.as_slice() {
            [one] => one.label.clone(),
            many => format!("comparison of {} runs", many.len()),
        };
        let _ = writeln!(s, "# Report: {}\n", md_cell(&title));
        setup(&mut s, report);
        method(&mut s, report.statistic);
        s.push_str("## Findings\n\n");
        for f in &report.findings {
            let _ = writeln!(s, "- {f}");
        }
        s.push('\n');
        s.push_str(&references::markdown(&report.references, report.statistic));
        for t in &report.comparison {
            comparison(&mut s, t, report.statistic);
        }
        against_model(&mut s, report, media);
        the_medium(&mut s, report, media);
        against_paper(&mut s, report);
        latency(&mut s, report);
        figures_section(&mut s, report);
        failures(&mut s, report);
        netpipe(&mut s, report);
        environment(&mut s, report);
        Ok(vec![RenderedFile {
            path: "report.md".into(),
            bytes: s.into_bytes(),
        }])
    }
}

/// A Markdown table with columns padded to equal width, so the file reads well as text too.
fn table(s: &mut String, header: &[String], rows: &[Vec<String>], right: &[bool]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let line = |s: &mut String, cells: &[String]| {
        s.push('|');
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if right[i] {
                let _ = write!(s, " {}{} |", " ".repeat(pad), c);
            } else {
                let _ = write!(s, " {}{} |", c, " ".repeat(pad));
            }
        }
        s.push('\n');
    };
    line(s, header);
    s.push('|');
    for (i, w) in widths.iter().enumerate() {
        if right[i] {
            let _ = write!(s, " {}: |", "-".repeat(w - 1));
        } else {
            let _ = write!(s, " {} |", "-".repeat(*w));
        }
    }
    s.push('\n');
    for r in rows {
        line(s, r);
    }
    s.push('\n');
}

fn setup(s: &mut String, report: &Report) {
    s.push_str("## Setup\n\n");
    for run in &report.runs {
        if report.runs.len() > 1 {
            let _ = writeln!(s, "### {}\n", md_cell(&run.label));
        }
        run_facts(s, run);
    }
}

fn run_facts(s: &mut String, run: &RunInfo) {
    let m = &run.manifest;
    let mut facts: Vec<(String, String)> = Vec::new();
    if let Some(e) = &m.experiment {
        facts.push(("experiment".into(), e.clone()));
    }
    if let Some(t) = &m.tool {
        let mut v = t.name.clone().unwrap_or_else(|| "orchestrate".into());
        if let Some(ver) = &t.version {
            let _ = write!(v, " {ver}");
        }
        if let Some(c) = &t.commit {
            let _ = write!(v, " ({c})");
        }
        facts.push(("tool".into(), v));
    }
    if let Some(seed) = m.seed {
        facts.push(("seed".into(), seed.to_string()));
    }
    if let Some(t) = m.started_unix_ns {
        facts.push(("started".into(), unix_ns(t)));
    }
    if let Some(t) = m.finished_unix_ns {
        facts.push(("finished".into(), unix_ns(t)));
    }
    if let (Some(a), Some(b)) = (m.started_unix_ns, m.finished_unix_ns) {
        facts.push((
            "duration".into(),
            format!("{} s", human(b.saturating_sub(a) as f64 / 1e9)),
        ));
    }
    facts.push((
        "baseline".into(),
        run.baseline.clone().unwrap_or_else(|| "none".into()),
    ));
    if !m.topologies.is_empty() {
        let list: Vec<String> = m
            .topologies
            .iter()
            .map(|t| match m.bond_drivers.get(t).copied().flatten() {
                Some(d) => format!("{t} ({} bonding)", d.as_str()),
                None => t.clone(),
            })
            .collect();
        facts.push(("topologies".into(), list.join(", ")));
    }
    facts.push(("records".into(), run.records.to_string()));
    facts.push(("point attempts".into(), run.point_attempts.to_string()));
    let rows: Vec<Vec<String>> = facts
        .into_iter()
        .map(|(k, v)| vec![k, md_cell(&v)])
        .collect();
    table(s, &["fact".into(), "value".into()], &rows, &[false, false]);
}

fn method(s: &mut String, statistic: Statistic) {
    let _ = writeln!(
        s,
        "## Method\n\n\
         - Aggregate throughput of a point is the sum over its pairs of the payload each moved \
         inside the window in which all pairs were running (latest pair start to earliest pair \
         end); a trial that straddles an edge counts in proportion to its overlap. Records of \
         the timing side only: the receiver for `stream`, the client otherwise.\n\
         - Headline statistic: **{}** of the repetitions{}. Tables also give the median's \
         distribution-free 95% confidence interval (order statistics of the binomial \
         distribution); with fewer than 6 repetitions the interval is [min, max] and is marked \
         † with its real coverage.\n\
         - A winner is *clear* when its median's interval does not overlap the runner-up's; \
         *CIs overlap* means the data do not show a difference; *n<3* means too few \
         repetitions to say.\n\
         - Latency: percentiles (nearest rank) of the per-trial one-way latency over all \
         successful trials of a cell.\n\
         - Failed point attempts are listed below and never enter the statistics.\n\
         - Sizes: 1 KB = 1024 bytes; rates: 1 Mbit/s = 10^6 bit/s.\n",
        statistic.as_str(),
        if statistic == Statistic::Best {
            " (as the 1996 study reported)"
        } else {
            ""
        }
    );
}

fn value_cell(c: Option<&CellSummary>, stat: Statistic) -> String {
    let Some(c) = c else {
        return String::new();
    };
    let failed = if c.failed_attempts > 0 {
        format!(" ({} failed)", c.failed_attempts)
    } else {
        String::new()
    };
    let Some(v) = c.value(stat) else {
        return format!("—{failed}");
    };
    match c.ci() {
        Some(ci) => format!(
            "{} [{}, {}]{}{failed}",
            human(v),
            human(ci.low),
            human(ci.high),
            if ci.is_95() { "" } else { "†" }
        ),
        None => format!("{} (n=1){failed}", human(v)),
    }
}

fn comparison(s: &mut String, t: &ComparisonTable, stat: Statistic) {
    let _ = writeln!(
        s,
        "## Aggregate throughput: {} {}\n\n{} aggregate throughput in Mbit/s [95% CI of the median]; \
         ratio to the baseline beside each configuration.\n",
        t.measure.pattern.as_str(),
        t.measure.protocol.as_str().to_uppercase(),
        capitalised(stat.as_str())
    );
    let has_ratio: Vec<bool> = (0..t.configs.len())
        .map(|c| t.rows.iter().any(|r| r.ratio[c].is_some()))
        .collect();
    let mut header = vec!["pairs".to_string(), "size".to_string()];
    let mut right = vec![true, true];
    for (c, config) in t.configs.iter().enumerate() {
        header.push(md_cell(&config.label()));
        right.push(true);
        if has_ratio[c] {
            header.push("×".into());
            right.push(true);
        }
    }
    header.extend(["winner".to_string(), "difference".to_string()]);
    right.extend([false, false]);
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|row| {
            let mut r = vec![row.pairs.to_string(), size(row.size_bytes)];
            for (c, &with_ratio) in has_ratio.iter().enumerate() {
                r.push(value_cell(t.cell(row, c), stat));
                if with_ratio {
                    r.push(row.ratio[c].map(ratio).unwrap_or_default());
                }
            }
            r.push(
                row.winner
                    .map(|w| md_cell(&t.configs[w].label()))
                    .unwrap_or_default(),
            );
            r.push(row.significance.as_str().into());
            r
        })
        .collect();
    table(s, &header, &rows, &right);
    let coverage: Vec<String> = {
        let mut seen: Vec<(usize, f64)> = t
            .cells
            .iter()
            .filter_map(|c| {
                c.ci()
                    .filter(|ci| !ci.is_95())
                    .map(|ci| (c.n(), ci.coverage))
            })
            .collect();
        seen.sort_by_key(|a| a.0);
        seen.dedup_by_key(|x| x.0);
        seen.iter()
            .map(|(n, cov)| format!("{} at n={n}", percent(*cov)))
            .collect()
    };
    if !coverage.is_empty() {
        let _ = writeln!(
            s,
            "† [min, max] of too few repetitions for 95%; it covers the median with {}.\n",
            coverage.join(", ")
        );
    }
}

/// The analytic model beside the measurement, cell by cell, with what the medium did during
/// the cell's points when the run recorded it.
fn against_model(s: &mut String, report: &Report, media: &MediaReport) {
    if report.model.is_empty() {
        return;
    }
    let tol = percent(TOLERANCE);
    let _ = write!(
        s,
        "## Measured against the model\n\n\
         The analytic model (`orchestrate plan` prints it per placement) predicts each token-test \
         cell's aggregate throughput from what the emulated machine does: every frame's time on \
         each wire it crosses (Ethernet, IP and TCP framing per token size, acknowledgements \
         included, an idle wire too), store and forward at switches, shared-bus capacity with \
         CSMA/CD's efficiency (from the medium's own simulation), the nodes' host costs per frame \
         sent, received and forwarded, a fixed cost per hop for the nodes' own stacks, and \
         bonding as striping over the slaves. Measured is the {} over repetitions; a cell more \
         than ±{tol} from the model gets the likely cause.\n\n",
        report.statistic.as_str()
    );
    let count = |single: bool| {
        let rows: Vec<_> = report
            .model
            .iter()
            .filter(|r| r.single_segment() == single)
            .collect();
        let within = rows.iter().filter(|r| r.within_tolerance()).count();
        (within, rows.len())
    };
    let (w1, n1) = count(true);
    let (w2, n2) = count(false);
    if n1 > 0 {
        let _ = writeln!(
            s,
            "- Single-segment cells (every pair on one wire: a bus, a segment or a bond): {w1} of \
             {n1} within ±{tol}."
        );
    }
    if n2 > 0 {
        let _ = writeln!(
            s,
            "- Cells whose pairs cross a forwarding node or a switch: {w2} of {n2} within ±{tol}."
        );
    }
    s.push('\n');
    let mut header: Vec<String> = [
        "configuration",
        "pairs",
        "size",
        "measured Mbit/s",
        "model Mbit/s",
        "measured/model",
        "limited by",
        "likely cause (outside the tolerance)",
    ]
    .map(String::from)
    .to_vec();
    let mut right = vec![false, true, true, true, true, true, false, false];
    if media.present {
        header.extend(MEDIA_COLUMNS.map(String::from));
        right.extend([true, false, true, true]);
        s.push_str(MEDIA_LEGEND);
    }
    let rows: Vec<Vec<String>> = report
        .model
        .iter()
        .map(|r| {
            let mut row = vec![
                md_cell(&r.key.config.label()),
                r.key.pairs.to_string(),
                size(r.key.size_bytes),
                human(r.measured_mbit_s),
                human(r.predicted_mbit_s),
                format!("{:.2}", r.ratio()),
                r.bound.clone(),
                r.likely_cause.unwrap_or("").to_owned(),
            ];
            if media.present {
                row.extend(media_cells(media, &r.key));
            }
            row
        })
        .collect();
    table(s, &header, &rows, &right);
}

const MEDIA_COLUMNS: [&str; 4] = [
    "collisions/frame",
    "busiest segment",
    "drops excess/queue",
    "lateness p99 [µs]",
];

const MEDIA_LEGEND: &str = "The medium during each cell's points, from the emulator: collisions per frame \
     carried (all segments), the busiest segment and its utilisation, frames dropped after 16 \
     collisions / on a full transmit queue, and the emulator's worst p99 lateness (⚠ when it \
     flagged a point).\n\n";

/// The medium's columns of a cell's row; empty cells when its points have no statistics.
fn media_cells(media: &MediaReport, key: &CellKey) -> [String; 4] {
    match media.cell(key) {
        Some(m) => [
            format!("{:.3}", m.collisions_per_frame()),
            format!(
                "{} {}",
                md_cell(&m.busiest_segment),
                percent_util(m.busiest_utilisation)
            ),
            format!("{}/{}", m.excess_collision_drops, m.queue_drops),
            format!(
                "{}{}",
                human(m.lateness_p99_us),
                if m.flagged_points > 0 { " ⚠" } else { "" }
            ),
        ],
        None => Default::default(),
    }
}

/// A utilisation as a percentage with one decimal: `87.5%`.
fn percent_util(u: f64) -> String {
    format!("{:.1}%", u * 100.0)
}

/// "The medium": per configuration, each segment over the configuration's points, the points
/// whose timing the emulator flagged, and where statistics are missing.
fn the_medium(s: &mut String, report: &Report, media: &MediaReport) {
    if !media.present {
        return;
    }
    s.push_str(
        "## The medium

\
         What the emulated wires did while the points ran, from the medium emulator's counters: \
         frames carried, utilisation (wire time carried over the points' time), collisions per \
         frame, frames dropped after 16 collisions (excess) or on a full transmit queue, and \
         the emulator's lateness (how late it sent frames against their deadlines). A point \
         whose p99 lateness exceeds a tenth of a minimum frame's wire time is flagged: its \
         timing is not that of the wire.\n\n",
    );
    for c in &media.configs {
        medium_of_configuration(s, c);
    }
    token_cells_with_medium(s, report, media);
}

/// One configuration's part of "The medium": what to distrust first, then its segments.
fn medium_of_configuration(s: &mut String, c: &ConfigMedia) {
    let _ = writeln!(
        s,
        "### {} (configuration {})\n",
        md_cell(&c.label()),
        c.configuration
    );
    missing_statistics(s, c);
    if c.realtime_priority == Some(false) {
        s.push_str(
            "The emulator ran without real-time priority (SCHED_FIFO was refused): expect \
             more lateness.\n\n",
        );
    }
    lateness_flagged(s, c);
    if !c.segments.is_empty() {
        segment_table(s, c);
    }
}

/// Says which points of a configuration have no medium statistics, and why.
fn missing_statistics(s: &mut String, c: &ConfigMedia) {
    if c.missing_points.is_empty() && c.error.is_none() {
        return;
    }
    let points = if c.missing_points.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = c.missing_points.iter().map(|p| p.to_string()).collect();
        format!(" for point(s) {}", list.join(", "))
    };
    let _ = writeln!(
        s,
        "**⚠ Medium statistics missing{points}**: {}.\n",
        md_cell(c.error.as_deref().unwrap_or("the emulator did not answer"))
    );
}

/// One line per configuration, however many points are flagged: the worst says how far off.
fn lateness_flagged(s: &mut String, c: &ConfigMedia) {
    if let Some(worst) = c
        .flagged
        .iter()
        .max_by(|a, b| a.p99_us.total_cmp(&b.p99_us))
    {
        let points: std::collections::BTreeSet<(u32, u32)> =
            c.flagged.iter().map(|f| (f.point, f.rep)).collect();
        let _ = writeln!(
            s,
            "**⚠ Lateness flagged** on {} point(s): the emulator's p99 lateness exceeded the \
             limit of {} µs (a tenth of a minimum frame), by the most at point {} (rep {}, {} \
             {}×, {}) on segment {}: p99 {} µs. Frame timing there is off by up to that \
             much at the 99th percentile.\n",
            points.len(),
            human(worst.limit_us),
            worst.point,
            worst.rep,
            worst.pattern.as_str(),
            worst.pairs,
            size(worst.size_bytes),
            md_cell(&worst.segment),
            human(worst.p99_us),
        );
    }
}

/// Each segment of a configuration over its points: frames, utilisation, collisions, drops,
/// the emulator's lateness.
fn segment_table(s: &mut String, c: &ConfigMedia) {
    let total = c
        .segments
        .iter()
        .any(|g| g.lateness_source == LatenessSource::Total);
    let rows: Vec<Vec<String>> = c
        .segments
        .iter()
        .map(|g| {
            vec![
                md_cell(&g.segment),
                g.medium.clone(),
                human(g.rate_bps as f64 / 1e6),
                g.frames.to_string(),
                percent_util(g.utilisation()),
                format!("{:.3}", g.collisions_per_frame()),
                g.excess_collision_drops.to_string(),
                g.queue_drops.to_string(),
                g.deferrals.to_string(),
                human(g.lateness_p50_us),
                human(g.lateness_p99_us),
                human(g.lateness_max_us),
            ]
        })
        .collect();
    table(
        s,
        &[
            "segment",
            "medium",
            "Mbit/s",
            "frames",
            "utilisation",
            "collisions/frame",
            "excess drops",
            "queue drops",
            "deferrals",
            "lateness p50 [µs]",
            "lateness p99 [µs]",
            "lateness max [µs]",
        ]
        .map(String::from),
        &rows,
        &[
            false, false, true, true, true, true, true, true, true, true, true, true,
        ],
    );
    let _ = writeln!(
        s,
        "Lateness {}.\n",
        if total {
            "over the whole configuration, from the emulator's own histogram"
        } else {
            "of the worst point (no total was recorded)"
        }
    );
}

/// Without the model's table the token-test cells still get their medium beside them.
fn token_cells_with_medium(s: &mut String, report: &Report, media: &MediaReport) {
    if !report.model.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = report
        .cells
        .iter()
        .filter(|c| c.key.measure.pattern == orchestrate_worker::record::Pattern::Token)
        .filter(|c| media.cell(&c.key).is_some())
        .map(|c| {
            let mut r = vec![
                md_cell(&c.key.config.label()),
                c.key.pairs.to_string(),
                size(c.key.size_bytes),
                c.value(report.statistic).map(human).unwrap_or_default(),
            ];
            r.extend(media_cells(media, &c.key));
            r
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("### Token-test cells\n\n");
    s.push_str(MEDIA_LEGEND);
    let mut header: Vec<String> = ["configuration", "pairs", "size", "Mbit/s"]
        .map(String::from)
        .to_vec();
    header.extend(MEDIA_COLUMNS.map(String::from));
    table(
        s,
        &header,
        &rows,
        &[false, true, true, true, true, false, true, true],
    );
}

/// The 1996 study's findings beside this run's.
fn against_paper(s: &mut String, report: &Report) {
    let Some(p) = &report.paper else {
        return;
    };
    s.push_str(
        "## Against the 1996 paper\n\n\
         Reschke, Sterling, Ridge, Savarese, Becker and Merkey, \"A Design Study of Alternative \
         Network Topologies for the Beowulf Parallel Workstation\", HPDC-5, 1996: 16 nodes \
         (486 DX4-100) with two 10 Mbit/s Ethernet NICs each. Each finding with this run's \
         figure beside it. Throughput counts the producer's tokens (tokens written × size / \
         elapsed), in MB/s (10^6 bytes) as the paper gives it.\n\n",
    );
    for f in &p.findings {
        let _ = writeln!(s, "### {} — {}\n", f.title, f.verdict.as_str());
        let _ = writeln!(s, "- 1996: {}", f.paper);
        let _ = writeln!(s, "- Here: {}", f.measured);
        if !f.why.is_empty() {
            let _ = writeln!(s, "- Why: {}", f.why);
        }
        s.push('\n');
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn latency(s: &mut String, report: &Report) {
    for t in &report.comparison {
        let Some(pairs) = t.rows.iter().map(|r| r.pairs).min() else {
            continue;
        };
        let mut rows = Vec::new();
        for row in t.rows.iter().filter(|r| r.pairs == pairs) {
            for (c, config) in t.configs.iter().enumerate() {
                let Some(cell) = t.cell(row, c) else { continue };
                let l = cell.latency;
                if l.p50_us.is_none() {
                    continue;
                }
                let f = |v: Option<f64>| v.map(human).unwrap_or_default();
                rows.push(vec![
                    size(row.size_bytes),
                    md_cell(&config.label()),
                    f(l.p50_us),
                    f(l.p90_us),
                    f(l.p99_us),
                    f(l.max_us),
                ]);
            }
        }
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "## One-way latency: {} {} at {pairs} {}\n\nPercentiles over all successful trials, µs.\n",
            t.measure.pattern.as_str(),
            t.measure.protocol.as_str().to_uppercase(),
            if pairs == 1 { "pair" } else { "pairs" }
        );
        table(
            s,
            &[
                "size",
                "configuration",
                "p50 [µs]",
                "p90 [µs]",
                "p99 [µs]",
                "max [µs]",
            ]
            .map(String::from),
            &rows,
            &[true, false, true, true, true, true],
        );
    }
}

fn figures_section(s: &mut String, report: &Report) {
    s.push_str("## Figures\n\n");
    for f in figures(report) {
        let _ = writeln!(s, "![{}](figures/{}.svg)\n", md_cell(&f.title), f.stem);
    }
    // Topology drawings come from the topology model (see report::topology).
    for (name, _) in &report.topology_drawings {
        let _ = writeln!(s, "![topology {name}](figures/topology-{name}.svg)\n");
    }
    // Listing what the NetPIPE exporter writes keeps the two from drifting apart.
    let curves = super::netpipe::Netpipe
        .export(report, &MediaReport::default())
        .unwrap_or_default();
    if !curves.is_empty() {
        s.push_str("One-pair curves in NetPIPE's format, to compare with NetPIPE runs or to use as a baseline:\n\n");
        for c in curves {
            let _ = writeln!(s, "- [{0}]({0})", c.path.display());
        }
        s.push('\n');
    }
}

fn failures(s: &mut String, report: &Report) {
    s.push_str("## Failed points\n\n");
    if report.failures.is_empty() {
        s.push_str("None.\n\n");
        return;
    }
    let rows: Vec<Vec<String>> = report
        .failures
        .iter()
        .map(|f| {
            vec![
                f.point.to_string(),
                f.rep.to_string(),
                md_cell(&f.key.config.label()),
                f.key.measure.label(),
                f.key.pairs.to_string(),
                size(f.key.size_bytes),
                md_cell(&f.reason.to_string()),
            ]
        })
        .collect();
    table(
        s,
        &[
            "point",
            "rep",
            "configuration",
            "measure",
            "pairs",
            "size",
            "reason",
        ]
        .map(String::from),
        &rows,
        &[true, true, false, false, true, true, false],
    );
}

fn netpipe(s: &mut String, report: &Report) {
    if report.netpipe.is_empty() {
        return;
    }
    s.push_str("## NetPIPE baselines\n\n");
    let mut rows = Vec::new();
    for b in &report.netpipe {
        for (i, t) in b.tables.iter().enumerate() {
            let peak = t.rows.iter().max_by(|a, b| a.mbit_s.total_cmp(&b.mbit_s));
            rows.push(vec![
                md_cell(&b.table_label(i)),
                t.rows.len().to_string(),
                t.latency_s.map(|l| human(l * 1e6)).unwrap_or_default(),
                peak.map(|p| format!("{} at {}", human(p.mbit_s), size(p.bytes_per_block)))
                    .unwrap_or_default(),
            ]);
        }
    }
    table(
        s,
        &["table", "rows", "latency [µs]", "peak [Mbit/s]"].map(String::from),
        &rows,
        &[false, true, true, false],
    );
}

fn environment(s: &mut String, report: &Report) {
    let mut rows = Vec::new();
    for run in &report.runs {
        for (node, probe) in &run.manifest.nodes {
            let mut facts = Vec::new();
            flatten("", probe, &mut facts);
            for (k, v) in facts {
                let mut r = Vec::new();
                if report.runs.len() > 1 {
                    r.push(md_cell(&run.label));
                }
                r.extend([md_cell(node), md_cell(&k), md_cell(&v)]);
                rows.push(r);
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    s.push_str("## Environment\n\nAs probed on each node at the start of the run.\n\n");
    let mut header: Vec<String> = Vec::new();
    if report.runs.len() > 1 {
        header.push("run".into());
    }
    header.extend(["node", "fact", "value"].map(String::from));
    let right = vec![false; header.len()];
    table(s, &header, &rows, &right);
}

/// Probe JSON as `dotted.key = value` lines, keys in sorted order (serde_json's map is a
/// BTreeMap), long values cut so a table stays readable.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let joined: Vec<String> = items.iter().map(scalar).collect();
            out.push((prefix.to_owned(), cut(joined.join(", "))));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&key(&i.to_string()), item, out);
            }
        }
        other => out.push((prefix.to_owned(), cut(scalar(other)))),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cut(s: String) -> String {
    const MAX: usize = 100;
    if s.chars().count() > MAX {
        let t: String = s.chars().take(MAX).collect();
        format!("{t}…")
    } else {
        s
    }
}
