use clap::{Parser, Subcommand};

/// Declarative experiment orchestrator for interconnect topology studies.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Aggregate a run's records into tables, findings and figures (CSV, Markdown, SVG).
    Report(orchestrate::report::cli::ReportArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Report(args) => orchestrate::report::cli::run(args)?,
    }
    Ok(())
}
