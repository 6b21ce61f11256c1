//! The `report` subcommand's arguments and what it does with them; `main` only dispatches.

use std::path::PathBuf;

use clap::Args;

use super::build::{Written, check_regression, compare, report_and_check};
use super::error::ReportError;
use super::options::{NetpipeSource, ReportOptions};
use super::predicted::PredictThroughput;
use super::same_paths::DescribePaths;
use super::spec_diff::SpecDiff;
use super::terminal;
use super::topology::DrawTopology;
use super::wire_screen::RunWires;
use crate::results::Statistic;
use crate::spec::reference::Percent;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory to report on.
    #[arg(required_unless_present = "compare")]
    pub run_dir: Option<PathBuf>,

    /// Compare these run directories instead: the same tables across runs, each
    /// configuration against the same one in the first run, written into --out. Each run's
    /// points above what its own plan says its wires carry are set aside, as in its own
    /// report. With --threshold: a regression check of the second run (NEW) against the
    /// first (OLD).
    #[arg(long, num_args = 2.., value_name = "RUN_DIR", conflicts_with = "run_dir")]
    pub compare: Vec<PathBuf>,

    /// Regression check: `--compare OLD NEW --threshold 5%` prints, for every cell (matched
    /// on pattern, protocol, configuration, placement, pairs and size), the change of the
    /// headline statistic (NEW - OLD) / OLD with both runs' intervals for the median, and a
    /// verdict. WORSE: the change is below -PERCENT and the two intervals do not overlap;
    /// better: above +PERCENT and not overlapping; same: anything else. A cell with one
    /// repetition has no interval and counts as its value. MISSING: OLD has a value for the
    /// cell and NEW does not. Exits 3 when any cell is worse or missing, naming those cells,
    /// else 0. Writes no files.
    #[arg(long, value_name = "PERCENT", requires = "compare", value_parser = parse_percent)]
    pub threshold: Option<Percent>,

    /// Where --compare writes its outputs.
    #[arg(long, value_name = "DIR", default_value = "reports/compare")]
    pub out: PathBuf,

    /// Headline statistic (default: the run's, else median).
    #[arg(long, value_enum)]
    pub statistic: Option<Statistic>,

    /// Baseline topology (default: the run's).
    #[arg(long, value_name = "TOPOLOGY")]
    pub baseline: Option<String>,

    /// A NetPIPE output file to draw beside the run, as NAME=PATH
    /// (e.g. "1999 cluster, 100 Mbit/s switch=beam.txt"). Repeatable.
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_netpipe)]
    pub netpipe: Vec<NetpipeSource>,

    /// Also write PNG copies of the figures. Only a build with the `png` feature shows this
    /// flag; without it, the flag is hidden from --help and says how to get it.
    #[cfg_attr(feature = "png", arg(long))]
    #[cfg_attr(not(feature = "png"), arg(long, hide = true))]
    pub png: bool,

    /// Print JSON instead of text: the written files and reference checks, or with
    /// --threshold the regression check.
    #[arg(long)]
    pub json: bool,
}

/// The exit code of `report` when a regression check or a reference value fails.
pub const CHECK_FAILED: u8 = 3;

/// How `report` went, beyond errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Written, and every check passed (or there was none).
    Passed,
    /// A cell regressed or a reference value failed: exit with [`CHECK_FAILED`].
    ChecksFailed,
}

fn parse_percent(s: &str) -> Result<Percent, String> {
    s.parse()
        .map_err(|e: crate::spec::InvalidValue| e.to_string())
}

fn parse_netpipe(s: &str) -> Result<NetpipeSource, String> {
    let (name, path) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected NAME=PATH, not {s:?}"))?;
    if name.is_empty() || path.is_empty() {
        return Err(format!("expected NAME=PATH, not {s:?}"));
    }
    Ok(NetpipeSource {
        name: name.to_owned(),
        path: path.into(),
    })
}

/// Runs `orchestrate report` and prints what it wrote and what its checks say.
/// `drawer` draws the run's topologies into the report, when given.
/// `model` gives the analytic model's predictions, when known; `wires` what any run's wires
/// carry, for comparisons across runs.
pub fn run(
    args: ReportArgs,
    drawer: Option<&dyn DrawTopology>,
    model: Option<&dyn PredictThroughput>,
    paths: Option<&dyn DescribePaths>,
    wires: Option<&dyn RunWires>,
) -> Result<Outcome, ReportError> {
    let opts = ReportOptions {
        statistic: args.statistic,
        baseline: args.baseline,
        netpipe: args.netpipe,
        topology: drawer,
        png: args.png,
        model,
        paths,
        wires,
    };
    // Before any cell: what else differs between the runs compared (standard error, so that
    // --json output stays one document).
    if let Some((first, others)) = args.compare.split_first() {
        let label = |p: &PathBuf| p.display().to_string();
        for other in others {
            eprint!(
                "{}",
                SpecDiff::between(first, other).render(&label(first), &label(other))
            );
        }
    }
    if let Some(threshold) = args.threshold {
        return regression_check(&args.compare, threshold, &opts, args.json);
    }
    let written = match &args.run_dir {
        Some(dir) => report_and_check(dir, &opts)?,
        None => Written {
            files: compare(&args.compare, &args.out, &opts)?,
            statistic: opts.statistic.unwrap_or_default(),
            references: Default::default(),
        },
    };
    let paths: Vec<String> = written
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if args.json {
        let v = serde_json::json!({ "written": paths, "references": written.references });
        println!("{v}");
    } else {
        for p in &paths {
            println!("{p}");
        }
        print!(
            "{}",
            terminal::references(&written.references, written.statistic)
        );
    }
    Ok(if written.references.all_passed() {
        Outcome::Passed
    } else {
        Outcome::ChecksFailed
    })
}

/// `--compare OLD NEW --threshold T`: prints the check and says whether it passed.
fn regression_check(
    dirs: &[PathBuf],
    threshold: Percent,
    opts: &ReportOptions<'_>,
    json: bool,
) -> Result<Outcome, ReportError> {
    let [old, new] = dirs else {
        return Err(ReportError::CheckNeedsTwoRuns(dirs.len()));
    };
    let check = check_regression(old, new, threshold, opts)?;
    if json {
        let v = serde_json::to_string_pretty(&check)
            .map_err(|e| ReportError::Internal(e.to_string()))?;
        println!("{v}");
    } else {
        print!("{}", terminal::regression(&check));
    }
    Ok(if check.passed() {
        Outcome::Passed
    } else {
        Outcome::ChecksFailed
    })
}
