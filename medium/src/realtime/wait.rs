//! How the event thread waits between passes, and what wakes it: a port with frames to read,
//! the timer it armed, the control thread's doorbell, or a stop signal.
//!
//! The loop says how long it may sleep ([`Sleep`]) and is told which ports are ready and
//! whether to stop ([`Ready`]); the waiting itself is behind [`Wait`] so that tests drive the
//! loop pass by pass. In production it is one epoll set over the ports' sockets, a timerfd on
//! CLOCK_MONOTONIC, a signalfd for SIGTERM and SIGINT and an eventfd for the doorbell
//! ([`Epolled`]). The loop is generic over it: once a pass, not per frame, but a pass is
//! the unit of the loop's latency.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::time::Nanos;

use super::clock::Timer;

/// How long the loop may sleep before its next pass (a ready port or the doorbell ends any of
/// these sooner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// Something is due now, or the thread is spinning before a delivery: look and return.
    Poll,
    /// Nothing is pending: look again within a few milliseconds.
    Idle,
    /// Until this moment on the event clock.
    Until(Nanos),
}

/// What ended a wait, in the order it was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// The port at this index has frames to read.
    Port(usize),
    /// SIGTERM or SIGINT: the loop returns.
    Stop,
}

pub trait Wait {
    /// Waits as `sleep` allows and puts what woke it in `ready` (cleared first). A timer
    /// firing or the doorbell ringing only ends the wait: they put nothing in `ready`.
    fn wait(&mut self, sleep: Sleep, ready: &mut Vec<Ready>);
    /// Stops watching a port whose interface is gone.
    fn forget(&mut self, port: usize);
}

const TIMER: u64 = u64::MAX;
const SIGNALS: u64 = u64::MAX - 1;
const WAKE: u64 = u64::MAX - 2;
/// How long an idle loop sleeps at most, ms.
const IDLE_MS: i32 = 5;
/// How long the loop sleeps when the timer could not be armed: it polls, ms.
const UNARMED_MS: i32 = 1;

/// The production waiter: one epoll set over every port (its token: the port's index), the
/// timer, the stop signals and the doorbell.
pub struct Epolled {
    epoll: Epoll,
    timer: Timer,
    /// Kept open: closing it would stop the signals from being read.
    _signals: OwnedFd,
    doorbell: Arc<EventFd>,
    port_fds: Vec<RawFd>,
    events: Vec<libc::epoll_event>,
}

impl Epolled {
    /// Watches `port_fds` (by index), a new timer, `signals` (see [`stop_signals`]) and
    /// `doorbell`.
    pub fn new(port_fds: Vec<RawFd>, signals: OwnedFd, doorbell: Arc<EventFd>) -> io::Result<Self> {
        let timer = Timer::new()?;
        let epoll = Epoll::new()?;
        for (i, &fd) in port_fds.iter().enumerate() {
            epoll.add(fd, i as u64)?;
        }
        epoll.add(timer.raw_fd(), TIMER)?;
        epoll.add(signals.as_raw_fd(), SIGNALS)?;
        epoll.add(doorbell.0.as_raw_fd(), WAKE)?;
        let events = vec![libc::epoll_event { events: 0, u64: 0 }; port_fds.len() + 3];
        Ok(Epolled {
            epoll,
            timer,
            _signals: signals,
            doorbell,
            port_fds,
            events,
        })
    }
}

impl Wait for Epolled {
    #[inline]
    fn wait(&mut self, sleep: Sleep, ready: &mut Vec<Ready>) {
        let timeout = match sleep {
            Sleep::Poll => 0,
            Sleep::Idle => IDLE_MS,
            Sleep::Until(at) => {
                if self.timer.arm(at) {
                    -1
                } else {
                    UNARMED_MS
                }
            }
        };
        let n = self.epoll.wait(&mut self.events, timeout);
        ready.clear();
        for ev in &self.events[..n] {
            match ev.u64 {
                TIMER => self.timer.drain(),
                WAKE => self.doorbell.drain(),
                SIGNALS => ready.push(Ready::Stop),
                i => ready.push(Ready::Port(i as usize)),
            }
        }
    }

    fn forget(&mut self, port: usize) {
        self.epoll.remove(self.port_fds[port]);
    }
}

/// Blocks SIGTERM and SIGINT in this thread (and the threads it starts) and returns a
/// signalfd that reads them.
pub fn stop_signals() -> io::Result<OwnedFd> {
    // SAFETY: building and installing a signal mask, then a signalfd for it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGTERM);
        libc::sigaddset(&raw mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &raw const set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: plain epoll creation; checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: valid descriptors and event.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &raw mut ev) } < 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn remove(&self, fd: RawFd) {
        // SAFETY: valid descriptors; a descriptor not in the set only makes this fail.
        unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
        // SAFETY: our epoll and a live buffer of the length given.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        n.max(0) as usize
    }
}

/// An eventfd: the control thread rings it so that a sleeping event thread wakes.
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain eventfd creation; checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn ring(&self) {
        let one = 1u64;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), (&raw const one).cast(), 8) };
    }

    fn drain(&self) {
        let mut n = 0u64;
        // SAFETY: reading 8 bytes into a live u64 from our non-blocking eventfd.
        unsafe { libc::read(self.0.as_raw_fd(), (&raw mut n).cast(), 8) };
    }
}
