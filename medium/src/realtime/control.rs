//! The emulator's control socket: a Unix socket in the cluster's directory (mode 0600, in a
//! directory only root can enter), one request per connection, one JSON answer. It is how the
//! runner reads a segment's statistics around each point, and how `up` knows the emulator is
//! ready.
//!
//! Requests are a single line: `interval` (statistics since the previous `interval`, which
//! starts a new one), `total` (since the emulator started), `ping` (answered `pong PID`).
//! Anything else is answered `unknown request "…"` (bytes that are not UTF-8 shown as U+FFFD).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::HostCounters;
use crate::stats::SegmentReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Interval,
    Total,
    Ping,
}

impl Request {
    fn as_str(self) -> &'static str {
        match self {
            Request::Interval => "interval",
            Request::Total => "total",
            Request::Ping => "ping",
        }
    }

    fn parse(s: &str) -> Option<Request> {
        match s.trim() {
            "interval" => Some(Request::Interval),
            "total" => Some(Request::Total),
            "ping" => Some(Request::Ping),
            _ => None,
        }
    }
}

/// One node's CPU over the interval (only nodes with host costs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    pub node: String,
    #[serde(flatten)]
    pub counters: HostCounters,
}

/// The answer to `interval` and `total`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub segments: Vec<SegmentReport>,
    pub hosts: Vec<HostReport>,
    /// Whether the emulator's thread runs SCHED_FIFO (it tries; lateness is worse without).
    pub realtime_priority: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("the medium emulator's control socket {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the medium emulator answered {request:?} with something unreadable: {detail}")]
    Answer {
        request: &'static str,
        detail: String,
    },
}

/// The process id of the emulator behind `socket`, if one answers.
pub fn ping(socket: &Path) -> Result<u32, ControlError> {
    let answer = exchange(socket, Request::Ping)?;
    answer
        .trim()
        .strip_prefix("pong ")
        .and_then(|pid| pid.parse().ok())
        .ok_or_else(|| ControlError::Answer {
            request: Request::Ping.as_str(),
            detail: answer,
        })
}

/// Asks the emulator behind `socket` for statistics (`None` for `ping`, see [`ping`]).
pub fn query(socket: &Path, request: Request) -> Result<Option<Snapshot>, ControlError> {
    if request == Request::Ping {
        ping(socket)?;
        return Ok(None);
    }
    let answer = exchange(socket, request)?;
    serde_json::from_str(&answer)
        .map(Some)
        .map_err(|e| ControlError::Answer {
            request: request.as_str(),
            detail: e.to_string(),
        })
}

fn exchange(socket: &Path, request: Request) -> Result<String, ControlError> {
    let io = |source| ControlError::Io {
        path: socket.display().to_string(),
        source,
    };
    let mut s = UnixStream::connect(socket).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(io)?;
    s.write_all(format!("{}\n", request.as_str()).as_bytes())
        .map_err(io)?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(io)?;
    Ok(answer)
}

/// Binds the control socket, readable and writable by its owner only from the moment it
/// exists (the process umask is narrowed around the bind, not the file chmod-ed after, which
/// would follow a symlink put in its place).
pub fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    match std::fs::symlink_metadata(socket) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(socket)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", socket.display()),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // SAFETY: umask only changes this process's file creation mask; restored below.
    let old = unsafe { libc::umask(0o177) };
    let listener = UnixListener::bind(socket);
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    listener
}

/// Answers requests until the listener fails; `answer` builds the reply to each.
pub fn serve(listener: UnixListener, answer: impl Fn(Request) -> Snapshot) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        // Read as bytes: a request that is not text is refused by name like any other
        // unknown one, rather than left unanswered.
        let mut bytes = Vec::new();
        if BufReader::new(&conn).read_until(b'\n', &mut bytes).is_err() {
            continue;
        }
        let line = String::from_utf8_lossy(&bytes);
        let reply = match Request::parse(&line) {
            Some(Request::Ping) => format!("pong {}", std::process::id()),
            Some(r) => serde_json::to_string(&answer(r)).expect("snapshots serialize"),
            None => format!("unknown request {:?}", line.trim()),
        };
        let _ = conn.write_all(reply.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_gets_the_servers_snapshot_and_the_socket_is_private() {
        let dir = tempfile_dir();
        let path = dir.join("medium.sock");
        let listener = bind(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::thread::spawn(move || {
            serve(listener, |r| Snapshot {
                segments: Vec::new(),
                hosts: vec![HostReport {
                    node: format!("{r:?}"),
                    counters: HostCounters::default(),
                }],
                realtime_priority: false,
            })
        });
        assert_eq!(ping(&path).unwrap(), std::process::id());
        assert_eq!(query(&path, Request::Ping).unwrap(), None);
        let s = query(&path, Request::Interval).unwrap().unwrap();
        assert_eq!(s.hosts[0].node, "Interval");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("medium-control-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
