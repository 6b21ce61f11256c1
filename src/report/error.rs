//! What can go wrong while building or writing a report. In its own file so that every stage
//! can return it without depending on the module that runs them all.

use std::path::PathBuf;

use crate::results::ResultsError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("polars: {0}")]
    Polars(#[from] polars::error::PolarsError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not NetPIPE output: {message}")]
    Netpipe { path: PathBuf, message: String },
    #[error("drawing a figure: {0}")]
    Plot(String),
    #[error("baseline topology {name:?} has no records in this run (topologies: {known})")]
    UnknownBaseline { name: String, known: String },
    #[error(
        "PNG output needs orchestrate built with the `png` feature (cargo build --features png)"
    )]
    PngUnavailable,
    #[error("compare needs at least two run directories")]
    TooFewRuns,
    /// A malformed `[[reference]]` in the run's copy of its experiment, every problem located.
    #[error("{}", .0.errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Spec(crate::spec::SpecErrors),
    #[error("--threshold compares exactly two runs, OLD and NEW; {0} were given")]
    CheckNeedsTwoRuns(usize),
    #[error("{0}")]
    Internal(String),
}
