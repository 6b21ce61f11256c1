//! What the emulated wires did during the measurement, beside the cells: per cell (the points
//! that count in it) collisions per frame, the busiest segment's utilisation, drops and the
//! emulator's lateness; per configuration, each segment over the whole configuration and the
//! points whose timing the emulator flagged.
//!
//! Built from `media.jsonl`, `media-total.jsonl` and `points.jsonl` (see
//! [`crate::results::media`]; read by [`super::load`]). A run without them gets an empty [`MediaReport`], and every
//! output is then exactly what it would be without this module.

use std::collections::BTreeMap;

use orchestrate_worker::record::{Pattern, Protocol};

use super::data::CellKey;
use crate::results::{MediaRow, MediaTotal, PlacementKind, SegmentStats};

/// The medium's statistics of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MediaReport {
    /// Whether the run recorded medium statistics at all (it ran on the emulator).
    pub present: bool,
    /// Sorted by [`CellMedia::key`].
    pub cells: Vec<CellMedia>,
    /// In configuration order.
    pub configs: Vec<ConfigMedia>,
    /// Timing outside the bound: how many attempts, at how many points, and how many points
    /// ended so (their last attempt; they count nowhere).
    pub untimed: Untimed,
    /// The attempts left out for the timing bound against those counted
    /// ([`super::exclusion`]); set by the report of one run.
    pub exclusion: Option<super::exclusion::Exclusion>,
    /// What the wires did during each point's last attempt, by (point, rep): what a failed
    /// point's listing shows beside its reason.
    pub points: BTreeMap<(u32, u32), PointMedia>,
}

/// The emulated wires during one point attempt, over all its segments.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PointMedia {
    pub frames: u64,
    pub collisions: u64,
    pub excess_collision_drops: u64,
    pub queue_drops: u64,
    /// The worst segment's p99 and latest frame at either end, µs.
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
}

impl PointMedia {
    /// As the failed points' listing gives it: `1 234 frames, 0.12 collisions/frame, 5
    /// excess-collision drops, 0 queue drops, lateness p99 45 µs, latest 0.3 ms`.
    pub fn text(&self) -> String {
        let per_frame = if self.frames > 0 {
            self.collisions as f64 / self.frames as f64
        } else {
            0.0
        };
        format!(
            "{} frames, {per_frame:.2} collisions/frame, {} excess-collision drops, {} queue \
             drops, lateness p99 {:.0} µs, latest {:.0} µs",
            self.frames,
            self.excess_collision_drops,
            self.queue_drops,
            self.lateness_p99_us,
            self.lateness_max_us
        )
    }
}

/// Each point's segments summed, by (point, rep); the rows are each point's last attempt.
fn points(rows: &[MediaRow]) -> BTreeMap<(u32, u32), PointMedia> {
    let mut out: BTreeMap<(u32, u32), PointMedia> = BTreeMap::new();
    for r in rows {
        let p = out.entry((r.context.point, r.context.rep)).or_default();
        let s = &r.stats;
        p.frames += s.frames;
        p.collisions += s.collisions;
        p.excess_collision_drops += s.excess_collision_drops;
        p.queue_drops += s.queue_drops;
        p.lateness_p99_us = p
            .lateness_p99_us
            .max(s.lateness_p99_us)
            .max(s.ingress_p99_us);
        p.lateness_max_us = p
            .lateness_max_us
            .max(s.lateness_max_us)
            .max(s.ingress_max_us);
    }
    out
}

/// Point attempts the runner marked untimed ([`crate::results::PointStatus::Untimed`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Untimed {
    pub attempts: usize,
    pub points: usize,
    pub still: usize,
    /// The most attempts any one point took.
    pub most_attempts: usize,
}

/// A cell as the media files name it (no bond driver: a configuration has one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MediaCellKey {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub pairs: u32,
    pub size_bytes: u64,
}

/// The medium during the successful points of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellMedia {
    pub key: MediaCellKey,
    /// Points with statistics.
    pub points: usize,
    /// Over every segment and point.
    pub frames: u64,
    pub collisions: u64,
    /// The segment with the highest utilisation over the cell's points, and that utilisation
    /// (its carried time over the points' intervals).
    pub busiest_segment: String,
    pub busiest_utilisation: f64,
    pub excess_collision_drops: u64,
    pub queue_drops: u64,
    /// The highest p99 lateness of any segment in any of the points, µs.
    pub lateness_p99_us: f64,
    /// Points with a segment whose lateness the emulator flagged.
    pub flagged_points: usize,
}

impl CellMedia {
    pub fn collisions_per_frame(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.collisions as f64 / self.frames as f64
        }
    }
}

/// Where a segment's lateness percentiles come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatenessSource {
    /// The emulator's own histogram over the whole configuration (`media-total.jsonl`).
    Total,
    /// The worst of the points (no total was recorded).
    WorstPoint,
}

/// One segment over one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentSummary {
    pub segment: String,
    pub medium: String,
    pub rate_bps: u64,
    /// Summed over the configuration's points (their traffic only).
    pub frames: u64,
    pub bytes: u64,
    pub carried_ns: u64,
    pub elapsed_ns: u64,
    pub collisions: u64,
    pub excess_collision_drops: u64,
    pub queue_drops: u64,
    pub deferrals: u64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    pub lateness_source: LatenessSource,
}

impl SegmentSummary {
    pub fn utilisation(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.carried_ns as f64 / self.elapsed_ns as f64
        }
    }

    pub fn collisions_per_frame(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.collisions as f64 / self.frames as f64
        }
    }
}

/// A point on a segment that did not keep its timing bound
/// ([`orchestrate_medium::stats::timing_bound`]) at one end or both.
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedPoint {
    pub point: u32,
    pub rep: u32,
    pub pattern: Pattern,
    pub pairs: u32,
    pub size_bytes: u64,
    pub segment: String,
    /// How late frames were written (egress), p99, µs.
    pub p99_us: f64,
    /// How much later than their arrival frames entered the wire, p99, µs; 0 where it was
    /// not measured.
    pub entry_p99_us: f64,
    /// The latest frame at either end, µs.
    pub max_us: f64,
    /// The bound's p99 at the segment's rate, µs.
    pub limit_us: f64,
}

impl FlaggedPoint {
    /// The worse p99 of the two ends.
    pub fn worst_p99_us(&self) -> f64 {
        self.p99_us.max(self.entry_p99_us)
    }
}

/// The medium over one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigMedia {
    pub configuration: u32,
    pub topology: String,
    pub bonding: String,
    pub segments: Vec<SegmentSummary>,
    pub flagged: Vec<FlaggedPoint>,
    /// Points measured without statistics.
    pub missing_points: Vec<u32>,
    /// Why statistics are missing, as the runner recorded it.
    pub error: Option<String>,
    /// Whether the emulator ran with real-time priority, when known.
    pub realtime_priority: Option<bool>,
}

impl ConfigMedia {
    /// `topology` or `topology bonding`.
    pub fn label(&self) -> String {
        if self.bonding == "none" {
            self.topology.clone()
        } else {
            format!("{} {}", self.topology, self.bonding)
        }
    }
}

impl MediaReport {
    /// The medium during `key`'s points, if the run recorded it.
    pub fn cell(&self, key: &CellKey) -> Option<&CellMedia> {
        if key.config.run.is_some() {
            return None;
        }
        let k = MediaCellKey {
            topology: key.config.topology.clone(),
            bonding: key.config.bonding.clone(),
            placement: key.config.placement,
            pattern: key.measure.pattern,
            protocol: key.measure.protocol,
            pairs: key.pairs,
            size_bytes: key.size_bytes,
        };
        self.cells
            .binary_search_by(|c| c.key.cmp(&k))
            .ok()
            .map(|i| &self.cells[i])
    }
}

/// The report's view of `rows` (last line per point, rep and segment), `totals` (file order)
/// and the last status of each (point, rep).
pub fn summarize(
    rows: &[MediaRow],
    totals: &[MediaTotal],
    ok: &BTreeMap<(u32, u32), bool>,
) -> MediaReport {
    MediaReport {
        present: true,
        untimed: Untimed::default(),
        exclusion: None,
        cells: cells(rows, ok),
        configs: configs(rows, totals),
        points: points(rows),
    }
}

fn cells(rows: &[MediaRow], ok: &BTreeMap<(u32, u32), bool>) -> Vec<CellMedia> {
    #[derive(Default)]
    struct Acc {
        points: std::collections::BTreeSet<(u32, u32)>,
        flagged: std::collections::BTreeSet<(u32, u32)>,
        frames: u64,
        collisions: u64,
        excess: u64,
        queue: u64,
        p99: f64,
        /// segment -> (carried, elapsed)
        segments: BTreeMap<String, (u64, u64)>,
    }
    let mut acc: BTreeMap<MediaCellKey, Acc> = BTreeMap::new();
    for r in rows {
        if !ok
            .get(&(r.context.point, r.context.rep))
            .copied()
            .unwrap_or(false)
        {
            continue;
        }
        let c = &r.context;
        let a = acc
            .entry(MediaCellKey {
                topology: c.topology.clone(),
                bonding: c.bonding.clone(),
                placement: c.placement,
                pattern: c.pattern,
                protocol: c.protocol,
                pairs: c.pairs,
                size_bytes: c.size_bytes,
            })
            .or_default();
        let s = &r.stats;
        a.points.insert((c.point, c.rep));
        if !s.timing_kept() {
            a.flagged.insert((c.point, c.rep));
        }
        a.frames += s.frames;
        a.collisions += s.collisions;
        a.excess += s.excess_collision_drops;
        a.queue += s.queue_drops;
        a.p99 = a.p99.max(s.lateness_p99_us).max(s.entry_p99_us);
        let seg = a.segments.entry(s.segment.clone()).or_default();
        seg.0 += s.carried_ns;
        seg.1 += s.elapsed_ns;
    }
    acc.into_iter()
        .map(|(key, a)| {
            let util = |(c, e): (u64, u64)| if e == 0 { 0.0 } else { c as f64 / e as f64 };
            // Highest utilisation; the first segment by name among equals.
            let mut busiest = (String::new(), 0.0);
            for (name, ce) in &a.segments {
                let u = util(*ce);
                if busiest.0.is_empty() || u > busiest.1 {
                    busiest = (name.clone(), u);
                }
            }
            CellMedia {
                key,
                points: a.points.len(),
                frames: a.frames,
                collisions: a.collisions,
                busiest_segment: busiest.0,
                busiest_utilisation: busiest.1,
                excess_collision_drops: a.excess,
                queue_drops: a.queue,
                lateness_p99_us: a.p99,
                flagged_points: a.flagged.len(),
            }
        })
        .collect()
}

fn configs(rows: &[MediaRow], totals: &[MediaTotal]) -> Vec<ConfigMedia> {
    let mut out: BTreeMap<u32, ConfigMedia> = BTreeMap::new();
    let new = |configuration, topology: &str, bonding: &str| ConfigMedia {
        configuration,
        topology: topology.to_owned(),
        bonding: bonding.to_owned(),
        segments: Vec::new(),
        flagged: Vec::new(),
        missing_points: Vec::new(),
        error: None,
        realtime_priority: None,
    };
    for r in rows {
        let c = &r.context;
        let cfg = out
            .entry(c.configuration)
            .or_insert_with(|| new(c.configuration, &c.topology, &c.bonding));
        let s = &r.stats;
        add_point(&mut cfg.segments, s);
        if cfg.realtime_priority.is_none() || !r.realtime_priority {
            cfg.realtime_priority = Some(r.realtime_priority);
        }
        if !s.timing_kept() {
            cfg.flagged.push(FlaggedPoint {
                point: c.point,
                rep: c.rep,
                pattern: c.pattern,
                pairs: c.pairs,
                size_bytes: c.size_bytes,
                segment: s.segment.clone(),
                p99_us: s.lateness_p99_us,
                entry_p99_us: s.entry_p99_us,
                max_us: s.lateness_max_us.max(s.entry_max_us),
                limit_us: s.timing_bound().p99_us,
            });
        }
    }
    // Totals: the last line per configuration is its latest attempt; points missing in any
    // attempt and not measured since stay missing.
    let measured: std::collections::BTreeSet<(u32, u32)> = rows
        .iter()
        .map(|r| (r.context.configuration, r.context.point))
        .collect();
    for t in totals {
        let cfg = out
            .entry(t.configuration)
            .or_insert_with(|| new(t.configuration, &t.topology, &t.bonding));
        for p in &t.missing_points {
            if !measured.contains(&(t.configuration, *p)) && !cfg.missing_points.contains(p) {
                cfg.missing_points.push(*p);
            }
        }
        if t.error.is_some() {
            cfg.error = t.error.clone();
        }
        if t.realtime_priority.is_some() {
            cfg.realtime_priority = t.realtime_priority;
        }
        for s in &t.segments {
            let seg = segment_entry(&mut cfg.segments, s);
            seg.lateness_p50_us = s.lateness_p50_us;
            seg.lateness_p99_us = s.lateness_p99_us;
            seg.lateness_max_us = s.lateness_max_us;
            seg.lateness_source = LatenessSource::Total;
        }
    }
    let mut v: Vec<ConfigMedia> = out.into_values().collect();
    for c in &mut v {
        c.missing_points.sort_unstable();
        c.segments.sort_by(|a, b| a.segment.cmp(&b.segment));
    }
    v
}

fn segment_entry<'a>(
    segments: &'a mut Vec<SegmentSummary>,
    s: &SegmentStats,
) -> &'a mut SegmentSummary {
    let i = match segments.iter().position(|x| x.segment == s.segment) {
        Some(i) => i,
        None => {
            segments.push(SegmentSummary {
                segment: s.segment.clone(),
                medium: s.medium.clone(),
                rate_bps: s.rate_bps,
                frames: 0,
                bytes: 0,
                carried_ns: 0,
                elapsed_ns: 0,
                collisions: 0,
                excess_collision_drops: 0,
                queue_drops: 0,
                deferrals: 0,
                lateness_p50_us: 0.0,
                lateness_p99_us: 0.0,
                lateness_max_us: 0.0,
                lateness_source: LatenessSource::WorstPoint,
            });
            segments.len() - 1
        }
    };
    &mut segments[i]
}

fn add_point(segments: &mut Vec<SegmentSummary>, s: &SegmentStats) {
    let seg = segment_entry(segments, s);
    seg.frames += s.frames;
    seg.bytes += s.bytes;
    seg.carried_ns += s.carried_ns;
    seg.elapsed_ns += s.elapsed_ns;
    seg.collisions += s.collisions;
    seg.excess_collision_drops += s.excess_collision_drops;
    seg.queue_drops += s.queue_drops;
    seg.deferrals += s.deferrals;
    if seg.lateness_source == LatenessSource::WorstPoint {
        seg.lateness_p50_us = seg.lateness_p50_us.max(s.lateness_p50_us);
        seg.lateness_p99_us = seg.lateness_p99_us.max(s.lateness_p99_us);
        seg.lateness_max_us = seg.lateness_max_us.max(s.lateness_max_us);
    }
}
