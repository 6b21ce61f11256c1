//! The door of `serve`: accepts connections on every listening address, challenges each with
//! a fresh nonce, and lets through only those that prove the run's secret ([`crate::auth`]).
//!
//! A connection that has not proved itself costs no thread and no session buffer: one loop
//! polls all of them, and each holds only its socket, its nonce and at most
//! [`protocol::HEAD_LEN`] + [`protocol::MAX_AUTH_FRAME`] bytes of what it sent. Bounds:
//!
//! - a connection must prove itself within the authentication timeout (0.8 s by default) from
//!   its accept, or it is closed: a deadline on the whole exchange, so a peer that trickles
//!   one byte at a time gains nothing;
//! - wrong proofs, garbage, oversized frames, other frame kinds and other versions are refused
//!   at the first byte that shows them, with a one-line reason and the connection closed;
//! - at most `max_pending` connections wait for their proof at once; one more evicts the
//!   oldest waiting one rather than being turned away, so a flood of strangers can delay a
//!   real client only by opening more than `max_pending` connections within the few
//!   milliseconds the client takes to answer its challenge.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::auth::{Nonce, Secret};
use crate::error::WorkerError;
use crate::protocol::{self, Auth, Challenge, ErrorMsg, HEAD_LEN, Kind, MAX_AUTH_FRAME};

/// How the door is kept.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub secret: Secret,
    /// Time from accept to a verified proof.
    pub auth_timeout: Duration,
    /// Connections waiting for their proof at most.
    pub max_pending: usize,
    pub version: u16,
}

/// A connection that proved the secret, with the proof the server owes it in return.
pub struct Admitted {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// The server's proof for this connection's nonces, hex, for the welcome.
    pub server_proof: String,
}

/// A refusal, for the log.
pub struct Refused {
    pub peer: SocketAddr,
    pub reason: String,
}

/// What the door did since it was last asked.
pub enum Admission {
    Admitted(Admitted),
    Refused(Refused),
}

/// A connection waiting for its proof.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    nonce: Nonce,
    deadline: Instant,
    /// What it sent so far: the frame header, then the body once the header says how long.
    got: Vec<u8>,
}

pub struct Gate {
    listeners: Vec<TcpListener>,
    pending: VecDeque<Pending>,
    events: VecDeque<Admission>,
    opts: GateOptions,
}

/// Longest sleep in one poll, so a shutdown request is seen soon: `serve` notices SIGTERM
/// within this long.
pub const POLL_MS: i32 = 200;
/// Connections accepted from one listener in one round, so one busy address cannot starve
/// the others or the connections already waiting.
const ACCEPTS_PER_ROUND: usize = 64;

impl Gate {
    /// The listeners must be bound; they are made non-blocking here.
    pub fn new(listeners: Vec<TcpListener>, opts: GateOptions) -> std::io::Result<Gate> {
        for l in &listeners {
            l.set_nonblocking(true)?;
        }
        Ok(Gate {
            listeners,
            pending: VecDeque::new(),
            events: VecDeque::new(),
            opts,
        })
    }

    /// Connections still waiting for their proof.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The next admission or refusal; `None` if nothing happened within about `POLL_MS`
    /// (so the caller can check for shutdown).
    pub fn poll(&mut self) -> Option<Admission> {
        if self.events.is_empty() {
            self.round();
        }
        self.events.pop_front()
    }

    /// One poll over the listeners and every waiting connection.
    fn round(&mut self) {
        let mut fds: Vec<libc::pollfd> = self
            .listeners
            .iter()
            .map(|l| l.as_raw_fd())
            .chain(self.pending.iter().map(|p| p.stream.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let wait = self
            .pending
            .iter()
            .map(|p| p.deadline)
            .min()
            .map_or(POLL_MS, |d| {
                let left = d.saturating_duration_since(Instant::now()).as_millis();
                (left as i32 + 1).min(POLL_MS)
            });
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
        if n > 0 {
            let (listening, waiting) = fds.split_at(self.listeners.len());
            let readable: Vec<bool> = waiting.iter().map(|f| f.revents != 0).collect();
            self.advance(&readable);
            for (i, f) in listening.iter().enumerate() {
                if f.revents != 0 {
                    self.accept(i);
                }
            }
        }
        self.expire();
    }

    /// Reads what the readable waiting connections sent; admits or refuses those that are
    /// complete.
    fn advance(&mut self, readable: &[bool]) {
        let mut still = VecDeque::with_capacity(self.pending.len());
        for (p, ready) in self.pending.drain(..).zip(readable.iter().copied()) {
            if !ready {
                still.push_back(p);
                continue;
            }
            match step(p, &self.opts) {
                Step::Waiting(p) => still.push_back(p),
                Step::Done(e) => self.events.push_back(e),
            }
        }
        // Connections accepted after the poll were not in `readable`.
        self.pending = still;
    }

    fn accept(&mut self, i: usize) {
        for _ in 0..ACCEPTS_PER_ROUND {
            let (stream, peer) = match self.listeners[i].accept() {
                Ok(x) => x,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    // Out of descriptors and the like: give up the oldest waiting connection
                    // so the next round can accept again, and do not spin.
                    if let Some(old) = self.pending.pop_front() {
                        self.refuse(old, "dropped: the server ran out of descriptors");
                    }
                    log_accept_error(&e);
                    std::thread::sleep(Duration::from_millis(20));
                    return;
                }
            };
            if self.pending.len() >= self.opts.max_pending {
                if let Some(old) = self.pending.pop_front() {
                    let why = format!(
                        "evicted: {} connections were waiting to authenticate",
                        self.opts.max_pending
                    );
                    self.refuse(old, &why);
                }
            }
            if let Some(p) = self.challenge(stream, peer) {
                self.pending.push_back(p);
            }
        }
    }

    /// Sends a new connection its nonce. The frame is small enough for any fresh socket's
    /// buffer, so the write never blocks.
    fn challenge(&self, mut stream: TcpStream, peer: SocketAddr) -> Option<Pending> {
        stream.set_nonblocking(true).ok()?;
        let nonce = Nonce::random();
        let body = Challenge {
            nonce: nonce.to_hex(),
        };
        protocol::write_frame(&mut stream, Kind::Challenge, &body, self.opts.version, 0.0).ok()?;
        Some(Pending {
            stream,
            peer,
            nonce,
            deadline: Instant::now() + self.opts.auth_timeout,
            got: Vec::with_capacity(HEAD_LEN),
        })
    }

    /// Closes every waiting connection whose time is up.
    fn expire(&mut self) {
        let now = Instant::now();
        while let Some(i) = self.pending.iter().position(|p| p.deadline <= now) {
            let p = self.pending.remove(i).expect("index from position");
            let why = format!(
                "no valid authentication within {:.1} s",
                self.opts.auth_timeout.as_secs_f64()
            );
            self.refuse(p, &why);
        }
    }

    fn refuse(&mut self, p: Pending, reason: &str) {
        self.events.push_back(refusal(p, reason, self.opts.version));
    }
}

enum Step {
    Waiting(Pending),
    Done(Admission),
}

/// Reads what a waiting connection has sent, never past the end of its `Auth` frame (the
/// `Hello` behind it is the session's to read).
fn step(mut p: Pending, opts: &GateOptions) -> Step {
    loop {
        let want = match wanted(&p.got, opts.version) {
            Ok(0) => return Step::Done(verify(p, opts)),
            Ok(n) => n,
            Err(e) => return Step::Done(refusal(p, &e.to_string(), opts.version)),
        };
        let mut buf = [0u8; HEAD_LEN + MAX_AUTH_FRAME];
        match p.stream.read(&mut buf[..want]) {
            Ok(0) => {
                let reason = "closed the connection before authenticating";
                return Step::Done(refusal(p, reason, opts.version));
            }
            Ok(n) => p.got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Waiting(p),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Step::Done(refusal(p, &e.to_string(), opts.version)),
        }
    }
}

/// Bytes still missing from the `Auth` frame (0: complete), or why it can be no such frame.
fn wanted(got: &[u8], version: u16) -> Result<usize, WorkerError> {
    if got.len() < HEAD_LEN {
        return Ok(HEAD_LEN - got.len());
    }
    let head: &[u8; HEAD_LEN] = got[..HEAD_LEN].try_into().expect("HEAD_LEN bytes");
    let during = "authenticating";
    let h = protocol::parse_head(head, version, during, MAX_AUTH_FRAME)?;
    if h.kind != Kind::Auth {
        return Err(WorkerError::Protocol(format!(
            "{during}: expected an Auth frame, got {:?}",
            h.kind
        )));
    }
    Ok(HEAD_LEN + h.len - got.len())
}

/// Checks a complete `Auth` frame.
fn verify(p: Pending, opts: &GateOptions) -> Admission {
    let auth: Option<Auth> = serde_json::from_slice(&p.got[HEAD_LEN..]).ok();
    let checked = auth.and_then(|a| {
        let client = Nonce::from_hex(&a.nonce)?;
        let proof = crate::auth::decode32(&a.proof)?;
        let ok = opts.secret.verify_client(&p.nonce, &client, &proof);
        ok.then_some(client)
    });
    let Some(client) = checked else {
        let reason = "authentication failed: the proof does not match this server's secret \
                      (is the client's ORCHESTRATE_WORKER_SECRET the same?)";
        return refusal(p, reason, opts.version);
    };
    if p.stream.set_nonblocking(false).is_err() {
        return refusal(p, "cannot make the socket blocking", opts.version);
    }
    Admission::Admitted(Admitted {
        server_proof: hex::encode(opts.secret.server_proof(&p.nonce, &client)),
        stream: p.stream,
        peer: p.peer,
    })
}

/// Tells the peer why (best effort, never blocking) and closes the connection.
fn refusal(mut p: Pending, reason: &str, version: u16) -> Admission {
    let msg = ErrorMsg {
        error: reason.to_owned(),
    };
    let _ = p.stream.set_nonblocking(true);
    let _ = protocol::write_frame(&mut p.stream, Kind::Error, &msg, version, 0.0);
    Admission::Refused(Refused {
        peer: p.peer,
        reason: reason.to_owned(),
    })
}

fn log_accept_error(e: &std::io::Error) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "orchestrate-worker serve: accept failed: {e}"
    );
}
