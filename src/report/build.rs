//! The report's entry points: a run directory in, a [`Report`] built and, for the commands,
//! written by the exporters. Every run is read through [`super::load`]; the regression check
//! compares two built reports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::applications;
use super::compare::{self, BaselineRule};
use super::document::Report;
use super::drivers;
use super::emulator_stats::MediaReport;
use super::error::ReportError;
use super::export;
use super::findings::findings;
use super::history;
use super::load::{self, LoadedRun};
use super::netpipe::{self, NetpipeBaseline};
use super::options::ReportOptions;
use super::predicted;
use super::references::{self, ReferenceChecks};
use super::regression::{self, RegressionCheck};
use super::same_paths::SamePaths;
use super::study::{self, Evidence};
use super::topology;
use crate::results::{RunDir, Statistic};
use crate::spec::reference::Percent;

/// Builds the report of one run without writing anything.
pub fn build(run: &RunDir, opts: &ReportOptions<'_>) -> Result<Report, ReportError> {
    build_with(run, opts, load::media(run)?)
}

/// [`build`] with the run's medium statistics already loaded.
fn build_with(
    run: &RunDir,
    opts: &ReportOptions<'_>,
    mut media: MediaReport,
) -> Result<Report, ReportError> {
    let capacities = opts.model.map(|m| m.capacities()).unwrap_or_default();
    let one = load::run(run, None, opts.baseline.as_deref(), &capacities)?;
    media.exclusion = one.exclusion;
    let statistic = opts
        .statistic
        .or(one.info.manifest.statistic)
        .unwrap_or_default();
    if let Some(b) = &one.info.baseline {
        let known: BTreeSet<&str> = one
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
    let comparison = compare::compare(&one.cells, statistic, &rule, &SamePaths::of(opts.paths));
    let findings = findings(&comparison, &one.failures, statistic);
    let predictions = opts.model.map(|m| m.predictions()).unwrap_or_default();
    let model = predicted::rows(&one.cells, &predictions, statistic, &media);
    let studies = study::sections(&Evidence {
        topologies: &one.info.manifest.topologies,
        cells: &one.cells,
        model: &model,
        media: &media,
        statistic,
        simulate: opts.model,
    });
    let (references, cluster) = load::references(run)?;
    let references = references::check(&references, cluster, &one.cells, &one.failures, statistic);
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
    let drivers = drivers::compare_drivers(&one.cells, statistic);
    let collective_model = opts
        .model
        .map(|m| m.collective_predictions())
        .unwrap_or_default();
    let applications = applications::build(
        run,
        &one.collective_points,
        &collective_model,
        statistic,
        one.info.baseline.as_deref(),
    )?;
    Ok(Report {
        topology_drawings: topology::drawings(opts.topology, &topologies),
        runs: vec![one.info],
        statistic,
        cells: one.cells,
        comparison,
        findings,
        model,
        studies,
        media,
        failures: one.failures,
        netpipe: [load::netpipe_tables(run)?, netpipe_baselines(opts)?].concat(),
        references,
        progress: one.progress,
        drift: one.drift,
        drift_check: one.drift_check,
        drivers,
        applications,
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
    pub references: ReferenceChecks,
}

/// [`report_run`], also returning the reference checks (which report.md shows too).
pub fn report_and_check(dir: &Path, opts: &ReportOptions<'_>) -> Result<Written, ReportError> {
    let run = RunDir::new(dir);
    let exporters = export::standard(opts.png)?;
    let media = load::media(&run)?;
    let report = build_with(&run, opts, media)?;
    let mut files = export::write_all(dir, &report, &exporters)?;
    if let Some(info) = report.runs.first() {
        files.extend(history::record(dir, info, &report.references)?);
    }
    Ok(Written {
        files,
        statistic: report.statistic,
        references: report.references,
    })
}

/// The references of the experiment file at `path` against a built report, for the cluster
/// kind that file names: a run checked against references written after it (or against
/// another experiment's), as the shipped experiments' tests do.
pub fn check_references(path: &Path, report: &Report) -> Result<ReferenceChecks, ReportError> {
    let (refs, cluster) = references::read(path)?;
    Ok(references::check(
        &refs,
        cluster,
        &report.cells,
        &report.failures,
        report.statistic,
    ))
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
        let one = load::run(
            &RunDir::new(dir),
            Some(&label),
            opts.baseline.as_deref(),
            &capacities_of(dir, opts),
        )?;
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
    // Runs are compared with each other, not paths: no contest is a tie for its path.
    let comparison = compare::compare(
        &cells,
        statistic,
        &BaselineRule::Run(&first),
        &SamePaths::default(),
    );
    let findings = findings(&comparison, &failures, statistic);
    let drivers = drivers::compare_drivers(&cells, statistic);
    let report = Report {
        runs,
        statistic,
        cells,
        comparison,
        findings,
        model: Vec::new(),
        studies: Vec::new(),
        // The medium's statistics are per run; a comparison across runs leaves them out.
        media: MediaReport::default(),
        failures,
        netpipe: netpipe_baselines(opts)?,
        topology_drawings: Vec::new(),
        references: ReferenceChecks::default(),
        progress: None,
        drift: None,
        drift_check: None,
        drivers,
        applications: None,
    };
    export::write_all(out, &report, &exporters)
}

/// `orchestrate report --compare OLD NEW --threshold T`: every cell of NEW against OLD.
/// Writes nothing.
pub fn check_regression(
    old: &Path,
    new: &Path,
    threshold: Percent,
    opts: &ReportOptions<'_>,
) -> Result<RegressionCheck, ReportError> {
    let load = |dir: &Path| load::run(&RunDir::new(dir), None, None, &capacities_of(dir, opts));
    let old_report = measured(load(old)?, opts);
    let new_report = measured(load(new)?, opts);
    Ok(regression::check(
        old.display().to_string(),
        new.display().to_string(),
        &old_report,
        &new_report,
        threshold,
    ))
}

/// What the wires of the run in `dir` carry, where the caller knows.
fn capacities_of(dir: &Path, opts: &ReportOptions<'_>) -> Vec<super::wire_screen::CellCapacity> {
    opts.wires.map(|w| w.capacities_of(dir)).unwrap_or_default()
}

/// A run's report as measured, nothing derived from its cells: all a regression check
/// compares.
fn measured(one: LoadedRun, opts: &ReportOptions<'_>) -> Report {
    let statistic = opts
        .statistic
        .or(one.info.manifest.statistic)
        .unwrap_or_default();
    Report {
        runs: vec![one.info],
        statistic,
        cells: one.cells,
        comparison: Vec::new(),
        findings: Vec::new(),
        model: Vec::new(),
        studies: Vec::new(),
        media: MediaReport::default(),
        failures: one.failures,
        netpipe: Vec::new(),
        topology_drawings: Vec::new(),
        references: ReferenceChecks::default(),
        progress: None,
        drift: None,
        drift_check: None,
        drivers: Vec::new(),
        applications: None,
    }
}

fn netpipe_baselines(opts: &ReportOptions<'_>) -> Result<Vec<NetpipeBaseline>, ReportError> {
    opts.netpipe
        .iter()
        .map(|n| netpipe::import(&n.name, &n.path))
        .collect()
}
