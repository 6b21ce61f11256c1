//! `pingpong`: NetPIPE's ping-pong. A block goes out and comes back, `count` times per trial;
//! the one-way time is half the round trip and the throughput is one block per one-way time.
//! The session driver sizes `count` from a time budget per trial and walks NetPIPE's schedule.

use clap::Args;

use super::client_args::{Common, Counting, Schedule, Sizes};
use super::exchange::{echo, exchange};
use super::trial::{Measure, PatternImpl, Repeats};
use crate::argv::Argv;
use crate::error::Result;
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn};

pub struct Pingpong;

/// NetPIPE's released builds: 7 trials of 0.25 s per size, the fastest reported.
pub const DEFAULT_REPEATS: Repeats = Repeats {
    trials: 7,
    warmup: 20,
};
/// Without a message count or duration, each trial's repetitions are sized (from the warm-up)
/// to take about this long, seconds.
pub const DEFAULT_TRIAL_TIME_S: f64 = 0.25;

/// `orchestrate-worker pingpong`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct PingpongArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sizes: Sizes,
    #[command(flatten)]
    pub schedule: Schedule,
    #[command(flatten)]
    pub counting: Counting,
    /// Without --exchanges/--duration: size each trial's repetitions to take about this long.
    #[arg(long, default_value_t = DEFAULT_TRIAL_TIME_S, value_name = "SECS")]
    pub trial_time: f64,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl PingpongArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("pingpong");
        self.common.write_target(&mut a);
        self.sizes.write(&mut a);
        self.schedule.write(&mut a);
        self.counting.write(&mut a);
        self.common.write_repeats(&mut a);
        a.opt_unless("--trial-time", self.trial_time, DEFAULT_TRIAL_TIME_S);
        // A pattern that also runs over udp always names its transport.
        a.opt("--protocol", self.protocol.as_str());
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

impl PatternImpl for Pingpong {
    fn client(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        exchange(c, t, b)
    }

    fn server(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        echo(c, t, b, t.size_bytes as usize)
    }

    fn figures(&self, m: &Measure, t: &TrialSpec, _s: &TrialReport, rec: &mut Record) {
        if m.messages == 0 {
            return;
        }
        let one_way_ns = m.elapsed_ns as f64 / (2.0 * m.messages as f64);
        rec.latency_us = Some(one_way_ns / 1e3);
        rec.throughput_mbit_s = Some(t.size_bytes as f64 * 8.0 * 1e3 / one_way_ns);
    }
}
