//! The report's one pass over `records.parquet`.
//!
//! Every figure the report takes from the records comes from one scan of the file: Polars'
//! streaming engine decodes each column the report needs once and feeds two outputs (the few
//! trials with progress samples are read by a scan of their own, [`read_samples`], made only
//! when there may be some).
//!
//! - Per attempt, pair and side ([`PairGroup`]): the span of its successful trials, its trial
//!   counts and first error, TCP's counters and the nodes' CPU. A few rows per point.
//! - The side that times each pattern, its successful trials one row each ([`Trials`]): when
//!   each started and ended, what it delivered and its latency. The aggregate's window is known
//!   only once every pair's span is, so these rows are kept, narrow, for the pass in plain Rust
//!   that cuts each trial at its window ([`super::aggregate`]).
//!
//! Keeping them costs memory (about 56 bytes a trial) but not a second read of the file: a
//! second pass decoded the same columns again and cost as much as the first. Nor does the
//! engine group every record: the spans come from the kept trials, in plain Rust, and the
//! engine groups only the records they do not tell of (failed trials, TCP's counters, the
//! CPU). On 10 million records the report took 2.4-2.6 s with four passes, 1.8-2.0 s with one
//! pass grouping every record, and 1.2-1.3 s so. Handing the engine's batches to plain Rust
//! to group them there was slower (2.5 s, 1.4 GiB): they queued behind the one thread that took
//! them apart.

use std::collections::{BTreeMap, BTreeSet};

use polars::prelude::*;

use super::data::{CellKey, Config, CpuEvidence, Measure, TcpEvidence};
use super::error::ReportError;
use crate::results::BondDriver;
use crate::results::schema::col as c;

/// Polars' streaming engine: it decodes the Parquet file in morsels instead of whole
/// columns, which keeps a 10-million-record report near 0.8 GiB (with the store's row groups).
const ENGINE: Engine = Engine::Streaming;

/// One attempt at one repetition of one point, as its records number it. Records from before
/// re-measurement carry no attempt: theirs are all attempt 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptId {
    pub point: u32,
    pub rep: u32,
    pub attempt: u32,
}

/// The records of one pair of one attempt on one side.
#[derive(Debug, Clone, Default)]
pub struct PairGroup {
    pub pair: u32,
    /// Whether this side times the pattern (the receiver for `stream`, the client otherwise).
    pub timing: bool,
    pub ok_trials: u64,
    pub failed_trials: u64,
    /// First start and last end of its successful trials.
    pub start: Option<u64>,
    pub end: Option<u64>,
    /// The lexically smallest error text: the engine does not promise an order within a group,
    /// and reruns must agree.
    pub first_error: Option<String>,
    /// TCP's counters, over the trials that carried them.
    pub tcp: Option<TcpEvidence>,
    /// Busy CPU over the trials that carried it, with those trials' payload.
    pub cpu: Option<CpuEvidence>,
    /// The largest latency the worker reported, and the largest trial mean, over successful
    /// trials with a latency.
    pub latency_max_us: Option<f64>,
    pub latency_mean_max_us: Option<f64>,
    /// The cell the records name, when the pass was asked to read it ([`KeyColumns::Read`]).
    pub key: Option<CellKey>,
}

/// Whether the pass reads the cell's columns (topology, bonding, ...) from the records.
/// points.jsonl names the cell of every attempt it lists; the records' are read for runs
/// without one, or from before it named a bond's driver. Attempts it does not list (an
/// interrupted run) are looked up apart ([`cells_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyColumns {
    Read,
    Skip,
}

/// The timing side's successful trials, in the order the engine gave them.
pub struct Trials {
    frame: DataFrame,
}

/// One row of [`Trials`].
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    pub id: AttemptId,
    pub pair: u32,
    pub start: u64,
    pub end: u64,
    pub bytes: u64,
    pub latency_us: Option<f64>,
    pub latency_max_us: Option<f64>,
}

/// The arrow array a chunk of a Polars column of type `T` is.
type ArrayOf<T> = <T as PolarsDataType>::Array;

/// One chunk of [`Trials`]: its columns as the engine decoded them.
struct TrialChunk<'a> {
    /// Point, rep, attempt, pair.
    ids: [&'a ArrayOf<UInt32Type>; 4],
    /// Start, end, bytes.
    times: [&'a ArrayOf<UInt64Type>; 3],
    /// Latency, latency maximum.
    latencies: [&'a ArrayOf<Float64Type>; 2],
}

impl TrialChunk<'_> {
    fn for_each(&self, mut f: impl FnMut(Trial)) {
        let [point, rep, attempt, pair] = self.ids;
        let [start, end, bytes] = self.times;
        let [latency, latency_max] = self.latencies;
        let required = [
            point.validity(),
            rep.validity(),
            attempt.validity(),
            pair.validity(),
            start.validity(),
            end.validity(),
            bytes.validity(),
        ];
        let any_missing = required.iter().any(Option::is_some);
        let value = |a: &ArrayOf<Float64Type>, i: usize| {
            a.validity()
                .is_none_or(|v| v.get_bit(i))
                .then(|| a.value(i))
        };
        for i in 0..point.len() {
            // Records always carry these; a row without one is not a trial.
            if any_missing && !required.iter().all(|v| v.is_none_or(|v| v.get_bit(i))) {
                continue;
            }
            f(Trial {
                id: AttemptId {
                    point: point.value(i),
                    rep: rep.value(i),
                    attempt: attempt.value(i),
                },
                pair: pair.value(i),
                start: start.value(i),
                end: end.value(i),
                bytes: bytes.value(i),
                latency_us: value(latency, i),
                latency_max_us: value(latency_max, i),
            });
        }
    }
}

impl Trials {
    /// Folds the trials into one accumulator per chunk of the frame (the engine's batches),
    /// the chunks spread over the cores, and returns the accumulators in chunk order. `f` is
    /// called once per row, with no allocation: the columns are read as the slices the engine
    /// decoded them into. What `f` gathers must not depend on the order of the rows: the
    /// engine does not promise one.
    pub fn fold<A: Send>(
        &self,
        init: impl Fn() -> A + Sync,
        f: impl Fn(&mut A, Trial) + Sync,
    ) -> Result<Vec<A>, ReportError> {
        use rayon::prelude::*;
        // The engine's batches become the frame's chunks, the same in every column; a frame
        // whose chunks do not line up is copied into one chunk first.
        let aligned;
        let frame = if self.frame.should_rechunk() {
            let mut copy = self.frame.clone();
            copy.rechunk_mut();
            aligned = copy;
            &aligned
        } else {
            &self.frame
        };
        let u32_of =
            |name: &str| -> Result<&UInt32Chunked, ReportError> { Ok(frame.column(name)?.u32()?) };
        let u64_of =
            |name: &str| -> Result<&UInt64Chunked, ReportError> { Ok(frame.column(name)?.u64()?) };
        let f64_of =
            |name: &str| -> Result<&Float64Chunked, ReportError> { Ok(frame.column(name)?.f64()?) };
        let (point, rep, attempt, pair) = (
            u32_of(c::POINT)?,
            u32_of(c::REP)?,
            u32_of(c::ATTEMPT)?,
            u32_of(c::PAIR)?,
        );
        let (start, end, bytes) = (
            u64_of(c::START_UNIX_NS)?,
            u64_of(c::END_UNIX_NS)?,
            u64_of(c::BYTES)?,
        );
        let (latency, latency_max) = (f64_of(c::LATENCY_US)?, f64_of(c::LATENCY_MAX_US)?);
        let chunks: Vec<TrialChunk<'_>> = point
            .downcast_iter()
            .zip(rep.downcast_iter())
            .zip(attempt.downcast_iter())
            .zip(pair.downcast_iter())
            .zip(start.downcast_iter())
            .zip(end.downcast_iter())
            .zip(bytes.downcast_iter())
            .zip(latency.downcast_iter())
            .zip(latency_max.downcast_iter())
            .map(
                |(
                    (((((((point, rep), attempt), pair), start), end), bytes), latency),
                    latency_max,
                )| {
                    TrialChunk {
                        ids: [point, rep, attempt, pair],
                        times: [start, end, bytes],
                        latencies: [latency, latency_max],
                    }
                },
            )
            .collect();
        Ok(chunks
            .par_iter()
            .map(|chunk| {
                let mut acc = init();
                chunk.for_each(|t| f(&mut acc, t));
                acc
            })
            .collect())
    }

    /// Adds the spans of the trials to the groups of their pairs on the timing side: first
    /// start, last end, how many, and the largest latencies (the worker's own maximum, over
    /// trials that measured a latency, and the largest trial mean).
    fn add_spans(
        &self,
        groups: &mut PlHashMap<(AttemptId, u32, bool), PairGroup>,
    ) -> Result<(), ReportError> {
        let per_chunk = self.fold(
            || Spans {
                by_pair: PlHashMap::new(),
                current: None,
            },
            |spans, t| spans.add(t),
        )?;
        for spans in per_chunk {
            for (&(id, pair), span) in &spans.finish() {
                let group = groups.entry((id, pair, true)).or_insert_with(|| PairGroup {
                    pair,
                    timing: true,
                    ..PairGroup::default()
                });
                span.merge_into(group);
            }
        }
        Ok(())
    }
}

/// The spans of one chunk's trials, by attempt and pair.
struct Spans {
    by_pair: PlHashMap<(AttemptId, u32), Span>,
    /// The pair of the trial before and its span, not yet in `by_pair`: trials come attempt by
    /// attempt and pair by pair, so the map is looked up only when the pair changes.
    current: Option<((AttemptId, u32), Span)>,
}

impl Spans {
    fn finish(mut self) -> PlHashMap<(AttemptId, u32), Span> {
        if let Some((k, span)) = self.current.take() {
            self.by_pair.entry(k).or_default().merge(&span);
        }
        self.by_pair
    }

    fn add(&mut self, t: Trial) {
        let key = (t.id, t.pair);
        match &mut self.current {
            Some((k, span)) if *k == key => span.add(&t),
            current => {
                if let Some((k, span)) = current.take() {
                    self.by_pair.entry(k).or_default().merge(&span);
                }
                let mut span = Span::default();
                span.add(&t);
                *current = Some((key, span));
            }
        }
    }
}

/// First start, last end, count and largest latencies of some trials of one pair.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    trials: u64,
    start: Option<u64>,
    end: Option<u64>,
    latency_max_us: Option<f64>,
    latency_mean_max_us: Option<f64>,
}

impl Span {
    fn add(&mut self, t: &Trial) {
        self.merge(&Span {
            trials: 1,
            start: Some(t.start),
            end: Some(t.end),
            // The worker's maximum counts only with the trial's mean (a trial that measured a
            // latency).
            latency_max_us: t.latency_us.and(t.latency_max_us),
            latency_mean_max_us: t.latency_us,
        });
    }

    fn merge(&mut self, other: &Span) {
        fn keep<T: Copy>(a: Option<T>, b: Option<T>, pick: impl Fn(T, T) -> T) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(pick(a, b)),
                (a, b) => a.or(b),
            }
        }
        self.trials += other.trials;
        self.start = keep(self.start, other.start, u64::min);
        self.end = keep(self.end, other.end, u64::max);
        self.latency_max_us = keep(self.latency_max_us, other.latency_max_us, f64::max);
        self.latency_mean_max_us = keep(
            self.latency_mean_max_us,
            other.latency_mean_max_us,
            f64::max,
        );
    }

    fn merge_into(&self, g: &mut PairGroup) {
        let mut span = Span {
            trials: g.ok_trials,
            start: g.start,
            end: g.end,
            latency_max_us: g.latency_max_us,
            latency_mean_max_us: g.latency_mean_max_us,
        };
        span.merge(self);
        g.ok_trials = span.trials;
        g.start = span.start;
        g.end = span.end;
        g.latency_max_us = span.latency_max_us;
        g.latency_mean_max_us = span.latency_mean_max_us;
    }
}

/// What the one pass gathered.
pub struct Gathered {
    /// Whether the records say which attempt they belong to (runs since re-measurement).
    pub has_attempts: bool,
    /// Per attempt, its pairs on both sides, in (pair, side) order.
    pub groups: BTreeMap<AttemptId, Vec<PairGroup>>,
    pub trials: Trials,
    /// The timing side's successful trials that have progress samples: point, rep, attempt,
    /// pair, start, end and the two sample lists. `None` when the records have no such columns
    /// or points.jsonl says no record has samples: the one pass does not read them; the caller
    /// does, with [`read_samples`], when there may be some.
    pub sampled: Option<DataFrame>,
}

/// Column of the narrowed records: whether a record is of the side that times its pattern.
const TIMING: &str = "timing";
/// Column of the narrowed records: whether a trial succeeded.
const OK: &str = "ok";

/// The records the aggregation reads: the timing side of each pattern.
fn timing_side() -> Expr {
    // Server for `stream`, client otherwise: as booleans, not as a string built per record.
    col(c::PATTERN)
        .eq(lit("stream"))
        .eq(col(c::ROLE).eq(lit("server")))
}

/// TCP's counters, which a record carries all or none of.
const TCP_COUNTERS: [&str; 4] = [
    c::TCP_RETRANS,
    c::TCP_REORD_SEEN,
    c::TCP_DSACK_DUPS,
    c::TCP_RCV_OOOPACK,
];

/// The cell's columns ([`KeyColumns::Read`]).
const KEY_COLUMNS: [&str; 8] = [
    c::TOPOLOGY,
    c::BONDING,
    c::BOND_DRIVER,
    c::PLACEMENT,
    c::PAIRS,
    c::SIZE_BYTES,
    c::PATTERN,
    c::PROTOCOL,
];

/// Point, rep, attempt and pair, as every output of the records keys its rows. Records from
/// before re-measurement carry no attempt: theirs are all attempt 0.
fn trial_id(has_attempts: bool) -> [Expr; 4] {
    let u32_col = |name: &str| col(name).cast(DataType::UInt32);
    [
        u32_col(c::POINT),
        u32_col(c::REP),
        if has_attempts {
            u32_col(c::ATTEMPT)
        } else {
            lit(0u32).cast(DataType::UInt32).alias(c::ATTEMPT)
        },
        u32_col(c::PAIR),
    ]
}

/// Reads `records` (a scan of `records.parquet`) once.
pub fn gather(mut records: LazyFrame, keys: KeyColumns) -> Result<Gathered, ReportError> {
    let schema = records.collect_schema()?;
    let has = |name: &str| schema.contains(name);
    let has_attempts = has(c::ATTEMPT);
    let has_tcp = TCP_COUNTERS.iter().all(|n| has(n));
    let has_cpu = has(c::NODE_CPU_BUSY_MS);

    let u64_col = |name: &str| col(name).cast(DataType::UInt64);
    let f64_col = |name: &str| col(name).cast(DataType::Float64);
    // Every output below keys its rows by the trial.
    let mut narrow = trial_id(has_attempts).to_vec();
    narrow.extend([
        timing_side().alias(TIMING),
        col(c::ERROR).is_null().alias(OK),
        col(c::ERROR),
        u64_col(c::START_UNIX_NS),
        u64_col(c::END_UNIX_NS),
        u64_col(c::BYTES),
        f64_col(c::LATENCY_US),
        f64_col(c::LATENCY_MAX_US),
    ]);
    if has_tcp {
        narrow.extend(TCP_COUNTERS.map(u64_col));
    }
    if has_cpu {
        narrow.push(f64_col(c::NODE_CPU_BUSY_MS));
    }
    if keys == KeyColumns::Read {
        narrow.extend(KEY_COLUMNS.map(col));
    }
    // One scan, its narrowed records shared by every output below.
    let narrowed = records.clone().select(narrow).cache();

    // The pair groups from the records the trials below do not tell of: failed trials, and
    // TCP's counters and the CPU of both sides. The trials give the rest ([`Trials::add_spans`]),
    // so the engine groups a few records, not all of them. Records are read whole when their
    // cells are.
    let mut elsewhere = col(OK).not();
    if has_tcp {
        elsewhere = elsewhere.or(col(c::TCP_RETRANS).is_not_null());
    }
    if has_cpu {
        elsewhere = elsewhere.or(col(c::NODE_CPU_BUSY_MS).is_not_null());
    }
    let grouped = match keys {
        KeyColumns::Read => narrowed.clone(),
        KeyColumns::Skip => narrowed.clone().filter(elsewhere),
    };
    let groups_q = grouped
        .group_by([
            col(c::POINT),
            col(c::REP),
            col(c::ATTEMPT),
            col(c::PAIR),
            col(TIMING),
        ])
        .agg(group_aggregations(has_tcp, has_cpu, keys));
    let trials_q = narrowed.clone().filter(col(TIMING).and(col(OK))).select([
        col(c::POINT),
        col(c::REP),
        col(c::ATTEMPT),
        col(c::PAIR),
        col(c::START_UNIX_NS),
        col(c::END_UNIX_NS),
        col(c::BYTES),
        col(c::LATENCY_US),
        col(c::LATENCY_MAX_US),
    ]);
    let opt = groups_q.get_current_optimizations();
    let plans = vec![groups_q.logical_plan, trials_q.logical_plan];
    let mut frames = LazyFrame::collect_all_with_engine(plans, ENGINE, opt)?.into_iter();
    let mut next = |what: &str| {
        frames.next().ok_or_else(|| {
            ReportError::Internal(format!("collect_all returned no frame for {what}"))
        })
    };
    let mut groups = read_groups(&next("the pair groups")?, has_tcp, has_cpu, keys)?;
    let trials = Trials {
        frame: next("the trials")?,
    };
    trials.add_spans(&mut groups)?;
    let groups = by_attempt(groups);
    Ok(Gathered {
        has_attempts,
        groups,
        trials,
        sampled: None,
    })
}

/// The timing side's successful trials that have progress samples, for [`Gathered::sampled`]:
/// `None` when the records have no such columns.
///
/// A scan of its own, made only for runs that have samples or may have (`super::load`):
/// carried through the one pass, every record's lists were decoded and copied only to be
/// dropped, and even a flag of whether a record has samples decodes them (on 10 million records
/// without samples, 0.2-0.4 s of 1.5). Its one filter is on the lists, so the reader decodes
/// the other columns only for records that have samples; filtered on the side and the error
/// too, it decoded those for every record. The side and the error are checked once it is read.
pub fn read_samples(mut records: LazyFrame) -> Result<Option<DataFrame>, ReportError> {
    let schema = records.collect_schema()?;
    if !(schema.contains(c::PROGRESS_BYTES) && schema.contains(c::PROGRESS_OFFSET_NS)) {
        return Ok(None);
    }
    let mut columns = trial_id(schema.contains(c::ATTEMPT)).to_vec();
    columns.extend([
        col(c::START_UNIX_NS).cast(DataType::UInt64),
        col(c::END_UNIX_NS).cast(DataType::UInt64),
        col(c::PROGRESS_OFFSET_NS),
        col(c::PROGRESS_BYTES),
        timing_side().alias(TIMING),
        col(c::ERROR).is_null().alias(OK),
    ]);
    let sampled = records
        .filter(col(c::PROGRESS_BYTES).is_not_null())
        .select(columns)
        .collect_with_engine(ENGINE)?
        .unwrap_single()
        .lazy()
        .filter(col(TIMING).and(col(OK)))
        .drop(by_name([TIMING, OK], true, false))
        .collect()?;
    Ok(Some(sampled))
}

/// Per (attempt, pair, side): what [`PairGroup`] holds that the trials do not tell. Only
/// elementwise expressions inside
/// the aggregations (`when`, not `filter`): the streaming engine runs those in its own group-by
/// and falls back to the in-memory one otherwise (5 GB instead of under 1).
fn group_aggregations(has_tcp: bool, has_cpu: bool, keys: KeyColumns) -> Vec<Expr> {
    let count = |e: Expr| e.cast(DataType::UInt64).sum();
    let mut aggs = vec![
        count(col(OK).not()).alias("failed_trials"),
        col(c::ERROR).min().alias("first_error"),
    ];
    if has_tcp {
        // A record carries all four counters or none; `tcp_retrans` says which.
        let carried = || col(c::TCP_RETRANS).is_not_null();
        aggs.push(count(carried()).alias("tcp_trials"));
        for name in TCP_COUNTERS {
            aggs.push(
                when(carried())
                    .then(col(name))
                    .otherwise(lit(NULL))
                    .sum()
                    .alias(name),
            );
        }
    }
    if has_cpu {
        let carried = || col(c::NODE_CPU_BUSY_MS).is_not_null();
        aggs.extend([
            count(carried()).alias("cpu_trials"),
            col(c::NODE_CPU_BUSY_MS).sum(),
            when(carried())
                .then(col(c::BYTES))
                .otherwise(lit(NULL))
                .sum()
                .alias("cpu_bytes"),
        ]);
    }
    if keys == KeyColumns::Read {
        aggs.extend(KEY_COLUMNS.map(|name| col(name).first()));
    }
    aggs
}

fn read_groups(
    df: &DataFrame,
    has_tcp: bool,
    has_cpu: bool,
    keys: KeyColumns,
) -> Result<PlHashMap<(AttemptId, u32, bool), PairGroup>, ReportError> {
    let u32_of =
        |name: &str| -> Result<&UInt32Chunked, ReportError> { Ok(df.column(name)?.u32()?) };
    let u64_of =
        |name: &str| -> Result<&UInt64Chunked, ReportError> { Ok(df.column(name)?.u64()?) };
    let f64_of =
        |name: &str| -> Result<&Float64Chunked, ReportError> { Ok(df.column(name)?.f64()?) };
    let (point, rep, attempt, pair) = (
        u32_of(c::POINT)?,
        u32_of(c::REP)?,
        u32_of(c::ATTEMPT)?,
        u32_of(c::PAIR)?,
    );
    let timing = df.column(TIMING)?.bool()?;
    let failed_trials = u64_of("failed_trials")?;
    let first_error = df.column("first_error")?.str()?;
    let tcp = if has_tcp {
        Some([
            u64_of("tcp_trials")?,
            u64_of(c::TCP_RETRANS)?,
            u64_of(c::TCP_REORD_SEEN)?,
            u64_of(c::TCP_DSACK_DUPS)?,
            u64_of(c::TCP_RCV_OOOPACK)?,
        ])
    } else {
        None
    };
    let cpu = if has_cpu {
        Some((
            u64_of("cpu_trials")?,
            f64_of(c::NODE_CPU_BUSY_MS)?,
            u64_of("cpu_bytes")?,
        ))
    } else {
        None
    };
    let keys = match keys {
        KeyColumns::Read => Some(RecordKeys::of(df)?),
        KeyColumns::Skip => None,
    };

    let mut groups = PlHashMap::new();
    for i in 0..df.height() {
        let (Some(point), Some(rep), Some(attempt), Some(pair)) =
            (point.get(i), rep.get(i), attempt.get(i), pair.get(i))
        else {
            continue;
        };
        let tcp = tcp
            .as_ref()
            .and_then(|[trials, retrans, reord, dsack, ooo]| {
                // Records that carried no counters give nothing, never zeros.
                let trials = trials.get(i).filter(|&n| n > 0)?;
                Some(TcpEvidence {
                    trials,
                    retransmissions: retrans.get(i).unwrap_or(0),
                    reorderings: reord.get(i).unwrap_or(0),
                    dsack_dups: dsack.get(i).unwrap_or(0),
                    out_of_order: ooo.get(i).unwrap_or(0),
                })
            });
        let cpu = cpu.as_ref().and_then(|(trials, busy, bytes)| {
            let trials = trials.get(i).filter(|&n| n > 0)?;
            Some(CpuEvidence {
                trials,
                busy_ms: busy.get(i).unwrap_or(0.0),
                bytes: bytes.get(i).unwrap_or(0),
            })
        });
        let id = AttemptId {
            point,
            rep,
            attempt,
        };
        let timing = timing.get(i).unwrap_or(false);
        groups.insert(
            (id, pair, timing),
            PairGroup {
                pair,
                timing,
                failed_trials: failed_trials.get(i).unwrap_or(0),
                first_error: first_error.get(i).map(str::to_owned),
                tcp,
                cpu,
                key: keys.as_ref().map(|k| k.key(i)).transpose()?,
                ..PairGroup::default()
            },
        );
    }
    Ok(groups)
}

/// The pair groups by attempt, in (pair, side) order.
fn by_attempt(
    groups: PlHashMap<(AttemptId, u32, bool), PairGroup>,
) -> BTreeMap<AttemptId, Vec<PairGroup>> {
    let mut by_attempt: BTreeMap<AttemptId, Vec<PairGroup>> = BTreeMap::new();
    for ((id, _, _), group) in groups {
        by_attempt.entry(id).or_default().push(group);
    }
    for pairs in by_attempt.values_mut() {
        pairs.sort_by_key(|g| (g.pair, g.timing));
    }
    by_attempt
}

/// The cell's columns of the pair groups.
struct RecordKeys<'a> {
    topology: &'a StringChunked,
    bonding: &'a StringChunked,
    bond_driver: &'a StringChunked,
    placement: &'a StringChunked,
    pairs: UInt32Chunked,
    size: UInt64Chunked,
    pattern: &'a StringChunked,
    protocol: &'a StringChunked,
}

impl<'a> RecordKeys<'a> {
    fn of(df: &'a DataFrame) -> Result<RecordKeys<'a>, ReportError> {
        let cast = |name: &str, to: &DataType| -> Result<Series, ReportError> {
            Ok(df.column(name)?.as_materialized_series().cast(to)?)
        };
        Ok(RecordKeys {
            topology: df.column(c::TOPOLOGY)?.str()?,
            bonding: df.column(c::BONDING)?.str()?,
            bond_driver: df.column(c::BOND_DRIVER)?.str()?,
            placement: df.column(c::PLACEMENT)?.str()?,
            pairs: cast(c::PAIRS, &DataType::UInt32)?.u32()?.clone(),
            size: cast(c::SIZE_BYTES, &DataType::UInt64)?.u64()?.clone(),
            pattern: df.column(c::PATTERN)?.str()?,
            protocol: df.column(c::PROTOCOL)?.str()?,
        })
    }

    fn key(&self, i: usize) -> Result<CellKey, ReportError> {
        Ok(CellKey {
            measure: Measure {
                pattern: parse_enum(self.pattern.get(i), "pattern")?,
                protocol: measured_protocol(parse_enum(self.protocol.get(i), "protocol")?),
            },
            config: Config {
                run: None,
                topology: self.topology.get(i).unwrap_or_default().to_owned(),
                bonding: self.bonding.get(i).unwrap_or("none").to_owned(),
                bond_driver: self
                    .bond_driver
                    .get(i)
                    .map(|d| parse_enum::<BondDriver>(Some(d), "bond_driver"))
                    .transpose()?,
                placement: parse_enum(self.placement.get(i), "placement")?,
            },
            pairs: self.pairs.get(i).unwrap_or(0),
            size_bytes: self.size.get(i).unwrap_or(0),
        })
    }
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

/// Parses a lower-case enum name the way serde wrote it.
fn parse_enum<T: serde::de::DeserializeOwned>(
    s: Option<&str>,
    what: &str,
) -> Result<T, ReportError> {
    let s = s.unwrap_or_default();
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| ReportError::Internal(format!("unknown {what} {s:?} in records")))
}

/// The cells the records of `unlisted` name, by (point, rep): for attempts points.jsonl has no
/// line for (an interrupted run), whose cells only their records tell. A second, narrow read
/// of the file, made only for such runs.
pub fn cells_of(
    records: LazyFrame,
    unlisted: &BTreeSet<(u32, u32)>,
) -> Result<BTreeMap<(u32, u32), CellKey>, ReportError> {
    if unlisted.is_empty() {
        return Ok(BTreeMap::new());
    }
    let wanted = unlisted.iter().fold(lit(false), |any, &(point, rep)| {
        any.or(col(c::POINT)
            .cast(DataType::UInt32)
            .eq(lit(point))
            .and(col(c::REP).cast(DataType::UInt32).eq(lit(rep))))
    });
    let df = records
        .filter(timing_side().and(wanted))
        .group_by([
            col(c::POINT).cast(DataType::UInt32),
            col(c::REP).cast(DataType::UInt32),
        ])
        .agg(KEY_COLUMNS.map(|name| col(name).first()))
        .collect_with_engine(ENGINE)?
        .unwrap_single();
    let point = df.column(c::POINT)?.u32()?;
    let rep = df.column(c::REP)?.u32()?;
    let keys = RecordKeys::of(&df)?;
    let mut cells = BTreeMap::new();
    for i in 0..df.height() {
        if let (Some(p), Some(r)) = (point.get(i), rep.get(i)) {
            cells.insert((p, r), keys.key(i)?);
        }
    }
    Ok(cells)
}
