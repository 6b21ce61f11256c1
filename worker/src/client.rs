//! The client side of a session: connect, handshake, wait at the start barrier, run the trials
//! of a plan and write both sides' records. Any failure ends in one error record and a
//! non-zero exit.
//!
//! With `verbose` (`--verbose`) the client also says on stderr how the run goes, one line
//! each, never inside a timed loop: a size's warm-up (messages and nanoseconds, the pace a
//! time budget is filled at), a trial's start (written once the server has accepted the
//! trial, just before the first message; for a pattern the server times, its clock includes
//! that write) and its end (messages and nanoseconds, as in its record).

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use crate::auth::{Nonce, Secret};
use crate::error::{Result, WorkerError};
use crate::mptcp::{self, TrialSubflows};
use crate::node_cpu::TrialCpu;
use crate::output::ClientOutput;
use crate::patterns::{self, Measure};
use crate::protocol::{
    self, Auth, Challenge, Frame, Hello, Kind, Params, TrialReport, TrialSpec, Welcome,
};
use crate::record::{Pattern, Protocol, Record, Role};
use crate::session::{Buffers, Conn, unix_ns};
use crate::tcp_counters::TrialTcp;

/// When the first trial starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Go {
    /// Right after the handshake.
    Now,
    /// After printing `{"ready":true,...}`, when a line arrives on stdin.
    Stdin,
    /// At this wall-clock time, Unix nanoseconds.
    At(u64),
}

/// How many messages each trial sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Fixed(u64),
    /// This many messages, and on until the trial has lasted this long.
    AtLeast(u64, Duration),
    Duration(Duration),
    /// NetPIPE's way: as many as fit in this time, judged from the warm-up.
    Budget(Duration),
}

impl Count {
    /// Sets how each timed trial of `spec` ends: a count, a duration, or a count that fits the
    /// budget at `ns_per_message`, the warm-up's pace (1 ms a message without a warm-up).
    fn bound(self, spec: &mut TrialSpec, ns_per_message: Option<f64>) {
        match self {
            Count::Fixed(n) => spec.count = Some(n.max(1)),
            Count::AtLeast(n, d) => {
                spec.count = Some(n.max(1));
                spec.min_duration_ns = Some(d.as_nanos() as u64);
            }
            Count::Duration(d) => {
                spec.count = None;
                spec.duration_ns = Some(d.as_nanos() as u64);
            }
            Count::Budget(b) => {
                let per = ns_per_message.unwrap_or(1e6).max(1.0);
                let n = (b.as_nanos() as f64 / per).ceil() as u64;
                spec.count = Some(n.clamp(3, MAX_BUDGET_COUNT));
            }
        }
    }
}

/// The trials a client runs: which sizes, how many trials of how many messages each.
#[derive(Debug, Clone)]
pub struct TrialPlan {
    pub sizes: Vec<u64>,
    pub trials: u32,
    /// Untimed messages before the trials of each size (they also calibrate `Budget`).
    pub warmup: u64,
    pub count: Count,
    pub rate_msgs_s: Option<f64>,
    pub source_file: Option<PathBuf>,
    pub drop_cache: bool,
}

#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub connect: String,
    pub params: Params,
    pub plan: TrialPlan,
    pub go: Go,
    pub go_timeout: Duration,
    pub connect_timeout: Duration,
    pub version: u16,
    /// The run's secret, proved to the server and expected back from it.
    pub secret: Secret,
    /// Say how the run goes on stderr (see the module docs).
    pub verbose: bool,
}

/// The `--verbose` lines on stderr; silent unless asked for. A closed stderr never fails a run.
#[derive(Debug, Clone, Copy)]
struct Say(bool);

impl Say {
    fn line(self, what: std::fmt::Arguments) {
        if self.0 {
            let _ = writeln!(std::io::stderr(), "orchestrate-worker: {what}");
        }
    }
}

/// Most messages one trial may be sized to by a time budget.
const MAX_BUDGET_COUNT: u64 = 100_000_000;

/// Run a client; returns the process exit code.
pub fn run<W: Write>(opts: &ClientOptions, out: &mut ClientOutput<W>) -> i32 {
    let mut state = State::default();
    match run_inner(opts, out, &mut state) {
        Ok(()) => 0,
        Err(e) => {
            let mut rec = Record::new(opts.params.pattern, opts.params.protocol, Role::Client);
            rec.local_addr = state.local;
            rec.peer_addr = state.peer;
            rec.size_bytes = state.size;
            rec.trial = state.trial;
            rec.start_unix_ns = state.started;
            rec.end_unix_ns = unix_ns();
            rec.error = Some(e.to_string());
            out.error(&rec);
            1
        }
    }
}

/// Where the client was when it failed, for the error record.
#[derive(Default)]
struct State {
    local: String,
    peer: String,
    size: u64,
    trial: u32,
    started: u64,
}

/// The session's connection: the first of `addr`'s addresses that answers, over MPTCP for
/// `mptcp` and plain TCP otherwise.
fn connect(addr: &str, protocol: Protocol, timeout: Duration) -> Result<TcpStream> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| WorkerError::Usage(format!("cannot resolve {addr}: {e}")))?
        .collect();
    let mut last = None;
    for a in &addrs {
        let tried = if protocol == Protocol::Mptcp {
            mptcp::connect(a, timeout)
        } else {
            TcpStream::connect_timeout(a, timeout).map_err(|e| {
                WorkerError::io(e, format!("connecting to {a}"), timeout.as_secs_f64())
            })
        };
        match tried {
            Ok(s) => return Ok(s),
            // No other address fares better on a kernel without MPTCP.
            Err(e @ WorkerError::Usage(_)) => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| WorkerError::Usage(format!("{addr} resolves to no address"))))
}

fn run_inner<W: Write>(
    opts: &ClientOptions,
    out: &mut ClientOutput<W>,
    st: &mut State,
) -> Result<()> {
    st.started = unix_ns();
    let mut session = open_session(opts, st)?;
    barrier(opts, out, &session)?;
    let mut trials = Trials {
        plan: &opts.plan,
        pattern: patterns::lookup(session.params.pattern).expect("validated: not a collective"),
        bufs: Buffers::default(),
        next: 0,
        say: Say(opts.verbose),
    };
    for &size in &opts.plan.sizes {
        st.size = size;
        trials.run_size(&mut session, size, out, st)?;
        out.size_done();
    }
    let _ = session.conn.send(Kind::Bye, &serde_json::json!({}));
    Ok(())
}

/// A session after its handshake, ready for trials.
struct Session {
    conn: Conn,
    /// What the handshake asked for, with the UDP port this side bound.
    params: Params,
    welcome: Welcome,
    clock: Option<ClockEstimate>,
}

/// Connects, binds the UDP socket if the pattern needs one, and completes the handshake.
fn open_session(opts: &ClientOptions, st: &mut State) -> Result<Session> {
    let timeout = Duration::from_millis(opts.params.timeout_ms);
    let stream = connect(&opts.connect, opts.params.protocol, opts.connect_timeout)?;
    let mut conn = Conn::new(stream, timeout, opts.version)?;
    st.local = conn.local.clone();
    st.peer = conn.peer.clone();
    let mut params = opts.params.clone();
    if params.protocol == Protocol::Udp {
        params.udp_port = Some(bind_udp(&mut conn)?);
    }
    let (welcome, clock) = handshake(&mut conn, &params, &opts.secret)?;
    if let Some(u) = &conn.udp {
        connect_udp(u, &conn, &welcome)?;
    }
    conn.set_timeouts(timeout)?;
    Ok(Session {
        conn,
        params,
        welcome,
        clock,
    })
}

/// Binds this side's UDP socket on the session's local address; returns its port.
fn bind_udp(c: &mut Conn) -> Result<u16> {
    let ip = c
        .stream
        .local_addr()
        .map_err(|e| WorkerError::io(e, "local address", 0.0))?;
    let u = UdpSocket::bind((ip.ip(), 0)).map_err(|e| WorkerError::io(e, "binding UDP", 0.0))?;
    let port = u
        .local_addr()
        .map_err(|e| WorkerError::io(e, "UDP address", 0.0))?
        .port();
    c.udp = Some(u);
    Ok(port)
}

/// The server's challenge, our proof and Hello out, its Welcome and proof back; the exchange
/// also estimates the server's clock.
fn handshake(
    c: &mut Conn,
    params: &Params,
    secret: &Secret,
) -> Result<(Welcome, Option<ClockEstimate>)> {
    let challenge: Challenge =
        expect_from_server(c, Kind::Challenge, "waiting for the server's challenge")?.decode()?;
    let server_nonce = Nonce::from_hex(&challenge.nonce)
        .ok_or_else(|| WorkerError::Protocol("the server's challenge has no valid nonce".into()))?;
    let client_nonce = Nonce::random();
    let proof = secret.client_proof(&server_nonce, &client_nonce);
    c.send(
        Kind::Auth,
        &Auth {
            nonce: client_nonce.to_hex(),
            proof: hex::encode(proof),
        },
    )?;
    let sent_ns = unix_ns();
    c.send(
        Kind::Hello,
        &Hello {
            params: params.clone(),
            software: software(),
        },
    )?;
    let welcome: Welcome =
        expect_from_server(c, Kind::Welcome, "waiting for the server's handshake")?.decode()?;
    let server_proof = crate::auth::decode32(&welcome.proof).unwrap_or_default();
    if !secret.verify_server(&server_nonce, &client_nonce, &server_proof) {
        return Err(WorkerError::Protocol(format!(
            "the server at {} did not prove the run's secret: it is not this run's server",
            c.peer
        )));
    }
    let clock = welcome
        .unix_ns
        .map(|server| ClockEstimate::from_handshake(sent_ns, server));
    Ok((welcome, clock))
}

/// The next frame from the server if it is `want`. A refusal comes back as the server's
/// reason; a refusal in another protocol version also says so, since that is the cause.
fn expect_from_server(c: &mut Conn, want: Kind, during: &str) -> Result<Frame> {
    let ts = c.timeout_s();
    let frame = c.recv(during, ts)?;
    if frame.kind == Kind::Error && frame.version != c.version {
        let theirs = frame.version;
        let why = frame
            .expect(want)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        return Err(WorkerError::Protocol(format!(
            "{} ({why})",
            protocol::version_mismatch(c.version, theirs)
        )));
    }
    frame.expect(want)
}

/// A server that ends a trial says why in an error frame before it closes; a client still
/// sending sees only the broken pipe or reset that follows. The frame is read if it came, so
/// the error names the cause (say, the server's socket timeout while the bus starved this
/// copy) rather than its symptom.
fn with_servers_reason(c: &mut Conn, lost: WorkerError) -> WorkerError {
    const LOOK: Duration = Duration::from_secs(1);
    if c.stream.set_read_timeout(Some(LOOK)).is_err() {
        return lost;
    }
    match c.recv("reading why the server ended the trial", LOOK.as_secs_f64()) {
        // Only an error frame turns into the peer's message.
        Ok(frame) => match frame.expect(Kind::TrialReport) {
            Err(WorkerError::Remote(why)) => WorkerError::Remote(format!("{why} (here: {lost})")),
            _ => lost,
        },
        Err(_) => lost,
    }
}

/// Points this side's UDP socket at the port the server offered.
fn connect_udp(u: &UdpSocket, c: &Conn, welcome: &Welcome) -> Result<()> {
    let port = welcome
        .udp_port
        .ok_or_else(|| WorkerError::Protocol("server offered no UDP port".into()))?;
    let peer_ip = c
        .stream
        .peer_addr()
        .map_err(|e| WorkerError::io(e, "peer address", 0.0))?
        .ip();
    u.connect((peer_ip, port))
        .map_err(|e| WorkerError::io(e, "connecting the UDP socket", 0.0))
}

/// The trials of a plan, run size after size over one session.
struct Trials<'a> {
    plan: &'a TrialPlan,
    pattern: &'static dyn patterns::PatternImpl,
    bufs: Buffers,
    /// Number of the next trial, counted over all sizes.
    next: u32,
    say: Say,
}

impl Trials<'_> {
    /// Warm up at one size, then run its trials and write their records.
    fn run_size<W: Write>(
        &mut self,
        s: &mut Session,
        size: u64,
        out: &mut ClientOutput<W>,
        st: &mut State,
    ) -> Result<()> {
        let mut spec = TrialSpec {
            rate_msgs_s: self.plan.rate_msgs_s,
            source_file: self.plan.source_file.clone(),
            drop_cache: self.plan.drop_cache,
            ..TrialSpec::of_size(size)
        };
        let ns_per_message = self.warm_up(s, &mut spec)?;
        self.plan.count.bound(&mut spec, ns_per_message);
        for _ in 0..self.plan.trials {
            spec.trial = self.next;
            st.trial = self.next;
            let say = self.say;
            let (m, rep) = one_trial(
                &mut s.conn,
                &s.params,
                &spec,
                self.pattern,
                &mut self.bufs,
                say,
            )?;
            say.line(format_args!(
                "trial {} at {size} B: {} messages in {} ns",
                spec.trial, m.messages, m.elapsed_ns
            ));
            let rec = self.client_record(s, &spec, &m, &rep);
            let srv = server_record(&s.params, &spec, &rep);
            out.trial(&rec, Some(&srv));
            self.next += 1;
        }
        Ok(())
    }

    /// The untimed warm-up messages, if any; returns the time per message they took, ns.
    fn warm_up(&mut self, s: &mut Session, spec: &mut TrialSpec) -> Result<Option<f64>> {
        if self.plan.warmup == 0 {
            return Ok(None);
        }
        spec.warmup = true;
        spec.count = Some(self.plan.warmup);
        let say = self.say;
        let (m, _) = one_trial(
            &mut s.conn,
            &s.params,
            spec,
            self.pattern,
            &mut self.bufs,
            say,
        )?;
        spec.warmup = false;
        say.line(format_args!(
            "warm-up at {} B: {} messages in {} ns",
            spec.size_bytes, m.messages, m.elapsed_ns
        ));
        Ok((m.messages > 0).then(|| m.elapsed_ns as f64 / m.messages as f64))
    }

    /// This side's view of a trial.
    fn client_record(
        &self,
        s: &Session,
        spec: &TrialSpec,
        m: &Measure,
        rep: &TrialReport,
    ) -> Record {
        let params = &s.params;
        let mut rec = Record::new(params.pattern, params.protocol, Role::Client);
        rec.local_addr = s.conn.local.clone();
        rec.peer_addr = s.conn.peer.clone();
        rec.size_bytes = spec.size_bytes;
        rec.trial = spec.trial;
        rec.messages = m.messages;
        rec.bytes = m.bytes;
        rec.start_unix_ns = m.start_unix_ns;
        rec.end_unix_ns = m.end_unix_ns;
        rec.elapsed_ns = m.elapsed_ns;
        if params.pattern == Pattern::Pipeline {
            rec.depth = Some(params.depth);
        }
        rec.peer_clock_offset_ns = s.clock.map(|k| k.offset_ns);
        rec.peer_clock_rtt_ns = s.clock.map(|k| k.rtt_ns);
        rec.subflows = m.subflows;
        rec.set_tcp(m.tcp);
        rec.node_cpu_busy_ms = m.node_cpu_busy_ms;
        rec.set_progress(m.progress.as_ref());
        self.pattern.figures(m, spec, rep, &mut rec);
        rec
    }
}

fn one_trial(
    c: &mut Conn,
    params: &Params,
    spec: &TrialSpec,
    pat: &dyn patterns::PatternImpl,
    bufs: &mut Buffers,
    say: Say,
) -> Result<(Measure, TrialReport)> {
    let ts = c.timeout_s();
    c.send(Kind::TrialStart, spec)?;
    c.recv("waiting for the server to accept the trial", ts)?
        .expect(Kind::Ack)?;
    if !spec.warmup {
        say.line(format_args!(
            "trial {} at {} B: started",
            spec.trial, spec.size_bytes
        ));
    }
    let subflows = (params.protocol == Protocol::Mptcp).then(|| TrialSubflows::start(&c.stream));
    let tcp = (params.protocol == Protocol::Tcp)
        .then(|| TrialTcp::start(&c.stream))
        .flatten();
    let cpu = TrialCpu::start();
    let mut m = match pat.client(c, params, spec, bufs) {
        Err(e @ WorkerError::PeerGone { .. }) => return Err(with_servers_reason(c, e)),
        other => other?,
    };
    // The server fsyncs a copied file before it reports: allow for a disk as slow as 1 MB/s.
    let wait = if params.pattern == Pattern::Filecopy {
        c.timeout + Duration::from_secs(spec.size_bytes / 1_000_000)
    } else {
        c.timeout
    };
    c.stream
        .set_read_timeout(Some(wait))
        .map_err(|e| WorkerError::io(e, "setting timeouts", 0.0))?;
    let rep: TrialReport = c
        .recv("waiting for the server's trial report", wait.as_secs_f64())?
        .expect(Kind::TrialReport)?
        .decode()?;
    c.set_timeouts(c.timeout)?;
    if m.until_report {
        let extra = unix_ns().saturating_sub(m.end_unix_ns);
        // Extend the monotonic interval by the wall time the report took to arrive.
        m.elapsed_ns += extra;
        m.end_unix_ns += extra;
    }
    // Counted once the report is in: by then every byte of the trial has been delivered.
    m.subflows = subflows.and_then(|t| t.count(&c.stream));
    m.tcp = tcp.and_then(|t| t.counters(&c.stream));
    m.node_cpu_busy_ms = cpu.and_then(|t| t.busy_ms());
    if let Some(e) = &rep.error {
        return Err(WorkerError::Remote(e.clone()));
    }
    Ok((m, rep))
}

/// The server's view of a trial, as a record of its own.
pub fn server_record(params: &Params, spec: &TrialSpec, rep: &TrialReport) -> Record {
    let mut r = Record::new(params.pattern, params.protocol, Role::Server);
    r.local_addr = rep.local_addr.clone();
    r.peer_addr = rep.peer_addr.clone();
    r.size_bytes = spec.size_bytes;
    r.trial = spec.trial;
    r.messages = rep.messages;
    r.bytes = rep.bytes;
    r.start_unix_ns = rep.start_unix_ns;
    r.end_unix_ns = rep.end_unix_ns;
    r.elapsed_ns = rep.elapsed_ns;
    r.throughput_mbit_s = patterns::mbit_s(rep.bytes, rep.elapsed_ns);
    if params.pattern == Pattern::Pipeline {
        r.depth = Some(params.depth);
    }
    r.error = rep.error.clone();
    r.gap_max_us = rep.gap_max_ns.map(|ns| ns as f64 / 1e3);
    r.subflows = rep.subflows;
    r.set_tcp(rep.tcp);
    r.node_cpu_busy_ms = rep.node_cpu_busy_ms;
    r.set_progress(rep.progress.as_ref());
    r
}

/// The server's clock relative to ours, from the handshake.
#[derive(Debug, Clone, Copy)]
struct ClockEstimate {
    /// Server clock minus client clock, ns; uncertain by ± half of `rtt_ns`.
    offset_ns: i64,
    rtt_ns: u64,
}

impl ClockEstimate {
    /// From a handshake sent at `sent_ns` that the server stamped `server_ns`, answered now.
    fn from_handshake(sent_ns: u64, server_ns: u64) -> ClockEstimate {
        // NTP's estimate: the server stamped its reply halfway through the exchange.
        let back_ns = unix_ns();
        let mid = (sent_ns as i128 + back_ns as i128) / 2;
        ClockEstimate {
            offset_ns: (server_ns as i128 - mid) as i64,
            rtt_ns: back_ns.saturating_sub(sent_ns),
        }
    }
}

fn barrier<W: Write>(opts: &ClientOptions, out: &mut ClientOutput<W>, s: &Session) -> Result<()> {
    let (c, w, clock) = (&s.conn, &s.welcome, s.clock);
    let ready = || {
        serde_json::json!({
            "ready": true,
            "pattern": opts.params.pattern,
            "protocol": opts.params.protocol,
            "local_addr": c.local,
            "peer_addr": c.peer,
            "session": w.session,
            "server": w.software,
            "unix_ns": unix_ns(),
            "peer_clock_offset_ns": clock.map(|k| k.offset_ns),
            "peer_clock_rtt_ns": clock.map(|k| k.rtt_ns),
        })
    };
    match opts.go {
        Go::Now => Ok(()),
        Go::Stdin => {
            out.line(&ready());
            wait_stdin_line(opts.go_timeout)
        }
        Go::At(t) => {
            out.line(&ready());
            let now = unix_ns();
            if t > now {
                let wait = Duration::from_nanos(t - now);
                if wait > opts.go_timeout {
                    return Err(WorkerError::Usage(format!(
                        "--start-at is {:.1} s away, beyond --go-timeout",
                        wait.as_secs_f64()
                    )));
                }
                std::thread::sleep(wait);
            }
            Ok(())
        }
    }
}

/// Wait for one line on stdin, at most `timeout`.
pub(crate) fn wait_stdin_line(timeout: Duration) -> Result<()> {
    let mut pfd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = std::time::Instant::now() + timeout;
    let mut byte = [0u8; 1];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(WorkerError::Timeout {
                during: "waiting for the go line on stdin".into(),
                after_s: timeout.as_secs_f64(),
            });
        }
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(WorkerError::io(e, "waiting on stdin", 0.0));
        }
        if rc == 0 {
            continue;
        }
        // Read byte by byte so nothing after the go line is consumed by a buffer.
        // SAFETY: reading into a 1-byte buffer we own.
        let n = unsafe { libc::read(0, byte.as_mut_ptr().cast(), 1) };
        if n == 0 {
            return Err(WorkerError::Usage(
                "stdin closed before the go line (--go stdin)".into(),
            ));
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(WorkerError::io(e, "reading stdin", 0.0));
        }
        if byte[0] == b'\n' {
            return Ok(());
        }
    }
}

pub fn software() -> String {
    format!(
        "orchestrate-worker {} (protocol v{})",
        env!("CARGO_PKG_VERSION"),
        protocol::VERSION
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(count: Count, ns_per_message: Option<f64>) -> TrialSpec {
        let mut spec = TrialSpec::of_size(64);
        count.bound(&mut spec, ns_per_message);
        spec
    }

    #[test]
    fn a_budget_is_filled_at_the_warm_ups_pace() {
        let budget = Count::Budget(Duration::from_millis(200));
        // 0.2 s at 40 µs a message is 5,000 messages; at 30 µs, 6,667 (rounded up).
        assert_eq!(bounded(budget, Some(40_000.0)).count, Some(5_000));
        assert_eq!(bounded(budget, Some(30_000.0)).count, Some(6_667));
        // Without a warm-up, 1 ms a message; never fewer than three, never without end.
        assert_eq!(bounded(budget, None).count, Some(200));
        assert_eq!(bounded(budget, Some(1e9)).count, Some(3));
        assert_eq!(bounded(budget, Some(0.0)).count, Some(MAX_BUDGET_COUNT));
        assert_eq!(bounded(budget, Some(40_000.0)).duration_ns, None);
    }

    #[test]
    fn a_count_with_a_floor_on_time_keeps_both() {
        let s = bounded(Count::AtLeast(100, Duration::from_secs(2)), Some(1.0));
        assert_eq!(
            (s.count, s.min_duration_ns),
            (Some(100), Some(2_000_000_000))
        );
        let s = bounded(Count::Duration(Duration::from_millis(500)), Some(1.0));
        assert_eq!((s.count, s.duration_ns), (None, Some(500_000_000)));
        assert_eq!(bounded(Count::Fixed(0), None).count, Some(1));
    }
}
