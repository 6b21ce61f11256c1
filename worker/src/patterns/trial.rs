//! One trial of a pattern: the [`PatternImpl`] trait that runs it, and what one side of it
//! measured.

use crate::error::Result;
use crate::progress::Progress;
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::Record;
use crate::session::{Buffers, Conn, Stopwatch};
use crate::tcp_counters::TcpCounters;

/// What one side measured in one trial.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    pub messages: u64,
    pub bytes: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub elapsed_ns: u64,
    pub latency: Option<Percentiles>,
    /// The trial is only over when the server's report arrives (its time is part of the
    /// measurement: stream delivery, filecopy's fsync).
    pub until_report: bool,
    /// The longest pause between two arrivals of data, ns (receivers that track it).
    pub gap_max_ns: Option<u64>,
    /// MPTCP subflows that carried the trial: counted by the session driver around the
    /// pattern, never by the pattern itself.
    pub subflows: Option<u32>,
    /// TCP's counters for the trial's connection (tcp only): read by the session driver
    /// around the pattern, like `subflows`.
    pub tcp: Option<TcpCounters>,
    /// Busy CPU time of the kernel under this side during the trial, ms (`node_cpu`): read
    /// by the session driver around the pattern, like `tcp`.
    pub node_cpu_busy_ms: Option<f64>,
    /// How the payload accumulated over the trial, on the side that times the pattern
    /// (the client of an exchange, the receiver of a stream).
    pub progress: Option<Progress>,
}

impl Measure {
    pub fn from_watch(sw: &Stopwatch, messages: u64, bytes: u64) -> Measure {
        let (start_unix_ns, end_unix_ns, elapsed_ns) = sw.stop();
        Measure {
            messages,
            bytes,
            start_unix_ns,
            end_unix_ns,
            elapsed_ns,
            ..Measure::default()
        }
    }
}

/// How often a client repeats a pattern at each size when its command line does not say:
/// each pattern's file names its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeats {
    /// Timed trials per size.
    pub trials: u32,
    /// Untimed messages before the trials of each size.
    pub warmup: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// One pattern: its client side, its serving side, and how its figures are derived.
pub trait PatternImpl: Sync {
    /// Run one trial as the client (the side that starts and ends it).
    fn client(&self, c: &mut Conn, p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure>;
    /// Serve one trial; returns what this side counted.
    fn server(&self, c: &mut Conn, p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure>;
    /// Fill throughput and latency of the client's record from its measurement.
    fn figures(&self, m: &Measure, t: &TrialSpec, server: &TrialReport, rec: &mut Record) {
        let _ = (t, server);
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
    }
}

/// Payload Mbit/s (10^6 bits per second).
pub fn mbit_s(bytes: u64, elapsed_ns: u64) -> Option<f64> {
    (elapsed_ns > 0).then(|| bytes as f64 * 8.0 * 1e3 / elapsed_ns as f64)
}
