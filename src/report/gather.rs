//! The report's one pass over `records.parquet`.
//!
//! Every figure the report takes from the records comes from one scan of the file: Polars'
//! streaming engine decodes each column the report needs once and feeds two outputs (the few
//! trials with progress samples are read by a scan of their own, which the rest do not pay for).
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
/// columns, which keeps a 10-million-record report near 1.2 GiB.
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

impl Trials {
    /// Calls `f` with every trial: one call per row, no allocation, the columns read as the
    /// slices the engine decoded them into (a pass over five million trials takes tens of ms).
    pub fn for_each(&self, mut f: impl FnMut(Trial)) -> Result<(), ReportError> {
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
        let u32_of = |name: &str| -> Result<UInt32Chunked, ReportError> {
            Ok(frame.column(name)?.u32()?.clone())
        };
        let u64_of = |name: &str| -> Result<UInt64Chunked, ReportError> {
            Ok(frame.column(name)?.u64()?.clone())
        };
        let f64_of = |name: &str| -> Result<Float64Chunked, ReportError> {
            Ok(frame.column(name)?.f64()?.clone())
        };
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
        let ids = point
            .downcast_iter()
            .zip(rep.downcast_iter())
            .zip(attempt.downcast_iter())
            .zip(pair.downcast_iter());
        let times = start
            .downcast_iter()
            .zip(end.downcast_iter())
            .zip(bytes.downcast_iter());
        let latencies = latency.downcast_iter().zip(latency_max.downcast_iter());
        for (((((point, rep), attempt), pair), ((start, end), bytes)), (latency, latency_max)) in
            ids.zip(times).zip(latencies)
        {
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
            for i in 0..point.len() {
                // Records always carry these; a row without one is not a trial.
                if any_missing && !required.iter().all(|v| v.is_none_or(|v| v.get_bit(i))) {
                    continue;
                }
                let latency_us = latency
                    .validity()
                    .is_none_or(|v| v.get_bit(i))
                    .then(|| latency.value(i));
                let latency_max_us = latency_max
                    .validity()
                    .is_none_or(|v| v.get_bit(i))
                    .then(|| latency_max.value(i));
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
                    latency_us,
                    latency_max_us,
                });
            }
        }
        Ok(())
    }

    /// Adds the spans of the trials to the groups of their pairs on the timing side: first
    /// start, last end, how many, and the largest latencies (the worker's own maximum, over
    /// trials that measured a latency, and the largest trial mean).
    fn add_spans(
        &self,
        groups: &mut PlHashMap<(AttemptId, u32, bool), PairGroup>,
    ) -> Result<(), ReportError> {
        // Trials come attempt by attempt: the group is looked up again only when it changes.
        let mut current: Option<((AttemptId, u32), PairGroup)> = None;
        let put_back =
            |done: ((AttemptId, u32), PairGroup),
             groups: &mut PlHashMap<(AttemptId, u32, bool), PairGroup>| {
                let ((id, pair), group) = done;
                groups.insert((id, pair, true), group);
            };
        self.for_each(|t| {
            let key = (t.id, t.pair);
            if current.as_ref().is_none_or(|(k, _)| *k != key) {
                if let Some(done) = current.take() {
                    put_back(done, groups);
                }
                let group = groups
                    .remove(&(t.id, t.pair, true))
                    .unwrap_or_else(|| PairGroup {
                        pair: t.pair,
                        timing: true,
                        ..PairGroup::default()
                    });
                current = Some((key, group));
            }
            let Some((_, g)) = current.as_mut() else {
                return;
            };
            g.ok_trials += 1;
            g.start = Some(g.start.map_or(t.start, |s| s.min(t.start)));
            g.end = Some(g.end.map_or(t.end, |e| e.max(t.end)));
            if let Some(l) = t.latency_us {
                g.latency_mean_max_us = Some(g.latency_mean_max_us.map_or(l, |m| m.max(l)));
                if let Some(m) = t.latency_max_us {
                    g.latency_max_us = Some(g.latency_max_us.map_or(m, |x| x.max(m)));
                }
            }
        })?;
        if let Some(done) = current.take() {
            put_back(done, groups);
        }
        Ok(())
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
    /// pair, start, end and the two sample lists. `None` when the records have no such columns.
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

/// Reads `records` (a scan of `records.parquet`) once.
pub fn gather(mut records: LazyFrame, keys: KeyColumns) -> Result<Gathered, ReportError> {
    let schema = records.collect_schema()?;
    let has = |name: &str| schema.contains(name);
    let has_attempts = has(c::ATTEMPT);
    let has_tcp = [
        c::TCP_RETRANS,
        c::TCP_REORD_SEEN,
        c::TCP_DSACK_DUPS,
        c::TCP_RCV_OOOPACK,
    ]
    .iter()
    .all(|n| has(n));
    let has_cpu = has(c::NODE_CPU_BUSY_MS);
    let has_progress = has(c::PROGRESS_BYTES) && has(c::PROGRESS_OFFSET_NS);

    let u32_col = |name: &str| col(name).cast(DataType::UInt32);
    let u64_col = |name: &str| col(name).cast(DataType::UInt64);
    let f64_col = |name: &str| col(name).cast(DataType::Float64);
    // Point, rep, attempt and pair, as every output below keys its rows.
    let trial_id = || {
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
    };
    let mut narrow = trial_id().to_vec();
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
        narrow.extend(
            [
                c::TCP_RETRANS,
                c::TCP_REORD_SEEN,
                c::TCP_DSACK_DUPS,
                c::TCP_RCV_OOOPACK,
            ]
            .map(u64_col),
        );
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
    // Progress samples are read by a scan of their own: carried through the one above, every
    // record's lists were decoded and copied only to be dropped. Its one filter is on the lists,
    // so the reader decodes the other columns only for records that have samples; filtered
    // here on the side and the error too, it decoded those for every record (0.4 s of 1.5 on 10
    // million records without samples). The side and the error are checked once it is read.
    let sampled_q = has_progress.then(|| {
        let mut columns = trial_id().to_vec();
        columns.extend([
            u64_col(c::START_UNIX_NS),
            u64_col(c::END_UNIX_NS),
            col(c::PROGRESS_OFFSET_NS),
            col(c::PROGRESS_BYTES),
            timing_side().alias(TIMING),
            col(c::ERROR).is_null().alias(OK),
        ]);
        records
            .clone()
            .filter(col(c::PROGRESS_BYTES).is_not_null())
            .select(columns)
    });
    let opt = groups_q.get_current_optimizations();
    let mut plans = vec![groups_q.logical_plan, trials_q.logical_plan];
    plans.extend(sampled_q.map(|q| q.logical_plan));
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
    let sampled = if has_progress {
        let all = next("the progress samples")?;
        Some(
            all.lazy()
                .filter(col(TIMING).and(col(OK)))
                .drop(by_name([TIMING, OK], true, false))
                .collect()?,
        )
    } else {
        None
    };
    Ok(Gathered {
        has_attempts,
        groups,
        trials,
        sampled,
    })
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
        for name in [
            c::TCP_RETRANS,
            c::TCP_REORD_SEEN,
            c::TCP_DSACK_DUPS,
            c::TCP_RCV_OOOPACK,
        ] {
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
