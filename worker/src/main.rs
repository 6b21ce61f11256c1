//! `orchestrate-worker`: the program copied to every node. This file only turns the command line
//! into options for the library's modules.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use orchestrate_worker::auth::Secret;
use orchestrate_worker::bond;
use orchestrate_worker::client::{self, ClientOptions, Count, Go, TrialPlan};
use orchestrate_worker::netpipe;
use orchestrate_worker::output::{ClientOutput, Format};
use orchestrate_worker::patterns::{Repeats, filecopy, load, pingpong, pipeline, stream, token};
use orchestrate_worker::probe;
use orchestrate_worker::protocol::{self, Params};
use orchestrate_worker::record::{Pattern, Protocol};
use orchestrate_worker::serve::{self, ServeOptions};
use orchestrate_worker::units::{parse_rate, parse_size};

const ABOUT: &str = "Traffic worker for orchestrate: measurement patterns between cluster nodes";

const LONG_ABOUT: &str = "\
Traffic worker for orchestrate: measurement patterns between cluster nodes.

Run `orchestrate-worker serve --listen ADDR:PORT` once on every node; it serves any number of
concurrent sessions from any number of peers that hold the same secret. Clients run one
pattern against a server:

  orchestrate-worker <pattern> --connect HOST:PORT [pattern options] [--go stdin | --start-at NS]

and print one JSON record per trial and side on stdout (role \"client\" and role \"server\", the
latter being what the server counted, returned over the session). `--format netpipe` prints
NetPIPE's classic columns instead (pingpong, stream).

Start barrier: with `--go stdin` the client connects, completes the handshake, prints one line
{\"ready\":true,...} and starts when a line arrives on stdin; with `--start-at UNIX_NS` it
starts at that wall-clock time. Every record carries wall-clock start/end (Unix ns) and a
monotonic elapsed time.

Servers and clients take the run's secret, 64 hex digits, from the environment variable
ORCHESTRATE_WORKER_SECRET (never from the command line, which every user can see); a session
starts only once each side has proved it holds the same secret. The controller passes it
through the agent; by hand, `export ORCHESTRATE_WORKER_SECRET=$(openssl rand -hex 32)`.

Failures (dead peer, reset, timeout, garbage, version mismatch, wrong secret) end in one record
with an `error` field and exit status 1.";

#[derive(Parser)]
#[command(name = "orchestrate-worker", version, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve sessions from any number of clients until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// NetPIPE ping-pong: latency (half round trip) and throughput over NetPIPE's block sizes.
    Pingpong(PingpongArgs),
    /// NetPIPE streaming: blocks sent back to back, timed by the receiving server.
    Stream(StreamArgs),
    /// The 1996 study's token exchange: throughput = tokens × size / elapsed, one record per run.
    Token(TokenArgs),
    /// Request/response with DEPTH requests outstanding: time per message, messages per second.
    Pipeline(PipelineArgs),
    /// Open-loop load at an offered rate: achieved throughput, loss (UDP), latency percentiles.
    Load(LoadArgs),
    /// The 1996 study's Disk/Net Balance test: file read, sent, written and fsynced remotely.
    Filecopy(FilecopyArgs),
    /// Print facts about this node as JSON (kernel, interfaces, qdiscs, bonding, netem, tun, ...).
    Probe,
    /// Be driven by the controller over one long-lived channel: JSON requests on stdin (spawn a
    /// worker command, feed it a line, kill it, read the clock), JSON events on stdout. Every
    /// child stops when stdin closes.
    Agent,
    /// Userspace channel bonding over TUN, for nodes without the kernel's bonding driver.
    #[command(long_about = bond::LONG_ABOUT)]
    Bond(bond::BondArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on, e.g. 10.111.0.2:7171; give one per experiment address (port 0
    /// picks a free port; the first stdout line says which).
    #[arg(long, value_name = "ADDR:PORT", required = true)]
    listen: Vec<String>,
    /// Concurrent sessions at most; more are refused with an error.
    #[arg(long, default_value_t = 256)]
    max_sessions: usize,
    /// Connections waiting to authenticate at most; one more closes the oldest.
    #[arg(long, default_value_t = 1024)]
    max_pending: usize,
    /// Also print each trial's server-side record as a JSON line on stdout.
    #[arg(long)]
    records: bool,
    /// Directory filecopy writes into (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    spool_dir: Option<PathBuf>,
    /// Largest file one filecopy session may write.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = protocol::MAX_FILE)]
    max_file_bytes: u64,
    /// Largest total of the files running filecopy sessions may write at once.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = protocol::MAX_FILE)]
    max_spool_bytes: u64,
    /// Seconds a new connection has to prove the secret before it is closed.
    #[arg(long, default_value_t = 0.8, value_name = "SECS")]
    auth_timeout: f64,
    /// Seconds an authenticated connection has to complete its handshake.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    handshake_timeout: f64,
    /// Most seconds a session may stay idle between trials, whatever the client asks.
    #[arg(long, default_value_t = 3600.0, value_name = "SECS")]
    max_idle: f64,
    #[arg(long, hide = true, default_value_t = protocol::VERSION)]
    protocol_version: u16,
}

#[derive(Clone, Copy, ValueEnum)]
enum GoArg {
    /// Start on a line read from stdin.
    Stdin,
}

#[derive(Args)]
struct Common {
    /// Server to run against.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// Timed trials (runs) per size.
    #[arg(long, value_name = "N")]
    trials: Option<u32>,
    /// Untimed messages before the trials of each size.
    #[arg(long, value_name = "N")]
    warmup: Option<u64>,
    /// Start barrier: `stdin` prints {"ready":true,...} and starts on a line from stdin.
    #[arg(long, value_enum, conflicts_with = "start_at")]
    go: Option<GoArg>,
    /// Start barrier: start at this wall-clock time (Unix nanoseconds).
    #[arg(long, value_name = "UNIX_NS")]
    start_at: Option<u64>,
    /// Longest wait at the start barrier, seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    go_timeout: f64,
    /// Timeout of every socket operation, seconds: a silent peer fails the run after this.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    timeout: f64,
    /// Timeout for establishing the connection, seconds.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    connect_timeout: f64,
    /// Output: JSON lines, or NetPIPE's `Time Mbits/s Bits/Block Bytes/Block Variance` rows.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    #[arg(long, hide = true, default_value_t = protocol::VERSION)]
    protocol_version: u16,
}

#[derive(Args)]
struct Sizes {
    /// One message size in bytes (suffixes K, KiB, M, MiB, G accepted: 64K = 65536).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, conflicts_with = "sizes")]
    size: Option<u64>,
    /// A comma-separated list of sizes.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    sizes: Option<Vec<u64>>,
}

#[derive(Args)]
struct Schedule {
    /// NetPIPE schedule: first block size (used when neither --size nor --sizes is given).
    #[arg(long, default_value = "1", value_parser = parse_size, value_name = "BYTES")]
    start: u64,
    /// NetPIPE schedule: last base block size.
    #[arg(long, default_value = "8M", value_parser = parse_size, value_name = "BYTES")]
    end: u64,
    /// NetPIPE schedule: perturbation around each base size, bytes.
    #[arg(long, default_value_t = 3, value_name = "BYTES")]
    perturbation: u64,
}

#[derive(Args)]
struct Counting {
    /// Messages per trial.
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    exchanges: Option<u64>,
    /// Seconds per trial.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
}

#[derive(Args)]
struct PingpongArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    schedule: Schedule,
    #[command(flatten)]
    counting: Counting,
    /// Without --exchanges/--duration: size each trial's repetitions to take about this long.
    #[arg(long, default_value_t = pingpong::DEFAULT_TRIAL_TIME_S, value_name = "SECS")]
    trial_time: f64,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

#[derive(Args)]
struct StreamArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    schedule: Schedule,
    #[command(flatten)]
    counting: Counting,
    /// Without --exchanges/--duration: size each trial's blocks to take about this long.
    #[arg(long, default_value_t = stream::DEFAULT_TRIAL_TIME_S, value_name = "SECS")]
    trial_time: f64,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

#[derive(Args)]
struct TokenArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    counting: Counting,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

#[derive(Args)]
struct PipelineArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    counting: Counting,
    /// Requests outstanding at once (depth × size ≤ 256 KiB).
    #[arg(long, default_value_t = 1, value_name = "N")]
    depth: u32,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

#[derive(Args)]
struct LoadArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    counting: Counting,
    /// Offered load: messages per second (`20000`), or bits per second (`100mbit`, `1gbit`,
    /// `500kbit`). Omitted: as fast as the sender can.
    #[arg(long, value_name = "RATE")]
    rate: Option<String>,
    /// Transport of the data: over udp the session itself is still TCP; mptcp runs the whole
    /// session over Multipath TCP.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

#[derive(Args)]
struct FilecopyArgs {
    #[command(flatten)]
    common: Common,
    /// File to send (its size is used); without it a file of --size is made in --dir.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Size of the file to make when --file is not given.
    #[arg(long, default_value = "2M", value_parser = parse_size, value_name = "BYTES")]
    size: u64,
    /// Where to make the source file.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Evict the source file from the page cache before every trial, so it is read from disk.
    #[arg(long)]
    drop_cache: bool,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    protocol: Protocol,
}

fn secs(s: f64, what: &str) -> Result<Duration, String> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(format!("{what} must be a positive number of seconds"))
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
    Ok(match (c.exchanges, c.duration) {
        (Some(0), _) => return Err("--exchanges must be at least 1".into()),
        (Some(n), _) => Count::Fixed(n),
        (None, Some(d)) => Count::Duration(secs(d, "--duration")?),
        (None, None) => default,
    })
}

/// A client command line turned into what the library runs.
struct ClientCommand {
    opts: ClientOptions,
    format: Format,
    /// A source file this process made and must remove.
    temp_file: Option<PathBuf>,
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

fn client_command(cmd: Cmd) -> Result<ClientCommand, String> {
    match cmd {
        Cmd::Pingpong(a) => pingpong_command(&a),
        Cmd::Stream(a) => stream_command(&a),
        Cmd::Token(a) => token_command(&a),
        Cmd::Pipeline(a) => pipeline_command(&a),
        Cmd::Load(a) => load_command(&a),
        Cmd::Filecopy(a) => filecopy_command(&a),
        Cmd::Serve(_) | Cmd::Probe | Cmd::Agent | Cmd::Bond(_) => {
            unreachable!("not a client command")
        }
    }
}

fn pingpong_command(a: &PingpongArgs) -> Result<ClientCommand, String> {
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

fn stream_command(a: &StreamArgs) -> Result<ClientCommand, String> {
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

fn token_command(a: &TokenArgs) -> Result<ClientCommand, String> {
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

fn pipeline_command(a: &PipelineArgs) -> Result<ClientCommand, String> {
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

fn load_command(a: &LoadArgs) -> Result<ClientCommand, String> {
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

fn filecopy_command(a: &FilecopyArgs) -> Result<ClientCommand, String> {
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

fn serve_options(a: ServeArgs) -> Result<ServeOptions, String> {
    Ok(ServeOptions {
        listen: a.listen,
        secret: Secret::from_env().map_err(|e| e.to_string())?,
        max_sessions: a.max_sessions.max(1),
        max_pending: a.max_pending.max(1),
        records: a.records,
        spool_dir: a.spool_dir,
        max_file_bytes: a.max_file_bytes,
        max_spool_bytes: a.max_spool_bytes,
        auth_timeout: secs(a.auth_timeout, "--auth-timeout")?,
        handshake_timeout: secs(a.handshake_timeout, "--handshake-timeout")?,
        max_idle: secs(a.max_idle, "--max-idle")?,
        version: a.protocol_version,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve(a) => match serve_options(a) {
            Ok(opts) => ExitCode::from(serve::serve(opts) as u8),
            Err(e) => {
                eprintln!("orchestrate-worker serve: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Agent => ExitCode::from(orchestrate_worker::agent::run() as u8),
        Cmd::Probe => {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "{}", probe::probe());
            ExitCode::SUCCESS
        }
        Cmd::Bond(a) => ExitCode::from(bond::main(a) as u8),
        cmd => {
            let command = match client_command(cmd) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("orchestrate-worker: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut out = ClientOutput::new(std::io::stdout().lock(), command.format);
            let code = client::run(&command.opts, &mut out);
            if let Some(p) = &command.temp_file {
                let _ = std::fs::remove_file(p);
            }
            ExitCode::from(code as u8)
        }
    }
}
