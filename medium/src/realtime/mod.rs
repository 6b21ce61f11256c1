//! The medium in real time: the engine driven by CLOCK_MONOTONIC, frames read from and
//! written to the segments' host-side veths, statistics served on a control socket.
//!
//! One event thread does all the work (every segment of the cluster, every node's CPU), so
//! the order of events is the engine's and nothing is shared on the data path. It stops on
//! SIGTERM or SIGINT.
//!
//! The thread sleeps until shortly before each deadline and spins the rest. On a virtual
//! machine a wake from an idle vCPU came 60 µs late (median, measured on 2 vCPUs); while the
//! emulator runs it asks the kernel to keep idle CPUs polling instead of halting
//! ([`placement::KeepAwake`]), which brought that to about 25 µs and the median delivery
//! from 11 µs late to 1.5 µs. Polling the ports from the thread itself instead (never
//! sleeping) was tried and is worse: as SCHED_FIFO it runs into the kernel's real-time
//! throttling (50 ms stalls once it holds a CPU 95% of the time).
//!
//! Statistics leave the thread only when the control socket asks for them (the control
//! thread wakes it through an eventfd and waits): merging histograms every few milliseconds
//! held up the frames due meanwhile.

pub mod clock;
pub mod control;
pub mod placement;
pub mod port;
pub mod spin_budget;

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::config::MediumConfig;
use crate::engine::{DueFrame, Engine};
use crate::stats::{LatenessHistogram, SegmentCounters, SegmentReport};
use crate::time::Nanos;

use clock::{Timer, monotonic, thread_cpu_time};
use control::{HostReport, Request, Snapshot};
use port::Port;
use spin_budget::SpinBudget;

/// How the event thread times itself.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Wake this long before a delivery and spin the rest.
    pub spin_ns: Nanos,
    /// SCHED_FIFO priority to ask for (0: stay SCHED_OTHER).
    pub fifo_priority: i32,
    /// The CPU to keep the event thread on ([`placement::Placement`]); `None`: anywhere.
    pub cpu: Option<usize>,
}

impl Default for Timing {
    /// 100 µs of spin before a delivery: on a 2-vCPU virtual machine of the project's kind
    /// a frame waited 50-90 µs at p99 for the sleeping thread to read it (its wake-up), and
    /// with 20 µs of spin half the quick start's segments delivered later than a slot at p99.
    /// It costs CPU only before deliveries (at most the wire time of a minimum frame's
    /// worth of spinning per delivery, less when deliveries follow closely), and never more
    /// than the [`spin_budget`] allows, so that real-time priority is not throttled.
    fn default() -> Timing {
        Timing {
            spin_ns: 100_000,
            fifo_priority: 10,
            cpu: None,
        }
    }
}

/// Statistics as the control thread reads them; the event thread publishes into it when the
/// control thread asks.
struct Published {
    names: Vec<(String, &'static str, u64)>,
    node_names: Vec<String>,
    started: Nanos,
    counters: Vec<SegmentCounters>,
    hosts: Vec<crate::host::HostCounters>,
    total: Measured,
    interval: Measured,
    interval_start: Nanos,
    interval_base: Vec<SegmentCounters>,
    interval_hosts: Vec<crate::host::HostCounters>,
    realtime_priority: bool,
}

impl Published {
    /// Nothing counted yet, for `config`'s segments and its `costly` nodes (those whose CPU
    /// costs something per frame).
    fn new(config: &MediumConfig, costly: &[usize], realtime_priority: bool) -> Published {
        let segments = config.segments.len();
        Published {
            names: config
                .segments
                .iter()
                .map(|s| (s.name.clone(), s.medium.as_str(), s.rate_bps))
                .collect(),
            node_names: costly
                .iter()
                .map(|&i| config.nodes[i].name.clone())
                .collect(),
            started: monotonic(),
            counters: vec![SegmentCounters::default(); segments],
            hosts: vec![Default::default(); costly.len()],
            total: Measured::new(segments),
            interval: Measured::new(segments),
            interval_start: monotonic(),
            interval_base: vec![SegmentCounters::default(); segments],
            interval_hosts: vec![Default::default(); costly.len()],
            realtime_priority,
        }
    }

    fn snapshot(&mut self, r: Request) -> Snapshot {
        let now = monotonic();
        let (since, base, measured) = match r {
            Request::Total => (self.started, None, &self.total),
            _ => (
                self.interval_start,
                Some(&self.interval_base),
                &self.interval,
            ),
        };
        let segments = self
            .names
            .iter()
            .enumerate()
            .map(|(i, (name, medium, rate))| SegmentReport {
                segment: name.clone(),
                medium: (*medium).to_owned(),
                rate_bps: *rate,
                elapsed_ns: now.saturating_sub(since),
                counters: match base {
                    Some(b) => self.counters[i].since(&b[i]),
                    None => self.counters[i],
                },
                lateness: measured.egress[i].summary(),
                ingress: measured.ingress[i].summary(),
                entry: measured.entry[i].summary(),
            })
            .collect();
        let hosts = self
            .node_names
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let c = match base {
                    Some(_) => self.hosts[i].since(&self.interval_hosts[i]),
                    None => self.hosts[i],
                };
                HostReport {
                    node: node.clone(),
                    counters: c,
                }
            })
            .collect();
        let snap = Snapshot {
            segments,
            hosts,
            realtime_priority: self.realtime_priority,
        };
        if r == Request::Interval {
            self.interval_start = now;
            self.interval_base = self.counters.clone();
            self.interval_hosts = self.hosts.clone();
            self.interval.clear();
        }
        snap
    }
}

/// Blocks SIGTERM and SIGINT in this thread (and the threads it starts) and returns a
/// signalfd that reads them.
fn stop_signals() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
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
        Ok(std::os::fd::OwnedFd::from_raw_fd(fd))
    }
}

struct Epoll(std::os::fd::OwnedFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain epoll creation; checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        Ok(Epoll(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: i32, token: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
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

    fn remove(&self, fd: i32) {
        use std::os::fd::AsRawFd;
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
        use std::os::fd::AsRawFd;
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

const TIMER: u64 = u64::MAX;
/// Frames read from one port before the others and the clock get their turn.
const RECV_BATCH: usize = 32;
const SIGNALS: u64 = u64::MAX - 1;
const WAKE: u64 = u64::MAX - 2;
/// How long a request waits for the event thread before it is answered with what was last
/// published.
const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// What the event thread and the control thread share: the published statistics, whether
/// the control thread wants them brought up to date, and its doorbell.
struct Shared {
    published: Mutex<Published>,
    wanted: AtomicBool,
    done: Condvar,
    doorbell: EventFd,
}

impl Shared {
    /// The control thread's side: has the event thread publish, waits for it (a bounded
    /// time), and answers `r` from what is published.
    fn answer(&self, r: Request) -> Snapshot {
        let mut p = self.published.lock().expect("stats lock");
        self.wanted.store(true, Ordering::Release);
        self.doorbell.ring();
        let deadline = std::time::Instant::now() + PUBLISH_WAIT;
        while self.wanted.load(Ordering::Acquire) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            p = self.done.wait_timeout(p, left).expect("stats lock").0;
        }
        p.snapshot(r)
    }
}

/// An eventfd: the control thread rings it so that a sleeping event thread wakes.
struct EventFd(std::os::fd::OwnedFd);

impl EventFd {
    fn new() -> io::Result<EventFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain eventfd creation; checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        Ok(EventFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    fn ring(&self) {
        use std::os::fd::AsRawFd;
        let one = 1u64;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), (&raw const one).cast(), 8) };
    }

    fn drain(&self) {
        use std::os::fd::AsRawFd;
        let mut n = 0u64;
        // SAFETY: reading 8 bytes into a live u64 from our non-blocking eventfd.
        unsafe { libc::read(self.0.as_raw_fd(), (&raw mut n).cast(), 8) };
    }
}

/// Runs the medium described by `config` on its ports until SIGTERM or SIGINT, serving
/// statistics on `socket`. Fails before anything is touched if a port cannot be opened.
pub fn run(config: &MediumConfig, socket: &Path, timing: Timing) -> io::Result<()> {
    config.check().map_err(io::Error::other)?;
    let signals = stop_signals()?;
    let ports: Vec<Port> = config
        .ports
        .iter()
        .map(|p| Port::open(&p.ifname))
        .collect::<io::Result<_>>()?;
    let listener = control::bind(socket)?;
    let realtime_priority = clock::tune_thread(timing.fifo_priority);
    let segments = config.segments.len();
    let costly: Vec<usize> = (0..config.nodes.len())
        .filter(|&i| !config.nodes[i].costs.is_free())
        .collect();
    let shared = Arc::new(Shared {
        published: Mutex::new(Published::new(config, &costly, realtime_priority)),
        wanted: AtomicBool::new(false),
        done: Condvar::new(),
        doorbell: EventFd::new()?,
    });
    let mut engine: Engine<Vec<u8>> = Engine::new(config);
    let timer = Timer::new()?;
    let epoll = watch(&ports, &timer, &signals, &shared.doorbell)?;
    // Ready (the control socket answers) only once everything above has worked.
    start_control_thread(listener, Arc::clone(&shared))?;
    // Pinned after the control thread started, which keeps the CPUs it inherited.
    if let Some(cpu) = timing.cpu
        && !placement::pin_thread(cpu)
    {
        eprintln!("medium: could not keep the event thread on CPU {cpu}; it runs anywhere");
    }
    // Held until the process exits (the kernel drops the request with the descriptor).
    let _awake = placement::KeepAwake::request()
        .inspect_err(|e| eprintln!("medium: idle CPUs may halt ({e}): expect later wake-ups"))
        .ok();

    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; ports.len() + 3];
    let mut buf = Vec::new();
    let mut out: Vec<DueFrame<Vec<u8>>> = Vec::new();
    let mut lateness = Measured::new(segments);
    // How far the engine has been advanced: a frame stamped before it starts now (what is
    // decided stays decided), one stamped after it starts when it arrived.
    let mut advanced: Nanos = 0;
    let mut send_errors = 0u64;
    let mut budget = SpinBudget::new(monotonic(), thread_cpu_time());
    loop {
        let now = monotonic();
        if now.saturating_sub(budget.last()) >= spin_budget::ACCOUNT_EVERY {
            budget.account(now, thread_cpu_time());
        }
        let spin_ns = budget.spin_ns(timing.spin_ns);
        // Awake, spinning, from `spin_ns` before the earliest moment a frame can be due at a
        // port. Not only before a delivery already decided: a decision made on waking (who
        // starts on a bus, a frame fully into a switch) can make one due a shortest frame's
        // time later, so a thread that slept until that decision and woke late would deliver
        // late. The decisions themselves are computed from their exact times whenever made.
        let spin_from = engine
            .earliest_delivery()
            .map(|e| e.saturating_sub(spin_ns));
        let timeout = match engine.next_deadline() {
            None => 5,
            Some(d) if d <= now => 0,
            Some(_) if spin_from.is_some_and(|s| s <= now) => 0,
            Some(d) => {
                let wake = spin_from.map_or(d, |s| s.min(d));
                if timer.arm(wake) { -1 } else { 1 }
            }
        };
        let n = epoll.wait(&mut events, timeout);
        // Read once a pass, and only when a frame came: two clock reads are not free here.
        let mut offset = None;
        for ev in &events[..n] {
            match ev.u64 {
                TIMER => timer.drain(),
                WAKE => shared.doorbell.drain(),
                SIGNALS => {
                    stop(socket, send_errors, budget.withheld_ns());
                    return Ok(());
                }
                i => {
                    let port = &ports[i as usize];
                    // A bounded batch per pass: a node flooding its port must not keep this
                    // thread from delivering (epoll reports the port again).
                    for _ in 0..RECV_BATCH {
                        match port.recv(&mut buf) {
                            Ok(Some(r)) => {
                                let read = monotonic();
                                let offset = *offset.get_or_insert_with(clock::realtime_offset);
                                let arrived = arrival(r.stamp_realtime, offset, read);
                                let segment = engine.segment_of(i as usize);
                                if let Some(at) = arrived {
                                    lateness.ingress[segment].record(read - at);
                                }
                                let at = arrived.unwrap_or(read);
                                let entered = at.max(advanced);
                                lateness.entry[segment].record(entered - at);
                                engine.arrive(i as usize, r.frame, entered);
                            }
                            Ok(None) => break,
                            Err(e) => {
                                // The interface is gone (its container was removed): stop
                                // watching it; the other ports go on.
                                eprintln!("medium: port {}: {e}; no longer read", port.ifname);
                                epoll.remove(port.raw_fd());
                                break;
                            }
                        }
                    }
                }
            }
        }
        let now = monotonic();
        engine.advance(now, &mut out);
        advanced = now;
        for o in out.drain(..) {
            let late = monotonic().saturating_sub(o.due);
            lateness.egress[engine.segment_of(o.port)].record(late);
            if ports[o.port].send(&o.frame).is_err() {
                send_errors += 1;
            }
        }
        if shared.wanted.load(Ordering::Acquire) {
            publish(&shared, &engine, &mut lateness, &costly);
        }
    }
}

/// The event thread's own lateness, per segment.
struct Measured {
    /// How late frames were written to their ports after they were due.
    egress: Vec<LatenessHistogram>,
    /// How long frames waited at their ports before the event thread read them.
    ingress: Vec<LatenessHistogram>,
    /// How much later than it arrived a frame entered the emulated wire: 0 unless the
    /// engine had already decided past its arrival when it was read (what a late read
    /// changes; a frame read late is otherwise placed at its arrival).
    entry: Vec<LatenessHistogram>,
}

impl Measured {
    fn new(segments: usize) -> Measured {
        Measured {
            egress: vec![LatenessHistogram::default(); segments],
            ingress: vec![LatenessHistogram::default(); segments],
            entry: vec![LatenessHistogram::default(); segments],
        }
    }

    /// Adds `other`'s samples to these.
    fn merge(&mut self, other: &Measured) {
        for (mine, theirs) in [
            (&mut self.egress, &other.egress),
            (&mut self.ingress, &other.ingress),
            (&mut self.entry, &other.entry),
        ] {
            for (m, t) in mine.iter_mut().zip(theirs) {
                m.merge(t);
            }
        }
    }

    fn clear(&mut self) {
        self.egress
            .iter_mut()
            .chain(self.ingress.iter_mut())
            .chain(self.entry.iter_mut())
            .for_each(LatenessHistogram::clear);
    }
}

/// Receive stamps further from the read than this are not arrival times (a clock step, or a
/// kernel that left the sender's delivery time on the frame).
const STAMP_PLAUSIBLE: Nanos = 1_000_000_000;

/// When a frame read at `read` (monotonic) arrived, from its kernel stamp on
/// CLOCK_REALTIME and the clocks' `offset`; `None` without a plausible stamp.
fn arrival(stamp_realtime: Option<u64>, offset: Nanos, read: Nanos) -> Option<Nanos> {
    let at = stamp_realtime?.checked_sub(offset)?;
    (at <= read && read - at < STAMP_PLAUSIBLE).then_some(at)
}

/// An epoll set over every port (its token: the port's index), the timer and the stop signals.
fn watch(
    ports: &[Port],
    timer: &Timer,
    signals: &std::os::fd::OwnedFd,
    doorbell: &EventFd,
) -> io::Result<Epoll> {
    use std::os::fd::AsRawFd;
    let epoll = Epoll::new()?;
    for (i, p) in ports.iter().enumerate() {
        epoll.add(p.raw_fd(), i as u64)?;
    }
    epoll.add(timer.raw_fd(), TIMER)?;
    epoll.add(signals.as_raw_fd(), SIGNALS)?;
    epoll.add(doorbell.0.as_raw_fd(), WAKE)?;
    Ok(epoll)
}

/// The thread that answers the control socket from what the event thread publishes.
fn start_control_thread(
    listener: std::os::unix::net::UnixListener,
    shared: Arc<Shared>,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("medium-control".into())
        .spawn(move || {
            // The control thread must never take the event thread's real-time priority.
            // SAFETY: setting the calling thread's own policy back to SCHED_OTHER.
            unsafe {
                let p = libc::sched_param { sched_priority: 0 };
                libc::sched_setscheduler(0, libc::SCHED_OTHER, &raw const p);
            }
            control::serve(listener, |r| shared.answer(r))
        })?;
    Ok(())
}

/// On SIGTERM or SIGINT: the control socket goes, and a word on frames that were lost.
fn stop(socket: &Path, send_errors: u64, spin_withheld_ns: u64) {
    let _ = std::fs::remove_file(socket);
    if send_errors > 0 {
        eprintln!("medium: {send_errors} frames could not be written to a port");
    }
    if spin_withheld_ns > 0 {
        eprintln!(
            "medium: the full spin was withheld for {} ms in all, to keep the event thread's CPU \
             at most {:.0}% busy",
            spin_withheld_ns / 1_000_000,
            spin_budget::MAX_BUSY * 100.0
        );
    }
}

/// Hands the counters and the lateness seen since the last call to the control thread, which
/// asked for them and waits.
fn publish(shared: &Shared, engine: &Engine<Vec<u8>>, lateness: &mut Measured, costly: &[usize]) {
    let mut p = shared.published.lock().expect("stats lock");
    p.counters = engine.segment_counters();
    let hosts = engine.host_counters();
    p.hosts = costly.iter().map(|&i| hosts[i]).collect();
    p.total.merge(lateness);
    p.interval.merge(lateness);
    lateness.clear();
    shared.wanted.store(false, Ordering::Release);
    shared.done.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_becomes_an_arrival_only_when_plausible() {
        let offset = 1_000_000_000_000;
        let read = 5_000_000_000;
        // 30 µs before the read: an arrival.
        assert_eq!(
            arrival(Some(offset + read - 30_000), offset, read),
            Some(read - 30_000)
        );
        // After the read, more than a second before it, or missing: not an arrival.
        assert_eq!(arrival(Some(offset + read + 1), offset, read), None);
        assert_eq!(
            arrival(Some(offset + read - 2_000_000_000), offset, read),
            None
        );
        assert_eq!(arrival(None, offset, read), None);
        // A monotonic stamp left on the frame reads as decades before the read.
        assert_eq!(arrival(Some(read - 10), offset, read), None);
    }
}
