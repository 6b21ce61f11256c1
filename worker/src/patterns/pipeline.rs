//! `pipeline`: request/response with `depth` requests outstanding (pgping's `-b N`). The client
//! keeps the window full: every reply that completes lets one more request go, and all the
//! requests freed by one read leave in one write. Reports the time per message and messages
//! per second; at depth 1 this is a ping-pong.

use clap::Args;

use std::io::{Read, Write};

use super::client_args::{Common, Counting, Sizes};
use super::exchange::{deadline, echo};
use super::trial::{Measure, PatternImpl, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::{Result, WorkerError};
use crate::protocol::{LAST, Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn, Stopwatch};

pub struct Pipeline;

/// Request size when none is given, bytes.
pub const DEFAULT_SIZE: u64 = 64;
/// Requests per trial when neither a count nor a duration is given.
pub const DEFAULT_EXCHANGES: u64 = 20_000;
/// Trials and warm-up when none are given.
pub const DEFAULT_REPEATS: Repeats = Repeats {
    trials: 3,
    warmup: 1000,
};

/// `orchestrate-worker pipeline`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct PipelineArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sizes: Sizes,
    #[command(flatten)]
    pub counting: Counting,
    /// Requests outstanding at once (depth × size ≤ 256 KiB).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub depth: u32,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl PipelineArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("pipeline");
        self.common.write_target(&mut a);
        self.sizes.write(&mut a);
        self.counting.write(&mut a);
        self.common.write_repeats(&mut a);
        a.opt_unless("--protocol", self.protocol.as_str(), Protocol::Tcp.as_str());
        a.opt_unless("--depth", self.depth, 1);
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

impl PatternImpl for Pipeline {
    fn client(&self, c: &mut Conn, p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let size = t.size_bytes as usize;
        let depth = p.depth as usize;
        let ts = c.timeout_s();
        let (tx, rx) = b.get(size * depth, size * depth);
        let s = &mut c.stream;
        let total = t.count.unwrap_or(u64::MAX);
        let sw = Stopwatch::start();
        let dl = deadline(t, sw.instant());
        let mut sent = 0u64;
        let mut received = 0u64;
        let mut partial = 0usize; // bytes of a reply not yet complete
        let mut done_sending = false;

        // Fill the window.
        let k = (depth as u64).min(total);
        send_batch(s, tx, size, k, sent + k == total, ts)?;
        sent += k;
        done_sending |= sent == total;

        while received < sent {
            // Never read past the last outstanding reply: the trial report follows it.
            let want = (sent - received) as usize * size - partial;
            let n = s
                .read(&mut rx[..want])
                .map_err(|e| WorkerError::io(e, "waiting for replies", ts))?;
            if n == 0 {
                return Err(WorkerError::closed("in the middle of a pipeline"));
            }
            partial += n;
            let done = (partial / size) as u64;
            partial %= size;
            received += done;
            if done_sending || done == 0 {
                continue;
            }
            let expired = dl.is_some_and(|d| std::time::Instant::now() >= d);
            let k = if expired { 1 } else { done.min(total - sent) };
            let last = expired || sent + k == total;
            send_batch(s, tx, size, k, last, ts)?;
            sent += k;
            done_sending = last;
        }
        Ok(Measure::from_watch(&sw, received, received * t.size_bytes))
    }

    fn server(&self, c: &mut Conn, p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        echo(c, t, b, t.size_bytes as usize * p.depth as usize)
    }

    fn figures(&self, m: &Measure, _t: &TrialSpec, _s: &TrialReport, rec: &mut Record) {
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
        if m.messages > 0 {
            let per_msg_ns = m.elapsed_ns as f64 / m.messages as f64;
            rec.latency_us = Some(per_msg_ns / 1e3);
            rec.messages_per_s = Some(1e9 / per_msg_ns);
        }
    }
}

/// Send `k` requests in one write; the last of them carries the end marker if `last`.
fn send_batch(
    s: &mut std::net::TcpStream,
    tx: &mut [u8],
    size: usize,
    k: u64,
    last: bool,
    ts: f64,
) -> Result<()> {
    let len = k as usize * size;
    if last {
        tx[len - size] = LAST;
    }
    let r = s.write_all(&tx[..len]);
    if last {
        tx[len - size] = 0;
    }
    r.map_err(|e| WorkerError::io(e, "sending requests", ts))
}
