//! `stream`: NetPIPE's streaming mode. The client sends blocks back to back; the server reads
//! them and times them from the start of the trial to the last byte. The client's own record
//! runs from its first write until the server's report arrives, so it includes delivery.

use clap::Args;

use std::io::{Read, Write};

use super::client_args::{Common, Counting, Schedule, Sizes};
use super::exchange::End;
use super::trial::{Measure, PatternImpl, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::{Result, WorkerError};
use crate::progress::Meter;
use crate::protocol::{LAST, Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn, Stopwatch};

pub struct Stream;

/// As ping-pong's: both are NetPIPE's modes, run alike.
pub const DEFAULT_REPEATS: Repeats = super::pingpong::DEFAULT_REPEATS;
/// Without a message count or duration, each trial's blocks are sized (from the warm-up) to
/// take about this long, seconds.
pub const DEFAULT_TRIAL_TIME_S: f64 = super::pingpong::DEFAULT_TRIAL_TIME_S;

/// `orchestrate-worker stream`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct StreamArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sizes: Sizes,
    #[command(flatten)]
    pub schedule: Schedule,
    #[command(flatten)]
    pub counting: Counting,
    /// Without --exchanges/--duration: size each trial's blocks to take about this long.
    #[arg(long, default_value_t = DEFAULT_TRIAL_TIME_S, value_name = "SECS")]
    pub trial_time: f64,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl StreamArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("stream");
        self.common.write_target(&mut a);
        self.sizes.write(&mut a);
        self.schedule.write(&mut a);
        self.counting.write(&mut a);
        self.common.write_repeats(&mut a);
        a.opt_unless("--trial-time", self.trial_time, DEFAULT_TRIAL_TIME_S);
        a.opt_unless("--protocol", self.protocol.as_str(), Protocol::Tcp.as_str());
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

/// The receiver reads up to this much per call, whatever the block size: small blocks are then
/// not timed by the receiver's system-call rate, and a large block's bytes already queued are
/// taken in one call instead of one per block. With page-aligned buffers and reads of one
/// block, a 1 MiB stream on loopback ran at 0.94 of iperf3's rate (which reads one block, `-l`,
/// at a time); with reads of 4 MiB at 1.20 (2026-12-07, medians of six alternating runs).
const READ: usize = 4 * 1024 * 1024;

impl PatternImpl for Stream {
    fn client(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let size = t.size_bytes as usize;
        let ts = c.timeout_s();
        let (tx, _) = b.get(size, 0);
        let s = &mut c.stream;
        let sw = Stopwatch::start();
        let end = End::of(t, sw.instant());
        let mut i = 0u64;
        loop {
            let last = end.is_last(i);
            if last {
                tx[0] = LAST;
            }
            s.write_all(tx)
                .map_err(|e| WorkerError::io(e, "streaming a block", ts))?;
            i += 1;
            if last {
                break;
            }
        }
        let mut m = Measure::from_watch(&sw, i, i * t.size_bytes);
        m.until_report = true;
        Ok(m)
    }

    fn server(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let size = t.size_bytes;
        let ts = c.timeout_s();
        let (buf, _) = b.get(READ, 0);
        let sw = c.trial_clock();
        let s = &mut c.stream;
        let mut pos = 0u64; // offset within the current block
        let mut msgs = 0u64;
        let mut bytes = 0u64;
        let mut last = false;
        // From the first arrival on: waiting for the sender to start is not a stall.
        let mut arrived: Option<std::time::Instant> = None;
        let mut gap_max = std::time::Duration::ZERO;
        let mut meter = Meter::start(sw.instant());
        loop {
            let n = s
                .read(buf)
                .map_err(|e| WorkerError::io(e, "receiving the stream", ts))?;
            if n == 0 {
                return Err(WorkerError::closed("in the middle of a stream"));
            }
            let now = std::time::Instant::now();
            if let Some(prev) = arrived {
                gap_max = gap_max.max(now - prev);
            }
            arrived = Some(now);
            bytes += n as u64;
            meter.delivered(bytes);
            let mut off = 0usize;
            while off < n {
                if pos == 0 && buf[off] == LAST {
                    last = true;
                }
                let take = ((n - off) as u64).min(size - pos);
                off += take as usize;
                pos += take;
                if pos == size {
                    pos = 0;
                    msgs += 1;
                }
            }
            if last && pos == 0 {
                let mut m = Measure::from_watch(&sw, msgs, bytes);
                m.gap_max_ns = Some(gap_max.as_nanos() as u64);
                m.progress = Some(meter.finish(m.elapsed_ns, bytes));
                return Ok(m);
            }
        }
    }

    fn figures(&self, m: &Measure, _t: &TrialSpec, s: &TrialReport, rec: &mut Record) {
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
        rec.gap_max_us = s.gap_max_ns.map(|ns| ns as f64 / 1e3);
        if m.messages > 0 {
            rec.latency_us = Some(m.elapsed_ns as f64 / m.messages as f64 / 1e3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Pattern;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    const BLOCK: u64 = 4096;
    const BLOCKS: u64 = 16;

    fn spec() -> TrialSpec {
        TrialSpec {
            count: Some(BLOCKS),
            ..TrialSpec::of_size(BLOCK)
        }
    }

    fn params() -> Params {
        Params::tcp(Pattern::Stream, BLOCK, Duration::from_secs(5))
    }

    /// A server scheduled out between acknowledging the trial and its first read finds the
    /// client's bytes already there: its clock must have started before they could be sent.
    #[test]
    fn the_server_times_a_stream_from_the_acknowledgement_not_from_its_first_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let mut client = TcpStream::connect(addr).unwrap();
            let mut block = vec![0u8; BLOCK as usize];
            for i in 0..BLOCKS {
                if i + 1 == BLOCKS {
                    block[0] = LAST;
                }
                client.write_all(&block).unwrap();
            }
            client
        });
        let (accepted, _) = listener.accept().unwrap();
        let mut c = Conn::new(accepted, Duration::from_secs(5), 1).unwrap();
        c.trial_opened = Some(Stopwatch::start());
        // Every block is sent (64 KiB fits the socket buffers) before the first read.
        let _client = sender.join().unwrap();
        let late = Duration::from_millis(50);
        std::thread::sleep(late);
        let m = Stream
            .server(&mut c, &params(), &spec(), &mut Buffers::default())
            .unwrap();
        assert_eq!(m.bytes, BLOCK * BLOCKS);
        assert!(
            m.elapsed_ns >= late.as_nanos() as u64,
            "timed from the first read: {} ns for bytes that waited {} ns",
            m.elapsed_ns,
            late.as_nanos()
        );
    }
}
