//! Reports: aggregation of a run's records, comparisons between configurations, and the
//! outputs written into the run directory.
//!
//! | output | what |
//! |---|---|
//! | `summary.csv` | one row per cell (measure × configuration × pairs × size): n, failures, best, median, mean, the median's CI and its coverage, per-pair mean and minimum, latency percentiles |
//! | `model.csv` | token-test cells beside the analytic model: measured, predicted, their ratio, what limits the pairs |
//! | `media.csv` | only for runs on the medium emulator: one row per cell with the medium during its points — collisions per frame, the busiest segment and its utilisation, excess-collision and queue drops, the emulator's lateness p99 and flagged points ([`emulator_stats`]) |
//! | `summary.json` | the cells of `summary.csv` with typed numbers, the units and the run(s) they come from |
//! | `comparison.csv` | long form: a row per (measure, pairs, size) × configuration with its value, CI, n, baseline, ratio to it, rank in its row and whether the row's win is clear ([`export::ComparisonCsv`]) |
//! | `report.md` | findings and the pivot tables first, then the 1996 study beside the run and the figures; after them method, setup, the model beside each token-test cell (its causes named once), "The medium", latency, failed points, NetPIPE baselines and the environment (facts equal on every node once) |
//! | `figures/*.svg` | 720 px wide for a 3.5 in column: throughput vs size (a panel per pair count, split by placement past six series), throughput vs pairs at the largest size, latency vs size (log-log), NetPIPE-style throughput vs block size; a figure with one x value is a bar chart; `*.png` copies with `--png` |
//!
//! The pipeline: [`aggregate`] (Polars, over `records.parquet`) → [`cells`] (statistics per
//! cell, [`stats`]) → [`compare`](mod@compare) (pivot, baseline ratios, winners) → [`findings`] → the
//! [`export`]ers, one per format. Everything after Polars works on one row per point and is
//! plain, ordered Rust with fixed number formatting, so outputs are byte-identical on re-runs.
//! Every stage speaks of the cells in [`data`]; the whole report is a [`document::Report`].
//!
//! Entry points: [`report_run`] (`orchestrate report <run-dir>`, also run at the end of a run;
//! [`report_and_check`] also returns the experiment's [`references`] checked),
//! [`compare`](fn@compare) (`orchestrate report --compare <dir>...`),
//! [`regression::check`] (`--compare OLD NEW --threshold 5%`, by the rule in [`verdict`]) and
//! [`build`] (the report as data, for tests and other front ends).

pub mod aggregate;
pub mod cells;
pub mod cli;
pub mod compare;
pub mod data;
pub mod document;
pub mod emulator_stats;
pub mod error;
pub mod export;
pub mod figures;
pub mod findings;
pub mod format;
pub mod intervals;
pub mod netpipe;
pub mod paper;
pub mod predicted;
pub mod references;
pub mod regression;
pub mod stats;
pub mod today;
pub mod topology;
pub mod verdict;

use std::path::{Path, PathBuf};

use crate::results::{RunDir, Statistic};
use compare::BaselineRule;
pub use document::Report;
pub use error::ReportError;
pub use netpipe::NetpipeBaseline;
pub use predicted::{CellPrediction, PredictThroughput};
pub use topology::DrawTopology;

/// A NetPIPE output file to draw as a named baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct NetpipeSource {
    pub name: String,
    pub path: PathBuf,
}

/// Choices for a report; the defaults come from the run's manifest.
#[derive(Default)]
pub struct ReportOptions<'a> {
    /// Overrides the manifest's statistic (median when neither names one).
    pub statistic: Option<Statistic>,
    /// Overrides the manifest's baseline topology.
    pub baseline: Option<String>,
    pub netpipe: Vec<NetpipeSource>,
    /// Draws topologies for the report when set (see [`topology`]).
    pub topology: Option<&'a dyn DrawTopology>,
    /// Also write PNG copies of the figures (needs the `png` feature).
    pub png: bool,
    /// The analytic model's predictions, shown beside the measurement when given.
    pub model: Option<&'a dyn PredictThroughput>,
}

/// Builds the report of one run without writing anything.
pub fn build(run: &RunDir, opts: &ReportOptions<'_>) -> Result<Report, ReportError> {
    build_with(run, opts, &emulator_stats::load(run)?)
}

/// [`build`] with the run's medium statistics already loaded.
fn build_with(
    run: &RunDir,
    opts: &ReportOptions<'_>,
    media: &emulator_stats::MediaReport,
) -> Result<Report, ReportError> {
    let one = load_run(run, None, opts)?;
    let statistic = opts
        .statistic
        .or(one.info.manifest.statistic)
        .unwrap_or_default();
    if let Some(b) = &one.info.baseline {
        let known: std::collections::BTreeSet<&str> = one
            .cells
            .iter()
            .map(|c| c.key.config.topology.as_str())
            .collect();
        if !known.contains(b.as_str()) && !one.cells.is_empty() {
            return Err(ReportError::UnknownBaseline {
                name: b.clone(),
                known: known.into_iter().collect::<Vec<_>>().join(", "),
            });
        }
    }
    let rule = match &one.info.baseline {
        Some(b) => BaselineRule::Topology(b),
        None => BaselineRule::None,
    };
    let comparison = compare::compare(&one.cells, statistic, &rule);
    let findings = findings::findings(&comparison, &one.failures, statistic);
    let predictions = opts.model.map(|m| m.predictions()).unwrap_or_default();
    let model = predicted::rows(&one.cells, &predictions, statistic);
    let paper = paper::against_reschke96(&one.cells, &model, media, statistic);
    let today = today::what_the_study_would_find_today(&one.cells, &model, statistic);
    let references = references::check(&references::load(run)?, &one.cells, statistic);
    let topologies = if one.info.manifest.topologies.is_empty() {
        let mut t: Vec<String> = one
            .cells
            .iter()
            .map(|c| c.key.config.topology.clone())
            .collect();
        t.dedup();
        t
    } else {
        one.info.manifest.topologies.clone()
    };
    Ok(Report {
        topology_drawings: topology::drawings(opts.topology, &topologies),
        runs: vec![one.info],
        statistic,
        cells: one.cells,
        comparison,
        findings,
        model,
        paper,
        today,
        failures: one.failures,
        netpipe: import_netpipe(opts)?,
        references,
    })
}

/// `orchestrate report <run-dir>`: builds the report and writes it into the run directory.
/// Returns the files written.
pub fn report_run(dir: &Path, opts: &ReportOptions<'_>) -> Result<Vec<PathBuf>, ReportError> {
    report_and_check(dir, opts).map(|w| w.files)
}

/// What [`report_and_check`] wrote and what the experiment's reference values say.
pub struct Written {
    pub files: Vec<PathBuf>,
    /// The headline statistic the references were checked under.
    pub statistic: Statistic,
    pub references: Vec<references::ReferenceCheck>,
}

/// [`report_run`], also returning the reference checks (which report.md shows too).
pub fn report_and_check(dir: &Path, opts: &ReportOptions<'_>) -> Result<Written, ReportError> {
    let run = RunDir::new(dir);
    let exporters = export::standard(opts.png)?;
    let media = emulator_stats::load(&run)?;
    let report = build_with(&run, opts, &media)?;
    let files = export::write_all(dir, &report, &media, &exporters)?;
    Ok(Written {
        files,
        statistic: report.statistic,
        references: report.references,
    })
}

/// `orchestrate report --compare <dir>...`: the same tables across runs, each configuration
/// prefixed with its run's label (the directory name) and compared with the same
/// configuration in the first run. Written into `out`.
pub fn compare(
    dirs: &[PathBuf],
    out: &Path,
    opts: &ReportOptions<'_>,
) -> Result<Vec<PathBuf>, ReportError> {
    if dirs.len() < 2 {
        return Err(ReportError::TooFewRuns);
    }
    let exporters = export::standard(opts.png)?;
    let mut runs = Vec::new();
    let mut cells = Vec::new();
    let mut failures = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        // Two runs with the same directory name still need distinct labels.
        let label = if dirs[..i].iter().any(|d| d.file_name() == dir.file_name()) {
            format!("{name} #{}", i + 1)
        } else {
            name
        };
        let one = load_run(&RunDir::new(dir), Some(&label), opts)?;
        runs.push(one.info);
        cells.extend(one.cells);
        failures.extend(one.failures);
    }
    cells.sort_by(|a, b| a.key.cmp(&b.key));
    failures.sort_by(|a, b| {
        (&a.key.config.run, a.point, a.rep).cmp(&(&b.key.config.run, b.point, b.rep))
    });
    let statistic = opts
        .statistic
        .or(runs[0].manifest.statistic)
        .unwrap_or_default();
    let first = runs[0].label.clone();
    let comparison = compare::compare(&cells, statistic, &BaselineRule::Run(&first));
    let findings = findings::findings(&comparison, &failures, statistic);
    let report = Report {
        runs,
        statistic,
        cells,
        comparison,
        findings,
        model: Vec::new(),
        paper: None,
        today: None,
        failures,
        netpipe: import_netpipe(opts)?,
        topology_drawings: Vec::new(),
        references: Vec::new(),
    };
    // The medium's statistics are per run; a comparison across runs leaves them out.
    export::write_all(
        out,
        &report,
        &emulator_stats::MediaReport::default(),
        &exporters,
    )
}

struct LoadedRun {
    info: document::RunInfo,
    cells: Vec<data::CellSummary>,
    failures: Vec<data::Failure>,
}

fn load_run(
    run: &RunDir,
    label: Option<&str>,
    opts: &ReportOptions<'_>,
) -> Result<LoadedRun, ReportError> {
    let manifest = run.manifest()?;
    let points = run.points()?;
    let records = run.scan_records()?;
    let count = records
        .clone()
        .select([polars::prelude::len().alias("n")])
        .collect()?;
    let n_records = count
        .column("n")?
        .as_materialized_series()
        .cast(&polars::prelude::DataType::UInt64)?
        .u64()?
        .get(0)
        .unwrap_or(0);
    let agg = aggregate::aggregate(records, &points, &manifest, label)?;
    let cells = cells::summarize(&agg);
    let default_label = manifest.experiment.clone().unwrap_or_else(|| {
        run.root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    Ok(LoadedRun {
        info: document::RunInfo {
            label: label.map(str::to_owned).unwrap_or(default_label),
            baseline: opts.baseline.clone().or_else(|| manifest.baseline.clone()),
            manifest,
            records: n_records,
            point_attempts: points.len(),
        },
        cells,
        failures: agg.failures,
    })
}

fn import_netpipe(opts: &ReportOptions<'_>) -> Result<Vec<NetpipeBaseline>, ReportError> {
    opts.netpipe
        .iter()
        .map(|n| netpipe::import(&n.name, &n.path))
        .collect()
}
