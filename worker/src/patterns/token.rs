//! `token`: the 1996 study's Network Throughput test. The producer sends a token, the consumer
//! returns it; a fixed number of exchanges or a duration; one record per run with
//! throughput = tokens written × token size / elapsed.

use clap::Args;

use super::client_args::{Common, Counting, Sizes};
use super::exchange::{echo, exchange};
use super::trial::{Measure, PatternImpl, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::Result;
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn};

pub struct Token;

/// Token sizes run when none are given, bytes.
pub const DEFAULT_SIZES: [u64; 6] = [4, 64, 512, 1024, 4096, 8192];
/// Tokens exchanged per run when neither a count nor a duration is given.
pub const DEFAULT_EXCHANGES: u64 = 5000;
/// Trials and warm-up when none are given.
pub const DEFAULT_REPEATS: Repeats = Repeats {
    trials: 3,
    warmup: 100,
};

/// `orchestrate-worker token`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct TokenArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sizes: Sizes,
    #[command(flatten)]
    pub counting: Counting,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl TokenArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("token");
        self.common.write_target(&mut a);
        self.sizes.write(&mut a);
        self.counting.write(&mut a);
        self.common.write_repeats(&mut a);
        // A pattern that also runs over udp always names its transport.
        a.opt("--protocol", self.protocol.as_str());
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

impl PatternImpl for Token {
    fn client(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        exchange(c, t, b)
    }

    fn server(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        echo(c, t, b, t.size_bytes as usize)
    }

    fn figures(&self, m: &Measure, _t: &TrialSpec, _s: &TrialReport, rec: &mut Record) {
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
        if m.messages > 0 {
            rec.latency_us = Some(m.elapsed_ns as f64 / (2.0 * m.messages as f64) / 1e3);
        }
    }
}
