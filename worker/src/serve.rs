//! `serve`: the long-lived server on every node. Serves any number of concurrent sessions (one
//! thread each, up to a limit) from clients that prove the run's secret, runs whatever pattern
//! each session's handshake asks for, and reports each trial back to its client. A bad session
//! — garbage, a mismatched version, a peer that dies — ends that session with a logged error;
//! the server goes on.
//!
//! Who gets in, and what anyone can cost the node:
//!
//! - only connections that prove the secret within the authentication timeout (0.8 s by
//!   default) reach a session; until then [`crate::gate`] holds them in one thread, at most
//!   `max_pending` (1024) at once, each with at most 267 bytes of what it sent;
//! - at most `max_sessions` (256) authenticated sessions run at once; more are told the
//!   server is busy;
//! - a session's control frames are at most [`protocol::MAX_FRAME`] (64 KiB) and its data
//!   buffers at most the larger of its announced message size, itself at most
//!   [`protocol::MAX_SIZE`] (64 MiB), and 4 MiB (`stream`'s read chunk), plus a few KiB of
//!   echo headers: at most about 65 MiB a session, and `max_sessions` times that in all;
//! - `filecopy` writes one file per session at a time, at most `max_file_bytes` (by default
//!   the protocol's 64 GiB), and all sessions' files together at most `max_spool_bytes` (64
//!   GiB by default) and never more than the spool's filesystem has free
//!   ([`crate::spool`]); each file is removed when its trial ends.
//!
//! The server binds only the addresses it is given (the node's experiment addresses, one
//! `--listen` each), never the wildcard unless told to. It listens with Multipath TCP when the
//! kernel has it, which serves `mptcp` sessions and, unchanged, plain TCP ones
//! ([`crate::mptcp`]); on a kernel without it, it listens with plain TCP, says so, and
//! refuses `mptcp` sessions with the reason.

use std::io::Write;
use std::net::{TcpListener, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::auth::Secret;
use crate::client::software;
use crate::error::{Result, WorkerError};
use crate::gate::{Admission, Admitted, Gate, GateOptions, Refused};
use crate::mptcp::{self, TrialSubflows};
use crate::node_cpu::TrialCpu;
use crate::output::print_server_record;
use crate::patterns::{self, Measure};
use crate::protocol::{self, ErrorMsg, Hello, Kind, Params, TrialReport, TrialSpec, Welcome};
use crate::ready::ServerReady;
use crate::record::{Pattern, Protocol};
use crate::session::{Buffers, Conn, Stopwatch};
use crate::shutdown;
use crate::spool::{SpoolBudget, SpoolLease};
use crate::tcp_counters::TrialTcp;

/// One line on stderr; a closed or full stderr must never take a session (or the server) down.
macro_rules! log {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), "orchestrate-worker serve: {}", format_args!($($arg)*));
    }};
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Addresses to listen on, `ADDR:PORT` each.
    pub listen: Vec<String>,
    pub secret: Secret,
    pub max_sessions: usize,
    /// Connections waiting to authenticate at most.
    pub max_pending: usize,
    /// Print each trial's server-side record on stdout.
    pub records: bool,
    pub spool_dir: Option<PathBuf>,
    /// Largest file one filecopy session may write.
    pub max_file_bytes: u64,
    /// Largest total of the files all running filecopy sessions may write.
    pub max_spool_bytes: u64,
    /// Time a new connection has to prove the secret.
    pub auth_timeout: Duration,
    /// Time an authenticated connection has to send its `Hello`.
    pub handshake_timeout: Duration,
    /// Upper bound on the idle time a client may ask for between trials.
    pub max_idle: Duration,
    pub version: u16,
}

/// What every session thread shares.
struct Shared {
    opts: ServeOptions,
    spool: Arc<SpoolBudget>,
}

/// Run the server until SIGINT/SIGTERM. Returns the exit code.
pub fn serve(opts: ServeOptions) -> i32 {
    let listeners = match bind_all(&opts.listen) {
        Ok(l) => l,
        Err(e) => {
            log!("{e}");
            return 1;
        }
    };
    let addrs: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.to_string())
        .collect();
    raise_descriptor_limit();
    let gate_opts = GateOptions {
        secret: opts.secret.clone(),
        auth_timeout: opts.auth_timeout,
        max_pending: opts.max_pending,
        version: opts.version,
    };
    let mut gate = match Gate::new(listeners, gate_opts) {
        Ok(g) => g,
        Err(e) => {
            log!("cannot set up the listeners: {e}");
            return 1;
        }
    };
    // Handlers first: a supervisor may signal as soon as it has read the line below.
    shutdown::install();
    // The first stdout line tells a supervisor (or a test that asked for port 0) where we are.
    // (The lock is released at once: session threads print records on stdout too.)
    let ready = ServerReady {
        listening: addrs.first().cloned(),
        addresses: addrs,
        protocol_version: opts.version,
        software: software(),
        pid: std::process::id(),
    };
    let _ = writeln!(std::io::stdout(), "{}", ready.to_line());
    let spool_dir = opts.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
    let spool = SpoolBudget::new(spool_dir, opts.max_file_bytes, opts.max_spool_bytes);
    let shared = Arc::new(Shared { opts, spool });
    let active = Arc::new(AtomicUsize::new(0));
    let next_id = AtomicU64::new(1);
    let mut refusals = RefusalLog::default();
    while !shutdown::requested() {
        match gate.poll() {
            None => {}
            Some(Admission::Refused(r)) => refusals.note(&r),
            Some(Admission::Admitted(a)) => {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                start_session(a, id, &active, &shared);
            }
        }
    }
    // Give running sessions a moment to finish their trial, then go.
    for _ in 0..20 {
        if active.load(Ordering::Acquire) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    log!("shutting down");
    0
}

fn bind_all(listen: &[String]) -> std::result::Result<Vec<TcpListener>, String> {
    if listen.is_empty() {
        return Err("no address to listen on".into());
    }
    listen
        .iter()
        .map(|a| bind(a).map_err(|e| format!("cannot listen on {a}: {e}")))
        .collect()
}

/// Listens on the first of `addr`'s addresses that binds, as `TcpListener::bind` does, with
/// MPTCP if the kernel has it.
fn bind(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in addr.to_socket_addrs()? {
        let l = mptcp::listen(&a).or_else(|e| {
            if !mptcp::is_off(&e) {
                return Err(e);
            }
            log!("MPTCP is off in this kernel ({e}): listening on {a} with plain TCP, refusing mptcp sessions");
            TcpListener::bind(a)
        });
        match l {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("resolves to no address")))
}

/// Every waiting connection holds a descriptor: lift the soft limit to the hard one so the
/// gate's bound, not the default of 1024 descriptors, is what limits them.
fn raise_descriptor_limit() {
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// Runs an admitted connection's session on a thread of its own, if a slot is free.
fn start_session(a: Admitted, id: u64, active: &Arc<AtomicUsize>, shared: &Arc<Shared>) {
    let max = shared.opts.max_sessions;
    if active.load(Ordering::Acquire) >= max {
        refuse_busy(a, shared.opts.version, max);
        return;
    }
    active.fetch_add(1, Ordering::AcqRel);
    let (count, sh) = (active.clone(), shared.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("session-{id}"))
        .spawn(move || {
            let peer = a.peer;
            let ended = session(a, id, &sh);
            // The slot is free before the line saying the session ended is written: whoever
            // reads that line can start another session at once.
            count.fetch_sub(1, Ordering::AcqRel);
            match ended {
                Ok(s) => log!("session {id} from {peer}: {s}"),
                Err(e) => log!("session {id} from {peer}: error: {e}"),
            }
        });
    if let Err(e) = spawned {
        active.fetch_sub(1, Ordering::AcqRel);
        log!("cannot start a session thread: {e}");
    }
}

/// Refusals are logged, but a flood of strangers must not flood the log: at most
/// `REFUSALS_PER_WINDOW` lines per window, then one line counting the rest.
#[derive(Default)]
struct RefusalLog {
    window: Option<Instant>,
    logged: u32,
    suppressed: u64,
}

const REFUSALS_PER_WINDOW: u32 = 20;
const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

impl RefusalLog {
    fn note(&mut self, r: &Refused) {
        let now = Instant::now();
        if self
            .window
            .is_none_or(|w| now.duration_since(w) >= REFUSAL_WINDOW)
        {
            if self.suppressed > 0 {
                log!("{} more connections refused", self.suppressed);
            }
            *self = RefusalLog {
                window: Some(now),
                ..RefusalLog::default()
            };
        }
        if self.logged < REFUSALS_PER_WINDOW {
            self.logged += 1;
            log!("refused {}: {}", r.peer, r.reason);
        } else {
            self.suppressed += 1;
        }
    }
}

/// Tell an authenticated connection over the limit why it is closed. Non-blocking: the short
/// frame fits in any socket buffer, and a refusal must never stall the accept loop.
fn refuse_busy(mut a: Admitted, version: u16, max: usize) {
    let _ = a.stream.set_nonblocking(true);
    let _ = protocol::write_frame(
        &mut a.stream,
        Kind::Error,
        &ErrorMsg {
            error: format!("server busy: {max} sessions running; retry later"),
        },
        version,
        2.0,
    );
}

/// Send the peer an error frame (best effort) and return the error.
fn fail(c: &mut Conn, e: WorkerError) -> WorkerError {
    let _ = c.send(
        Kind::Error,
        &ErrorMsg {
            error: e.to_string(),
        },
    );
    e
}

fn session(a: Admitted, id: u64, shared: &Shared) -> Result<String> {
    let opts = &shared.opts;
    let mut c = Conn::new(a.stream, opts.handshake_timeout, opts.version)?;
    c.session = id;
    c.spool_dir = opts.spool_dir.clone();
    let p = match accept_hello(&mut c, shared) {
        Ok(p) => p,
        Err(e) => return Err(fail(&mut c, e)),
    };
    // Held until the session ends: the spool space its files may take.
    let _spool: Option<SpoolLease> = match reserve_spool(&p, shared) {
        Ok(l) => l,
        Err(e) => return Err(fail(&mut c, e)),
    };
    // A client chooses its timeouts, within the server's bound.
    let timeout = Duration::from_millis(p.timeout_ms).min(opts.max_idle);
    let idle = Duration::from_millis(p.idle_timeout_ms).min(opts.max_idle);
    c.timeout = timeout;
    let mut udp_port = None;
    if p.protocol == Protocol::Udp {
        match open_udp(&c, &p) {
            Ok(u) => {
                udp_port = u.local_addr().ok().map(|a| a.port());
                c.udp = Some(u);
            }
            Err(e) => return Err(fail(&mut c, e)),
        }
    }
    c.send(
        Kind::Welcome,
        &Welcome {
            software: software(),
            session: id,
            udp_port,
            unix_ns: Some(crate::session::unix_ns()),
            proof: a.server_proof,
        },
    )?;
    let pat = patterns::lookup(p.pattern).expect("validated: not a collective");
    let mut bufs = Buffers::default();
    let mut trials = 0u32;
    loop {
        c.set_timeouts(idle)?;
        let frame = c.recv("waiting for the next trial", idle.as_secs_f64());
        let frame = match frame {
            Ok(f) => f,
            Err(e) => return Err(fail(&mut c, e)),
        };
        match frame.kind {
            Kind::Bye => break,
            Kind::TrialStart => {}
            k => {
                let e = WorkerError::Protocol(format!("unexpected {k:?} frame between trials"));
                return Err(fail(&mut c, e));
            }
        }
        let spec: TrialSpec = match frame.decode() {
            Ok(s) => s,
            Err(e) => return Err(fail(&mut c, e)),
        };
        if let Err(m) = check_trial(&p, &spec) {
            return Err(fail(
                &mut c,
                WorkerError::Usage(format!("rejected trial: {m}")),
            ));
        }
        c.set_timeouts(timeout)?;
        // From here on the client may send: a trial the server times starts now.
        c.trial_opened = Some(Stopwatch::start());
        c.send(Kind::Ack, &serde_json::json!({}))?;
        let subflows = (p.protocol == Protocol::Mptcp).then(|| TrialSubflows::start(&c.stream));
        let tcp = (p.protocol == Protocol::Tcp)
            .then(|| TrialTcp::start(&c.stream))
            .flatten();
        let cpu = TrialCpu::start();
        let mut m = match pat.server(&mut c, &p, &spec, &mut bufs) {
            Ok(m) => m,
            Err(e) => return Err(fail(&mut c, e)),
        };
        m.subflows = subflows.and_then(|t| t.count(&c.stream));
        m.tcp = tcp.and_then(|t| t.counters(&c.stream));
        m.node_cpu_busy_ms = cpu.and_then(|t| t.busy_ms());
        let rep = trial_report(&c, &m);
        c.send(Kind::TrialReport, &rep)?;
        if !spec.warmup {
            trials += 1;
            if opts.records {
                print_server_record(&crate::client::server_record(&p, &spec, &rep));
            }
        }
    }
    Ok(format!(
        "{} over {:?}: {trials} trials",
        serde_json::to_string(&p.pattern).unwrap_or_default(),
        p.protocol
    ))
}

/// The session's parameters from its `Hello`, checked.
fn accept_hello(c: &mut Conn, shared: &Shared) -> Result<Params> {
    let hs = shared.opts.handshake_timeout.as_secs_f64();
    let hello: Hello = c
        .recv("reading the handshake", hs)?
        .expect(Kind::Hello)?
        .decode()?;
    let p = hello.params;
    protocol::validate(&p).map_err(|m| WorkerError::Usage(format!("rejected parameters: {m}")))?;
    if p.protocol == Protocol::Mptcp {
        check_mptcp(c)?;
    }
    Ok(p)
}

/// An `mptcp` session needs MPTCP in this node's kernel too: without it the client's
/// connection fell back to plain TCP, which is not what it asked to measure.
fn check_mptcp(c: &Conn) -> Result<()> {
    let local = c
        .stream
        .local_addr()
        .map_err(|e| WorkerError::io(e, "local address", 0.0))?;
    mptcp::socket(&local)
        .map(drop)
        .map_err(|e| WorkerError::Usage(format!("this server cannot serve mptcp: {e}")))
}

/// A filecopy session's claim on the spool: its announced file size.
fn reserve_spool(p: &Params, shared: &Shared) -> Result<Option<SpoolLease>> {
    if p.pattern != Pattern::Filecopy {
        return Ok(None);
    }
    shared
        .spool
        .reserve(p.max_size_bytes)
        .map(Some)
        .map_err(|m| WorkerError::Usage(format!("rejected file copy: {m}")))
}

/// What this side counted in a trial, for the client.
fn trial_report(c: &Conn, m: &Measure) -> TrialReport {
    TrialReport {
        messages: m.messages,
        bytes: m.bytes,
        start_unix_ns: m.start_unix_ns,
        end_unix_ns: m.end_unix_ns,
        elapsed_ns: m.elapsed_ns,
        local_addr: c.local.clone(),
        peer_addr: c.peer.clone(),
        error: None,
        gap_max_ns: m.gap_max_ns,
        subflows: m.subflows,
        tcp: m.tcp,
        node_cpu_busy_ms: m.node_cpu_busy_ms,
        progress: m.progress.clone(),
    }
}

fn open_udp(c: &Conn, p: &Params) -> Result<UdpSocket> {
    let local = c
        .stream
        .local_addr()
        .map_err(|e| WorkerError::io(e, "local address", 0.0))?;
    let peer = c
        .stream
        .peer_addr()
        .map_err(|e| WorkerError::io(e, "peer address", 0.0))?;
    let u = UdpSocket::bind((local.ip(), 0)).map_err(|e| WorkerError::io(e, "binding UDP", 0.0))?;
    let port = p.udp_port.unwrap_or(0);
    u.connect((peer.ip(), port))
        .map_err(|e| WorkerError::io(e, "connecting the UDP socket", 0.0))?;
    Ok(u)
}

fn check_trial(p: &Params, t: &TrialSpec) -> std::result::Result<(), String> {
    if t.size_bytes > p.max_size_bytes {
        return Err(format!(
            "size {} exceeds the session's announced maximum {}",
            t.size_bytes, p.max_size_bytes
        ));
    }
    if t.size_bytes == 0 && p.pattern != Pattern::Filecopy {
        return Err("size 0".into());
    }
    if p.pattern == Pattern::Load && t.size_bytes < protocol::LOAD_HEADER as u64 {
        return Err(format!(
            "load needs at least {} bytes",
            protocol::LOAD_HEADER
        ));
    }
    if t.count == Some(0) {
        return Err("count 0".into());
    }
    Ok(())
}
