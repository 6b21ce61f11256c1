//! From records to samples: the Polars part of the report.
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
//! Polars does the passes over the records; everything after that (one row per pair and
//! repetition) is small and is done in plain Rust, where ordering is explicit.

use std::collections::{BTreeMap, BTreeSet};

use polars::prelude::*;

use super::data::{
    CellKey, Config, CpuEvidence, Failure, FailureReason, Latency, Measure, PointProgress,
    PointSample, TcpEvidence,
};
use super::error::ReportError;
use super::window_progress;
use crate::results::schema::col as c;
use crate::results::{BondDriver, Manifest, PointRow, PointStatus};

/// Polars' streaming engine: it decodes the Parquet file in morsels instead of whole
/// columns, which keeps a 10-million-record report well under 2 GiB.
const ENGINE: Engine = Engine::Streaming;

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

/// The records the aggregation reads: the timing side of each pattern.
fn timing_side() -> Expr {
    col(c::ROLE).eq(when(col(c::PATTERN).eq(lit("stream")))
        .then(lit("server"))
        .otherwise(lit("client")))
}

/// The protocol a record's cell is measured under. Multipath TCP is the TCP its workload asked
/// for, run by a configuration (`[multipath] modes = ["mptcp"]`): its cells sit beside the
/// other configurations' TCP cells, while its records still say `mptcp`.
fn measured_protocol(
    p: orchestrate_worker::record::Protocol,
) -> orchestrate_worker::record::Protocol {
    use orchestrate_worker::record::Protocol;
    match p {
        Protocol::Mptcp => Protocol::Tcp,
        other => other,
    }
}

fn trial_ok() -> Expr {
    col(c::ERROR).is_null()
}

/// One pair of one repetition, as the first pass sees it.
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

/// Runs the aggregation over `records` (a scan of `records.parquet`).
pub fn aggregate(
    records: LazyFrame,
    points: &[PointRow],
    manifest: &Manifest,
    run_label: Option<&str>,
) -> Result<Aggregated, ReportError> {
    let attempts = Attempts::from_points(points);
    let records = counted_attempts_only(records, &attempts)?;
    let spans = pair_spans(records.clone(), run_label)?;
    let keys = PointKeys {
        manifest,
        run_label,
    };
    let mut failures = status_failures(points, &attempts, &spans, &keys);
    let windows = common_windows(&spans, &attempts, &mut failures);
    let cell_ids = cell_ids(&windows);
    let window_frame = window_frame(&windows, &cell_ids)?;
    let tcp = tcp_pass(records.clone())?;
    let cpu = cpu_pass(records.clone())?;
    for f in &mut failures {
        f.tcp = tcp.get(&(f.point, f.rep)).copied();
    }
    let progress = heaviest(&windows)
        .map(|w| {
            window_progress::point_progress(
                records.clone().filter(timing_side().and(trial_ok())),
                w.span.key.clone(),
                (w.point, w.rep),
                (w.start, w.end),
            )
        })
        .transpose()?
        .flatten();
    let (bytes_in_window, latency) = window_pass(records, window_frame, Latencies::Measure)?;
    // In the order the runner ran them.
    failures.sort_by(|a, b| (a.point, a.rep, &a.reason).cmp(&(b.point, b.rep, &b.reason)));
    Ok(Aggregated {
        samples: samples(&windows, &bytes_in_window),
        failures,
        latency: by_key(latency, &cell_ids),
        tcp: by_cell(&tcp, &windows),
        cpu: by_cell(&cpu, &windows),
        progress,
    })
}

/// Only the samples of `points`' attempts that count: no failures, TCP's counters, latency or
/// progress, and so two passes over the records instead of four. For a second look at attempts
/// the cells leave out ([`super::exclusion`]).
pub fn samples_only(
    records: LazyFrame,
    points: &[PointRow],
    run_label: Option<&str>,
) -> Result<Vec<PointSample>, ReportError> {
    let attempts = Attempts::from_points(points);
    let records = counted_attempts_only(records, &attempts)?;
    let spans = pair_spans(records.clone(), run_label)?;
    let windows = common_windows(&spans, &attempts, &mut Vec::new());
    let window_frame = window_frame(&windows, &cell_ids(&windows))?;
    let (bytes_in_window, _) = window_pass(records, window_frame, Latencies::Skip)?;
    Ok(samples(&windows, &bytes_in_window))
}

/// The window of the point with the most pairs at its largest size, its first repetition
/// (the first configuration's on a tie): where pairs compete hardest, the one worth drawing.
fn heaviest<'a, 'b>(windows: &'b [Window<'a>]) -> Option<&'b Window<'a>> {
    windows
        .iter()
        .rev()
        .max_by_key(|w| (w.span.key.pairs, w.span.key.size_bytes))
}

/// Drops the records of attempts at a point other than the one that counts, when the point
/// was measured more than once (an attempt the emulator did not keep time for, measured
/// again): without that, both attempts' trials would make one window spanning the two.
/// Records without an `attempt` column (runs from before re-measurement) are all kept.
///
/// When every attempt that counts is its point's first (attempt 0), there is nothing to drop: a
/// point is not measured again once an attempt of it is ok, and an attempt interrupted before
/// its end leaves no records. The records are then not joined with the attempts at all: the join
/// is paid again by every pass over them (0.8 s of a 2.5 s pass over 10 million records).
fn counted_attempts_only(
    mut records: LazyFrame,
    attempts: &Attempts<'_>,
) -> Result<LazyFrame, ReportError> {
    if !records.collect_schema()?.contains(c::ATTEMPT)
        || attempts.ok.values().all(|p| p.attempt == 0)
    {
        return Ok(records);
    }
    let counted: Vec<(u32, u32, u32)> = attempts
        .ok
        .iter()
        .map(|(&(point, rep), p)| (point, rep, p.attempt))
        .collect();
    let frame = DataFrame::new(
        counted.len(),
        vec![
            Column::new(
                c::POINT.into(),
                counted.iter().map(|k| k.0).collect::<Vec<_>>(),
            ),
            Column::new(
                c::REP.into(),
                counted.iter().map(|k| k.1).collect::<Vec<_>>(),
            ),
            Column::new(
                "counted_attempt".into(),
                counted.iter().map(|k| k.2).collect::<Vec<_>>(),
            ),
        ],
    )?;
    Ok(records
        .join(
            frame.lazy(),
            [col(c::POINT), col(c::REP)],
            [col(c::POINT), col(c::REP)],
            JoinArgs::new(JoinType::Left),
        )
        .filter(
            col("counted_attempt")
                .is_null()
                .or(col(c::ATTEMPT).eq(col("counted_attempt"))),
        )
        .drop(by_name(["counted_attempt"], true, false)))
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

/// The cell key of a point from its points.jsonl line, for attempts that left no records.
struct PointKeys<'a> {
    manifest: &'a Manifest,
    run_label: Option<&'a str>,
}

impl PointKeys<'_> {
    fn key(&self, p: &PointRow) -> CellKey {
        key_of_point(p, self.manifest, self.run_label)
    }
}

/// Failures points.jsonl tells of: attempts the runner marked failed (in its order), then
/// attempts marked ok that left no records.
fn status_failures(
    points: &[PointRow],
    attempts: &Attempts<'_>,
    spans: &BTreeMap<(u32, u32), PointSpan>,
    keys: &PointKeys<'_>,
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
            key: keys.key(p),
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
                key: keys.key(p),
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

/// The windows as a frame to join the records with: point, rep, window start and end, cell id.
fn window_frame(
    windows: &[Window<'_>],
    cell_ids: &BTreeMap<&CellKey, u32>,
) -> Result<DataFrame, ReportError> {
    Ok(DataFrame::new(
        windows.len(),
        vec![
            Column::new(
                c::POINT.into(),
                windows.iter().map(|w| w.point).collect::<Vec<_>>(),
            ),
            Column::new(
                c::REP.into(),
                windows.iter().map(|w| w.rep).collect::<Vec<_>>(),
            ),
            Column::new(
                "w_start".into(),
                windows.iter().map(|w| w.start).collect::<Vec<_>>(),
            ),
            Column::new(
                "w_end".into(),
                windows.iter().map(|w| w.end).collect::<Vec<_>>(),
            ),
            Column::new(
                "cell".into(),
                windows
                    .iter()
                    .map(|w| cell_ids[&w.span.key])
                    .collect::<Vec<_>>(),
            ),
        ],
    )?)
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

/// TCP's counters per (point, rep), both ends of every connection (each end counts what it
/// sent and received): of the attempt that counts where one does, else of every attempt
/// (a failed point's, shown beside its failure). Records from before the worker read them
/// have no such columns: then nothing, never zeros.
fn tcp_pass(mut records: LazyFrame) -> Result<BTreeMap<(u32, u32), TcpEvidence>, ReportError> {
    let counters = [
        c::TCP_RETRANS,
        c::TCP_REORD_SEEN,
        c::TCP_DSACK_DUPS,
        c::TCP_RCV_OOOPACK,
    ];
    let schema = records.collect_schema()?;
    if !counters.iter().all(|name| schema.contains(name)) {
        return Ok(BTreeMap::new());
    }
    let sum = |name: &str| col(name).cast(DataType::UInt64).sum().alias(name);
    let df = records
        .filter(col(c::TCP_RETRANS).is_not_null())
        .select([
            col(c::POINT),
            col(c::REP),
            col(c::TCP_RETRANS),
            col(c::TCP_REORD_SEEN),
            col(c::TCP_DSACK_DUPS),
            col(c::TCP_RCV_OOOPACK),
        ])
        .group_by([col(c::POINT), col(c::REP)])
        .agg([
            len().cast(DataType::UInt64).alias("trials"),
            sum(c::TCP_RETRANS),
            sum(c::TCP_REORD_SEEN),
            sum(c::TCP_DSACK_DUPS),
            sum(c::TCP_RCV_OOOPACK),
        ])
        .collect_with_engine(ENGINE)?
        .unwrap_single();
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let trials = df.column("trials")?.u64()?;
    let [retrans, reord, dsack, ooo] = [
        c::TCP_RETRANS,
        c::TCP_REORD_SEEN,
        c::TCP_DSACK_DUPS,
        c::TCP_RCV_OOOPACK,
    ]
    .map(|name| df.column(name).and_then(|c| c.u64()));
    let (retrans, reord, dsack, ooo) = (retrans?, reord?, dsack?, ooo?);
    Ok((0..df.height())
        .filter_map(|i| {
            Some((
                (point.get(i)?, rep.get(i)?),
                TcpEvidence {
                    trials: trials.get(i).unwrap_or(0),
                    retransmissions: retrans.get(i).unwrap_or(0),
                    reorderings: reord.get(i).unwrap_or(0),
                    dsack_dups: dsack.get(i).unwrap_or(0),
                    out_of_order: ooo.get(i).unwrap_or(0),
                },
            ))
        })
        .collect())
}

/// The nodes' busy CPU per (point, rep), every record of both ends that carries it, with the
/// payload of those trials counted once (on the side that times the pattern); attempts as in
/// [`tcp_pass`]. Records from workers that did not read it: nothing, never zeros.
fn cpu_pass(mut records: LazyFrame) -> Result<BTreeMap<(u32, u32), CpuEvidence>, ReportError> {
    if !records.collect_schema()?.contains(c::NODE_CPU_BUSY_MS) {
        return Ok(BTreeMap::new());
    }
    let df = records
        .filter(col(c::NODE_CPU_BUSY_MS).is_not_null())
        .group_by([col(c::POINT), col(c::REP)])
        .agg([
            len().cast(DataType::UInt64).alias("trials"),
            col(c::NODE_CPU_BUSY_MS).sum(),
            col(c::BYTES)
                .filter(timing_side())
                .cast(DataType::UInt64)
                .sum()
                .alias(c::BYTES),
        ])
        .collect_with_engine(ENGINE)?
        .unwrap_single();
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let trials = df.column("trials")?.u64()?;
    let busy = df.column(c::NODE_CPU_BUSY_MS)?.f64()?;
    let bytes = df.column(c::BYTES)?.u64()?;
    Ok((0..df.height())
        .filter_map(|i| {
            Some((
                (point.get(i)?, rep.get(i)?),
                CpuEvidence {
                    trials: trials.get(i)?,
                    busy_ms: busy.get(i)?,
                    bytes: bytes.get(i).unwrap_or(0),
                },
            ))
        })
        .collect())
}

/// First pass: per (point, rep, pair), the cell key and the span of successful trials.
fn pair_spans(
    records: LazyFrame,
    run_label: Option<&str>,
) -> Result<BTreeMap<(u32, u32), PointSpan>, ReportError> {
    read_pair_spans(&pair_span_frame(records)?, run_label)
}

/// The first pass's query: one row per (point, rep, pair) with the cell's columns, the span
/// of its successful trials and its trial counts.
fn pair_span_frame(records: LazyFrame) -> Result<DataFrame, ReportError> {
    Ok(records
        .filter(timing_side())
        .group_by([col(c::POINT), col(c::REP), col(c::PAIR)])
        .agg([
            col(c::TOPOLOGY).first(),
            col(c::BONDING).first(),
            col(c::BOND_DRIVER).first(),
            col(c::PLACEMENT).first(),
            col(c::PAIRS).first(),
            col(c::SIZE_BYTES).first(),
            col(c::PATTERN).first(),
            col(c::PROTOCOL).first(),
            col(c::START_UNIX_NS)
                .filter(trial_ok())
                .min()
                .alias("pair_start"),
            col(c::END_UNIX_NS)
                .filter(trial_ok())
                .max()
                .alias("pair_end"),
            trial_ok().cast(DataType::UInt64).sum().alias("ok_trials"),
            trial_ok()
                .not()
                .cast(DataType::UInt64)
                .sum()
                .alias("failed_trials"),
            // The lexically smallest error text, not the "first": the streaming engine does
            // not promise an order within a group, and reruns must agree.
            col(c::ERROR).min().alias("first_error"),
        ])
        .collect_with_engine(ENGINE)?
        .unwrap_single())
}

/// The first pass's rows grouped by attempt, pairs in order.
fn read_pair_spans(
    df: &DataFrame,
    run_label: Option<&str>,
) -> Result<BTreeMap<(u32, u32), PointSpan>, ReportError> {
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let pair = df.column(c::PAIR)?.u32()?;
    let topology = df.column(c::TOPOLOGY)?.str()?;
    let bonding = df.column(c::BONDING)?.str()?;
    let bond_driver = df.column(c::BOND_DRIVER)?.str()?;
    let placement = df.column(c::PLACEMENT)?.str()?;
    let pairs = df.column(c::PAIRS)?.u32()?;
    let size = df.column(c::SIZE_BYTES)?.u64()?;
    let pattern = df.column(c::PATTERN)?.str()?;
    let protocol = df.column(c::PROTOCOL)?.str()?;
    let start = df.column("pair_start")?.u64()?;
    let end = df.column("pair_end")?.u64()?;
    let ok_trials = df.column("ok_trials")?.u64()?;
    let failed_trials = df.column("failed_trials")?.u64()?;
    let first_error = df.column("first_error")?.str()?;

    let mut spans: BTreeMap<(u32, u32), PointSpan> = BTreeMap::new();
    for i in 0..df.height() {
        let (Some(pt), Some(rp), Some(pr)) = (point.get(i), rep.get(i), pair.get(i)) else {
            continue;
        };
        let span = match spans.entry((pt, rp)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let key = CellKey {
                    measure: Measure {
                        pattern: parse_enum(pattern.get(i), "pattern")?,
                        protocol: measured_protocol(parse_enum(protocol.get(i), "protocol")?),
                    },
                    config: Config {
                        run: run_label.map(str::to_owned),
                        topology: topology.get(i).unwrap_or_default().to_owned(),
                        bonding: bonding.get(i).unwrap_or("none").to_owned(),
                        bond_driver: bond_driver
                            .get(i)
                            .map(|d| parse_enum::<BondDriver>(Some(d), "bond_driver"))
                            .transpose()?,
                        placement: parse_enum(placement.get(i), "placement")?,
                    },
                    pairs: pairs.get(i).unwrap_or(0),
                    size_bytes: size.get(i).unwrap_or(0),
                };
                e.insert(PointSpan {
                    planned_pairs: key.pairs,
                    key,
                    pairs: Vec::new(),
                })
            }
        };
        span.pairs.push(PairSpan {
            pair: pr,
            start: start.get(i),
            end: end.get(i),
            ok_trials: ok_trials.get(i).unwrap_or(0),
            failed_trials: failed_trials.get(i).unwrap_or(0),
            first_error: first_error.get(i).map(str::to_owned),
        });
    }
    for span in spans.values_mut() {
        span.pairs.sort_by_key(|p| p.pair);
    }
    Ok(spans)
}

type WindowBytes = BTreeMap<(u32, u32, u32), f64>;

/// Second pass: bytes each pair moved inside its point's window, and latency percentiles per
/// cell over the trials of the attempts that count. A trial with progress samples is counted
/// from them ([`super::window_progress`]); one without (older workers, patterns that do not
/// sample) is pro-rated.
fn window_pass(
    mut records: LazyFrame,
    windows: DataFrame,
    latencies: Latencies,
) -> Result<(WindowBytes, BTreeMap<u32, Latency>), ReportError> {
    let sampled = records.collect_schema()?.contains(c::PROGRESS_BYTES);
    let mut columns = vec![
        col(c::POINT),
        col(c::REP),
        col(c::PAIR),
        col(c::START_UNIX_NS),
        col(c::END_UNIX_NS),
        col(c::BYTES),
        col(c::LATENCY_US),
        col(c::LATENCY_MAX_US),
    ];
    if sampled {
        columns.extend([col(c::PROGRESS_OFFSET_NS), col(c::PROGRESS_BYTES)]);
    }
    let joined = records
        .filter(timing_side().and(trial_ok()))
        .select(columns)
        .join(
            windows.lazy(),
            [col(c::POINT), col(c::REP)],
            [col(c::POINT), col(c::REP)],
            JoinArgs::new(JoinType::Inner),
        )
        .cache();
    let (unsampled, samples_q) = if sampled {
        let has = || col(c::PROGRESS_BYTES).is_not_null();
        (
            joined.clone().filter(has().not()),
            Some(joined.clone().filter(has()).select([
                col(c::POINT),
                col(c::REP),
                col(c::PAIR),
                col(c::START_UNIX_NS),
                col("w_start"),
                col("w_end"),
                col(c::PROGRESS_OFFSET_NS),
                col(c::PROGRESS_BYTES),
            ])),
        )
    } else {
        (joined.clone(), None)
    };
    let bytes_q = window_bytes_query(unsampled);
    let opt = bytes_q.get_current_optimizations();
    let latency_q = (latencies == Latencies::Measure).then(|| latency_query(joined));
    let mut plans = vec![bytes_q.logical_plan];
    plans.extend(samples_q.map(|q| q.logical_plan));
    plans.extend(latency_q.map(|q| q.logical_plan));
    let mut frames = LazyFrame::collect_all_with_engine(plans, ENGINE, opt)?.into_iter();
    let mut next = |what: &str| {
        frames.next().ok_or_else(|| {
            ReportError::Internal(format!("collect_all returned no frame for {what}"))
        })
    };
    let mut bytes = read_window_bytes(&next("the bytes")?)?;
    if sampled {
        window_progress::add_window_bytes(&next("the progress samples")?, &mut bytes)?;
    }
    let latency = match latencies {
        Latencies::Measure => read_latency(&next("the latencies")?)?,
        Latencies::Skip => BTreeMap::new(),
    };
    Ok((bytes, latency))
}

/// Whether the window pass also takes the latency percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Latencies {
    Measure,
    Skip,
}

/// Bytes a trial moved inside its point's window (`w_start`, `w_end`), pro-rated by the part
/// of the trial that lies in it.
fn bytes_in_window() -> Expr {
    let start = col(c::START_UNIX_NS).cast(DataType::Int64);
    let end = col(c::END_UNIX_NS).cast(DataType::Int64);
    let ws = col("w_start").cast(DataType::Int64);
    let we = col("w_end").cast(DataType::Int64);
    let lo = when(start.clone().gt(ws.clone()))
        .then(start.clone())
        .otherwise(ws.clone());
    let hi = when(end.clone().lt(we.clone()))
        .then(end.clone())
        .otherwise(we.clone());
    let overlap = when(hi.clone().gt(lo.clone()))
        .then(hi - lo)
        .otherwise(lit(0i64))
        .cast(DataType::Float64);
    let duration = (end.clone() - start.clone()).cast(DataType::Float64);
    let bytes = col(c::BYTES).cast(DataType::Float64);
    // A zero-length trial cannot be pro-rated: it counts whole if it lies in the window.
    when(duration.clone().gt(lit(0.0)))
        .then(bytes.clone() * overlap / duration)
        .otherwise(
            when(start.clone().gt_eq(ws).and(end.lt_eq(we)))
                .then(bytes)
                .otherwise(lit(0.0)),
        )
}

/// Per (point, rep, pair): the bytes its trials moved inside the window.
fn window_bytes_query(joined: LazyFrame) -> LazyFrame {
    joined
        .group_by([col(c::POINT), col(c::REP), col(c::PAIR)])
        // Rounded to whole bytes (±0.5 byte per trial): integer sums do not depend on the
        // order the engine adds them in, so reruns agree to the last digit.
        .agg([(bytes_in_window() + lit(0.5))
            .cast(DataType::Int64)
            .sum()
            .cast(DataType::Float64)
            .alias("window_bytes")])
}

/// Per cell id: latency percentiles over the trials, and the largest latency seen.
fn latency_query(joined: LazyFrame) -> LazyFrame {
    let q = |p: f64, name: &str| {
        col(c::LATENCY_US)
            .quantile(lit(p), QuantileMethod::Nearest)
            .alias(name)
    };
    joined
        .filter(col(c::LATENCY_US).is_not_null())
        .group_by([col("cell")])
        .agg([
            q(0.5, "p50"),
            q(0.9, "p90"),
            q(0.99, "p99"),
            col(c::LATENCY_MAX_US).max().alias("max_reported"),
            col(c::LATENCY_US).max().alias("max_mean"),
        ])
}

fn read_window_bytes(bytes_df: &DataFrame) -> Result<WindowBytes, ReportError> {
    let mut bytes = WindowBytes::new();
    let point = bytes_df.column(c::POINT)?.u32()?;
    let rep = bytes_df.column(c::REP)?.u32()?;
    let pair = bytes_df.column(c::PAIR)?.u32()?;
    let wb = bytes_df.column("window_bytes")?.f64()?;
    for i in 0..bytes_df.height() {
        if let (Some(a), Some(b), Some(p), Some(v)) =
            (point.get(i), rep.get(i), pair.get(i), wb.get(i))
        {
            *bytes.entry((a, b, p)).or_insert(0.0) += v;
        }
    }
    Ok(bytes)
}

fn read_latency(latency_df: &DataFrame) -> Result<BTreeMap<u32, Latency>, ReportError> {
    let mut latency = BTreeMap::new();
    let cell = latency_df.column("cell")?.u32()?;
    let p50 = latency_df.column("p50")?.f64()?;
    let p90 = latency_df.column("p90")?.f64()?;
    let p99 = latency_df.column("p99")?.f64()?;
    let max_reported = latency_df.column("max_reported")?.f64()?;
    let max_mean = latency_df.column("max_mean")?.f64()?;
    for i in 0..latency_df.height() {
        if let Some(id) = cell.get(i) {
            latency.insert(
                id,
                Latency {
                    p50_us: p50.get(i),
                    p90_us: p90.get(i),
                    p99_us: p99.get(i),
                    // The worker's own maximum when it reported one; else the largest trial mean.
                    max_us: max_reported.get(i).or(max_mean.get(i)),
                },
            );
        }
    }
    Ok(latency)
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

/// Parses a lower-case enum name the way serde wrote it.
fn parse_enum<T: serde::de::DeserializeOwned>(
    s: Option<&str>,
    what: &str,
) -> Result<T, ReportError> {
    let s = s.unwrap_or_default();
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| ReportError::Internal(format!("unknown {what} {s:?} in records")))
}
