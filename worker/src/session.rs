//! One established session as both sides see it: the TCP connection (control and, for TCP
//! patterns, data), the optional datagram socket, timeouts, and reusable buffers.

use std::net::{TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::{Result, WorkerError};
use crate::protocol::{self, Frame, Kind};

pub struct Conn {
    pub stream: TcpStream,
    pub udp: Option<UdpSocket>,
    /// Timeout of every data and control operation.
    pub timeout: Duration,
    pub version: u16,
    pub local: String,
    pub peer: String,
    /// Session number on the serving side (0 on the client).
    pub session: u64,
    /// Where `filecopy` writes on the serving side (the system temp dir if unset).
    pub spool_dir: Option<PathBuf>,
    /// On the serving side, started just before the trial's acknowledgement went out: the
    /// earliest moment the client may send, which a pattern timed by the server must not
    /// start after ([`Conn::trial_clock`]).
    pub trial_opened: Option<Stopwatch>,
}

impl Conn {
    pub fn new(stream: TcpStream, timeout: Duration, version: u16) -> Result<Conn> {
        let local = stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        // Ping-pong patterns are latency-bound: never let Nagle hold back a small message.
        stream
            .set_nodelay(true)
            .map_err(|e| WorkerError::io(e, "setting TCP_NODELAY", 0.0))?;
        let c = Conn {
            stream,
            udp: None,
            timeout,
            version,
            local,
            peer,
            session: 0,
            spool_dir: None,
            trial_opened: None,
        };
        c.set_timeouts(timeout)?;
        keepalive(&c.stream);
        Ok(c)
    }

    /// The clock of a trial timed on the serving side: the one started before the trial was
    /// acknowledged. Started any later, a server descheduled between its acknowledgement and
    /// its first read would find bytes that arrived before its clock began, and count them in
    /// less time than the wire needed (a stream read 100.5 Mbit/s in its first 10 ms on a
    /// 100 Mbit/s wire that carries 94.1 of payload).
    pub fn trial_clock(&mut self) -> Stopwatch {
        self.trial_opened.take().unwrap_or_else(Stopwatch::start)
    }

    pub fn timeout_s(&self) -> f64 {
        self.timeout.as_secs_f64()
    }

    /// Set the read and write timeout of the TCP (and UDP) socket.
    pub fn set_timeouts(&self, d: Duration) -> Result<()> {
        let set =
            |r: std::io::Result<()>| r.map_err(|e| WorkerError::io(e, "setting timeouts", 0.0));
        set(self.stream.set_read_timeout(Some(d)))?;
        set(self.stream.set_write_timeout(Some(d)))?;
        if let Some(u) = &self.udp {
            set(u.set_read_timeout(Some(d)))?;
            set(u.set_write_timeout(Some(d)))?;
        }
        Ok(())
    }

    pub fn send<T: Serialize>(&mut self, kind: Kind, body: &T) -> Result<()> {
        let t = self.timeout_s();
        protocol::write_frame(&mut self.stream, kind, body, self.version, t)
    }

    /// Read a frame under the current read timeout (`timeout_s` is only for the message).
    pub fn recv(&mut self, during: &str, timeout_s: f64) -> Result<Frame> {
        protocol::read_frame(&mut self.stream, self.version, during, timeout_s)
    }

    pub fn udp(&self) -> Result<&UdpSocket> {
        self.udp
            .as_ref()
            .ok_or_else(|| WorkerError::Protocol("UDP pattern without a UDP socket".into()))
    }
}

/// Probe an idle connection so a peer whose host died is noticed in about 25 s even while
/// waiting at the start barrier (a dead process is noticed at once: its kernel resets).
fn keepalive(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let fd = s.as_raw_fd();
    let set = |level: libc::c_int, opt: libc::c_int, v: libc::c_int| {
        // SAFETY: setsockopt with a valid descriptor and a pointer to an int of the given size.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3);
}

/// Two reusable buffers, grown on demand and never shrunk, so trials allocate nothing once the
/// largest size has been seen.
#[derive(Default)]
pub struct Buffers {
    a: PageAligned,
    b: PageAligned,
}

impl Buffers {
    /// Zeroed slices of the requested lengths (zeroed so no old marker byte survives).
    pub fn get(&mut self, a: usize, b: usize) -> (&mut [u8], &mut [u8]) {
        (self.a.zeroed(a), self.b.zeroed(b))
    }
}

/// A buffer whose data starts on a page boundary, as iperf3's and NetPIPE's do. A large `Vec`
/// from the allocator starts 16 bytes into its page, and the kernel's copies of every message
/// into and out of user space then run misaligned.
#[derive(Default)]
struct PageAligned {
    raw: Vec<u8>,
    start: usize,
}

const PAGE: usize = 4096;

impl PageAligned {
    fn zeroed(&mut self, n: usize) -> &mut [u8] {
        if self.raw.len() < self.start + n {
            self.raw = vec![0; n + PAGE];
            self.start = self.raw.as_ptr().align_offset(PAGE);
        }
        let buf = &mut self.raw[self.start..self.start + n];
        buf.fill(0);
        buf
    }
}

/// Wall-clock nanoseconds since the Unix epoch.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Monotonic interval with wall-clock stamps at both ends.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    t0: Instant,
    wall0: u64,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        let wall0 = unix_ns();
        Stopwatch {
            t0: Instant::now(),
            wall0,
        }
    }

    pub fn instant(&self) -> Instant {
        self.t0
    }

    /// Stop: (start unix ns, end unix ns, elapsed ns from the monotonic clock).
    pub fn stop(&self) -> (u64, u64, u64) {
        let elapsed = self.t0.elapsed().as_nanos() as u64;
        (self.wall0, self.wall0 + elapsed, elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_page_and_come_back_zeroed_at_every_size() {
        let mut b = Buffers::default();
        for (a, c) in [(64, 0), (1 << 20, 100), (3, 5 << 20), (1 << 20, 100)] {
            let (x, y) = b.get(a, c);
            assert_eq!((x.len(), y.len()), (a, c));
            for buf in [&*x, &*y] {
                if !buf.is_empty() {
                    assert_eq!(
                        buf.as_ptr() as usize % PAGE,
                        0,
                        "{} bytes off a page",
                        buf.len()
                    );
                }
                assert!(buf.iter().all(|&v| v == 0), "an old byte survived");
            }
            // What a trial leaves behind, which the next must not see.
            x.fill(0xAB);
            y.fill(0xCD);
        }
    }
}
