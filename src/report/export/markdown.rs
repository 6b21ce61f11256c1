//! `report.md`, ordered as a paper's evaluation reads: a short summary, each study's section
//! ([`crate::report::study`]), the configurations' legend and the results tables (one per
//! measurement and placement, short labels as rows), the reference values, the figures,
//! method and setup; every table row within 100 characters. `appendix.md` holds what a reader
//! checks behind it: every finding, the full tables with each cell's interval and winner, the
//! model, the medium, drift, latency, failed points and the environment.

mod applications;
mod drivers;
mod environment;
mod medium;
mod model;
mod paper_tables;
mod references;
mod study;
mod table;

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::compare::{ComparisonRow, ComparisonTable, Significance, tested_contests};
use crate::report::data::CellSummary;
use crate::report::document::{Report, RunInfo};
use crate::report::drift::Drift;
use crate::report::drift_check::DriftCheck;
use crate::report::error::ReportError;
use crate::report::figures::figures;
use crate::report::format::{capitalised, human, md_cell, size, times, unix_ns};
use crate::report::intervals::IntervalNames;
use crate::report::netpipe_curves::{against, curves};
use crate::report::predicted::TOLERANCE;
use crate::report::results_tables::{ResultsTable, of_report};
use crate::results::Statistic;
use table::table;

pub struct Markdown;

impl Exporter for Markdown {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let title = match report.runs.as_slice() {
            [one] => one.label.clone(),
            many => format!("comparison of {} runs", many.len()),
        };
        Ok(vec![
            RenderedFile {
                path: "report.md".into(),
                bytes: paper(report, &title).into_bytes(),
            },
            RenderedFile {
                path: "appendix.md".into(),
                bytes: appendix(report, &title).into_bytes(),
            },
        ])
    }
}

/// report.md: what a paper's evaluation takes, every table row within 100 characters.
fn paper(report: &Report, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Report: {}\n", md_cell(title));
    let (labels, tables) = of_report(report);
    summary(&mut s, report, &tables);
    for st in &report.studies {
        study::study(&mut s, st);
    }
    paper_tables::legend(&mut s, &labels);
    for t in &tables {
        paper_tables::results(&mut s, t);
    }
    if let Some(a) = &report.applications {
        applications::applications(&mut s, a);
    }
    drivers::drivers(&mut s, &report.drivers, report.statistic);
    references::references(&mut s, &report.references, report.statistic);
    figures_section(&mut s, report);
    method(
        &mut s,
        report.statistic,
        tested_contests(&report.comparison),
    );
    setup(&mut s, report);
    s
}

/// appendix.md: the per-cell material behind report.md, for a reader who checks it.
fn appendix(report: &Report, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Appendix: {}\n\nThe material behind [report.md](report.md): every finding, every \
         cell with its interval, winner and failures, the model beside each token-test cell, \
         the medium, drift, latency, failed points and the environment.\n",
        md_cell(title)
    );
    s.push_str("## Findings\n\n");
    for f in &report.findings {
        let _ = writeln!(s, "- {f}");
    }
    s.push('\n');
    for t in &report.comparison {
        comparison(&mut s, t, report.statistic);
    }
    model::against_model(&mut s, report, &report.media);
    for st in &report.studies {
        study::cells(&mut s, st);
    }
    if let Some(a) = &report.applications {
        applications::against_model(&mut s, a);
    }
    medium::the_medium(&mut s, report, &report.media);
    drift(&mut s, report);
    latency(&mut s, report);
    failures(&mut s, report);
    netpipe(&mut s, report);
    environment::environment(&mut s, report);
    s
}

/// The opening: what ran, whether the references hold, what each study's findings say, and
/// the warnings a reader must see before any figure.
fn summary(s: &mut String, report: &Report, tables: &[ResultsTable]) {
    s.push_str("## Summary\n\n");
    let configs: std::collections::BTreeSet<String> = report
        .comparison
        .iter()
        .flat_map(|t| t.configs.iter().map(|c| c.label()))
        .collect();
    let mut configs = configs;
    let attempts: usize = report.runs.iter().map(|r| r.point_attempts).sum();
    let mut measures: Vec<String> = report
        .comparison
        .iter()
        .map(|t| t.measure.label())
        .collect();
    // The collectives count as measures and configurations too (their placements are the
    // ranks').
    if let Some(a) = &report.applications {
        let mut patterns: Vec<&str> = a.cells.iter().map(|c| c.pattern.as_str()).collect();
        patterns.dedup();
        measures.extend(patterns.iter().map(|p| format!("{p} (collective)")));
        configs.extend(
            a.cells
                .iter()
                .map(|c| format!("{} {}", c.config(), c.placement.as_str())),
        );
    }
    let _ = writeln!(
        s,
        "- {} over {} configuration(s) (topology, bonding and placement), {} point attempt(s); \
         the headline statistic is the {} of the repetitions.",
        if measures.is_empty() {
            "nothing measured".to_owned()
        } else {
            measures.join(", ")
        },
        configs.len(),
        attempts,
        report.statistic.as_str()
    );
    // Each table at its heaviest load, the configurations highest first.
    for t in tables {
        if let Some(h) = t.heaviest() {
            let (pairs, bytes) = (h.pairs, h.size_bytes);
            let listed: Vec<String> = h
                .cells
                .iter()
                .map(|(label, c)| format!("{label} {}", c.text()))
                .collect();
            let _ = writeln!(
                s,
                "- {} at {} and {pairs} {}, Mbit/s{}: {}.",
                t.title(),
                size(bytes),
                if pairs == 1 { "pair" } else { "pairs" },
                if t.baselines.is_empty() {
                    String::new()
                } else {
                    format!(" (× {})", t.baselines.join(", "))
                },
                listed.join(", ")
            );
        }
    }
    let refs = &report.references;
    if !refs.checks.is_empty() {
        let failed: Vec<&str> = refs
            .checks
            .iter()
            .filter(|c| !c.passed())
            .map(|c| c.reference.as_str())
            .collect();
        let _ = writeln!(
            s,
            "- Reference values: {} of {} hold{}.",
            refs.checks.len() - failed.len(),
            refs.checks.len(),
            if failed.is_empty() {
                String::new()
            } else {
                format!("; **failing**: {}", failed.join("; "))
            }
        );
    }
    for st in &report.studies {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for f in &st.findings {
            let v = f.verdict.as_str();
            match counts.iter_mut().find(|(k, _)| *k == v) {
                Some((_, n)) => *n += 1,
                None => counts.push((v, 1)),
            }
        }
        let counts: Vec<String> = counts.iter().map(|(v, n)| format!("{v}: {n}")).collect();
        let _ = writeln!(
            s,
            "- {}, {} findings: {}.",
            st.title,
            st.findings.len(),
            counts.join(", ")
        );
    }
    if let Some(d) = report.drift.filter(|d| d.shown()) {
        let _ = writeln!(
            s,
            "- ⚠ The machine drifted while the run ran: {} per hour (see Drift over the run in \
             appendix.md).",
            drift_rate(&d)
        );
    }
    if let Some(check) = report.drift_check.as_ref().filter(|c| c.shown()) {
        let _ = writeln!(
            s,
            "- ⚠ The machine drifted between the first configuration and the last: its \
             reference cell measured {} at the end of the run (see Drift over the run in \
             appendix.md).",
            check_ratio(check)
        );
    }
    if let Some(check) = report.drift_check.as_ref().filter(|c| c.ratio.is_none()) {
        let _ = writeln!(
            s,
            "- ⚠ The drift check gave no comparison: {} repetition(s) of its reference cell \
             at the end and {} in the run gave a sample, and an interval needs two a side; \
             drift between configurations is not measured in this run (see Drift over the \
             run in appendix.md).",
            check.again.len(),
            check.first.len()
        );
    }
    let _ = writeln!(
        s,
        "- {}",
        match report.failures.len() {
            0 => "No point attempt failed.".to_owned(),
            n => format!("{n} point attempt(s) failed: see Failed points in appendix.md."),
        }
    );
    s.push_str(
        "- Every cell with its interval and winner, all findings, the model beside each cell, \
         the medium, latency and the environment: [appendix.md](appendix.md). The tables below \
         are also in [tables.tex](tables.tex).\n\n",
    );
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
    for (topology, platform) in &m.platforms {
        facts.push((format!("platform of {topology}"), platform.clone()));
    }
    for job in &m.slurm_jobs {
        let mut v = format!("job {} on {}", job.job_id, job.nodelist);
        if let Some(p) = &job.partition {
            let _ = write!(v, ", partition {p}");
        }
        if let Some(c) = &job.cluster {
            let _ = write!(v, ", cluster {c}");
        }
        facts.push(("Slurm".into(), v));
    }
    facts.push(("records".into(), run.records.to_string()));
    facts.push(("point attempts".into(), run.point_attempts.to_string()));
    // A list, not a table: a value such as the topologies runs long.
    for (k, v) in facts {
        let _ = writeln!(s, "- **{k}**: {v}");
    }
    s.push('\n');
}

fn method(s: &mut String, statistic: Statistic, tested: usize) {
    let _ = writeln!(
        s,
        "## Method\n\n\
         - Aggregate throughput of a point is the sum over its pairs of the payload each moved \
         inside the window in which all pairs were running (latest pair start to earliest pair \
         end), read off the payload each trial's worker sampled every 10 ms (linear within a \
         sample interval); a trial without samples (older workers, patterns that do not \
         sample) counts in proportion to its overlap with the window. Records of the timing \
         side only: the receiver for `stream`, the client otherwise.\n\
         - Headline statistic: **{}** of the repetitions{}. In appendix.md's tables, in \
         brackets, an interval for the median, distribution-free (order statistics of the binomial distribution): from 6 \
         repetitions on, the 95% confidence interval; with 2 to 5 no interval reaches 95%, so \
         [min, max] is given with the coverage it has (50% at n=2, 75% at 3, 87.5% at 4, 93.8% \
         at 5). Each table's heading names its kind; a cell of the other kind is marked †.\n\
         - Winners are named among alternatives only: configurations with the same placement \
         of pairs. A winner is *clear* when Welch's t-test on the logarithms of the \
         repetitions (the ratio of geometric means) rejects equality with the runner-up at 5% \
         after Holm's correction over all {tested} such comparisons in this report; *not \
         shown* means it does not; *same path: tie* means both send their pairs over the same \
         hops and wires, so any difference is noise or drift; *n<3* means too few repetitions \
         to say. Beside each ratio, in brackets, its 95% interval (Welch, on the ratio of \
         geometric means; not corrected for the number of ratios).\n\
         - Latency: percentiles (nearest rank) of the per-trial one-way latency over all \
         successful trials of a cell.\n\
         - Failed point attempts are listed in appendix.md and never enter the statistics.\n\
         - Units: sizes in B, KiB (1024 B) and MiB (1024² B); rates in Mbit/s (10^6 bit/s), \
         except where the 1996 paper is quoted in its MB/s (10^6 B/s).\n",
        statistic.as_str(),
        if statistic == Statistic::Best {
            " (as the 1996 study reported)"
        } else {
            ""
        }
    );
}

fn value_cell(c: Option<&CellSummary>, stat: Statistic, names: &IntervalNames) -> String {
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
            names.mark(c)
        ),
        None => format!("{} (n=1){failed}", human(v)),
    }
}

fn comparison(s: &mut String, t: &ComparisonTable, stat: Statistic) {
    let names = IntervalNames::of(&t.cells);
    let _ = writeln!(
        s,
        "## Aggregate throughput: {} {}\n\n{} aggregate throughput in Mbit/s{}; × is the ratio \
         to the baseline.\n",
        t.measure.pattern.as_str(),
        t.measure.protocol.as_str().to_uppercase(),
        capitalised(stat.as_str()),
        names
            .heading()
            .map(|h| format!("; in brackets, {h}"))
            .unwrap_or_default(),
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
                r.push(value_cell(t.cell(row, c), stat, &names));
                if with_ratio {
                    r.push(ratio_cell(row, c));
                }
            }
            let (winners, differences) = contests_cells(t, row);
            r.push(winners);
            r.push(differences);
            r
        })
        .collect();
    table(s, &header, &rows, &right);
    if let Some(note) = names.note() {
        let _ = writeln!(s, "{note}\n");
    }
}

/// A ratio to the baseline with its 95% interval: `0.93× [0.90×, 0.96×]`.
fn ratio_cell(row: &ComparisonRow, column: usize) -> String {
    let Some(r) = row.ratio[column] else {
        return String::new();
    };
    match row.ratio_interval[column] {
        Some(i) => format!("{} [{}, {}]", times(r), times(i.low), times(i.high)),
        None => times(r),
    }
}

/// The winner of each placement's contest and what the data say of its win, `; `-separated
/// when a row has several placements. A configuration alone in its placement wins nothing,
/// and two on the same path are named as the tie they are (`a = b`).
fn contests_cells(t: &ComparisonTable, row: &ComparisonRow) -> (String, String) {
    let mut winners = Vec::new();
    let mut differences = Vec::new();
    for c in row.contests.iter().filter(|c| c.runner_up.is_some()) {
        let winner = t.configs[c.winner].label();
        winners.push(md_cell(&match (c.significance, c.runner_up) {
            (Significance::SamePath, Some(r)) => format!("{winner} = {}", t.configs[r].label()),
            _ => winner,
        }));
        differences.push(match (c.significance, c.difference) {
            (Significance::Clear | Significance::NotShown, Some(d)) => format!(
                "{}, {} [{}, {}]",
                c.significance.as_str(),
                times(d.ratio),
                times(d.low),
                times(d.high)
            ),
            (s, _) => s.as_str().to_owned(),
        });
    }
    (winners.join("; "), differences.join("; "))
}

/// Latency at the least loaded pair count: a row per configuration, a column per size, so
/// sizes read across as in the figure.
fn latency(s: &mut String, report: &Report) {
    for t in &report.comparison {
        let Some(pairs) = t.rows.iter().map(|r| r.pairs).min() else {
            continue;
        };
        let rows_at: Vec<_> = t.rows.iter().filter(|r| r.pairs == pairs).collect();
        let has_latency = |c: Option<&CellSummary>| c.is_some_and(|c| c.latency.p50_us.is_some());
        let mut rows = Vec::new();
        for (c, config) in t.configs.iter().enumerate() {
            if !rows_at.iter().any(|r| has_latency(t.cell(r, c))) {
                continue;
            }
            let mut row = vec![md_cell(&config.label())];
            row.extend(
                rows_at
                    .iter()
                    .map(|r| match t.cell(r, c).map(|c| c.latency) {
                        Some(l) => match (l.p50_us, l.p99_us) {
                            (Some(p50), Some(p99)) => format!("{} / {}", human(p50), human(p99)),
                            (Some(p50), None) => human(p50),
                            _ => String::new(),
                        },
                        None => String::new(),
                    }),
            );
            rows.push(row);
        }
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "## One-way latency: {} {} at {pairs} {}\n\np50 / p99 in µs over all successful \
             trials (p90 and the maximum are in summary.csv).\n",
            t.measure.pattern.as_str(),
            t.measure.protocol.as_str().to_uppercase(),
            if pairs == 1 { "pair" } else { "pairs" }
        );
        let mut header = vec!["configuration".to_string()];
        header.extend(rows_at.iter().map(|r| size(r.size_bytes)));
        let mut right = vec![true; header.len()];
        right[0] = false;
        table(s, &header, &rows, &right);
    }
}

fn figures_section(s: &mut String, report: &Report) {
    s.push_str("## Figures\n\n");
    for f in figures(report) {
        let _ = writeln!(s, "![{}](figures/{}.svg)\n", md_cell(&f.title), f.stem);
    }
    // Topology drawings come from the topology model (see report::topology); side by side.
    if !report.topology_drawings.is_empty() {
        let drawings: Vec<String> = report
            .topology_drawings
            .iter()
            .map(|(name, _)| format!("![topology {name}](figures/topology-{name}.svg)"))
            .collect();
        let _ = writeln!(s, "Topologies: {}\n", drawings.join(" "));
    }
    // The same curves the NetPIPE exporter writes.
    let curves = curves(report);
    if !curves.is_empty() {
        let links: Vec<String> = curves
            .iter()
            .map(|c| format!("[{0}]({0})", c.path))
            .collect();
        let _ = writeln!(
            s,
            "One-pair curves in NetPIPE's format, to compare with NetPIPE runs or to use as a \
             baseline: {}.\n",
            links.join(", ")
        );
    }
}

/// `+1.2% [-0.3%, +2.5%]`: the median drift over cells with its interval.
fn drift_rate(d: &Drift) -> String {
    let pct = |v: f64| format!("{v:+.1}%");
    match d.per_hour.ci {
        Some(ci) => format!(
            "{} [{}, {}]",
            pct(d.per_hour.median),
            pct(ci.low),
            pct(ci.high)
        ),
        None => pct(d.per_hour.median),
    }
}

fn drift(s: &mut String, report: &Report) {
    if report.drift.is_none() && report.drift_check.is_none() {
        return;
    }
    s.push_str(
        "## Drift over the run

",
    );
    within_configurations(s, report);
    if let Some(check) = &report.drift_check {
        between_configurations(s, check);
    }
}

/// `0.97× [0.95×, 0.99×] of its first measurement`: the drift check's ratio with its interval.
fn check_ratio(check: &DriftCheck) -> String {
    match check.ratio {
        Some(r) => format!(
            "{} [{}, {}] of its first measurement",
            times(r.ratio),
            times(r.low),
            times(r.high)
        ),
        None => "without an interval".into(),
    }
}

/// The drift check: the first configuration's reference cell measured again at the end.
fn between_configurations(s: &mut String, check: &DriftCheck) {
    let verdict = match check.ratio {
        Some(_) if check.shown() => {
            "**the machine drifted between the first configuration and the last**: a \
             difference between configurations within this much may be drift, not the \
             configurations"
        }
        Some(_) => "no drift between the first configuration and the last is shown",
        None => {
            "too few samples on a side for an interval (the others failed or missed the timing \
             bound), so drift between configurations is not measured in this run"
        }
    };
    let when = check.hours_apart.map_or_else(String::new, |h| {
        format!(", {h:.1} h after the middle of its first measurements")
    });
    let failed = if check.again_failed > 0 {
        format!(
            " ({} more gave no sample and are listed nowhere else)",
            check.again_failed
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "Configurations run one after another, so the run ends by applying the first one \
         ({}) again and measuring its reference cell ({}, {} pair(s), {}) once more{when}. \
         {} repetition(s) at the end{failed} against {} in the run: {} (ratio of geometric \
         means, Welch's 95% interval): {verdict}. These repetitions count in no cell.\n",
        check.cell.config.label(),
        check.cell.measure.label(),
        check.cell.pairs,
        size(check.cell.size_bytes),
        check.again.len(),
        check.first.len(),
        check_ratio(check),
    );
}

/// The trend of each cell's repetitions against the time they ran.
fn within_configurations(s: &mut String, report: &Report) {
    let Some(d) = report.drift else {
        return;
    };
    let verdict = if d.shown() {
        "**the machine drifted**: differences between configurations, which run one after \
         another, carry some of it"
    } else {
        "no drift is shown: the interval includes none"
    };
    let _ = writeln!(
        s,
        "Points run in a random order within their configuration, so a machine that sped up or \
         slowed down shows as a trend of each cell's repetitions against the time they ran. \
         Over {} cells of at least {} repetitions, the median trend (least squares of the \
         logarithm against time) is {} per hour, with the median's 95% interval over cells: \
         {verdict}.\n",
        d.cells,
        crate::report::drift::MIN_REPETITIONS,
        drift_rate(&d)
    );
}

fn failures(s: &mut String, report: &Report) {
    s.push_str("## Failed points\n\n");
    if report.failures.is_empty() {
        s.push_str("None.\n\n");
        return;
    }
    // Beside each reason, what the emulated wires did during that attempt (when it ran on
    // them) and what TCP counted on its connections (when its records carry that): the
    // counters a reader checks before believing the reason.
    let wires = report.media.present;
    let tcp = report.failures.iter().any(|f| f.tcp.is_some());
    let rows: Vec<Vec<String>> = report
        .failures
        .iter()
        .map(|f| {
            let mut row = vec![
                f.point.to_string(),
                f.rep.to_string(),
                md_cell(&f.key.config.label()),
                f.key.measure.label(),
                f.key.pairs.to_string(),
                size(f.key.size_bytes),
                md_cell(&f.reason.to_string()),
            ];
            if wires {
                row.push(
                    report
                        .media
                        .points
                        .get(&(f.point, f.rep))
                        .map(|m| m.text())
                        .unwrap_or_else(|| "no statistics".into()),
                );
            }
            if tcp {
                row.push(f.tcp.map_or_else(|| "no counters".into(), |t| t.text()));
            }
            row
        })
        .collect();
    let mut header = [
        "point",
        "rep",
        "configuration",
        "measure",
        "pairs",
        "size",
        "reason",
    ]
    .map(String::from)
    .to_vec();
    let mut right = vec![true, true, false, false, true, true, false];
    if wires {
        header.push("the wires meanwhile".into());
        right.push(false);
    }
    if tcp {
        header.push("TCP meanwhile".into());
        right.push(false);
    }
    table(s, &header, &rows, &right);
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
                peak.map(|p| {
                    let mbit = p.mbit_s * t.mbit_scale();
                    format!("{} at {}", human(mbit), size(p.bytes_per_block))
                })
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
    netpipe_against_run(s, report);
}

/// Each table beside this run's one-pair curve of the same mode, block size by block size,
/// in NetPIPE's own terms (a ping-pong block per one-way time) and 10^6 bit/s.
fn netpipe_against_run(s: &mut String, report: &Report) {
    let curves = curves(report);
    let mut rows = Vec::new();
    for b in &report.netpipe {
        for (i, t) in b.tables.iter().enumerate() {
            for c in &curves {
                for (bytes, theirs, ours) in against(t, c) {
                    let r = ours / theirs;
                    rows.push(vec![
                        md_cell(&b.table_label(i)),
                        md_cell(&c.heading),
                        size(bytes),
                        human(theirs),
                        human(ours),
                        times(r),
                        if (r - 1.0).abs() <= TOLERANCE {
                            "yes"
                        } else {
                            "no"
                        }
                        .to_owned(),
                    ]);
                }
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Against this run, at the block sizes both have: Mbit/s in 10^6 bit/s (a table that \
         counts 2^20 bit/s, as NetPIPE 2.x did, is converted), ping-pong as NetPIPE counts it \
         (one block per one-way time, twice the aggregate above); within ±{:.0}% or not.\n",
        TOLERANCE * 100.0
    );
    table(
        s,
        &[
            "table",
            "this run",
            "block",
            "table [Mbit/s]",
            "this run [Mbit/s]",
            "ratio",
            "within",
        ]
        .map(String::from),
        &rows,
        &[false, false, true, true, true, true, false],
    );
}
