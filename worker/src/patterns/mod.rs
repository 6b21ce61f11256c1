//! The measurement patterns, one file each, behind the [`PatternImpl`] trait.
//!
//! A pattern runs one trial on each side of an established session; the session driver
//! ([`crate::client`], [`crate::serve`]) does the handshake, the start barrier and the records.
//! Timed loops use blocking sockets and reuse the session's buffers: no allocation, formatting
//! or locking happens between the two clock reads.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::error::{Result, WorkerError};
use crate::protocol::{LAST, Params, TrialReport, TrialSpec};
use crate::record::{self, Record};
use crate::session::{Buffers, Conn, Stopwatch};

pub mod filecopy;
pub mod load;
pub mod pingpong;
pub mod pipeline;
pub mod stream;
pub mod token;

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

pub fn lookup(p: record::Pattern) -> &'static dyn PatternImpl {
    match p {
        record::Pattern::Pingpong => &pingpong::Pingpong,
        record::Pattern::Stream => &stream::Stream,
        record::Pattern::Token => &token::Token,
        record::Pattern::Pipeline => &pipeline::Pipeline,
        record::Pattern::Load => &load::Load,
        record::Pattern::Filecopy => &filecopy::Filecopy,
    }
}

/// Payload Mbit/s (10^6 bits per second).
pub fn mbit_s(bytes: u64, elapsed_ns: u64) -> Option<f64> {
    (elapsed_ns > 0).then(|| bytes as f64 * 8.0 * 1e3 / elapsed_ns as f64)
}

fn size_usize(t: &TrialSpec) -> usize {
    t.size_bytes as usize
}

/// Deadline of a duration-bounded trial.
fn deadline(t: &TrialSpec, from: Instant) -> Option<Instant> {
    t.duration_ns.map(|d| from + Duration::from_nanos(d))
}

/// Whether message `i` (0-based) of a trial is its last.
#[inline]
fn is_last(i: u64, count: Option<u64>, deadline: Option<Instant>) -> bool {
    if count.is_some_and(|c| i + 1 >= c) {
        return true;
    }
    // One clock read per message only when the trial is bounded by time.
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Client side of a lock-step exchange (ping-pong, token): send a message, wait for it to come
/// back, until `count` messages or the duration. Returns the messages exchanged.
fn exchange(c: &mut Conn, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
    let size = size_usize(t);
    let ts = c.timeout_s();
    let (tx, rx) = b.get(size, size);
    let sw = Stopwatch::start();
    let dl = deadline(t, sw.instant());
    let mut i: u64 = 0;
    match c.udp.as_ref() {
        None => {
            let s = &mut c.stream;
            loop {
                let last = is_last(i, t.count, dl);
                if last {
                    tx[0] = LAST;
                }
                s.write_all(tx)
                    .map_err(|e| WorkerError::io(e, "sending a message", ts))?;
                s.read_exact(rx)
                    .map_err(|e| WorkerError::io(e, "waiting for the reply", ts))?;
                i += 1;
                if last {
                    break;
                }
            }
        }
        Some(u) => loop {
            let last = is_last(i, t.count, dl);
            if last {
                tx[0] = LAST;
            }
            u.send(tx)
                .map_err(|e| WorkerError::io(e, "sending a datagram", ts))?;
            let n = u.recv(rx).map_err(|e| {
                WorkerError::io(e, "waiting for the echo (datagram lost or peer gone)", ts)
            })?;
            if n != size {
                return Err(WorkerError::Protocol(format!(
                    "echoed datagram of {n} bytes, expected {size}"
                )));
            }
            i += 1;
            if last {
                break;
            }
        },
    }
    Ok(Measure::from_watch(&sw, i, i * t.size_bytes))
}

/// Serving side of ping-pong, token and pipeline: echo whole messages back until the one marked
/// last. Reads as much as has arrived and answers every complete message with one write, so a
/// pipelined client is answered in batches. `cap` bounds the bytes held (≥ one message).
fn echo(c: &mut Conn, t: &TrialSpec, b: &mut Buffers, cap: usize) -> Result<Measure> {
    let size = size_usize(t);
    let ts = c.timeout_s();
    if let Some(u) = c.udp.as_ref() {
        let (buf, _) = b.get(size, 0);
        let sw = Stopwatch::start();
        let mut msgs = 0u64;
        loop {
            let n = u
                .recv(buf)
                .map_err(|e| WorkerError::io(e, "waiting for a datagram", ts))?;
            u.send(&buf[..n])
                .map_err(|e| WorkerError::io(e, "echoing a datagram", ts))?;
            msgs += 1;
            if n > 0 && buf[0] == LAST {
                return Ok(Measure::from_watch(&sw, msgs, msgs * t.size_bytes));
            }
        }
    }
    let cap = cap.max(size);
    let (buf, _) = b.get(cap, 0);
    let s = &mut c.stream;
    let sw = Stopwatch::start();
    let mut have = 0usize;
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    loop {
        let n = s
            .read(&mut buf[have..])
            .map_err(|e| WorkerError::io(e, "waiting for a message", ts))?;
        if n == 0 {
            return Err(WorkerError::closed("in the middle of a trial"));
        }
        have += n;
        bytes += n as u64;
        let complete = have / size;
        if complete == 0 {
            continue;
        }
        let mut last = false;
        for k in 0..complete {
            last |= buf[k * size] == LAST;
        }
        let end = complete * size;
        s.write_all(&buf[..end])
            .map_err(|e| WorkerError::io(e, "sending a reply", ts))?;
        msgs += complete as u64;
        buf.copy_within(end..have, 0);
        have -= end;
        if last {
            return Ok(Measure::from_watch(&sw, msgs, bytes));
        }
    }
}
