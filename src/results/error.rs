use std::path::PathBuf;

/// What went wrong reading or writing a run directory.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a valid row: {source}")]
    Row {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: not a valid manifest: {source}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: neither records.parquet nor records.jsonl found; is this a run directory?")]
    NoRecords { path: PathBuf },
    #[error("polars: {0}")]
    Polars(#[from] polars::error::PolarsError),
}

impl ResultsError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
