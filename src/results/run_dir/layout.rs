//! A run directory on disk: where each file lives and how to load it.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use polars::prelude::DataFrame;

use crate::results::error::ResultsError;
use crate::results::manifest::Manifest;
use crate::results::media::{self, HostRow, MediaRow, MediaTotal};
use crate::results::schema::PointRow;

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

    /// The experiment as it ran, with its topologies pointing at the copies beside it.
    pub fn experiment_toml(&self) -> PathBuf {
        self.root.join("experiment.toml")
    }
    /// Where the run keeps copies of its topologies.
    pub fn topologies_dir(&self) -> PathBuf {
        self.root.join("topologies")
    }
    /// The copy of topology `name`, as `experiment.toml` refers to it (relative to the run).
    pub fn topology_relative(name: &str) -> String {
        format!("topologies/{name}.toml")
    }
    /// The copy of topology `name`.
    pub fn topology_toml(&self, name: &str) -> PathBuf {
        self.root.join(Self::topology_relative(name))
    }
    pub fn plan_json(&self) -> PathBuf {
        self.root.join("plan.json")
    }
    /// Where configuration `id` (of topology `topology`) keeps its nodes' scripts.
    pub fn scripts_dir(&self, id: usize, topology: &str) -> PathBuf {
        self.root.join("scripts").join(format!("{id}-{topology}"))
    }
    /// A node's apply script within a configuration's [`scripts_dir`](Self::scripts_dir).
    pub fn apply_script(scripts: &Path, node: &str) -> PathBuf {
        scripts.join(format!("{node}.apply.sh"))
    }
    /// A node's teardown script within a configuration's [`scripts_dir`](Self::scripts_dir).
    pub fn teardown_script(scripts: &Path, node: &str) -> PathBuf {
        scripts.join(format!("{node}.teardown.sh"))
    }
    /// The controller's ledger of nodes that may still hold a configuration.
    pub fn ledger_json(&self) -> PathBuf {
        self.root.join("ledger.json")
    }
    /// Where the ledger is written before it is renamed into place.
    pub fn ledger_part(&self) -> PathBuf {
        self.root.join("ledger.json.part")
    }
    /// The run's log: one time-stamped line per event.
    pub fn run_log(&self) -> PathBuf {
        self.root.join("run.log")
    }
    pub fn bonds_jsonl(&self) -> PathBuf {
        self.root.join("bonds.jsonl")
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
    pub fn media_jsonl(&self) -> PathBuf {
        self.root.join("media.jsonl")
    }
    pub fn hosts_jsonl(&self) -> PathBuf {
        self.root.join("hosts.jsonl")
    }
    pub fn media_total_jsonl(&self) -> PathBuf {
        self.root.join("media-total.jsonl")
    }

    /// The medium's statistics per (point, rep, segment), the last line of each (see
    /// [`media`](crate::results::media)); `None` when the run has no `media.jsonl` (no emulator, or a
    /// run from before it).
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
}
