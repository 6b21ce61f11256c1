//! The one place the report reads a run directory ([`crate::results::RunDir`]): the manifest,
//! points and records a report's cells come from, the medium's statistics and the
//! experiment's reference values. Everything after this works on what it returns.

use std::collections::{BTreeMap, BTreeSet};

use orchestrate_worker::record::Role;
use polars::prelude::{DataType, col, len, lit};

use super::aggregate::{CellKeys, PointSet, aggregate, key_of_point};
use super::cells::summarize;
use super::data::{CellKey, CellSummary, Failure, PointProgress};
use super::document::RunInfo;
use super::drift::{self, Drift};
use super::drift_check::{self, DriftCheck};
use super::emulator_stats::{self, MediaReport};
use super::error::ReportError;
use super::exclusion;
use super::gather::{self, KeyColumns, gather};
use super::netpipe::{self, NetpipeBaseline};
use super::references;
use super::wire_screen::{self, CellCapacity};
use crate::results::schema::col as c;
use crate::results::{PointRow, PointStatus, RunDir};
use crate::spec::SourceFile;
use crate::spec::experiment::{ClusterKind, NetpipeTablesOnly};
use crate::spec::reference::ReferenceSpec;

/// A run's cells and failures, and what the report says about its setup.
pub struct LoadedRun {
    pub info: RunInfo,
    pub cells: Vec<CellSummary>,
    pub failures: Vec<Failure>,
    pub progress: Option<PointProgress>,
    pub drift: Option<Drift>,
    pub drift_check: Option<DriftCheck>,
    /// The attempts left out for the timing bound against those counted.
    pub exclusion: Option<exclusion::Exclusion>,
    /// The collectives' point attempts, which the cells above leave to
    /// [`super::applications`].
    pub collective_points: Vec<PointRow>,
}

/// Loads the run in `dir`: its cells, labelled `label` when given (a comparison across runs)
/// and otherwise by the experiment's name or the directory's. `baseline` overrides the
/// manifest's baseline topology. Points above their cell's `capacities` are set aside as
/// failures ([`wire_screen`]). The drift check's repetitions count in no cell: they are
/// aggregated apart and compared with their cell ([`drift_check`]).
pub fn run(
    dir: &RunDir,
    label: Option<&str>,
    baseline: Option<&str>,
    capacities: &[CellCapacity],
) -> Result<LoadedRun, ReportError> {
    let manifest = dir.manifest()?;
    // A collective's ranks are no pairs: their points and records are the applications
    // section's. Runs without any are read as before.
    let (collective_points, points): (Vec<_>, Vec<_>) = dir
        .points()?
        .into_iter()
        .partition(|p| p.pattern.is_collective());
    let mut records = dir.scan_records()?;
    let count = records.clone().select([len().alias("n")]).collect()?;
    if !collective_points.is_empty() {
        records = records.filter(col(c::ROLE).neq(lit(Role::Rank.as_str())));
    }
    let n_records = count
        .column("n")?
        .as_materialized_series()
        .cast(&DataType::UInt64)?
        .u64()?
        .get(0)
        .unwrap_or(0);
    let point_attempts = points.len() + collective_points.len();
    // points.jsonl names the cell of every attempt it lists, and the records are not asked for
    // theirs: except in runs without one, and in runs from before points named the driver of
    // their bond, whose records name it and whose manifest may not (`as_recorded`).
    let points_name_cells = !points.is_empty()
        && points
            .iter()
            .all(|p| p.bonding == "none" || p.bond_driver.is_some());
    let key_columns = if points_name_cells {
        KeyColumns::Skip
    } else {
        KeyColumns::Read
    };
    let mut gathered = gather(records.clone(), key_columns)?;
    let listed: BTreeSet<(u32, u32)> = points.iter().map(|p| (p.point, p.rep)).collect();
    let unlisted: BTreeSet<(u32, u32)> = if key_columns == KeyColumns::Read {
        BTreeSet::new()
    } else {
        gathered
            .groups
            .keys()
            .map(|id| (id.point, id.rep))
            .filter(|k| !listed.contains(k))
            .collect()
    };
    // points.jsonl counts each attempt's records with progress samples. The records are read
    // for the samples unless it counts none for every attempt they hold: where it does not
    // count them (a run from before it did) or does not list an attempt (an interrupted run).
    let sampled_records: BTreeMap<(u32, u32, u32), Option<u64>> = points
        .iter()
        .map(|p| ((p.point, p.rep, p.attempt), p.sampled_records))
        .collect();
    let none_sampled = gathered
        .groups
        .keys()
        .all(|id| sampled_records.get(&(id.point, id.rep, id.attempt)) == Some(&Some(0)));
    if !none_sampled {
        gathered.sampled = gather::read_samples(records.clone())?;
    }
    let unlisted = gather::cells_of(records, &unlisted)?;
    let keys = CellKeys {
        manifest: &manifest,
        run_label: label,
        unlisted: &unlisted,
    };
    let (check_points, points): (Vec<_>, Vec<_>) = points.into_iter().partition(|p| p.drift_check);
    let checked: BTreeSet<u32> = check_points.iter().map(|p| p.point).collect();
    let mut agg = aggregate(&gathered, PointSet::AllBut(&checked), &points, &keys)?;
    agg.samples = wire_screen::set_aside(
        std::mem::take(&mut agg.samples),
        capacities,
        &mut agg.failures,
    );
    let drift_check = if check_points.is_empty() {
        None
    } else {
        let mut again = aggregate(&gathered, PointSet::Only(&checked), &check_points, &keys)?;
        let samples = wire_screen::set_aside(again.samples, capacities, &mut again.failures);
        // The check's attempts: a repetition measured again counts once.
        let repetitions: BTreeSet<_> = check_points.iter().map(|p| (p.point, p.rep)).collect();
        let cell = as_recorded(
            key_of_point(&check_points[0], &manifest, label),
            agg.samples.iter().chain(&samples).map(|s| &s.key),
        );
        Some(drift_check::compare(
            cell,
            &agg.samples,
            &samples,
            repetitions.len(),
        ))
    };
    let exclusion = exclusion::measure(&gathered, &points, &agg.samples, &keys, capacities)?;
    let cells = summarize(&agg);
    let drift = drift::estimate(&agg.samples);
    let default_label = manifest.experiment.clone().unwrap_or_else(|| {
        dir.root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    Ok(LoadedRun {
        info: RunInfo {
            label: label.map(str::to_owned).unwrap_or(default_label),
            baseline: baseline
                .map(str::to_owned)
                .or_else(|| manifest.baseline.clone()),
            manifest,
            records: n_records,
            point_attempts,
        },
        collective_points,
        cells,
        failures: agg.failures,
        progress: agg.progress,
        drift,
        drift_check,
        exclusion,
    })
}

/// `key` with the bond driver its records carry. Points have said which driver their bond ran
/// on only since 2026-12-05; before, a key took the manifest's, one per topology, and a run that
/// put one topology under a bond and then under MPTCP (the multipath study) kept the last, no
/// driver: a key made from it matched none of the bond's samples (the drift check then found no
/// sample of its reference cell in a run where all of them counted). This serves those runs.
fn as_recorded<'a>(key: CellKey, recorded: impl Iterator<Item = &'a CellKey>) -> CellKey {
    let same_but_driver = |k: &CellKey| {
        k.measure == key.measure
            && k.pairs == key.pairs
            && k.size_bytes == key.size_bytes
            && k.config.run == key.config.run
            && k.config.topology == key.config.topology
            && k.config.bonding == key.config.bonding
            && k.config.placement == key.config.placement
    };
    recorded
        .filter(|k| same_but_driver(k))
        .max_by_key(|k| **k == key)
        .cloned()
        .unwrap_or(key)
}

/// The run's medium statistics; empty when it has none (it did not run on the emulator).
pub fn media(dir: &RunDir) -> Result<MediaReport, ReportError> {
    let rows = dir.media()?;
    let totals = dir.media_totals()?;
    if rows.is_none() && totals.is_empty() {
        return Ok(MediaReport::default());
    }
    let rows = rows.unwrap_or_default();
    // The status of each point's last attempt: only points that count go into cells.
    let points = dir.points()?;
    let mut ok: BTreeMap<(u32, u32), bool> = BTreeMap::new();
    for p in &points {
        ok.insert((p.point, p.rep), p.status == PointStatus::Ok);
    }
    let mut report = emulator_stats::summarize(&rows, &totals, &ok);
    report.untimed = untimed(&points);
    Ok(report)
}

/// How many attempts the emulator did not keep time for, and where that left the points.
fn untimed(points: &[crate::results::PointRow]) -> emulator_stats::Untimed {
    let mut attempts: BTreeMap<(u32, u32), (usize, usize, PointStatus)> = BTreeMap::new();
    for p in points {
        let a = attempts.entry((p.point, p.rep)).or_insert((0, 0, p.status));
        a.0 += 1;
        a.1 += usize::from(p.status == PointStatus::Untimed);
        a.2 = p.status;
    }
    let touched = attempts.values().filter(|a| a.1 > 0);
    emulator_stats::Untimed {
        attempts: touched.clone().map(|a| a.1).sum(),
        points: touched.clone().count(),
        still: touched
            .clone()
            .filter(|a| a.2 == PointStatus::Untimed)
            .count(),
        most_attempts: touched.map(|a| a.0).max().unwrap_or(0),
    }
}

/// The reference values of the experiment the run directory holds a copy of, and the kind of
/// cluster it ran on; none for runs without one.
pub fn references(dir: &RunDir) -> Result<(Vec<ReferenceSpec>, ClusterKind), ReportError> {
    references::read(&dir.experiment_toml())
}

/// The NetPIPE tables the run's experiment asks to draw beside it (`[report] netpipe`), from
/// the run's own copies; none when its experiment names none.
pub fn netpipe_tables(dir: &RunDir) -> Result<Vec<NetpipeBaseline>, ReportError> {
    let path = dir.experiment_toml();
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let source = SourceFile::read(&path).map_err(ReportError::Spec)?;
    let only: NetpipeTablesOnly = source.parse().map_err(ReportError::Spec)?;
    only.report
        .netpipe
        .iter()
        .map(|t| netpipe::import(&t.name, &dir.root().join(t.path.get_ref())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::BondDriver;

    fn key(bonding: &str, driver: Option<BondDriver>, size: u64) -> CellKey {
        let mut k = CellKey::token("two-buses", size);
        k.config.bonding = bonding.into();
        k.config.bond_driver = driver;
        k
    }

    #[test]
    fn a_point_names_its_own_bond_driver_and_an_older_one_takes_the_manifests() {
        let point = |driver: Option<&str>| -> crate::results::PointRow {
            let mut v = serde_json::json!({
                "point": 3, "topology": "two-buses", "bonding": "balance-rr",
                "placement": "local-wire", "pairs": 1, "pattern": "token", "protocol": "tcp",
                "size_bytes": 64, "rep": 0, "status": "ok",
            });
            if let Some(d) = driver {
                v["bond_driver"] = d.into();
            }
            serde_json::from_value(v).unwrap()
        };
        // The topology's last configuration (MPTCP) had no bond: the manifest says none.
        let mut manifest = crate::results::Manifest::default();
        manifest.bond_drivers.insert("two-buses".into(), None);
        let key = |p| super::key_of_point(&p, &manifest, None).config.bond_driver;
        assert_eq!(key(point(Some("userspace"))), Some(BondDriver::Userspace));
        assert_eq!(key(point(None)), None);
        manifest
            .bond_drivers
            .insert("two-buses".into(), Some(BondDriver::Kernel));
        let key = |p| super::key_of_point(&p, &manifest, None).config.bond_driver;
        assert_eq!(key(point(None)), Some(BondDriver::Kernel));
        assert_eq!(key(point(Some("userspace"))), Some(BondDriver::Userspace));
    }

    #[test]
    fn a_key_takes_the_bond_driver_its_records_carry() {
        let recorded = [
            key("balance-rr", Some(BondDriver::Userspace), 64),
            key("mptcp", None, 64),
            key("balance-rr", Some(BondDriver::Userspace), 8192),
        ];
        // The manifest said no driver (the topology's last configuration, MPTCP, had none).
        let got = as_recorded(key("balance-rr", None, 64), recorded.iter());
        assert_eq!(got, recorded[0]);
        // A key its records already carry stays as it is; one they do not is left alone.
        assert_eq!(
            as_recorded(recorded[1].clone(), recorded.iter()),
            recorded[1]
        );
        let unknown = key("balance-xor", None, 64);
        assert_eq!(as_recorded(unknown.clone(), recorded.iter()), unknown);
    }
}
