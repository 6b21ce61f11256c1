//! The `report` subcommand's arguments and what it does with them; `main` only dispatches.

use std::path::PathBuf;

use clap::Args;

use super::{NetpipeSource, ReportError, ReportOptions};
use crate::results::Statistic;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory to report on.
    #[arg(required_unless_present = "compare")]
    pub run_dir: Option<PathBuf>,

    /// Compare these run directories instead: the same tables across runs.
    #[arg(long, num_args = 2.., value_name = "RUN_DIR", conflicts_with = "run_dir")]
    pub compare: Vec<PathBuf>,

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

    /// Also write PNG copies of the figures (needs the `png` build feature).
    #[arg(long)]
    pub png: bool,

    /// Print the written files as JSON.
    #[arg(long)]
    pub json: bool,
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

/// Runs `orchestrate report` and prints what it wrote.
/// `drawer` draws the run's topologies into the report, when given.
/// `model` gives the analytic model's predictions, when known.
pub fn run(
    args: ReportArgs,
    drawer: Option<&dyn super::DrawTopology>,
    model: Option<&dyn super::PredictThroughput>,
) -> Result<(), ReportError> {
    let opts = ReportOptions {
        statistic: args.statistic,
        baseline: args.baseline,
        netpipe: args.netpipe,
        topology: drawer,
        png: args.png,
        model,
    };
    let written = match &args.run_dir {
        Some(dir) => super::report_run(dir, &opts)?,
        None => super::compare(&args.compare, &args.out, &opts)?,
    };
    if args.json {
        let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        println!("{}", serde_json::json!({ "written": paths }));
    } else {
        for p in &written {
            println!("{}", p.display());
        }
    }
    Ok(())
}
