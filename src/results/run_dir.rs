//! A run directory on disk: where each file lives and how to load it.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::schema::PointRow;
use super::{Manifest, ResultsError, store};

/// A run directory (see the [module docs](super) for its files).
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.root.join("manifest.json")
    }
    pub fn records_jsonl(&self) -> PathBuf {
        self.root.join("records.jsonl")
    }
    pub fn points_jsonl(&self) -> PathBuf {
        self.root.join("points.jsonl")
    }
    pub fn records_parquet(&self) -> PathBuf {
        self.root.join("records.parquet")
    }
    pub fn records_csv(&self) -> PathBuf {
        self.root.join("records.csv")
    }

    /// The manifest, or an empty one when the run has none.
    pub fn manifest(&self) -> Result<Manifest, ResultsError> {
        let path = self.manifest_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|source| ResultsError::Manifest { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(ResultsError::io(path, e)),
        }
    }

    /// Every point attempt, in file order; empty when the run has no `points.jsonl`.
    pub fn points(&self) -> Result<Vec<PointRow>, ResultsError> {
        let path = self.points_jsonl();
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ResultsError::io(path, e)),
        };
        let mut rows = Vec::new();
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| ResultsError::io(&path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            rows.push(
                serde_json::from_str(&line).map_err(|source| ResultsError::Row {
                    path: path.clone(),
                    line: i + 1,
                    source,
                })?,
            );
        }
        Ok(rows)
    }

    /// Makes sure `records.parquet` reflects `records.jsonl`, converting when the Parquet file
    /// is missing or older. Returns whether it converted.
    pub fn ensure_store(&self) -> Result<bool, ResultsError> {
        let jsonl = self.records_jsonl();
        let parquet = self.records_parquet();
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        match (modified(&jsonl), modified(&parquet)) {
            (None, None) => Err(ResultsError::NoRecords {
                path: self.root.clone(),
            }),
            (Some(src), Some(dst)) if dst >= src => Ok(false),
            (None, Some(_)) => Ok(false),
            (Some(_), _) => store::ingest(self).map(|_| true),
        }
    }

    /// All records as a lazy Polars frame over `records.parquet`, converting first if needed.
    pub fn scan_records(&self) -> Result<LazyFrame, ResultsError> {
        self.ensure_store()?;
        let path = self.records_parquet();
        let path = path.to_string_lossy();
        Ok(LazyFrame::scan_parquet(
            path.as_ref().into(),
            ScanArgsParquet::default(),
        )?)
    }
}
