//! `summary.json`: the cells of `summary.csv` for programs — the same rows and column names,
//! with numbers as numbers (rounded as the CSV rounds them), `null` for what is empty there,
//! the units stated once, and which run(s) and statistic the figures come from.

use serde::Serialize;

use super::exporter::{Exporter, RenderedFile};
use crate::report::data::CellSummary;
use crate::report::document::{Report, RunInfo};
use crate::report::error::ReportError;
use crate::report::format::csv_f64;

pub struct SummaryJson;

/// Bumped when a field changes meaning or goes away; new fields may appear without it.
const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Summary<'a> {
    format_version: u32,
    statistic: &'a str,
    units: Units,
    runs: Vec<Run<'a>>,
    cells: Vec<Cell<'a>>,
}

/// Field names end in their unit (`_mbit_s`, `_us`, `_bytes`); this says what each is.
#[derive(Serialize)]
struct Units {
    mbit_s: &'static str,
    us: &'static str,
    bytes: &'static str,
    ci_coverage: &'static str,
}

const UNITS: Units = Units {
    mbit_s: "Mbit/s, 10^6 bit/s",
    us: "microseconds",
    bytes: "bytes",
    ci_coverage: "probability, 0 to 1, that [ci_low, ci_high] covers the median",
};

#[derive(Serialize)]
struct Run<'a> {
    label: &'a str,
    experiment: Option<&'a str>,
    seed: Option<u64>,
    tool_version: Option<&'a str>,
}

impl<'a> Run<'a> {
    fn of(r: &'a RunInfo) -> Self {
        let m = &r.manifest;
        Run {
            label: &r.label,
            experiment: m.experiment.as_deref(),
            seed: m.seed,
            tool_version: m.tool.as_ref().and_then(|t| t.version.as_deref()),
        }
    }
}

/// One row of `summary.csv`, field for field.
#[derive(Serialize)]
struct Cell<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a str>,
    pattern: &'static str,
    protocol: &'static str,
    topology: &'a str,
    bonding: &'a str,
    bond_driver: Option<&'static str>,
    placement: &'static str,
    pairs: u32,
    size_bytes: u64,
    n_ok: usize,
    n_failed: usize,
    failed_trials: u64,
    best_mbit_s: Option<f64>,
    median_mbit_s: Option<f64>,
    mean_mbit_s: Option<f64>,
    ci_low_mbit_s: Option<f64>,
    ci_high_mbit_s: Option<f64>,
    ci_coverage: Option<f64>,
    per_pair_mean_mbit_s: Option<f64>,
    per_pair_min_mbit_s: Option<f64>,
    latency_p50_us: Option<f64>,
    latency_p90_us: Option<f64>,
    latency_p99_us: Option<f64>,
    latency_max_us: Option<f64>,
}

/// The number the CSV prints, as a number: both files agree to the last digit.
fn rounded(v: Option<f64>) -> Option<f64> {
    csv_f64(v).parse().ok()
}

impl<'a> Cell<'a> {
    fn of(c: &'a CellSummary) -> Self {
        let k = &c.key;
        let agg = c.aggregate;
        let ci = c.ci();
        Cell {
            run: k.config.run.as_deref(),
            pattern: k.measure.pattern.as_str(),
            protocol: k.measure.protocol.as_str(),
            topology: &k.config.topology,
            bonding: &k.config.bonding,
            bond_driver: k.config.bond_driver.map(|d| d.as_str()),
            placement: k.config.placement.as_str(),
            pairs: k.pairs,
            size_bytes: k.size_bytes,
            n_ok: c.n(),
            n_failed: c.failed_attempts,
            failed_trials: c.failed_trials,
            best_mbit_s: rounded(agg.map(|a| a.best)),
            median_mbit_s: rounded(agg.map(|a| a.median)),
            mean_mbit_s: rounded(agg.map(|a| a.mean)),
            ci_low_mbit_s: rounded(ci.map(|c| c.low)),
            ci_high_mbit_s: rounded(ci.map(|c| c.high)),
            ci_coverage: rounded(ci.map(|c| c.coverage)),
            per_pair_mean_mbit_s: rounded(c.per_pair_mean_mbit_s),
            per_pair_min_mbit_s: rounded(c.per_pair_min_mbit_s),
            latency_p50_us: rounded(c.latency.p50_us),
            latency_p90_us: rounded(c.latency.p90_us),
            latency_p99_us: rounded(c.latency.p99_us),
            latency_max_us: rounded(c.latency.max_us),
        }
    }
}

impl Exporter for SummaryJson {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let summary = Summary {
            format_version: FORMAT_VERSION,
            statistic: report.statistic.as_str(),
            units: UNITS,
            runs: report.runs.iter().map(Run::of).collect(),
            cells: report.cells.iter().map(Cell::of).collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&summary)
            .map_err(|e| ReportError::Internal(format!("summary.json: {e}")))?;
        bytes.push(b'\n');
        Ok(vec![RenderedFile {
            path: "summary.json".into(),
            bytes,
        }])
    }
}
