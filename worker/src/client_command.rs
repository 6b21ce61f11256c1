//! A client pattern's command line turned into what [`crate::client`] runs: each pattern's
//! defaults applied, the options checked as the server would check them, so a bad command
//! line fails before connecting. One function per pattern, named after it.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::Secret;
use crate::client::{self, ClientOptions, Count, Go, TrialPlan};
use crate::netpipe;
use crate::output::{ClientOutput, Format};
use crate::patterns::Repeats;
use crate::patterns::client_args::{Common, Counting, GoArg, Schedule, Sizes};
use crate::patterns::filecopy::{self, FilecopyArgs};
use crate::patterns::load::{self, LoadArgs};
use crate::patterns::pingpong::{self, PingpongArgs};
use crate::patterns::pipeline::{self, PipelineArgs};
use crate::patterns::stream::{self, StreamArgs};
use crate::patterns::token::{self, TokenArgs};
use crate::protocol::{self, Params};
use crate::record::{Pattern, Protocol};
use crate::units::{parse_rate, secs};

/// A client command line turned into what the library runs.
pub struct ClientCommand {
    opts: ClientOptions,
    format: Format,
    /// A source file this process made and must remove.
    temp_file: Option<PathBuf>,
}

impl ClientCommand {
    /// Runs the client, its records on stdout; returns the process exit status.
    pub fn run(self) -> i32 {
        let mut out = ClientOutput::new(std::io::stdout().lock(), self.format);
        let code = client::run(&self.opts, &mut out);
        if let Some(p) = &self.temp_file {
            let _ = std::fs::remove_file(p);
        }
        code
    }
}

fn sizes_or(sizes: &Sizes, default: impl FnOnce() -> Vec<u64>) -> Vec<u64> {
    match (&sizes.size, &sizes.sizes) {
        (Some(s), _) => vec![*s],
        (None, Some(v)) => v.clone(),
        (None, None) => default(),
    }
}

fn counting(c: &Counting, default: Count) -> Result<Count, String> {
    Ok(match (c.exchanges, c.duration, c.min_duration) {
        (Some(0), _, _) => return Err("--exchanges must be at least 1".into()),
        (Some(n), _, None) => Count::Fixed(n),
        (Some(n), _, Some(d)) => Count::AtLeast(n, secs(d, "--min-duration")?),
        (None, Some(d), _) => Count::Duration(secs(d, "--duration")?),
        (None, None, _) => default,
    })
}

/// What one pattern's command runs, before the options every client command shares.
struct PatternRun {
    pattern: Pattern,
    protocol: Protocol,
    sizes: Vec<u64>,
    count: Count,
    /// Requests outstanding (pipeline; 1 for every other pattern).
    depth: u32,
    /// Trials and warm-up unless --trials/--warmup say otherwise.
    repeats: Repeats,
}

/// Applies the shared client options to a pattern's run, refusing what the server would.
fn build(run: PatternRun, common: &Common) -> Result<ClientCommand, String> {
    if run.sizes.is_empty() {
        return Err("no sizes to run".into());
    }
    let format = output_format(run.pattern, common.format)?;
    let go = start_barrier(common);
    let timeout = secs(common.timeout, "--timeout")?;
    let go_timeout = secs(common.go_timeout, "--go-timeout")?;
    let params = session_params(&run, timeout, go_timeout)?;
    let secret = Secret::from_env().map_err(|e| e.to_string())?;
    Ok(ClientCommand {
        opts: ClientOptions {
            connect: common.connect.clone(),
            params,
            plan: TrialPlan {
                sizes: run.sizes,
                trials: common.trials.unwrap_or(run.repeats.trials).max(1),
                warmup: common.warmup.unwrap_or(run.repeats.warmup),
                count: run.count,
                rate_msgs_s: None,
                source_file: None,
                drop_cache: false,
            },
            go,
            go_timeout,
            connect_timeout: secs(common.connect_timeout, "--connect-timeout")?,
            version: common.protocol_version,
            secret,
            verbose: common.verbose,
        },
        format,
        temp_file: None,
    })
}

fn output_format(pattern: Pattern, format: Format) -> Result<Format, String> {
    if format == Format::Netpipe && !matches!(pattern, Pattern::Pingpong | Pattern::Stream) {
        return Err("--format netpipe is for pingpong and stream".into());
    }
    Ok(format)
}

fn start_barrier(common: &Common) -> Go {
    match (common.go, common.start_at) {
        (Some(GoArg::Stdin), _) => Go::Stdin,
        (None, Some(t)) => Go::At(t),
        (None, None) => Go::Now,
    }
}

/// The session parameters the client's handshake asks for, checked here as the server would
/// check them, so a bad command line fails before connecting.
fn session_params(
    run: &PatternRun,
    timeout: Duration,
    go_timeout: Duration,
) -> Result<Params, String> {
    let params = Params {
        pattern: run.pattern,
        protocol: run.protocol,
        depth: run.depth,
        max_size_bytes: run.sizes.iter().copied().max().unwrap_or(0),
        timeout_ms: timeout.as_millis() as u64,
        // The server must outwait our start barrier.
        idle_timeout_ms: (go_timeout + timeout).as_millis() as u64,
        udp_port: Some(0),
    };
    // The UDP port is a stand-in: the real one is bound once connected.
    protocol::validate(&params)?;
    Ok(Params {
        udp_port: None,
        ..params
    })
}

fn netpipe_sizes(s: &Schedule) -> Vec<u64> {
    netpipe::schedule(s.start, s.end, s.perturbation)
}

pub fn pingpong(a: &PingpongArgs) -> Result<ClientCommand, String> {
    let sizes = sizes_or(&a.sizes, || {
        // A datagram holds at most 65507 bytes: the UDP schedule stops there.
        let mut v = netpipe_sizes(&a.schedule);
        if a.protocol == Protocol::Udp {
            v.retain(|&s| s <= protocol::MAX_UDP_SIZE);
        }
        v
    });
    let budget = secs(a.trial_time, "--trial-time")?;
    let run = PatternRun {
        pattern: Pattern::Pingpong,
        protocol: a.protocol,
        sizes,
        count: counting(&a.counting, Count::Budget(budget))?,
        depth: 1,
        repeats: pingpong::DEFAULT_REPEATS,
    };
    build(run, &a.common)
}

pub fn stream(a: &StreamArgs) -> Result<ClientCommand, String> {
    let budget = secs(a.trial_time, "--trial-time")?;
    let run = PatternRun {
        pattern: Pattern::Stream,
        protocol: a.protocol,
        sizes: sizes_or(&a.sizes, || netpipe_sizes(&a.schedule)),
        count: counting(&a.counting, Count::Budget(budget))?,
        depth: 1,
        repeats: stream::DEFAULT_REPEATS,
    };
    build(run, &a.common)
}

pub fn token(a: &TokenArgs) -> Result<ClientCommand, String> {
    let run = PatternRun {
        pattern: Pattern::Token,
        protocol: a.protocol,
        sizes: sizes_or(&a.sizes, || token::DEFAULT_SIZES.to_vec()),
        count: counting(&a.counting, Count::Fixed(token::DEFAULT_EXCHANGES))?,
        depth: 1,
        repeats: token::DEFAULT_REPEATS,
    };
    build(run, &a.common)
}

pub fn pipeline(a: &PipelineArgs) -> Result<ClientCommand, String> {
    let run = PatternRun {
        pattern: Pattern::Pipeline,
        protocol: a.protocol,
        sizes: sizes_or(&a.sizes, || vec![pipeline::DEFAULT_SIZE]),
        count: counting(&a.counting, Count::Fixed(pipeline::DEFAULT_EXCHANGES))?,
        depth: a.depth,
        repeats: pipeline::DEFAULT_REPEATS,
    };
    build(run, &a.common)
}

pub fn load(a: &LoadArgs) -> Result<ClientCommand, String> {
    let sizes = sizes_or(&a.sizes, || vec![load::DEFAULT_SIZE]);
    let count = counting(&a.counting, Count::Duration(load::DEFAULT_DURATION))?;
    let run = PatternRun {
        pattern: Pattern::Load,
        protocol: a.protocol,
        sizes: sizes.clone(),
        count,
        depth: 1,
        repeats: load::DEFAULT_REPEATS,
    };
    let mut cmd = build(run, &a.common)?;
    cmd.opts.plan.rate_msgs_s = offered_rate(a.rate.as_deref(), &sizes)?;
    if matches!(count, Count::Duration(_)) && cmd.opts.plan.rate_msgs_s.is_none() {
        return Err("load with --duration needs --rate (or give --exchanges)".into());
    }
    Ok(cmd)
}

/// `--rate` in messages per second; a rate in bits per second needs the (single) size.
fn offered_rate(rate: Option<&str>, sizes: &[u64]) -> Result<Option<f64>, String> {
    let Some(r) = rate else {
        return Ok(None);
    };
    if sizes.len() != 1 {
        return Err("--rate needs a single --size".into());
    }
    parse_rate(r, sizes[0]).map(Some)
}

pub fn filecopy(a: &FilecopyArgs) -> Result<ClientCommand, String> {
    let source = source_file(a)?;
    if source.size > protocol::MAX_FILE {
        return Err(format!("file larger than {} bytes", protocol::MAX_FILE));
    }
    let run = PatternRun {
        pattern: Pattern::Filecopy,
        protocol: a.protocol,
        sizes: vec![source.size],
        // A trial is one copy of the file.
        count: Count::Fixed(1),
        depth: 1,
        repeats: filecopy::DEFAULT_REPEATS,
    };
    let mut cmd = build(run, &a.common)?;
    cmd.opts.plan.source_file = Some(source.path);
    cmd.opts.plan.drop_cache = a.drop_cache;
    cmd.temp_file = source.temp;
    Ok(cmd)
}

/// The file filecopy sends.
struct SourceFile {
    path: PathBuf,
    size: u64,
    /// Set when this process made the file (and must remove it).
    temp: Option<PathBuf>,
}

/// The given --file, or a file of --size made in --dir.
fn source_file(a: &FilecopyArgs) -> Result<SourceFile, String> {
    if let Some(p) = &a.file {
        let len = std::fs::metadata(p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .len();
        return Ok(SourceFile {
            path: p.clone(),
            size: len,
            temp: None,
        });
    }
    let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let p = dir.join(format!("orchestrate-worker-src-{}.bin", std::process::id()));
    make_file(&p, a.size).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(SourceFile {
        path: p.clone(),
        size: a.size,
        temp: Some(p),
    })
}

/// Write a file of `size` bytes (non-zero content, so no filesystem stores it sparse).
fn make_file(path: &std::path::Path, size: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    let chunk: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8 + 1).collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}
