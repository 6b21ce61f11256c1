//! The ranks' connections, all to all: each rank connects to every rank before it and
//! accepts every rank after it. Both ends prove they hold the run's secret ([`crate::auth`])
//! before a connection is kept: the accepting rank sends a fresh nonce, the connecting one
//! answers with its rank, its own nonce and its proof, the accepting one with its proof. A
//! connection from anyone else (a wrong proof, a rank out of range or already connected) is
//! closed and the rank goes on accepting.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::world::World;
use crate::auth::{LEN, Nonce, Secret};
use crate::error::{Result, WorkerError};

/// What an accepting rank sends first, before its nonce: the mode and its version.
const GREETING: &[u8; 10] = b"orchrank\x00\x01";
/// The connecting rank's answer: its rank and the world's size (u32 each), nonce, proof.
const HELLO_LEN: usize = 8 + 2 * LEN;

/// Connections to every other rank, indexed by rank (`None` at this rank's own place).
pub fn connect_all(
    world: World,
    listen: &[String],
    peers: &[String],
    secret: &Secret,
    within: Duration,
) -> Result<Vec<Option<TcpStream>>> {
    let deadline = Instant::now() + within;
    let listeners = listen
        .iter()
        .map(|a| {
            let l = TcpListener::bind(a.as_str())
                .map_err(|e| WorkerError::io(e, format!("listening on {a}"), 0.0))?;
            l.set_nonblocking(true)
                .map_err(|e| WorkerError::io(e, format!("listening on {a}"), 0.0))?;
            Ok(l)
        })
        .collect::<Result<Vec<_>>>()?;
    let later = world.size - world.rank - 1;
    let acceptor = {
        let secret = secret.clone();
        std::thread::spawn(move || accept_later(world, &listeners, later, &secret, deadline))
    };
    let mut links: Vec<Option<TcpStream>> = (0..world.size).map(|_| None).collect();
    let mut failure = None;
    for (j, addr) in peers.iter().enumerate().take(world.rank) {
        match connect_one(world, j, addr, secret, deadline) {
            Ok(s) => links[j] = Some(s),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let accepted = acceptor
        .join()
        .map_err(|_| WorkerError::Protocol("the accepting thread panicked".into()))?;
    if let Some(e) = failure {
        return Err(e);
    }
    for (j, s) in accepted? {
        links[j] = Some(s);
    }
    Ok(links)
}

/// Connects to rank `j` at `addr`, retrying while it is not listening yet.
fn connect_one(
    world: World,
    j: usize,
    addr: &str,
    secret: &Secret,
    deadline: Instant,
) -> Result<TcpStream> {
    let during = format!("rank {} connecting to rank {j} at {addr}", world.rank);
    let target: SocketAddr = addr
        .to_socket_addrs()
        .map_err(|e| WorkerError::io(e, during.clone(), 0.0))?
        .next()
        .ok_or_else(|| WorkerError::Usage(format!("{addr} names no address")))?;
    let mut stream = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(WorkerError::Timeout {
                during,
                after_s: 0.0,
            });
        }
        match TcpStream::connect_timeout(&target, left) {
            Ok(s) => break s,
            // Not listening yet: the ranks are started one after another.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(WorkerError::io(e, during, left.as_secs_f64())),
        }
    };
    set_deadline(&stream, deadline).map_err(|e| WorkerError::io(e, during.clone(), 0.0))?;
    let mut greeting = [0u8; GREETING.len() + LEN];
    read(&mut stream, &mut greeting, &during)?;
    if &greeting[..GREETING.len()] != GREETING {
        return Err(WorkerError::Protocol(format!(
            "{during}: not a rank of this worker's version there"
        )));
    }
    let theirs = Nonce(greeting[GREETING.len()..].try_into().expect("a nonce"));
    let ours = Nonce::random();
    let mut hello = Vec::with_capacity(HELLO_LEN);
    hello.extend_from_slice(&(world.rank as u32).to_le_bytes());
    hello.extend_from_slice(&(world.size as u32).to_le_bytes());
    hello.extend_from_slice(&ours.0);
    hello.extend_from_slice(&secret.client_proof(&theirs, &ours));
    stream
        .write_all(&hello)
        .map_err(|e| WorkerError::io(e, during.clone(), 0.0))?;
    let mut proof = [0u8; LEN];
    // The other closes without a word on a proof it does not accept.
    if stream.read_exact(&mut proof).is_err() {
        return Err(WorkerError::Protocol(format!(
            "{during}: it did not accept this rank's proof (another run's secret, or a world \
             of another size)"
        )));
    }
    if !secret.verify_server(&theirs, &ours, &proof) {
        return Err(WorkerError::Protocol(format!(
            "{during}: it did not prove it holds the run's secret"
        )));
    }
    Ok(stream)
}

/// Accepts the `count` ranks after this one.
fn accept_later(
    world: World,
    listeners: &[TcpListener],
    count: usize,
    secret: &Secret,
    deadline: Instant,
) -> Result<Vec<(usize, TcpStream)>> {
    let mut got: Vec<(usize, TcpStream)> = Vec::with_capacity(count);
    while got.len() < count {
        if Instant::now() >= deadline {
            let missing: Vec<String> = (world.rank + 1..world.size)
                .filter(|r| !got.iter().any(|(g, _)| g == r))
                .map(|r| r.to_string())
                .collect();
            return Err(WorkerError::Timeout {
                during: format!(
                    "rank {} waiting for ranks {} to connect",
                    world.rank,
                    missing.join(", ")
                ),
                after_s: 0.0,
            });
        }
        let mut accepted = false;
        for l in listeners {
            match l.accept() {
                Ok((mut s, _)) => {
                    accepted = true;
                    // A stranger or a duplicate is dropped; the rank keeps accepting.
                    if let Some(rank) = admit(world, &mut s, secret, deadline)
                        .filter(|r| !got.iter().any(|(g, _)| g == r))
                    {
                        got.push((rank, s));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(WorkerError::io(e, "accepting a rank", 0.0)),
            }
        }
        if !accepted {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(got)
}

/// The rank of a connecting rank that proved the secret, if it did.
fn admit(world: World, s: &mut TcpStream, secret: &Secret, deadline: Instant) -> Option<usize> {
    s.set_nonblocking(false).ok()?;
    // A silent stranger may hold up the accepting for a second, not until the deadline.
    let short = deadline.min(Instant::now() + Duration::from_secs(1));
    set_deadline(s, short).ok()?;
    let ours = Nonce::random();
    let mut greeting = GREETING.to_vec();
    greeting.extend_from_slice(&ours.0);
    s.write_all(&greeting).ok()?;
    let mut hello = [0u8; HELLO_LEN];
    s.read_exact(&mut hello).ok()?;
    let rank = u32::from_le_bytes(hello[0..4].try_into().ok()?) as usize;
    let size = u32::from_le_bytes(hello[4..8].try_into().ok()?) as usize;
    let theirs = Nonce(hello[8..8 + LEN].try_into().ok()?);
    if !secret.verify_client(&ours, &theirs, &hello[8 + LEN..]) {
        return None;
    }
    if size != world.size || rank <= world.rank || rank >= world.size {
        return None;
    }
    s.write_all(&secret.server_proof(&ours, &theirs)).ok()?;
    Some(rank)
}

fn set_deadline(s: &TcpStream, deadline: Instant) -> std::io::Result<()> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    s.set_read_timeout(Some(left))?;
    s.set_write_timeout(Some(left))
}

fn read(s: &mut TcpStream, buf: &mut [u8], during: &str) -> Result<()> {
    s.read_exact(buf)
        .map_err(|e| WorkerError::io(e, during.to_owned(), 0.0))
}
