//! The medium in real time: the engine driven by CLOCK_MONOTONIC, frames read from and
//! written to the segments' host-side veths, statistics served on a control socket.
//!
//! One event thread does all the work (every segment of the cluster, every node's CPU), so
//! the order of events is the engine's and nothing is shared on the data path. It stops on
//! SIGTERM or SIGINT.

pub mod clock;
pub mod control;
pub mod port;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::config::MediumConfig;
use crate::engine::{DueFrame, Engine};
use crate::stats::{LatenessHistogram, SegmentCounters, SegmentReport};
use crate::time::Nanos;

use clock::{Timer, monotonic};
use control::{HostReport, Request, Snapshot};
use port::Port;

/// How the event thread times itself.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Wake this long before a deadline and spin the rest.
    pub spin_ns: Nanos,
    /// SCHED_FIFO priority to ask for (0: stay SCHED_OTHER).
    pub fifo_priority: i32,
}

impl Default for Timing {
    /// 20 µs of spin covers the wake-up lateness measured here under SCHED_FIFO (p99 15 µs)
    /// and costs at most a third of a minimum frame's time per event.
    fn default() -> Timing {
        Timing {
            spin_ns: 20_000,
            fifo_priority: 10,
        }
    }
}

/// Statistics as the control thread reads them; the event thread publishes into it every few
/// milliseconds.
struct Published {
    names: Vec<(String, &'static str, u64)>,
    node_names: Vec<String>,
    started: Nanos,
    counters: Vec<SegmentCounters>,
    hosts: Vec<crate::host::HostCounters>,
    total_lateness: Vec<LatenessHistogram>,
    interval_lateness: Vec<LatenessHistogram>,
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
            total_lateness: vec![LatenessHistogram::default(); segments],
            interval_lateness: vec![LatenessHistogram::default(); segments],
            interval_start: monotonic(),
            interval_base: vec![SegmentCounters::default(); segments],
            interval_hosts: vec![Default::default(); costly.len()],
            realtime_priority,
        }
    }

    fn snapshot(&mut self, r: Request) -> Snapshot {
        let now = monotonic();
        let (since, base, lateness) = match r {
            Request::Total => (self.started, None, &self.total_lateness),
            _ => (
                self.interval_start,
                Some(&self.interval_base),
                &self.interval_lateness,
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
                lateness: lateness[i].summary(),
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
            self.interval_lateness
                .iter_mut()
                .for_each(LatenessHistogram::clear);
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
/// How often the event thread publishes its statistics for the control socket.
const PUBLISH_EVERY: Nanos = 5_000_000;

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
    let published = Arc::new(Mutex::new(Published::new(
        config,
        &costly,
        realtime_priority,
    )));
    let mut engine: Engine<Vec<u8>> = Engine::new(config);
    let timer = Timer::new()?;
    let epoll = watch(&ports, &timer, &signals)?;
    // Ready (the control socket answers) only once everything above has worked.
    start_control_thread(listener, Arc::clone(&published))?;

    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; ports.len() + 2];
    let mut buf = Vec::new();
    let mut out: Vec<DueFrame<Vec<u8>>> = Vec::new();
    let mut lateness = vec![LatenessHistogram::default(); segments];
    let mut last_publish = monotonic();
    let mut send_errors = 0u64;
    loop {
        let now = monotonic();
        // Spin only before a frame is due at a port: the segments' own decisions (who starts,
        // when a collision ends) are computed from their exact times whenever they are made.
        let delivery = engine.next_delivery();
        let timeout = match engine.next_deadline() {
            Some(d) if d <= now => 0,
            Some(d) if Some(d) == delivery && d <= now + timing.spin_ns => 0,
            Some(d) => {
                let wake = if Some(d) == delivery {
                    d - timing.spin_ns
                } else {
                    d
                };
                if timer.arm(wake) { -1 } else { 1 }
            }
            None => 5,
        };
        let n = epoll.wait(&mut events, timeout);
        for ev in &events[..n] {
            match ev.u64 {
                TIMER => timer.drain(),
                SIGNALS => {
                    stop(socket, send_errors);
                    return Ok(());
                }
                i => {
                    let port = &ports[i as usize];
                    // A bounded batch per pass: a node flooding its port must not keep this
                    // thread from delivering (epoll reports the port again).
                    for _ in 0..RECV_BATCH {
                        match port.recv(&mut buf) {
                            Ok(Some(frame)) => engine.arrive(i as usize, frame, monotonic()),
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
        for o in out.drain(..) {
            let late = monotonic().saturating_sub(o.due);
            lateness[engine.segment_of(o.port)].record(late);
            if ports[o.port].send(&o.frame).is_err() {
                send_errors += 1;
            }
        }
        if now - last_publish >= PUBLISH_EVERY
            && publish(&published, &engine, &mut lateness, &costly)
        {
            last_publish = now;
        }
    }
}

/// An epoll set over every port (its token: the port's index), the timer and the stop signals.
fn watch(ports: &[Port], timer: &Timer, signals: &std::os::fd::OwnedFd) -> io::Result<Epoll> {
    use std::os::fd::AsRawFd;
    let epoll = Epoll::new()?;
    for (i, p) in ports.iter().enumerate() {
        epoll.add(p.raw_fd(), i as u64)?;
    }
    epoll.add(timer.raw_fd(), TIMER)?;
    epoll.add(signals.as_raw_fd(), SIGNALS)?;
    Ok(epoll)
}

/// The thread that answers the control socket from what the event thread publishes.
fn start_control_thread(
    listener: std::os::unix::net::UnixListener,
    published: Arc<Mutex<Published>>,
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
            control::serve(listener, |r| {
                published.lock().expect("stats lock").snapshot(r)
            })
        })?;
    Ok(())
}

/// On SIGTERM or SIGINT: the control socket goes, and a word on frames that were lost.
fn stop(socket: &Path, send_errors: u64) {
    let _ = std::fs::remove_file(socket);
    if send_errors > 0 {
        eprintln!("medium: {send_errors} frames could not be written to a port");
    }
}

/// Hands the counters and the lateness seen since the last call to the control thread. Never
/// waits for it: when the control thread holds the lock (answering a request), this returns
/// false and the event thread tries again on a later pass.
fn publish(
    published: &Mutex<Published>,
    engine: &Engine<Vec<u8>>,
    lateness: &mut [LatenessHistogram],
    costly: &[usize],
) -> bool {
    let Ok(mut p) = published.try_lock() else {
        return false;
    };
    p.counters = engine.segment_counters();
    let hosts = engine.host_counters();
    p.hosts = costly.iter().map(|&i| hosts[i]).collect();
    for (i, h) in lateness.iter_mut().enumerate() {
        p.total_lateness[i].merge(h);
        p.interval_lateness[i].merge(h);
        h.clear();
    }
    true
}
