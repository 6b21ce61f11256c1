//! The worker's one error type: every failure becomes a message that says what failed, where,
//! and, when it is a peer's fault, what the peer did.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum WorkerError {
    /// The peer did not answer within the socket timeout.
    Timeout { during: String, after_s: f64 },
    /// The peer closed the connection or reset it.
    PeerGone { during: String, detail: String },
    /// Any other I/O failure.
    Io { during: String, source: io::Error },
    /// The peer spoke, but not our protocol (garbage, wrong version, bad frame).
    Protocol(String),
    /// The peer reported an error of its own.
    Remote(String),
    /// Parameters that cannot be run.
    Usage(String),
}

pub type Result<T> = std::result::Result<T, WorkerError>;

impl WorkerError {
    /// Classify an I/O error from a socket operation; `timeout_s` is the timeout that was set.
    pub fn io(e: io::Error, during: impl Into<String>, timeout_s: f64) -> Self {
        let during = during.into();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => WorkerError::Timeout {
                during,
                after_s: timeout_s,
            },
            io::ErrorKind::UnexpectedEof => WorkerError::PeerGone {
                during,
                detail: "peer closed the connection".into(),
            },
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => WorkerError::PeerGone {
                during,
                detail: format!("connection lost ({e})"),
            },
            io::ErrorKind::ConnectionRefused => WorkerError::PeerGone {
                during,
                detail: "connection refused (is `orchestrate-worker serve` running there?)".into(),
            },
            _ => WorkerError::Io { during, source: e },
        }
    }

    pub fn closed(during: impl Into<String>) -> Self {
        WorkerError::PeerGone {
            during: during.into(),
            detail: "peer closed the connection".into(),
        }
    }
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerError::Timeout { during, after_s } => write!(
                f,
                "timed out after {after_s:.1} s {during}: the peer is dead, stalled or unreachable"
            ),
            WorkerError::PeerGone { during, detail } => write!(f, "{detail} {during}"),
            WorkerError::Io { during, source } => write!(f, "I/O error {during}: {source}"),
            WorkerError::Protocol(m) => write!(f, "protocol error: {m}"),
            WorkerError::Remote(m) => write!(f, "peer reported: {m}"),
            WorkerError::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for WorkerError {}
