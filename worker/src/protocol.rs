//! The session protocol between a client and `serve`: framing, the versioned handshake and the
//! per-trial control messages.
//!
//! A session is one TCP connection (Multipath TCP for `mptcp`). Control frames are
//! `MAGIC (4) | version u16 BE | kind u8 | length u32 BE | JSON body`, bounded in size, and are
//! only exchanged between trials.
//!
//! Version 2 opens every session with an authentication ([`crate::auth`]): the server speaks
//! first with a `Challenge` (its nonce), the client answers with an `Auth` frame (its nonce
//! and proof) and, without waiting, its `Hello`; the server reads nothing else of a peer until
//! the proof checks out, and returns its own proof in the `Welcome`. A peer of another version
//! is told so by the first frame either side reads. Between a `TrialStart`/`Ack` pair and the server's
//! `TrialReport` the connection carries raw pattern data (for TCP patterns; UDP patterns send
//! their data on a separate datagram socket). A message's first byte is [`LAST`] on the final
//! message of a trial, so the serving side needs no count and a duration-bounded trial ends
//! cleanly.
//!
//! Every read here runs under the socket's timeout, so a silent, dead or babbling peer ends the
//! session in bounded time with an error, never a hang.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::error::{Result, WorkerError};
use crate::progress::Progress;
use crate::record::{Pattern, Protocol};
use crate::tcp_counters::TcpCounters;

/// Protocol version; both sides must speak the same one.
pub const VERSION: u16 = 2;
/// First bytes of every control frame.
pub const MAGIC: [u8; 4] = *b"OWK\x01";
/// Bytes of a frame's header.
pub const HEAD_LEN: usize = 11;
/// Largest control frame body accepted.
pub const MAX_FRAME: usize = 64 * 1024;
/// Largest frame body accepted from a peer not yet authenticated (its `Auth` frame).
pub const MAX_AUTH_FRAME: usize = 256;
/// Largest message / block / token / datagram payload a pattern may use.
pub const MAX_SIZE: u64 = 64 * 1024 * 1024;
/// Largest UDP payload.
pub const MAX_UDP_SIZE: u64 = 65_507;
/// Bytes kept in flight by a pipeline at most (depth × size), so neither side can fill both
/// socket buffers and stall on a blocking write.
pub const MAX_PIPELINE_BYTES: u64 = 256 * 1024;
/// Largest file `filecopy` will send.
pub const MAX_FILE: u64 = 64 * 1024 * 1024 * 1024;
/// Marker in byte 0 of the final message of a trial.
pub const LAST: u8 = 0xff;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Hello = 1,
    Welcome = 2,
    Error = 3,
    TrialStart = 4,
    Ack = 5,
    TrialReport = 6,
    Bye = 7,
    End = 8,
    Challenge = 9,
    Auth = 10,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hello,
            2 => Kind::Welcome,
            3 => Kind::Error,
            4 => Kind::TrialStart,
            5 => Kind::Ack,
            6 => Kind::TrialReport,
            7 => Kind::Bye,
            8 => Kind::End,
            9 => Kind::Challenge,
            10 => Kind::Auth,
            _ => return None,
        })
    }
}

/// What a session runs; sent by the client in `Hello`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Params {
    pub pattern: Pattern,
    pub protocol: Protocol,
    /// Outstanding requests (pipeline); 1 otherwise.
    pub depth: u32,
    /// Largest message size any trial of this session will use.
    pub max_size_bytes: u64,
    /// Socket timeout for data and control operations, milliseconds.
    pub timeout_ms: u64,
    /// How long the server waits between trials (covers the start barrier), milliseconds.
    pub idle_timeout_ms: u64,
    /// The client's UDP port for datagram patterns.
    pub udp_port: Option<u16>,
}

/// The server's opening: a fresh nonce for the client to prove the secret over.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Challenge {
    /// 32 bytes, hex.
    pub nonce: String,
}

/// The client's proof that it holds the run's secret.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Auth {
    /// The client's own 32-byte nonce, hex, which the server's proof covers.
    pub nonce: String,
    /// HMAC-SHA256 over both nonces ([`crate::auth::Secret::client_proof`]), hex.
    pub proof: String,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Hello {
    pub params: Params,
    /// The client's program version, for messages.
    pub software: String,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Welcome {
    pub software: String,
    pub session: u64,
    pub udp_port: Option<u16>,
    /// The server's wall clock as it sent this frame, for the client's clock-offset estimate.
    #[serde(default)]
    pub unix_ns: Option<u64>,
    /// The server's proof that it holds the secret too, hex
    /// ([`crate::auth::Secret::server_proof`]).
    pub proof: String,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ErrorMsg {
    pub error: String,
}

/// One trial as the client announces it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TrialSpec {
    pub trial: u32,
    pub size_bytes: u64,
    /// Untimed warm-up; no record is written.
    pub warmup: bool,
    /// Messages to send (the client ends the trial; the server only follows).
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
    /// With `count`: the trial goes on past it until it has lasted this long (the client's
    /// affair; absent from older workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_duration_ns: Option<u64>,
    /// Offered load, messages per second (load).
    pub rate_msgs_s: Option<f64>,
    /// The client's file to send (filecopy); never leaves the client.
    #[serde(skip)]
    pub source_file: Option<std::path::PathBuf>,
    /// Evict the source file from the page cache before each trial (filecopy).
    #[serde(skip)]
    pub drop_cache: bool,
}

impl TrialSpec {
    /// The first timed trial at `size_bytes`, with nothing that ends it yet: the caller sets a
    /// count, a duration or a file.
    pub fn of_size(size_bytes: u64) -> TrialSpec {
        TrialSpec {
            trial: 0,
            size_bytes,
            warmup: false,
            count: None,
            duration_ns: None,
            min_duration_ns: None,
            rate_msgs_s: None,
            source_file: None,
            drop_cache: false,
        }
    }
}

#[cfg(test)]
impl Params {
    /// A session of `pattern` over plain TCP, one message outstanding, up to `max_size_bytes`,
    /// with `timeout` for data and for the wait between trials alike.
    pub fn tcp(pattern: Pattern, max_size_bytes: u64, timeout: std::time::Duration) -> Params {
        Params {
            pattern,
            protocol: Protocol::Tcp,
            depth: 1,
            max_size_bytes,
            timeout_ms: timeout.as_millis() as u64,
            idle_timeout_ms: timeout.as_millis() as u64,
            udp_port: None,
        }
    }
}

/// What the serving side saw during one trial, returned so the client can write both records.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct TrialReport {
    pub messages: u64,
    pub bytes: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub elapsed_ns: u64,
    pub local_addr: String,
    pub peer_addr: String,
    pub error: Option<String>,
    /// The receiver's longest pause between arrivals, ns (stream; absent from older workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_max_ns: Option<u64>,
    /// Subflows that carried the trial on the server's side (mptcp; absent from older workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u32>,
    /// TCP's counters on the server's side of the connection (tcp; absent from older
    /// workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpCounters>,
    /// Busy CPU time of the server's kernel during the trial, ms (absent from older
    /// workers, or where the kernel will not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_cpu_busy_ms: Option<f64>,
    /// How the payload arrived over the trial, on the server's side (stream; absent from
    /// older workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
}

/// Write one control frame.
pub fn write_frame<T: Serialize>(
    s: &mut TcpStream,
    kind: Kind,
    body: &T,
    version: u16,
    timeout_s: f64,
) -> Result<()> {
    let json = serde_json::to_vec(body).expect("protocol types serialize");
    let mut frame = Vec::with_capacity(HEAD_LEN + json.len());
    frame.extend_from_slice(&MAGIC);
    frame.extend_from_slice(&version.to_be_bytes());
    frame.push(kind as u8);
    frame.extend_from_slice(&(json.len() as u32).to_be_bytes());
    frame.extend_from_slice(&json);
    s.write_all(&frame)
        .map_err(|e| WorkerError::io(e, format!("sending {kind:?}"), timeout_s))
}

/// A received frame before its body is decoded.
pub struct Frame {
    pub kind: Kind,
    pub version: u16,
    pub body: Vec<u8>,
}

impl Frame {
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.body)
            .map_err(|e| WorkerError::Protocol(format!("malformed {:?} frame: {e}", self.kind)))
    }

    /// Fail with the peer's message if this is an error frame, or if it is not `want`.
    pub fn expect(self, want: Kind) -> Result<Frame> {
        if self.kind == Kind::Error {
            let msg = self
                .decode::<ErrorMsg>()
                .map(|m| m.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&self.body).into_owned());
            return Err(WorkerError::Remote(msg));
        }
        if self.kind != want {
            return Err(WorkerError::Protocol(format!(
                "expected a {want:?} frame, got {:?}",
                self.kind
            )));
        }
        Ok(self)
    }
}

/// A frame's header, checked.
pub struct Head {
    pub kind: Kind,
    pub version: u16,
    pub len: usize,
}

/// Checks a frame header: garbage (wrong magic, unknown kind, a body over `max`) is an error,
/// and so is a version other than `version` unless the frame is an error report, which is
/// always readable so a mismatched peer can say why it hangs up.
pub fn parse_head(head: &[u8; HEAD_LEN], version: u16, during: &str, max: usize) -> Result<Head> {
    if head[..4] != MAGIC {
        return Err(WorkerError::Protocol(format!(
            "{during}: not an orchestrate-worker peer (got bytes {})",
            hex(head)
        )));
    }
    let peer_version = u16::from_be_bytes([head[4], head[5]]);
    let kind = Kind::from_u8(head[6]).ok_or_else(|| {
        WorkerError::Protocol(format!("{during}: unknown frame kind {}", head[6]))
    })?;
    let len = u32::from_be_bytes([head[7], head[8], head[9], head[10]]) as usize;
    if len > max {
        return Err(WorkerError::Protocol(format!(
            "{during}: frame of {len} bytes exceeds the {max}-byte limit"
        )));
    }
    if peer_version != version && kind != Kind::Error {
        return Err(version_mismatch(version, peer_version));
    }
    Ok(Head {
        kind,
        version: peer_version,
        len,
    })
}

pub fn version_mismatch(ours: u16, theirs: u16) -> WorkerError {
    WorkerError::Protocol(format!(
        "protocol version mismatch: this side speaks v{ours}, the peer v{theirs}; \
         install the same orchestrate-worker on every node"
    ))
}

/// Read one control frame of at most [`MAX_FRAME`] bytes (see [`parse_head`]).
pub fn read_frame(s: &mut TcpStream, version: u16, during: &str, timeout_s: f64) -> Result<Frame> {
    let mut head = [0u8; HEAD_LEN];
    read_full(s, &mut head, during, timeout_s)?;
    let h = parse_head(&head, version, during, MAX_FRAME)?;
    let mut body = vec![0u8; h.len];
    read_full(s, &mut body, during, timeout_s)?;
    Ok(Frame {
        kind: h.kind,
        version: h.version,
        body,
    })
}

/// `read_exact` that reports a clean close as such.
pub fn read_full(s: &mut impl Read, buf: &mut [u8], during: &str, timeout_s: f64) -> Result<()> {
    s.read_exact(buf)
        .map_err(|e| WorkerError::io(e, during.to_string(), timeout_s))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Check parameters any peer sends before anything is allocated for them.
pub fn validate(p: &Params) -> std::result::Result<(), String> {
    let max = if p.protocol == Protocol::Udp {
        MAX_UDP_SIZE
    } else {
        MAX_SIZE
    };
    if p.pattern.is_collective() {
        return Err(format!(
            "{} is a collective: its ranks connect to each other, not to a server",
            p.pattern.as_str()
        ));
    }
    if p.pattern == Pattern::Filecopy {
        if p.max_size_bytes > MAX_FILE {
            return Err(format!("file size {} exceeds {MAX_FILE}", p.max_size_bytes));
        }
    } else if p.max_size_bytes == 0 || p.max_size_bytes > max {
        return Err(format!(
            "message size {} outside 1..={max} bytes",
            p.max_size_bytes
        ));
    }
    if p.depth == 0 {
        return Err("depth must be at least 1".into());
    }
    if p.pattern == Pattern::Pipeline
        && p.depth > 1
        && u64::from(p.depth) * p.max_size_bytes > MAX_PIPELINE_BYTES
    {
        return Err(format!(
            "depth {} × size {} exceeds {MAX_PIPELINE_BYTES} bytes in flight",
            p.depth, p.max_size_bytes
        ));
    }
    if p.protocol == Protocol::Udp
        && !matches!(
            p.pattern,
            Pattern::Pingpong | Pattern::Token | Pattern::Load
        )
    {
        return Err(format!("{:?} runs over TCP or MPTCP only", p.pattern).to_lowercase());
    }
    if p.protocol == Protocol::Udp && p.udp_port.is_none() {
        return Err("UDP session without the client's UDP port".into());
    }
    if p.pattern == Pattern::Load && p.max_size_bytes < LOAD_HEADER as u64 {
        return Err(format!("load messages need at least {LOAD_HEADER} bytes"));
    }
    if p.timeout_ms == 0 || p.idle_timeout_ms == 0 {
        return Err("timeouts must be positive".into());
    }
    Ok(())
}

/// Bytes of sequence number and schedule time at the start of every `load` message.
pub const LOAD_HEADER: usize = 16;
