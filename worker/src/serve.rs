//! `serve`: the long-lived server on every node. Accepts any number of concurrent sessions from
//! any number of peers (one thread each, up to a limit), runs whatever pattern each session's
//! handshake asks for, and reports each trial back to its client. A bad session — garbage, a
//! mismatched version, a peer that dies — ends that session with a logged error; the server
//! goes on.

use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::client::software;
use crate::error::{Result, WorkerError};
use crate::output::print_server_record;
use crate::patterns::{self, Measure};
use crate::protocol::{self, ErrorMsg, Hello, Kind, Params, TrialReport, TrialSpec, Welcome};
use crate::record::{Pattern, Protocol};
use crate::session::{Buffers, Conn};
use crate::shutdown;

/// One line on stderr; a closed or full stderr must never take a session (or the server) down.
macro_rules! log {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), "orchestrate-worker serve: {}", format_args!($($arg)*));
    }};
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: String,
    pub max_sessions: usize,
    /// Print each trial's server-side record on stdout.
    pub records: bool,
    pub spool_dir: Option<PathBuf>,
    /// Time allowed for a new connection to complete its handshake.
    pub handshake_timeout: Duration,
    /// Upper bound on the idle time a client may ask for between trials.
    pub max_idle: Duration,
    pub version: u16,
}

/// Run the server until SIGINT/SIGTERM. Returns the exit code.
pub fn serve(opts: ServeOptions) -> i32 {
    let listener = match TcpListener::bind(&opts.listen) {
        Ok(l) => l,
        Err(e) => {
            log!("cannot listen on {}: {e}", opts.listen);
            return 1;
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // Handlers first: a supervisor may signal as soon as it has read the line below.
    shutdown::install();
    // The first stdout line tells a supervisor (or a test that asked for port 0) where we are.
    // (The lock is released at once: session threads print records on stdout too.)
    let _ = writeln!(
        std::io::stdout(),
        "{}",
        serde_json::json!({"listening": addr, "protocol_version": opts.version,
                           "software": software(), "pid": std::process::id()})
    );
    let active = Arc::new(AtomicUsize::new(0));
    let next_id = AtomicU64::new(1);
    let opts = Arc::new(opts);
    while !shutdown::requested() {
        if !readable(&listener, 200) {
            continue;
        }
        let (stream, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                log!("accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        if active.load(Ordering::Acquire) >= opts.max_sessions {
            refuse(stream, opts.version, opts.max_sessions);
            continue;
        }
        active.fetch_add(1, Ordering::AcqRel);
        let (a, o) = (active.clone(), opts.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("session-{id}"))
            .spawn(move || {
                let res = session(stream, id, &o);
                match res {
                    Ok(s) => log!("session {id} from {peer}: {s}"),
                    Err(e) => {
                        log!("session {id} from {peer}: error: {e}")
                    }
                }
                a.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(e) = spawned {
            active.fetch_sub(1, Ordering::AcqRel);
            log!("cannot start a session thread: {e}");
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

fn readable(l: &TcpListener, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// Tell a connection over the limit why it is closed. Non-blocking: the short frame fits in
/// any socket buffer, and a refusal must never stall the accept loop or cost a thread.
fn refuse(mut s: TcpStream, version: u16, max: usize) {
    let _ = s.set_nonblocking(true);
    let _ = protocol::write_frame(
        &mut s,
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

fn session(stream: TcpStream, id: u64, opts: &ServeOptions) -> Result<String> {
    let mut c = Conn::new(stream, opts.handshake_timeout, opts.version)?;
    c.session = id;
    c.spool_dir = opts.spool_dir.clone();
    let hs = opts.handshake_timeout.as_secs_f64();
    let hello: Hello = match c
        .recv("reading the handshake", hs)
        .and_then(|f| f.expect(Kind::Hello))
        .and_then(|f| f.decode())
    {
        Ok(h) => h,
        Err(e) => return Err(fail(&mut c, e)),
    };
    let p = hello.params;
    if let Err(m) = protocol::validate(&p) {
        return Err(fail(
            &mut c,
            WorkerError::Usage(format!("rejected parameters: {m}")),
        ));
    }
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
        },
    )?;
    let pat = patterns::lookup(p.pattern);
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
        c.send(Kind::Ack, &serde_json::json!({}))?;
        let m = match pat.server(&mut c, &p, &spec, &mut bufs) {
            Ok(m) => m,
            Err(e) => return Err(fail(&mut c, e)),
        };
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
