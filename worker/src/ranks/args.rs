//! The command-line options every collective shares: which rank this is, where the others
//! are, which sizes, how many iterations, and the start barrier. Each collective's own options
//! (its algorithm, the halo's grid) are in its file.

use clap::Args;

use crate::argv::{Argv, value_name};
use crate::patterns::client_args::{GoArg, Sizes};

/// Timed iterations per size when neither a count nor a duration is given (the OSU
/// micro-benchmarks' count for large messages).
pub const DEFAULT_ITERATIONS: u64 = 100;
/// Untimed iterations before each size's timed ones unless told otherwise.
pub const DEFAULT_WARMUP: u64 = 10;
/// Seconds a rank waits at its start barrier unless told otherwise.
const DEFAULT_GO_TIMEOUT_S: f64 = 600.0;
/// Seconds a rank waits for any progress on its connections unless told otherwise.
pub const DEFAULT_TIMEOUT_S: f64 = 30.0;
/// Seconds for all ranks to connect unless told otherwise: the ranks are started one after
/// another on their nodes.
const DEFAULT_CONNECT_TIMEOUT_S: f64 = 30.0;

#[derive(Args, Debug, Clone, PartialEq)]
pub struct RankArgs {
    /// This process's rank, from 0.
    #[arg(long, value_name = "R")]
    pub rank: u32,
    /// Where this rank reaches each rank, in rank order, comma-separated; this rank's own
    /// entry is where it listens unless --listen says otherwise. The world's size is their
    /// number.
    #[arg(
        long,
        value_name = "ADDR:PORT,...",
        value_delimiter = ',',
        required = true
    )]
    pub peers: Vec<String>,
    /// Address to accept the later ranks on; give one per experiment address of the node
    /// (the others may reach it at different ones).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Vec<String>,
    #[command(flatten)]
    pub sizes: Sizes,
    /// Timed iterations per size (default 100).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub iterations: Option<u64>,
    /// Seconds of timed iterations per size: rank 0 counts how many from the pace of its
    /// warm-up and tells the others, so that all run the same number.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Untimed iterations before the timed ones of each size.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WARMUP)]
    pub warmup: u64,
    /// Start barrier: `stdin` prints {"ready":true,...} once every rank is connected and
    /// starts on a line from stdin.
    #[arg(long, value_enum)]
    pub go: Option<GoArg>,
    /// Longest wait at the start barrier, seconds.
    #[arg(long, default_value_t = DEFAULT_GO_TIMEOUT_S, value_name = "SECS")]
    pub go_timeout: f64,
    /// Seconds without progress on any connection after which the other ranks are called
    /// gone.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_S, value_name = "SECS")]
    pub timeout: f64,
    /// Seconds for every rank to connect.
    #[arg(long, default_value_t = DEFAULT_CONNECT_TIMEOUT_S, value_name = "SECS")]
    pub connect_timeout: f64,
    /// Say on stderr how the run goes: the mesh connected, each size's warm-up and count.
    #[arg(long)]
    pub verbose: bool,
}

/// How many timed iterations a size runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Iterations {
    Count(u64),
    /// As many as fit in these seconds at the warm-up's pace, at least one.
    Duration(f64),
}

impl RankArgs {
    /// Rank `rank` of the ranks reached at `peers`, every other option at its default.
    pub fn new(rank: u32, peers: Vec<String>) -> RankArgs {
        RankArgs {
            rank,
            peers,
            listen: Vec::new(),
            sizes: Sizes::default(),
            iterations: None,
            duration: None,
            warmup: DEFAULT_WARMUP,
            go: None,
            go_timeout: DEFAULT_GO_TIMEOUT_S,
            timeout: DEFAULT_TIMEOUT_S,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT_S,
            verbose: false,
        }
    }

    pub fn iterations(&self) -> Iterations {
        match (self.iterations, self.duration) {
            (Some(n), _) => Iterations::Count(n),
            (None, Some(s)) => Iterations::Duration(s),
            (None, None) => Iterations::Count(DEFAULT_ITERATIONS),
        }
    }

    /// The sizes to run, in the order given.
    pub fn size_list(&self) -> Result<Vec<u64>, String> {
        match (&self.sizes.size, &self.sizes.sizes) {
            (Some(s), _) => Ok(vec![*s]),
            (None, Some(v)) if !v.is_empty() => Ok(v.clone()),
            _ => Err("give the message size: --size BYTES or --sizes LIST".into()),
        }
    }

    /// Whether the options hold together, before any socket is opened.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.peers.len();
        if n < 2 {
            return Err(format!(
                "--peers names {n} rank; a collective needs at least 2"
            ));
        }
        if self.rank as usize >= n {
            return Err(format!(
                "--rank {} is not among the {n} ranks --peers names (0 to {})",
                self.rank,
                n - 1
            ));
        }
        if self.iterations == Some(0) {
            return Err("--iterations must be at least 1".into());
        }
        for (what, v) in [
            ("--duration", self.duration),
            ("--timeout", Some(self.timeout)),
            ("--connect-timeout", Some(self.connect_timeout)),
            ("--go-timeout", Some(self.go_timeout)),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(format!("{what} must be a positive number of seconds"));
            }
        }
        self.size_list().map(|_| ())
    }

    /// Where this rank accepts the later ranks.
    pub fn listen_addrs(&self) -> Vec<String> {
        if self.listen.is_empty() {
            vec![self.peers[self.rank as usize].clone()]
        } else {
            self.listen.clone()
        }
    }

    /// Writes these options after the collective's name.
    pub(crate) fn write(&self, a: &mut Argv) {
        a.opt("--rank", self.rank);
        a.opt("--peers", self.peers.join(","));
        for l in &self.listen {
            a.opt("--listen", l);
        }
        self.sizes.write(a);
        a.opt_some("--iterations", self.iterations);
        a.opt_some("--duration", self.duration);
        a.opt_unless("--warmup", self.warmup, DEFAULT_WARMUP);
        a.opt_some("--go", self.go.map(|g| value_name(&g)));
        a.opt_unless("--go-timeout", self.go_timeout, DEFAULT_GO_TIMEOUT_S);
        a.opt_unless("--timeout", self.timeout, DEFAULT_TIMEOUT_S);
        a.opt_unless(
            "--connect-timeout",
            self.connect_timeout,
            DEFAULT_CONNECT_TIMEOUT_S,
        );
        a.flag("--verbose", self.verbose);
    }
}
