//! The command-line options every client pattern shares: where to connect, how often to
//! repeat, which sizes, how much per trial, and the start barrier. Each pattern's own options
//! are in its file; each group here writes itself back out for [`crate::invocation`].

use clap::{Args, ValueEnum};

use crate::argv::{Argv, value_name};
use crate::output::Format;
use crate::protocol;
use crate::units::parse_size;

/// Seconds a client waits at its start barrier unless told otherwise.
const DEFAULT_GO_TIMEOUT_S: f64 = 600.0;
/// Seconds of every socket operation unless told otherwise.
const DEFAULT_TIMEOUT_S: f64 = Common::DEFAULT_TIMEOUT_S;
/// Seconds to establish the connection unless told otherwise.
const DEFAULT_CONNECT_TIMEOUT_S: f64 = 5.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GoArg {
    /// Start on a line read from stdin.
    Stdin,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct Common {
    /// Server to run against.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: String,
    /// Timed trials (runs) per size.
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// Untimed messages before the trials of each size.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Start barrier: `stdin` prints {"ready":true,...} and starts on a line from stdin.
    #[arg(long, value_enum, conflicts_with = "start_at")]
    pub go: Option<GoArg>,
    /// Start barrier: start at this wall-clock time (Unix nanoseconds).
    #[arg(long, value_name = "UNIX_NS")]
    pub start_at: Option<u64>,
    /// Longest wait at the start barrier, seconds.
    #[arg(long, default_value_t = DEFAULT_GO_TIMEOUT_S, value_name = "SECS")]
    pub go_timeout: f64,
    /// Timeout of every socket operation, seconds: a silent peer fails the run after this.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_S, value_name = "SECS")]
    pub timeout: f64,
    /// Timeout for establishing the connection, seconds.
    #[arg(long, default_value_t = DEFAULT_CONNECT_TIMEOUT_S, value_name = "SECS")]
    pub connect_timeout: f64,
    /// Output: JSON lines, or NetPIPE's `Time Mbits/s Bits/Block Bytes/Block Variance` rows.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Say on stderr how the run goes: each size's warm-up (its messages and time, the pace a
    /// --trial-time budget is filled at), each trial as it starts (the server has accepted it
    /// and the first message follows at once) and as it ends. Stdout is unchanged.
    #[arg(long)]
    pub verbose: bool,
    #[arg(long, hide = true, default_value_t = protocol::VERSION)]
    pub protocol_version: u16,
}

impl Common {
    /// Seconds a socket operation may wait unless told otherwise: a silent peer fails the run
    /// after this.
    pub const DEFAULT_TIMEOUT_S: f64 = 10.0;

    /// Options for a client of `connect` that starts at once, every other option at its
    /// default.
    pub fn new(connect: impl Into<String>) -> Common {
        Common {
            connect: connect.into(),
            trials: None,
            warmup: None,
            go: None,
            start_at: None,
            go_timeout: DEFAULT_GO_TIMEOUT_S,
            timeout: DEFAULT_TIMEOUT_S,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT_S,
            format: Format::Json,
            verbose: false,
            protocol_version: protocol::VERSION,
        }
    }

    /// `--connect`, which comes first.
    pub(crate) fn write_target(&self, a: &mut Argv) {
        a.opt("--connect", &self.connect);
    }

    /// `--trials` and `--warmup`.
    pub(crate) fn write_repeats(&self, a: &mut Argv) {
        a.opt_some("--trials", self.trials);
        a.opt_some("--warmup", self.warmup);
    }

    /// The start barrier, timeouts and output, which come last.
    pub(crate) fn write_rest(&self, a: &mut Argv) {
        a.opt_some("--go", self.go.map(|g| value_name(&g)));
        a.opt_some("--start-at", self.start_at);
        a.opt_unless("--go-timeout", self.go_timeout, DEFAULT_GO_TIMEOUT_S);
        a.opt_unless("--timeout", self.timeout, DEFAULT_TIMEOUT_S);
        a.opt_unless(
            "--connect-timeout",
            self.connect_timeout,
            DEFAULT_CONNECT_TIMEOUT_S,
        );
        a.opt_unless(
            "--format",
            value_name(&self.format),
            value_name(&Format::Json),
        );
        a.flag("--verbose", self.verbose);
        a.opt_unless(
            "--protocol-version",
            self.protocol_version,
            protocol::VERSION,
        );
    }
}

#[derive(Args, Debug, Clone, PartialEq, Default)]
pub struct Sizes {
    /// One message size in bytes: 65536, 64KiB or 64K (powers of 1024); 64KB is refused as
    /// ambiguous.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, conflicts_with = "sizes")]
    pub size: Option<u64>,
    /// A comma-separated list of sizes.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Option<Vec<u64>>,
}

impl Sizes {
    /// One size.
    pub fn one(size: u64) -> Sizes {
        Sizes {
            size: Some(size),
            sizes: None,
        }
    }

    pub(crate) fn write(&self, a: &mut Argv) {
        a.opt_some("--size", self.size);
        a.opt_some("--sizes", self.sizes.as_ref().map(|v| join(v)));
    }
}

/// NetPIPE's schedule of block sizes unless told otherwise: first, last base size, and
/// perturbation, bytes.
const DEFAULT_SCHEDULE: (u64, u64, u64) = (1, 8 << 20, 3);

#[derive(Args, Debug, Clone, PartialEq)]
pub struct Schedule {
    /// NetPIPE schedule: first block size (used when neither --size nor --sizes is given).
    #[arg(long, default_value = "1", value_parser = parse_size, value_name = "BYTES")]
    pub start: u64,
    /// NetPIPE schedule: last base block size.
    #[arg(long, default_value = "8M", value_parser = parse_size, value_name = "BYTES")]
    pub end: u64,
    /// NetPIPE schedule: perturbation around each base size, bytes.
    #[arg(long, default_value_t = 3, value_name = "BYTES")]
    pub perturbation: u64,
}

impl Default for Schedule {
    fn default() -> Schedule {
        let (start, end, perturbation) = DEFAULT_SCHEDULE;
        Schedule {
            start,
            end,
            perturbation,
        }
    }
}

impl Schedule {
    pub(crate) fn write(&self, a: &mut Argv) {
        let (start, end, perturbation) = DEFAULT_SCHEDULE;
        a.opt_unless("--start", self.start, start);
        a.opt_unless("--end", self.end, end);
        a.opt_unless("--perturbation", self.perturbation, perturbation);
    }
}

#[derive(Args, Debug, Clone, PartialEq, Default)]
pub struct Counting {
    /// Messages per trial.
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub exchanges: Option<u64>,
    /// Seconds per trial.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// With --exchanges: go on past N until the trial has lasted this many seconds, so that
    /// trials of pairs started a few milliseconds apart overlap for most of their length.
    #[arg(long, value_name = "SECS", requires = "exchanges")]
    pub min_duration: Option<f64>,
}

impl Counting {
    pub(crate) fn write(&self, a: &mut Argv) {
        a.opt_some("--exchanges", self.exchanges);
        a.opt_some("--duration", self.duration.map(seconds));
        a.opt_some("--min-duration", self.min_duration.map(seconds));
    }
}

/// Seconds to the millisecond (`3.000`), as durations have always been written, unless that
/// would lose a finer value.
fn seconds(s: f64) -> String {
    let ms = format!("{s:.3}");
    if ms.parse::<f64>() == Ok(s) {
        ms
    } else {
        s.to_string()
    }
}

fn join(sizes: &[u64]) -> String {
    let words: Vec<String> = sizes.iter().map(u64::to_string).collect();
    words.join(",")
}
