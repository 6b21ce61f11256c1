//! Writing a run directory: the resolved specs and rendered scripts up front, then records and
//! point outcomes appended and synced point by point, so a killed run loses at most the point
//! in flight. Layout and schemas: [`crate::results`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::{Experiment, Plan};
use crate::results::{HostRow, MediaRow, MediaTotal, PointRow, PointStatus, RecordRow, RunDir};
use crate::spec::NodeName;

/// The controller's ledger: which nodes have a configuration applied and not yet torn down.
/// Written before anything is applied and removed once teardown succeeded everywhere, so
/// `orchestrate teardown <run-dir>` can finish what a crashed controller left.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ledger {
    pub configuration: usize,
    pub topology: String,
    /// The inventory the nodes were reached through.
    pub inventory: PathBuf,
    /// Where the node-side ledger lives on each node.
    pub node_ledger: String,
    /// Nodes that may still hold changes.
    pub nodes: Vec<NodeName>,
    /// The virtual cluster the nodes belong to: when it is gone, so are the changes.
    #[serde(default)]
    pub virtual_cluster: Option<String>,
}

pub struct RunWriter {
    pub dir: RunDir,
    records: File,
    points: File,
}

fn io(path: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", path.display())
}

fn append(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io(path, e))
}

impl RunWriter {
    /// A new run directory under `root/<experiment>/<UTC time>`, with the experiment and its
    /// topologies copied in (so the run can be resumed and re-planned from the directory
    /// alone), the plan as JSON, and every node's scripts.
    pub fn create(root: &Path, e: &Experiment, plan: &Plan) -> anyhow::Result<RunWriter> {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "-");
        let dir = root.join(e.name.as_str()).join(stamp);
        std::fs::create_dir_all(dir.join("topologies")).map_err(|x| io(&dir, x))?;
        // The experiment refers to topologies by relative path: keep that layout.
        let text = std::fs::read_to_string(&e.path).map_err(|x| io(&e.path, x))?;
        let spec: toml::Table = text.parse()?;
        let mut rewritten = spec.clone();
        let mut paths = Vec::new();
        for (t, p) in e.topologies.iter().zip(
            spec.get("topologies")
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten(),
        ) {
            let src = e
                .path
                .parent()
                .unwrap_or(Path::new("."))
                .join(p.as_str().unwrap_or_default());
            let name = format!("topologies/{}.toml", t.name);
            std::fs::copy(&src, dir.join(&name)).map_err(|x| io(&src, x))?;
            paths.push(toml::Value::String(name));
        }
        rewritten.insert("topologies".into(), toml::Value::Array(paths));
        if let Some(cluster) = rewritten.get_mut("cluster").and_then(|c| c.as_table_mut())
            && let Some(inv) = cluster.get("inventory").and_then(|v| v.as_str())
        {
            let abs = std::path::absolute(e.path.parent().unwrap_or(Path::new(".")).join(inv))?;
            cluster.insert(
                "inventory".into(),
                toml::Value::String(abs.display().to_string()),
            );
        }
        let header = format!(
            "# Copied from {} for this run; topologies point at the copies beside it.\n",
            e.path.display()
        );
        std::fs::write(
            dir.join("experiment.toml"),
            header + &toml::to_string_pretty(&rewritten)?,
        )?;
        std::fs::write(dir.join("plan.json"), serde_json::to_string_pretty(plan)?)?;
        for c in &plan.configurations {
            let sdir = dir
                .join("scripts")
                .join(format!("{}-{}", c.id, c.topology.name));
            std::fs::create_dir_all(&sdir)?;
            for s in &c.scripts {
                std::fs::write(sdir.join(format!("{}.apply.sh", s.node)), &s.apply)?;
                std::fs::write(sdir.join(format!("{}.teardown.sh", s.node)), &s.teardown)?;
            }
        }
        Self::open(&dir)
    }

    /// An existing run directory, for appending (resume).
    pub fn open(dir: &Path) -> anyhow::Result<RunWriter> {
        let rd = RunDir::new(dir);
        Ok(RunWriter {
            records: append(&rd.records_jsonl())?,
            points: append(&rd.points_jsonl())?,
            dir: rd,
        })
    }

    pub fn root(&self) -> &Path {
        self.dir.root()
    }

    /// Appends the final counters of the userspace bonds of one configuration, a JSON line
    /// per bond, to `bonds.jsonl`.
    pub fn append_bonds(&mut self, lines: &[serde_json::Value]) -> anyhow::Result<()> {
        let path = self.dir.root().join("bonds.jsonl");
        let mut f = append(&path)?;
        let mut buf = String::new();
        for l in lines {
            buf += &l.to_string();
            buf.push('\n');
        }
        f.write_all(buf.as_bytes())?;
        f.sync_all()?;
        Ok(())
    }

    /// Appends one point's medium statistics to `media.jsonl` and `hosts.jsonl`, synced.
    /// Called before [`RunWriter::append_point`]: a point re-measured after a crash between
    /// the two only adds lines, and readers keep the last per (point, segment).
    pub fn append_media(&mut self, media: &[MediaRow], hosts: &[HostRow]) -> anyhow::Result<()> {
        append_lines(&self.dir.media_jsonl(), media)?;
        append_lines(&self.dir.hosts_jsonl(), hosts)
    }

    /// Appends a configuration's totals from the medium emulator to `media-total.jsonl`.
    pub fn append_media_total(&mut self, total: &MediaTotal) -> anyhow::Result<()> {
        append_lines(&self.dir.media_total_jsonl(), std::slice::from_ref(total))
    }

    /// Appends a point's records, then its outcome, and syncs both: the outcome line is what
    /// marks a point done, so it goes last.
    pub fn append_point(&mut self, records: &[RecordRow], point: &PointRow) -> anyhow::Result<()> {
        let mut buf = String::new();
        for r in records {
            buf += &serde_json::to_string(r)?;
            buf.push('\n');
        }
        self.records.write_all(buf.as_bytes())?;
        self.records.sync_data()?;
        let mut line = serde_json::to_string(point)?;
        line.push('\n');
        self.points.write_all(line.as_bytes())?;
        self.points.sync_data()?;
        Ok(())
    }

    /// Points already measured successfully (for `--resume`).
    pub fn done_points(&self) -> anyhow::Result<std::collections::BTreeSet<u32>> {
        Ok(self
            .dir
            .points()?
            .into_iter()
            .filter(|p| p.status == PointStatus::Ok)
            .map(|p| p.point)
            .collect())
    }

    pub fn ledger_path(&self) -> PathBuf {
        self.root().join("ledger.json")
    }

    pub fn write_ledger(&self, l: &Ledger) -> anyhow::Result<()> {
        let tmp = self.root().join("ledger.json.part");
        std::fs::write(&tmp, serde_json::to_string_pretty(l)?)?;
        File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, self.ledger_path())?;
        Ok(())
    }

    pub fn clear_ledger(&self) -> anyhow::Result<()> {
        match std::fs::remove_file(self.ledger_path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    pub fn log(&self, line: &str) {
        if let Ok(mut f) = append(&self.root().join("run.log")) {
            let stamp = humantime::format_rfc3339_millis(std::time::SystemTime::now());
            let _ = writeln!(f, "{stamp} {line}");
        }
    }
}

/// Appends `rows` as JSON lines and syncs; nothing (not even an empty file) without rows.
fn append_lines<T: Serialize>(path: &Path, rows: &[T]) -> anyhow::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut buf = String::new();
    for r in rows {
        buf += &serde_json::to_string(r)?;
        buf.push('\n');
    }
    let mut f = append(path)?;
    f.write_all(buf.as_bytes()).map_err(|e| io(path, e))?;
    f.sync_data().map_err(|e| io(path, e))?;
    Ok(())
}

pub fn read_ledger(dir: &Path) -> anyhow::Result<Option<Ledger>> {
    match std::fs::read_to_string(dir.join("ledger.json")) {
        Ok(t) => Ok(Some(serde_json::from_str(&t)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}
