//! From records to samples: windows, the bytes in them, latency percentiles.
//!
//! # Aggregate throughput over the common window
//!
//! Pairs of a point start and stop at slightly different times. Adding up each pair's own
//! rate would count the start and the tail, when fewer pairs competed for the wire, as if all
//! pairs ran at once, and flatter contended configurations. So for each repetition of a point:
//!
//! 1. each pair's interval is `[first trial start, last trial end]` over its successful trials;
//! 2. the window is the intersection of the pairs' intervals: latest start to earliest end;
//! 3. each trial contributes the payload it delivered inside the window, read off its progress
//!    samples (the worker samples the bytes delivered every 10 ms on the side that times the
//!    pattern: exact at each sample, linear within one interval; [`super::window_progress`]).
//!    A trial without samples (older workers; patterns that do not sample) contributes
//!    `bytes × |trial ∩ window| / |trial|`, as if its rate were constant, which a shared bus
//!    serving pairs unevenly does not give;
//! 4. a pair's throughput is its bytes in the window × 8 / window length, and the point's
//!    aggregate is the sum over pairs.
//!
//! Times are wall-clock (`start_unix_ns`/`end_unix_ns`) because pairs run on different nodes;
//! the clock skew the runner probed is kept in `points.jsonl`.
//!
//! Only records of the side that times a pattern are used: the receiver (server) for
//! `stream`, the client for every other pattern, so a pair is not counted twice.
//!
//! Polars reads the records once ([`super::gather`]); everything after that, the windows and
//! the cut of each trial at its window, is done here in plain Rust, where ordering is explicit.
//! Every aggregation of a report (the run's cells, its drift check, the attempts it left out)
//! works on that one pass's output.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use polars::prelude::*;

use super::data::{
    CellKey, Config, CpuEvidence, Failure, FailureReason, Latency, Measure, PointProgress,
    PointSample, TcpEvidence,
};
use super::error::ReportError;
use super::gather::{AttemptId, Gathered, PairGroup, Trial};
use super::window_progress;
use crate::results::schema::col as c;
use crate::results::{Manifest, PointRow, PointStatus};

/// Samples, failures and latency of one run.
#[derive(Debug, Default)]
pub struct Aggregated {
    pub samples: Vec<PointSample>,
    pub failures: Vec<Failure>,
    pub latency: BTreeMap<CellKey, Latency>,
    /// TCP's counters per cell, where records carried them.
    pub tcp: BTreeMap<CellKey, TcpEvidence>,
    /// The nodes' CPU per cell, where records carried it.
    pub cpu: BTreeMap<CellKey, CpuEvidence>,
    /// How the pairs of the heaviest point delivered over time, when its records have
    /// progress samples.
    pub progress: Option<PointProgress>,
}

/// The points whose records an aggregation takes.
#[derive(Debug, Clone, Copy)]
pub enum PointSet<'a> {
    Only(&'a BTreeSet<u32>),
    AllBut(&'a BTreeSet<u32>),
}

impl PointSet<'_> {
    fn contains(&self, point: u32) -> bool {
        match self {
            PointSet::Only(set) => set.contains(&point),
            PointSet::AllBut(set) => !set.contains(&point),
        }
    }
}

/// The gathered attempts an aggregation takes, by the (point, rep) each counts as.
struct Selection {
    attempts: BTreeMap<(u32, u32), Vec<AttemptId>>,
}

impl Selection {
    /// The attempts that count of the points in `of` ([`Attempts`]). Of a (point, rep) the
    /// runner measured more than once, only the attempt that counts: both attempts' trials
    /// would otherwise make one window spanning the two. Records without attempt numbers (runs
    /// from before re-measurement) are all taken, as are the attempts of a (point, rep) none of
    /// which counts: they are shown as its failure.
    fn counted(gathered: &Gathered, of: PointSet<'_>, attempts: &Attempts<'_>) -> Selection {
        let mut selected: BTreeMap<(u32, u32), Vec<AttemptId>> = BTreeMap::new();
        for id in gathered.groups.keys().filter(|id| of.contains(id.point)) {
            let keep = match attempts.ok.get(&(id.point, id.rep)) {
                Some(p) if gathered.has_attempts => id.attempt == p.attempt,
                _ => true,
            };
            if keep {
                selected.entry((id.point, id.rep)).or_default().push(*id);
            }
        }
        Selection { attempts: selected }
    }

    /// Each of `posing`'s attempts alone, as the (point, rep) it poses as.
    fn posing(gathered: &Gathered, posing: &[(AttemptId, PointRow)]) -> Selection {
        Selection {
            attempts: posing
                .iter()
                .filter(|(id, _)| gathered.groups.contains_key(id))
                .map(|(id, p)| ((p.point, p.rep), vec![*id]))
                .collect(),
        }
    }
}

/// One pair of one repetition: its trials on the side that times the pattern.
struct PairSpan {
    pair: u32,
    start: Option<u64>,
    end: Option<u64>,
    ok_trials: u64,
    failed_trials: u64,
    first_error: Option<String>,
}

struct PointSpan {
    key: CellKey,
    planned_pairs: u32,
    pairs: Vec<PairSpan>,
}

/// The cell of each (point, rep): from points.jsonl, or from the records where the pass read
/// it ([`super::gather::KeyColumns`]).
pub struct CellKeys<'a> {
    pub manifest: &'a Manifest,
    pub run_label: Option<&'a str>,
    /// Cells read from the records of attempts points.jsonl does not list (an interrupted
    /// run), by (point, rep).
    pub unlisted: &'a BTreeMap<(u32, u32), CellKey>,
}

impl CellKeys<'_> {
    fn of_point(&self, p: &PointRow) -> CellKey {
        key_of_point(p, self.manifest, self.run_label)
    }

    /// The cell the records of `(point, rep)` belong to: the one they name when the pass read
    /// it, else the one points.jsonl names, else the one read for unlisted attempts.
    fn of_records(
        &self,
        recorded: Option<&CellKey>,
        listed: Option<&PointRow>,
        (point, rep): (u32, u32),
    ) -> Result<CellKey, ReportError> {
        let mut key = match (recorded, listed) {
            (Some(k), _) => k.clone(),
            (None, Some(p)) => return Ok(self.of_point(p)),
            (None, None) => self.unlisted.get(&(point, rep)).cloned().ok_or_else(|| {
                ReportError::Internal(format!(
                    "point {point} rep {rep}: records without a cell, and no line in points.jsonl"
                ))
            })?,
        };
        key.config.run = self.run_label.map(str::to_owned);
        Ok(key)
    }
}

/// Aggregates the attempts that count of the points in `of`, as `points` (their lines in
/// points.jsonl) say, from what the one pass gathered.
pub fn aggregate(
    gathered: &Gathered,
    of: PointSet<'_>,
    points: &[PointRow],
    keys: &CellKeys<'_>,
) -> Result<Aggregated, ReportError> {
    let attempts = Attempts::from_points(points);
    let selection = Selection::counted(gathered, of, &attempts);
    let spans = point_spans(gathered, &selection, points, keys)?;
    let mut failures = status_failures(points, &attempts, &spans, keys);
    let windows = common_windows(&spans, &attempts, &mut failures);
    let cell_ids = cell_ids(&windows);
    let (tcp, cpu) = evidence(gathered, &selection);
    for f in &mut failures {
        f.tcp = tcp.get(&(f.point, f.rep)).copied();
    }
    let progress = match (&gathered.sampled, heaviest(&windows)) {
        (Some(sampled), Some(w)) => window_progress::point_progress(
            sampled
                .clone()
                .lazy()
                .filter(of_attempts(&selection.attempts[&(w.point, w.rep)])),
            w.span.key.clone(),
            (w.point, w.rep),
            (w.start, w.end),
        )?,
        _ => None,
    };
    let passed = window_pass(
        gathered,
        &selection,
        &windows,
        &cell_ids,
        Latencies::Measure,
    )?;
    // In the order the runner ran them.
    failures.sort_by(|a, b| (a.point, a.rep, &a.reason).cmp(&(b.point, b.rep, &b.reason)));
    Ok(Aggregated {
        samples: samples(&windows, &passed.bytes),
        failures,
        latency: by_key(passed.latency, &cell_ids),
        tcp: by_cell(&tcp, &windows),
        cpu: by_cell(&cpu, &windows),
        progress,
    })
}

/// Only the samples of `posing`'s attempts, each posing as the (point, rep) of its row: no
/// failures, TCP's counters, latency or progress. For a second look at attempts the cells
/// leave out ([`super::exclusion`]).
pub fn samples_only(
    gathered: &Gathered,
    posing: &[(AttemptId, PointRow)],
    keys: &CellKeys<'_>,
) -> Result<Vec<PointSample>, ReportError> {
    let points: Vec<PointRow> = posing.iter().map(|(_, p)| p.clone()).collect();
    let attempts = Attempts::from_points(&points);
    let selection = Selection::posing(gathered, posing);
    let spans = point_spans(gathered, &selection, &points, keys)?;
    let windows = common_windows(&spans, &attempts, &mut Vec::new());
    let passed = window_pass(
        gathered,
        &selection,
        &windows,
        &cell_ids(&windows),
        Latencies::Skip,
    )?;
    Ok(samples(&windows, &passed.bytes))
}

/// Rows of the gathered frames that belong to `attempts`.
fn of_attempts(attempts: &[AttemptId]) -> Expr {
    attempts.iter().fold(lit(false), |any, id| {
        any.or(col(c::POINT)
            .eq(lit(id.point))
            .and(col(c::REP).eq(lit(id.rep)))
            .and(col(c::ATTEMPT).eq(lit(id.attempt))))
    })
}

/// The window of the point with the most pairs at its largest size, its first repetition
/// (the first configuration's on a tie): where pairs compete hardest, the one worth drawing.
fn heaviest<'a, 'b>(windows: &'b [Window<'a>]) -> Option<&'b Window<'a>> {
    windows
        .iter()
        .rev()
        .max_by_key(|w| (w.span.key.pairs, w.span.key.size_bytes))
}

/// Which attempts count. With a points.jsonl, only attempts the runner marked ok; records of
/// an attempt it never finished (a killed run) are shown as failures, not used.
struct Attempts<'a> {
    ok: BTreeMap<(u32, u32), &'a PointRow>,
    /// Every attempt points.jsonl has a line for, whatever its status.
    attempted: BTreeSet<(u32, u32)>,
    /// Without a points.jsonl every attempt with records counts.
    use_status: bool,
}

impl<'a> Attempts<'a> {
    fn from_points(points: &'a [PointRow]) -> Attempts<'a> {
        Attempts {
            // The last ok attempt of each point (a point is not measured again once ok).
            ok: points
                .iter()
                .filter(|p| p.status == PointStatus::Ok)
                .map(|p| ((p.point, p.rep), p))
                .collect(),
            attempted: points.iter().map(|p| (p.point, p.rep)).collect(),
            use_status: !points.is_empty(),
        }
    }

    /// Whether the records of this attempt are used (as a sample or as a failure).
    fn counts(&self, point: u32, rep: u32) -> bool {
        !self.use_status || self.ok.contains_key(&(point, rep))
    }
}

/// Per selected (point, rep): its cell and its pairs on the side that times the pattern, the
/// attempts it is made of merged pair by pair.
fn point_spans(
    gathered: &Gathered,
    selection: &Selection,
    points: &[PointRow],
    keys: &CellKeys<'_>,
) -> Result<BTreeMap<(u32, u32), PointSpan>, ReportError> {
    let listed: BTreeMap<(u32, u32), &PointRow> =
        points.iter().map(|p| ((p.point, p.rep), p)).collect();
    let mut spans = BTreeMap::new();
    for (&(point, rep), ids) in &selection.attempts {
        let timing = ids
            .iter()
            .flat_map(|id| &gathered.groups[id])
            .filter(|g| g.timing);
        let mut pairs: BTreeMap<u32, PairSpan> = BTreeMap::new();
        let mut recorded: Option<&CellKey> = None;
        for g in timing {
            recorded = recorded.or(g.key.as_ref());
            merge_pair(pairs.entry(g.pair).or_insert_with(|| empty_pair(g.pair)), g);
        }
        if pairs.is_empty() {
            continue;
        }
        let key = keys.of_records(recorded, listed.get(&(point, rep)).copied(), (point, rep))?;
        spans.insert(
            (point, rep),
            PointSpan {
                planned_pairs: key.pairs,
                key,
                pairs: pairs.into_values().collect(),
            },
        );
    }
    Ok(spans)
}

fn empty_pair(pair: u32) -> PairSpan {
    PairSpan {
        pair,
        start: None,
        end: None,
        ok_trials: 0,
        failed_trials: 0,
        first_error: None,
    }
}

/// Adds one attempt's records of a pair to the pair's span.
fn merge_pair(span: &mut PairSpan, g: &PairGroup) {
    span.start = span.start.into_iter().chain(g.start).min();
    span.end = span.end.into_iter().chain(g.end).max();
    span.ok_trials += g.ok_trials;
    span.failed_trials += g.failed_trials;
    span.first_error = match (span.first_error.take(), &g.first_error) {
        (Some(a), Some(b)) => Some(a.min(b.clone())),
        (a, b) => a.or_else(|| b.clone()),
    };
}

/// TCP's counters and the nodes' CPU per selected (point, rep), from both ends of every
/// connection (each end counts what it sent and received; each node its own CPU); the CPU's
/// payload counted once, on the side that times the pattern. Records that carried neither
/// give nothing, never zeros.
#[allow(clippy::type_complexity)]
fn evidence(
    gathered: &Gathered,
    selection: &Selection,
) -> (
    BTreeMap<(u32, u32), TcpEvidence>,
    BTreeMap<(u32, u32), CpuEvidence>,
) {
    let mut tcp: BTreeMap<(u32, u32), TcpEvidence> = BTreeMap::new();
    let mut cpu: BTreeMap<(u32, u32), CpuEvidence> = BTreeMap::new();
    for (&slot, ids) in &selection.attempts {
        for g in ids.iter().flat_map(|id| &gathered.groups[id]) {
            if let Some(t) = g.tcp {
                *tcp.entry(slot).or_default() += t;
            }
            if let Some(mut u) = g.cpu {
                if !g.timing {
                    u.bytes = 0;
                }
                *cpu.entry(slot).or_default() += u;
            }
        }
    }
    (tcp, cpu)
}

/// Failures points.jsonl tells of: attempts the runner marked failed (in its order), then
/// attempts marked ok that left no records.
fn status_failures(
    points: &[PointRow],
    attempts: &Attempts<'_>,
    spans: &BTreeMap<(u32, u32), PointSpan>,
    keys: &CellKeys<'_>,
) -> Vec<Failure> {
    // An attempt the emulator did not keep time for is a failure only when it is the point's
    // last: one measured again is not (the report counts those apart).
    let last: BTreeMap<(u32, u32), usize> = points
        .iter()
        .enumerate()
        .map(|(i, p)| ((p.point, p.rep), i))
        .collect();
    let mut failures: Vec<Failure> = points
        .iter()
        .enumerate()
        .filter(|(i, p)| match p.status {
            PointStatus::Failed => true,
            PointStatus::Untimed => last[&(p.point, p.rep)] == *i,
            PointStatus::Ok => false,
        })
        .map(|(_, p)| Failure {
            key: keys.of_point(p),
            point: p.point,
            rep: p.rep,
            reason: FailureReason::Runner(
                p.error
                    .clone()
                    .unwrap_or_else(|| "failed (no error text)".into()),
            ),
            tcp: None,
        })
        .collect();
    for (&(point, rep), p) in &attempts.ok {
        if !spans.contains_key(&(point, rep)) {
            failures.push(Failure {
                key: keys.of_point(p),
                point,
                rep,
                reason: FailureReason::NoRecords,
                tcp: None,
            });
        }
    }
    failures
}
/// An attempt that counts and the window all its pairs ran in, `[start, end)` in Unix ns.
struct Window<'a> {
    point: u32,
    rep: u32,
    start: u64,
    end: u64,
    span: &'a PointSpan,
}

/// Windows of the attempts that count, in (point, rep) order; an attempt without one becomes
/// a failure saying why.
fn common_windows<'a>(
    spans: &'a BTreeMap<(u32, u32), PointSpan>,
    attempts: &Attempts<'_>,
    failures: &mut Vec<Failure>,
) -> Vec<Window<'a>> {
    let mut windows = Vec::new();
    for (&(point, rep), span) in spans {
        if !attempts.counts(point, rep) {
            if !attempts.attempted.contains(&(point, rep)) {
                failures.push(Failure {
                    key: span.key.clone(),
                    point,
                    rep,
                    reason: FailureReason::Runner(
                        "records without a status in points.jsonl (interrupted?)".into(),
                    ),
                    tcp: None,
                });
            }
            continue;
        }
        match common_window(span) {
            Ok((start, end)) => windows.push(Window {
                point,
                rep,
                start,
                end,
                span,
            }),
            Err(reason) => failures.push(Failure {
                key: span.key.clone(),
                point,
                rep,
                reason,
                tcp: None,
            }),
        }
    }
    windows
}

/// The window all pairs of one attempt ran in: latest pair start to earliest pair end. An
/// attempt with errored trials, missing pairs or pairs that never overlapped has none.
fn common_window(span: &PointSpan) -> Result<(u64, u64), FailureReason> {
    // A repetition with an errored trial is not a clean sample: a reset connection
    // leaves a gap in its pair's traffic that the window would count as idle wire.
    let failed_trials: u64 = span.pairs.iter().map(|p| p.failed_trials).sum();
    if failed_trials > 0 {
        let first = span.pairs.iter().find_map(|p| p.first_error.clone());
        return Err(FailureReason::TrialErrors {
            trials: failed_trials,
            first: first.unwrap_or_default(),
        });
    }
    let measured: Vec<&PairSpan> = span.pairs.iter().filter(|p| p.ok_trials > 0).collect();
    if (measured.len() as u32) < span.planned_pairs {
        return Err(FailureReason::MissingPairs {
            measured: measured.len() as u32,
            planned: span.planned_pairs,
        });
    }
    let start = measured.iter().filter_map(|p| p.start).max();
    let end = measured.iter().filter_map(|p| p.end).min();
    match (start, end) {
        (Some(s), Some(e)) if e > s => Ok((s, e)),
        _ => Err(FailureReason::NoOverlap),
    }
}

/// A small number per cell with a sample, in key order: the second pass groups latency by it.
fn cell_ids<'a>(windows: &[Window<'a>]) -> BTreeMap<&'a CellKey, u32> {
    windows
        .iter()
        .map(|w| &w.span.key)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, i as u32))
        .collect()
}

/// One sample per window: each measured pair's bytes in the window as Mbit/s, and their sum.
fn samples(windows: &[Window<'_>], bytes_in_window: &WindowBytes) -> Vec<PointSample> {
    windows
        .iter()
        .map(|w| {
            let window_ns = w.end - w.start;
            let pair_mbit_s: Vec<f64> = w
                .span
                .pairs
                .iter()
                .filter(|p| p.ok_trials > 0)
                .map(|p| {
                    let bytes = bytes_in_window
                        .get(&(w.point, w.rep, p.pair))
                        .copied()
                        .unwrap_or(0.0);
                    // bytes × 8 bit / ns = Gbit/s; × 1000 = Mbit/s.
                    bytes * 8.0 / window_ns as f64 * 1000.0
                })
                .collect();
            PointSample {
                point: w.point,
                rep: w.rep,
                key: w.span.key.clone(),
                aggregate_mbit_s: pair_mbit_s.iter().sum(),
                pair_mbit_s,
                window_ns,
                window_start_unix_ns: w.start,
            }
        })
        .collect()
}

/// A pass's figures per cell id, keyed by the cell again.
fn by_key<T>(per_id: BTreeMap<u32, T>, cell_ids: &BTreeMap<&CellKey, u32>) -> BTreeMap<CellKey, T> {
    let by_id: BTreeMap<u32, &CellKey> = cell_ids.iter().map(|(k, &i)| (i, *k)).collect();
    per_id
        .into_iter()
        .filter_map(|(id, v)| by_id.get(&id).map(|k| ((*k).clone(), v)))
        .collect()
}

/// A pass's figures per cell over the attempts that count (those with a window).
fn by_cell<E: Copy + Default + std::ops::AddAssign>(
    per_point: &BTreeMap<(u32, u32), E>,
    windows: &[Window<'_>],
) -> BTreeMap<CellKey, E> {
    let mut by_cell: BTreeMap<CellKey, E> = BTreeMap::new();
    for w in windows {
        if let Some(t) = per_point.get(&(w.point, w.rep)) {
            *by_cell.entry(w.span.key.clone()).or_default() += *t;
        }
    }
    by_cell
}

type WindowBytes = BTreeMap<(u32, u32, u32), f64>;

/// What the pass over the gathered trials found.
struct Passed {
    /// Per (point, rep, pair): the bytes its trials moved inside the point's window.
    bytes: WindowBytes,
    /// Per cell id: latency percentiles over the trials of the attempts that count.
    latency: BTreeMap<u32, Latency>,
}

/// Whether the window pass also takes the latency percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Latencies {
    Measure,
    Skip,
}

/// The pass over the gathered trials: bytes each pair moved inside its point's window, and
/// latency percentiles per cell. A trial with progress samples is counted from them
/// ([`super::window_progress`]); one without (older workers, patterns that do not sample) is
/// pro-rated ([`bytes_in_window`]).
fn window_pass(
    gathered: &Gathered,
    selection: &Selection,
    windows: &[Window<'_>],
    cell_ids: &BTreeMap<&CellKey, u32>,
    latencies: Latencies,
) -> Result<Passed, ReportError> {
    // Which window each gathered attempt feeds.
    let mut window_of: HashMap<AttemptId, usize> = HashMap::new();
    for (i, w) in windows.iter().enumerate() {
        for id in &selection.attempts[&(w.point, w.rep)] {
            window_of.insert(*id, i);
        }
    }
    let cell_of: Vec<u32> = windows.iter().map(|w| cell_ids[&w.span.key]).collect();
    let mut bytes = WindowBytes::new();
    // Trials with progress samples are counted from them, and known again below by their pair
    // and times.
    let mut sampled: HashSet<(AttemptId, u32, u64, u64)> = HashSet::new();
    if let Some(frame) = &gathered.sampled {
        window_progress::for_each_sampled(frame, |row| {
            sampled.insert((row.id, row.pair, row.start_unix_ns, row.end_unix_ns));
            let Some(&i) = window_of.get(&row.id) else {
                return;
            };
            let w = &windows[i];
            let moved = window_progress::in_window(
                row.start_unix_ns,
                w.start,
                w.end,
                row.offsets,
                row.bytes,
            );
            *bytes.entry((w.point, w.rep, row.pair)).or_insert(0.0) += (moved + 0.5).floor();
        })?;
    }
    // Whole bytes per trial (±0.5 byte), summed as integers: the sum does not depend on the
    // order the trials come in, so reruns agree to the last digit. Each chunk of trials gives
    // its own sums and latencies, added up below.
    let per_chunk = gathered.trials.fold(
        || WindowChunk {
            pro_rated: Vec::new(),
            latencies: Vec::new(),
            last: None,
        },
        |acc, t: Trial| {
            // Trials come attempt by attempt: look the window up once per run of them.
            let i = match acc.last {
                Some((id, i)) if id == t.id => i,
                _ => {
                    let i = window_of.get(&t.id).copied();
                    acc.last = Some((t.id, i));
                    i
                }
            };
            let Some(i) = i else { return };
            if sampled.is_empty() || !sampled.contains(&(t.id, t.pair, t.start, t.end)) {
                let w = &windows[i];
                let moved = bytes_in_window(t.start, t.end, t.bytes, (w.start, w.end));
                match acc.pro_rated.last_mut() {
                    Some((key, sum)) if *key == (i, t.pair) => *sum += moved,
                    _ => acc.pro_rated.push(((i, t.pair), moved)),
                }
            }
            if let (Latencies::Measure, Some(l)) = (latencies, t.latency_us) {
                if acc.latencies.is_empty() {
                    acc.latencies.resize_with(cell_ids.len(), Vec::new);
                }
                acc.latencies[cell_of[i] as usize].push(l);
            }
        },
    )?;
    let mut pro_rated: Vec<BTreeMap<u32, i64>> = vec![BTreeMap::new(); windows.len()];
    // Each cell's latencies, in pieces: one per chunk that had some.
    let mut latency_values: Vec<Vec<Vec<f64>>> = vec![Vec::new(); cell_ids.len()];
    for chunk in per_chunk {
        for ((i, pair), b) in chunk.pro_rated {
            *pro_rated[i].entry(pair).or_default() += b;
        }
        for (pieces, values) in latency_values.iter_mut().zip(chunk.latencies) {
            if !values.is_empty() {
                pieces.push(values);
            }
        }
    }
    for (w, pairs) in windows.iter().zip(&pro_rated) {
        for (&pair, &b) in pairs {
            *bytes.entry((w.point, w.rep, pair)).or_insert(0.0) += b as f64;
        }
    }
    let latency = match latencies {
        Latencies::Measure => {
            latency_per_cell(gathered, selection, windows, &cell_of, latency_values)
        }
        Latencies::Skip => BTreeMap::new(),
    };
    Ok(Passed { bytes, latency })
}

/// What one chunk of trials gives [`window_pass`].
struct WindowChunk {
    /// Whole bytes moved inside the window, per (window, pair): one entry per run of trials of
    /// one pair, added up once every chunk is in.
    pro_rated: Vec<((usize, u32), i64)>,
    /// The trials' latencies, by cell id (empty until the first).
    latencies: Vec<Vec<f64>>,
    /// The attempt of the trial before and its window.
    last: Option<(AttemptId, Option<usize>)>,
}

/// Bytes a trial moved inside its point's window `[w_start, w_end)`, pro-rated by the part of
/// the trial that lies in it, rounded to a whole byte.
fn bytes_in_window(start: u64, end: u64, bytes: u64, (w_start, w_end): (u64, u64)) -> i64 {
    let (start, end) = (start as i64, end as i64);
    let (w_start, w_end) = (w_start as i64, w_end as i64);
    let overlap = (end.min(w_end) - start.max(w_start)).max(0) as f64;
    let duration = (end - start) as f64;
    let bytes = bytes as f64;
    let moved = if duration > 0.0 {
        bytes * overlap / duration
    } else if start >= w_start && end <= w_end {
        // A zero-length trial cannot be pro-rated: it counts whole if it lies in the window.
        bytes
    } else {
        0.0
    };
    (moved + 0.5) as i64
}

/// Latency percentiles per cell id over `values` (each cell's trial latencies), and the largest
/// latency seen: the worker's own maximum when it reported one, else the largest trial mean.
fn latency_per_cell(
    gathered: &Gathered,
    selection: &Selection,
    windows: &[Window<'_>],
    cell_of: &[u32],
    values: Vec<Vec<Vec<f64>>>,
) -> BTreeMap<u32, Latency> {
    use rayon::prelude::*;
    let mut max_reported: BTreeMap<u32, f64> = BTreeMap::new();
    let mut max_mean: BTreeMap<u32, f64> = BTreeMap::new();
    for (w, &cell) in windows.iter().zip(cell_of) {
        let groups = selection.attempts[&(w.point, w.rep)]
            .iter()
            .flat_map(|id| &gathered.groups[id])
            .filter(|g| g.timing);
        for g in groups {
            for (into, v) in [
                (&mut max_reported, g.latency_max_us),
                (&mut max_mean, g.latency_mean_max_us),
            ] {
                if let Some(v) = v {
                    into.entry(cell).and_modify(|m| *m = m.max(v)).or_insert(v);
                }
            }
        }
    }
    // Cell by cell, the cores sharing them: each cell's pieces joined and its percentiles
    // taken.
    values
        .into_par_iter()
        .enumerate()
        .filter(|(_, pieces)| !pieces.is_empty())
        .map(|(cell, pieces)| {
            let mut v = pieces.concat();
            drop(pieces);
            let cell = cell as u32;
            let latency = Latency {
                p50_us: Some(nearest_quantile(&mut v, 0.5)),
                p90_us: Some(nearest_quantile(&mut v, 0.9)),
                p99_us: Some(nearest_quantile(&mut v, 0.99)),
                max_us: max_reported.get(&cell).or(max_mean.get(&cell)).copied(),
            };
            (cell, latency)
        })
        .collect()
}

/// The `q` quantile of `values` (not empty), the value nearest rank `q × (n − 1)` in order, as
/// Polars' `QuantileMethod::Nearest` takes it.
fn nearest_quantile(values: &mut [f64], q: f64) -> f64 {
    let rank = ((values.len() - 1) as f64 * q).round() as usize;
    *values.select_nth_unstable_by(rank, f64::total_cmp).1
}

/// The cell a point attempt belongs to, from points.jsonl alone.
pub(super) fn key_of_point(p: &PointRow, manifest: &Manifest, run_label: Option<&str>) -> CellKey {
    CellKey {
        measure: Measure {
            pattern: p.pattern,
            protocol: p.protocol,
        },
        config: Config {
            run: run_label.map(str::to_owned),
            topology: p.topology.clone(),
            bonding: p.bonding.clone(),
            // Runs from before points carried their driver have only the manifest's.
            bond_driver: if p.bonding == "none" {
                None
            } else {
                p.bond_driver
                    .or_else(|| manifest.bond_drivers.get(&p.topology).copied().flatten())
            },
            placement: p.placement,
        },
        pairs: p.pairs,
        size_bytes: p.size_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_counts_the_part_of_its_bytes_inside_the_window() {
        // 1000 bytes over [100, 200): the window [150, 300) holds its second half.
        assert_eq!(bytes_in_window(100, 200, 1000, (150, 300)), 500);
        assert_eq!(bytes_in_window(100, 200, 1000, (0, 300)), 1000);
        assert_eq!(bytes_in_window(100, 200, 1000, (200, 300)), 0);
        // A third of 1000 is 333.3: whole bytes, to the nearest.
        assert_eq!(bytes_in_window(0, 300, 1000, (0, 100)), 333);
        assert_eq!(bytes_in_window(0, 300, 1000, (0, 200)), 667);
        // A zero-length trial counts whole inside the window and not at all outside.
        assert_eq!(bytes_in_window(150, 150, 64, (100, 200)), 64);
        assert_eq!(bytes_in_window(250, 250, 64, (100, 200)), 0);
    }

    #[test]
    fn quantiles_are_the_ones_polars_takes() {
        // Polars' own group-by quantile (what the report took before its one pass) on the same
        // values, at every size from one value to a few hundred, with ties and in any order.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 1000) as f64 / 8.0
        };
        for n in (1..40).chain([99, 100, 101, 257]) {
            let values: Vec<f64> = (0..n).map(|_| next()).collect();
            for q in [0.5, 0.9, 0.99] {
                let series = Series::new("v".into(), &values);
                let expected = series
                    .quantile_reduce(q, QuantileMethod::Nearest)
                    .unwrap()
                    .value()
                    .extract::<f64>();
                let got = nearest_quantile(&mut values.clone(), q);
                assert_eq!(Some(got), expected, "n = {n}, q = {q}");
            }
        }
    }
}
