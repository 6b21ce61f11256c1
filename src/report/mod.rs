//! Reports: aggregation of a run's records, comparisons between configurations, and the
//! outputs written into the run directory.
//!
//! | output | what |
//! |---|---|
//! | `summary.csv` | one row per cell (measure × configuration × pairs × size): n, failures, best, median, mean, the median's CI and its coverage, per-pair mean and minimum, latency percentiles |
//! | `applications.csv` | only for runs of collectives: one row per collective cell (configuration, collective, size) with its time per iteration (mean over ranks), interval, fastest and slowest rank, ratio to the baseline and the model beside it; report.md's "Applications" section and appendix.md's "Applications: every cell" give the same |
//! | `model.csv` | token-test cells beside the analytic model: measured, predicted, their ratio, what limits the pairs |
//! | `media.csv` | only for runs on the medium emulator: one row per cell with the medium during its points — collisions per frame, the busiest segment and its utilisation, excess-collision and queue drops, the emulator's lateness p99 and flagged points |
//! | `summary.json` | the cells of `summary.csv` with typed numbers, the units and the run(s) they come from |
//! | `comparison.csv` | long form: a row per (measure, pairs, size) × configuration with its value, CI, n, baseline, ratio to it, rank in its row and whether the row's win is clear |
//! | `report.md` | laid out for a paper, every table row within 100 characters: a short summary, each study's questions asked of the run, the configurations' short labels (`short_labels`) in a legend table, one results table per measurement and placement (`results_tables`), the reference values, figures, method and setup |
//! | `appendix.md` | what a reader checks behind report.md: every finding, the pivot tables with each cell's interval and winner, the model beside each token-test cell (its causes named once), "The medium", drift, latency, failed points, NetPIPE baselines and the environment (facts equal on every node once) |
//! | `tables.tex` | report.md's legend and results tables as LaTeX with booktabs rules |
//! | `../history.csv`, `../history.svg` | beside the experiment's runs, when it has `[[reference]]` values: one line per run and reference (expected, bounds, measured, verdict), each reported run once, and each reference's figure run after run between its bounds (`history`) |
//! | `figures/*.svg` | 720 px wide for a 3.5 in column: throughput vs size (a panel per pair count, split by placement past six series), throughput vs pairs at the largest size, latency vs size (log-log), NetPIPE-style throughput vs block size; a figure with one x value is a bar chart; `*.png` copies with `--png` |
//!
//! The pipeline: `load` (the one reader of a run directory) → `aggregate` (Polars, over
//! `records.parquet`) → `cells` (statistics per cell, `stats`) → `compare` (pivot, baseline
//! ratios, winners) → `findings`, the analytic model beside the token cells (`predicted`),
//! each study's section (`study`: the only place that names topologies) and the reference
//! values (`references`) → the exporters (`export`), one per format, each taking the whole
//! [`Report`] (its medium statistics included). Everything after Polars works on one row per
//! point and is plain, ordered Rust with fixed number formatting, so outputs are
//! byte-identical on re-runs. Every stage speaks of the cells in `data`; every judgement is
//! one `Verdict` (`verdict`).
//!
//! Entry points (`build`): [`report_run`] (`orchestrate report <run-dir>`, also run at the
//! end of a run), [`compare`] (`orchestrate report --compare <dir>...`), the regression check
//! (`--compare OLD NEW --threshold 5%`, which compares two built reports) and [`build`] (the
//! report as data, for tests and other front ends). [`ReportArgs`] and [`run_command`] are
//! the `report` subcommand; the terminal text of its checks is in `terminal`.

mod aggregate;
mod applications;
mod build;
mod cells;
mod cli;
mod compare;
mod contrast;
mod data;
mod document;
mod drift;
mod drift_check;
mod drivers;
mod emulator_stats;
mod error;
mod exclusion;
mod export;
mod figures;
mod findings;
mod format;
mod gather;
mod history;
mod intervals;
mod load;
mod netpipe;
mod netpipe_curves;
mod node_facts;
mod options;
mod predicted;
mod references;
mod regression;
mod results_tables;
mod same_paths;
mod short_labels;
mod simulated;
mod spec_diff;
mod stats;
mod study;
mod terminal;
mod topology;
mod verdict;
mod window_progress;
mod wire_screen;

pub use applications::CollectiveCellPrediction;
pub use build::{Written, build, check_references, compare, report_and_check, report_run};
pub use cli::{CHECK_FAILED, Outcome, ReportArgs, run as run_command};
pub use document::Report;
pub use error::ReportError;
pub use netpipe::import as import_netpipe;
pub use options::{NetpipeSource, ReportOptions};
pub use predicted::{CellPrediction, PredictThroughput, token_capacities};
pub use references::{ReferenceCheck, ReferenceChecks};
pub use same_paths::{DescribePaths, PlacementPaths};
pub use simulated::{TwinCell, TwinSetup, TwinWires};
pub use terminal::references as references_text;
pub use topology::DrawTopology;
pub use verdict::Verdict;
pub use wire_screen::{CellCapacity, RunWires};
