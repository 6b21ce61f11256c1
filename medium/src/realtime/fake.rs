//! Stand-ins for the event loop's clock, ports and waiting, so that tests run the loop
//! itself ([`super::event_loop::run`]) without root, interfaces or real time.
//!
//! - [`FakeClock`] reads what the test set; the loop's own reads never move it, except a
//!   port's write when the test gives writes a cost.
//! - [`FakePort`] holds the frames a test hands in and records every frame written to it with
//!   the fake time of the write.
//! - [`FakeWait`] plays a script of [`Step`]s, one per pass: each sets the clock and makes
//!   frames readable; every sleep the loop asked for is recorded, and the next step is the
//!   test's answer to it. The script arrives over a channel, so a test may also feed it
//!   while the loop runs on another thread (the control socket's tests).

use std::collections::VecDeque;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use crate::config::MediumConfig;
use crate::time::Nanos;

use super::clock::Clock;
use super::control::{Request, Snapshot};
use super::event_loop::{self, Stopped};
use super::port::{PortIo, Received};
use super::publish::Shared;
use super::timing::Timing;
use super::wait::{Ready, Sleep, Wait};

/// How far the fake receive stamps' clock is ahead of the fake event clock: large, as
/// CLOCK_REALTIME is ahead of CLOCK_MONOTONIC, so that a stamp read on the wrong clock is
/// implausible.
pub const REALTIME_OFFSET: Nanos = 1_700_000_000_000_000_000;

#[derive(Debug, Clone, Default)]
pub struct FakeClock(Arc<AtomicU64>);

impl FakeClock {
    pub fn set(&self, t: Nanos) {
        self.0.store(t, Ordering::SeqCst);
    }

    fn advance(&self, by: Nanos) {
        self.0.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Nanos {
        self.0.load(Ordering::SeqCst)
    }

    /// An idle thread: the spin budget never runs out.
    fn thread_cpu(&self) -> Nanos {
        0
    }

    fn realtime_offset(&self) -> Nanos {
        REALTIME_OFFSET
    }
}

/// A frame written to a port, and the fake time it was written at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub at: Nanos,
    pub frame: Vec<u8>,
}

#[derive(Debug, Default)]
struct PortState {
    inbox: VecDeque<Received>,
    sent: Vec<Sent>,
    /// Writes fail (and are not recorded).
    refuse_writes: bool,
    /// Reads fail: the interface is gone.
    gone: bool,
}

/// An in-memory port; clones share it.
#[derive(Debug, Clone)]
pub struct FakePort {
    name: String,
    clock: FakeClock,
    /// How long a write takes: the clock moves on by this much with each.
    write_ns: Nanos,
    state: Arc<Mutex<PortState>>,
}

impl FakePort {
    fn state(&self) -> std::sync::MutexGuard<'_, PortState> {
        self.state.lock().expect("fake port")
    }

    /// Every frame written to this port so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.state().sent.clone()
    }

    pub fn refuse_writes(&self) {
        self.state().refuse_writes = true;
    }

    pub fn vanish(&self) {
        self.state().gone = true;
    }
}

impl PortIo for FakePort {
    fn recv(&self, _buf: &mut Vec<u8>) -> io::Result<Option<Received>> {
        let mut s = self.state();
        if s.gone {
            return Err(io::Error::other("no such device"));
        }
        Ok(s.inbox.pop_front())
    }

    fn send(&self, frame: &[u8]) -> io::Result<()> {
        let at = self.clock.now();
        self.clock.advance(self.write_ns);
        let mut s = self.state();
        if s.refuse_writes {
            return Err(io::Error::other("no buffer space"));
        }
        s.sent.push(Sent {
            at,
            frame: frame.to_vec(),
        });
        Ok(())
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// One pass's worth of the world.
pub enum Step {
    /// The clock reads this; nothing new to read (a timer firing, a spin).
    At(Nanos),
    /// The clock reads this, and these frames wait at their ports (by index).
    Frames(Nanos, Vec<(usize, Received)>),
    /// The control thread's doorbell: a pass with nothing new.
    Ring,
    /// The control thread asks for statistics (without waiting for them): the pass
    /// publishes.
    AskForStats,
    /// Answered once every step before it has had its pass.
    Settled(Sender<()>),
    /// SIGTERM.
    Stop,
}

pub struct FakeWait {
    steps: Receiver<Step>,
    clock: FakeClock,
    ports: Vec<FakePort>,
    shared: Arc<Shared<FakeClock>>,
    /// Each sleep the loop asked for, with the fake time it asked at.
    pub sleeps: Vec<(Nanos, Sleep)>,
    /// The ports the loop stopped watching.
    pub forgotten: Vec<usize>,
}

impl Wait for FakeWait {
    fn wait(&mut self, sleep: Sleep, ready: &mut Vec<Ready>) {
        self.sleeps.push((self.clock.now(), sleep));
        ready.clear();
        // A script that ran out is a stop: the loop never outlives its test.
        match self.steps.recv().unwrap_or(Step::Stop) {
            Step::At(t) => self.clock.set(t),
            Step::Frames(t, frames) => {
                self.clock.set(t);
                for (port, r) in frames {
                    self.ports[port].state().inbox.push_back(r);
                }
            }
            Step::Ring => {}
            Step::AskForStats => self.shared.wanted.store(true, Ordering::Release),
            Step::Settled(done) => {
                let _ = done.send(());
            }
            Step::Stop => {
                ready.push(Ready::Stop);
                return;
            }
        }
        // As epoll (level-triggered) does: every port with frames waiting, not only those
        // this step handed frames to (a port read only in part by a batch comes back).
        for (i, p) in self.ports.iter().enumerate() {
            if !self.forgotten.contains(&i) && !p.state().inbox.is_empty() {
                ready.push(Ready::Port(i));
            }
        }
    }

    fn forget(&mut self, port: usize) {
        self.forgotten.push(port);
    }
}

/// Feeds the script.
pub struct Steps(Sender<Step>);

impl Steps {
    /// A pass at `t` with nothing new.
    pub fn at(&self, t: Nanos) {
        self.send(Step::At(t));
    }

    /// A pass at `t` that finds `frame` at `port`, stamped by the kernel as arrived at `t`.
    pub fn arrive(&self, t: Nanos, port: usize, frame: Vec<u8>) {
        self.arrive_stamped(t, port, frame, Some(t));
    }

    /// A pass at `read` that finds `frame` at `port`, stamped as arrived at `arrived` (on
    /// the event clock; `None`: no stamp).
    pub fn arrive_stamped(&self, read: Nanos, port: usize, frame: Vec<u8>, arrived: Option<Nanos>) {
        self.arrive_all(read, vec![(port, frame, arrived)]);
    }

    /// A pass at `read` that finds each `(port, frame, arrived)`, in that order.
    pub fn arrive_all(&self, read: Nanos, frames: Vec<(usize, Vec<u8>, Option<Nanos>)>) {
        let frames = frames
            .into_iter()
            .map(|(port, frame, arrived)| {
                let stamp_realtime = arrived.map(|a| a + REALTIME_OFFSET);
                (
                    port,
                    Received {
                        frame,
                        stamp_realtime,
                    },
                )
            })
            .collect();
        self.send(Step::Frames(read, frames));
    }

    /// Waits until the loop has had a pass for every step sent before.
    pub fn settle(&self) {
        let (tx, rx) = channel();
        self.send(Step::Settled(tx));
        rx.recv().expect("the loop is running");
    }

    fn send(&self, step: Step) {
        self.0.send(step).expect("the loop reads its script");
    }
}

/// The loop's world before it runs: its config, clock, ports, script and statistics.
pub struct Rig {
    pub config: MediumConfig,
    pub clock: FakeClock,
    pub ports: Vec<FakePort>,
    pub shared: Arc<Shared<FakeClock>>,
    pub timing: Timing,
    steps: Steps,
    waiter: FakeWait,
}

impl Deref for Rig {
    type Target = Steps;
    fn deref(&self) -> &Steps {
        &self.steps
    }
}

impl Rig {
    /// `config`'s medium on fake ports, the clock at 0, the production spin.
    pub fn new(config: MediumConfig) -> Rig {
        Rig::with_write_cost(config, 0)
    }

    /// As [`Rig::new`], each write to a port taking `write_ns` of the clock.
    pub fn with_write_cost(config: MediumConfig, write_ns: Nanos) -> Rig {
        let clock = FakeClock::default();
        let ports: Vec<FakePort> = config
            .ports
            .iter()
            .map(|p| FakePort {
                name: p.ifname.clone(),
                clock: clock.clone(),
                write_ns,
                state: Arc::default(),
            })
            .collect();
        let (tx, rx) = channel();
        let ring = {
            let tx = tx.clone();
            Box::new(move || {
                let _ = tx.send(Step::Ring);
            })
        };
        let shared = Arc::new(Shared::new(&config, clock.clone(), false, ring));
        let waiter = FakeWait {
            steps: rx,
            clock: clock.clone(),
            ports: ports.clone(),
            shared: Arc::clone(&shared),
            sleeps: Vec::new(),
            forgotten: Vec::new(),
        };
        Rig {
            config,
            clock,
            ports,
            shared,
            timing: Timing {
                fifo_priority: 0,
                ..Timing::default()
            },
            steps: Steps(tx),
            waiter,
        }
    }

    /// Plays the script sent so far on this thread, then has the loop publish (as if the
    /// control socket asked) and stops it.
    pub fn run(mut self) -> Ran {
        self.send(Step::AskForStats);
        self.send(Step::Stop);
        let stopped = event_loop::run(
            &self.config,
            &self.clock,
            &self.ports,
            &mut self.waiter,
            &self.shared,
            self.timing,
        );
        Ran {
            stopped,
            ports: self.ports,
            sleeps: self.waiter.sleeps,
            forgotten: self.waiter.forgotten,
            shared: self.shared,
        }
    }

    /// Runs the loop on its own thread; the script is fed through the answer.
    pub fn spawn(self) -> Running {
        let Rig {
            config,
            clock,
            ports,
            shared,
            timing,
            steps,
            mut waiter,
        } = self;
        let thread = {
            let (ports, shared) = (ports.clone(), Arc::clone(&shared));
            std::thread::spawn(move || {
                event_loop::run(&config, &clock, &ports, &mut waiter, &shared, timing)
            })
        };
        Running {
            steps,
            ports,
            thread,
        }
    }
}

/// What a finished run left behind.
pub struct Ran {
    pub stopped: Stopped,
    pub ports: Vec<FakePort>,
    pub sleeps: Vec<(Nanos, Sleep)>,
    pub forgotten: Vec<usize>,
    shared: Arc<Shared<FakeClock>>,
}

impl Ran {
    pub fn sent(&self, port: usize) -> Vec<Sent> {
        self.ports[port].sent()
    }

    /// The statistics since the start, as the control socket would answer `total`.
    pub fn total(&self) -> Snapshot {
        self.shared
            .published
            .lock()
            .expect("stats lock")
            .snapshot(Request::Total)
    }
}

/// A loop running on its own thread.
pub struct Running {
    steps: Steps,
    pub ports: Vec<FakePort>,
    thread: std::thread::JoinHandle<Stopped>,
}

impl Deref for Running {
    type Target = Steps;
    fn deref(&self) -> &Steps {
        &self.steps
    }
}

impl Running {
    pub fn stop(self) -> Stopped {
        self.steps.send(Step::Stop);
        self.thread.join().expect("the loop does not panic")
    }
}
