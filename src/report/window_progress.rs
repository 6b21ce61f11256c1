//! What a trial moved inside a window, from its progress samples (the worker's
//! `progress_offset_ns` and `progress_bytes`): the payload delivered by the window's end minus
//! that delivered by its start, each read off the samples. Exact at a sample, linear between
//! two (at most one sampling interval, 10 ms); a trial without samples is pro-rated by
//! [`super::aggregate`] instead.

use std::collections::BTreeMap;

use polars::prelude::*;

use super::data::{CellKey, PROGRESS_BIN_S, PointProgress};
use super::error::ReportError;
use super::gather::AttemptId;
use crate::results::schema::col as c;

/// Payload delivered by `t_ns` after the trial's start: 0 before it, the total after its last
/// sample, linear between samples (the first from `(0, 0)`).
fn delivered_by(t_ns: f64, offsets: &[u64], bytes: &[u64]) -> f64 {
    if t_ns <= 0.0 {
        return 0.0;
    }
    let (mut t0, mut b0) = (0.0, 0.0);
    for (&t, &b) in offsets.iter().zip(bytes) {
        let (t1, b1) = (t as f64, b as f64);
        if t_ns <= t1 {
            return if t1 > t0 {
                b0 + (b1 - b0) * (t_ns - t0) / (t1 - t0)
            } else {
                b1
            };
        }
        (t0, b0) = (t1, b1);
    }
    b0
}

/// Payload a trial that started at `start_unix_ns` delivered within `[w_start, w_end)`.
pub fn in_window(
    start_unix_ns: u64,
    w_start: u64,
    w_end: u64,
    offsets: &[u64],
    bytes: &[u64],
) -> f64 {
    let rel = |t: u64| t as f64 - start_unix_ns as f64;
    (delivered_by(rel(w_end), offsets, bytes) - delivered_by(rel(w_start), offsets, bytes)).max(0.0)
}

/// One trial's progress samples, as [`for_each_sampled`] hands them out.
pub struct SampledRow<'a> {
    pub id: AttemptId,
    pub pair: u32,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub offsets: &'a [u64],
    pub bytes: &'a [u64],
}

/// Calls `f` with every row of `df`: the gathered trials with progress samples (point, rep,
/// attempt, pair, the trial's start and end and the two sample lists; [`super::gather`]).
pub fn for_each_sampled(
    df: &DataFrame,
    mut f: impl FnMut(SampledRow<'_>),
) -> Result<(), ReportError> {
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let attempt = df.column(c::ATTEMPT)?.u32()?;
    let pair = df.column(c::PAIR)?.u32()?;
    let start = df.column(c::START_UNIX_NS)?.u64()?;
    let end = df.column(c::END_UNIX_NS)?.u64()?;
    let offsets = df.column(c::PROGRESS_OFFSET_NS)?.list()?;
    let bytes = df.column(c::PROGRESS_BYTES)?.list()?;
    for i in 0..df.height() {
        let (Some(pt), Some(rp), Some(at), Some(pr), Some(s), Some(e)) = (
            point.get(i),
            rep.get(i),
            attempt.get(i),
            pair.get(i),
            start.get(i),
            end.get(i),
        ) else {
            continue;
        };
        let (Some(o), Some(v)) = (offsets.get_as_series(i), bytes.get_as_series(i)) else {
            continue;
        };
        let o: Vec<u64> = o
            .cast(&DataType::UInt64)?
            .u64()?
            .into_no_null_iter()
            .collect();
        let v: Vec<u64> = v
            .cast(&DataType::UInt64)?
            .u64()?
            .into_no_null_iter()
            .collect();
        if o.len() != v.len() {
            return Err(ReportError::Internal(format!(
                "point {pt} rep {rp} pair {pr}: {} progress times but {} byte counts",
                o.len(),
                v.len()
            )));
        }
        f(SampledRow {
            id: AttemptId {
                point: pt,
                rep: rp,
                attempt: at,
            },
            pair: pr,
            start_unix_ns: s,
            end_unix_ns: e,
            offsets: &o,
            bytes: &v,
        });
    }
    Ok(())
}

/// One trial's samples, absolute: its start and the samples after it.
struct SampledTrial {
    start: u64,
    offsets: Vec<u64>,
    bytes: Vec<u64>,
}

/// How each pair of `(point, rep)` delivered over time, in [`PROGRESS_BIN_S`] bins from the
/// earliest trial start; `None` when its records have no samples. `records` are the timing
/// side's successful trials.
pub fn point_progress(
    mut records: LazyFrame,
    key: CellKey,
    (point, rep): (u32, u32),
    (w_start, w_end): (u64, u64),
) -> Result<Option<PointProgress>, ReportError> {
    if !records.collect_schema()?.contains(c::PROGRESS_BYTES) {
        return Ok(None);
    }
    let df = records
        .filter(
            col(c::POINT)
                .eq(lit(point))
                .and(col(c::REP).eq(lit(rep)))
                .and(col(c::PROGRESS_BYTES).is_not_null()),
        )
        .select([
            col(c::PAIR),
            col(c::START_UNIX_NS),
            col(c::PROGRESS_OFFSET_NS),
            col(c::PROGRESS_BYTES),
        ])
        .collect()?;
    let pair = df.column(c::PAIR)?.u32()?;
    let start = df.column(c::START_UNIX_NS)?.u64()?;
    let offsets = df.column(c::PROGRESS_OFFSET_NS)?.list()?;
    let bytes = df.column(c::PROGRESS_BYTES)?.list()?;
    let mut by_pair: BTreeMap<u32, Vec<SampledTrial>> = BTreeMap::new();
    for i in 0..df.height() {
        let (Some(p), Some(s), Some(o), Some(b)) = (
            pair.get(i),
            start.get(i),
            offsets.get_as_series(i),
            bytes.get_as_series(i),
        ) else {
            continue;
        };
        by_pair.entry(p).or_default().push(SampledTrial {
            start: s,
            offsets: o.u64()?.into_no_null_iter().collect(),
            bytes: b.u64()?.into_no_null_iter().collect(),
        });
    }
    let trials = || by_pair.values().flatten();
    let (Some(t0), Some(t_end)) = (
        trials().map(|t| t.start).min(),
        trials()
            .filter_map(|t| t.offsets.last().map(|o| t.start + o))
            .max(),
    ) else {
        return Ok(None);
    };
    let bin_ns = (PROGRESS_BIN_S * 1e9) as u64;
    let bins = (t_end - t0).div_ceil(bin_ns);
    let secs = |t: u64| (t - t0) as f64 / 1e9;
    let pairs = by_pair
        .iter()
        .map(|(&p, trials)| {
            let rates = (0..bins)
                .map(|k| {
                    let (a, b) = (t0 + k * bin_ns, t0 + (k + 1) * bin_ns);
                    let moved: f64 = trials
                        .iter()
                        .map(|t| in_window(t.start, a, b, &t.offsets, &t.bytes))
                        .sum();
                    (secs(b), moved * 8.0 / PROGRESS_BIN_S / 1e6)
                })
                .collect();
            (p, rates)
        })
        .collect();
    Ok(Some(PointProgress {
        key,
        point,
        rep,
        window_s: (secs(w_start.max(t0)), secs(w_end.max(t0))),
        pairs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_samples_decide_not_the_average() {
        // 10 kB in the first 10 ms, then nothing for 90 ms: an even rate would put 5 kB in
        // the second half; the samples say none.
        let (o, b) = ([10 * MS, 100 * MS], [10_000, 10_000]);
        assert_eq!(in_window(0, 50 * MS, 100 * MS, &o, &b), 0.0);
        assert_eq!(in_window(0, 0, 50 * MS, &o, &b), 10_000.0);
        // Linear within a sample interval.
        assert_eq!(in_window(0, 0, 5 * MS, &o, &b), 5_000.0);
    }

    #[test]
    fn windows_beyond_the_trial_take_all_or_nothing() {
        let (o, b) = ([10 * MS, 20 * MS], [100, 300]);
        let start = 1_000 * MS;
        assert_eq!(in_window(start, 0, start, &o, &b), 0.0);
        assert_eq!(in_window(start, 0, start + 30 * MS, &o, &b), 300.0);
        assert_eq!(
            in_window(start, start + 20 * MS, start + 40 * MS, &o, &b),
            0.0
        );
        // Halfway between the samples 200 had arrived; 100 more came after.
        assert_eq!(
            in_window(start, start + 15 * MS, start + 40 * MS, &o, &b),
            100.0
        );
    }
}
