//! What the emulated wires did: the medium emulator's per-segment and per-host statistics, as
//! the runner stores them around each point (`media.jsonl`, `hosts.jsonl`) and per
//! configuration (`media-total.jsonl`), and the `media` Polars frame.
//!
//! A point measured more than once (a failed attempt re-measured by `--resume`) has a line per
//! attempt; readers keep the last line per (point, rep, segment) — or (point, rep, node) for
//! hosts — which is the attempt `points.jsonl` also ends with. (A plan's point ids are unique
//! per repetition; the rep is in the key for run directories whose ids are not.)

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use orchestrate_medium::stats::{Lateness, TimingBound, timing_bound};
use orchestrate_worker::record::{Pattern, Protocol};
use polars::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::ResultsError;
use super::schema::PlacementKind;

/// The point a line belongs to, with the keys `records.jsonl` and `points.jsonl` join on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MediaContext {
    /// Index of the configuration (topology × bonding) in the plan.
    pub configuration: u32,
    pub point: u32,
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub size_bytes: u64,
    pub rep: u32,
}

/// One segment over an interval: the emulator's `SegmentReport`, flattened, with the figures
/// derived from it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct SegmentStats {
    pub segment: String,
    /// `shared` (CSMA/CD bus) or `switched` (full-duplex ports).
    pub medium: String,
    pub rate_bps: u64,
    /// Length of the interval, ns.
    pub elapsed_ns: u64,
    pub frames: u64,
    pub bytes: u64,
    pub carried_ns: u64,
    pub collisions: u64,
    pub collided_attempts: u64,
    pub collision_ns: u64,
    pub excess_collision_drops: u64,
    pub queue_drops: u64,
    pub deferrals: u64,
    /// `carried_ns / elapsed_ns`.
    pub utilisation: f64,
    /// `collisions / frames` (0 without frames).
    pub collisions_per_frame: f64,
    pub lateness_samples: u64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_p999_us: f64,
    pub lateness_max_us: f64,
    /// How long frames waited at their ports before the emulator read them (absent from
    /// runs before it was measured: read as nothing measured).
    #[serde(default)]
    pub ingress_samples: u64,
    #[serde(default)]
    pub ingress_p50_us: f64,
    #[serde(default)]
    pub ingress_p99_us: f64,
    #[serde(default)]
    pub ingress_p999_us: f64,
    #[serde(default)]
    pub ingress_max_us: f64,
    /// How much later than their arrival frames entered the emulated wire (absent before it
    /// was measured: read as nothing measured).
    #[serde(default)]
    pub entry_samples: u64,
    #[serde(default)]
    pub entry_p99_us: f64,
    #[serde(default)]
    pub entry_max_us: f64,
    /// The segment's timing was outside its bound at either end
    /// ([`orchestrate_medium::stats::timing_bound`]) when the point was measured. Runs
    /// before the bound held a tenth of a minimum frame here; readers judge with
    /// [`SegmentStats::timing_kept`], which applies today's bound to the percentiles.
    pub lateness_flagged: bool,
}

impl SegmentStats {
    /// Egress lateness as the emulator summarised it.
    pub fn egress(&self) -> Lateness {
        Lateness {
            samples: self.lateness_samples,
            p50_us: self.lateness_p50_us,
            p99_us: self.lateness_p99_us,
            p999_us: self.lateness_p999_us,
            max_us: self.lateness_max_us,
        }
    }

    /// Ingress lateness as the emulator summarised it.
    pub fn ingress(&self) -> Lateness {
        Lateness {
            samples: self.ingress_samples,
            p50_us: self.ingress_p50_us,
            p99_us: self.ingress_p99_us,
            p999_us: self.ingress_p999_us,
            max_us: self.ingress_max_us,
        }
    }

    /// How much later than their arrival frames entered the wire, as far as stored.
    pub fn entry(&self) -> Lateness {
        Lateness {
            samples: self.entry_samples,
            p99_us: self.entry_p99_us,
            max_us: self.entry_max_us,
            ..Lateness::default()
        }
    }

    /// The bound this segment's points are held to.
    pub fn timing_bound(&self) -> TimingBound {
        timing_bound(&self.medium, self.rate_bps)
    }

    /// Whether the segment kept its timing bound at both ends (entering the wire and
    /// leaving it; see [`orchestrate_medium::stats::timing_bound`]).
    pub fn timing_kept(&self) -> bool {
        let b = self.timing_bound();
        b.kept_by(&self.egress()) && b.kept_by(&self.entry())
    }
}

/// One line of `media.jsonl`: one segment during one point's traffic.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MediaRow {
    #[serde(flatten)]
    pub context: MediaContext,
    #[serde(flatten)]
    pub stats: SegmentStats,
    /// Whether the emulator's thread ran SCHED_FIFO.
    pub realtime_priority: bool,
}

/// A node's CPU as the emulator charged it (only nodes with host costs).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct HostStats {
    pub node: String,
    pub sent: u64,
    pub received: u64,
    pub forwarded: u64,
    pub backlog_drops: u64,
    pub busy_ns: u64,
}

/// One line of `hosts.jsonl`: one node during one point's traffic.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct HostRow {
    #[serde(flatten)]
    pub context: MediaContext,
    #[serde(flatten)]
    pub stats: HostStats,
    /// Length of the interval, ns (the segments' longest).
    pub elapsed_ns: u64,
}

/// One line of `media-total.jsonl`: a configuration's whole time on the emulator (from the
/// emulator's start to the end of the configuration's points), or why its statistics are
/// missing.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct MediaTotal {
    pub configuration: u32,
    pub topology: String,
    pub bonding: String,
    #[serde(default)]
    pub realtime_priority: Option<bool>,
    #[serde(default)]
    pub segments: Vec<SegmentStats>,
    #[serde(default)]
    pub hosts: Vec<HostStats>,
    /// Points of this attempt measured without medium statistics.
    #[serde(default)]
    pub missing_points: Vec<u32>,
    /// Why statistics are missing (the control socket's error), if they are.
    #[serde(default)]
    pub error: Option<String>,
}

/// Every line of a JSONL file, or `None` when the file does not exist.
pub(crate) fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Option<Vec<T>>, ResultsError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ResultsError::io(path, e)),
    };
    let mut rows = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| ResultsError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        rows.push(
            serde_json::from_str(&line).map_err(|source| ResultsError::Row {
                path: path.to_owned(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(Some(rows))
}

/// The last line per (point, rep, segment), ordered by point, rep, segment.
pub fn last_per_segment(rows: Vec<MediaRow>) -> Vec<MediaRow> {
    let mut last: BTreeMap<(u32, u32, String), MediaRow> = BTreeMap::new();
    for r in rows {
        last.insert((r.context.point, r.context.rep, r.stats.segment.clone()), r);
    }
    last.into_values().collect()
}

/// The last line per (point, rep, node), ordered by point, rep, node.
pub fn last_per_host(rows: Vec<HostRow>) -> Vec<HostRow> {
    let mut last: BTreeMap<(u32, u32, String), HostRow> = BTreeMap::new();
    for r in rows {
        last.insert((r.context.point, r.context.rep, r.stats.node.clone()), r);
    }
    last.into_values().collect()
}

/// The `media` frame: one row per (point, segment), columns named as in `media.jsonl`.
pub fn media_frame(rows: &[MediaRow]) -> PolarsResult<DataFrame> {
    macro_rules! col {
        ($name:literal, $f:expr) => {
            Column::new($name.into(), rows.iter().map($f).collect::<Vec<_>>())
        };
    }
    DataFrame::new(
        rows.len(),
        vec![
            col!("configuration", |r| r.context.configuration),
            col!("point", |r| r.context.point),
            col!("topology", |r| r.context.topology.clone()),
            col!("bonding", |r| r.context.bonding.clone()),
            col!("placement", |r| r.context.placement.as_str()),
            col!("pairs", |r| r.context.pairs),
            col!("pattern", |r| r.context.pattern.as_str()),
            col!("protocol", |r| r.context.protocol.as_str()),
            col!("size_bytes", |r| r.context.size_bytes),
            col!("rep", |r| r.context.rep),
            col!("segment", |r| r.stats.segment.clone()),
            col!("medium", |r| r.stats.medium.clone()),
            col!("rate_bps", |r| r.stats.rate_bps),
            col!("elapsed_ns", |r| r.stats.elapsed_ns),
            col!("frames", |r| r.stats.frames),
            col!("bytes", |r| r.stats.bytes),
            col!("carried_ns", |r| r.stats.carried_ns),
            col!("collisions", |r| r.stats.collisions),
            col!("collided_attempts", |r| r.stats.collided_attempts),
            col!("collision_ns", |r| r.stats.collision_ns),
            col!("excess_collision_drops", |r| r.stats.excess_collision_drops),
            col!("queue_drops", |r| r.stats.queue_drops),
            col!("deferrals", |r| r.stats.deferrals),
            col!("utilisation", |r| r.stats.utilisation),
            col!("collisions_per_frame", |r| r.stats.collisions_per_frame),
            col!("lateness_samples", |r| r.stats.lateness_samples),
            col!("lateness_p50_us", |r| r.stats.lateness_p50_us),
            col!("lateness_p99_us", |r| r.stats.lateness_p99_us),
            col!("lateness_p999_us", |r| r.stats.lateness_p999_us),
            col!("lateness_max_us", |r| r.stats.lateness_max_us),
            col!("ingress_samples", |r| r.stats.ingress_samples),
            col!("ingress_p50_us", |r| r.stats.ingress_p50_us),
            col!("ingress_p99_us", |r| r.stats.ingress_p99_us),
            col!("ingress_p999_us", |r| r.stats.ingress_p999_us),
            col!("ingress_max_us", |r| r.stats.ingress_max_us),
            col!("entry_samples", |r| r.stats.entry_samples),
            col!("entry_p99_us", |r| r.stats.entry_p99_us),
            col!("entry_max_us", |r| r.stats.entry_max_us),
            col!("lateness_flagged", |r| r.stats.lateness_flagged),
            col!("realtime_priority", |r| r.realtime_priority),
        ],
    )
}
