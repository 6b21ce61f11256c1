//! Writing a run directory: the resolved specs and rendered scripts up front, then records and
//! point outcomes appended and synced point by point, so a killed run loses at most the point
//! in flight. Layout: [`super`]; schemas: [`crate::results`].
//!
//! Whatever the umask, what the run writes is writable by its owner alone (directories 0755,
//! files 0644 at most), so that `teardown` and `--resume` accept it; and the run's directory
//! is new, never one someone made in advance.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::netconf::NodeScripts;
use crate::plan::{Experiment, Plan};
use crate::results::manifest::Manifest;
use crate::results::media::{HostRow, MediaRow, MediaTotal};
use crate::results::schema::{PointRow, PointStatus, RecordRow};

use super::layout::RunDir;
use super::ledger::Ledger;

pub struct RunWriter {
    pub dir: RunDir,
    records: File,
    points: File,
}

fn io(path: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", path.display())
}

/// Modes of what a run writes, before the umask takes anything away.
const DIR_MODE: u32 = 0o755;
const FILE_MODE: u32 = 0o644;

fn append(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| io(path, e))
}

/// Writes `contents` to `path`, created with [`FILE_MODE`] if new.
fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
        .and_then(|mut f| f.write_all(contents.as_ref()))
        .map_err(|e| io(path, e))
}

/// Creates `path` and any missing parents with [`DIR_MODE`].
fn create_dirs(path: &Path) -> anyhow::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| io(path, e))
}

/// A new directory `<parent>/<stamp>` (or `<stamp>-2`, ... when runs start in the same
/// second): created here, so nobody else made it or put anything in it.
fn new_run_dir(parent: &Path, stamp: &str) -> anyhow::Result<PathBuf> {
    create_dirs(parent)?;
    for n in 1..=99 {
        let name = if n == 1 {
            stamp.to_owned()
        } else {
            format!("{stamp}-{n}")
        };
        let dir = parent.join(name);
        match DirBuilder::new().mode(DIR_MODE).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir, e)),
        }
    }
    anyhow::bail!("{}: too many runs started at {stamp}", parent.display())
}

impl RunWriter {
    /// A new run directory under `root/<experiment>/<UTC time>`, with the experiment and its
    /// topologies copied in (so the run can be resumed and re-planned from the directory
    /// alone), the plan as JSON, and every node's scripts.
    pub fn create(root: &Path, e: &Experiment, plan: &Plan) -> anyhow::Result<RunWriter> {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "-");
        let run = RunDir::new(new_run_dir(&root.join(e.name.as_str()), &stamp)?);
        create_dirs(&run.topologies_dir())?;
        let header = format!(
            "# Copied from {} for this run; topologies point at the copies beside it.\n",
            e.path.display()
        );
        let copy = experiment_copy(&run, e)?;
        write_file(
            &run.experiment_toml(),
            header + &toml::to_string_pretty(&copy)?,
        )?;
        write_file(&run.plan_json(), serde_json::to_string_pretty(plan)?)?;
        let mut writer = Self::open(run.root())?;
        for c in &plan.configurations {
            writer.write_scripts(c.id, c.topology.name.as_str(), &c.scripts)?;
        }
        Ok(writer)
    }

    /// Writes each node's apply and teardown scripts of configuration `id` (of `topology`),
    /// replacing those of the plan with what ran.
    pub fn write_scripts<'s>(
        &mut self,
        id: usize,
        topology: &str,
        scripts: impl IntoIterator<Item = &'s NodeScripts>,
    ) -> anyhow::Result<()> {
        let dir = self.dir.scripts_dir(id, topology);
        create_dirs(&dir)?;
        for s in scripts {
            let node = s.node.as_str();
            write_file(&RunDir::apply_script(&dir, node), &s.apply)?;
            write_file(&RunDir::teardown_script(&dir, node), &s.teardown)?;
        }
        Ok(())
    }

    /// Writes the manifest as it stands.
    pub fn write_manifest(&self, m: &Manifest) -> anyhow::Result<()> {
        let path = self.dir.manifest_path();
        write_file(&path, serde_json::to_string_pretty(m)?)
            .with_context(|| format!("writing {}", path.display()))
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
        let path = self.dir.bonds_jsonl();
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

    /// How many attempts at each point `points.jsonl` already has (a point measured again
    /// numbers its attempts on from there).
    pub fn attempts(&self) -> anyhow::Result<std::collections::BTreeMap<u32, u32>> {
        let mut n = std::collections::BTreeMap::new();
        for p in self.dir.points()? {
            *n.entry(p.point).or_insert(0) += 1;
        }
        Ok(n)
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

    pub fn write_ledger(&self, l: &Ledger) -> anyhow::Result<()> {
        let tmp = self.dir.ledger_part();
        write_file(&tmp, serde_json::to_string_pretty(l)?)?;
        File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, self.dir.ledger_json())?;
        Ok(())
    }

    pub fn clear_ledger(&self) -> anyhow::Result<()> {
        match std::fs::remove_file(self.dir.ledger_json()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    pub fn log(&self, line: &str) {
        if let Ok(mut f) = append(&self.dir.run_log()) {
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

/// The experiment's TOML as the run keeps it: topologies copied into the run directory and
/// referred to there (keeping the relative layout, so the run can be resumed and re-planned
/// from the directory alone), the inventory by absolute path.
fn experiment_copy(run: &RunDir, e: &Experiment) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(&e.path).map_err(|x| io(&e.path, x))?;
    let spec: toml::Table = text.parse()?;
    let base = e.path.parent().unwrap_or(Path::new("."));
    let mut copy = spec.clone();
    let mut paths = Vec::new();
    let listed = spec.get("topologies").and_then(|v| v.as_array());
    for (t, p) in e.topologies.iter().zip(listed.into_iter().flatten()) {
        let src = base.join(p.as_str().unwrap_or_default());
        let name = t.name.as_str();
        // Read and written, not copied: a copy would keep the source's mode.
        let text = std::fs::read(&src).map_err(|x| io(&src, x))?;
        write_file(&run.topology_toml(name), text)?;
        paths.push(toml::Value::String(RunDir::topology_relative(name)));
    }
    copy.insert("topologies".into(), toml::Value::Array(paths));
    // NetPIPE tables to draw beside the run: copied too, so the report needs nothing else.
    if let Some(tables) = copy
        .get_mut("report")
        .and_then(|r| r.as_table_mut())
        .and_then(|r| r.get_mut("netpipe"))
        .and_then(|n| n.as_array_mut())
    {
        for (k, t) in tables.iter_mut().enumerate() {
            let Some(t) = t.as_table_mut() else { continue };
            let Some(p) = t.get("path").and_then(|v| v.as_str()) else {
                continue;
            };
            let src = base.join(p);
            let text = std::fs::read(&src).map_err(|x| io(&src, x))?;
            let file = src.file_name().map(|n| n.to_string_lossy().into_owned());
            let relative = RunDir::baseline_relative(k, file.as_deref().unwrap_or("netpipe.txt"));
            create_dirs(&run.baselines_dir())?;
            write_file(&run.root().join(&relative), text)?;
            t.insert("path".into(), toml::Value::String(relative));
        }
    }
    if let Some(cluster) = copy.get_mut("cluster").and_then(|c| c.as_table_mut())
        && let Some(inv) = cluster.get("inventory").and_then(|v| v.as_str())
    {
        let abs = std::path::absolute(base.join(inv))?;
        cluster.insert(
            "inventory".into(),
            toml::Value::String(abs.display().to_string()),
        );
    }
    Ok(copy)
}
