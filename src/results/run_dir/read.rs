//! Reading a run directory back: its manifest, its point attempts, the medium's statistics,
//! and its records as a Polars frame (converted to Parquet first when needed).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use polars::prelude::{DataFrame, LazyFrame, ScanArgsParquet};

use crate::results::error::ResultsError;
use crate::results::manifest::Manifest;
use crate::results::media::{self, HostRow, MediaRow, MediaTotal};
use crate::results::schema::PointRow;
use crate::results::store::ingest;

use super::layout::RunDir;

impl RunDir {
    /// The medium's statistics per (point, rep, segment), the last line of each (see
    /// [`media`](crate::results::media)); `None` when the run has no `media.jsonl` (no
    /// emulator, or a run from before it).
    pub fn media(&self) -> Result<Option<Vec<MediaRow>>, ResultsError> {
        Ok(media::read_jsonl(&self.media_jsonl())?.map(media::last_per_segment))
    }

    /// The `media` Polars frame (one row per point and segment), when the run has one.
    pub fn media_frame(&self) -> Result<Option<DataFrame>, ResultsError> {
        match self.media()? {
            Some(rows) => Ok(Some(media::media_frame(&rows)?)),
            None => Ok(None),
        }
    }

    /// Host costs per (point, rep, node), the last line of each; empty without `hosts.jsonl`.
    pub fn hosts(&self) -> Result<Vec<HostRow>, ResultsError> {
        Ok(media::read_jsonl(&self.hosts_jsonl())?
            .map(media::last_per_host)
            .unwrap_or_default())
    }

    /// Each configuration's totals (or why they are missing), in file order; empty without
    /// `media-total.jsonl`.
    pub fn media_totals(&self) -> Result<Vec<MediaTotal>, ResultsError> {
        Ok(media::read_jsonl(&self.media_total_jsonl())?.unwrap_or_default())
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
                path: self.root().to_path_buf(),
            }),
            (Some(src), Some(dst)) if dst >= src => Ok(false),
            (None, Some(_)) => Ok(false),
            (Some(_), _) => ingest(self).map(|_| true),
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
