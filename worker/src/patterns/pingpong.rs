//! `pingpong`: NetPIPE's ping-pong. A block goes out and comes back, `count` times per trial;
//! the one-way time is half the round trip and the throughput is one block per one-way time.
//! The session driver sizes `count` from a time budget per trial and walks NetPIPE's schedule.

use super::{Measure, PatternImpl, Repeats, echo, exchange};
use crate::error::Result;
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::Record;
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
