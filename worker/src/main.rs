//! `orchestrate-worker`: the program copied to every node. This file only turns the command line
//! into options for the library's modules.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use orchestrate_worker::bond;
use orchestrate_worker::client::{self, ClientOptions, Count, Go, TrialPlan};
use orchestrate_worker::netpipe;
use orchestrate_worker::output::{Format, RecordWriter};
use orchestrate_worker::probe;
use orchestrate_worker::protocol::{self, Params};
use orchestrate_worker::record::{Pattern, Protocol};
use orchestrate_worker::serve::{self, ServeOptions};
use orchestrate_worker::units::{parse_rate, parse_size};

const ABOUT: &str = "Traffic worker for orchestrate: measurement patterns between cluster nodes";

const LONG_ABOUT: &str = "\
Traffic worker for orchestrate: measurement patterns between cluster nodes.

Run `orchestrate-worker serve --listen ADDR:PORT` once on every node; it serves any number of
concurrent sessions from any number of peers. Clients run one pattern against a server:

  orchestrate-worker <pattern> --connect HOST:PORT [pattern options] [--go stdin | --start-at NS]

and print one JSON record per trial and side on stdout (role \"client\" and role \"server\", the
latter being what the server counted, returned over the session). `--format netpipe` prints
NetPIPE's classic columns instead (pingpong, stream).

Start barrier: with `--go stdin` the client connects, completes the handshake, prints one line
{\"ready\":true,...} and starts when a line arrives on stdin; with `--start-at UNIX_NS` it
starts at that wall-clock time. Every record carries wall-clock start/end (Unix ns) and a
monotonic elapsed time.

Failures (dead peer, reset, timeout, garbage, version mismatch) end in one record with an
`error` field and exit status 1.";

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
    /// Address to listen on, e.g. 0.0.0.0:7171 (port 0 picks a free port; the first stdout
    /// line says which).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: String,
    /// Concurrent sessions at most; more are refused with an error.
    #[arg(long, default_value_t = 256)]
    max_sessions: usize,
    /// Also print each trial's server-side record as a JSON line on stdout.
    #[arg(long)]
    records: bool,
    /// Directory filecopy writes into (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    spool_dir: Option<PathBuf>,
    /// Seconds a new connection has to complete its handshake.
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
    #[arg(long, default_value_t = 0.25, value_name = "SECS")]
    trial_time: f64,
    /// Transport of the data (the session itself is always TCP).
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
    #[arg(long, default_value_t = 0.25, value_name = "SECS")]
    trial_time: f64,
}

#[derive(Args)]
struct TokenArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizes: Sizes,
    #[command(flatten)]
    counting: Counting,
    /// Transport of the data (the session itself is always TCP).
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
    /// Transport of the data (the session itself is always TCP).
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

struct Built {
    opts: ClientOptions,
    format: Format,
    /// A source file this process made and must remove.
    temp_file: Option<PathBuf>,
}

#[allow(clippy::too_many_arguments)]
fn build(
    pattern: Pattern,
    protocol: Protocol,
    common: &Common,
    sizes: Vec<u64>,
    count: Count,
    depth: u32,
    default_trials: u32,
    default_warmup: u64,
) -> Result<Built, String> {
    if sizes.is_empty() {
        return Err("no sizes to run".into());
    }
    let format = common.format;
    if format == Format::Netpipe && !matches!(pattern, Pattern::Pingpong | Pattern::Stream) {
        return Err("--format netpipe is for pingpong and stream".into());
    }
    let go = match (common.go, common.start_at) {
        (Some(GoArg::Stdin), _) => Go::Stdin,
        (None, Some(t)) => Go::At(t),
        (None, None) => Go::Now,
    };
    let timeout = secs(common.timeout, "--timeout")?;
    let go_timeout = secs(common.go_timeout, "--go-timeout")?;
    let params = Params {
        pattern,
        protocol,
        depth,
        max_size_bytes: sizes.iter().copied().max().unwrap_or(0),
        timeout_ms: timeout.as_millis() as u64,
        // The server must outwait our start barrier.
        idle_timeout_ms: (go_timeout + timeout).as_millis() as u64,
        udp_port: Some(0),
    };
    // Refuse what the server would refuse before connecting (the UDP port is a stand-in).
    protocol::validate(&params)?;
    Ok(Built {
        opts: ClientOptions {
            connect: common.connect.clone(),
            params: Params {
                udp_port: None,
                ..params
            },
            plan: TrialPlan {
                sizes,
                trials: common.trials.unwrap_or(default_trials).max(1),
                warmup: common.warmup.unwrap_or(default_warmup),
                count,
                rate_msgs_s: None,
                source_file: None,
                drop_cache: false,
            },
            go,
            go_timeout,
            connect_timeout: secs(common.connect_timeout, "--connect-timeout")?,
            version: common.protocol_version,
        },
        format,
        temp_file: None,
    })
}

fn netpipe_sizes(s: &Schedule) -> Vec<u64> {
    netpipe::schedule(s.start, s.end, s.perturbation)
}

fn client_command(cmd: Cmd) -> Result<Built, String> {
    match cmd {
        Cmd::Pingpong(a) => {
            let udp = a.protocol == Protocol::Udp;
            let sizes = sizes_or(&a.sizes, || {
                // A datagram holds at most 65507 bytes: the UDP schedule stops there.
                let mut v = netpipe_sizes(&a.schedule);
                if udp {
                    v.retain(|&s| s <= protocol::MAX_UDP_SIZE);
                }
                v
            });
            let count = counting(
                &a.counting,
                Count::Budget(secs(a.trial_time, "--trial-time")?),
            )?;
            // NetPIPE's released builds: 7 trials of 0.25 s per size, the fastest reported.
            build(
                Pattern::Pingpong,
                a.protocol,
                &a.common,
                sizes,
                count,
                1,
                7,
                20,
            )
        }
        Cmd::Stream(a) => {
            let sizes = sizes_or(&a.sizes, || netpipe_sizes(&a.schedule));
            let count = counting(
                &a.counting,
                Count::Budget(secs(a.trial_time, "--trial-time")?),
            )?;
            build(
                Pattern::Stream,
                Protocol::Tcp,
                &a.common,
                sizes,
                count,
                1,
                7,
                20,
            )
        }
        Cmd::Token(a) => {
            let sizes = sizes_or(&a.sizes, || vec![4, 64, 512, 1024, 4096, 8192]);
            let count = counting(&a.counting, Count::Fixed(5000))?;
            build(
                Pattern::Token,
                a.protocol,
                &a.common,
                sizes,
                count,
                1,
                3,
                100,
            )
        }
        Cmd::Pipeline(a) => {
            let sizes = sizes_or(&a.sizes, || vec![64]);
            let count = counting(&a.counting, Count::Fixed(20_000))?;
            build(
                Pattern::Pipeline,
                Protocol::Tcp,
                &a.common,
                sizes,
                count,
                a.depth,
                3,
                1000,
            )
        }
        Cmd::Load(a) => {
            let sizes = sizes_or(&a.sizes, || vec![1024]);
            let count = counting(&a.counting, Count::Duration(Duration::from_secs(5)))?;
            let mut b = build(
                Pattern::Load,
                a.protocol,
                &a.common,
                sizes.clone(),
                count,
                1,
                1,
                0,
            )?;
            if let Some(r) = &a.rate {
                if sizes.len() != 1 {
                    return Err("--rate needs a single --size".into());
                }
                b.opts.plan.rate_msgs_s = Some(parse_rate(r, sizes[0])?);
            }
            if matches!(count, Count::Duration(_)) && b.opts.plan.rate_msgs_s.is_none() {
                return Err("load with --duration needs --rate (or give --exchanges)".into());
            }
            Ok(b)
        }
        Cmd::Filecopy(a) => {
            let (path, size, temp) = match &a.file {
                Some(p) => {
                    let len = std::fs::metadata(p)
                        .map_err(|e| format!("{}: {e}", p.display()))?
                        .len();
                    (p.clone(), len, None)
                }
                None => {
                    let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
                    let p = dir.join(format!("orchestrate-worker-src-{}.bin", std::process::id()));
                    make_file(&p, a.size).map_err(|e| format!("{}: {e}", p.display()))?;
                    (p.clone(), a.size, Some(p))
                }
            };
            if size > protocol::MAX_FILE {
                return Err(format!("file larger than {} bytes", protocol::MAX_FILE));
            }
            let mut b = build(
                Pattern::Filecopy,
                Protocol::Tcp,
                &a.common,
                vec![size],
                Count::Fixed(1),
                1,
                3,
                0,
            )?;
            b.opts.plan.source_file = Some(path);
            b.opts.plan.drop_cache = a.drop_cache;
            b.temp_file = temp;
            Ok(b)
        }
        Cmd::Serve(_) | Cmd::Probe | Cmd::Agent | Cmd::Bond(_) => {
            unreachable!("not a client command")
        }
    }
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve(a) => {
            let opts = ServeOptions {
                listen: a.listen,
                max_sessions: a.max_sessions.max(1),
                records: a.records,
                spool_dir: a.spool_dir,
                handshake_timeout: Duration::from_secs_f64(a.handshake_timeout.max(0.001)),
                max_idle: Duration::from_secs_f64(a.max_idle.max(0.001)),
                version: a.protocol_version,
            };
            ExitCode::from(serve::serve(opts) as u8)
        }
        Cmd::Agent => ExitCode::from(orchestrate_worker::agent::run() as u8),
        Cmd::Probe => {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "{}", probe::probe());
            ExitCode::SUCCESS
        }
        Cmd::Bond(a) => ExitCode::from(bond::main(a) as u8),
        cmd => {
            let built = match client_command(cmd) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("orchestrate-worker: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut out = RecordWriter::new(std::io::stdout().lock(), built.format);
            let code = client::run(&built.opts, &mut out);
            if let Some(p) = &built.temp_file {
                let _ = std::fs::remove_file(p);
            }
            ExitCode::from(code as u8)
        }
    }
}
