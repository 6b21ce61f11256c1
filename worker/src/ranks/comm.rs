//! A rank's connections to the others and the one way collectives use them: post sends and
//! receives, then complete them all together (MPI's `Isend`, `Irecv`, `Waitall`). Every
//! socket is non-blocking; completion writes and reads whatever each can take and otherwise
//! waits in `poll(2)` for any of them, so two ranks sending each other more than their socket
//! buffers hold never deadlock.
//!
//! Between one pair of ranks there is one connection, and messages on it are plain bytes with
//! no header: both sides know the sequence. Operations on one connection in one direction
//! therefore complete in the order they were posted, and the receiving side must post its
//! receives in the order the other posted its sends.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::world::World;
use crate::error::{Result, WorkerError};

/// Which of a rank's buffers an operation reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    Send,
    Recv,
    Scratch,
    /// Sixteen bytes of the rank's own: barrier tokens and the iteration count.
    Control,
}

/// The lengths of the buffers one iteration of a collective at a message size uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferLens {
    pub send: usize,
    pub recv: usize,
    pub scratch: usize,
}

/// The buffers of one rank, sized per message size before the timed loop.
#[derive(Debug, Default)]
pub struct Bufs {
    pub send: Vec<u8>,
    pub recv: Vec<u8>,
    pub scratch: Vec<u8>,
    pub control: [u8; 16],
}

impl Bufs {
    /// Buffers of these lengths, zeroed.
    pub fn new(lens: BufferLens) -> Bufs {
        Bufs {
            send: vec![0; lens.send],
            recv: vec![0; lens.recv],
            scratch: vec![0; lens.scratch],
            control: [0; 16],
        }
    }

    fn get(&self, b: Buf) -> &[u8] {
        match b {
            Buf::Send => &self.send,
            Buf::Recv => &self.recv,
            Buf::Scratch => &self.scratch,
            Buf::Control => &self.control,
        }
    }

    fn get_mut(&mut self, b: Buf) -> &mut [u8] {
        match b {
            Buf::Send => &mut self.send,
            Buf::Recv => &mut self.recv,
            Buf::Scratch => &mut self.scratch,
            Buf::Control => &mut self.control,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Send,
    Recv,
}

/// One posted operation and how far it has got.
#[derive(Debug, Clone)]
struct Posted {
    peer: usize,
    dir: Dir,
    buf: Buf,
    range: Range<usize>,
    done: usize,
}

impl Posted {
    fn complete(&self) -> bool {
        self.done == self.range.len()
    }
}

/// This rank's connections, indexed by the other's rank, and its posted operations.
pub struct Comm {
    pub world: World,
    links: Vec<Option<TcpStream>>,
    posted: Vec<Posted>,
    polls: Vec<libc::pollfd>,
    /// How long completion may wait with nothing moving before the peers are called gone.
    timeout: Duration,
    sent_bytes: u64,
}

impl Comm {
    /// A communicator over `links` (one per other rank, `None` at this rank's own place),
    /// every one made non-blocking and without Nagle's delay.
    pub fn new(world: World, links: Vec<Option<TcpStream>>, timeout: Duration) -> Result<Comm> {
        for s in links.iter().flatten() {
            s.set_nonblocking(true)
                .and_then(|()| s.set_nodelay(true))
                .map_err(|e| WorkerError::io(e, "preparing a rank's connection", 0.0))?;
        }
        Ok(Comm {
            world,
            posted: Vec::with_capacity(2 * world.size + 2),
            polls: Vec::with_capacity(2 * world.size + 2),
            links,
            timeout,
            sent_bytes: 0,
        })
    }

    /// The connection to each other rank, for its counters.
    pub fn links(&self) -> impl Iterator<Item = &TcpStream> {
        self.links.iter().flatten()
    }

    /// Payload bytes sent since the last call, and the count restarted.
    pub fn take_sent(&mut self) -> u64 {
        std::mem::take(&mut self.sent_bytes)
    }

    /// Posts a send of `range` of `buf` to `peer`.
    pub fn send(&mut self, peer: usize, buf: Buf, range: Range<usize>) {
        self.post(peer, Dir::Send, buf, range);
    }

    /// Posts a receive from `peer` into `range` of `buf`.
    pub fn recv(&mut self, peer: usize, buf: Buf, range: Range<usize>) {
        self.post(peer, Dir::Recv, buf, range);
    }

    fn post(&mut self, peer: usize, dir: Dir, buf: Buf, range: Range<usize>) {
        assert!(
            peer != self.world.rank && peer < self.world.size,
            "rank {} posted an operation with rank {peer} of {}",
            self.world.rank,
            self.world.size
        );
        self.posted.push(Posted {
            peer,
            dir,
            buf,
            range,
            done: 0,
        });
    }

    /// Completes every posted operation. An error names the peer and what was under way.
    pub fn complete(&mut self, bufs: &mut Bufs) -> Result<()> {
        let mut last_progress = Instant::now();
        loop {
            self.polls.clear();
            let mut progressed = false;
            for i in 0..self.posted.len() {
                if self.posted[i].complete() || self.waits_behind(i) {
                    continue;
                }
                let before = self.posted[i].done;
                let blocked = self.advance(i, bufs)?;
                progressed |= self.posted[i].done > before;
                if blocked {
                    let p = &self.posted[i];
                    let fd = self.links[p.peer].as_ref().expect("a link").as_raw_fd();
                    let events = match p.dir {
                        Dir::Send => libc::POLLOUT,
                        Dir::Recv => libc::POLLIN,
                    };
                    self.polls.push(libc::pollfd {
                        fd,
                        events,
                        revents: 0,
                    });
                }
            }
            if self.posted.iter().all(Posted::complete) {
                self.posted.clear();
                return Ok(());
            }
            if progressed {
                last_progress = Instant::now();
                // Another pass: an operation queued behind one that just completed may go.
                if self.polls.is_empty() {
                    continue;
                }
            }
            let left = self.timeout.saturating_sub(last_progress.elapsed());
            if left.is_zero() {
                return Err(self.stalled());
            }
            self.wait(left)?;
        }
    }

    /// Whether operation `i` must wait for an earlier one on the same connection and in the
    /// same direction.
    fn waits_behind(&self, i: usize) -> bool {
        let p = &self.posted[i];
        self.posted[..i]
            .iter()
            .any(|q| q.peer == p.peer && q.dir == p.dir && !q.complete())
    }

    /// Moves operation `i` on as far as its socket allows; whether it is now blocked.
    fn advance(&mut self, i: usize, bufs: &mut Bufs) -> Result<bool> {
        let rank = self.world.rank;
        let p = &mut self.posted[i];
        let mut stream = self.links[p.peer].as_ref().expect("a link to every peer");
        while p.done < p.range.len() {
            let at = p.range.start + p.done..p.range.end;
            let r = match p.dir {
                Dir::Send => stream.write(&bufs.get(p.buf)[at]),
                Dir::Recv => stream.read(&mut bufs.get_mut(p.buf)[at]),
            };
            match r {
                Ok(0) => {
                    return Err(WorkerError::closed(format!(
                        "rank {rank} {} rank {}",
                        what(p.dir),
                        p.peer
                    )));
                }
                Ok(n) => {
                    p.done += n;
                    if p.dir == Dir::Send && p.buf != Buf::Control {
                        self.sent_bytes += n as u64;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let during = format!("rank {rank} {} rank {}", what(p.dir), p.peer);
                    return Err(WorkerError::io(e, during, 0.0));
                }
            }
        }
        Ok(false)
    }

    fn wait(&mut self, left: Duration) -> Result<()> {
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `polls` is a valid array of pollfds for the duration of the call.
        let rc = unsafe { libc::poll(self.polls.as_mut_ptr(), self.polls.len() as _, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != ErrorKind::Interrupted {
                return Err(WorkerError::io(e, "waiting on the ranks' connections", 0.0));
            }
        }
        Ok(())
    }

    /// The error for operations that made no progress for the whole timeout.
    fn stalled(&self) -> WorkerError {
        let waiting: Vec<String> = self
            .posted
            .iter()
            .filter(|p| !p.complete())
            .map(|p| {
                format!(
                    "{} rank {} ({} of {} bytes)",
                    what(p.dir),
                    p.peer,
                    p.done,
                    p.range.len()
                )
            })
            .collect();
        WorkerError::Timeout {
            during: format!("rank {}: {}", self.world.rank, waiting.join(", ")),
            after_s: self.timeout.as_secs_f64(),
        }
    }

    /// Returns when every rank has called it: the dissemination barrier, ⌈log₂ N⌉ rounds of
    /// one byte to the rank 2^k after and from the rank 2^k before.
    pub fn barrier(&mut self, bufs: &mut Bufs) -> Result<()> {
        let mut k = 1;
        while k < self.world.size {
            let (to, from) = (self.world.after(k), self.world.before(k));
            self.send(to, Buf::Control, 0..1);
            self.recv(from, Buf::Control, 8..9);
            self.complete(bufs)?;
            k <<= 1;
        }
        Ok(())
    }

    /// Rank 0's `value` at every rank: rank 0 sends it to each other rank directly.
    pub fn share_from_first(&mut self, value: u64, bufs: &mut Bufs) -> Result<u64> {
        if self.world.rank == 0 {
            bufs.control[..8].copy_from_slice(&value.to_le_bytes());
            for peer in 1..self.world.size {
                self.send(peer, Buf::Control, 0..8);
            }
            self.complete(bufs)?;
            Ok(value)
        } else {
            self.recv(0, Buf::Control, 8..16);
            self.complete(bufs)?;
            Ok(u64::from_le_bytes(
                bufs.control[8..16].try_into().expect("8 bytes"),
            ))
        }
    }
}

fn what(d: Dir) -> &'static str {
    match d {
        Dir::Send => "sending to",
        Dir::Recv => "receiving from",
    }
}
