//! Where each file of a run directory lives: every name in the directory is spelled here, and
//! only here, for the run that writes it and the report that reads it.

use std::path::{Path, PathBuf};

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
    /// Where the run keeps copies of the NetPIPE tables its report draws beside it.
    pub fn baselines_dir(&self) -> PathBuf {
        self.root.join("baselines")
    }
    /// The copy of the `k`-th `[report] netpipe` table, file `file`, as `experiment.toml`
    /// refers to it (relative to the run).
    pub fn baseline_relative(k: usize, file: &str) -> String {
        format!("baselines/{k}-{file}")
    }
    pub fn plan_json(&self) -> PathBuf {
        self.root.join("plan.json")
    }
    /// Where every configuration keeps its nodes' scripts.
    pub fn scripts_root(&self) -> PathBuf {
        self.root.join("scripts")
    }
    /// Where configuration `id` (of topology `topology`) keeps its nodes' scripts.
    pub fn scripts_dir(&self, id: usize, topology: &str) -> PathBuf {
        self.scripts_root().join(format!("{id}-{topology}"))
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
}
