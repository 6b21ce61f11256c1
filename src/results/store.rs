//! Writing records to Parquet (for Polars) and CSV (for people), in bounded-size batches so a
//! run of any length converts in constant memory.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::{Path, PathBuf};

use polars::io::csv::write::BatchedWriter as CsvBatched;
use polars::io::parquet::write::{BatchedWriter as ParquetBatched, KeyValueMetadata};
use polars::prelude::*;

use super::error::ResultsError;
use super::manifest::Manifest;
use super::run_dir::RunDir;
use super::schema::{RecordColumns, RecordRow, col as c};

/// Rows per Parquet row group and per CSV batch (Polars' batched writer makes each batch one
/// row group). Polars' streaming reader decodes whole row groups ahead of the query: with
/// 1 048 576 rows a report of 10 million records held 1.1-1.2 GiB, with these 0.8-0.9 GiB at
/// the same speed.
const BATCH_ROWS: usize = 1 << 18;

/// Streams [`RecordRow`]s into `records.parquet` and, optionally, `records.csv`.
///
/// Files are written under temporary names and renamed by [`RecordWriter::finish`], so a
/// reader never sees a half-written store.
pub struct RecordWriter {
    parquet: ParquetBatched<BufWriter<File>>,
    csv: Option<CsvBatched<BufWriter<File>>>,
    buffer: RecordColumns,
    renames: Vec<(PathBuf, PathBuf)>,
    rows: u64,
}

/// What the Parquet file says about where its records come from, as file key-value metadata
/// (`orchestrate.experiment`, `orchestrate.seed`, `orchestrate.tool_version`), so a records
/// file copied out of its run directory still names its experiment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordsMetadata {
    pub experiment: Option<String>,
    pub seed: Option<u64>,
    pub tool_version: Option<String>,
}

impl RecordsMetadata {
    /// The keys under which the values are stored.
    pub const EXPERIMENT: &str = "orchestrate.experiment";
    pub const SEED: &str = "orchestrate.seed";
    pub const TOOL_VERSION: &str = "orchestrate.tool_version";

    pub fn of(manifest: &Manifest) -> Self {
        RecordsMetadata {
            experiment: manifest.experiment.clone(),
            seed: manifest.seed,
            tool_version: manifest.tool.as_ref().and_then(|t| t.version.clone()),
        }
    }

    /// The pairs that have a value, in a fixed order (the file's bytes depend on it).
    fn key_values(&self) -> Vec<(String, String)> {
        [
            (Self::EXPERIMENT, self.experiment.clone()),
            (Self::SEED, self.seed.map(|s| s.to_string())),
            (Self::TOOL_VERSION, self.tool_version.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect()
    }
}

impl RecordWriter {
    pub fn create(
        parquet_path: &Path,
        csv_path: Option<&Path>,
        metadata: &RecordsMetadata,
    ) -> Result<Self, ResultsError> {
        let schema = RecordColumns::default()
            .take_frame()?
            .schema()
            .as_ref()
            .clone();
        let mut renames = Vec::new();
        let open = |path: &Path, renames: &mut Vec<(PathBuf, PathBuf)>| {
            let tmp = tmp_path(path);
            let file = File::create(&tmp).map_err(|e| ResultsError::io(&tmp, e))?;
            renames.push((tmp, path.to_path_buf()));
            Ok::<_, ResultsError>(BufWriter::new(file))
        };
        let parquet = ParquetWriter::new(open(parquet_path, &mut renames)?)
            .with_compression(ParquetCompression::Zstd(None))
            .with_row_group_size(Some(BATCH_ROWS))
            .with_key_value_metadata(Some(KeyValueMetadata::from_static(metadata.key_values())))
            .batched(&schema)?;
        let csv = match csv_path {
            Some(p) => Some(CsvWriter::new(open(p, &mut renames)?).batched(&csv_schema(&schema))?),
            None => None,
        };
        Ok(Self {
            parquet,
            csv,
            buffer: RecordColumns::default(),
            renames,
            rows: 0,
        })
    }

    pub fn push(&mut self, row: RecordRow) -> Result<(), ResultsError> {
        self.buffer.push(row);
        self.rows += 1;
        if self.buffer.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ResultsError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let frame = self.buffer.take_frame()?;
        self.parquet.write_batch(&frame)?;
        if let Some(csv) = &mut self.csv {
            csv.write_batch(&frame.drop_many(LIST_COLUMNS))?;
        }
        Ok(())
    }

    /// Writes what is buffered, closes the files and moves them into place.
    pub fn finish(mut self) -> Result<u64, ResultsError> {
        self.flush()?;
        self.parquet.finish()?;
        if let Some(csv) = &mut self.csv {
            csv.finish()?;
        }
        // Dropping the writers flushes their BufWriters before the renames.
        let Self {
            parquet,
            csv,
            renames,
            rows,
            ..
        } = self;
        drop(parquet);
        drop(csv);
        for (tmp, dest) in renames {
            std::fs::rename(&tmp, &dest).map_err(|e| ResultsError::io(&dest, e))?;
        }
        Ok(rows)
    }
}

/// The records' list columns, which CSV cannot hold: records.csv leaves them out (they are in
/// records.parquet and records.jsonl).
const LIST_COLUMNS: [&str; 2] = [c::PROGRESS_OFFSET_NS, c::PROGRESS_BYTES];

fn csv_schema(schema: &Schema) -> Schema {
    schema
        .iter()
        .filter(|(name, _)| !LIST_COLUMNS.contains(&name.as_str()))
        .map(|(name, dtype)| (name.clone(), dtype.clone()))
        .collect()
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    path.with_file_name(name)
}

/// Converts the run's `records.jsonl` into `records.parquet` and `records.csv`, the Parquet
/// file carrying the manifest's experiment, seed and tool version ([`RecordsMetadata`]).
///
/// Returns the number of records. A line that is not a valid [`RecordRow`] is an error naming
/// file and line: a store with silently missing records would bias every statistic.
pub fn ingest(run: &RunDir) -> Result<u64, ResultsError> {
    let src = run.records_jsonl();
    let file = File::open(&src).map_err(|e| ResultsError::io(&src, e))?;
    // A run without a manifest reads as an empty one: it converts, without metadata.
    let metadata = RecordsMetadata::of(&run.manifest()?);
    let mut writer =
        RecordWriter::create(&run.records_parquet(), Some(&run.records_csv()), &metadata)?;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| ResultsError::io(&src, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let row: RecordRow = serde_json::from_str(&line).map_err(|source| ResultsError::Row {
            path: src.clone(),
            line: i + 1,
            source,
        })?;
        writer.push(row)?;
    }
    writer.finish()
}
