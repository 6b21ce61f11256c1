//! The ranks' records of a run: one per rank and point attempt.

use polars::prelude::*;

use crate::report::error::ReportError;
use crate::results::RunDir;
use crate::results::schema::col as c;

/// What the section reads of one rank's record.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRecord {
    pub point: u32,
    pub rep: u32,
    pub attempt: u32,
    pub rank: u32,
    /// Its mean time per iteration, µs; `None` for a failed rank.
    pub latency_us: Option<f64>,
    pub iterations: u64,
    pub algorithm: Option<String>,
    pub tcp_retrans: Option<u64>,
    /// The MPI library that ran the rank; `None` for the worker's.
    pub implementation: Option<String>,
}

/// Every rank's record in the run.
pub fn read(dir: &RunDir) -> Result<Vec<RankRecord>, ReportError> {
    let mut scan = dir.scan_records()?;
    let schema = scan.collect_schema()?;
    let has = |n: &str| schema.contains(n);
    if !has(c::RANK) {
        return Ok(Vec::new());
    }
    let u = |n: &str| col(n).cast(DataType::UInt64);
    let attempt = if has(c::ATTEMPT) {
        u(c::ATTEMPT)
    } else {
        lit(0u64).alias(c::ATTEMPT)
    };
    let retrans = if has(c::TCP_RETRANS) {
        u(c::TCP_RETRANS)
    } else {
        lit(NULL).cast(DataType::UInt64).alias(c::TCP_RETRANS)
    };
    let implementation = if has(c::IMPLEMENTATION) {
        col(c::IMPLEMENTATION)
    } else {
        lit(NULL).cast(DataType::String).alias(c::IMPLEMENTATION)
    };
    let df = scan
        .filter(col(c::ROLE).eq(lit("rank")))
        .select([
            u(c::POINT),
            u(c::REP),
            attempt,
            u(c::RANK),
            // A failed rank's figures describe what it did before failing: none counts.
            when(col(c::ERROR).is_null())
                .then(col(c::LATENCY_US).cast(DataType::Float64))
                .otherwise(lit(NULL).cast(DataType::Float64))
                .alias(c::LATENCY_US),
            u("messages"),
            col(c::ALGORITHM),
            retrans,
            implementation,
        ])
        .collect()?;
    let u64_of = |n: &str| -> Result<&UInt64Chunked, ReportError> { Ok(df.column(n)?.u64()?) };
    let (point, rep, attempt, rank) = (
        u64_of(c::POINT)?,
        u64_of(c::REP)?,
        u64_of(c::ATTEMPT)?,
        u64_of(c::RANK)?,
    );
    let iterations = u64_of("messages")?;
    let retrans = u64_of(c::TCP_RETRANS)?;
    let latency = df.column(c::LATENCY_US)?.f64()?;
    let algorithm = df.column(c::ALGORITHM)?.str()?;
    let library = df.column(c::IMPLEMENTATION)?.str()?;
    let n32 = |v: Option<u64>| v.unwrap_or(0) as u32;
    Ok((0..df.height())
        .map(|i| RankRecord {
            point: n32(point.get(i)),
            rep: n32(rep.get(i)),
            attempt: n32(attempt.get(i)),
            rank: n32(rank.get(i)),
            latency_us: latency.get(i),
            iterations: iterations.get(i).unwrap_or(0),
            algorithm: algorithm.get(i).map(str::to_owned),
            tcp_retrans: retrans.get(i),
            implementation: library.get(i).map(str::to_owned),
        })
        .collect())
}
