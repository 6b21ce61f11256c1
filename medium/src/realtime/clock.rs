//! The event clock: CLOCK_MONOTONIC in ns, a timerfd armed at absolute deadlines, timer slack
//! of 1 ns and SCHED_FIFO when permitted. The thread sleeps until shortly before a deadline
//! and spins only for the last microseconds, so it does not starve the nodes on two cores.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::time::Nanos;

fn now(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a live timespec.
    unsafe { libc::clock_gettime(clock, &raw mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn monotonic() -> Nanos {
    now(libc::CLOCK_MONOTONIC)
}

/// The clocks the event loop reads, passed in so that the loop runs against a fake one in
/// tests. The loop is generic over it (no dynamic dispatch): it is read several times a
/// pass and once per delivered frame, so [`Monotonic`] must compile to the bare vDSO calls.
pub trait Clock: Send + Sync + 'static {
    /// The event clock (CLOCK_MONOTONIC in production), ns.
    fn now(&self) -> Nanos;
    /// The event thread's CPU time, for the [`super::spin_budget`].
    fn thread_cpu(&self) -> Nanos;
    /// How far the receive stamps' clock (CLOCK_REALTIME) is ahead of [`Clock::now`].
    fn realtime_offset(&self) -> Nanos;
}

/// The production clock: CLOCK_MONOTONIC, the calling thread's CPU time, CLOCK_REALTIME.
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    #[inline]
    fn now(&self) -> Nanos {
        monotonic()
    }

    #[inline]
    fn thread_cpu(&self) -> Nanos {
        thread_cpu_time()
    }

    #[inline]
    fn realtime_offset(&self) -> Nanos {
        realtime_offset()
    }
}

/// The calling thread's CPU time: what the kernel charges against its real-time throttle.
pub fn thread_cpu_time() -> Nanos {
    now(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// How far CLOCK_REALTIME is ahead of CLOCK_MONOTONIC now (ns): what turns the kernel's
/// receive stamps into the event clock. Read around one monotonic sample, so the error is
/// the width of two vDSO calls (tens of ns).
pub fn realtime_offset() -> Nanos {
    let real = now(libc::CLOCK_REALTIME);
    real.saturating_sub(monotonic())
}

/// Asks for 1 ns timer slack (the default 50 µs would make every wake-up late) and
/// SCHED_FIFO at a low priority. Returns whether the real-time priority was granted.
pub fn tune_thread(fifo_priority: i32) -> bool {
    // SAFETY: prctl and sched_setscheduler on the calling thread with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        if fifo_priority <= 0 {
            return false;
        }
        let p = libc::sched_param {
            sched_priority: fifo_priority,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const p) == 0
    }
}

/// A timerfd on CLOCK_MONOTONIC, armed at absolute times.
pub struct Timer {
    fd: OwnedFd,
    /// The time it is armed for, until it fires: arming it again for the same time is
    /// skipped (a `timerfd_settime` per wait was a fifth of the event thread's time).
    armed: std::cell::Cell<Option<Nanos>>,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain timerfd creation; the result is checked.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            armed: std::cell::Cell::new(None),
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires at `at` (monotonic ns). False when the kernel refused (the caller then polls).
    pub fn arm(&self, at: Nanos) -> bool {
        if self.armed.get() == Some(at) {
            return true;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: our timerfd and a valid itimerspec.
        let ok = unsafe {
            libc::timerfd_settime(
                self.raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &raw const spec,
                std::ptr::null_mut(),
            ) == 0
        };
        self.armed.set(ok.then_some(at));
        ok
    }

    /// Clears a fired timer.
    pub fn drain(&self) {
        self.armed.set(None);
        let mut n = 0u64;
        // SAFETY: reading 8 bytes into a live u64 from our non-blocking timerfd.
        unsafe { libc::read(self.raw_fd(), (&raw mut n).cast(), 8) };
    }
}
