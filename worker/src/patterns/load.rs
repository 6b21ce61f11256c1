//! `load`: an open-loop producer at an offered rate. Message `i` is due at `i / rate` after the
//! start; the producer sleeps until then (an absolute schedule, so lateness does not
//! accumulate and no core spins) and sends whatever is due. Each message starts with its
//! sequence number and due time; the consumer echoes those 16 bytes, and the producer records
//! the round trip from the *due* time (so a stalled sender shows up as latency instead of
//! vanishing: no coordinated omission) in an HDR histogram. Over UDP the consumer's count gives
//! the loss.

use clap::Args;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::client_args::{Common, Counting, Sizes};
use super::trial::{Measure, PatternImpl, Percentiles, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::{Result, WorkerError};
use crate::protocol::{Kind, LAST, LOAD_HEADER, Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn, Stopwatch, unix_ns};

pub struct Load;

/// Message size when none is given, bytes.
pub const DEFAULT_SIZE: u64 = 1024;
/// Length of a trial when neither a count nor a duration is given (it then needs a rate).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(5);
/// Trials and warm-up when none are given: one trial, no warm-up.
pub const DEFAULT_REPEATS: Repeats = Repeats {
    trials: 1,
    warmup: 0,
};

/// `orchestrate-worker load`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct LoadArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sizes: Sizes,
    #[command(flatten)]
    pub counting: Counting,
    /// Offered load: messages per second (`20000`), or bits per second (`100mbit`, `1gbit`,
    /// `500kbit`). Omitted: as fast as the sender can.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl LoadArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("load");
        self.common.write_target(&mut a);
        self.sizes.write(&mut a);
        self.counting.write(&mut a);
        self.common.write_repeats(&mut a);
        // A pattern that also runs over udp always names its transport.
        a.opt("--protocol", self.protocol.as_str());
        a.opt_some("--rate", self.rate.as_deref());
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

/// How long the producer keeps listening for UDP echoes after its last datagram.
const UDP_GRACE: Duration = Duration::from_millis(300);
/// Poll interval of the UDP consumer for the end of the trial on the control connection.
const UDP_POLL: Duration = Duration::from_millis(50);

/// Messages in a trial: an explicit count, or the duration at the rate.
pub fn total_messages(t: &TrialSpec) -> u64 {
    match (t.count, t.duration_ns, t.rate_msgs_s) {
        (Some(c), _, _) => c.max(1),
        (None, Some(d), Some(r)) => ((d as f64 / 1e9) * r).floor().max(1.0) as u64,
        _ => 1,
    }
}

fn put_header(buf: &mut [u8], seq: u64, due_ns: u64, last: bool) {
    buf[..8].copy_from_slice(&seq.to_be_bytes());
    if last {
        buf[0] = LAST;
    }
    buf[8..16].copy_from_slice(&due_ns.to_be_bytes());
}

/// (is last, due time in ns after the start)
fn get_header(h: &[u8]) -> (bool, u64) {
    let due = u64::from_be_bytes(h[8..16].try_into().expect("16-byte header"));
    (h[0] == LAST, due)
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns to 1 hour at 3 significant digits: fixed memory, allocation-free recording.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    (!h.is_empty()).then(|| Percentiles {
        p50_us: h.value_at_quantile(0.50) as f64 / 1e3,
        p90_us: h.value_at_quantile(0.90) as f64 / 1e3,
        p99_us: h.value_at_quantile(0.99) as f64 / 1e3,
        max_us: h.max() as f64 / 1e3,
    })
}

impl PatternImpl for Load {
    fn client(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let size = t.size_bytes as usize;
        let ts = c.timeout_s();
        let total = total_messages(t);
        let interval_ns = t.rate_msgs_s.map(|r| 1e9 / r).unwrap_or(0.0);
        let (tx, _) = b.get(size, 0);
        let mut hist = new_histogram();
        let sender_done = AtomicBool::new(false);
        let t0 = Instant::now();
        let wall0 = unix_ns();

        let (sent, rx_result) = std::thread::scope(|scope| -> Result<(u64, Result<()>)> {
            let rx = match c.udp.as_ref() {
                None => {
                    let mut r = c
                        .stream
                        .try_clone()
                        .map_err(|e| WorkerError::io(e, "cloning the socket", ts))?;
                    let h = &mut hist;
                    scope.spawn(move || receive_tcp_echoes(&mut r, t0, h, total, ts))
                }
                Some(u) => {
                    let r = u
                        .try_clone()
                        .map_err(|e| WorkerError::io(e, "cloning the socket", ts))?;
                    let h = &mut hist;
                    let done = &sender_done;
                    scope.spawn(move || receive_udp_echoes(&r, t0, h, done, total))
                }
            };
            let mut sent = 0u64;
            let pace = Pace {
                total,
                interval_ns,
                t0,
                duration_ns: t.duration_ns,
            };
            let res = send_paced(c, tx, &pace, &mut sent, ts);
            sender_done.store(true, Ordering::Release);
            if res.is_err() {
                // Unblock the receiver: the trial is over either way.
                let _ = c.stream.shutdown(std::net::Shutdown::Both);
            }
            let rx_res = rx
                .join()
                .unwrap_or_else(|_| Err(WorkerError::Protocol("echo receiver panicked".into())));
            res?;
            Ok((sent, rx_res))
        })?;
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        if c.udp.is_none() {
            rx_result?;
        }
        // The server reports only after this, so no echo reader can swallow the report.
        c.send(Kind::End, &serde_json::json!({ "sent": sent }))?;
        Ok(Measure {
            messages: sent,
            bytes: sent * t.size_bytes,
            start_unix_ns: wall0,
            end_unix_ns: wall0 + elapsed_ns,
            elapsed_ns,
            latency: percentiles(&hist),
            until_report: false,
            gap_max_ns: None,
            ..Measure::default()
        })
    }

    fn server(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        if c.udp.is_some() {
            serve_udp(c, t, b)
        } else {
            serve_tcp(c, t, b)
        }
    }

    fn figures(&self, m: &Measure, t: &TrialSpec, s: &TrialReport, rec: &mut Record) {
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
        if let Some(r) = t.rate_msgs_s {
            rec.offered_mbit_s = Some(r * t.size_bytes as f64 * 8.0 / 1e6);
        }
        if let Some(p) = m.latency {
            rec.latency_p50_us = Some(p.p50_us);
            rec.latency_p90_us = Some(p.p90_us);
            rec.latency_p99_us = Some(p.p99_us);
            rec.latency_max_us = Some(p.max_us);
        }
        rec.lost = Some(m.messages.saturating_sub(s.messages));
    }
}

/// The producer's schedule: message `i` is due `i × interval_ns` after `t0`.
struct Pace {
    /// Messages in the trial.
    total: u64,
    interval_ns: f64,
    t0: Instant,
    /// The trial's duration, when it is bounded by time.
    duration_ns: Option<u64>,
}

/// When a sender that cannot keep up with a trial of `duration_ns` stops anyway, ns after its
/// start: a quarter of the duration after its end, at least 100 ms after. What it did not
/// send was never offered, and the achieved rate shows it; the grace keeps a merely late
/// sender from losing the last few messages of its schedule.
pub fn overtime_ns(duration_ns: u64) -> u64 {
    duration_ns + (duration_ns / 4).max(100_000_000)
}

fn send_paced(c: &Conn, tx: &mut [u8], pace: &Pace, sent: &mut u64, ts: f64) -> Result<()> {
    let Pace {
        total,
        interval_ns,
        t0,
        duration_ns,
    } = *pace;
    let mut stream = &c.stream;
    // The default 50 µs timer slack would make every paced wake-up late by that much; ask
    // for precise wake-ups on this thread instead of spinning.
    // SAFETY: prctl with integer arguments only affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    for i in 0..total {
        let due_ns = (i as f64 * interval_ns) as u64;
        let now_ns = t0.elapsed().as_nanos() as u64;
        if due_ns > now_ns {
            // Sleep to the absolute due time; a late wake-up is made up by sending back to back.
            std::thread::sleep(Duration::from_nanos(due_ns - now_ns));
        }
        let overtime = duration_ns.is_some_and(|d| now_ns >= overtime_ns(d));
        let last = i + 1 == total || overtime;
        put_header(tx, i, due_ns, last);
        match c.udp.as_ref() {
            None => stream
                .write_all(tx)
                .map_err(|e| WorkerError::io(e, "sending load", ts))?,
            Some(u) => match u.send(tx) {
                Ok(_) => {}
                // A full socket buffer drops the datagram: that is loss, not failure.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => return Err(WorkerError::io(e, "sending load", ts)),
            },
        }
        *sent += 1;
        if last {
            break;
        }
    }
    Ok(())
}

fn receive_tcp_echoes(
    s: &mut std::net::TcpStream,
    t0: Instant,
    hist: &mut Histogram<u64>,
    total: u64,
    ts: f64,
) -> Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0usize;
    let mut got = 0u64;
    loop {
        // Never read past the last echo: the trial report follows it.
        let left = ((total - got) as usize)
            .saturating_mul(LOAD_HEADER)
            .min(buf.len());
        let n = s
            .read(&mut buf[have..left])
            .map_err(|e| WorkerError::io(e, "waiting for load echoes", ts))?;
        if n == 0 {
            return Err(WorkerError::closed("while receiving load echoes"));
        }
        let now = t0.elapsed().as_nanos() as u64;
        have += n;
        let complete = have / LOAD_HEADER;
        let mut last = false;
        for k in 0..complete {
            let (l, due) = get_header(&buf[k * LOAD_HEADER..(k + 1) * LOAD_HEADER]);
            hist.saturating_record(now.saturating_sub(due).max(1));
            last |= l;
        }
        got += complete as u64;
        let end = complete * LOAD_HEADER;
        buf.copy_within(end..have, 0);
        have -= end;
        if last || got >= total {
            return Ok(());
        }
    }
}

fn receive_udp_echoes(
    u: &std::net::UdpSocket,
    t0: Instant,
    hist: &mut Histogram<u64>,
    sender_done: &AtomicBool,
    total: u64,
) -> Result<()> {
    let mut buf = [0u8; 64];
    let _ = u.set_read_timeout(Some(UDP_POLL));
    let mut got = 0u64;
    let mut done_at: Option<Instant> = None;
    while got < total {
        match u.recv(&mut buf) {
            Ok(n) if n >= LOAD_HEADER => {
                let now = t0.elapsed().as_nanos() as u64;
                let (_, due) = get_header(&buf[..LOAD_HEADER]);
                hist.saturating_record(now.saturating_sub(due).max(1));
                got += 1;
            }
            Ok(_) => {}
            Err(_) => {
                // Timeout (or ICMP-refused): stop once the sender is done and echoes dried up.
                if sender_done.load(Ordering::Acquire) {
                    let d = *done_at.get_or_insert_with(Instant::now);
                    if d.elapsed() >= UDP_GRACE {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

fn serve_tcp(c: &mut Conn, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
    let size = t.size_bytes as usize;
    let ts = c.timeout_s();
    let per_read = (64 * 1024 / size).max(1);
    let (buf, reply) = b.get(per_read * size, per_read * LOAD_HEADER);
    let sw = Stopwatch::start();
    let mut have = 0usize;
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    loop {
        let n = c
            .stream
            .read(&mut buf[have..])
            .map_err(|e| WorkerError::io(e, "receiving load", ts))?;
        if n == 0 {
            return Err(WorkerError::closed("in the middle of a load trial"));
        }
        have += n;
        bytes += n as u64;
        let complete = have / size;
        if complete == 0 {
            continue;
        }
        let mut last = false;
        for k in 0..complete {
            let h = &buf[k * size..k * size + LOAD_HEADER];
            reply[k * LOAD_HEADER..(k + 1) * LOAD_HEADER].copy_from_slice(h);
            last |= h[0] == LAST;
        }
        c.stream
            .write_all(&reply[..complete * LOAD_HEADER])
            .map_err(|e| WorkerError::io(e, "echoing load", ts))?;
        msgs += complete as u64;
        let end = complete * size;
        buf.copy_within(end..have, 0);
        have -= end;
        if last {
            let m = Measure::from_watch(&sw, msgs, bytes);
            c.recv("waiting for the end of a load trial", ts)?
                .expect(Kind::End)?;
            return Ok(m);
        }
    }
}

fn serve_udp(c: &mut Conn, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
    let ts = c.timeout_s();
    let (buf, _) = b.get(t.size_bytes as usize, 0);
    let u = c
        .udp()?
        .try_clone()
        .map_err(|e| WorkerError::io(e, "cloning", ts))?;
    u.set_read_timeout(Some(UDP_POLL))
        .map_err(|e| WorkerError::io(e, "setting timeouts", ts))?;
    let sw = Stopwatch::start();
    let mut msgs = 0u64;
    let mut bytes = 0u64;
    let mut last_rx = sw.instant();
    let mut quiet_since = Instant::now();
    loop {
        match u.recv(buf) {
            Ok(n) => {
                last_rx = Instant::now();
                quiet_since = last_rx;
                msgs += 1;
                bytes += n as u64;
                if n >= LOAD_HEADER {
                    // The echo is best effort: a lost echo only thins the latency sample.
                    let _ = u.send(&buf[..LOAD_HEADER]);
                }
            }
            Err(_) => {
                if control_end(c)? {
                    break;
                }
                if quiet_since.elapsed().as_secs_f64() > ts {
                    return Err(WorkerError::Timeout {
                        during: "waiting for load datagrams or the end of the trial".into(),
                        after_s: ts,
                    });
                }
            }
        }
    }
    let elapsed_ns = last_rx.duration_since(sw.instant()).as_nanos() as u64;
    let (start, _, _) = sw.stop();
    Ok(Measure {
        messages: msgs,
        bytes,
        start_unix_ns: start,
        end_unix_ns: start + elapsed_ns,
        elapsed_ns,
        ..Measure::default()
    })
}

/// Whether the client has sent `End` on the control connection (without blocking).
fn control_end(c: &mut Conn) -> Result<bool> {
    let ts = c.timeout_s();
    c.stream
        .set_nonblocking(true)
        .map_err(|e| WorkerError::io(e, "polling the control connection", ts))?;
    let mut one = [0u8; 1];
    let peeked = c.stream.peek(&mut one);
    c.stream
        .set_nonblocking(false)
        .map_err(|e| WorkerError::io(e, "polling the control connection", ts))?;
    match peeked {
        Ok(0) => Err(WorkerError::closed("during a UDP load trial")),
        Ok(_) => {
            c.recv("reading the end of a UDP load trial", ts)?
                .expect(Kind::End)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(WorkerError::io(e, "polling the control connection", ts)),
    }
}
