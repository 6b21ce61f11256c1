//! The loops several patterns share: lock-step exchange and echo, and when a trial ends.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::trial::Measure;
use crate::error::{Result, WorkerError};
use crate::progress::Meter;
use crate::protocol::{LAST, TrialSpec};
use crate::session::{Buffers, Conn, Stopwatch};

fn size_usize(t: &TrialSpec) -> usize {
    t.size_bytes as usize
}

/// Deadline of a duration-bounded trial (pipeline's own loop).
pub(super) fn deadline(t: &TrialSpec, from: Instant) -> Option<Instant> {
    t.duration_ns.map(|d| from + Duration::from_nanos(d))
}

/// When a trial started at `from` ends: after a count (and not before a minimum time), or
/// at a deadline.
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    count: Option<u64>,
    not_before: Option<Instant>,
    deadline: Option<Instant>,
}

impl End {
    pub(super) fn of(t: &TrialSpec, from: Instant) -> End {
        End {
            count: t.count,
            not_before: t.min_duration_ns.map(|d| from + Duration::from_nanos(d)),
            deadline: deadline(t, from),
        }
    }

    /// Whether message `i` (0-based) of the trial is its last. One clock read per message
    /// only when the trial is bounded by time.
    #[inline]
    pub(super) fn is_last(&self, i: u64) -> bool {
        if self.count.is_some_and(|c| i + 1 >= c)
            && self.not_before.is_none_or(|t| Instant::now() >= t)
        {
            return true;
        }
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Client side of a lock-step exchange (ping-pong, token): send a message, wait for it to come
/// back, until `count` messages or the duration. Returns the messages exchanged.
pub(super) fn exchange(c: &mut Conn, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
    let size = size_usize(t);
    let ts = c.timeout_s();
    let (tx, rx) = b.get(size, size);
    let sw = Stopwatch::start();
    let end = End::of(t, sw.instant());
    let mut meter = Meter::start(sw.instant());
    let mut i: u64 = 0;
    match c.udp.as_ref() {
        None => {
            let s = &mut c.stream;
            loop {
                let last = end.is_last(i);
                if last {
                    tx[0] = LAST;
                }
                s.write_all(tx)
                    .map_err(|e| WorkerError::io(e, "sending a message", ts))?;
                s.read_exact(rx)
                    .map_err(|e| WorkerError::io(e, "waiting for the reply", ts))?;
                i += 1;
                meter.delivered(i * t.size_bytes);
                if last {
                    break;
                }
            }
        }
        Some(u) => loop {
            let last = end.is_last(i);
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
            meter.delivered(i * t.size_bytes);
            if last {
                break;
            }
        },
    }
    let mut m = Measure::from_watch(&sw, i, i * t.size_bytes);
    m.progress = Some(meter.finish(m.elapsed_ns, m.bytes));
    Ok(m)
}

/// Serving side of ping-pong, token and pipeline: echo whole messages back until the one marked
/// last. Reads as much as has arrived and answers every complete message with one write, so a
/// pipelined client is answered in batches. `cap` bounds the bytes held (≥ one message).
pub(super) fn echo(c: &mut Conn, t: &TrialSpec, b: &mut Buffers, cap: usize) -> Result<Measure> {
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
