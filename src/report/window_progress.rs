//! What a trial moved inside a window, from its progress samples (the worker's
//! `progress_offset_ns` and `progress_bytes`): the payload delivered by the window's end minus
//! that delivered by its start, each read off the samples. Exact at a sample, linear between
//! two (at most one sampling interval, 10 ms); a trial without samples is pro-rated by
//! [`super::aggregate`] instead.

use polars::prelude::*;

use super::error::ReportError;
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

/// Adds each row's bytes in its window (rounded to whole bytes, as the pro-rated ones are) to
/// `(point, rep, pair)`. `df` has the point, rep, pair, the trial's start, the window's edges
/// (`w_start`, `w_end`) and the two progress lists.
pub fn add_window_bytes(
    df: &DataFrame,
    into: &mut std::collections::BTreeMap<(u32, u32, u32), f64>,
) -> Result<(), ReportError> {
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let pair = df.column(c::PAIR)?.u32()?;
    let start = df.column(c::START_UNIX_NS)?.u64()?;
    let ws = df.column("w_start")?.u64()?;
    let we = df.column("w_end")?.u64()?;
    let offsets = df.column(c::PROGRESS_OFFSET_NS)?.list()?;
    let bytes = df.column(c::PROGRESS_BYTES)?.list()?;
    for i in 0..df.height() {
        let (Some(pt), Some(rp), Some(pr), Some(s), Some(a), Some(b)) = (
            point.get(i),
            rep.get(i),
            pair.get(i),
            start.get(i),
            ws.get(i),
            we.get(i),
        ) else {
            continue;
        };
        let (Some(o), Some(v)) = (offsets.get_as_series(i), bytes.get_as_series(i)) else {
            continue;
        };
        let o: Vec<u64> = o.u64()?.into_no_null_iter().collect();
        let v: Vec<u64> = v.u64()?.into_no_null_iter().collect();
        if o.len() != v.len() {
            return Err(ReportError::Internal(format!(
                "point {pt} rep {rp} pair {pr}: {} progress times but {} byte counts",
                o.len(),
                v.len()
            )));
        }
        *into.entry((pt, rp, pr)).or_insert(0.0) += (in_window(s, a, b, &o, &v) + 0.5).floor();
    }
    Ok(())
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
